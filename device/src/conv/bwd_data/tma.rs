//! Backward-data on the TMA main loop ([`Op::BwdDataTma`], Hopper), stride
//! 1, 2-D. Two row orders, by the host's [`TmaPart`]:
//! - 1x1 filters, no padding (`k_pad == 0`): one plain GEMM
//!   `dX[m, c] = sum_k dY[m, k] W[k, c]` per group, `m` the pixels of all
//!   images in order; maps `tma[0]` = `dY` as `(K, G, M)` (K-major A slabs,
//!   boxes `BK x 1 x BM`) and `tma[1]` = `W` as `(C, K, G)` (MN-major B
//!   slabs, boxes `64 x BK x 1`).
//! - Filters with taps (any padding and dilation): the rows of a tile are a
//!   block of `bw x bh x bn` pixels (`2^lg_block`), so one box of
//!   `dY` as `(K, G, Wo, Ho, N)` at the block's corner shifted by the tap,
//!   `pad - tap * dilation` per axis, is the tile's A slab for that tap:
//!   the tensor map reads the zeros past the edges (also at negative
//!   coordinates), no index math per element. The reduction runs over the
//!   taps, `k_pad` channels each (`K` rounded up to BK: the map reads zeros
//!   past `K` in both operands). `tma[1]` = `W` as `(C, X, Y, K, G)`,
//!   boxes `64 x 1 x 1 x BK x 1`.
//!
//! The plain GEMM's maps have rank 3, the taps' rank 5. The epilogue is the
//! slice GEMM's ([`super::gemm`]) with [`block_pixel`] for the rows of a
//! block.
//!
//! [`Op::BwdDataTma`]: convgrad_types::instance::Op::BwdDataTma
//! [`TmaPart`]: convgrad_types::params::TmaPart

use crate::conv::pixel_blocks as blocks;
use crate::gemm::tma::{self, TmaOperand};
use crate::gemm::warp::Acc;
use crate::gemm::{BlockRange, Tile};
use crate::elem::Elem;
use convgrad_types::params::ConvArgs;

/// The kernel body.
///
/// # Safety
/// Launch contract of the instance; the argument block's maps filled as above.
#[inline(always)]
pub unsafe fn kernel<Tl: Tile, Out: Elem, const FR: usize, const FC: usize>(args: *const ConvArgs) {
    unsafe { super::gemm::run::<Tl, Out, FR, FC, true>(args) }
}

/// The main loop of group `g`'s tile `r`: the accumulators, or `None` in
/// the producer warp (which then leaves the kernel).
///
/// # Safety
/// As [`kernel`].
#[inline(always)]
pub(super) unsafe fn mainloop<Tl: Tile, const FR: usize, const FC: usize>(
    a: &ConvArgs,
    g: u32,
    r: BlockRange,
) -> Option<Acc<Tl::At, FR, FC>> {
    let (t, g) = (&a.tma_rows, g as i32);
    // Two loops, each with constant map ranks and no test of the filter per
    // copy (the producer is one thread: its work per step is kept small).
    if t.k_pad == 0 {
        // A 1x1 filter without padding: rows are the pixels in order, rank-3 maps.
        let dy = TmaOperand { map: &a.tma[0], mn_major: false, rank5: false, row_dim: None, at: |row: u32, k: u32| [k as i32, g, row as i32, 0, 0] };
        let w = TmaOperand { map: &a.tma[1], mn_major: true, rank5: false, row_dim: Some(0), at: |row: u32, k: u32| [row as i32, k as i32, g, 0, 0] };
        return unsafe { tma::run::<Tl, FR, FC>(&dy, &w, r) };
    }
    // The tile's block of pixels: its corner per axis `[W, H, N]`.
    let corner = blocks::corner(t, r.m0 >> blocks::bits(t));
    // Reduction index -> (tap along Y, tap along X, channel).
    let tap = |k: u32| {
        let (tap, kc) = (k / t.k_pad, k % t.k_pad);
        (tap / a.filter[2], tap % a.filter[2], kc)
    };
    let (pad, dil) = (&a.lpad, &a.dilation);
    let dy_at = |_row: u32, k: u32| {
        let (ty, tx, kc) = tap(k);
        let w = (corner[0] + pad[2]) as i32 - (tx * dil[2]) as i32;
        let h = (corner[1] + pad[1]) as i32 - (ty * dil[1]) as i32;
        [kc as i32, g, w, h, corner[2] as i32]
    };
    let w_at = |row: u32, k: u32| {
        let (ty, tx, kc) = tap(k);
        [row as i32, tx as i32, ty as i32, kc as i32, g]
    };
    // W's two boxes of a slab lie in one tap: the second is 64 channels on.
    let dy = TmaOperand { map: &a.tma[0], mn_major: false, rank5: true, row_dim: None, at: dy_at };
    let w = TmaOperand { map: &a.tma[1], mn_major: true, rank5: true, row_dim: Some(0), at: w_at };
    let k_end = a.filter[1] * a.filter[2] * t.k_pad;
    unsafe { tma::run::<Tl, FR, FC>(&dy, &w, BlockRange { k_end, ..r }) }
}

/// The input pixel `(n, [z, y, x])` of row `m` of a tile of pixel blocks
/// (`k_pad != 0`), or none past the input's edges.
#[inline(always)]
pub(super) fn block_pixel(a: &ConvArgs, m: u32) -> Option<(u32, [u32; 3])> {
    let (t, bits) = (&a.tma_rows, blocks::bits(&a.tma_rows));
    let [x, y, n] = blocks::in_block(t, blocks::corner(t, m >> bits), m & ((1 << bits) - 1));
    (x < a.input[2] && y < a.input[1] && n < a.n).then_some((n, [0, y, x]))
}
