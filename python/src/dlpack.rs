//! DLPack import through `dlpark` (0.10, feature `pyo3`): any object with
//! `__dlpack__` / `__dlpack_device__` (PyTorch tensors, NumPy arrays), or a
//! DLPack capsule.
//!
//! The import names the stream convgrad will launch on (the caller's CUDA
//! stream), so a producer on another stream orders its work before ours
//! (PyTorch records an event on its current stream and makes ours wait);
//! on the same stream nothing is synchronized. CPU tensors take no stream.

use crate::errors;
use convgrad::types::DType;
use dlpark::DlpackFlags;
use dlpark::ffi::{DLDataTypeCode, DLDevice, DLDeviceType};
use dlpark::python::consumer::stream::{self as dlstream, DlpackStream, StreamArg};
use dlpark::python::{ImportRequest, ImportedDlpack};
use pyo3::prelude::*;
use std::ffi::c_void;

/// Where a tensor lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Host memory: runs on convgrad's emulator (copied in and out).
    Cpu,
    /// A CUDA device, by ordinal.
    Cuda(usize),
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Cpu => f.write_str("cpu"),
            Place::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

/// An imported tensor: the DLPack descriptor read out, and the managed
/// tensor kept alive (its deleter runs when this is dropped).
pub struct Tensor {
    /// The argument's name, for errors.
    pub name: String,
    /// Device.
    pub place: Place,
    /// Element type (`None` for raw byte buffers such as workspaces).
    pub dtype: Option<DType>,
    /// Bytes per element.
    pub elem_bytes: usize,
    /// Shape.
    pub shape: Vec<usize>,
    /// Strides in elements (DLPack's implicit compact strides filled in).
    pub strides: Vec<isize>,
    /// Address of element 0: data pointer plus byte offset.
    pub addr: u64,
    /// The producer marked it read-only (DLPack 1.x flag).
    pub read_only: bool,
    _owner: ImportedDlpack,
}

impl Tensor {
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Bytes from element 0 to one past the last element, for non-negative
    /// strides (negative strides are refused at import).
    pub fn span_bytes(&self) -> usize {
        if self.shape.contains(&0) {
            return 0;
        }
        let last: usize = self.shape.iter().zip(&self.strides).map(|(&l, &s)| (l - 1) * s as usize).sum();
        (last + 1) * self.elem_bytes
    }

    /// The element type of a typed import.
    pub fn dt(&self) -> DType {
        self.dtype.unwrap_or(DType::F32)
    }

    /// Whether the byte ranges of `self` and `other` overlap.
    pub fn overlaps(&self, other: &Tensor) -> bool {
        let (a0, a1) = (self.addr, self.addr + self.span_bytes() as u64);
        let (b0, b1) = (other.addr, other.addr + other.span_bytes() as u64);
        self.place == other.place && a0 < b1 && b0 < a1
    }
}

/// The consumer side of the stream handshake: convgrad's launch stream.
struct Consumer {
    /// `CUstream` as an integer (0: the legacy default stream).
    cuda_stream: usize,
}

// SAFETY: the value handed to `__dlpack__` is the caller's live stream of the
// tensor's device (PyTorch's current stream, passed in by the Python layer),
// encoded with DLPack's CUDA conventions by `dlstream::cuda`.
unsafe impl DlpackStream for Consumer {
    fn as_python_arg(&self, _py: Python<'_>, device: DLDevice) -> PyResult<StreamArg> {
        Ok(if device.device_type == DLDeviceType::CUDA {
            dlstream::cuda(self.cuda_stream as *mut c_void)
        } else {
            dlstream::none()
        })
    }

    unsafe fn wait_for_producer(&self, _device: DLDevice, producer: *mut c_void) -> PyResult<bool> {
        // Same stream: already ordered. Otherwise decline, and dlpark falls
        // back to `__dlpack__(stream=...)`, where the producer orders it.
        Ok(producer as usize == self.cuda_stream)
    }
}

/// The convgrad element type of a DLPack dtype, or a `TypeError` naming `arg`.
fn dtype_of(arg: &str, code: DLDataTypeCode, bits: u8, lanes: u16) -> PyResult<DType> {
    let name = match (code, bits) {
        (DLDataTypeCode::FLOAT, 16) if lanes == 1 => return Ok(DType::F16),
        (DLDataTypeCode::FLOAT, 32) if lanes == 1 => return Ok(DType::F32),
        (DLDataTypeCode::BFLOAT, 16) if lanes == 1 => return Ok(DType::Bf16),
        (DLDataTypeCode::FLOAT, b) => format!("float{b}"),
        (DLDataTypeCode::BFLOAT, b) => format!("bfloat{b}"),
        (DLDataTypeCode::INT, b) => format!("int{b}"),
        (DLDataTypeCode::UINT, b) => format!("uint{b}"),
        (DLDataTypeCode::BOOL, _) => "bool".to_string(),
        (DLDataTypeCode::COMPLEX, b) => format!("complex{b}"),
        (c, b) => format!("DLPack type code {} with {b} bits", c.0),
    };
    let name = if lanes == 1 { name } else { format!("{name}x{lanes}") };
    Err(errors::type_err(
        arg,
        format!("dtype {name} is not supported; expected float16, bfloat16 or float32"),
    ))
}

