//! `cargo xtask scx-kernel`: fetches the sched_ext kernel the guest tests
//! boot (see `hsched_testkit::guest`) and the `vmlinux.h` a BPF scheduler
//! is built against, both into the workspace's `target/scx-kernel/<version>`.
//!
//! The kernel is Debian's trixie-backports build (sched_ext, BTF), fetched
//! with apt from a temporary deb822 source. apt runs with its own source
//! list, package lists and cache in a directory under `target`, so the
//! host's apt sources, lists and caches are never touched, root is not
//! needed, and a run that fails or is killed leaves the host's apt as it
//! was. apt checks the archive's signature with Debian's keyring.
//!
//! `vmlinux.h` is generated from the kernel's own BTF, never copied: the
//! image's zstd payload is the kernel ELF, which keeps its `.BTF` section,
//! and `bpftool btf dump` writes it as C.
//!
//! With both files there, a run does nothing and says so.

use hsched_testkit::guest::{kernel_dir, KERNEL_VERSION};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The Debian package holding the image, and the image's path inside it.
fn package() -> String {
    format!("linux-binary-{KERNEL_VERSION}")
}

fn image_in_package() -> String {
    format!("usr/lib/modules/{KERNEL_VERSION}/vmlinuz")
}

const SOURCE: &str = "Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
";

const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(arg) = args.first() {
        return Err(format!("takes no arguments, got `{arg}`"));
    }
    let dir = kernel_dir();
    let vmlinuz = dir.join("vmlinuz");
    let header = dir.join("vmlinux.h");
    if vmlinuz.is_file() && header.is_file() {
        println!("scx-kernel: {KERNEL_VERSION} is already there, nothing to do");
        print_paths(&vmlinuz, &header);
        return Ok(());
    }

    // Everything missing is named before anything is fetched.
    let mut missing = Vec::new();
    let mut need = |program: &str, package: &str| match find(program) {
        Some(path) => Some(path),
        None => {
            missing.push(format!("{program} (Debian package {package})"));
            None
        }
    };
    let bpftool = need("bpftool", "bpftool");
    let zstd = need("zstd", "zstd");
    let fetch = !vmlinuz.is_file();
    let (apt_get, dpkg_deb) = if fetch {
        (need("apt-get", "apt"), need("dpkg-deb", "dpkg"))
    } else {
        (None, None)
    };
    if fetch && !Path::new(KEYRING).is_file() {
        missing.push(format!("{KEYRING} (Debian package debian-archive-keyring)"));
    }
    if !missing.is_empty() {
        return Err(format!("missing: {}", missing.join(", ")));
    }

    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let work = WorkDir::new(dir.join(format!("tmp-{}", std::process::id())))?;
    if fetch {
        let apt_get = apt_get.expect("checked");
        let dpkg_deb = dpkg_deb.expect("checked");
        println!(
            "scx-kernel: fetching {} from Debian trixie-backports",
            package()
        );
        fetch_image(&apt_get, &dpkg_deb, &work.0, &vmlinuz)?;
    }
    println!("scx-kernel: writing vmlinux.h from the kernel's BTF");
    write_header(
        &bpftool.expect("checked"),
        &zstd.expect("checked"),
        &vmlinuz,
        &work.0,
        &header,
    )?;
    drop(work);
    print_paths(&vmlinuz, &header);
    Ok(())
}

fn print_paths(vmlinuz: &Path, header: &Path) {
    println!("kernel:    {}", vmlinuz.display());
    println!("vmlinux.h: {}", header.display());
}

/// `program` on the PATH, or in the sbin directories a non-root PATH lacks
/// (bpftool is in /usr/sbin).
fn find(program: &str) -> Option<PathBuf> {
    hsched_testkit::program(program).ok().or_else(|| {
        ["/usr/sbin", "/sbin"]
            .iter()
            .map(|d| Path::new(d).join(program))
            .find(|p| p.is_file())
    })
}

/// A directory for one run's downloads and intermediate files (the apt
/// state, the package, the kernel ELF), removed however the run ends.
struct WorkDir(PathBuf);

