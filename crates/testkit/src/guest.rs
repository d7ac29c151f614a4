//! A shell script run inside a sched_ext kernel under qemu, for the tests
//! of a sched_ext backend on hosts whose own kernel has no sched_ext.
//!
//! The kernel is the one `cargo xtask scx-kernel` caches (a Debian build
//! with sched_ext and BTF); tests find it with [`kernel`], under
//! [`require!`](macro@crate::require), so that a host without it skips them and CI
//! fails them. A [`Guest`] packs busybox, the host binaries a test names
//! (with the shared libraries `ldd` lists for them and the dynamic loader)
//! and the script into an initramfs, boots it under single-threaded TCG
//! (this project's hosts have no usable KVM, and multi-threaded TCG once
//! crashed the guest kernel while a scheduler was being enabled) and returns
//! what the script wrote and its exit code:
//!
//! ```no_run
//! use hsched_testkit::{guest, require};
//! use std::time::Duration;
//!
//! fn sched_ext_is_off_at_boot() {
//!     require!("the sched_ext kernel", guest::kernel());
//!     let out = guest::Guest::new()
//!         .script("cat /sys/kernel/sched_ext/state")
//!         .run(Duration::from_secs(120))
//!         .unwrap();
//!     assert_eq!(out.stdout, "disabled\n");
//! }
//! ```
//!
//! The script's stdout and stderr go to files in the guest and cross the
//! serial console base64-encoded once it has ended, so kernel messages and
//! the tty's line endings cannot mix into them. Something the script writes
//! to `/dev/console` shows in the console tail of a timeout's error.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The kernel `cargo xtask scx-kernel` fetches: Debian's trixie-backports
/// build, whose `uname -r` this is.
pub const KERNEL_VERSION: &str = "7.3.4+deb13-amd64";

/// Where `cargo xtask scx-kernel` caches the kernel and its `vmlinux.h`:
/// the workspace's `target/scx-kernel/<version>`, whatever target directory
/// a build uses, so that every build and test finds the one copy.
pub fn kernel_dir() -> PathBuf {
    workspace_root()
        .join("target")
        .join("scx-kernel")
        .join(KERNEL_VERSION)
}

fn workspace_root() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .parent()
        .and_then(Path::parent)
        .unwrap_or(crate_dir)
        .to_path_buf()
}

/// The cached sched_ext kernel image.
pub fn kernel() -> Result<PathBuf, String> {
    let vmlinuz = kernel_dir().join("vmlinuz");
    if vmlinuz.is_file() {
        Ok(vmlinuz)
    } else {
        Err(format!(
            "{} is not there: run `cargo xtask scx-kernel`",
            vmlinuz.display()
        ))
    }
}

/// Everything a guest needs on the host, for one [`crate::require!`]: the
/// cached kernel, and qemu, busybox and cpio, each missing one named with
/// its Debian package.
pub fn requirements() -> Result<(), String> {
    kernel()?;
    for (program, package) in [
        ("qemu-system-x86_64", "qemu-system-x86"),
        ("busybox", "busybox-static"),
        ("cpio", "cpio"),
    ] {
        crate::program(program).map_err(|e| format!("{e} (Debian package {package})"))?;
    }
    Ok(())
}

/// What a script run in the guest left.
#[derive(Debug, Clone)]
pub struct GuestOutput {
    /// The script's standard output, exactly (invalid UTF-8 replaced).
    pub stdout: String,
    /// The script's standard error, exactly (invalid UTF-8 replaced).
    pub stderr: String,
    /// The script's exit code (128 + N when signal N ended it).
    pub code: i32,
    /// The whole serial console: the kernel's messages, init's markers.
    pub console: String,
    /// From starting qemu to the script's start.
    pub boot: Duration,
    /// From starting qemu to the script's output read back.
    pub elapsed: Duration,
}

struct Entry {
    guest: String,
    source: FileSource,
    mode: u32,
    /// A host binary: its shared libraries come with it.
    binary: bool,
}

/// A guest to boot: the files it holds beside busybox, and the script its
/// init runs. Build it up, then [`run`](Guest::run) it (as often as wanted).
pub struct Guest {
    entries: Vec<Entry>,
    script: String,
    cpus: u32,
    memory_mib: u32,
}

