//! The launch of depthwise backward-weight by filter rows
//! ([`Op::BwdWeightDepthwise`](convgrad_types::instance::Op)): thread
//! columns `(filter row, channel vector)`, streams of output-row chunks per
//! workgroup, k-batches over the chunks (the device crate's
//! `conv::bwd_weight::depthwise`).

use super::bwd_weight::{OwnLaunch, OwnRequest, SplitK, column_blocks};
use super::{OpError, lane_axis};
use convgrad_types::contract::bwd_weight_depthwise::{LANES, chunk_pixels};
use convgrad_types::params::{FastDiv, vec_mode};
use convgrad_types::{DescError, TensorDesc};

/// Groups per thread: [`LANES`] where `x` and `dy` hold the groups in
/// aligned runs of them, else half as many; `None` where neither fits.
pub(super) fn lanes(x: &TensorDesc, dy: &TensorDesc) -> Option<usize> {
    [LANES, LANES / 2]
        .into_iter()
        .find(|&vw| lane_axis(x, 0, vw) && lane_axis(dy, 0, vw))
}

/// The launch: columns blocked as the direct kernel's, one round of
/// `min_blocks` workgroups per compute unit with streams of at least 64
/// output pixels (two rounds where one leaves streams of 256 pixels or more,
/// atomic partials), or the split asked for.
pub(super) fn launch(r: &OwnRequest<'_>) -> Result<OwnLaunch, OpError> {
    let p = r.p;
    let vw = lanes(r.x, r.dy)
        .ok_or_else(|| OpError::Usage("depthwise filter rows: no channel vectors".into()))?;
    let o = p.output();
    let px = chunk_pixels(p.strides[2] as u32, p.dilations[2] as u32) as u64;
    let chunks = (o[2] as u64).div_ceil(px);
    let units = p.n as u64 * o[0] as u64 * o[1] as u64 * chunks;
    let vectors = (p.g / vw) as u64;
    let cols = vectors * (p.filter[0] * p.filter[1]) as u64;
    let (block_cols, streams, col_blocks) = column_blocks(cols);
    let kb = match r.split_k {
        SplitK::Auto => {
            let round = r.inst.min_blocks() as u64 * r.compute_units.max(1) as u64;
            let one = round.div_ceil(col_blocks);
            let long = units.div_ceil(one * streams) * px >= 256 && !r.deterministic;
            (if long { 2 * one } else { one }).min(units.div_ceil(streams * (64 / px)))
        }
        SplitK::Fixed(n) => n as u64,
    }
    .clamp(1, 4096)
    .min(units.div_ceil(streams));
    let len = units.div_ceil(kb * streams).max(1);
    let kb = units.div_ceil(len * streams).max(1);
    for (field, v, max) in [
        (
            "depthwise chunks (N * output rows * chunks)",
            units,
            (1u64 << 31) - 1,
        ),
        ("k-batches", kb, 65535),
    ] {
        if v > max {
            return Err(OpError::Desc(DescError::TooLarge {
                field,
                value: v,
                max,
            }));
        }
    }
    let half = if vw < LANES { vec_mode::HALF } else { 0 };
    Ok(OwnLaunch {
        k_batch: kb as u32,
        grid_x: col_blocks as u32,
        set_args: Box::new(move |a| {
            a.direct.vec_mode = vec_mode::ON | vec_mode::DEPTHWISE | half;
            a.direct.cols = cols as u32;
            a.direct.block_cols = block_cols as u32;
            a.direct.stream_len = len as u32;
            a.direct.div_vec = FastDiv::new(vectors as u32);
            a.direct.div_block_cols = FastDiv::new(block_cols as u32);
            a.direct.div_segs = FastDiv::new(chunks as u32);
        }),
    })
}
