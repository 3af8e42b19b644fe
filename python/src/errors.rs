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