impl Default for Guest {
    fn default() -> Self {
        Self::new()
    }
}

impl Guest {
    /// Two CPUs, 1 GiB of memory, busybox, and an empty script.
    pub fn new() -> Self {
        Guest {
            entries: Vec::new(),
            script: String::new(),
            cpus: 2,
            memory_mib: 1024,
        }
    }

    /// The host binary `host`, at the same path in the guest, with the
    /// shared libraries and the loader it needs.
    pub fn binary(self, host: impl AsRef<Path>) -> Self {
        let host = host.as_ref();
        let guest = host.to_string_lossy().into_owned();
        self.binary_at(host, guest)
    }

    /// The host binary `host` at `guest` (an absolute path), with the
    /// shared libraries and the loader it needs at their host paths.
    pub fn binary_at(mut self, host: impl AsRef<Path>, guest: impl Into<String>) -> Self {
        self.entries.push(Entry {
            guest: guest.into(),
            source: FileSource::Host(host.as_ref().to_path_buf()),
            mode: 0o755,
            binary: true,
        });
        self
    }

    /// A file at `guest` (an absolute path) holding `contents`, mode 0644.
    pub fn file(self, guest: impl Into<String>, contents: impl Into<Vec<u8>>) -> Self {
        self.with_contents(guest.into(), contents.into(), 0o644)
    }

    /// An executable file at `guest` holding `contents`, mode 0755.
    pub fn executable(self, guest: impl Into<String>, contents: impl Into<Vec<u8>>) -> Self {
        self.with_contents(guest.into(), contents.into(), 0o755)
    }

    fn with_contents(mut self, guest: String, contents: Vec<u8>, mode: u32) -> Self {
        self.entries.push(Entry {
            guest,
            source: FileSource::Contents(contents),
            mode,
            binary: false,
        });
        self
    }

    /// The script init runs with busybox's `sh`, in `/`, with its applets
    /// on the PATH, proc, sysfs, devtmpfs, tracefs and bpffs mounted.
    pub fn script(mut self, script: impl Into<String>) -> Self {
        self.script = script.into();
        self
    }

    /// The number of virtual CPUs (2 unless set).
    pub fn cpus(mut self, cpus: u32) -> Self {
        self.cpus = cpus;
        self
    }

    /// Boots the guest, runs the script and returns what it wrote. An error
    /// names what is missing or what went wrong: a file that cannot be
    /// packed, qemu failing, the guest's init failing, or the wall-clock
    /// `timeout` passing (qemu is killed; the console's tail is given).
    pub fn run(&self, timeout: Duration) -> Result<GuestOutput, String> {
        let kernel = kernel()?;
        let qemu = crate::program("qemu-system-x86_64")
            .map_err(|e| format!("{e} (Debian package qemu-system-x86)"))?;
        let busybox = crate::program("busybox")
            .map_err(|e| format!("{e} (Debian package busybox-static)"))?;

        let work = WorkDir::new()?;
        let root = work.path.join("root");
        let mut files = Files::default();
        files.add_binary(&busybox, "/bin/busybox")?;
        for entry in &self.entries {
            check_guest_path(&entry.guest)?;
            match (&entry.source, entry.binary) {
                (FileSource::Host(path), true) => files.add_binary(path, &entry.guest)?,
                (source, _) => files.add(&entry.guest, source.clone(), entry.mode)?,
            }
        }
        files.add(
            "/init",
            FileSource::Contents(INIT.as_bytes().to_vec()),
            0o755,
        )?;
        files.add(
            "/hsched-guest/script",
            FileSource::Contents(self.script.clone().into_bytes()),
            0o755,
        )?;
        files.stage(&root)?;
        let initramfs = work.path.join("initramfs.cpio.gz");
        pack(&root, &initramfs)?;
        boot(
            &qemu,
            &kernel,
            &initramfs,
            self.cpus,
            self.memory_mib,
            timeout,
        )
    }
}

