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

/// Canonical slots: channels and the y and x axes (`[G, N|K, C, D|Z, H|Y, W|X]`).
const C: usize = 2;
const Y: usize = 4;
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
        // A 1-long axis addresses nothing: stride 0, so that the caller's
        // (C, not a multiple of 8 for an RGB input) does not turn off the
        // kernels' vector loads along the folded channels.
        out.lengths[X] = 1;
        out.strides[X] = 0;
    }
    out
}

/// Backward-data's second fold: where `p` (x already folded, or a 1-wide
/// filter at stride 1 along x) also tiles its columns without overlap (`Y ==
/// stride`, no padding, no dilation, every input row inside a window), the
/// filter rows become channels too: `Y * C` channels and a 1x1 filter, one
/// plain GEMM instead of `Y` stride slices. dx's channel `(i, c)` is then
/// not one affine index (row `i` lies `dx`'s y stride further on): the GEMM
/// epilogue stores by channel rows (`SlicePart::div_channel_row`), a run of
/// [`RUN`] never straddling two, so `C` and dx's y stride (its 16-byte
/// vectors stay aligned) must be multiples of it. `w` must
/// hold a filter row's channels back to back; no `D` tensors (the epilogue
/// reads them by plain channel index). Returns the folded problem and its
/// dx and w descriptors.
///
/// [`RUN`]: convgrad_types::contract::gemm_epilogue::RUN
pub(crate) fn along_y(p: &ConvProblem, dx: &TensorDesc, w: &TensorDesc) -> Option<(ConvProblem, TensorDesc, TensorDesc)> {
    use convgrad_types::contract::gemm_epilogue::RUN;
    let s = p.strides[Y - 3];
    let fits = p.filter[X - 3] == 1
        && p.strides[X - 3] == 1
        && p.filter[Y - 3] == s
        && s > 1
        && p.dilations[Y - 3] == 1
        && p.lpads[Y - 3] == 0
        && p.rpads[Y - 3] == 0
        && p.input[Y - 3] == p.output()[Y - 3] * s
        && p.c.is_multiple_of(RUN)
        && dx.strides[Y].is_multiple_of(RUN)
        && w.strides[Y] == p.c * w.strides[C];
    if !fits {
        return None;
    }
    let mut f = *p;
    f.c = p.c * s;
    f.input[Y - 3] = p.output()[Y - 3];
    f.filter[Y - 3] = 1;
    f.strides[Y - 3] = 1;
    let (mut fdx, mut fw) = (*dx, *w);
    fdx.lengths[C] = f.c;
    fdx.lengths[Y] = f.input[Y - 3];
    fdx.strides[Y] = dx.strides[Y] * s;
    fw.lengths[C] = f.c;
    fw.lengths[Y] = 1;
    fw.strides[Y] = 0;
    Some((f, fdx, fw))
}

/// `" ; x folded into C' = .."` where the argument block `a` runs `p` folded.
pub(crate) fn describe(p: &ConvProblem, a: &convgrad_types::params::ConvArgs) -> String {
    if a.c as usize == p.c {
        return String::new();
    }
    let rows = a.slices.channel_row_stride != 0;
    let what = if rows { "x and y" } else { "x" };
    let filter = if rows { "1x1 filter" } else { "X = 1" };
    format!(" ; {what} folded into channels (C' = {}, {filter})", a.c)
}
