//! Backward-weight of 1x1 stride-1 layers as one plain GEMM on the TMA main
//! loop ([`Op::BwdWeightTma`], Hopper): `dW[k, c] = sum_m dY[m, k] X[m, c]`
//! per group, `m` the pixels of all images, split into k-batches like the
//! implicit GEMM's. Both operands keep their channels contiguous, so both
//! are MN-major slabs. The host's maps:
//! - `tma[0]`, `dY` as `(K, G, M)`, boxes of `64 x 1 x BK`;
//! - `tma[1]`, `X` as `(C, G, M)`, boxes of `64 x 1 x BK`.
//!
//! The epilogue and the split-K finish are the implicit GEMM's
//! ([`super::gemm`]).
//!
//! [`Op::BwdWeightTma`]: convgrad_types::instance::Op::BwdWeightTma

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
    // Both maps `(channels, G, M)`: rows are channels, reductions pixels.
    let at = |row: u32, k: u32| [row as i32, g as i32, k as i32, 0, 0];
    let dy = TmaOperand { map: &a.tma[0], mn_major: true, row_dim: 0, rank5: false, at };
    let x = TmaOperand { map: &a.tma[1], mn_major: true, row_dim: 0, rank5: false, at };
    unsafe { tma::run::<Tl, FR, FC>(&dy, &x, r) }
}
