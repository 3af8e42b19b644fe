//! What a kernel choice is asked: the problem, its tensors and the caller's
//! options. A leaf: the families, the tuning table and the choice read it.

use convgrad_types::instance::Family;
use convgrad_types::{ConvProblem, TensorDesc, TypeConfig};

/// A request for a kernel: the problem, its tensors and what the caller asked.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The problem.
    pub p: &'a ConvProblem,
    /// Data types.
    pub types: TypeConfig,
    /// The device's kernel family.
    pub family: Family,
    /// The device's compute units (the tap-shift preference counts rounds).
    pub compute_units: u32,
    /// Activations: x (bwd-weight) or dx (bwd-data).
    pub x: &'a TensorDesc,
    /// Output gradient.
    pub dy: &'a TensorDesc,
    /// Weights (bwd-data) or weight gradient (bwd-weight).
    pub w: &'a TensorDesc,
    /// An instance forced by name.
    pub forced: Option<&'a str>,
    /// Backward-weight's deterministic split-K (tap shifts are not preferred there).
    pub deterministic: bool,
}