impl WorkDir {
    fn new(path: PathBuf) -> Result<Self, String> {
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(WorkDir(path))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fetch_image(apt_get: &Path, dpkg_deb: &Path, work: &Path, vmlinuz: &Path) -> Result<(), String> {
    let apt = work.join("apt");
    for d in [
        "etc/sources.list.d",
        "lists/partial",
        "cache/archives/partial",
    ] {
        let d = apt.join(d);
        std::fs::create_dir_all(&d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let write = |path: PathBuf, text: &str| {
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    write(apt.join("etc/sources.list"), "")?;
    write(
        apt.join("etc/sources.list.d/trixie-backports.sources"),
        SOURCE,
    )?;
    // Only the state apt writes is redirected; the host's apt
    // configuration (proxies, keyrings) still applies.
    let options = [
        ("Dir::Etc::SourceList", apt.join("etc/sources.list")),
        ("Dir::Etc::SourceParts", apt.join("etc/sources.list.d")),
        ("Dir::State::Lists", apt.join("lists")),
        ("Dir::Cache", apt.join("cache")),
    ];
    let apt_command = |args: &[&str]| {
        let mut c = Command::new(apt_get);
        c.arg("-q");
        for (key, value) in &options {
            c.arg("-o").arg(format!("{key}={}", value.display()));
        }
        c.args(args).current_dir(work);
        c
    };
    run_quietly(
        apt_command(&["update", "--error-on=any"]),
        "apt-get update (of the temporary trixie-backports source)",
    )?;
    let package = package();
    run_quietly(
        apt_command(&["download", &package]),
        &format!("apt-get download {package}"),
    )?;
    let deb = std::fs::read_dir(work)
        .map_err(|e| format!("cannot read {}: {e}", work.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.starts_with(&format!("{package}_")) && n.ends_with(".deb")
            })
        })
        .ok_or_else(|| format!("apt-get download left no {package}_*.deb"))?;
    let unpacked = work.join("unpacked");
    let mut unpack = Command::new(dpkg_deb);
    unpack.arg("-x").arg(&deb).arg(&unpacked);
    run_quietly(unpack, &format!("dpkg-deb -x {}", deb.display()))?;
    let image = unpacked.join(image_in_package());
    if !image.is_file() {
        return Err(format!(
            "{package} holds no {} (has Debian moved the image?)",
            image_in_package()
        ));
    }
    // Written aside and renamed: an interrupted copy never passes for the
    // cached kernel.
    let partial = vmlinuz.with_extension("partial");
    std::fs::copy(&image, &partial)
        .and_then(|_| std::fs::rename(&partial, vmlinuz))
        .map_err(|e| format!("cannot write {}: {e}", vmlinuz.display()))
}

/// Runs `command`, showing its output only when it fails.
fn run_quietly(mut command: Command, what: &str) -> Result<(), String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = said.lines().collect();
    Err(format!(
        "{what} failed ({}):\n{}",
        out.status,
        lines[lines.len().saturating_sub(20)..].join("\n")
    ))
}

fn write_header(
    bpftool: &Path,
    zstd: &Path,
    vmlinuz: &Path,
    work: &Path,
    header: &Path,
) -> Result<(), String> {
    let image =
        std::fs::read(vmlinuz).map_err(|e| format!("cannot read {}: {e}", vmlinuz.display()))?;
    let payload = zstd_payload(&image).map_err(|e| format!("{}: {e}", vmlinuz.display()))?;
    let compressed = work.join("vmlinux.zst");
    let elf = work.join("vmlinux");
    std::fs::write(&compressed, payload)
        .map_err(|e| format!("cannot write {}: {e}", compressed.display()))?;
    let mut unzstd = Command::new(zstd);
    unzstd
        .args(["-q", "-d", "-f"])
        .arg(&compressed)
        .arg("-o")
        .arg(&elf);
    run_quietly(unzstd, "zstd -d (of the kernel's payload)")?;

    let out = Command::new(bpftool)
        .args(["btf", "dump", "file"])
        .arg(&elf)
        .args(["format", "c"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bpftool.display()))?;
    if !out.status.success() {
        return Err(format!(
            "bpftool btf dump of the kernel ELF failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if !contains(&out.stdout, b"struct sched_ext_ops {") {
        return Err(format!(
            "the BTF of {} has no struct sched_ext_ops: not a sched_ext kernel",
            vmlinuz.display()
        ));
    }
    let partial = header.with_extension("h.partial");
    std::fs::write(&partial, &out.stdout)
        .and_then(|_| std::fs::rename(&partial, header))
        .map_err(|e| format!("cannot write {}: {e}", header.display()))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The compressed kernel inside a bzImage: the boot protocol's header
/// gives where it starts and how long it is; the build appends the
/// uncompressed size (4 bytes), which zstd would read as a broken frame.
fn zstd_payload(image: &[u8]) -> Result<&[u8], String> {
    let u32_at = |at: usize| {
        image
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    if image.get(0x202..0x206) != Some(b"HdrS".as_slice()) {
        return Err("not a bzImage (no HdrS boot header)".into());
    }
    let setup_sectors = match image.get(0x1f1) {
        Some(0) => 4,
        Some(&n) => usize::from(n),
        None => return Err("truncated boot header".into()),
    };
    let (Some(offset), Some(length)) = (u32_at(0x248), u32_at(0x24c)) else {
        return Err("truncated boot header".into());
    };
    let start = (setup_sectors + 1) * 512 + offset;
    let payload = image
        .get(start..start + length)
        .ok_or("its payload runs past the end of the file")?;
    if !payload.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return Err("its payload is not zstd-compressed".into());
    }
    Ok(&payload[..payload.len().saturating_sub(4)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_is_found_by_the_boot_header_without_its_size_suffix() {
        let mut image = vec![0u8; 0x1000];
        image[0x1f1] = 3;
        image[0x202..0x206].copy_from_slice(b"HdrS");
        image[0x248..0x24c].copy_from_slice(&16u32.to_le_bytes());
        image[0x24c..0x250].copy_from_slice(&10u32.to_le_bytes());
        let start = 4 * 512 + 16;
        image[start..start + 10].copy_from_slice(&[0x28, 0xb5, 0x2f, 0xfd, 1, 2, 9, 9, 9, 9]);
        assert_eq!(
            zstd_payload(&image).unwrap(),
            [0x28, 0xb5, 0x2f, 0xfd, 1, 2]
        );
        image[start] = 0x1f;
        assert!(zstd_payload(&image).unwrap_err().contains("not zstd"));
        assert!(zstd_payload(b"plain")
            .unwrap_err()
            .contains("not a bzImage"));
    }
}
