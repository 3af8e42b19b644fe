//! Python exceptions: every error names the argument it is about.
//!
//! - `ValueError`: bad shapes, layouts, devices, sizes, options.
//! - `TypeError`: an argument of the wrong kind (not a DLPack tensor, a dtype
//!   convgrad does not take).
//! - [`Unsupported`] (a `RuntimeError`): convgrad has no kernel for the
//!   request (or no code object for the device); callers fall back to PyTorch.
//! - `RuntimeError`: the GPU runtime failed.

use convgrad::ops::OpError;
use convgrad::runtime::RuntimeError;
use convgrad::types::DescError;
use pyo3::PyErr;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};

pyo3::create_exception!(
    convgrad_torch,
    Unsupported,
    PyRuntimeError,
    "convgrad has no kernel for this request (problem, option, dtype or device); fall back to another implementation."
);

/// `ValueError("{arg}: {msg}")`.
pub fn value(arg: &str, msg: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{arg}: {msg}"))
}

/// `TypeError("{arg}: {msg}")`.
pub fn type_err(arg: &str, msg: impl std::fmt::Display) -> PyErr {
    PyTypeError::new_err(format!("{arg}: {msg}"))
}

/// The Python int `v` of argument `arg` as a `T` (pyo3 takes it as `i128`,
/// so a negative value reaches here instead of pyo3's unnamed
/// `OverflowError`); out of `T`'s range: `ValueError` naming `arg` and what
/// is `allowed`.
pub fn int_arg<T: TryFrom<i128>>(arg: &str, v: i128, allowed: &str) -> Result<T, PyErr> {
    T::try_from(v).map_err(|_| value(arg, format!("{v} is out of range; allowed: {allowed}")))
}

/// [`int_arg`] for a CUDA stream handle: 0 (the legacy default stream) or a `CUstream` value.
pub fn stream_arg(v: i128) -> Result<usize, PyErr> {
    int_arg("stream", v, "0 (the default stream) or a CUstream handle, a non-negative int")
}

/// [`int_arg`] for an optional `split_k`.
pub fn split_k_arg(v: Option<i128>) -> Result<Option<u32>, PyErr> {
    v.map(|v| int_arg("split_k", v, "None (chosen by convgrad) or an int from 1 to 65535")).transpose()
}

/// [`int_arg`] for an optional `workspace_zero_from`.
pub fn zero_from_arg(v: Option<i128>) -> Result<Option<usize>, PyErr> {
    v.map(|v| int_arg("workspace_zero_from", v, "None (unknown) or a byte offset, a non-negative int")).transpose()
}

/// `Unsupported("{arg}: {msg}")`.
pub fn unsupported(arg: &str, msg: impl std::fmt::Display) -> PyErr {
    Unsupported::new_err(format!("{arg}: {msg}"))
}

/// Runtime errors that mean "this device cannot run convgrad" (no code
/// object built for its architecture, ...): a caller falls back, so they are
/// [`Unsupported`] rather than failures.
fn runtime_is_unsupported(e: &RuntimeError) -> bool {
    matches!(
        e,
        RuntimeError::NoDevice(_)
            | RuntimeError::NotBuilt(_)
            | RuntimeError::UnsupportedArch { .. }
            | RuntimeError::NoCodeObject { .. }
            | RuntimeError::KernelNotFound { .. }
            | RuntimeError::ArchMismatch { .. }
    )
}

/// A runtime error while opening or using the device of argument `arg`.
pub fn runtime(arg: &str, e: RuntimeError) -> PyErr {
    if runtime_is_unsupported(&e) {
        unsupported(arg, e)
    } else {
        match e {
            RuntimeError::WrongDevice(_) | RuntimeError::ForeignMemory(_) | RuntimeError::BufferTooSmall { .. } => {
                value(arg, e)
            }
            e => PyRuntimeError::new_err(format!("{arg}: {e}")),
        }
    }
}

/// An error of planning or running an operation (`op` names it). convgrad's
/// messages name the tensor or field (`dy`, `workspace`, `strides[1]`, ...).
pub fn op(op: &str, e: OpError) -> PyErr {
    if e.is_unsupported() {
        return Unsupported::new_err(format!("{op}: {e}"));
    }
    match e {
        OpError::Desc(DescError::BufferLength { .. }) | OpError::Desc(_) | OpError::Usage(_) => {
            PyValueError::new_err(format!("{op}: {e}"))
        }
        OpError::Runtime(r) => runtime(op, r),
        other => PyRuntimeError::new_err(format!("{op}: {other}")),
    }
}
