//! The HIP backend (feature `hip`): AMD GPUs through the HIP runtime
//! (`libamdhip64`, linked by `hip-runtime-sys`). Kernels come as HSA code
//! objects loaded with `hipModuleLoadData`.
//!
//! Only the module / launch / memory / event / attribute APIs are used; the
//! `hip-runtime-sys` bindings predate ROCm 6, so nothing touches
//! `hipDeviceProp_t`'s layout. The functions are declared here with `int`
//! results (not the bindings' Rust enum) so that an error code newer than
//! the bindings cannot become an invalid enum value.

use super::driver::{ArgRing, Driver, Info, LaunchSpec, Limits, LoadedModule, RawEvent, RawKernel, StreamId};
use super::error::{Result, RuntimeError};
use super::meta::KernelMeta;
use hip_runtime_sys::hipDeviceAttribute_t as Attr;
use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::sync::Mutex;

mod ffi {
    use std::ffi::{c_char, c_int, c_uint, c_void};
    // Linked through hip-runtime-sys (`cargo:rustc-link-lib=dylib=amdhip64`).
    unsafe extern "C" {
        pub fn hipGetDeviceCount(count: *mut c_int) -> c_int;
        pub fn hipDriverGetVersion(version: *mut c_int) -> c_int;
        pub fn hipSetDevice(device: c_int) -> c_int;
        pub fn hipDeviceGetName(name: *mut c_char, len: c_int, device: c_int) -> c_int;
        pub fn hipDeviceTotalMem(bytes: *mut usize, device: c_int) -> c_int;
        pub fn hipDeviceGetAttribute(value: *mut c_int, attr: c_int, device: c_int) -> c_int;
        pub fn hipGetErrorName(error: c_int) -> *const c_char;
        pub fn hipGetErrorString(error: c_int) -> *const c_char;
        pub fn hipStreamCreate(stream: *mut *mut c_void) -> c_int;
        pub fn hipStreamDestroy(stream: *mut c_void) -> c_int;
        pub fn hipStreamSynchronize(stream: *mut c_void) -> c_int;
        pub fn hipStreamWaitEvent(stream: *mut c_void, event: *mut c_void, flags: c_uint) -> c_int;
        pub fn hipDeviceSynchronize() -> c_int;
        pub fn hipMemGetAddressRange(base: *mut *mut c_void, size: *mut usize, ptr: *mut c_void) -> c_int;
        pub fn hipMalloc(ptr: *mut *mut c_void, bytes: usize) -> c_int;
        pub fn hipFree(ptr: *mut c_void) -> c_int;
        pub fn hipMallocAsync(ptr: *mut *mut c_void, bytes: usize, stream: *mut c_void) -> c_int;
        pub fn hipFreeAsync(ptr: *mut c_void, stream: *mut c_void) -> c_int;
        pub fn hipMemcpyHtoDAsync(
            dst: *mut c_void,
            src: *mut c_void,
            bytes: usize,
            stream: *mut c_void,
        ) -> c_int;
        pub fn hipMemcpyDtoHAsync(
            dst: *mut c_void,
            src: *mut c_void,
            bytes: usize,
            stream: *mut c_void,
        ) -> c_int;
        pub fn hipMemsetD8Async(
            dst: *mut c_void,
            value: u8,
            bytes: usize,
            stream: *mut c_void,
        ) -> c_int;
        pub fn hipModuleLoadData(module: *mut *mut c_void, image: *const c_void) -> c_int;
        pub fn hipModuleUnload(module: *mut c_void) -> c_int;
        pub fn hipModuleGetFunction(
            function: *mut *mut c_void,
            module: *mut c_void,
            name: *const c_char,
        ) -> c_int;
        pub fn hipModuleLaunchKernel(
            f: *mut c_void,
            gx: c_uint,
            gy: c_uint,
            gz: c_uint,
            bx: c_uint,
            by: c_uint,
            bz: c_uint,
            shared_bytes: c_uint,
            stream: *mut c_void,
            params: *mut *mut c_void,
            extra: *mut *mut c_void,
        ) -> c_int;
        pub fn hipEventCreate(event: *mut *mut c_void) -> c_int;
        pub fn hipEventRecord(event: *mut c_void, stream: *mut c_void) -> c_int;
        pub fn hipEventSynchronize(event: *mut c_void) -> c_int;
        pub fn hipEventElapsedTime(ms: *mut f32, start: *mut c_void, end: *mut c_void) -> c_int;
        pub fn hipEventDestroy(event: *mut c_void) -> c_int;
    }
}

