//! Verification of grouped backward-weight.

use super::{Addrs, Draw, Error, Judged, Outcome, Planned, Tensor, Tensors, check_run, dump_layout};
use crate::check::{Init, Tolerance};
use crate::ops::D_NAMES;
use crate::ops::bwd_weight::{self as op, BwdWeightBuffers, BwdWeightConfig, BwdWeightPlan};
use crate::reference;
use crate::runtime::{Device, Module};
use convgrad_types::epilogue::EpiChain;
use convgrad_types::{ConvProblem, EpilogueOp, TensorRole};

/// One verification case.
#[derive(Clone, Debug)]
pub struct Case {
    /// Problem.
    pub problem: ConvProblem,
    /// Layout, types, epilogue, split-K, instance.
    pub config: BwdWeightConfig,
    /// Seed of the random inputs (x, dy, D get `seed`, `seed + 1`, `seed + 2`).
    pub seed: u64,
    /// Integer or float inputs.
    pub init: Init,
    /// Timed runs after the checked one (0: no timing).
    pub timed_runs: usize,
    /// Keep host copies of the tensors for dumping.
    pub dump: bool,
}

/// Runs `case` on `dev` and compares with the reference.
pub fn run(dev: &Device, module: &Module, case: &Case) -> Result<Outcome, Error> {
    run_with(dev, module, case, None)
}

/// [`run`] with a given split-K workspace (one of its own when `None`): a
/// workspace is kept across calls, which must leave it fit for the next.
pub fn run_with(
    dev: &Device,
    module: &Module,
    case: &Case,
    workspace: Option<&op::SplitKWorkspace>,
) -> Result<Outcome, Error> {
    let plan = op::plan(&case.problem, &case.config, dev.family(), dev.compute_units())?;
    run_planned(dev, module, case, workspace, &plan)
}

/// As [`run_with`], with the plan already made for `case` on `dev` (e.g. by
/// `plan_with_limit`, to run the split of a problem past 2^31 elements on a
/// small one).
pub fn run_planned(
    dev: &Device,
    module: &Module,
    case: &Case,
    workspace: Option<&op::SplitKWorkspace>,
    plan: &BwdWeightPlan,
) -> Result<Outcome, Error> {
    let (p, cfg) = (&case.problem, &case.config);
    let (act, wei) = (cfg.types.act(), cfg.types.wei());
    let own = match workspace {
        Some(_) => None,
        None => op::SplitKWorkspace::for_plan(dev, plan)?,
    };
    let ws = workspace.or(own.as_ref());
    let d_dump = dump_layout(cfg.layout, TensorRole::Weight, p.ndim);
    let ds: Vec<Tensor<'_>> = plan.ds.iter().zip(D_NAMES).map(|(d, name)| Tensor::new(name, d, wei, d_dump.clone())).collect();
    let draw = Draw { seed: case.seed, init: case.init, alias_d0: false, timed_runs: case.timed_runs, dump: case.dump };
    let split_mode = match (plan.k_batches(), cfg.deterministic) {
        (1, _) => "none",
        (_, true) => "deterministic (f32 partials, fixed-order sum)",
        (_, false) => "atomic f32",
    };
    let planned = Planned { instance: plan.main.instance.name, describe: plan.describe(), k_batch: plan.k_batches(), split_mode };
    let inputs = [("x", &plan.x, act, TensorRole::Input), ("dy", &plan.dy, act, TensorRole::Output)];
    let tensors = Tensors::in_layout(cfg.layout, p.ndim, inputs, ("dw", &plan.dw, wei, TensorRole::Weight), ds);
    let execute = |a: Addrs<'_>| {
        let bufs = BwdWeightBuffers { x: a.inputs[0], dy: a.inputs[1], dw: a.output, ds: a.ds };
        // SAFETY: `check_run` passes buffers of this device allocated for
        // `plan`'s spans (dw apart from the inputs), alive until it synchronizes.
        unsafe { op::execute(dev, module, plan, bufs, ws) }
    };
    check_run(dev, &draw, planned, tensors, execute, |[x, dy], ds, dw| judge(plan, cfg, x, dy, ds, dw))
}

/// Judges a weight gradient `dw` (read back from the device) against the
/// float64 reference for inputs `x`, `dy` and the epilogue's `D` tensors
/// `ds` (all in the plan's descriptors), with the tolerance rule for `cfg`'s
/// types and the plan's split-K.
pub fn judge(plan: &BwdWeightPlan, cfg: &BwdWeightConfig, x: &[f64], dy: &[f64], ds: &[&[f64]], dw: &[f64]) -> Judged {
    let p = &plan.problem;
    let chain = EpiChain::from_ops(&[cfg.epilogue]).unwrap_or_default();
    let tol = Tolerance::bwd_weight(cfg.types, p, plan.k_batches() as usize);
    super::judge(tol, &plan.dw, dw, [x, dy], &chain, ds, &plan.ds, |x, dy, acc| {
        reference::bwd_weight(p, x, &plan.x, dy, &plan.dy, acc, &plan.dw)
    })
}

/// Whether an epilogue applies to backward-weight.
pub fn epilogue_supported(e: EpilogueOp) -> bool {
    matches!(e, EpilogueOp::PassThrough | EpilogueOp::Scale(_) | EpilogueOp::Bilinear(..))
}
