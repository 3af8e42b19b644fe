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
mod problem;

use problem::ConvArgs;
use pyo3::prelude::*;

fn conv_args(
    stride: &Bound<'_, PyAny>,
    padding: &Bound<'_, PyAny>,
    dilation: &Bound<'_, PyAny>,
    groups: i64,
) -> PyResult<ConvArgs> {
    Ok(ConvArgs {
        stride: ops::ints("stride", stride)?,
        padding: ops::ints("padding", padding)?,
        dilation: ops::ints("dilation", dilation)?,
        groups: usize::try_from(groups).map_err(|_| errors::value("groups", format!("{groups} is negative")))?,
    })
}

/// conv_backward_data(dy, w, dx, stride, padding, dilation, groups, *, epilogue=None, d_tensors=None, stream=0)
/// --
///
/// Writes the input gradient of a grouped N-d convolution into `dx`:
/// `dx = epilogue(conv_transpose(dy, w), *d_tensors)`.
///
/// Shapes as PyTorch's: `dy` [N, G*K, *out], `w` [G*K, C, *filter], `dx`
/// [N, G*C, *in]; contiguous or channels_last (the weight contiguous or
/// channels_last; channels_last activations need a channels_last weight).
/// `stream`: the CUDA stream (integer handle) to launch on; ignored for CPU
/// tensors, which run on convgrad's emulator. Returns a description of the
/// kernel that ran.
#[pyfunction]
#[pyo3(signature = (dy, w, dx, stride, padding, dilation, groups, *, epilogue=None, d_tensors=None, stream=0))]
#[allow(clippy::too_many_arguments)]
fn conv_backward_data(
    dy: &Bound<'_, PyAny>,
    w: &Bound<'_, PyAny>,
    dx: &Bound<'_, PyAny>,
    stride: &Bound<'_, PyAny>,
    padding: &Bound<'_, PyAny>,
    dilation: &Bound<'_, PyAny>,
    groups: i64,
    epilogue: Option<&Bound<'_, PyAny>>,
    d_tensors: Option<&Bound<'_, PyAny>>,
    stream: usize,
) -> PyResult<String> {
    let args = conv_args(stride, padding, dilation, groups)?;
    ops::backward_data(dy, w, dx, args, epilogue, d_tensors, stream)
}

/// conv_backward_weight(x, dy, dw, stride, padding, dilation, groups, *, split_k=None, deterministic=False, workspace=None, workspace_zero_from=None, stream=0)
/// --
///
/// Writes the weight gradient of a grouped N-d convolution into `dw`.
///
/// `x` [N, G*C, *in], `dy` [N, G*K, *out], `dw` [G*K, C, *filter].
/// `workspace`: the split-K workspace, a byte tensor on the tensors' device or
/// a callable `f(nbytes) -> tensor` (called only when one is needed);
/// `workspace_zero_from`: the byte offset from which the workspace holds
/// zeros (0: all zero; `None`: unknown, convgrad zeroes what it needs).
/// Returns `(description, zero_from)`: the kernel that ran and the offset
/// from which the workspace holds zeros afterwards (pass it to the next call
/// with the same workspace; `None`: unknown). CPU tensors use emulator
/// scratch memory.
#[pyfunction]
#[pyo3(signature = (x, dy, dw, stride, padding, dilation, groups, *, split_k=None, deterministic=false, workspace=None, workspace_zero_from=None, stream=0))]
#[allow(clippy::too_many_arguments)]
fn conv_backward_weight(
    x: &Bound<'_, PyAny>,
    dy: &Bound<'_, PyAny>,
    dw: &Bound<'_, PyAny>,
    stride: &Bound<'_, PyAny>,
    padding: &Bound<'_, PyAny>,
    dilation: &Bound<'_, PyAny>,
    groups: i64,
    split_k: Option<u32>,
    deterministic: bool,
    workspace: Option<&Bound<'_, PyAny>>,
    workspace_zero_from: Option<usize>,
    stream: usize,
) -> PyResult<(String, Option<usize>)> {
    let args = conv_args(stride, padding, dilation, groups)?;
    ops::backward_weight(x, dy, dw, args, split_k, deterministic, workspace, workspace_zero_from, stream)
}

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
    m.add_function(wrap_pyfunction!(conv_backward_data, m)?)?;
    m.add_function(wrap_pyfunction!(conv_backward_weight, m)?)?;
    m.add_function(wrap_pyfunction!(built_archs, m)?)?;
    m.add("Unsupported", m.py().get_type::<errors::Unsupported>())?;
    m.add("EMULATOR_ARCH", memory::EMU_ARCH.name())?;
    Ok(())
}
