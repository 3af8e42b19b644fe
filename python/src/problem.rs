//! The convolution problem from PyTorch-shaped tensors and conv arguments.

use crate::dlpack::Tensor;
use crate::errors;
use convgrad::ops::OpError;
use convgrad::types::problem::Spatial;
use convgrad::types::{ConvProblem, DType, TypeConfig};
use pyo3::PyResult;

/// `stride`, `padding`, `dilation` as given (one value per spatial
/// dimension, or one value for all).
pub struct ConvArgs {
    /// Strides.
    pub stride: Vec<usize>,
    /// Symmetric zero padding (PyTorch's).
    pub padding: Vec<usize>,
    /// Dilations.
    pub dilation: Vec<usize>,
    /// Groups.
    pub groups: usize,
}

fn per_dim(name: &str, v: &[usize], ndim: usize) -> PyResult<Vec<usize>> {
    match v.len() {
        1 => Ok(vec![v[0]; ndim]),
        n if n == ndim => Ok(v.to_vec()),
        n => Err(errors::value(name, format!("{n} values for a {ndim}-D convolution; give 1 or {ndim}"))),
    }
}

/// The problem of activations `x` (`[N, G*C, *in]`), weights `w`
/// (`[G*K, C, *f]`) and output activations `y` (`[N, G*K, *out]`): each is
/// an input or an output of the op, named as the op's argument.
pub fn problem(x: &Tensor, w: &Tensor, y: &Tensor, a: &ConvArgs) -> PyResult<ConvProblem> {
    let rank = y.shape.len();
    for t in [x, w, y] {
        if !(3..=5).contains(&t.shape.len()) {
            return Err(errors::value(
                &t.name,
                format!(
                    "{} dimensions (shape {:?}); expected 3 to 5: batch/channels plus 1 to 3 spatial dimensions",
                    t.shape.len(),
                    t.shape
                ),
            ));
        }
        if t.shape.len() != rank {
            return Err(errors::value(
                &t.name,
                format!("{} dimensions, but {} has {rank}: all tensors of one convolution have the same rank", t.shape.len(), y.name),
            ));
        }
        if t.shape.contains(&0) {
            return Err(errors::value(&t.name, format!("shape {:?} has an empty dimension", t.shape)));
        }
    }
    let ndim = rank - 2;
    let g = a.groups;
    if g == 0 {
        return Err(errors::value("groups", "must be at least 1"));
    }
    let div = |t: &Tensor, what: &str| -> PyResult<usize> {
        if !t.shape[1].is_multiple_of(g) {
            return Err(errors::value(
                &t.name,
                format!("{what} {} (dimension 1) is not divisible by groups={g}", t.shape[1]),
            ));
        }
        Ok(t.shape[1] / g)
    };
    let c = div(x, "channels")?;
    let k = div(y, "channels")?;
    let n = x.shape[0];
    if y.shape[0] != n {
        return Err(errors::value(&y.name, format!("batch {} differs from {}'s batch {n}", y.shape[0], x.name)));
    }
    if w.shape[0] != g * k || w.shape[1] != c {
        return Err(errors::value(
            &w.name,
            format!(
                "shape {:?}: expected [G*K, C, *filter] = [{}, {c}, ...] for groups={g}, {} channels {} and {} channels {}",
                w.shape,
                g * k,
                x.name,
                x.shape[1],
                y.name,
                y.shape[1]
            ),
        ));
    }
    let stride = per_dim("stride", &a.stride, ndim)?;
    let padding = per_dim("padding", &a.padding, ndim)?;
    let dilation = per_dim("dilation", &a.dilation, ndim)?;
    let p = ConvProblem::new(
        ndim,
        g,
        n,
        k,
        c,
        Spatial {
            filter: &w.shape[2..],
            input: &x.shape[2..],
            strides: &stride,
            dilations: &dilation,
            lpads: &padding,
            rpads: &padding,
        },
    )
    .map_err(|e| errors::op("problem", OpError::Desc(e)))?;
    let out = &p.output()[p.first_axis()..];
    if out != &y.shape[2..] {
        return Err(errors::value(
            &y.name,
            format!(
                "spatial shape {:?} is not the convolution's output {out:?} (input {:?}, filter {:?}, stride {stride:?}, \
                 padding {padding:?}, dilation {dilation:?})",
                &y.shape[2..],
                &x.shape[2..],
                &w.shape[2..]
            ),
        ));
    }
    Ok(p)
}

/// The type configuration of tensors that must share one dtype.
pub fn types(ts: &[&Tensor]) -> PyResult<TypeConfig> {
    let first = ts[0];
    for t in &ts[1..] {
        if t.dt() != first.dt() {
            return Err(errors::type_err(
                &t.name,
                format!(
                    "dtype {} differs from {}'s {}; all tensors of the call must have one dtype",
                    dtype_name(t.dt()),
                    first.name,
                    dtype_name(first.dt())
                ),
            ));
        }
    }
    Ok(match first.dt() {
        DType::F32 | DType::Tf32 => TypeConfig::F32,
        DType::F16 => TypeConfig::F16,
        DType::Bf16 => TypeConfig::Bf16,
    })
}

/// PyTorch-style dtype name.
pub fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F32 | DType::Tf32 => "float32",
        DType::F16 => "float16",
        DType::Bf16 => "bfloat16",
    }
}

/// Checks that every tensor is on `ts[0]`'s device.
pub fn same_place(ts: &[&Tensor]) -> PyResult<()> {
    for t in &ts[1..] {
        if t.place != ts[0].place {
            return Err(errors::value(
                &t.name,
                format!("is on {} but {} is on {}; all tensors of the call must be on one device", t.place, ts[0].name, ts[0].place),
            ));
        }
    }
    Ok(())
}

/// Checks that output `out` overlaps none of `inputs`.
pub fn no_overlap(out: &Tensor, inputs: &[&Tensor]) -> PyResult<()> {
    for t in inputs {
        if out.overlaps(t) {
            return Err(errors::value(&out.name, format!("overlaps the input {} in memory", t.name)));
        }
    }
    Ok(())
}
