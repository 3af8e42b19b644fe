//! The host runtime: find a GPU (or the emulator), load convgrad's kernels for
//! its architecture, move data and launch, with errors a person can act on.
//!
//! ```no_run
//! use convgrad::runtime::{Backend, Device};
//! # fn main() -> convgrad::runtime::Result<()> {
//! let dev = Device::open(Backend::Auto, 0)?;
//! println!("{} ({}): {}", dev.name(), dev.arch(), dev.selection_note());
//! let x = dev.alloc::<f32>(1024)?;
//! x.upload(&vec![1.0; 1024])?;
//! let module = dev.load_module()?;
//! let kernel = module.kernel("bwdw_direct_f32")?;
//! # let args = convgrad::types::params::ConvArgs::default();
//! // SAFETY: a real caller fills `args` with the addresses of live buffers of this
//! // device that hold every element of the problem's tensors (`Device::launch`
//! // states the contract); the operations of `convgrad::ops` do that for you.
//! unsafe { dev.launch(&kernel, [4, 1, 1], 256, 0, &args)? };
//! dev.synchronize()?;
//! # Ok(()) }
//! ```
//!
//! # Backends
//! - [`Backend::Hip`] (cargo feature `hip`): AMD GPUs through `libamdhip64`;
//!   the device's `gcnArchName` (e.g. `gfx942`) selects the HSA code object.
//! - [`Backend::Cuda`]: NVIDIA GPUs through the driver API, `libcuda` loaded at
//!   run time; the compute capability selects the PTX (9.x: `sm_90`, 8.x: `sm_80`).
//! - [`Backend::Emulator`]: `convgrad-emu` running the kernels' host build,
//!   always available.
//! - [`Backend::Isa`]: `convgrad-isa` running the embedded AMD code object of
//!   one architecture (`gfx90a`, `gfx942`, `gfx1100`) on the CPU, instruction
//!   by instruction, with checked memory and barriers; always available.
//! - [`Backend::Auto`]: the first of HIP, CUDA, emulator (gfx942) that works;
//!   [`Device::selection_note`] says what was tried and why it was passed over.
//!
//! # Kernel ABI
//! Every kernel takes one `#[repr(C)]` argument block
//! ([`convgrad_types::params::ConvArgs`]). On CUDA it is the kernel's one
//! parameter, by value (`.param .align 8 .b8 [N]`: constant-bank operands in
//! the kernel); on HIP and the isa executor [`Device::launch`] uploads it and
//! passes its device address; the emulator passes a host pointer. At module load each kernel's
//! argument list in the code object's metadata is checked against that
//! ([`meta`]). [`Device::launch`] is `unsafe`: the addresses in the block are
//! the caller's promise; the operations of [`crate::ops`] are the safe way in.
//!
//! # Ordering
//! Each [`Device`] has its own stream; launches, fills and event records are
//! queued on it unless a [`Stream`] is named (the operations' `execute_on`,
//! [`Device::wrap_stream`] for a framework's stream). Uploads and downloads
//! wait for the work queued on the device's stream before them and return
//! when the copy is complete; frees are queued on it (`cuMemFreeAsync`,
//! `hipFreeAsync`: no host wait; a HIP device without memory pools falls
//! back to `hipFree`, which waits). [`Device::synchronize`] waits for the device's stream.
//! The emulator runs every launch to completion before returning.
//!
//! # Memory of the caller
//! [`Device::wrap_foreign`] wraps device memory the caller allocated (a
//! framework's caching allocator) after checking with the runtime that the
//! whole length lies in one allocation; convgrad never frees it.

mod buffer;
mod cpu;
mod driver;
mod emu;
mod error;
mod isa;
pub mod meta;
mod module;
pub mod smoke;
mod stream;

mod cuda;
#[cfg(feature = "hip")]
mod hip;

pub use buffer::{BufRef, DeviceBuffer, NanPoison};
pub use stream::Stream;
pub use convgrad_emu::{EmuArch, LaunchReport};
pub use convgrad_isa::Arch as IsaArch;
/// What one launch on the isa backend executed ([`Device::last_isa_counters`]).
pub use convgrad_isa::exec::Counters as IsaCounters;
pub use cuda::arch_for_compute_capability;
pub use error::{Result, RuntimeError};
pub use module::{Kernel, Module};

