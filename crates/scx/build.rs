//! With the `scx` feature: compiles the BPF scheduler (src/bpf/hsched.bpf.c)
//! with clang into an object that src/loader.rs embeds. Without it: nothing.
//!
//! `vmlinux.h` is looked for, in order, at `$HSCHED_VMLINUX_H` and at the
//! workspace's `target/scx-kernel/<version>/vmlinux.h`, which `cargo xtask
//! scx-kernel` writes from the sched_ext kernel's BTF. The BPF headers
//! (bpf_helpers.h and friends) are libbpf-sys's own, which its build script
//! exports as `DEP_BPF_INCLUDE`: they match the libbpf the loader links, and
//! no libbpf-dev package is needed. The compiler is `$HSCHED_BPF_CLANG`, or
//! else clang-19, or else clang.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The kernel `cargo xtask scx-kernel` caches (hsched_testkit::guest's).
const KERNEL_VERSION: &str = "7.3.4+deb13-amd64";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_SCX").is_none() {
        return;
    }
    let source = Path::new("src/bpf/hsched.bpf.c");
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rerun-if-env-changed=HSCHED_VMLINUX_H");
    println!("cargo:rerun-if-env-changed=HSCHED_BPF_CLANG");

    let vmlinux_h = vmlinux_h();
    println!("cargo:rerun-if-changed={}", vmlinux_h.display());
    let bpf_include = std::env::var("DEP_BPF_INCLUDE")
        .unwrap_or_else(|_| fail("libbpf-sys did not export DEP_BPF_INCLUDE (its BPF headers)"));
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("hsched.bpf.o");
    // vmlinux.h is included from a directory of its own, as "vmlinux.h".
    let vmlinux_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("vmlinux");
    std::fs::create_dir_all(&vmlinux_dir).unwrap();
    std::fs::copy(&vmlinux_h, vmlinux_dir.join("vmlinux.h"))
        .unwrap_or_else(|e| fail(&format!("cannot copy {}: {e}", vmlinux_h.display())));

    let clang = clang();
    let output = Command::new(&clang)
        .args([
            "-target",
            "bpf",
            "-mcpu=v3",
            "-O2",
            "-g",
            "-D__TARGET_ARCH_x86",
        ])
        // vmlinux.h from bpftool declares some types it never defines.
        .arg("-Wno-missing-declarations")
        .arg("-I")
        .arg(&vmlinux_dir)
        .arg("-I")
        .arg(&bpf_include)
        .arg("-c")
        .arg(source)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap_or_else(|e| {
            fail(&format!(
                "cannot run {clang}: {e} (Debian package clang-19)"
            ))
        });
    if !output.status.success() {
        fail(&format!(
            "{clang} failed to compile {}:\n{}",
            source.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
}

fn vmlinux_h() -> PathBuf {
    if let Some(path) = std::env::var_os("HSCHED_VMLINUX_H") {
        let path = PathBuf::from(path);
        if !path.is_file() {
            fail(&format!(
                "HSCHED_VMLINUX_H={} is not a file",
                path.display()
            ));
        }
        return path;
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("crates/scx sits two levels under the workspace");
    let cached = workspace
        .join("target")
        .join("scx-kernel")
        .join(KERNEL_VERSION)
        .join("vmlinux.h");
    if cached.is_file() {
        return cached;
    }
    fail(&format!(
        "no vmlinux.h for the BPF scheduler: set HSCHED_VMLINUX_H to one made from a \
         sched_ext kernel's BTF, or run `cargo xtask scx-kernel` to write {}",
        cached.display()
    ))
}

fn clang() -> String {
    if let Ok(clang) = std::env::var("HSCHED_BPF_CLANG") {
        return clang;
    }
    for candidate in ["clang-19", "clang"] {
        if Command::new(candidate).arg("--version").output().is_ok() {
            return candidate.to_string();
        }
    }
    fail("no clang-19 or clang to compile the BPF scheduler (Debian package clang-19)")
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1)
}
