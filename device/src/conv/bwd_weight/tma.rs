//! Backward-weight on the TMA main loop
//! ([`Op::BwdWeightTma`], Hopper): `dW[k, (tap, c)] = sum_m dY[m, k] X[m + tap, c]`
//! per group, `m` the output pixels, split into k-batches like the
//! implicit GEMM's. Both operands keep their channels contiguous, so both
//! are MN-major slabs (64 channels by `BK` pixels per box). Two orders of
//! the reduction, by the host's [`TmaPart`]:
//! - 1x1 filters, no padding (`lg_block` all 0): the pixels in order;
//!   `tma[0]` = `dY` as `(K, G, M)`, `tma[1]` = `X` as `(C, G, M)` (rank 3).
//! - 2-D filters with taps or strides: each `BK` step is a block of
//!   `2^lg_block` output pixels along `[Wo, Ho, N]`; `tma[0]` = `dY` as
//!   `(K, G, Wo, Ho, N)` at the block's corner, `tma[1]` = `X` as
//!   `(C, G, W, H, N)` at the corner times the stride shifted by
//!   `tap * dilation - pad`, its box stepping by the stride (the map's
//!   element strides; zeros past every edge from the map). A column box of 64 channels lies
//!   in one tap (the host asks for C a multiple of 64).
//!
//! The epilogue and the split-K finish are the implicit GEMM's
//! ([`super::gemm`]).
//!
//! [`Op::BwdWeightTma`]: convgrad_types::instance::Op::BwdWeightTma
//! [`TmaPart`]: convgrad_types::params::TmaPart

use crate::conv::filter_cols::split_filter_col;
use crate::conv::pixel_blocks as blocks;
use crate::elem::Elem;
use crate::gemm::tma::{self, TmaOperand};
use crate::gemm::warp::Acc;
use crate::gemm::{BlockRange, Tile};
use convgrad_types::params::ConvArgs;

/// The kernel body.
///
/// # Safety
/// Launch contract of the instance; the argument block's maps filled as above.
#[inline(always)]
pub unsafe fn kernel<Tl: Tile, Out: Elem, const FR: usize, const FC: usize>(args: *const ConvArgs) {
    unsafe { super::gemm::run::<Tl, Out, FR, FC, true>(args) }
}

/// The main loop of group `g`'s tile `r` (rows output channels, columns
/// input channels, reductions pixels): the accumulators, or `None` in the
/// producer warp (which then leaves the kernel).
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
    let blocked = blocks::bits(t) != 0;
    // Reduction index (a multiple of BK, one block per step) -> the block's
    // corner `[Wo, Ho, N]`.
    let corner = |k: u32| blocks::corner(t, k >> blocks::bits(t)).map(|v| v as i32);
    let dy_at = |row: u32, k: u32| {
        if blocked {
            let c = corner(k);
            [row as i32, g, c[0], c[1], c[2]]
        } else {
            [row as i32, g, k as i32, 0, 0]
        }
    };
    let (pad, dil, st) = (&a.lpad, &a.dilation, &a.stride);
    let x_at = |col: u32, k: u32| {
        if blocked {
            // Filter column -> (channel, tap); dW's channels are fastest (host).
            let (ch, f) = split_filter_col(a, col);
            let c = corner(k);
            // The block's first input pixel; the map steps by the stride.
            let w = c[0] * st[2] as i32 + (f[2] * dil[2]) as i32 - pad[2] as i32;
            let h = c[1] * st[1] as i32 + (f[1] * dil[1]) as i32 - pad[1] as i32;
            [ch as i32, g, w, h, c[2]]
        } else {
            [col as i32, g, k as i32, 0, 0]
        }
    };
    let dy = TmaOperand { map: &a.tma[0], mn_major: true, rank5: blocked, row_dim: None, at: dy_at };
    let x = TmaOperand { map: &a.tma[1], mn_major: true, rank5: blocked, row_dim: None, at: x_at };
    unsafe { tma::run::<Tl, FR, FC>(&dy, &x, r) }
}
