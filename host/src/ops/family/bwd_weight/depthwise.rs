//! Depthwise backward-weight by filter rows ([`Op::BwdWeightDepthwise`],
//! the device crate's `conv::bwd_weight::depthwise`): thread columns
//! `(filter row, channel vector)`, streams of output-row chunks per
//! workgroup, k-batches over the chunks.
//!
//! [`Op::BwdWeightDepthwise`]: convgrad_types::instance::Op::BwdWeightDepthwise

use super::{WeightCtx, WeightLaunch, check_partials};
use crate::ops::error::{OpError, Reason};
use crate::ops::lanes::depthwise_lanes;
use crate::ops::request::Request;
use crate::ops::split::{SplitK, column_blocks};
use convgrad_types::DescError;
use convgrad_types::contract::bwd_weight_depthwise::{LANES, MAX_F, chunk_pixels};
use convgrad_types::params::{ConvArgs, FastDiv, vec_mode};

/// What the family needs of a problem, in a few words.
pub const NEEDS: &str = "C = K = 1, groups innermost in x and dy in runs of 2, filter width <= 7";

const KERNEL: &str = "depthwise filter rows";

/// The lanes (groups per thread) for the request, or the first need the
/// problem does not meet.
pub fn fits(r: &Request<'_>) -> Result<usize, Reason> {
    let p = r.p;
    let needs = |field, value: usize, allowed: String| Reason::Needs { kernel: KERNEL, field, value: value as u64, allowed: allowed.into() };
    if p.c != 1 || p.k != 1 {
        return Err(needs("C", p.c.max(p.k), "C = K = 1 (one channel per group)".into()));
    }
    if p.filter[2] > MAX_F {
        return Err(needs("filter width", p.filter[2], format!("a filter width of at most {MAX_F}")));
    }
    depthwise_lanes(r.x, r.dy).ok_or_else(|| {
        let allowed = format!(
            "the groups innermost in x and dy in runs of {} (a channels-last layout, G even; use bwdw_direct_{})",
            LANES / 2,
            r.types.name()
        );
        needs("G", p.g, allowed)
    })
}

/// The launch: columns blocked as the direct kernel's, one round of
/// `min_blocks` workgroups per compute unit with streams of at least 64
/// output pixels (two rounds where one leaves streams of 256 pixels or more,
/// atomic partials), or the split asked for.
pub(crate) fn plan(c: &WeightCtx<'_>, args: &mut ConvArgs) -> Result<WeightLaunch, OpError> {
    let p = c.p;
    let vw = depthwise_lanes(c.x, c.dy).ok_or_else(|| OpError::Usage("depthwise filter rows: no channel vectors".into()))?;
    let o = p.output();
    let px = chunk_pixels(p.strides[2] as u32, p.dilations[2] as u32) as u64;
    let chunks = (o[2] as u64).div_ceil(px);
    let units = p.n as u64 * o[0] as u64 * o[1] as u64 * chunks;
    let vectors = (p.g / vw) as u64;
    let cols = vectors * (p.filter[0] * p.filter[1]) as u64;
    let (block_cols, streams, col_blocks) = column_blocks(cols);
    let kb = match c.split_k {
        SplitK::Auto => {
            let round = c.inst.min_blocks() as u64 * c.compute_units.max(1) as u64;
            let one = round.div_ceil(col_blocks);
            let long = units.div_ceil(one * streams) * px >= 256 && !c.deterministic;
            (if long { 2 * one } else { one }).min(units.div_ceil(streams * (64 / px)))
        }
        SplitK::Fixed(n) => n as u64,
    }
    .clamp(1, 4096)
    .min(units.div_ceil(streams));
    let len = units.div_ceil(kb * streams).max(1);
    let kb = units.div_ceil(len * streams).max(1);
    for (field, v, max) in [("depthwise chunks (N * output rows * chunks)", units, (1u64 << 31) - 1), ("k-batches", kb, 65535)] {
        if v > max {
            return Err(OpError::Desc(DescError::TooLarge { field, value: v, max }));
        }
    }
    let k_batch = kb as u32;
    check_partials(c.weights(), k_batch)?;
    args.gemm.k_batch = k_batch;
    args.gemm.k_per_batch = 0;
    let d = &mut args.direct;
    d.vec_mode = vec_mode::ON | vec_mode::DEPTHWISE | if vw < LANES { vec_mode::HALF } else { 0 };
    d.cols = cols as u32;
    d.block_cols = block_cols as u32;
    d.stream_len = len as u32;
    d.div_vec = FastDiv::new(vectors as u32);
    d.div_block_cols = FastDiv::new(block_cols as u32);
    d.div_segs = FastDiv::new(chunks as u32);
    let grid = [col_blocks as u32, 1, k_batch];
    Ok(WeightLaunch { k_batch, grid, counters: grid[0] as usize })
}