/// Imports tensor `obj` (argument `arg`, f16/bf16/f32) for a launch on `cuda_stream`.
pub fn import(arg: &str, obj: &Bound<'_, PyAny>, cuda_stream: usize) -> PyResult<Tensor> {
    import_as(arg, obj, cuda_stream, true)
}

/// Imports a buffer of any element type (a workspace) for a launch on `cuda_stream`.
pub fn import_raw(arg: &str, obj: &Bound<'_, PyAny>, cuda_stream: usize) -> PyResult<Tensor> {
    import_as(arg, obj, cuda_stream, false)
}

fn import_as(arg: &str, obj: &Bound<'_, PyAny>, cuda_stream: usize, typed: bool) -> PyResult<Tensor> {
    if obj.is_none() {
        return Err(errors::type_err(arg, "expected a tensor (an object with __dlpack__), got None"));
    }
    let has_protocol = obj.hasattr("__dlpack__")? || obj.get_type().name()?.to_string().contains("Capsule");
    if !has_protocol {
        let ty = obj.get_type().name()?.to_string();
        return Err(errors::type_err(arg, format!("expected a tensor supporting DLPack (__dlpack__), got {ty}")));
    }
    let consumer = Consumer { cuda_stream };
    let request = ImportRequest::new(obj.as_borrowed()).map_err(|e| wrap(arg, obj.py(), e))?;
    // Capsules and legacy producers negotiate nothing.
    let stream: Option<&dyn DlpackStream> = if request.device().is_ok() { Some(&consumer) } else { None };
    let imported = request.import(stream, None).map_err(|e| wrap(arg, obj.py(), e))?;
    let read_only = imported.flags().contains(DlpackFlags::READ_ONLY);
    let t = imported.validate().map_err(|e| errors::value(arg, format!("invalid DLPack tensor: {e}")))?;

    let dev = t.device();
    let place = match dev.device_type {
        DLDeviceType::CPU => Place::Cpu,
        DLDeviceType::CUDA => Place::Cuda(dev.device_id.max(0) as usize),
        DLDeviceType::CUDAHOST | DLDeviceType::CUDAMANAGED => {
            return Err(errors::value(arg, "pinned or managed CUDA memory is not supported; use a device tensor"));
        }
        DLDeviceType::ROCM => {
            return Err(errors::unsupported(arg, "ROCm tensors are not supported by this build of the extension"));
        }
        other => {
            return Err(errors::unsupported(
                arg,
                format!("DLPack device type {} is not supported; expected CPU or CUDA", other.0),
            ));
        }
    };
    let dt = t.dtype();
    let dtype = if typed { Some(dtype_of(arg, dt.code, dt.bits, dt.lanes)?) } else { None };
    let elem_bytes = (dt.bits as usize * dt.lanes as usize).div_ceil(8);
    let shape: Vec<usize> = t.shape().iter().map(|&s| s as usize).collect();
    let strides_i64 = t.strides_or_compact().map_err(|e| errors::value(arg, format!("invalid DLPack strides: {e}")))?;
    let mut strides = Vec::with_capacity(shape.len());
    for (i, &s) in strides_i64.iter().enumerate() {
        if s < 0 && shape[i] > 1 {
            return Err(errors::value(arg, format!("negative stride {s} in dimension {i} is not supported")));
        }
        strides.push(s.max(0) as isize);
    }
    let addr = (t.data_ptr() as u64).wrapping_add(t.byte_offset());
    Ok(Tensor { name: arg.to_string(), place, dtype, elem_bytes, shape, strides, addr, read_only, _owner: imported })
}

/// Prefixes a Python error of the import with the argument's name, keeping its type.
fn wrap(arg: &str, py: Python<'_>, e: PyErr) -> PyErr {
    let msg = format!("{arg}: DLPack import failed: {}", e.value(py));
    if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) {
        pyo3::exceptions::PyTypeError::new_err(msg)
    } else if e.is_instance_of::<pyo3::exceptions::PyBufferError>(py) || e.is_instance_of::<pyo3::exceptions::PyValueError>(py) {
        pyo3::exceptions::PyValueError::new_err(msg)
    } else {
        e
    }
}
