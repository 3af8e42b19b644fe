//! The backend interface the public types are built on.

use super::error::{Result, RuntimeError};
use super::meta::KernelMeta;
use std::ffi::c_void;

/// What a backend reports about its device.
#[derive(Clone, Debug)]
pub(crate) struct Info {
    pub name: String,
    pub arch: String,
    pub memory_bytes: u64,
    pub compute_units: u32,
    pub max_lds_bytes: u32,
    pub wave_size: u32,
    pub ordinal: usize,
}

/// A kernel handle of some backend.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RawKernel {
    /// A host build run by the emulator.
    Emu(convgrad_emu::KernelEntry),
    /// A driver function handle (`CUfunction` / `hipFunction_t`).
    Gpu(*mut c_void),
    /// A decoded program of the isa executor (index into its driver's table).
    Isa(u32),
}

// SAFETY: function handles are immutable driver objects usable from any thread.
unsafe impl Send for RawKernel {}
unsafe impl Sync for RawKernel {}

/// Which stream a call is ordered on: the device's own, or a stream handle
/// (`CUstream` / `hipStream_t`; CUDA's null handle is the legacy default
/// stream), created by convgrad or the caller's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamId {
    /// The stream the device was opened with.
    Own,
    /// A runtime stream handle.
    Handle(*mut c_void),
}

// SAFETY: stream handles are driver objects usable from any thread.
unsafe impl Send for StreamId {}
unsafe impl Sync for StreamId {}

/// A recorded point in a device's stream.
pub(crate) enum RawEvent {
    /// Host time (the emulator runs launches synchronously).
    Host(std::time::Instant),
    /// CUDA event.
    Cuda(super::cuda::CuEvent),
    /// HIP event (`hipEvent_t`).
    #[cfg(feature = "hip")]
    Hip(super::hip::HipEvent),
}

/// Launch limits of one kernel, from the code object or the driver.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Limits {
    /// Static LDS (shared memory) the kernel declares, bytes.
    pub static_lds: u32,
    /// Most threads per workgroup it can run with.
    pub max_threads: Option<u32>,
    /// The exact workgroup size it requires.
    pub required_threads: Option<u32>,
}

impl Limits {
    /// The limits an AMD code object's metadata states (HIP and the isa executor).
    pub fn from_amd_meta(meta: &KernelMeta) -> Limits {
        Limits {
            static_lds: meta.static_lds_bytes.unwrap_or(0) as u32,
            max_threads: meta.max_threads.map(|t| t as u32),
            required_threads: meta.required_threads.map(|t| t as u32),
        }
    }
}

/// A loaded code object.
pub(crate) trait LoadedModule: Send + Sync {
    /// Resolves a kernel the metadata lists.
    fn function(&self, meta: &KernelMeta) -> Result<(RawKernel, Limits)>;
}

/// One launch, checked.
pub(crate) struct LaunchSpec<'a> {
    pub name: &'a str,
    pub kernel: RawKernel,
    pub grid: [u32; 3],
    pub block: u32,
    pub lds_bytes: u32,
    pub args: &'a [u8],
}