use convgrad_types::instance::Family;
use driver::{Driver, RawEvent};
use std::fmt;
use std::sync::Arc;

/// Which runtime to open a device with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// HIP, then CUDA, then the emulator (gfx942): the first that has a device.
    Auto,
    /// AMD GPUs through HIP (needs the cargo feature `hip`).
    Hip,
    /// NVIDIA GPUs through the CUDA driver.
    Cuda,
    /// The CPU emulator of one architecture.
    Emulator(EmuArch),
    /// The real AMD code object of one architecture, run on the CPU by `convgrad-isa`.
    Isa(IsaArch),
}

impl Backend {
    /// The emulator architecture [`Backend::Auto`] falls back to.
    pub const DEFAULT_EMU_ARCH: EmuArch = EmuArch::Gfx942;

    /// The architecture `isa` runs when none is named.
    pub const DEFAULT_ISA_ARCH: IsaArch = IsaArch::Gfx942;

    /// Parses `auto`, `hip`, `cuda`, `emu` (also `emulator`, and `emu:<arch>`)
    /// or `isa` (also `isa:<arch>`); `emu_arch` (as given to `--emu-arch`) picks
    /// the emulated architecture, [`Backend::DEFAULT_EMU_ARCH`] (`isa`:
    /// [`Backend::DEFAULT_ISA_ARCH`]) when `None`. `isa` takes only the AMD
    /// architectures (`gfx90a`, `gfx942`, `gfx1100`).
    pub fn parse(name: &str, emu_arch: Option<&str>) -> Result<Backend> {
        let lower = name.trim().to_ascii_lowercase();
        let (name, inline_arch) = match lower.split_once([':', '=']) {
            Some((n, a)) => (n.to_string(), Some(a.to_string())),
            None => (lower, None),
        };
        if name == "isa" {
            let arch = match inline_arch.as_deref().or(emu_arch) {
                Some(a) => {
                    let a = a.trim().to_ascii_lowercase();
                    IsaArch::from_name(&a).ok_or_else(|| {
                        RuntimeError::Parse(format!(
                            "the isa backend runs AMD code objects only: unknown architecture `{a}`; expected one of: {}",
                            isa::arch_names()
                        ))
                    })?
                }
                None => Self::DEFAULT_ISA_ARCH,
            };
            return Ok(Backend::Isa(arch));
        }
        let arch = match inline_arch.as_deref().or(emu_arch) {
            Some(a) => EmuArch::parse(a).ok_or_else(|| {
                RuntimeError::Parse(format!(
                    "unknown emulator architecture `{a}`; expected one of: {}",
                    EmuArch::ALL.map(|a| a.name()).join(", ")
                ))
            })?,
            None => Self::DEFAULT_EMU_ARCH,
        };
        match name.as_str() {
            "auto" => Ok(Backend::Auto),
            "hip" | "rocm" | "amd" => Ok(Backend::Hip),
            "cuda" | "nvidia" => Ok(Backend::Cuda),
            "emu" | "emulator" => Ok(Backend::Emulator(arch)),
            other => Err(RuntimeError::Parse(format!(
                "unknown backend `{other}`; expected auto, hip, cuda, emu or isa"
            ))),
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = RuntimeError;
    fn from_str(s: &str) -> Result<Backend> {
        Backend::parse(s, None)
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Backend::Auto => f.write_str("auto"),
            Backend::Hip => f.write_str("hip"),
            Backend::Cuda => f.write_str("cuda"),
            Backend::Emulator(a) => write!(f, "emu:{}", a.name()),
            Backend::Isa(a) => write!(f, "isa:{}", a.name()),
        }
    }
}

/// The runtime an open [`Device`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// HIP (AMD).
    Hip,
    /// CUDA (NVIDIA).
    Cuda,
    /// The emulator.
    Emulator,
    /// The isa executor (real AMD code objects on the CPU).
    Isa,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Hip => "hip",
            BackendKind::Cuda => "cuda",
            BackendKind::Emulator => "emulator",
            BackendKind::Isa => "isa",
        })
    }
}