/// The guest's /init. It exits only through `poweroff -f`; if it died
/// anyway the kernel would panic, and `panic=-1` with `-no-reboot` ends
/// qemu. The host stops qemu itself once the end marker is out, so the
/// last lines never race the power-off for the serial line.
const INIT: &str = r#"#!/bin/busybox sh
# hsched-testkit's guest init: mounts what a sched_ext test needs, runs the
# script, prints its output between markers.
/bin/busybox mkdir -p /bin /sbin /usr/bin /usr/sbin /proc /sys /dev /tmp /run
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/ TERM=dumb
fail() {
    echo "@@hsched-guest: init failed: $*@@"
    poweroff -f
    sleep 10
    exit 1
}
mount -t devtmpfs devtmpfs /dev || fail "cannot mount devtmpfs on /dev"
exec </dev/null >/dev/console 2>&1
mount -t proc proc /proc || fail "cannot mount proc on /proc"
mount -t sysfs sysfs /sys || fail "cannot mount sysfs on /sys"
mount -t tracefs tracefs /sys/kernel/tracing || fail "cannot mount tracefs on /sys/kernel/tracing"
mount -t bpf bpf /sys/fs/bpf || fail "cannot mount bpffs on /sys/fs/bpf"
echo "@@hsched-guest: begin@@"
cd /
/bin/sh /hsched-guest/script </dev/null >/hsched-guest/stdout 2>/hsched-guest/stderr
code=$?
# Only emergencies on the console from here on: nothing may land inside
# the encoded output.
echo 1 >/proc/sys/kernel/printk
echo "@@hsched-guest: stdout@@"
base64 /hsched-guest/stdout
echo "@@hsched-guest: stderr@@"
base64 /hsched-guest/stderr
echo "@@hsched-guest: end $code@@"
sleep 5
poweroff -f
sleep 10
"#;

const MARK_BEGIN: &str = "@@hsched-guest: begin@@";
const MARK_STDOUT: &str = "@@hsched-guest: stdout@@";
const MARK_STDERR: &str = "@@hsched-guest: stderr@@";
const MARK_END: &str = "@@hsched-guest: end ";
const MARK_FAILED: &str = "@@hsched-guest: init failed: ";

/// Paths the harness itself uses in the guest.
fn check_guest_path(guest: &str) -> Result<(), String> {
    let path = Path::new(guest);
    if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "guest path `{guest}` is not an absolute path without `..`"
        ));
    }
    if path == Path::new("/init") || path.starts_with("/hsched-guest") {
        return Err(format!(
            "guest path `{guest}` is the harness's own (/init, /hsched-guest)"
        ));
    }
    Ok(())
}

#[derive(Clone, PartialEq)]
enum FileSource {
    Host(PathBuf),
    Contents(Vec<u8>),
}

/// The guest's files by guest path; a path given twice must be the same
/// file (as when two binaries share a library).
#[derive(Default)]
struct Files {
    by_path: BTreeMap<String, (FileSource, u32)>,
}

impl Files {
    fn add(&mut self, guest: &str, source: FileSource, mode: u32) -> Result<(), String> {
        if let FileSource::Host(host) = &source {
            if !host.is_file() {
                return Err(format!(
                    "{} (for {guest} in the guest) is not a file",
                    host.display()
                ));
            }
        }
        match self.by_path.get(guest) {
            Some((existing, _)) if *existing != source => Err(format!(
                "guest path `{guest}` is given two different contents"
            )),
            Some(_) => Ok(()),
            None => {
                self.by_path.insert(guest.to_string(), (source, mode));
                Ok(())
            }
        }
    }

    /// `host` at `guest`, and every library `ldd` lists for it at its
    /// host path (the loader, too, at the path the binary names).
    fn add_binary(&mut self, host: &Path, guest: &str) -> Result<(), String> {
        self.add(guest, FileSource::Host(host.to_path_buf()), 0o755)?;
        for library in shared_libraries(host)? {
            let at = library.to_string_lossy().into_owned();
            self.add(&at, FileSource::Host(library), 0o755)?;
        }
        Ok(())
    }

