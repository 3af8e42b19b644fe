//! Backward-data's kernel families (the device crate's `conv::bwd_data`),
//! each with its fit and its planner: given a [`DataCtx`] (the problem the
//! kernels run, the chosen instance, the stride slices), a planner writes
//! its argument part and returns the launch grid.

pub mod depthwise;
pub mod direct;
pub mod gemm;
pub mod rows;
pub mod tap_shift;
pub mod tma;

use convgrad_types::instance::{Family, Instance};
use convgrad_types::{ConvProblem, TensorDesc, TypeConfig};

/// What a backward-data family's planner is given.
pub(crate) struct DataCtx<'a> {
    /// The problem the kernels run (folded or as given).
    pub p: &'a ConvProblem,
    /// The chosen instance.
    pub inst: &'static Instance,
    /// The device's kernel family and compute units.
    pub family: Family,
    pub compute_units: u32,
    /// Data types.
    pub types: TypeConfig,
    /// Tensors dy, w and dx.
    pub dy: &'a TensorDesc,
    pub w: &'a TensorDesc,
    pub dx: &'a TensorDesc,
    /// Depthwise strips: slice rows per strip asked for.
    pub strip_rows: Option<usize>,
    /// Rows of one stride slice per spatial dim (`ceil(input / stride)`).
    pub slice_rows: [usize; 3],
    /// Stride-residue slices.
    pub slices: usize,
    /// Elements of dx: `G * N * C * input pixels`.
    pub total: u64,
    /// Output tiles of the chosen tile along M and N.
    pub tiles_m: u32,
    pub tiles_n: u32,
}

/// The most threads (and other 32-bit counts) a launch may index: 2^31 - 1.
pub(crate) const LIMIT: u64 = u32::MAX as u64 / 2;