pub(crate) struct DeviceInner {
    driver: Box<dyn Driver>,
    kind: BackendKind,
    family: Family,
    note: String,
    /// convgrad's kernels, loaded on first use ([`Device::kernels`]).
    module: std::sync::OnceLock<Module>,
}

/// An open GPU (or emulator) with one stream. Cheap to clone (shared handle);
/// `Send + Sync`, so it can be shared across threads.
#[derive(Clone)]
pub struct Device {
    inner: Arc<DeviceInner>,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("backend", &self.inner.kind)
            .field("name", &self.name())
            .field("arch", &self.arch())
            .finish()
    }
}

/// Whether `convgrad` was built with HIP support (cargo feature `hip`).
pub const HIP_BUILT: bool = cfg!(feature = "hip");

impl Device {
    /// Opens device `index` of `backend`. With [`Backend::Auto`], `index` applies
    /// to whichever GPU runtime is picked (the emulator has only device 0).
    pub fn open(backend: Backend, index: usize) -> Result<Device> {
        match backend {
            Backend::Hip => Self::open_hip(index, "hip: requested".into()),
            Backend::Cuda => Self::open_cuda(index, "cuda: requested".into()),
            Backend::Emulator(arch) => {
                if index != 0 {
                    return Err(RuntimeError::NoDevice(format!(
                        "the emulator has one device (index 0), not index {index}"
                    )));
                }
                Ok(Self::open_emu(
                    arch,
                    format!("emulator {}: requested", arch.name()),
                ))
            }
            Backend::Isa(arch) => {
                if index != 0 {
                    return Err(RuntimeError::NoDevice(format!(
                        "the isa executor has one device (index 0), not index {index}"
                    )));
                }
                Self::wrap(
                    Box::new(isa::open(arch)),
                    BackendKind::Isa,
                    format!("isa {}: requested", arch.name()),
                )
            }
            Backend::Auto => {
                let mut why = Vec::new();
                match Self::open_hip(index, String::new()) {
                    Ok(mut d) => {
                        Self::set_note(&mut d, format!("hip: using device {index}"));
                        return Ok(d);
                    }
                    Err(e) => why.push(format!("hip: {e}")),
                }
                match Self::open_cuda(index, String::new()) {
                    Ok(mut d) => {
                        why.push(format!("cuda: using device {index}"));
                        Self::set_note(&mut d, why.join("; "));
                        return Ok(d);
                    }
                    Err(e) => why.push(format!("cuda: {e}")),
                }
                let arch = Backend::DEFAULT_EMU_ARCH;
                why.push(format!("using emulator {}", arch.name()));
                Ok(Self::open_emu(arch, why.join("; ")))
            }
        }
    }

    fn set_note(d: &mut Device, note: String) {
        if let Some(inner) = Arc::get_mut(&mut d.inner) {
            inner.note = note;
        }
    }

    fn wrap(driver: Box<dyn Driver>, kind: BackendKind, note: String) -> Result<Device> {
        let arch = driver.info().arch.clone();
        let family = Family::of_arch(&arch).ok_or_else(|| RuntimeError::UnsupportedArch {
            device: driver.info().name.clone(),
            found: arch.clone(),
            supported: SUPPORTED_ARCHS.to_vec(),
        })?;
        Ok(Device {
            inner: Arc::new(DeviceInner {
                driver,
                kind,
                family,
                note,
                module: std::sync::OnceLock::new(),
            }),
        })
    }

