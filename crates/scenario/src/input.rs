//! Reading an input file (a scenario, an rt-app file, a SimSo XML file, a
//! sweep spec) with a bound on its size, so that a huge or endless input
//! (`/dev/zero`, a named pipe, a mistyped path to a disk image) is refused
//! with a message instead of exhausting memory.

use std::io::Read;
use std::path::Path;

/// The largest input file read, in bytes (64 MiB). A scenario of 100,000
/// threads is about 10 MB of TOML, so this leaves room for the largest
/// inputs hsched is meant for while keeping what a parser holds (the text
/// and its tree, a few times its size) far below a machine's memory.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// The text of `path`, read to its end or to [`MAX_INPUT_BYTES`] plus one
/// byte, whichever comes first: a regular file, a pipe or a device alike.
/// The error says what is wrong (the limit by name and size, a read error,
/// text that is not UTF-8) of `what` (`the scenario`), without the path,
/// which the caller puts first.
pub fn read_text(path: &Path, what: &str) -> Result<String, String> {
    read_text_limited(path, what, MAX_INPUT_BYTES)
}

/// [`read_text`] with another limit (tests).
pub fn read_text_limited(path: &Path, what: &str, limit: u64) -> Result<String, String> {
    let cannot = |e: std::io::Error| format!("cannot read {what}: {e}");
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "{what} is larger than the input size limit of {} (MAX_INPUT_BYTES); \
             read no further",
            size_text(limit)
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "{what} is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// `64 MiB` for a whole number of MiB, else bytes.
fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn endless_devices_are_refused_at_the_limit() {
        let e = read_text_limited(Path::new("/dev/zero"), "it", 4096).unwrap_err();
        assert!(e.contains("4096 bytes (MAX_INPUT_BYTES)"), "{e}");
        let e = read_text(Path::new("/dev/urandom"), "it").unwrap_err();
        assert!(e.contains("64 MiB (MAX_INPUT_BYTES)"), "{e}");
    }

    #[test]
    fn a_file_at_the_limit_is_read_and_one_byte_more_is_refused() {
        let dir = std::env::temp_dir().join(format!("hsched-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.toml");
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&[b'a'; 100])
            .unwrap();
        assert_eq!(read_text_limited(&path, "it", 100).unwrap().len(), 100);
        assert!(read_text_limited(&path, "it", 99)
            .unwrap_err()
            .contains("99 bytes"));
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert!(read_text_limited(&path, "it", 100)
            .unwrap_err()
            .contains("not UTF-8"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
