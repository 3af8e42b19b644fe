//! The CUDA backend: the driver API through `cudarc`, with `libcuda` loaded at
//! run time (nothing CUDA is needed to build). Kernels come as PTX, JIT-compiled
//! by the driver at module load.

use super::driver::{Driver, Info, LaunchSpec, Limits, LoadedModule, RawEvent, RawKernel, StreamId};
use super::error::{Result, RuntimeError};
use super::meta::KernelMeta;
use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaStream};
use std::ffi::{CString, c_void};
use std::sync::Arc;

/// `CUDA_ERROR_NAME (description)`, from the driver.
pub(crate) fn describe(e: &DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
        Ok(s) => format!("{name} ({})", s.to_string_lossy()),
        Err(_) => name,
    }
}

fn call<T>(name: &'static str, r: std::result::Result<T, DriverError>) -> Result<T> {
    r.map_err(|e| RuntimeError::call(name, describe(&e)))
}

/// Architectures convgrad builds PTX for, by compute capability major.
pub(crate) const SUPPORTED: [&str; 2] = ["sm_80", "sm_90"];

/// The PTX target for a compute capability: 9.x -> `sm_90`, 8.x -> `sm_80`.
pub fn arch_for_compute_capability(
    major: i32,
    minor: i32,
) -> std::result::Result<&'static str, String> {
    match major {
        9 => Ok("sm_90"),
        8 => Ok("sm_80"),
        _ => Err(format!("sm_{major}{minor}")),
    }
}

pub(crate) struct CudaDriver {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: Info,
    /// `cuDriverGetVersion`, as `cuda <major>.<minor> (<number>)`.
    driver_version: String,
}

/// The driver's version: `cuda 12.8 (12080)` (`cuDriverGetVersion`).
fn driver_version() -> Result<String> {
    let mut v: std::ffi::c_int = 0;
    // SAFETY: out-pointer to a local; the driver is initialized.
    call("cuDriverGetVersion", unsafe { sys::cuDriverGetVersion(&mut v) }.result())?;
    Ok(format!("cuda {}.{} ({v})", v / 1000, (v % 1000) / 10))
}

/// Whether `libcuda` can be loaded at all (no panic when it cannot).
fn libcuda_present() -> bool {
    // SAFETY: only tries to dlopen the candidate names.
    unsafe { sys::is_culib_present() }
}

pub(crate) fn open(index: usize) -> Result<CudaDriver> {
    if !libcuda_present() {
        return Err(RuntimeError::NoDevice(
            "no NVIDIA driver found (libcuda.so / libcuda.so.1 could not be loaded)".into(),
        ));
    }
    // cudarc panics if a driver symbol is missing (a driver older than the bindings):
    // turn that into an error.
    let probe = std::panic::catch_unwind(|| -> Result<CudaDriver> {
        if let Err(e) = result::init() {
            return Err(RuntimeError::NoDevice(format!(
                "no NVIDIA GPU found (cuInit: {})",
                describe(&e)
            )));
        }
        let count = call("cuDeviceGetCount", result::device::get_count())?;
        if count <= 0 {
            return Err(RuntimeError::NoDevice(
                "no NVIDIA GPU found (cuDeviceGetCount: 0 devices)".into(),
            ));
        }
        if index >= count as usize {
            return Err(RuntimeError::NoDevice(format!(
                "no NVIDIA GPU with index {index} ({count} found)"
            )));
        }
        let ctx = call("cuDevicePrimaryCtxRetain", CudaContext::new(index))?;
        let name = call("cuDeviceGetName", ctx.name())?;
        let (major, minor) = call("cuDeviceGetAttribute", ctx.compute_capability())?;
        let arch = arch_for_compute_capability(major, minor).map_err(|found| {
            RuntimeError::UnsupportedArch {
                device: name.clone(),
                found,
                supported: SUPPORTED.to_vec(),
            }
        })?;
        let attr = |a| call("cuDeviceGetAttribute", ctx.attribute(a));
        let sms = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let lds =
            attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        let warp = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?;
        let memory = call("cuDeviceTotalMem", ctx.total_mem())?;
        let driver_version = driver_version()?;
        let stream = call("cuStreamCreate", ctx.new_stream())?;
        // This backend does its own ordering on one stream.
        // SAFETY: no cudarc CudaSlice is used with this context.
        unsafe { ctx.disable_event_tracking() };
        call("cuCtxSetCurrent", ctx.bind_to_thread())?;
        Ok(CudaDriver {
            info: Info {
                name,
                arch: arch.to_string(),
                memory_bytes: memory as u64,
                compute_units: sms as u32,
                max_lds_bytes: lds as u32,
                wave_size: warp as u32,
                ordinal: index,
            },
            ctx,
            stream,
            driver_version,
        })
    });
    match probe {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(RuntimeError::NoDevice(format!(
                "the CUDA driver could not be used: {msg}"
            )))
        }
    }
}