    /// The device `index` of `backend`, opened once per process and shared
    /// by every caller (frameworks call convgrad from many places; each
    /// [`Device::open`] would make a new stream and load the kernels again).
    pub fn shared(backend: Backend, index: usize) -> Result<Device> {
        use std::collections::HashMap;
        use std::sync::Mutex;
        static OPEN: Mutex<Option<HashMap<(Backend, usize), Device>>> = Mutex::new(None);
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        let map = open.get_or_insert_with(HashMap::new);
        if let Some(d) = map.get(&(backend, index)) {
            return Ok(d.clone());
        }
        let d = Device::open(backend, index)?;
        // `Auto` and the backend it picked name the same device.
        let picked = match d.backend_kind() {
            BackendKind::Hip => Backend::Hip,
            BackendKind::Cuda => Backend::Cuda,
            BackendKind::Emulator => Backend::Emulator(EmuArch::parse(d.arch()).unwrap_or(Backend::DEFAULT_EMU_ARCH)),
            BackendKind::Isa => Backend::Isa(IsaArch::from_name(d.arch()).unwrap_or(Backend::DEFAULT_ISA_ARCH)),
        };
        if let Some(existing) = map.get(&(picked, index)) {
            let existing = existing.clone();
            map.insert((backend, index), existing.clone());
            return Ok(existing);
        }
        map.insert((picked, index), d.clone());
        map.insert((backend, index), d.clone());
        Ok(d)
    }

    /// convgrad's kernels for this device, loaded on the first call and kept
    /// (see [`Device::load_module`]).
    pub fn kernels(&self) -> Result<Module> {
        if let Some(m) = self.inner.module.get() {
            return Ok(m.clone());
        }
        let m = self.load_module()?;
        Ok(self.inner.module.get_or_init(|| m).clone())
    }

    /// Wraps `len` elements of `T` at device address `addr`, memory the
    /// caller allocated (e.g. a PyTorch tensor's `data_ptr()`), after checking
    /// with the runtime that all of it lies inside one allocation of this
    /// device (CUDA `cuMemGetAddressRange`, HIP `hipMemGetAddressRange`, the
    /// emulator's allocation table) and that `addr` is aligned for `T`.
    /// convgrad never frees it.
    ///
    /// # Safety
    /// The memory must stay allocated while the buffer and any work queued on
    /// it are alive, and must not be written by others while a convgrad
    /// launch reads it.
    pub unsafe fn wrap_foreign<T: bytemuck::Pod>(&self, addr: u64, len: usize) -> Result<DeviceBuffer<T>> {
        DeviceBuffer::foreign(self.inner.clone(), addr, len)
    }

    #[cfg(feature = "hip")]
    fn open_hip(index: usize, note: String) -> Result<Device> {
        let d = hip::open(index)?;
        Self::wrap(Box::new(d), BackendKind::Hip, note)
    }
    #[cfg(not(feature = "hip"))]
    fn open_hip(_index: usize, _note: String) -> Result<Device> {
        Err(RuntimeError::NotBuilt(
            "feature not built (rebuild convgrad with `--features hip`, which needs the HIP runtime)".into(),
        ))
    }

    fn open_cuda(index: usize, note: String) -> Result<Device> {
        let d = cuda::open(index)?;
        Self::wrap(Box::new(d), BackendKind::Cuda, note)
    }

    fn open_emu(arch: EmuArch, note: String) -> Device {
        Self::wrap(Box::new(emu::open(arch)), BackendKind::Emulator, note)
            .expect("emulator architectures are supported")
    }

