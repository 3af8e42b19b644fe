//! Channel vectors: whether a tensor holds runs of lanes along an axis, and
//! the lanes the direct and depthwise kernels take. A leaf.

use convgrad_types::params::vec_mode;
use convgrad_types::{ConvProblem, TensorDesc};

/// Whether `vw` consecutive elements along canonical `axis` of `d`, from any
/// multiple of `vw`, form one aligned vector: unit stride there, a length
/// that `vw` divides, and every other stride of an axis longer than 1 a
/// multiple of `vw` (device buffers are at least 16-byte aligned).
pub(crate) fn lane_axis(d: &TensorDesc, axis: usize, vw: usize) -> bool {
    d.strides[axis] == 1
        && d.lengths[axis].is_multiple_of(vw)
        && (0..d.lengths.len()).all(|i| i == axis || d.lengths[i] == 1 || d.strides[i].is_multiple_of(vw))
}

/// The direct kernels' channel-vector mode (`convgrad_types::params::vec_mode`
/// bits) and lane count for a problem whose activations are `x` (dx or x) and
/// output gradient `dy` (elements of `bytes`): depthwise problems
/// (`C = K = 1`) take lanes along the groups of `x` and `dy`, others along the
/// channels of `x` (`C` a multiple of the lanes); the kernels' `LANES` lanes
/// (at most a 16-byte vector) first, then half as many. `None`: the layout
/// has no such run (the scalar path runs).
pub(crate) fn direct_vec_mode(p: &ConvProblem, bytes: usize, x: &TensorDesc, dy: &TensorDesc) -> Option<(u32, usize)> {
    let lanes = (16 / bytes).min(convgrad_types::contract::bwd_data_direct::LANES);
    for (vw, half) in [(lanes, 0), (lanes / 2, vec_mode::HALF)] {
        if p.c == 1 && p.k == 1 && lane_axis(x, 0, vw) && lane_axis(dy, 0, vw) {
            return Some((vec_mode::ON | vec_mode::DEPTHWISE | half, vw));
        }
        if lane_axis(x, 2, vw) {
            return Some((vec_mode::ON | half, vw));
        }
    }
    None
}

/// Groups per thread of depthwise backward-weight by filter rows: its
/// `LANES` where `x` and `dy` hold the groups in aligned runs of them, else
/// half as many; `None` where neither fits.
pub(crate) fn depthwise_lanes(x: &TensorDesc, dy: &TensorDesc) -> Option<usize> {
    use convgrad_types::contract::bwd_weight_depthwise::LANES;
    [LANES, LANES / 2].into_iter().find(|&vw| lane_axis(x, 0, vw) && lane_axis(dy, 0, vw))
}
