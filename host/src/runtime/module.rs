//! Modules (the kernels of one architecture) and launches.

use super::driver::{LaunchSpec, Limits, LoadedModule, RawKernel};
use super::error::{Result, RuntimeError};
use super::meta::{self, KernelMeta};
use super::{BackendKind, Device, DeviceInner, emu};
use convgrad_types::instance::Family;
use std::fmt;
use std::sync::{Arc, Weak};
use std::sync::atomic::{AtomicU32, Ordering};

/// The embedded code object for `arch` (the only place the runtime names `code_objects`).
fn embedded_code_object(arch: &str) -> Option<&'static [u8]> {
    crate::code_objects::code_object(arch)
}

/// Architectures with an embedded code object.
fn embedded_archs() -> Vec<String> {
    crate::code_objects::built_archs()
        .iter()
        .map(|s| s.to_string())
        .collect()
}

enum Contents {
    /// A code object loaded by a GPU driver, with its metadata.
    Gpu {
        loaded: Box<dyn LoadedModule>,
        kernels: Vec<KernelMeta>,
    },
    /// The emulator's host registry for a family.
    Emu { family: Family, names: Vec<String> },
}

struct ModuleInner {
    /// Weak: a device keeps its module ([`Device::kernels`]).
    dev: Weak<DeviceInner>,
    arch: String,
    contents: Contents,
}

/// The kernels of one architecture, loaded on a device.
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

/// A kernel of a [`Module`], ready to launch with [`Device::launch`].
pub struct Kernel {
    module: Arc<ModuleInner>,
    name: String,
    raw: RawKernel,
    limits: Limits,
    meta: Option<KernelMeta>,
    /// Dynamic LDS bytes the driver has been told this kernel may use (CUDA > 48 KiB).
    lds_opt_in: AtomicU32,
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Module")
            .field("arch", &self.inner.arch)
            .field("kernels", &self.kernel_names())
            .finish()
    }
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name)
            .field("arch", &self.module.arch)
            .finish()
    }
}

/// Default dynamic shared memory a CUDA kernel may use without opting in.
const CUDA_DEFAULT_DYNAMIC_SMEM: u32 = 48 * 1024;

impl Device {
    /// Loads convgrad's kernels for this device's architecture: the embedded
    /// code object of [`Device::arch`] on a GPU, the host registry of the
    /// architecture's family on the emulator. Every kernel's argument list is
    /// checked against the one-pointer ABI.
    pub fn load_module(&self) -> Result<Module> {
        if self.backend_kind() == BackendKind::Emulator {
            let family = self.family();
            log::info!("loaded the emulator's kernels for {} ({family:?})", self.arch());
            return Ok(Module {
                inner: Arc::new(ModuleInner {
                    dev: Arc::downgrade(self.inner()),
                    arch: self.arch().to_string(),
                    contents: Contents::Emu {
                        family,
                        names: emu::registry_names(family),
                    },
                }),
            });
        }
        let arch = self.arch().to_string();
        let image = embedded_code_object(&arch).ok_or_else(|| RuntimeError::NoCodeObject {
            arch: arch.clone(),
            built: embedded_archs(),
        })?;
        self.load_module_image(image)
    }

    /// Loads a code object image (AMD: HSA ELF; NVIDIA: PTX text) built for this
    /// device, after checking its target and every kernel's argument list.
    pub fn load_module_image(&self, image: &[u8]) -> Result<Module> {
        let arch = self.arch().to_string();
        let kernels = match self.backend_kind() {
            BackendKind::Emulator => {
                return Err(RuntimeError::NotBuilt(
                    "the emulator runs the kernels' host build: use load_module()".into(),
                ));
            }
            BackendKind::Hip | BackendKind::Isa => {
                let co = meta::amdgpu::parse(image).map_err(RuntimeError::CodeObject)?;
                let fits = co.processor().is_none_or(|p| p == arch);
                checked_kernels(co.target, fits, arch.clone(), co.kernels, meta::check_amd_abi)?
            }
            BackendKind::Cuda => {
                let text = std::str::from_utf8(image.strip_suffix(&[0]).unwrap_or(image))
                    .map_err(|e| RuntimeError::CodeObject(format!("PTX is not UTF-8 text: {e}")))?;
                let m = meta::ptx::parse(text).map_err(RuntimeError::CodeObject)?;
                // PTX for a newer target than the device cannot load; an older one JITs forward.
                let fits = !matches!((sm_number(&m.target), sm_number(&arch)), (Some(t), Some(d)) if t > d);
                checked_kernels(m.target, fits, arch.clone(), m.kernels, meta::check_ptx_abi)?
            }
        };
        let started = std::time::Instant::now();
        let loaded = self.inner().driver.load(image)?;
        log::info!(
            "loaded the {arch} module on {:?}: {} bytes, {} kernels, in {:.1} ms",
            self.backend_kind(),
            image.len(),
            kernels.len(),
            started.elapsed().as_secs_f64() * 1e3
        );
        Ok(Module {
            inner: Arc::new(ModuleInner {
                dev: Arc::downgrade(self.inner()),
                arch,
                contents: Contents::Gpu { loaded, kernels },
            }),
        })
    }