/// A CUDA event (`cuEventCreate`), destroyed on drop.
pub(crate) struct CuEvent(sys::CUevent);
// SAFETY: events are driver objects usable from any thread.
unsafe impl Send for CuEvent {}
unsafe impl Sync for CuEvent {}
impl Drop for CuEvent {
    fn drop(&mut self) {
        // SAFETY: created by us, destroyed once (the driver defers it past pending records).
        let _ = unsafe { result::event::destroy(self.0) };
    }
}

impl CudaDriver {
    fn bind(&self) -> Result<()> {
        call("cuCtxSetCurrent", self.ctx.bind_to_thread())
    }
    fn cu_stream(&self) -> sys::CUstream {
        self.stream.cu_stream()
    }
    /// The driver handle of `s` (a foreign handle as given; null is the legacy default stream).
    fn handle(&self, s: StreamId) -> sys::CUstream {
        match s {
            StreamId::Own => self.cu_stream(),
            StreamId::Handle(h) => h as sys::CUstream,
        }
    }
    fn sync_stream(&self) -> Result<()> {
        call("cuStreamSynchronize", self.stream.synchronize())
    }
    /// An event recorded on `s`.
    fn event_on(&self, s: StreamId, flags: sys::CUevent_flags) -> Result<CuEvent> {
        self.bind()?;
        let ev = CuEvent(call("cuEventCreate", result::event::create(flags))?);
        // SAFETY: our event; `s` is a stream of this context (the caller's promise for foreign ones).
        call("cuEventRecord", unsafe { result::event::record(ev.0, self.handle(s)) })?;
        Ok(ev)
    }
}

impl Drop for CudaDriver {
    fn drop(&mut self) {
        let _ = self.sync_stream();
    }
}

struct CudaModule {
    ctx: Arc<CudaContext>,
    module: sys::CUmodule,
}

// SAFETY: a CUmodule is a driver object usable from any thread with its context bound.
unsafe impl Send for CudaModule {}
unsafe impl Sync for CudaModule {}

impl LoadedModule for CudaModule {
    fn function(&self, meta: &KernelMeta) -> Result<(RawKernel, Limits)> {
        call("cuCtxSetCurrent", self.ctx.bind_to_thread())?;
        let name = CString::new(meta.name.as_str())
            .map_err(|_| RuntimeError::CodeObject("NUL in kernel name".into()))?;
        // SAFETY: module loaded and not unloaded (we own it).
        let f = call("cuModuleGetFunction", unsafe {
            result::module::get_function(self.module, name)
        })?;
        let (static_lds, max_threads) = function_limits(f)?;
        let limits = Limits {
            static_lds,
            max_threads: Some(max_threads),
            required_threads: meta.required_threads.map(|t| t as u32),
        };
        Ok((RawKernel::Gpu(f as *mut c_void), limits))
    }
}

impl Drop for CudaModule {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: loaded by us, unloaded once.
            let _ = unsafe { result::module::unload(self.module) };
        }
    }
}

