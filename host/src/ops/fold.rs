//! Stride == filter along x, as wider channels.
//!
//! Where a filter's windows tile each image row without overlap or gap
//! (`X == stride`, no padding, no dilation: ViT's patch embedding, ConvNeXt's
//! stem and downsampling, 1-D `k == s` layers), input pixel `wo * X + x`,
//! channel `c` is folded pixel `wo`, channel `x * C + c` of the same memory
//! when x's pixels hold their channels back to back (channels-last). The
//! problem becomes one with `X * C` channels and a 1-wide filter: the same
//! sums, but its GEMMs read and write runs of `X * C` contiguous elements
//! (vectors even where `C` is 3) and backward-data splits into `X` times fewer
//! stride slices. The plans run the folded problem and keep the caller's.

use convgrad_types::{ConvProblem, TensorDesc};

/// Canonical slots: channels and the x axis (`[G, N|K, C, D|Z, H|Y, W|X]`).
const C: usize = 2;
const X: usize = 5;

/// `p` with x folded into the channels, where every tensor of `activations`
/// (shaped like x: x or dx and their `D` tensors) and `weights` (shaped like
/// the filter: w or dw and theirs) stores x's channels back to back; `None`
/// where the problem or a tensor does not fold. `exact`: every input column
/// is inside a window (backward-data writes every dx column; backward-weight
/// may leave trailing columns unread).
pub(crate) fn along_x(
    p: &ConvProblem,
    activations: &[&TensorDesc],
    weights: &[&TensorDesc],
    exact: bool,
) -> Option<ConvProblem> {
    let s = p.strides[X - 3];
    let wo = p.output()[X - 3];
    let tiles = p.filter[X - 3] == s
        && s > 1
        && p.dilations[X - 3] == 1
        && p.lpads[X - 3] == 0
        && p.rpads[X - 3] == 0
        && (!exact || p.input[X - 3] == wo * s);
    // x's channels contiguous after one another: one axis of X * C with c's stride.
    let merges = |d: &&TensorDesc| d.strides[X] == p.c * d.strides[C];
    if !(tiles && activations.iter().chain(weights).all(merges)) {
        return None;
    }
    let mut f = *p;
    f.c = p.c * s;
    f.input[X - 3] = wo;
    f.filter[X - 3] = 1;
    f.strides[X - 3] = 1;
    f.dilations[X - 3] = 1;
    Some(f)
}

/// Descriptor `d` of a tensor shaped like x (`activation`) or like the
/// filter, seen in the folded problem `f` (from [`along_x`], folding `by`).
pub(crate) fn desc(d: &TensorDesc, f: &ConvProblem, by: usize, activation: bool) -> TensorDesc {
    let mut out = *d;
    out.lengths[C] = f.c;
    if activation {
        out.lengths[X] = f.input[X - 3];
        out.strides[X] = d.strides[X] * by;
    } else {
        out.lengths[X] = 1;
    }
    out
}

/// `" ; x folded into C' = .."` where the argument block `a` runs `p` folded.
pub(crate) fn describe(p: &ConvProblem, a: &convgrad_types::params::ConvArgs) -> String {
    if a.c as usize == p.c {
        return String::new();
    }
    format!(" ; x folded into channels (C' = {}, X = 1)", a.c)
}