    /// How this device was chosen: for [`Backend::Auto`], each runtime tried and
    /// why it was passed over, e.g. `hip: feature not built (...); cuda: no NVIDIA
    /// driver found (...); using emulator gfx942`.
    pub fn selection_note(&self) -> &str {
        &self.inner.note
    }
    /// The device's name (marketing name, or the emulator's description).
    pub fn name(&self) -> &str {
        &self.inner.driver.info().name
    }
    /// The driver's version (`cuda 12.8 (12080)`, `hip 60342134`, `convgrad
    /// emulator 1`): CUDA's `cuDriverGetVersion`, HIP's `hipDriverGetVersion`,
    /// a fixed version of the CPU backends. Runtime find keys its cache file by it.
    pub fn driver_version(&self) -> &str {
        self.inner.driver.driver_version()
    }
    /// The architecture kernels are selected by: `gfx90a`, `gfx942`, `gfx1100`, `sm_80` or `sm_90`.
    pub fn arch(&self) -> &str {
        &self.inner.driver.info().arch
    }
    /// The kernel family of [`Device::arch`].
    pub fn family(&self) -> Family {
        self.inner.family
    }
    /// Device memory in bytes (the emulator: host memory).
    pub fn memory_bytes(&self) -> u64 {
        self.inner.driver.info().memory_bytes
    }
    /// Compute units (AMD CUs, NVIDIA SMs; the emulator: host threads).
    pub fn compute_units(&self) -> u32 {
        self.inner.driver.info().compute_units
    }
    /// Largest LDS (shared memory) one workgroup can be launched with, bytes.
    pub fn max_lds_bytes(&self) -> u32 {
        self.inner.driver.info().max_lds_bytes
    }
    /// Threads per wave (warp).
    pub fn wave_size(&self) -> u32 {
        self.inner.driver.info().wave_size
    }
    /// The device index within its runtime.
    pub fn ordinal(&self) -> usize {
        self.inner.driver.info().ordinal
    }
    /// Which runtime this device uses.
    pub fn backend_kind(&self) -> BackendKind {
        self.inner.kind
    }
    /// Whether two handles are the same open device.
    pub fn same_device(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Allocates a buffer of `len` elements (contents undefined; the emulator
    /// tracks them as unwritten).
    pub fn alloc<T: bytemuck::Pod>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        DeviceBuffer::new(self.inner.clone(), len)
    }
    /// Allocates a buffer holding a copy of `data`.
    pub fn upload<T: bytemuck::Pod>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let b = self.alloc(data.len())?;
        b.upload(data)?;
        Ok(b)
    }

    /// Waits until all work queued on the device's own stream is done;
    /// reports errors of earlier launches.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.driver.synchronize(driver::StreamId::Own)
    }

    /// Records an event on the device's own stream (for timing with [`Event::elapsed_ms`]).
    pub fn record_event(&self) -> Result<Event> {
        self.default_stream().record_event()
    }

    /// Runs `f` (which queues work on this device) between two events and
    /// returns its result and the device time in milliseconds (emulator: wall time).
    pub fn time<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<(T, f32)> {
        let start = self.record_event()?;
        let out = f()?;
        let end = self.record_event()?;
        let ms = start.elapsed_ms(&end)?;
        Ok((out, ms))
    }

    /// What the last emulated launch did (emulator only; `None` on GPUs).
    pub fn last_emulator_report(&self) -> Option<LaunchReport> {
        self.inner.driver.emu_report()
    }

    /// What the last launch on the isa backend executed: instructions by
    /// class and mnemonic, matrix-unit busy cycles, LDS bank-conflict cycles,
    /// bytes moved (`None` on other backends).
    pub fn last_isa_counters(&self) -> Option<IsaCounters> {
        self.inner.driver.isa_counters()
    }

    /// Sets `bytes` bytes at `addr` (memory of this device) to `value`, on `stream`.
    pub(crate) fn fill_raw(&self, stream: &Stream, addr: u64, value: u8, bytes: usize) -> Result<()> {
        stream.check_device(&self.inner)?;
        if bytes == 0 {
            return Ok(());
        }
        self.inner.driver.fill(addr, value, bytes, stream.id())
    }

    /// The tensor map slot of `m` for a TMA kernel's argument block (see
    /// [`convgrad_types::params::ConvArgs::tma`]).
    pub(crate) fn encode_tma(&self, m: &convgrad_types::params::TmaMap) -> Result<[u64; 16]> {
        self.inner.driver.encode_tma(m)
    }
    pub(crate) fn inner(&self) -> &Arc<DeviceInner> {
        &self.inner
    }
}

/// Every architecture convgrad has kernels for.
pub const SUPPORTED_ARCHS: [&str; 8] = ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1200", "gfx1201", "sm_80", "sm_90"];

/// A point in a device's stream, for timing.
pub struct Event {
    dev: Arc<DeviceInner>,
    raw: RawEvent,
}

impl Event {
    /// Milliseconds from this event to `end` (a later event of the same device);
    /// waits for `end` to complete.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        if !Arc::ptr_eq(&self.dev, &end.dev) {
            return Err(RuntimeError::WrongDevice("event"));
        }
        self.dev.driver.elapsed_ms(&self.raw, &end.raw)
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Event")
    }
}
