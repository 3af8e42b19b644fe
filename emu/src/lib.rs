//! A CPU emulator of the GPUs convgrad targets. It runs the device crate's
//! kernels (compiled for the host) with the target's execution model: a grid of
//! workgroups run in parallel on all cores; inside a workgroup each lane is a
//! fiber with its own instruction stream that meets the others at barriers and
//! at wave-collective matrix instructions.
//!
//! CONTRACT (stub; the bodies are filled in by the emulator work):
//! - [`Emulator`]: allocate, write, read, launch. Memory starts poisoned: every
//!   byte is "unwritten" until the host writes it or a kernel stores to it.
//! - [`lane`]: what a running lane calls (see `device/src/arch/emu.rs`).
//! - [`matrix`]: [`matrix::MatrixOp`] and its lane tables, taken from the vendors'
//!   documents (not from the kernels).
//! - Every check failure is an [`EmuError::Violation`] naming kernel, workgroup,
//!   lane, buffer and index.

pub mod lane;
pub mod matrix;

use convgrad_types::instance::Family;
use std::time::Duration;

/// The GPU model an emulator instance imitates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EmuArch {
    /// MI200: wave64, 64 KiB LDS, MFMA.
    Gfx90a,
    /// MI300: wave64, 64 KiB LDS, MFMA.
    Gfx942,
    /// RX 7900: wave32, 64 KiB LDS, WMMA.
    Gfx1100,
    /// A100: warp32, 164 KiB shared memory, mma.sync.
    Sm80,
    /// H100: warp32, 227 KiB shared memory, mma.sync.
    Sm90,
}

impl EmuArch {
    /// All models.
    pub const ALL: [EmuArch; 5] = [EmuArch::Gfx90a, EmuArch::Gfx942, EmuArch::Gfx1100, EmuArch::Sm80, EmuArch::Sm90];
    /// Threads per wave.
    pub const fn wave(self) -> u32 {
        self.family().wave()
    }
    /// Largest LDS (shared memory) per workgroup, bytes.
    pub const fn max_lds_bytes(self) -> usize {
        match self {
            EmuArch::Gfx90a | EmuArch::Gfx942 | EmuArch::Gfx1100 => 64 * 1024,
            EmuArch::Sm80 => 163 * 1024,
            EmuArch::Sm90 => 227 * 1024,
        }
    }
    /// Kernel family whose matrix instructions it executes.
    pub const fn family(self) -> Family {
        match self {
            EmuArch::Gfx90a | EmuArch::Gfx942 => Family::Cdna,
            EmuArch::Gfx1100 => Family::Rdna3,
            EmuArch::Sm80 | EmuArch::Sm90 => Family::Nvidia,
        }
    }
    /// Name as on command lines: `gfx90a`, `gfx942`, `gfx1100`, `sm_80`, `sm_90`.
    pub const fn name(self) -> &'static str {
        match self {
            EmuArch::Gfx90a => "gfx90a",
            EmuArch::Gfx942 => "gfx942",
            EmuArch::Gfx1100 => "gfx1100",
            EmuArch::Sm80 => "sm_80",
            EmuArch::Sm90 => "sm_90",
        }
    }
    /// Parses [`EmuArch::name`] (also `sm80`, `sm90`).
    pub fn parse(s: &str) -> Option<EmuArch> {
        let s = s.to_ascii_lowercase().replace('_', "");
        EmuArch::ALL.into_iter().find(|a| a.name().replace('_', "") == s)
    }
}

/// A kernel entry point compiled for the host: takes the device address of its argument block.
pub type KernelEntry = unsafe fn(*const u8);

/// One kernel launch.
#[derive(Clone, Copy, Debug)]
pub struct Launch<'a> {
    /// Kernel name (for error messages).
    pub name: &'a str,
    /// Entry point.
    pub entry: KernelEntry,
    /// Workgroups in x, y, z.
    pub grid: [u32; 3],
    /// Threads per (1-D) workgroup; a multiple of the wave size.
    pub block: u32,
    /// LDS bytes the workgroup is launched with.
    pub lds_bytes: usize,
    /// Device address of the argument block (an emulator allocation).
    pub args: u64,
}

/// What a launch did.
#[derive(Clone, Copy, Debug, Default)]
pub struct LaunchReport {
    /// Wall-clock time of the emulated launch.
    pub elapsed: Duration,
    /// FLOPs executed by emulated matrix instructions (2 per multiply-add).
    pub matrix_flops: u64,
    /// Workgroups run.
    pub workgroups: u64,
}

/// What a check found, with where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Kernel name.
    pub kernel: String,
    /// Workgroup index.
    pub workgroup: [u32; 3],
    /// Lane (thread index in the workgroup).
    pub lane: u32,
    /// What happened, e.g. "out-of-bounds global read of 4 bytes at buffer #3 (1024 bytes) element offset 1030".
    pub what: String,
}

/// Emulator errors.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// A kernel broke a rule (bounds, race, barrier, unwritten read, trap, bad matrix operand).
    #[error("kernel {} workgroup {:?} lane {}: {}", .0.kernel, .0.workgroup, .0.lane, .0.what)]
    Violation(Box<Violation>),
    /// A host-side call with bad arguments (unknown address, bad launch shape, ...).
    #[error("{0}")]
    Usage(String),
}

/// A simulated GPU: memory plus an executor. `Send + Sync`.
pub struct Emulator {
    arch: EmuArch,
}

impl Emulator {
    /// A new emulator of `arch` with empty memory.
    pub fn new(arch: EmuArch) -> Self {
        Emulator { arch }
    }
    /// Its model.
    pub fn arch(&self) -> EmuArch {
        self.arch
    }
    /// Allocates `bytes` (256-byte aligned address); every byte starts unwritten.
    pub fn alloc(&self, bytes: usize) -> Result<u64, EmuError> {
        let _ = bytes;
        todo!()
    }
    /// Frees an allocation by its base address.
    pub fn free(&self, addr: u64) -> Result<(), EmuError> {
        let _ = addr;
        todo!()
    }
    /// Host write (marks the bytes written). `addr` may point inside an allocation.
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<(), EmuError> {
        let _ = (addr, data);
        todo!()
    }
    /// Host read (unwritten bytes read as whatever they hold; no error).
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), EmuError> {
        let _ = (addr, out);
        todo!()
    }
    /// Runs a kernel to completion, all workgroups in parallel on the host's cores.
    pub fn launch(&self, launch: &Launch<'_>) -> Result<LaunchReport, EmuError> {
        let _ = launch;
        todo!()
    }
}
