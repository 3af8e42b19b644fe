//! Shared test helpers: the shipped code objects, the toolchain's llvm-objdump, and
//! one test per architecture.
#![allow(dead_code, unused_macros, unused_imports)]

use convgrad_isa::{Arch, CodeObject};
use std::path::PathBuf;
use std::process::Command;

/// `target/kernels` of the workspace (or `CONVGRAD_KERNEL_DIR`).
pub fn kernel_dir() -> PathBuf {
    match std::env::var_os("CONVGRAD_KERNEL_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/kernels"),
    }
}

/// The code object path of an architecture.
pub fn hsaco_path(arch: Arch) -> PathBuf {
    kernel_dir().join(arch.name()).join("convgrad.hsaco")
}

/// Loads the shipped code object of `arch`; panics (fails the test) when it is missing:
/// CI builds the kernels before the tests, so a missing file is an error, not a skip.
pub fn load(arch: Arch) -> CodeObject {
    let p = hsaco_path(arch);
    assert!(
        p.exists(),
        "{} is missing: build the code objects first (`cargo xtask build-kernels`)",
        p.display()
    );
    CodeObject::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `per_arch!(name, check)`: a module `name` of one `#[test]` per architecture
/// (`name::gfx942`...), each calling `check(arch)`: they run in parallel and fail
/// one by one.
macro_rules! per_arch {
    ($name:ident, $check:ident) => {
        $crate::common::per_arch!(@ $name, $check, gfx90a Gfx90a, gfx942 Gfx942, gfx1100 Gfx1100);
    };
    (@ $name:ident, $check:ident, $($test:ident $arch:ident),+) => {
        mod $name {$(
            #[test]
            fn $test() {
                super::$check(convgrad_isa::Arch::$arch);
            }
        )+}
    };
}
pub(crate) use per_arch;

/// `llvm-objdump` of the toolchain's llvm-tools component.
pub fn llvm_objdump() -> PathBuf {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .expect("running rustc --print sysroot");
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let vv = Command::new(&rustc)
        .arg("-vV")
        .output()
        .expect("running rustc -vV");
    let host = String::from_utf8_lossy(&vv.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .expect("host triple in rustc -vV");
    let p = PathBuf::from(sysroot)
        .join("lib/rustlib")
        .join(host)
        .join("bin/llvm-objdump");
    assert!(
        p.exists(),
        "{} is missing (rustup component add llvm-tools)",
        p.display()
    );
    p
}
