//! Backward-weight's implicit GEMM ([`Op::BwdWeight`], the device crate's
//! `conv::bwd_weight::gemm`): per group `M = K`, `N = C * taps`, tiles of
//! `bm x bn` along grid x, groups times k-batches along grid z. Any problem
//! fits (edges masked). Its split of the reduction is also the direct
//! kernel's scalar split ([`split`]).

use super::{WeightCtx, WeightLaunch};
use crate::ops::error::OpError;
use crate::ops::launch::GRID_Z;
use crate::ops::split::SplitK;
use convgrad_types::DescError;
use convgrad_types::instance::Op;
use convgrad_types::params::ConvArgs;

/// What the family needs of a problem, in a few words.
pub const NEEDS: &str = "any N, C, K, filter, stride, layout (edges masked)";

/// `(k_batch, reduction per k-batch)` of the GEMM tiles, in steps of the
/// tile's `bk` (of 64 output pixels on the direct kernel): the split asked
/// for or [`auto_split`]'s, capped by the K tiles, the kind of loads and
/// grid z.
pub(crate) fn split(c: &WeightCtx<'_>) -> (u32, u32) {
    let direct = c.inst.op == Op::BwdWeightDirect;
    let step = if direct { 64 } else { c.inst.tile.bk };
    let k_tiles = c.gk.div_ceil(step as u64).max(1) as u32;
    let want = match c.split_k {
        // Direct: about 2048 threads per compute unit in all.
        SplitK::Auto if direct => (2048 * c.compute_units as u64).div_ceil(c.weights()) as u32,
        SplitK::Auto => auto_split(c),
        SplitK::Fixed(n) => n,
    };
    // Element copies: up to two rounds of resident workgroups (a 3-channel
    // stem's 3 column tiles fill 0.7 of one round at 128).
    let cap = if direct { 4096 } else if x_vectors(c) { 128 } else { 256 };
    // The GEMM tiles' grid z is G * k_batch, at most 65535: the automatic
    // split stays under it (a fixed one past it is refused by [`plan`]).
    let z_cap = if direct || !matches!(c.split_k, SplitK::Auto) { u32::MAX } else { (GRID_Z / c.p.g.max(1) as u64).max(1) as u32 };
    let k_batch0 = want.clamp(1, k_tiles.min(cap).min(z_cap));
    let k_per_batch = k_tiles.div_ceil(k_batch0) * step;
    ((c.gk as u32).div_ceil(k_per_batch).max(1), k_per_batch)
}

/// Whether im2col(X) loads whole 16-byte vectors (else element copies, e.g.
/// the RGB stem: the copies cannot run ahead of the multiplies, so more
/// resident workgroups hide their latency).
fn x_vectors(c: &WeightCtx<'_>) -> bool {
    let lanes = 16 / c.types.act().bytes() as u64;
    c.x.strides[2] == 1 && c.dw.strides[2] == 1 && (c.p.c as u64).is_multiple_of(lanes)
}

/// CK: k_batch = occupancy * CUs / (tiles * G), clamped to the K tiles and
/// 128. Splitting costs an atomic per element and split, and the tile's
/// last workgroup sums it: once the tiles alone fill three quarters of one
/// round of two blocks per CU, one split is faster. (The timings behind
/// these rules: docs/tuning-log.md, "kernel choice".)
fn auto_split(c: &WeightCtx<'_>) -> u32 {
    let blocks = (c.tiles_m as u64 * c.tiles_n as u64 * c.p.g as u64).max(1);
    // A round: the workgroups a CU holds at once (at least the launch
    // bound's `min_blocks` and 8 warps; more where measured).
    let per_cu = c.inst.resident_per_cu(c.family) as u64;
    let round = per_cu * c.compute_units as u64;
    let gk = c.gk;
    if blocks > round && x_vectors(c) {
        // Past one round, a last round that is mostly empty idles
        // the GPU for a whole tile's time: split so the rounds fill
        // (fewest rounds per split, up to 4 splits of at least
        // 4096 reductions each). U-Net's 1024->512 at 32x32: 288
        // tiles of 128x128 over 264 slots, 1, 2, 3, 4 splits 0.557,
        // 0.500, 0.478, 0.468 ms (H200); its 512->1024 at 16x16, as
        // many tiles with a 4096-long reduction: 0.153 ms unsplit,
        // 0.174 in two.
        let rounds = |kb: u64| (blocks * kb).div_ceil(round) as f64 / kb as f64;
        (1..=4u64).filter(|&kb| gk / kb >= 4096).fold(1, |best, kb| if rounds(kb) < rounds(best) { kb } else { best }) as u32
    } else if 4 * blocks >= 3 * round {
        1
    } else if !x_vectors(c) {
        (2 * round / blocks) as u32
    } else {
        // One round of two blocks per CU: more splits cost more
        // partials than they hide. Where that leaves one split, two
        // rounds pay while each split keeps 64 K-steps of 32.
        let k = (round / blocks) as u32;
        let two = (2 * round / blocks).max(1);
        if k < 2 && gk / two >= 2048 { two as u32 } else { k }
    }
}

/// The launch: tiles along grid x, groups times k-batches along grid z (at
/// most 65535: a larger fixed split or G is refused by name), one arrival
/// counter per tile and group.
pub(crate) fn plan(c: &WeightCtx<'_>, (k_batch, k_per_batch): (u32, u32), args: &mut ConvArgs) -> Result<WeightLaunch, OpError> {
    let g = c.p.g as u64;
    if g * k_batch as u64 > GRID_Z {
        let field = if k_batch == 1 { "G (grid z of the GEMM tiles)" } else { "split-K k-batches * G (grid z of the GEMM tiles)" };
        return Err(OpError::Desc(DescError::TooLarge { field, value: g * k_batch as u64, max: GRID_Z }));
    }
    args.gemm.k_batch = k_batch;
    args.gemm.k_per_batch = k_per_batch;
    let grid = [c.tiles_m * c.tiles_n, 1, c.p.g as u32 * k_batch];
    Ok(WeightLaunch { k_batch, grid, counters: grid[0] as usize * c.p.g })
}
