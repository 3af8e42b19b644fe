//! Backward-data kernels, one module each: the implicit GEMM per stride
//! slice ([`gemm`]), the direct kernel for tiny per-group GEMMs ([`direct`]),
//! depthwise column strips ([`depthwise`]), tap shifts ([`tap_shift`]) and
//! tap shifts over row segments on Hopper warpgroups ([`rows`]).
//! The host's instance names keep the older words (`bwdd_halo_*`: tap shift).

pub mod depthwise;
pub mod direct;
pub mod gemm;
pub mod rows;
pub mod tap_shift;
pub mod tma;