    /// Queues `kernel` on `grid` workgroups of `block` threads with `lds_bytes`
    /// of dynamic LDS on the device's own stream; `args` (the kernel's argument
    /// block, a `ConvArgs`) is its one argument: by value on CUDA, uploaded and
    /// passed by address on HIP and the isa executor (see the module docs).
    ///
    /// This is the raw entry point: the kernel reads and writes wherever the
    /// addresses and strides in `args` point, and nothing here can check them.
    /// The safe, length-carrying way to run the kernels is an operation of
    /// [`crate::ops`] (`BwdWeightOp::execute_on`, `BwdDataOp::execute_on`),
    /// which validates every tensor descriptor against its buffer first.
    /// What this does check (the kernel and the stream belong to this device,
    /// the argument block's size, the grid, block and LDS limits) is an error.
    ///
    /// # Safety
    /// For the whole run of the kernel (on GPUs: until the device's stream has
    /// passed it):
    /// - every device address in `args` points into live memory of this device
    ///   (a [`super::DeviceBuffer`] not yet freed, or memory wrapped with
    ///   [`Device::wrap_foreign`]) large enough for every element the kernel
    ///   addresses through it: for each tensor, the descriptor's largest
    ///   offset (`TensorDesc::span`) times the element size, from that address;
    /// - the tensors the kernel writes (dW, dx, a split-K workspace) do not
    ///   overlap each other nor the tensors it reads, except where the
    ///   operation allows it (D0 = dx for `bwd-data-multi-d`), and no other
    ///   work writes any of them;
    /// - the remaining fields of `args` are what `kernel` expects for this
    ///   problem (the ones `ops::*::plan` fills in): grid, tile and split-K
    ///   counts consistent with `grid`, so that no workgroup indexes past them.
    ///
    /// Safe code cannot call it (issue #38: a safe launch reached memory it
    /// did not own):
    ///
    /// ```compile_fail,E0133
    /// use convgrad::runtime::{Backend, Device, EmuArch};
    /// let dev = Device::open(Backend::Emulator(EmuArch::Gfx942), 0).unwrap();
    /// let kernel = dev.kernels().unwrap().kernel("smoke_mfma").unwrap();
    /// let args = convgrad::types::params::ConvArgs { x: 0x1000, ..Default::default() };
    /// dev.launch(&kernel, [1, 1, 1], 64, 0, &args).unwrap();
    /// ```
    pub unsafe fn launch<A: bytemuck::Pod>(
        &self,
        kernel: &Kernel,
        grid: [u32; 3],
        block: u32,
        lds_bytes: u32,
        args: &A,
    ) -> Result<()> {
        // SAFETY: the caller keeps `launch`'s contract, which is `launch_on`'s.
        unsafe { self.launch_on(&self.default_stream(), kernel, grid, block, lds_bytes, args) }
    }

