//! `convgrad_torch._native`: convgrad's backward convolutions on DLPack
//! tensors (PyTorch, NumPy), for the `convgrad_torch` Python package.
//!
//! Tensors come in through DLPack ([`dlpack`], the `dlpark` crate), are
//! mapped to convgrad's canonical descriptors ([`layout`]), planned through
//! the host crate's process-wide plan cache and launched on the caller's
//! CUDA stream, or run on the emulator for CPU tensors ([`memory`]).
//! Outputs and the split-K workspace are the caller's memory (PyTorch's
//! caching allocator); nothing here allocates GPU memory.
//!
//! No panic crosses into Python: every failure is a `PyErr` naming the
//! argument ([`errors`]); pyo3 turns a stray panic into `PanicException`.

mod dlpack;
mod epilogue;
mod errors;
mod layout;
mod memory;
mod ops;
mod prepared;
mod problem;

use pyo3::prelude::*;

/// built_archs()
/// --
///
/// GPU architectures whose kernels this build embeds (e.g. ['sm_80', 'sm_90']);
/// empty when only the emulator works.
#[pyfunction]
fn built_archs() -> Vec<&'static str> {
    convgrad::code_objects::built_archs().to_vec()
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ops::conv_backward_data, m)?)?;
    m.add_function(wrap_pyfunction!(ops::conv_backward_weight, m)?)?;
    m.add_function(wrap_pyfunction!(built_archs, m)?)?;
    m.add_class::<prepared::PreparedBackward>()?;
    m.add("Unsupported", m.py().get_type::<errors::Unsupported>())?;
    m.add("EMULATOR_ARCH", memory::EMU_ARCH.name())?;
    Ok(())
}
