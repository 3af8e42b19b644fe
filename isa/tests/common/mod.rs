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

/// A splitmix64 stream seeded from the clock (printed, so a failure can be replayed
/// with `CONVGRAD_ISA_TEST_SEED`). Tests add their own value kinds in `impl Rng` blocks.
pub struct Rng(pub u64);

impl Rng {
    pub fn new(what: &str) -> Rng {
        let seed = std::env::var("CONVGRAD_ISA_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
        });
        println!("{what}: seed {seed}");
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn u32(&mut self) -> u32 {
        self.next() as u32
    }
    /// The bits of a finite f32 of moderate magnitude (random sign, exponent 2^-7..2^8, mantissa).
    pub fn f32_bits(&mut self) -> u32 {
        let r = self.u32();
        (r & 0x807f_ffff) | (((r >> 23) & 15) + 120) << 23
    }
}
