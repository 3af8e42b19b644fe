//! Binding imported tensors to a convgrad device.
//!
//! - CUDA tensors: the caller's memory is wrapped in place
//!   ([`Device::wrap_foreign`], which checks the range against the driver's
//!   allocation) and the op runs on the caller's stream ([`Device::wrap_stream`]).
//!   Nothing is allocated, copied or synchronized.
//! - CPU tensors: convgrad's emulator (gfx942 model) runs the kernels on its
//!   own memory, so inputs are copied in and outputs copied back; the
//!   emulator finishes every launch before returning.

use crate::dlpack::{Place, Tensor};
use crate::errors;
use convgrad::runtime::{Backend, BufRef, Device, DeviceBuffer, EmuArch, Stream};
use pyo3::PyResult;

/// The emulated architecture CPU tensors run on.
pub const EMU_ARCH: EmuArch = EmuArch::Gfx942;

/// Refuses a stream handle for CPU tensors (`cpu`): the emulator finishes
/// every launch before returning and takes no stream, so a non-zero `stream`
/// is a caller's mistake (a CUDA stream with CPU tensors), not a no-op.
pub fn no_cpu_stream(cpu: bool, stream: usize) -> PyResult<()> {
    if cpu && stream != 0 {
        return Err(errors::value(
            "stream",
            format!("{stream:#x} given with CPU tensors, which run on the emulator and take no stream; pass 0"),
        ));
    }
    Ok(())
}

/// A device and the stream a call runs on.
pub struct Ctx {
    /// The device (shared per process: kernels loaded once).
    pub dev: Device,
    /// The launch stream.
    pub stream: Stream,
    place: Place,
}

/// One tensor's memory on the device.
pub struct Mem {
    buf: DeviceBuffer<u8>,
    /// CPU tensors: where the result goes back to (address, bytes).
    host: Option<(u64, usize)>,
}

impl Mem {
    /// The untyped view the ops take.
    pub fn as_ref(&self) -> BufRef<'_> {
        (&self.buf).into()
    }
}

impl Ctx {
    /// Opens the device of `place` (`arg` names the tensor that decided it)
    /// with the caller's `cuda_stream` (ignored on the CPU).
    pub fn open(place: Place, cuda_stream: usize, arg: &str) -> PyResult<Ctx> {
        let (dev, stream) = match place {
            Place::Cpu => {
                no_cpu_stream(true, cuda_stream)?;
                let dev = Device::shared(Backend::Emulator(EMU_ARCH), 0).map_err(|e| errors::runtime(arg, e))?;
                let s = dev.default_stream();
                (dev, s)
            }
            Place::Cuda(ordinal) => {
                let dev = Device::shared(Backend::Cuda, ordinal).map_err(|e| errors::runtime(arg, e))?;
                // SAFETY: the Python layer passes PyTorch's current stream of this
                // device (a live CUstream of the primary context, or 0 for the
                // legacy default stream); it outlives this call, the only use.
                let s = unsafe { dev.wrap_stream(cuda_stream as *mut std::ffi::c_void) }
                    .map_err(|e| errors::runtime("stream", e))?;
                (dev, s)
            }
        };
        Ok(Ctx { dev, stream, place })
    }

    /// Device memory holding `t`'s elements. `load`: its current contents are
    /// copied in (CPU only); `store`: results are copied back to host memory
    /// by [`Ctx::finish`] (CPU only). On CUDA the memory is used in place.
    pub fn bind(&self, t: &Tensor, load: bool, store: bool) -> PyResult<Mem> {
        let bytes = t.span_bytes();
        if store && t.read_only {
            return Err(errors::value(&t.name, "the output tensor is read-only"));
        }
        match self.place {
            Place::Cuda(_) => {
                if !t.addr.is_multiple_of(16) {
                    return Err(errors::value(
                        &t.name,
                        format!(
                            "data address {:#x} is not 16-byte aligned (a view with a storage offset?); \
                             convgrad's kernels load 16-byte vectors: pass a .clone()",
                            t.addr
                        ),
                    ));
                }
                // SAFETY: the DLPack producer guarantees `bytes` of device memory
                // at `addr` for as long as `t` (which owns the export) lives, and
                // `t` outlives the launch; convgrad checks the range against the
                // driver's allocation and never frees it.
                let buf = unsafe { self.dev.wrap_foreign::<u8>(t.addr, bytes) }.map_err(|e| errors::runtime(&t.name, e))?;
                Ok(Mem { buf, host: None })
            }
            Place::Cpu => {
                let buf = self.dev.alloc::<u8>(bytes).map_err(|e| errors::runtime(&t.name, e))?;
                if load && bytes > 0 {
                    // SAFETY: a dense CPU tensor of `bytes` bytes at `addr`, kept
                    // alive by `t`'s DLPack export for this call.
                    let host = unsafe { std::slice::from_raw_parts(t.addr as *const u8, bytes) };
                    buf.upload(host).map_err(|e| errors::runtime(&t.name, e))?;
                }
                Ok(Mem { buf, host: store.then_some((t.addr, bytes)) })
            }
        }
    }

    /// Scratch memory of `bytes` bytes owned by convgrad (CPU workspaces).
    pub fn scratch(&self, bytes: usize, arg: &str) -> PyResult<Mem> {
        let buf = self.dev.alloc::<u8>(bytes).map_err(|e| errors::runtime(arg, e))?;
        Ok(Mem { buf, host: None })
    }

    /// After the launch: copies CPU results back into the tensors' memory.
    pub fn finish(&self, outs: &[(&str, &Mem)]) -> PyResult<()> {
        for (name, m) in outs {
            if let Some((addr, bytes)) = m.host
                && bytes > 0
            {
                // SAFETY: as in `bind`; the output was checked to be writable
                // and not to overlap any input.
                let host = unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, bytes) };
                m.buf.download_into(host).map_err(|e| errors::runtime(name, e))?;
            }
        }
        Ok(())
    }
}