const HIP_SUCCESS: c_int = 0;
const HIP_ERROR_NO_DEVICE: c_int = 100;
// The `extra` tags of hipModuleLaunchKernel: `((void*)0x01)` etc. in hip_runtime_api.h.
const HIP_LAUNCH_PARAM_BUFFER_POINTER: *mut c_void = std::ptr::without_provenance_mut(1);
const HIP_LAUNCH_PARAM_BUFFER_SIZE: *mut c_void = std::ptr::without_provenance_mut(2);
const HIP_LAUNCH_PARAM_END: *mut c_void = std::ptr::without_provenance_mut(3);

/// `hipErrorName (description)`, from the runtime.
fn describe(code: c_int) -> String {
    let text = |p: *const c_char| {
        // SAFETY: the runtime returns static NUL-terminated strings (or null).
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    // SAFETY: plain queries.
    let name =
        text(unsafe { ffi::hipGetErrorName(code) }).unwrap_or_else(|| format!("hipError {code}"));
    match text(unsafe { ffi::hipGetErrorString(code) }) {
        Some(s) if s != name => format!("{name} ({s})"),
        _ => name,
    }
}

fn check(name: &'static str, code: c_int) -> Result<()> {
    if code == HIP_SUCCESS {
        Ok(())
    } else {
        Err(RuntimeError::call(name, describe(code)))
    }
}

/// A HIP event.
pub(crate) struct HipEvent(*mut c_void);
// SAFETY: HIP events are runtime objects usable from any thread.
unsafe impl Send for HipEvent {}
unsafe impl Sync for HipEvent {}
impl Drop for HipEvent {
    fn drop(&mut self) {
        // SAFETY: created by hipEventCreate, destroyed once.
        unsafe { ffi::hipEventDestroy(self.0) };
    }
}

pub(crate) struct HipDriver {
    ordinal: c_int,
    stream: *mut c_void,
    /// Whether the device has a stream-ordered memory pool (`hipMallocAsync`;
    /// without one, frees go through `hipFree`, which waits for the device).
    pool: bool,
    info: Info,
    /// `hipDriverGetVersion`, as `hip <number>`.
    driver_version: String,
    ring: Mutex<ArgRing>,
}

// SAFETY: the HIP runtime is thread-safe; every call first selects this device
// (hipSetDevice is per host thread) and the stream handle is immutable.
unsafe impl Send for HipDriver {}
unsafe impl Sync for HipDriver {}

fn attribute(attr: Attr, device: c_int) -> Result<i32> {
    let mut v = 0;
    // SAFETY: out-pointer to a local.
    check("hipDeviceGetAttribute", unsafe {
        ffi::hipDeviceGetAttribute(&mut v, attr as c_int, device)
    })?;
    Ok(v)
}

/// The device's gfx name (`gcnArchName` without its `:feature` suffixes).
///
/// `hipDeviceGetAttribute` has no string attributes, so the name is taken from
/// the device properties without relying on `hipDeviceProp_t`'s layout (which
/// changed in ROCm 6): the properties are written into an oversized buffer and
/// the `gcnArchName` field is found by its content (`gfx` + hex digits). The
/// ROCm 6 entry point (`hipGetDevicePropertiesR0600`) is preferred when the
/// runtime has it. Fallback: the integer `hipDeviceAttributeGcnArch` of ROCm 5
/// (e.g. 942, 910 for gfx90a). `CONVGRAD_HIP_ARCH=gfx942` overrides both.
fn gcn_arch_name(device: c_int) -> Result<String> {
    if let Ok(a) = std::env::var("CONVGRAD_HIP_ARCH") {
        return Ok(a);
    }
    type GetProps = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
    for sym in [c"hipGetDevicePropertiesR0600", c"hipGetDeviceProperties"] {
        // SAFETY: dlsym on the already-loaded process image.
        let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, sym.as_ptr()) };
        if f.is_null() {
            continue;
        }
        // SAFETY: both symbols have the signature (hipDeviceProp_t*, int) -> hipError_t.
        let f: GetProps = unsafe { std::mem::transmute::<*mut c_void, GetProps>(f) };
        // hipDeviceProp_t is about 1.5 KiB in every version; 16 KiB leaves room.
        let mut buf = vec![0u64; 2048];
        // SAFETY: the buffer is larger than any version of the struct and 8-aligned.
        if unsafe { f(buf.as_mut_ptr() as *mut c_void, device) } == HIP_SUCCESS
            && let Some(name) = find_gfx_name(bytemuck::cast_slice(&buf))
        {
            return Ok(name);
        }
    }
    let v = attribute(Attr::hipDeviceAttributeGcnArch, device)?;
    gfx_from_int(v).ok_or_else(|| {
        RuntimeError::call(
            "hipDeviceGetAttribute(hipDeviceAttributeGcnArch)",
            format!("unrecognized value {v}"),
        )
    })
}