impl Driver for CudaDriver {
    fn info(&self) -> &Info {
        &self.info
    }
    fn driver_version(&self) -> &str {
        &self.driver_version
    }
    fn encode_tma(&self, m: &convgrad_types::params::TmaMap) -> Result<[u64; 16]> {
        use sys::{CUtensorMapDataType_enum as Ty, CUtensorMapFloatOOBfill_enum as Fill};
        use sys::{CUtensorMapInterleave_enum as Il, CUtensorMapL2promotion_enum as L2, CUtensorMapSwizzle_enum as Sw};
        let rank = m.rank as usize;
        let ty = match m.elem_bytes {
            1 => Ty::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            2 => Ty::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            _ => Ty::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        };
        let dims: Vec<u64> = m.dims[..rank].iter().map(|&d| d as u64).collect();
        let steps: [u32; 5] = std::array::from_fn(|d| m.step(d));
        let swizzle = if m.swizzle == 128 { Sw::CU_TENSOR_MAP_SWIZZLE_128B } else { Sw::CU_TENSOR_MAP_SWIZZLE_NONE };
        let mut out = sys::CUtensorMap { opaque: [0; 16] };
        self.bind()?;
        // SAFETY: every array holds at least `rank` (strides `rank - 1`) entries; the
        // map is written into `out` only (encoding reads no device memory).
        call("cuTensorMapEncodeTiled", unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut out,
                ty,
                m.rank,
                m.base as *mut c_void,
                dims.as_ptr(),
                m.strides.as_ptr(),
                m.boxes.as_ptr(),
                steps.as_ptr(),
                Il::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                L2::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                Fill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
            .result()
        })?;
        Ok(out.opaque)
    }
    fn alloc(&self, bytes: usize) -> Result<u64> {
        self.bind()?;
        // Stream-ordered (the context's pool), so that freeing needs no host wait;
        // the wait here makes the memory usable on every stream.
        // SAFETY: context bound; our stream.
        let addr = call("cuMemAllocAsync", unsafe { result::malloc_async(self.cu_stream(), bytes) })?;
        self.sync_stream()?;
        Ok(addr)
    }
    fn free(&self, addr: u64) -> Result<()> {
        self.bind()?;
        // SAFETY: `addr` came from `alloc`; work queued on our stream before the free
        // still sees it (work on other streams is the owner's to order: see `Stream`).
        call("cuMemFreeAsync", unsafe { result::free_async(addr, self.cu_stream()) })
    }
    fn write(&self, addr: u64, data: &[u8]) -> Result<()> {
        self.bind()?;
        // SAFETY: `addr` is an allocation of at least `data.len()` bytes (checked by the caller);
        // `data` outlives the copy because we wait for the stream.
        call("cuMemcpyHtoDAsync", unsafe {
            result::memcpy_htod_async(addr, data, self.cu_stream())
        })?;
        self.sync_stream()
    }
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        self.bind()?;
        // SAFETY: as in `write`.
        call("cuMemcpyDtoHAsync", unsafe {
            result::memcpy_dtoh_async(out, addr, self.cu_stream())
        })?;
        self.sync_stream()
    }
    fn fill(&self, addr: u64, value: u8, bytes: usize, stream: StreamId) -> Result<()> {
        self.bind()?;
        // SAFETY: `addr` is an allocation of at least `bytes` bytes.
        call("cuMemsetD8Async", unsafe {
            result::memset_d8_async(addr, value, bytes, self.handle(stream))
        })
    }
    fn load(&self, image: &[u8]) -> Result<Box<dyn LoadedModule>> {
        self.bind()?;
        // PTX is passed as NUL-terminated text.
        let mut text = image.to_vec();
        if text.last() != Some(&0) {
            text.push(0);
        }
        let mut log = vec![0u8; 16 * 1024];
        let mut opts = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut vals = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
        let mut module = std::ptr::null_mut();
        let started = std::time::Instant::now();
        // SAFETY: `text` is NUL-terminated PTX; option arrays match in length; the log
        // buffer outlives the call.
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                text.as_ptr() as *const c_void,
                opts.len() as u32,
                opts.as_mut_ptr(),
                vals.as_mut_ptr(),
            )
        };
        if let Err(e) = r.result() {
            let used = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let jit = String::from_utf8_lossy(&log[..used]).trim().to_string();
            let mut msg = describe(&e);
            if !jit.is_empty() {
                msg.push_str(&format!("; JIT log: {jit}"));
            }
            return Err(RuntimeError::Call {
                call: "cuModuleLoadData",
                message: msg,
            });
        }
        log::info!("CUDA: PTX JIT of {} bytes in {:.1} ms", text.len() - 1, started.elapsed().as_secs_f64() * 1e3);
        Ok(Box::new(CudaModule {
            ctx: self.ctx.clone(),
            module,
        }))
    }
    fn prepare_lds(&self, kernel: RawKernel, _name: &str, lds_bytes: u32) -> Result<()> {
        let RawKernel::Gpu(f) = kernel else {
            return Ok(());
        };
        self.bind()?;
        // SAFETY: `f` is a function of a module that is still loaded.
        call("cuFuncSetAttribute", unsafe {
            result::function::set_function_attribute(
                f as sys::CUfunction,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                lds_bytes as i32,
            )
        })
    }
    fn launch(&self, spec: &LaunchSpec<'_>, stream: StreamId) -> Result<()> {
        let RawKernel::Gpu(f) = spec.kernel else {
            return Err(RuntimeError::WrongDevice("kernel"));
        };
        // The kernels take the block by value (`.param .align 8 .b8 [N]`, checked
        // at module load): the driver copies it into the launch's parameter space.
        self.bind()?;
        let stream = self.handle(stream);
        let mut params = [spec.args.as_ptr() as *mut c_void];
        // SAFETY: the kernel takes exactly one parameter of `spec.args.len()` bytes (checked
        // at module load and in `Device::launch`); `spec.args`
        // and `params` live through the call (the driver copies parameter values).
        call("cuLaunchKernel", unsafe {
            result::launch_kernel(
                f as sys::CUfunction,
                (spec.grid[0], spec.grid[1], spec.grid[2]),
                (spec.block, 1, 1),
                spec.lds_bytes,
                stream,
                &mut params,
            )
        })
    }
    fn synchronize(&self, stream: StreamId) -> Result<()> {
        self.bind()?;
        // SAFETY: a stream of this context.
        call("cuStreamSynchronize", unsafe { result::stream::synchronize(self.handle(stream)) })
    }
    fn record(&self, stream: StreamId) -> Result<RawEvent> {
        Ok(RawEvent::Cuda(self.event_on(stream, sys::CUevent_flags::CU_EVENT_DEFAULT)?))
    }
    fn elapsed_ms(&self, start: &RawEvent, end: &RawEvent) -> Result<f32> {
        match (start, end) {
            (RawEvent::Cuda(a), RawEvent::Cuda(b)) => {
                self.bind()?;
                // SAFETY: recorded events of this context.
                call("cuEventSynchronize", unsafe { result::event::synchronize(b.0) })?;
                // SAFETY: as above.
                call("cuEventElapsedTime", unsafe { result::event::elapsed(a.0, b.0) })
            }
            #[allow(unreachable_patterns)]
            _ => Err(RuntimeError::WrongDevice("event")),
        }
    }
    fn own_stream(&self) -> *mut c_void {
        self.cu_stream() as *mut c_void
    }
    fn create_stream(&self) -> Result<*mut c_void> {
        self.bind()?;
        let s = call("cuStreamCreate", result::stream::create(result::stream::StreamKind::NonBlocking))?;
        Ok(s as *mut c_void)
    }
    fn destroy_stream(&self, handle: *mut c_void) {
        if self.bind().is_ok() {
            // SAFETY: made by `create_stream`, destroyed once (the driver lets queued work finish).
            let _ = unsafe { result::stream::destroy(handle as sys::CUstream) };
        }
    }
    fn check_stream(&self, handle: *mut c_void) -> Result<()> {
        // 0 and CU_STREAM_LEGACY (1): the legacy default stream; CU_STREAM_PER_THREAD
        // (2): the per-thread one; both of the context bound to the launching thread.
        if handle as usize <= 2 {
            return Ok(());
        }
        self.bind()?;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `ctx` is a valid out-pointer; the driver answers an error for
        // a handle of a destroyed stream or one it does not know.
        call("cuStreamGetCtx", unsafe { sys::cuStreamGetCtx(handle as sys::CUstream, &mut ctx) }.result())?;
        if ctx != self.ctx.cu_ctx() {
            return Err(RuntimeError::WrongDevice("stream"));
        }
        Ok(())
    }
    fn stream_wait(&self, waiter: StreamId, on: StreamId) -> Result<()> {
        let ev = self.event_on(on, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)?;
        // SAFETY: our event, a stream of this context.
        call("cuStreamWaitEvent", unsafe {
            result::stream::wait_event(self.handle(waiter), ev.0, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT)
        })
    }
    fn address_range(&self, addr: u64) -> Result<(u64, usize)> {
        self.bind()?;
        let (mut base, mut size) = (0, 0);
        // SAFETY: out-pointers to locals; the driver checks `addr`.
        let r = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, addr) };
        call("cuMemGetAddressRange", r.result())?;
        Ok((base, size))
    }
}

/// Facts of a CUDA function for launch checks (context bound by the caller): `(static shared bytes, max threads per block)`.
fn function_limits(f: sys::CUfunction) -> Result<(u32, u32)> {
    // SAFETY: `f` is a function handle of a loaded module.
    let shared = call("cuFuncGetAttribute", unsafe {
        result::function::get_function_attribute(
            f,
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
        )
    })?;
    // SAFETY: as above.
    let threads = call("cuFuncGetAttribute", unsafe {
        result::function::get_function_attribute(
            f,
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        )
    })?;
    Ok((shared as u32, threads as u32))
}
