//! A CPU emulator of the GPUs convgrad targets. It runs the device crate's
//! kernels (compiled for the host) with the target's execution model: a grid of
//! workgroups run in parallel on all cores; inside a workgroup each lane is a
//! fiber with its own instruction stream that meets the others at barriers and
//! at wave-collective matrix instructions.
//!
//! - [`Emulator`]: allocate, write, read, launch. Memory starts poisoned: every
//!   byte is "unwritten" until the host writes it or a kernel stores to it.
//! - [`lane`]: what a running lane calls (see `device/src/arch/emu.rs`).
//! - [`matrix`]: [`matrix::MatrixOp`] and its lane tables, taken from the vendors'
//!   documents (not from the kernels).
//! - Every check failure is an [`EmuError::Violation`] naming kernel, workgroup,
//!   lane, buffer and index.

//!
//! Environment: `CONVGRAD_EMU_THREADS` (worker threads, default: all cores),
//! `CONVGRAD_EMU_STACK_KIB` (stack per lane fiber, default 256),
//! `CONVGRAD_EMU_SEED` (workgroup order, below).
//!
//! **Workgroup order.** Each launch hands its workgroups to the worker
//! threads in a different order (last-first, or a random affine permutation),
//! drawn from the emulator's seed and a launch counter, so atomics of
//! different workgroups (atomic split-K) meet in a different order from launch
//! to launch, as on a GPU, and results that depend on it differ bitwise. The
//! seed is `CONVGRAD_EMU_SEED` (decimal or `0x` hex) when set, else fresh per
//! emulator and printed to stderr (a test harness shows it with a failing
//! test); with `CONVGRAD_EMU_THREADS=1` a seed repeats a process's orders
//! exactly. Lanes inside a workgroup keep their order (so the first violating
//! lane reported stays the lowest).

#![warn(missing_docs)]

mod exec;
mod fiber;
pub mod lane;
mod lds;
pub mod matrix;
mod memory;
mod order;
mod tma;

use convgrad_types::instance::Family;
use std::time::{Duration, Instant};

/// The GPU model an emulator instance imitates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EmuArch {
    /// MI200: wave64, 64 KiB LDS, MFMA.
    Gfx90a,
    /// MI300: wave64, 64 KiB LDS, MFMA.
    Gfx942,
    /// MI350/MI355 (CDNA4): gfx942 plus 160 KiB LDS and the double-k MFMAs
    /// (`v_mfma_f32_32x32x16_*`, `v_mfma_f32_16x16x32_*`).
    Gfx950,
    /// RX 7900: wave32, 64 KiB LDS, WMMA.
    Gfx1100,
    /// RX 9060: wave32, 64 KiB LDS, GFX12 WMMA.
    Gfx1200,
    /// RX 9070: wave32, 64 KiB LDS, GFX12 WMMA.
    Gfx1201,
    /// A100: warp32, 164 KiB shared memory, mma.sync.
    Sm80,
    /// H100: warp32, 227 KiB shared memory, mma.sync and wgmma.
    Sm90,
}