/// Finds a NUL-started `gfx<hex>` string (optionally `:features`) in a property buffer.
pub(crate) fn find_gfx_name(buf: &[u8]) -> Option<String> {
    let mut i = 0;
    while i + 4 < buf.len() {
        if (i == 0 || buf[i - 1] == 0) && buf[i..].starts_with(b"gfx") {
            let rest = &buf[i + 3..];
            let n = rest.iter().take_while(|b| b.is_ascii_hexdigit()).count();
            let term = rest.get(n).copied();
            if n >= 3 && matches!(term, Some(0) | Some(b':')) {
                return Some(format!("gfx{}", std::str::from_utf8(&rest[..n]).ok()?));
            }
        }
        i += 1;
    }
    None
}

/// ROCm 5's integer gcnArch: 906 -> gfx906, 910 -> gfx90a, 942 -> gfx942, 1100 -> gfx1100.
pub(crate) fn gfx_from_int(v: i32) -> Option<String> {
    match v {
        900..=999 => {
            let r = v - 900;
            Some(if (10..16).contains(&r) {
                format!("gfx90{r:x}")
            } else {
                format!("gfx9{r:02}")
            })
        }
        1000..=1299 => Some(format!("gfx{v}")),
        _ => None,
    }
}

/// The number of AMD GPUs, or why there are none.
fn device_count() -> Result<c_int> {
    let mut n = 0;
    // SAFETY: out-pointer to a local.
    let code = unsafe { ffi::hipGetDeviceCount(&mut n) };
    if code == HIP_ERROR_NO_DEVICE || (code == HIP_SUCCESS && n == 0) {
        return Err(RuntimeError::NoDevice(format!(
            "no AMD GPU found (hipGetDeviceCount: {})",
            describe(code)
        )));
    }
    check("hipGetDeviceCount", code)?;
    Ok(n)
}

pub(crate) fn open(index: usize) -> Result<HipDriver> {
    let count = device_count()?;
    if index >= count as usize {
        return Err(RuntimeError::NoDevice(format!(
            "no AMD GPU with index {index} ({count} found)"
        )));
    }
    let dev = index as c_int;
    // SAFETY: valid ordinal.
    check("hipSetDevice", unsafe { ffi::hipSetDevice(dev) })?;
    let mut name = [0 as c_char; 256];
    // SAFETY: buffer of the given length.
    check("hipDeviceGetName", unsafe {
        ffi::hipDeviceGetName(name.as_mut_ptr(), name.len() as c_int, dev)
    })?;
    // SAFETY: NUL-terminated by the runtime (buffer zeroed).
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let arch = gcn_arch_name(dev)?;
    let arch = arch.split(':').next().unwrap_or("").to_string();
    if convgrad_types::instance::Family::of_arch(&arch)
        .is_none_or(|f| f.runs(convgrad_types::instance::Family::Nvidia))
    {
        return Err(RuntimeError::UnsupportedArch {
            device: name,
            found: arch,
            supported: SUPPORTED.to_vec(),
        });
    }
    let mut mem = 0usize;
    // SAFETY: out-pointer to a local.
    check("hipDeviceTotalMem", unsafe {
        ffi::hipDeviceTotalMem(&mut mem, dev)
    })?;
    let cus = attribute(Attr::hipDeviceAttributeMultiprocessorCount, dev)?;
    let lds = attribute(Attr::hipDeviceAttributeMaxSharedMemoryPerBlock, dev)?;
    let wave = attribute(Attr::hipDeviceAttributeWarpSize, dev)?;
    let mut stream = std::ptr::null_mut();
    // SAFETY: out-pointer to a local; device selected above.
    check("hipStreamCreate", unsafe {
        ffi::hipStreamCreate(&mut stream)
    })?;
    let mut base = std::ptr::null_mut();
    // SAFETY: out-pointer to a local.
    check("hipMalloc", unsafe {
        ffi::hipMalloc(&mut base, ArgRing::BYTES)
    })?;
    let pool = attribute(Attr::hipDeviceAttributeMemoryPoolsSupported, dev).is_ok_and(|v| v != 0);
    let mut version: c_int = 0;
    // SAFETY: out-pointer to a local.
    check("hipDriverGetVersion", unsafe { ffi::hipDriverGetVersion(&mut version) })?;
    Ok(HipDriver {
        ordinal: dev,
        stream,
        pool,
        info: Info {
            name,
            arch,
            memory_bytes: mem as u64,
            compute_units: cus as u32,
            max_lds_bytes: lds as u32,
            wave_size: wave as u32,
            ordinal: index,
        },
        driver_version: format!("hip {version}"),
        ring: Mutex::new(ArgRing {
            base: base as u64,
            host: vec![0u8; ArgRing::BYTES].into_boxed_slice(),
            used: 0,
            foreign: false,
        }),
    })
}

