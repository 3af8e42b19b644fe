//! Backward-weight's kernel families (the device crate's
//! `conv::bwd_weight`), each with its fit and its planner: given a
//! [`WeightCtx`] (the problem the kernels run, the chosen instance, the
//! GEMM sizes), a planner writes its k-batches and argument part and
//! returns the launch's geometry ([`WeightLaunch`]).

pub mod depthwise;
pub mod direct;
pub mod gemm;
pub mod tap_shift;
pub mod tma;
pub mod unfold;

use crate::ops::error::OpError;
use crate::ops::split::SplitK;
use convgrad_types::instance::{Family, Instance};
use convgrad_types::{ConvProblem, DescError, TensorDesc, TypeConfig};

/// What a backward-weight family's planner is given.
pub(crate) struct WeightCtx<'a> {
    /// The problem the kernels run (folded or unfolded, or as given).
    pub p: &'a ConvProblem,
    /// The chosen instance.
    pub inst: &'static Instance,
    /// The device's kernel family and compute units.
    pub family: Family,
    pub compute_units: u32,
    /// Data types.
    pub types: TypeConfig,
    /// Tensors x, dw and dy.
    pub x: &'a TensorDesc,
    pub dw: &'a TensorDesc,
    pub dy: &'a TensorDesc,
    /// The split asked for (or the tuning table's).
    pub split_k: SplitK,
    /// Deterministic split-K (per-batch partials).
    pub deterministic: bool,
    /// The GEMM per group: `M = K`, `N = C * taps`, reduction `N * output pixels`.
    pub gm: u64,
    pub gn: u64,
    pub gk: u64,
    /// Output tiles of the chosen tile along M and N.
    pub tiles_m: u32,
    pub tiles_n: u32,
}

impl WeightCtx<'_> {
    /// Weight elements: `G * M * N` (the partials of one k-batch).
    pub fn weights(&self) -> u64 {
        self.p.g as u64 * self.gm * self.gn
    }
}

/// A family's launch: its k-batches (grid z, or a factor of it), the grid,
/// and the split-K arrival counters it needs (one per output tile).
pub(crate) struct WeightLaunch {
    pub k_batch: u32,
    pub grid: [u32; 3],
    pub counters: usize,
}

/// Refuses a split whose partials (`weights` per k-batch) pass 32-bit offsets.
pub(crate) fn check_partials(weights: u64, k_batch: u32) -> Result<(), OpError> {
    if k_batch > 1 && weights * k_batch as u64 > u32::MAX as u64 {
        return Err(OpError::Desc(DescError::TooLarge {
            field: "split-K workspace (k_batch * G * K * C * filter)",
            value: weights * k_batch as u64,
            max: u32::MAX as u64,
        }));
    }
    Ok(())
}
