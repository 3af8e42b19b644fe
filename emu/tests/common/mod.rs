//! Helpers shared by the integration tests: buffers, argument blocks, launches,
//! a small deterministic RNG.
#![allow(dead_code)]

use convgrad_emu::{EmuArch, EmuError, Emulator, KernelEntry, Launch, LaunchReport, Violation};

/// Uploads `data` into a new labelled allocation.
pub fn upload<T: Copy>(emu: &Emulator, label: &str, data: &[T]) -> u64 {
    let bytes = std::mem::size_of_val(data);
    let a = emu.alloc(bytes).unwrap();
    // SAFETY: reading plain `Copy` data as bytes.
    emu.write(a, unsafe { std::slice::from_raw_parts(data.as_ptr().cast(), bytes) }).unwrap();
    emu.label(a, label).unwrap();
    a
}

/// A new labelled allocation of `n` `T`s, left unwritten.
pub fn alloc<T>(emu: &Emulator, label: &str, n: usize) -> u64 {
    let a = emu.alloc(n * size_of::<T>()).unwrap();
    emu.label(a, label).unwrap();
    a
}

/// Downloads `n` `T`s.
pub fn download<T: Copy + Default>(emu: &Emulator, addr: u64, n: usize) -> Vec<T> {
    let mut v = vec![T::default(); n];
    // SAFETY: writing bytes into plain `Copy` data.
    let bytes = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), n * size_of::<T>()) };
    emu.read(addr, bytes).unwrap();
    v
}

/// An argument block of 64-bit words (pointers and integers).
pub fn args(emu: &Emulator, words: &[u64]) -> u64 {
    upload(emu, "args", words)
}

pub fn launch(
    emu: &Emulator,
    name: &str,
    entry: KernelEntry,
    grid: [u32; 3],
    block: u32,
    lds_bytes: usize,
    args: u64,
) -> Result<LaunchReport, EmuError> {
    emu.launch(&Launch { name, entry, grid, block, lds_bytes, args })
}

/// The violation a launch must have failed with.
pub fn violation(r: Result<LaunchReport, EmuError>) -> Violation {
    match r {
        Err(EmuError::Violation(v)) => *v,
        Err(e) => panic!("expected a violation, got usage error: {e}"),
        Ok(_) => panic!("expected a violation, the launch passed"),
    }
}

/// Asserts every fragment appears in the violation's text.
pub fn assert_what(v: &Violation, parts: &[&str]) {
    for p in parts {
        assert!(v.what.contains(p), "violation text lacks {p:?}:\n  {}", v.what);
    }
}

/// Launches `entry` as one workgroup of `block` threads with `lds_bytes` of
/// LDS and no arguments: the launch must fail with a violation at `lane`
/// whose text holds every fragment of `parts`. Returns it for further checks.
pub fn one_workgroup_violation(
    emu: &Emulator,
    name: &str,
    entry: KernelEntry,
    (block, lds_bytes): (u32, usize),
    lane: u32,
    parts: &[&str],
) -> Violation {
    let v = violation(launch(emu, name, entry, [1, 1, 1], block, lds_bytes, 0));
    assert_eq!(v.lane, lane, "{name}: {}", v.what);
    assert_what(&v, parts);
    v
}

/// xorshift64*: deterministic test data without a dependency.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

pub fn emu(arch: EmuArch) -> Emulator {
    Emulator::new(arch)
}