    /// Writes the files under `root` (links on the host are followed: the
    /// guest gets their contents at the path asked for).
    fn stage(&self, root: &Path) -> Result<(), String> {
        for (guest, (source, mode)) in &self.by_path {
            let to = root.join(guest.trim_start_matches('/'));
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            }
            match source {
                FileSource::Host(from) => std::fs::copy(from, &to)
                    .map(drop)
                    .map_err(|e| format!("cannot copy {} into the guest: {e}", from.display()))?,
                FileSource::Contents(c) => std::fs::write(&to, c)
                    .map_err(|e| format!("cannot write {}: {e}", to.display()))?,
            }
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(*mode))
                .map_err(|e| format!("cannot set the mode of {}: {e}", to.display()))?;
        }
        Ok(())
    }
}

/// The shared libraries and the loader `ldd` lists for `binary`; none for
/// a static one.
fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>, String> {
    let out = Command::new("ldd")
        .arg(binary)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ldd (Debian package libc-bin): {e}"))?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        if text.contains("not a dynamic executable") || text.contains("statically linked") {
            return Ok(Vec::new());
        }
        return Err(format!(
            "ldd {} failed ({}): {}",
            binary.display(),
            out.status,
            text.trim()
        ));
    }
    parse_ldd(&text).map_err(|e| format!("{}: {e}", binary.display()))
}

fn parse_ldd(text: &str) -> Result<Vec<PathBuf>, String> {
    let mut libraries = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.contains("statically linked") {
            continue;
        }
        let path = match line.split_once("=>") {
            Some((name, rest)) => {
                let rest = rest.trim();
                if rest.starts_with("not found") {
                    return Err(format!(
                        "needs the library {}, which ldd cannot find",
                        name.trim()
                    ));
                }
                rest.split(" (").next().unwrap_or(rest).trim()
            }
            None => line.split(" (").next().unwrap_or(line).trim(),
        };
        // The vDSO comes from the kernel: it has no path.
        if path.starts_with('/') {
            libraries.push(PathBuf::from(path));
        }
    }
    Ok(libraries)
}

