//! Verification of grouped backward-data with its fused multi-D epilogue.

use super::{Addrs, DumpLayout, Draw, Error, Judged, Outcome, Planned, Tensor, Tensors, check_run, dump_layout};
use crate::check::{Init, Tolerance};
use crate::ops::D_NAMES;
use crate::ops::bwd_data::{self as op, BwdDataBuffers, BwdDataConfig, BwdDataPlan, DLayout};
use crate::reference;
use crate::runtime::{Device, Module};
use convgrad_types::{ConvProblem, TensorRole};

/// One verification case.
#[derive(Clone, Debug)]
pub struct Case {
    /// Problem.
    pub problem: ConvProblem,
    /// Layout, types, epilogue, D layouts, instance.
    pub config: BwdDataConfig,
    /// Seed of the random inputs (dy, w, D_i get `seed`, `seed + 1`, `seed + 2 + i`).
    pub seed: u64,
    /// Integer or float inputs.
    pub init: Init,
    /// `D0` is `dx` itself (in-place accumulation): `dx` starts with `D0`'s
    /// random values instead of NaN, and the epilogue reads them.
    pub alias_d0: bool,
    /// Timed runs after the checked one (0: no timing).
    pub timed_runs: usize,
    /// Keep host copies of the tensors for dumping.
    pub dump: bool,
}

/// Runs `case` on `dev` and compares with the reference.
pub fn run(dev: &Device, module: &Module, case: &Case) -> Result<Outcome, Error> {
    let plan = op::plan(&case.problem, &case.config, dev.family(), dev.compute_units())?;
    run_planned(dev, module, case, &plan)
}

/// As [`run`], with the plan already made for `case` on `dev` (callers
/// that also report what the plan says plan once).
pub fn run_planned(dev: &Device, module: &Module, case: &Case, plan: &op::BwdDataPlan) -> Result<Outcome, Error> {
    let p = &case.problem;
    let cfg = &case.config;
    let (act, wei) = (cfg.types.act(), cfg.types.wei());
    let l = cfg.layout;
    let ds: Vec<Tensor<'_>> = (plan.ds.iter().zip(D_NAMES).enumerate())
        .map(|(i, (d, name))| {
            Tensor::new(name, d, act, d_dump_layout(cfg.d_layouts.get(i).copied().unwrap_or(DLayout::Output), p, l))
        })
        .collect();
    let draw = Draw { seed: case.seed, init: case.init, alias_d0: case.alias_d0, timed_runs: case.timed_runs, dump: case.dump };
    let planned = Planned { instance: plan.main.instance.name, describe: plan.describe(), k_batch: 1, split_mode: "none" };
    let inputs = [("dy", &plan.dy, act, TensorRole::Output), ("w", &plan.w, wei, TensorRole::Weight)];
    let tensors = Tensors::in_layout(l, p.ndim, inputs, ("dx", &plan.dx, act, TensorRole::Input), ds);
    // The channel-packed copies' workspace, poisoned (0xff bytes: NaN) so
    // that a padding element the copy does not write shows in dx.
    let ws = match plan.workspace_bytes() {
        0 => None,
        n => {
            let b = dev.alloc::<u8>(n)?;
            b.fill_bytes(0xff)?;
            Some(b)
        }
    };
    let execute = |a: Addrs<'_>| {
        let workspace = ws.as_ref().map_or(0, |b| b.device_addr());
        let bufs = BwdDataBuffers { dy: a.inputs[0], w: a.inputs[1], dx: a.output, ds: a.ds, workspace };
        // SAFETY: `check_run` passes buffers of this device allocated for
        // `plan`'s spans (dx apart from the inputs, D0 = dx only when aliased
        // in the output layout), alive until it synchronizes.
        unsafe { op::execute(dev, module, plan, bufs) }
    };
    check_run(dev, &draw, planned, tensors, execute, |[dy, w], ds, dx| judge(plan, cfg, dy, w, ds, dx))
}

/// Judges an input gradient `dx` (read back from the device) against the
/// float64 reference for inputs `dy`, `w` and the epilogue's `D` tensors `ds`
/// (all in the plan's descriptors; a `D0` that aliases `dx` is passed as its
/// values before the run), with the tolerance rule for `cfg`'s types.
pub fn judge(plan: &BwdDataPlan, cfg: &BwdDataConfig, dy: &[f64], w: &[f64], ds: &[&[f64]], dx: &[f64]) -> Judged {
    let p = &plan.problem;
    let tol = Tolerance::bwd_data(cfg.types, p);
    super::judge(tol, &plan.dx, dx, [dy, w], &plan.chain, ds, &plan.ds, |dy, w, acc| {
        reference::bwd_data(p, dy, &plan.dy, w, &plan.w, acc, &plan.dx)
    })
}

/// Layout letters and memory order (outermost first) of a `D` tensor for dumps:
/// broadcast axes are left out (`G_C` -> `(G, C)`).
fn d_dump_layout(d: DLayout, p: &ConvProblem, family: convgrad_types::ConvLayout) -> DumpLayout {
    let spatial = 6 - p.ndim..6;
    let sp_letters = &"DHW"[3 - p.ndim..];
    match d {
        DLayout::PerChannel => ("GC".into(), vec![0, 2]),
        DLayout::PerPixel => {
            let mut order = vec![1];
            order.extend(spatial);
            order.push(0);
            (format!("N{sp_letters}G"), order)
        }
        DLayout::Output => dump_layout(family, TensorRole::Input, p.ndim),
        DLayout::Full(l) => dump_layout(l, TensorRole::Input, p.ndim),
    }
}