    /// As [`Device::launch`], queued on `stream`; crate-private, for the
    /// operations' launchers (`ops::bwd_weight::launch`,
    /// `ops::bwd_data::plan::launch`).
    ///
    /// # Safety
    /// [`Device::launch`]'s contract, for the work queued on `stream`.
    pub(crate) unsafe fn launch_on<A: bytemuck::Pod>(
        &self,
        stream: &super::Stream,
        kernel: &Kernel,
        grid: [u32; 3],
        block: u32,
        lds_bytes: u32,
        args: &A,
    ) -> Result<()> {
        if !std::ptr::eq(kernel.module.dev.as_ptr(), Arc::as_ptr(self.inner())) {
            return Err(RuntimeError::WrongDevice("kernel"));
        }
        stream.check_device(self.inner())?;
        let bad = |what: String| {
            Err(RuntimeError::InvalidLaunch {
                kernel: kernel.name.clone(),
                what,
            })
        };
        let expect = std::mem::size_of::<convgrad_types::params::ConvArgs>();
        if std::mem::size_of::<A>() != expect {
            return bad(format!(
                "argument block of {} bytes; the kernels take one ConvArgs ({expect} bytes)",
                std::mem::size_of::<A>()
            ));
        }
        if grid.contains(&0) {
            return bad(format!("empty grid {grid:?}"));
        }
        let wave = self.wave_size();
        if block == 0 || block > 1024 || !block.is_multiple_of(wave) {
            return bad(format!(
                "block of {block} threads: must be 1..=1024 and a multiple of the wave size {wave}"
            ));
        }
        if let Some(max) = kernel.limits.max_threads
            && block > max
        {
            return bad(format!(
                "block of {block} threads exceeds the kernel's maximum of {max}"
            ));
        }
        if let Some(req) = kernel.limits.required_threads
            && block != req
        {
            return bad(format!(
                "block of {block} threads but the kernel requires {req}"
            ));
        }
        let total_lds = lds_bytes as u64 + kernel.limits.static_lds as u64;
        if total_lds > self.max_lds_bytes() as u64 {
            return bad(format!(
                "{lds_bytes} bytes of dynamic LDS + {} static exceed the device's {} bytes per workgroup",
                kernel.limits.static_lds,
                self.max_lds_bytes()
            ));
        }
        if self.backend_kind() == BackendKind::Cuda
            && lds_bytes > CUDA_DEFAULT_DYNAMIC_SMEM
            && lds_bytes > kernel.lds_opt_in.load(Ordering::Acquire)
        {
            self.inner()
                .driver
                .prepare_lds(kernel.raw, &kernel.name, lds_bytes)?;
            kernel.lds_opt_in.fetch_max(lds_bytes, Ordering::AcqRel);
        }
        self.inner().driver.launch(
            &LaunchSpec {
                name: &kernel.name,
                kernel: kernel.raw,
                grid,
                block,
                lds_bytes,
                args: bytemuck::bytes_of(args),
            },
            stream.id(),
        )
    }
}

/// The kernels of a code object built for `found` (a target that `fits` the
/// device's `device_arch` or not), after checking each one's argument list
/// with `abi`.
fn checked_kernels(
    found: String,
    fits: bool,
    device_arch: String,
    kernels: Vec<KernelMeta>,
    abi: fn(&KernelMeta) -> Result<()>,
) -> Result<Vec<KernelMeta>> {
    if !fits {
        return Err(RuntimeError::ArchMismatch { found, device_arch });
    }
    for k in &kernels {
        abi(k)?;
    }
    Ok(kernels)
}

/// `sm_90a` -> 90.
fn sm_number(s: &str) -> Option<u32> {
    let d: String = s
        .strip_prefix("sm_")?
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    d.parse().ok()
}

impl Module {
    /// The architecture it was built for (`gfx942`, `sm_90`, ...).
    pub fn arch(&self) -> &str {
        &self.inner.arch
    }

    /// Names of its kernels.
    pub fn kernel_names(&self) -> Vec<String> {
        match &self.inner.contents {
            Contents::Gpu { kernels, .. } => kernels.iter().map(|k| k.name.clone()).collect(),
            Contents::Emu { names, .. } => names.clone(),
        }
    }

    /// The code object's metadata of kernel `name` (GPU modules).
    pub fn kernel_meta(&self, name: &str) -> Option<&KernelMeta> {
        match &self.inner.contents {
            Contents::Gpu { kernels, .. } => kernels.iter().find(|k| k.name == name),
            Contents::Emu { .. } => None,
        }
    }

    /// Looks kernel `name` up; the error lists the kernels that exist.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let not_found = || RuntimeError::KernelNotFound {
            name: name.to_string(),
            arch: self.inner.arch.clone(),
            available: self.kernel_names(),
        };
        let (raw, limits, meta) = match &self.inner.contents {
            Contents::Emu { family, .. } => {
                let entry = emu::registry_find(*family, name).ok_or_else(not_found)?;
                (RawKernel::Emu(entry), Limits::default(), None)
            }
            Contents::Gpu { loaded, kernels } => {
                let meta = kernels
                    .iter()
                    .find(|k| k.name == name)
                    .ok_or_else(not_found)?;
                let (raw, limits) = loaded.function(meta)?;
                (raw, limits, Some(meta.clone()))
            }
        };
        Ok(Kernel {
            module: self.inner.clone(),
            name: name.to_string(),
            raw,
            limits,
            meta,
            lds_opt_in: AtomicU32::new(0),
        })
    }
}

impl Kernel {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// What the code object says about it (GPU modules).
    pub fn meta(&self) -> Option<&KernelMeta> {
        self.meta.as_ref()
    }
    /// Static LDS bytes it declares (added to the launch's dynamic LDS).
    pub fn static_lds_bytes(&self) -> u32 {
        self.limits.static_lds
    }
    /// Most threads per workgroup it supports, when known.
    pub fn max_threads(&self) -> Option<u32> {
        self.limits.max_threads
    }
}