/// A device backend. Copies wait for the device's own stream; launches,
/// fills and events are queued on the stream they name.
pub(crate) trait Driver: Send + Sync {
    fn info(&self) -> &Info;
    /// The driver's version, as runtime find keys its measurements
    /// ([`Setup::driver`](crate::ops::find_file::Setup::driver)): CUDA's
    /// `cuDriverGetVersion`, HIP's `hipDriverGetVersion`, a fixed version of
    /// the CPU backends. A new driver can change kernel timings (a new PTX
    /// JIT, a new code-object loader), so measurements do not outlive it.
    fn driver_version(&self) -> &str;
    /// Allocates `bytes` (> 0) of device memory, usable on any stream when
    /// this returns.
    fn alloc(&self, bytes: usize) -> Result<u64>;
    /// Frees an allocation in the order of the device's own stream.
    fn free(&self, addr: u64) -> Result<()>;
    /// Copies host bytes to the device; returns when the copy is done.
    fn write(&self, addr: u64, data: &[u8]) -> Result<()>;
    /// Copies device bytes to the host after queued work; returns when done.
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<()>;
    /// Sets `bytes` bytes to `value` (ordered on `stream`).
    fn fill(&self, addr: u64, value: u8, bytes: usize, stream: StreamId) -> Result<()>;
    /// Loads a code object image (GPU backends).
    fn load(&self, image: &[u8]) -> Result<Box<dyn LoadedModule>>;
    /// Queues a launch of one `ConvArgs` block `spec.args` on `stream`: CUDA
    /// passes it by value (parameter space); HIP and the isa executor upload it
    /// and pass its address ([`ArgRing::stage_kernarg`]).
    fn launch(&self, spec: &LaunchSpec<'_>, stream: StreamId) -> Result<()>;
    /// Waits for all work queued on `stream`.
    fn synchronize(&self, stream: StreamId) -> Result<()>;
    /// Records an event on `stream`.
    fn record(&self, stream: StreamId) -> Result<RawEvent>;
    /// Milliseconds between two recorded events (waits for `end`).
    fn elapsed_ms(&self, start: &RawEvent, end: &RawEvent) -> Result<f32>;
    /// The handle of the device's own stream.
    fn own_stream(&self) -> *mut c_void;
    /// Creates a stream of this device (the emulator: a token).
    fn create_stream(&self) -> Result<*mut c_void>;
    /// Destroys a stream made by [`Driver::create_stream`].
    fn destroy_stream(&self, handle: *mut c_void);
    /// Makes `waiter` wait for the work queued on `on` so far (no host wait).
    fn stream_wait(&self, waiter: StreamId, on: StreamId) -> Result<()>;
    /// Checks that `handle` is a stream of this device's context (CUDA:
    /// `cuStreamGetCtx`); the CPU backends accept any value.
    fn check_stream(&self, _handle: *mut c_void) -> Result<()> {
        Ok(())
    }
    /// The allocation holding `addr`: `(base, bytes)`, for checking the
    /// lengths of foreign pointers.
    fn address_range(&self, addr: u64) -> Result<(u64, usize)>;
    /// What the last emulated launch did (emulator only).
    fn emu_report(&self) -> Option<convgrad_emu::LaunchReport> {
        None
    }
    /// Launches queued on `stream` so far (the emulator counts them per
    /// stream handle; `None` on other backends).
    fn launches_on(&self, _stream: StreamId) -> Option<u64> {
        None
    }
    /// What the last launch on the isa executor executed (isa backend only).
    fn isa_counters(&self) -> Option<convgrad_isa::exec::Counters> {
        None
    }
    /// The 128-byte tensor map a TMA kernel reads for `m` (its
    /// `ConvArgs::tma` slot): the driver's `CUtensorMap` on CUDA, `m`'s own
    /// bytes on the emulator; other backends have no TMA kernels.
    fn encode_tma(&self, m: &convgrad_types::params::TmaMap) -> Result<[u64; 16]> {
        let _ = m;
        Err(RuntimeError::NotBuilt(format!("{}: no tensor memory accelerator (TMA kernels run on sm_90 only)", self.info().name)))
    }
    /// Raises the kernel's dynamic LDS limit when a launch needs more than the
    /// default (CUDA: 48 KiB). Called before the first such launch.
    fn prepare_lds(&self, _kernel: RawKernel, _name: &str, _lds_bytes: u32) -> Result<()> {
        Ok(())
    }
}

/// Argument blocks of launches in flight: a device buffer written as a bump
/// arena (with a host mirror that stays untouched until the stream has
/// drained), reset when the stream is synchronized. AMD backends only (HIP
/// and the isa executor): CUDA kernels take the block by value.
pub(crate) struct ArgRing {
    pub base: u64,
    pub host: Box<[u8]>,
    pub used: usize,
    /// Whether a launch on another stream than the device's own used the
    /// ring since it was last reset (then only a device-wide wait frees it).
    pub foreign: bool,
}

/// An argument block staged in an [`ArgRing`]: copy `ring.host[at..at + len]`
/// to device address `addr`, then launch with `kernarg` as the explicit kernarg
/// segment (one 8-byte pointer to the block, checked at module load).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StagedArgs {
    pub at: usize,
    pub len: usize,
    pub addr: u64,
    pub kernarg: [u8; 8],
}

impl ArgRing {
    /// Bytes per ring.
    pub const BYTES: usize = 1 << 20;
    /// Alignment of each block.
    pub const ALIGN: usize = 256;

    /// Reserves room for `n` bytes; `None` when full (synchronize, [`ArgRing::reset`], retry).
    pub fn reserve(&mut self, n: usize) -> Option<usize> {
        let at = self.used.next_multiple_of(Self::ALIGN);
        if at + n > self.host.len() {
            return None;
        }
        self.used = at + n;
        Some(at)
    }
    /// Forgets every block (call only when no launch is in flight).
    pub fn reset(&mut self) {
        self.used = 0;
        self.foreign = false;
    }
    /// Copies a launch's argument block into the ring and returns its offset;
    /// when the ring is full, `drain` waits for the launches in flight first.
    /// Blocks larger than the ring are refused with an error naming the kernel.
    pub fn stage(&mut self, kernel: &str, args: &[u8], drain: impl FnOnce() -> Result<()>) -> Result<usize> {
        if args.len() > Self::BYTES {
            return Err(RuntimeError::InvalidLaunch {
                kernel: kernel.into(),
                what: format!("argument block of {} bytes exceeds {} bytes", args.len(), Self::BYTES),
            });
        }
        let at = match self.reserve(args.len()) {
            Some(at) => at,
            None => {
                drain()?;
                self.reset();
                self.reserve(args.len()).expect("fits in an empty ring")
            }
        };
        self.host[at..at + args.len()].copy_from_slice(args);
        Ok(at)
    }
    /// The AMD kernel ABI: stages the block ([`ArgRing::stage`]) and returns
    /// where it goes in device memory and the kernarg segment naming it.
    pub fn stage_kernarg(&mut self, kernel: &str, args: &[u8], drain: impl FnOnce() -> Result<()>) -> Result<StagedArgs> {
        let at = self.stage(kernel, args, drain)?;
        let addr = self.base + at as u64;
        Ok(StagedArgs {
            at,
            len: args.len(),
            addr,
            kernarg: addr.to_ne_bytes(),
        })
    }
    /// The host bytes of a staged block.
    pub fn block(&self, s: &StagedArgs) -> &[u8] {
        &self.host[s.at..s.at + s.len]
    }
}
