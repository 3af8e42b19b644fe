//! Backward-weight's direct kernel ([`Op::BwdWeightDirect`], the device
//! crate's `conv::bwd_weight::direct`) for tiny per-group GEMMs. Any problem
//! fits. Where the layout has channel vectors, thread columns (channel
//! vector, k, tap block) times streams of output pixels per workgroup,
//! summed in LDS ([`VectorPlan`]); else one thread per weight element.
//!
//! [`Op::BwdWeightDirect`]: convgrad_types::instance::Op::BwdWeightDirect

use super::{WeightCtx, WeightLaunch};
use crate::ops::lanes::direct_vec_mode;
use crate::ops::split::{SplitK, column_blocks};
use convgrad_types::contract::bwd_weight_direct::{SEG, TAP_BLOCK};
use convgrad_types::params::{ConvArgs, FastDiv, vec_mode};

/// What the family needs of a problem, in a few words.
pub const NEEDS: &str = "any problem (channel vectors where channels-last)";

/// The channel-vector launch.
struct VectorPlan {
    /// [`vec_mode`] bits of the lanes (`ROWS` is added from `rows`).
    mode: u32,
    /// Streams walk row segments (a 3-wide filter at unit stride and dilation along x).
    rows: bool,
    /// Channel vectors per `k`, tap blocks per vector, row segments per output row.
    vectors: u64,
    tap_blocks: u64,
    segs: u64,
    /// Thread columns in all and per workgroup, and workgroups along the columns.
    cols: u64,
    block_cols: u64,
    col_blocks: u64,
    /// Reduction units (row segments or pixels) per stream.
    len: u64,
    /// k-batches.
    k_batch: u32,
}

/// The launch: the channel-vector path where the layout has one and its
/// split fits grid z and 32-bit partials, else the scalar path with the
/// GEMM's split `base` ([`super::gemm::split`]).
pub(crate) fn plan(c: &WeightCtx<'_>, base: (u32, u32), args: &mut ConvArgs) -> WeightLaunch {
    let threads = c.inst.threads(c.family);
    let Some(f) = vector_plan(c) else {
        args.gemm.k_batch = base.0;
        args.gemm.k_per_batch = base.1;
        let grid = [(c.weights() as u32).div_ceil(threads), 1, base.0];
        return WeightLaunch { k_batch: base.0, grid, counters: grid[0] as usize };
    };
    args.gemm.k_batch = f.k_batch;
    args.gemm.k_per_batch = 0;
    let d = &mut args.direct;
    d.vec_mode = f.mode | if f.rows { vec_mode::ROWS } else { 0 };
    d.cols = f.cols as u32;
    d.block_cols = f.block_cols as u32;
    d.stream_len = f.len as u32;
    d.div_vec = FastDiv::new(f.vectors as u32);
    d.div_block_cols = FastDiv::new(f.block_cols as u32);
    d.div_tap_blocks = FastDiv::new(f.tap_blocks as u32);
    d.div_segs = FastDiv::new(f.segs as u32);
    let grid = [f.col_blocks as u32, 1, f.k_batch];
    WeightLaunch { k_batch: f.k_batch, grid, counters: grid[0] as usize }
}

/// The channel-vector launch, where the layout has channel vectors and its
/// split fits (at most 65535 k-batches, partials within 32-bit offsets).
fn vector_plan(c: &WeightCtx<'_>) -> Option<VectorPlan> {
    let p = c.p;
    let (mode, vw) = direct_vec_mode(p, c.types.act().bytes(), c.x, c.dy)?;
    let vectors = (p.g * p.c / vw) as u64;
    let tap_blocks = p.filter_taps().div_ceil(TAP_BLOCK as u64);
    let cols = vectors * p.k as u64 * tap_blocks;
    let (block_cols, streams, col_blocks) = column_blocks(cols);
    // Streams are runs of reduction units: row segments of up to
    // SEG pixels on the row path (a tap block is then one whole
    // filter row, `TAP_BLOCK` = 3), else output pixels.
    let rows = p.filter[2] == 3 && p.strides[2] == 1 && p.dilations[2] == 1;
    let (segs, units) = if rows {
        let o = p.output();
        let segs = (o[2] as u64).div_ceil(SEG as u64);
        (segs, p.n as u64 * o[0] as u64 * segs * o[1] as u64)
    } else {
        (1, c.gk)
    };
    // One round of `min_blocks` workgroups per compute unit, with
    // streams of at least 64 output pixels: every split adds an LDS
    // sum and partials to combine. Two rounds where one would leave
    // streams of 256 pixels or more, with atomic partials (the
    // deterministic finish reads every split in turn). A fixed split
    // may go down to one unit (row segment or pixel) per stream.
    let kb = match c.split_k {
        SplitK::Auto => {
            let round = c.inst.min_blocks() as u64 * c.compute_units as u64;
            let one = round.div_ceil(col_blocks);
            let long = c.gk.div_ceil(one * streams) >= 256 && !c.deterministic;
            (if long { 2 * one } else { one }).min(c.gk.div_ceil(streams * 64))
        }
        SplitK::Fixed(n) => n as u64,
    }
    .clamp(1, 4096)
    .min(units.div_ceil(streams));
    let len = units.div_ceil(kb * streams).max(1);
    let kb = units.div_ceil(len * streams).max(1);
    let fits = kb <= 65535 && (kb == 1 || c.weights() * kb <= u32::MAX as u64);
    let k_batch = kb as u32;
    fits.then_some(VectorPlan { mode, rows, vectors, tap_blocks, segs, cols, block_cols, col_blocks, len, k_batch })
}