/// A directory under the target directory for one run's files, removed
/// when the run ends however it ends.
struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    fn new() -> Result<Self, String> {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_root().join("target"));
        let path = target.join("hsched-guest").join(format!(
            "run-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(WorkDir { path })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Packs `root` into a gzipped newc archive with the `cpio` and `gzip`
/// programs rather than crates: every test crate builds this one, and the
/// guest needs Debian packages anyway. Names are sorted (parents first),
/// owners are root and inode numbers fixed, so the archive does not depend
/// on the host's directory order or user.
fn pack(root: &Path, archive: &Path) -> Result<(), String> {
    let mut names = Vec::new();
    list(root, Path::new(""), &mut names)?;
    names.sort();
    let mut list_text = Vec::new();
    for name in &names {
        list_text.extend_from_slice(name.as_os_str().as_encoded_bytes());
        list_text.push(0);
    }

    let out = std::fs::File::create(archive)
        .map_err(|e| format!("cannot create {}: {e}", archive.display()))?;
    let mut cpio = Command::new("cpio")
        .args([
            "--create",
            "--format=newc",
            "--null",
            "--owner=0:0",
            "--reproducible",
            "--quiet",
        ])
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cpio (Debian package cpio): {e}"))?;
    let cpio_out = cpio.stdout.take().expect("piped");
    let gzip = Command::new("gzip")
        .args(["-n", "-c"])
        .stdin(Stdio::from(cpio_out))
        .stdout(Stdio::from(out))
        .stderr(Stdio::piped())
        .spawn();
    let gzip = match gzip {
        Ok(g) => g,
        Err(e) => {
            let _ = cpio.kill();
            let _ = cpio.wait();
            return Err(format!("cannot run gzip (Debian package gzip): {e}"));
        }
    };
    let written = cpio
        .stdin
        .take()
        .expect("piped")
        .write_all(&list_text)
        .map_err(|e| format!("cannot give cpio its file list: {e}"));
    let cpio_done = cpio.wait_with_output();
    let gzip_done = gzip.wait_with_output();
    let cpio_done = cpio_done.map_err(|e| format!("cpio: {e}"))?;
    if !cpio_done.status.success() {
        return Err(format!(
            "cpio failed ({}): {}",
            cpio_done.status,
            String::from_utf8_lossy(&cpio_done.stderr).trim()
        ));
    }
    written?;
    let gzip_done = gzip_done.map_err(|e| format!("gzip: {e}"))?;
    if !gzip_done.status.success() {
        return Err(format!(
            "gzip failed ({}): {}",
            gzip_done.status,
            String::from_utf8_lossy(&gzip_done.stderr).trim()
        ));
    }
    Ok(())
}

fn list(root: &Path, rel: &Path, names: &mut Vec<PathBuf>) -> Result<(), String> {
    let dir = root.join(rel);
    let entries =
        std::fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        let name = rel.join(entry.file_name());
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        names.push(name.clone());
        if is_dir {
            list(root, &name, names)?;
        }
    }
    Ok(())
}

/// What the reader of qemu's console has seen so far.
#[derive(Default)]
struct Console {
    bytes: Vec<u8>,
    begun: Option<Instant>,
    ended: bool,
}

fn boot(
    qemu: &Path,
    kernel: &Path,
    initramfs: &Path,
    cpus: u32,
    memory_mib: u32,
    timeout: Duration,
) -> Result<GuestOutput, String> {
    let start = Instant::now();
    // stdin is not the terminal: -nographic would put a terminal into raw
    // mode. No network device: the guest needs none.
    let mut child = Command::new(qemu)
        .args(["-accel", "tcg,thread=single", "-cpu", "max"])
        .args(["-smp", &cpus.to_string(), "-m", &memory_mib.to_string()])
        .arg("-kernel")
        .arg(kernel)
        .arg("-initrd")
        .arg(initramfs)
        .args(["-append", "console=ttyS0 quiet panic=-1"])
        .args(["-nographic", "-no-reboot", "-nic", "none"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", qemu.display()))?;

    let console = Arc::new(Mutex::new(Console::default()));
    let mut stdout = child.stdout.take().expect("piped");
    let reader = {
        let console = Arc::clone(&console);
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = match stdout.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let mut c = console.lock().unwrap_or_else(|p| p.into_inner());
                let from = c.bytes.len().saturating_sub(MARK_END.len() + 16);
                c.bytes.extend_from_slice(&buf[..n]);
                let recent = String::from_utf8_lossy(&c.bytes[from..]).into_owned();
                if c.begun.is_none() && contains(&c.bytes, MARK_BEGIN) {
                    c.begun = Some(Instant::now());
                }
                if let Some(at) = recent.find(MARK_END) {
                    // The whole line: the exit code is in it.
                    if recent[at..].contains('\n') {
                        c.ended = true;
                    }
                }
            }
        })
    };
    let mut stderr = child.stderr.take().expect("piped");
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });

    let mut timed_out = false;
    let status = loop {
        if console.lock().unwrap_or_else(|p| p.into_inner()).ended {
            let _ = child.kill();
            break child.wait().ok();
        }
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(e) => return Err(format!("cannot wait for qemu: {e}")),
        }
        if start.elapsed() >= timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = reader.join();
    let qemu_said = errors.join().unwrap_or_default();
    let elapsed = start.elapsed();
    let console = std::mem::take(&mut *console.lock().unwrap_or_else(|p| p.into_inner()));
    let text = String::from_utf8_lossy(&console.bytes).replace('\r', "");

    if timed_out {
        return Err(format!(
            "the guest did not finish within {timeout:?}: qemu killed; console tail:\n{}",
            tail(&text, 40)
        ));
    }
    if let Some(line) = text.lines().find(|l| l.contains(MARK_FAILED)) {
        let why = line
            .split(MARK_FAILED)
            .nth(1)
            .unwrap_or("")
            .trim_end_matches("@@");
        return Err(format!(
            "the guest's init failed: {why}; console tail:\n{}",
            tail(&text, 40)
        ));
    }
    if !console.ended {
        let status = status.map_or("unknown status".to_string(), |s| s.to_string());
        return Err(format!(
            "qemu ended ({status}) before the script did{}; console tail:\n{}",
            if qemu_said.trim().is_empty() {
                String::new()
            } else {
                format!("; qemu said: {}", qemu_said.trim())
            },
            tail(&text, 40)
        ));
    }
    let (stdout, stderr, code) = parse_console(&text)?;
    Ok(GuestOutput {
        stdout,
        stderr,
        code,
        boot: console
            .begun
            .map_or(elapsed, |at| at.saturating_duration_since(start)),
        elapsed,
        console: text,
    })
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The script's stdout, stderr and exit code from the markers on the
/// console (with carriage returns already removed).
fn parse_console(text: &str) -> Result<(String, String, i32), String> {
    let bad = |what: &str| format!("the guest's console {what}:\n{}", tail(text, 40));
    let lines: Vec<&str> = text.lines().collect();
    let at = |mark: &str| lines.iter().rposition(|l| l.trim() == mark);
    let out_at = at(MARK_STDOUT).ok_or_else(|| bad("has no stdout marker"))?;
    let err_at = at(MARK_STDERR).ok_or_else(|| bad("has no stderr marker"))?;
    let end_at = lines
        .iter()
        .rposition(|l| l.trim().starts_with(MARK_END))
        .ok_or_else(|| bad("has no end marker"))?;
    if !(out_at < err_at && err_at < end_at) {
        return Err(bad("has its markers out of order"));
    }
    let code = lines[end_at]
        .trim()
        .strip_prefix(MARK_END)
        .and_then(|rest| rest.strip_suffix("@@"))
        .and_then(|n| n.trim().parse::<i32>().ok())
        .ok_or_else(|| bad("has an end marker without an exit code"))?;
    let decode = |from: usize, to: usize, what: &str| {
        base64_decode(&lines[from + 1..to].concat())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| bad(&format!("has an undecodable {what} ({e})")))
    };
    Ok((
        decode(out_at, err_at, "stdout")?,
        decode(err_at, end_at, "stderr")?,
        code,
    ))
}

