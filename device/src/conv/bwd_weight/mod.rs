//! Backward-weight kernels, one module each: the implicit GEMM ([`gemm`]),
//! the direct kernel for tiny per-group GEMMs ([`direct`]) and tap shifts
//! ([`tap_shift`]). The host's instance names keep the older words
//! (`bwdw_halo_*`: tap shift).

pub mod direct;
pub mod gemm;
pub mod tap_shift;
