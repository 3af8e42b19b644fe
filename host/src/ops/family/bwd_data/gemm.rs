//! Backward-data's slice GEMM ([`Op::BwdData`], the device crate's
//! `conv::bwd_data::gemm`): per group and stride slice a GEMM with
//! `M = N * slice pixels`, `N = C`, reduction `class taps * K`; tiles along
//! grid x, slices along y, groups along z. Any problem fits (edges masked).
//!
//! [`Op::BwdData`]: convgrad_types::instance::Op::BwdData

use super::DataCtx;

/// What the family needs of a problem, in a few words.
pub const NEEDS: &str = "any N, C, K, filter, stride, layout (edges masked)";

/// The grid: tiles, slices, groups (the argument block's GEMM and slice
/// parts are the common ones).
pub(crate) fn plan(c: &DataCtx<'_>) -> [u32; 3] {
    [c.tiles_m * c.tiles_n, c.slices as u32, c.p.g as u32]
}
