//! Backward-weight kernels, one module each: the implicit GEMM ([`gemm`]),
//! the direct kernel for tiny per-group GEMMs ([`direct`]), tap shifts
//! ([`tap_shift`]), depthwise filter rows ([`depthwise`]), the GEMM of 1x1
//! layers on TMA loads ([`tma`], Hopper), and the pre-pass
//! that unfolds small-C inputs into channels ([`unfold`]). The host's instance names keep the older words
//! (`bwdw_halo_*`: tap shift).

pub mod depthwise;
pub mod direct;
pub mod gemm;
pub mod tap_shift;
pub mod tma;
pub mod unfold;