impl EmuArch {
    /// All models.
    pub const ALL: [EmuArch; 8] = [
        EmuArch::Gfx90a,
        EmuArch::Gfx942,
        EmuArch::Gfx950,
        EmuArch::Gfx1100,
        EmuArch::Gfx1200,
        EmuArch::Gfx1201,
        EmuArch::Sm80,
        EmuArch::Sm90,
    ];
    /// Threads per wave.
    pub const fn wave(self) -> u32 {
        self.family().wave()
    }
    /// Largest LDS (shared memory) per workgroup, bytes.
    pub const fn max_lds_bytes(self) -> usize {
        match self {
            EmuArch::Gfx90a | EmuArch::Gfx942 | EmuArch::Gfx1100 | EmuArch::Gfx1200 | EmuArch::Gfx1201 => 64 * 1024,
            // LLVM gives gfx950 `FeatureAddressableLocalMemorySize163840` (GCNProcessors.td).
            EmuArch::Gfx950 => 160 * 1024,
            EmuArch::Sm80 => 163 * 1024,
            EmuArch::Sm90 => 227 * 1024,
        }
    }
    /// Whether it has Hopper's warpgroup `wgmma.mma_async` ([`matrix::WgmmaOp`]).
    pub const fn has_wgmma(self) -> bool {
        matches!(self, EmuArch::Sm90)
    }
    /// Kernel family whose matrix instructions it executes.
    pub const fn family(self) -> Family {
        match self {
            EmuArch::Gfx90a | EmuArch::Gfx942 => Family::Cdna,
            EmuArch::Gfx950 => Family::Cdna4,
            EmuArch::Gfx1100 => Family::Rdna3,
            EmuArch::Gfx1200 | EmuArch::Gfx1201 => Family::Rdna4,
            EmuArch::Sm80 | EmuArch::Sm90 => Family::Nvidia,
        }
    }
    /// Whether it executes matrix instruction `op`: its family's, and on
    /// gfx950 also gfx942's.
    pub const fn executes(self, op: matrix::MatrixOp) -> bool {
        self.family().runs(op.family())
    }
    /// Name as on command lines: `gfx90a`, `gfx942`, `gfx950`, `gfx1100`, `gfx1200`, `gfx1201`, `sm_80`, `sm_90`.
    pub const fn name(self) -> &'static str {
        match self {
            EmuArch::Gfx90a => "gfx90a",
            EmuArch::Gfx942 => "gfx942",
            EmuArch::Gfx950 => "gfx950",
            EmuArch::Gfx1100 => "gfx1100",
            EmuArch::Gfx1200 => "gfx1200",
            EmuArch::Gfx1201 => "gfx1201",
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

/// A simulated GPU: memory plus an executor. `Send + Sync`: launches may run
/// from several host threads at once (each uses its own worker threads).
pub struct Emulator {
    arch: EmuArch,
    threads: usize,
    mem: memory::Memory,
    /// Seed of the workgroup orders.
    seed: u64,
    /// Launches so far (each gets its own order).
    launches: std::sync::atomic::AtomicU64,
}

/// The environment variable that fixes the workgroup-order seed.
pub const SEED_VAR: &str = "CONVGRAD_EMU_SEED";

/// Parses a seed: decimal or `0x` hex.
fn parse_seed(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// A seed no other emulator of this process (or, very likely, of another run) has.
fn fresh_seed() -> u64 {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    order::mix(t ^ order::mix(std::process::id() as u64 ^ (n << 32)))
}

/// The seed `CONVGRAD_EMU_SEED` sets (`None` when unset or empty).
///
/// # Panics
/// When it is set to something other than a decimal or `0x` hex `u64`: a
/// seed that is silently ignored would not repeat the run it was meant to.
pub fn seed_from_env() -> Option<u64> {
    let v = std::env::var(SEED_VAR).ok().filter(|v| !v.trim().is_empty())?;
    Some(parse_seed(&v).unwrap_or_else(|| panic!("{SEED_VAR}={v:?}: expected an unsigned 64-bit integer (decimal or 0x hex)")))
}

/// Most threads a workgroup may have.
pub const MAX_BLOCK: u32 = 1024;

impl Emulator {
    /// A new emulator of `arch` with empty memory, using all cores
    /// (or `CONVGRAD_EMU_THREADS`), with the workgroup-order seed
    /// `CONVGRAD_EMU_SEED` or a fresh one, printed to stderr.
    pub fn new(arch: EmuArch) -> Self {
        let seed = seed_from_env().unwrap_or_else(|| {
            let s = fresh_seed();
            eprintln!("convgrad-emu ({}): workgroup order seed {s:#x} ({SEED_VAR}={s:#x} repeats it)", arch.name());
            s
        });
        Emulator::new_seeded(arch, seed)
    }
    /// A new emulator like [`Emulator::new`] with workgroup-order seed `seed`
    /// (whatever `CONVGRAD_EMU_SEED` says).
    pub fn new_seeded(arch: EmuArch, seed: u64) -> Self {
        let threads = std::env::var("CONVGRAD_EMU_THREADS")
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|&n: &usize| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        Emulator { arch, threads, mem: memory::Memory::default(), seed, launches: Default::default() }
    }
    /// The same emulator with workgroup-order seed `seed` (see the crate docs).
    pub fn with_seed(self, seed: u64) -> Self {
        Emulator { seed, ..self }
    }
    /// The workgroup-order seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// The same emulator running launches on `n` worker threads (at least 1).
    pub fn with_threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }
    /// Worker threads a launch uses (at most one per workgroup).
    pub fn threads(&self) -> usize {
        self.threads
    }
    /// Its model.
    pub fn arch(&self) -> EmuArch {
        self.arch
    }
    /// Allocates `bytes` (256-byte aligned address); every byte starts unwritten
    /// and holds 0xFF (NaN as f32, f16 and bf16).
    pub fn alloc(&self, bytes: usize) -> Result<u64, EmuError> {
        self.mem.alloc(bytes)
    }
    /// Frees an allocation by its base address.
    pub fn free(&self, addr: u64) -> Result<(), EmuError> {
        self.mem.free(addr)
    }
    /// The live allocation holding `addr`: `(base, bytes)`.
    pub fn allocation_of(&self, addr: u64) -> Result<(u64, usize), EmuError> {
        let (a, _) = self.mem.find(addr, 0)?;
        Ok((a.base, a.size))
    }
    /// Names the allocation holding `addr` in violation messages (`buffer #3 'dy' (1024 bytes)`).
    pub fn label(&self, addr: u64, name: &str) -> Result<(), EmuError> {
        self.mem.label(addr, name)
    }
    /// Host write (marks the bytes written). `addr` may point inside an allocation.
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<(), EmuError> {
        let (a, off) = self.mem.find(addr, data.len())?;
        // SAFETY: `find` checked `addr..addr+len` lies in the live allocation `a`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), addr as *mut u8, data.len()) };
        a.mark_written(off, data.len());
        Ok(())
    }
    /// Host read (unwritten bytes read as whatever they hold; no error).
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), EmuError> {
        let _keep = self.mem.find(addr, out.len())?;
        // SAFETY: as in `write`.
        unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, out.as_mut_ptr(), out.len()) };
        Ok(())
    }
    /// Runs a kernel to completion, all workgroups in parallel on the host's cores.
    /// A violation stops the launch and is returned: the one of the
    /// lowest-numbered workgroup that commits one (workgroups below it still
    /// run, those above stop), whatever the thread timing.
    pub fn launch(&self, launch: &Launch<'_>) -> Result<LaunchReport, EmuError> {
        self.check_launch(launch)?;
        let start = Instant::now();
        let n = self.launches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let shared = exec::Shared::new(launch, self.arch, self.mem.snapshot(), order::mix(self.seed) ^ n);
        let threads = (self.threads as u64).min(shared.total()) as usize;
        std::thread::scope(|s| {
            for i in 0..threads {
                std::thread::Builder::new()
                    .name(format!("convgrad-emu-{i}"))
                    .spawn_scoped(s, || exec::worker_main(&shared))
                    .expect("emulator: cannot spawn a worker thread");
            }
        });
        let report = LaunchReport {
            elapsed: start.elapsed(),
            matrix_flops: shared.flops.load(std::sync::atomic::Ordering::Relaxed),
            workgroups: shared.workgroups.load(std::sync::atomic::Ordering::Relaxed),
        };
        match shared.into_violation() {
            Some(v) => Err(EmuError::Violation(Box::new(v))),
            None => Ok(report),
        }
    }

    fn check_launch(&self, l: &Launch<'_>) -> Result<(), EmuError> {
        let (wave, max_lds) = (self.arch.wave(), self.arch.max_lds_bytes());
        let bad = |m: String| Err(EmuError::Usage(format!("launch of {}: {m}", l.name)));
        if l.grid.contains(&0) {
            return bad(format!("empty grid {:?}", l.grid));
        }
        if l.block == 0 || !l.block.is_multiple_of(wave) || l.block > MAX_BLOCK {
            return bad(format!(
                "block of {} threads; {} needs a multiple of its wave size {wave}, at most {MAX_BLOCK}",
                l.block,
                self.arch.name()
            ));
        }
        if l.lds_bytes > max_lds {
            return bad(format!("{} bytes of LDS; {} has at most {max_lds}", l.lds_bytes, self.arch.name()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn emulator_is_send_sync() {
        assert_send_sync::<Emulator>();
    }

    #[test]
    fn memory_round_trip_and_poison() {
        let emu = Emulator::new(EmuArch::Gfx942);
        let a = emu.alloc(100).unwrap();
        assert_eq!(a % 256, 0);
        let mut out = [0u8; 4];
        emu.read(a + 8, &mut out).unwrap();
        assert_eq!(out, [0xFF; 4]);
        emu.write(a + 8, &[1, 2, 3, 4]).unwrap();
        emu.read(a + 8, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
        assert!(emu.write(a + 98, &[0; 4]).is_err());
        assert!(emu.free(a + 1).is_err());
        emu.free(a).unwrap();
        assert!(emu.read(a, &mut out).is_err());
    }

    #[test]
    fn launch_shape_errors() {
        let emu = Emulator::new(EmuArch::Gfx1100);
        unsafe fn k(_: *const u8) {}
        let l = Launch { name: "k", entry: k, grid: [1, 1, 1], block: 48, lds_bytes: 0, args: 0 };
        assert!(matches!(emu.launch(&l), Err(EmuError::Usage(m)) if m.contains("multiple of its wave size 32")));
        let l = Launch { block: 32, lds_bytes: 65 * 1024, ..l };
        assert!(matches!(emu.launch(&l), Err(EmuError::Usage(m)) if m.contains("LDS")));
        let l = Launch { lds_bytes: 0, grid: [0, 1, 1], ..l };
        assert!(emu.launch(&l).is_err());
    }
}