/// AMD architectures convgrad builds code objects for.
pub(crate) const SUPPORTED: [&str; 6] = ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1200", "gfx1201"];

impl HipDriver {
    fn select(&self) -> Result<()> {
        // SAFETY: valid ordinal (checked at open).
        check("hipSetDevice", unsafe { ffi::hipSetDevice(self.ordinal) })
    }
    fn sync_stream(&self) -> Result<()> {
        self.sync(StreamId::Own)
    }
    fn sync(&self, s: StreamId) -> Result<()> {
        self.select()?;
        // SAFETY: a stream of this device (the caller's promise for foreign ones).
        check("hipStreamSynchronize", unsafe {
            ffi::hipStreamSynchronize(self.handle(s))
        })
    }
    /// The runtime handle of `s` (a foreign handle as given).
    fn handle(&self, s: StreamId) -> *mut c_void {
        match s {
            StreamId::Own => self.stream,
            StreamId::Handle(h) => h,
        }
    }
    /// Waits for every stream of the device: argument blocks of launches on
    /// other streams than ours are only known done then.
    fn sync_device(&self) -> Result<()> {
        self.select()?;
        // SAFETY: plain call.
        check("hipDeviceSynchronize", unsafe { ffi::hipDeviceSynchronize() })
    }
    /// An event recorded on `s`.
    fn event_on(&self, s: StreamId) -> Result<HipEvent> {
        self.select()?;
        let mut e = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        check("hipEventCreate", unsafe { ffi::hipEventCreate(&mut e) })?;
        let ev = HipEvent(e);
        // SAFETY: our event, a stream of this device.
        check("hipEventRecord", unsafe { ffi::hipEventRecord(ev.0, self.handle(s)) })?;
        Ok(ev)
    }
}

impl Drop for HipDriver {
    fn drop(&mut self) {
        let _ = self.sync_stream();
        if let Ok(r) = self.ring.get_mut() {
            // SAFETY: allocated at open; nothing in flight.
            unsafe { ffi::hipFree(r.base as *mut c_void) };
        }
        // SAFETY: created at open, destroyed once.
        unsafe { ffi::hipStreamDestroy(self.stream) };
    }
}

struct HipModule {
    ordinal: c_int,
    module: *mut c_void,
}
// SAFETY: HIP modules are runtime objects usable from any thread.
unsafe impl Send for HipModule {}
unsafe impl Sync for HipModule {}

impl LoadedModule for HipModule {
    fn function(&self, meta: &KernelMeta) -> Result<(RawKernel, Limits)> {
        // SAFETY: valid ordinal.
        check("hipSetDevice", unsafe { ffi::hipSetDevice(self.ordinal) })?;
        let name = CString::new(meta.name.as_str())
            .map_err(|_| RuntimeError::CodeObject("NUL in kernel name".into()))?;
        let mut f = std::ptr::null_mut();
        // SAFETY: module loaded (owned by us); out-pointer to a local.
        check("hipModuleGetFunction", unsafe {
            ffi::hipModuleGetFunction(&mut f, self.module, name.as_ptr())
        })?;
        Ok((RawKernel::Gpu(f), Limits::from_amd_meta(meta)))
    }
}

