//! Verification harness: run an operation on a device with fresh random
//! inputs and NaN-poisoned outputs, and judge the result against the float64
//! CPU reference with the written-down tolerance rule ([`crate::check::tolerance`]).
//!
//! Used by `cargo xtask verify` and by the test suites, so both exercise the
//! same path.

pub mod bwd_data;
pub mod bwd_weight;

use crate::check::ErrorReport;

/// A host-side copy of one tensor, for `--dump`.
#[derive(Clone, Debug)]
pub struct TensorDump {
    /// File stem, e.g. `"x"`, `"dw"`, `"reference"`.
    pub name: &'static str,
    /// Layout letters in memory order, e.g. `"NHWGC"`.
    pub layout: String,
    /// Shape in the order of the layout's letters.
    pub shape: Vec<usize>,
    /// Storage type name (`f32`, `f16`, `bf16`, or `f64` for the reference).
    pub dtype: &'static str,
    /// Values in memory order (packed), widened to f64 exactly.
    pub values: Vec<f64>,
}

/// What one verification run found.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Kernel instance that ran.
    pub instance: &'static str,
    /// What ran, in one line (`BwdWeightPlan::describe` / `BwdDataPlan::describe`).
    pub describe: String,
    /// k-batches of split-K.
    pub k_batch: u32,
    /// Split-K mode in words.
    pub split_mode: &'static str,
    /// Comparison against the reference.
    pub report: ErrorReport,
    /// The tolerance rule, as text.
    pub rule: String,
    /// Median kernel time in ms over the timed runs, if timing was asked for.
    pub median_ms: Option<f64>,
    /// Raw device output bytes (bitwise determinism checks).
    pub output_bytes: Vec<u8>,
    /// Tensors for `--dump` (empty unless asked for).
    pub dumps: Vec<TensorDump>,
}

impl Outcome {
    /// Whether the result passed the rule.
    pub fn passed(&self) -> bool {
        self.report.passed()
    }
}

/// Errors of a verification run (not a failed comparison: that is an [`Outcome`]).
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Reorders a canonical-strided buffer into the memory order of `layout`
/// letters, returning (shape, values) for dumping.
pub(crate) fn memory_order_dump(
    buf: &[f64],
    desc: &convgrad_types::TensorDesc,
    order: &[usize],
) -> (Vec<usize>, Vec<f64>) {
    let shape: Vec<usize> = order.iter().map(|&a| desc.lengths[a]).collect();
    let total: usize = shape.iter().product();
    let mut out = Vec::with_capacity(total);
    let mut idx = vec![0usize; order.len()];
    for _ in 0..total {
        let mut c = [0usize; 6];
        for (k, &a) in order.iter().enumerate() {
            c[a] = idx[k];
        }
        out.push(buf[desc.offset(c)]);
        for k in (0..idx.len()).rev() {
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    (shape, out)
}