/// Standard base64 with padding, whitespace ignored (busybox wraps lines).
fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    let mut padding = 0;
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace()) {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => {
                padding += 1;
                continue;
            }
            _ => return Err(format!("the byte {c:#04x} is not base64")),
        };
        if padding > 0 {
            return Err("data after the padding".into());
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_what_busybox_writes() {
        assert_eq!(base64_decode("").unwrap(), b"");
        assert_eq!(base64_decode("aGk=\n").unwrap(), b"hi");
        assert_eq!(base64_decode("ZGlz\nYWJsZWQK").unwrap(), b"disabled\n");
        assert_eq!(base64_decode("AP8=").unwrap(), [0, 255]);
        assert!(base64_decode("a*b").unwrap_err().contains("0x2a"));
    }

    #[test]
    fn ldd_lines_give_the_libraries_and_the_loader_not_the_vdso() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f7a)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f7a)\n";
        assert_eq!(
            parse_ldd(text).unwrap(),
            [
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
        let missing = parse_ldd("\tlibnope.so.1 => not found\n").unwrap_err();
        assert!(missing.contains("libnope.so.1"), "{missing}");
    }

    #[test]
    fn the_console_between_the_markers_is_the_scripts_output() {
        let console = "[    2.1] some kernel line\n\
                       @@hsched-guest: begin@@\n\
                       @@hsched-guest: stdout@@\n\
                       ZGlz\nYWJsZWQK\n\
                       @@hsched-guest: stderr@@\n\
                       @@hsched-guest: end 3@@\n";
        let (out, err, code) = parse_console(console).unwrap();
        assert_eq!((out.as_str(), err.as_str(), code), ("disabled\n", "", 3));
        let cut = parse_console("@@hsched-guest: stdout@@\nZGlz\n").unwrap_err();
        assert!(cut.contains("no stderr marker"), "{cut}");
    }

    #[test]
    fn the_harness_paths_and_relative_paths_are_refused() {
        assert!(check_guest_path("/bin/true").is_ok());
        assert!(check_guest_path("/init").is_err());
        assert!(check_guest_path("/hsched-guest/x").is_err());
        assert!(check_guest_path("bin/true").is_err());
        assert!(check_guest_path("/a/../init").is_err());
    }
}
