//! Backward-data of 1x1 stride-1 layers as one plain GEMM on the TMA main
//! loop ([`Op::BwdDataTma`], Hopper): `dX[m, c] = sum_k dY[m, k] W[k, c]`
//! per group, `m` the pixels of all images. The host's maps:
//! - `tma[0]`, `dY` as `(K, G, M)` (K contiguous, pixels evenly spaced),
//!   boxes of `BK x 1 x BM`: K-major A slabs;
//! - `tma[1]`, `W` as `(C, K, G)` (C contiguous), boxes of `64 x BK x 1`:
//!   MN-major B slabs.
//!
//! The epilogue is the slice GEMM's ([`super::gemm`]): one slice, rows are
//! pixels.
//!
//! [`Op::BwdDataTma`]: convgrad_types::instance::Op::BwdDataTma

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
    let g = g as i32;
    let dy = TmaOperand { map: &a.tma[0], mn_major: false, base: [0, g, 0], row_dim: 2, k_dim: 0 };
    let w = TmaOperand { map: &a.tma[1], mn_major: true, base: [0, 0, g], row_dim: 0, k_dim: 1 };
    unsafe { tma::run::<Tl, FR, FC>(&dy, &w, r) }
}