impl Drop for HipModule {
    fn drop(&mut self) {
        // SAFETY: loaded by us, unloaded once.
        unsafe {
            ffi::hipSetDevice(self.ordinal);
            ffi::hipModuleUnload(self.module);
        }
    }
}

impl Driver for HipDriver {
    fn info(&self) -> &Info {
        &self.info
    }
    fn driver_version(&self) -> &str {
        &self.driver_version
    }
    fn alloc(&self, bytes: usize) -> Result<u64> {
        self.select()?;
        let mut p = std::ptr::null_mut();
        if self.pool {
            // SAFETY: out-pointer to a local; our stream. The wait makes the memory
            // usable on every stream.
            check("hipMallocAsync", unsafe { ffi::hipMallocAsync(&mut p, bytes, self.stream) })?;
            self.sync_stream()?;
        } else {
            // SAFETY: out-pointer to a local.
            check("hipMalloc", unsafe { ffi::hipMalloc(&mut p, bytes) })?;
        }
        Ok(p as u64)
    }
    fn free(&self, addr: u64) -> Result<()> {
        self.select()?;
        if self.pool {
            // SAFETY: from `alloc` (the pool); ordered after the work on our stream.
            check("hipFreeAsync", unsafe { ffi::hipFreeAsync(addr as *mut c_void, self.stream) })
        } else {
            // SAFETY: from `alloc`; hipFree waits for the device before it frees.
            check("hipFree", unsafe { ffi::hipFree(addr as *mut c_void) })
        }
    }
    fn write(&self, addr: u64, data: &[u8]) -> Result<()> {
        self.select()?;
        // SAFETY: `addr` holds at least `data.len()` bytes; `data` outlives the copy (we wait).
        check("hipMemcpyHtoDAsync", unsafe {
            ffi::hipMemcpyHtoDAsync(
                addr as *mut c_void,
                data.as_ptr() as *mut c_void,
                data.len(),
                self.stream,
            )
        })?;
        self.sync_stream()
    }
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        self.select()?;
        // SAFETY: as in `write`.
        check("hipMemcpyDtoHAsync", unsafe {
            ffi::hipMemcpyDtoHAsync(
                out.as_mut_ptr() as *mut c_void,
                addr as *mut c_void,
                out.len(),
                self.stream,
            )
        })?;
        self.sync_stream()
    }
    fn fill(&self, addr: u64, value: u8, bytes: usize, stream: StreamId) -> Result<()> {
        self.select()?;
        // SAFETY: `addr` holds at least `bytes` bytes.
        check("hipMemsetD8Async", unsafe {
            ffi::hipMemsetD8Async(addr as *mut c_void, value, bytes, self.handle(stream))
        })
    }
    fn load(&self, image: &[u8]) -> Result<Box<dyn LoadedModule>> {
        self.select()?;
        let mut m = std::ptr::null_mut();
        // SAFETY: `image` is a complete ELF (parsed before this call); the runtime copies it.
        check("hipModuleLoadData", unsafe {
            ffi::hipModuleLoadData(&mut m, image.as_ptr() as *const c_void)
        })?;
        Ok(Box::new(HipModule {
            ordinal: self.ordinal,
            module: m,
        }))
    }
    fn launch(&self, spec: &LaunchSpec<'_>, stream: StreamId) -> Result<()> {
        let RawKernel::Gpu(f) = spec.kernel else {
            return Err(RuntimeError::WrongDevice("kernel"));
        };
        self.select()?;
        let stream = self.handle(stream);
        let mut ring = self.ring.lock().unwrap();
        // A full ring waits for the whole device: launches on other streams read it too.
        let staged = ring.stage_kernarg(spec.name, spec.args, || self.sync_device())?;
        ring.foreign |= stream != self.stream;
        let src = ring.block(&staged).as_ptr() as *mut c_void;
        // SAFETY: the host mirror slot is not rewritten until the stream has drained.
        check("hipMemcpyHtoDAsync", unsafe {
            ffi::hipMemcpyHtoDAsync(staged.addr as *mut c_void, src, staged.len, stream)
        })?;
        // The explicit kernarg segment: one 8-byte pointer (checked at module load).
        let mut kernarg = staged.kernarg;
        let mut size = kernarg.len();
        let mut extra = [
            HIP_LAUNCH_PARAM_BUFFER_POINTER,
            kernarg.as_mut_ptr() as *mut c_void,
            HIP_LAUNCH_PARAM_BUFFER_SIZE,
            &mut size as *mut usize as *mut c_void,
            HIP_LAUNCH_PARAM_END,
        ];
        // SAFETY: `extra` follows the documented layout and lives through the call
        // (the runtime copies the kernarg buffer at launch).
        check("hipModuleLaunchKernel", unsafe {
            ffi::hipModuleLaunchKernel(
                f,
                spec.grid[0] as c_uint,
                spec.grid[1] as c_uint,
                spec.grid[2] as c_uint,
                spec.block as c_uint,
                1,
                1,
                spec.lds_bytes as c_uint,
                stream,
                std::ptr::null_mut(),
                extra.as_mut_ptr(),
            )
        })
    }
    fn synchronize(&self, stream: StreamId) -> Result<()> {
        let mut ring = self.ring.lock().unwrap();
        self.sync(stream)?;
        // Argument blocks are free again once our stream has drained, unless
        // launches on other streams may still read theirs.
        if stream == StreamId::Own && !ring.foreign {
            ring.reset();
        }
        Ok(())
    }
    fn record(&self, stream: StreamId) -> Result<RawEvent> {
        Ok(RawEvent::Hip(self.event_on(stream)?))
    }
    fn own_stream(&self) -> *mut c_void {
        self.stream
    }
    fn create_stream(&self) -> Result<*mut c_void> {
        self.select()?;
        let mut s = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        check("hipStreamCreate", unsafe { ffi::hipStreamCreate(&mut s) })?;
        Ok(s)
    }
    fn destroy_stream(&self, handle: *mut c_void) {
        if self.select().is_ok() {
            // SAFETY: made by `create_stream`, destroyed once.
            unsafe { ffi::hipStreamDestroy(handle) };
        }
    }
    fn stream_wait(&self, waiter: StreamId, on: StreamId) -> Result<()> {
        let ev = self.event_on(on)?;
        // SAFETY: our event, a stream of this device.
        check("hipStreamWaitEvent", unsafe { ffi::hipStreamWaitEvent(self.handle(waiter), ev.0, 0) })
    }
    fn address_range(&self, addr: u64) -> Result<(u64, usize)> {
        self.select()?;
        let (mut base, mut size) = (std::ptr::null_mut(), 0usize);
        // SAFETY: out-pointers to locals; the runtime checks `addr`.
        check("hipMemGetAddressRange", unsafe {
            ffi::hipMemGetAddressRange(&mut base, &mut size, addr as *mut c_void)
        })?;
        Ok((base as u64, size))
    }
    fn elapsed_ms(&self, start: &RawEvent, end: &RawEvent) -> Result<f32> {
        match (start, end) {
            (RawEvent::Hip(a), RawEvent::Hip(b)) => {
                // SAFETY: recorded events of this device.
                check("hipEventSynchronize", unsafe {
                    ffi::hipEventSynchronize(b.0)
                })?;
                let mut ms = 0f32;
                // SAFETY: as above; out-pointer to a local.
                check("hipEventElapsedTime", unsafe {
                    ffi::hipEventElapsedTime(&mut ms, a.0, b.0)
                })?;
                Ok(ms)
            }
            _ => Err(RuntimeError::WrongDevice("event")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfx_names() {
        assert_eq!(gfx_from_int(942).as_deref(), Some("gfx942"));
        assert_eq!(gfx_from_int(910).as_deref(), Some("gfx90a"));
        assert_eq!(gfx_from_int(906).as_deref(), Some("gfx906"));
        assert_eq!(gfx_from_int(1100).as_deref(), Some("gfx1100"));
        let mut buf = vec![0u8; 600];
        buf[..19].copy_from_slice(b"AMD Instinct MI300X");
        buf[400..422].copy_from_slice(b"gfx942:sramecc+:xnack-");
        assert_eq!(find_gfx_name(&buf).as_deref(), Some("gfx942"));
        let mut buf = vec![0u8; 600];
        buf[300..307].copy_from_slice(b"gfx90a\0");
        assert_eq!(find_gfx_name(&buf).as_deref(), Some("gfx90a"));
        assert_eq!(find_gfx_name(&[0u8; 64]), None);
    }
}
