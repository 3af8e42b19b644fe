//! Verification of grouped backward-weight.

use super::{Error, Outcome, TensorDump, memory_order_dump};
use crate::check::{self, Init, Tolerance};
use crate::ops::bwd_weight::{self as op, BwdWeightBuffers, BwdWeightConfig};
use crate::reference;
use crate::runtime::{Device, Module};
use convgrad_types::epilogue::EpiChain;
use convgrad_types::{ConvProblem, EpilogueOp, TensorDesc, TensorRole};

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
    let p = &case.problem;
    let cfg = &case.config;
    let plan = op::plan(p, cfg, dev.family(), dev.compute_units())?;
    let (act, wei) = (cfg.types.act(), cfg.types.wei());
    let n_x = plan.x.span() as usize;
    let n_dy = plan.dy.span() as usize;
    let n_dw = plan.dw.span() as usize;
    let x = check::fill_random(case.seed, case.init, act, n_x);
    let dy = check::fill_random(case.seed.wrapping_add(1), case.init, act, n_dy);
    let ds: Vec<Vec<f64>> = (0..plan.ds.len())
        .map(|i| check::fill_random(case.seed.wrapping_add(2 + i as u64), case.init, wei, n_dw))
        .collect();

    let dx_buf = dev.upload(&check::to_bytes(act, &x))?;
    let dy_buf = dev.upload(&check::to_bytes(act, &dy))?;
    let d_bufs = ds.iter().map(|d| dev.upload(&check::to_bytes(wei, d))).collect::<Result<Vec<_>, _>>()?;
    let dw_buf = dev.upload(&check::poisoned_bytes(wei, n_dw))?;
    let own = match workspace {
        Some(_) => None,
        None => op::SplitKWorkspace::for_plan(dev, &plan)?,
    };
    let ws = workspace.or(own.as_ref());
    let d_addrs: Vec<u64> = d_bufs.iter().map(|b| b.device_addr()).collect();
    let bufs = BwdWeightBuffers { x: dx_buf.device_addr(), dy: dy_buf.device_addr(), dw: dw_buf.device_addr(), ds: &d_addrs };

    op::execute(dev, module, &plan, bufs, ws)?;
    dev.synchronize()?;
    let out_bytes = dw_buf.download()?;
    let out = check::from_bytes(wei, &out_bytes);

    let median_ms = if case.timed_runs > 0 {
        let mut t = Vec::with_capacity(case.timed_runs);
        for _ in 0..case.timed_runs {
            let ((), ms) = dev.time(|| {
                op::execute(dev, module, &plan, bufs, ws).map_err(|e| match e {
                    op::OpError::Runtime(r) => r,
                    other => panic!("plan was already checked: {other}"),
                })
            })?;
            t.push(ms as f64);
        }
        t.sort_by(f64::total_cmp);
        Some(t[t.len() / 2])
    } else {
        None
    };

    // Reference: exact accumulator, and the same pass on |x|, |dy| for the bound.
    let mut acc = vec![0.0; n_dw];
    reference::bwd_weight(p, &x, &plan.x, &dy, &plan.dy, &mut acc, &plan.dw);
    let mut abs = vec![0.0; n_dw];
    reference::bwd_weight(
        p,
        &reference::abs_values(&x),
        &plan.x,
        &reference::abs_values(&dy),
        &plan.dy,
        &mut abs,
        &plan.dw,
    );
    let chain = EpiChain::from_ops(&[cfg.epilogue]).unwrap_or_default();
    let dts: Vec<(&[f64], &TensorDesc)> = ds.iter().zip(&plan.ds).map(|(d, dd)| (d.as_slice(), dd)).collect();
    let tol = Tolerance::bwd_weight(cfg.types, p, plan.k_batch as usize);
    let exp = check::expected(&tol, &plan.dw, &acc, Some(&abs), &chain, &dts);
    let report = check::compare(&out, &exp.reference, &exp.bound, &plan.dw);

    let dumps = if case.dump {
        let l = cfg.layout;
        let mut v = Vec::new();
        let mut push = |name: &'static str, role: TensorRole, desc: &TensorDesc, buf: &[f64], dtype: &'static str| {
            let mut letters = [0u8; 6];
            let (order, len) = l.memory_order(role, p.ndim);
            let (shape, values) = memory_order_dump(buf, desc, &order[..len]);
            v.push(TensorDump { name, layout: l.letters(role, p.ndim, &mut letters).to_string(), shape, dtype, values });
        };
        push("x", TensorRole::Input, &plan.x, &x, act.name());
        push("dy", TensorRole::Output, &plan.dy, &dy, act.name());
        for (i, d) in ds.iter().enumerate() {
            const NAMES: [&str; 4] = ["d0", "d1", "d2", "d3"];
            push(NAMES[i], TensorRole::Weight, &plan.dw, d, wei.name());
        }
        push("dw", TensorRole::Weight, &plan.dw, &out, wei.name());
        push("reference", TensorRole::Weight, &plan.dw, &exp.reference, "f64");
        v
    } else {
        Vec::new()
    };

    Ok(Outcome {
        instance: plan.main.instance.name,
        describe: plan.describe(),
        k_batch: plan.k_batch,
        split_mode: match (plan.k_batch, cfg.deterministic) {
            (1, _) => "none",
            (_, true) => "deterministic (f32 partials, fixed-order sum)",
            (_, false) => "atomic f32",
        },
        report,
        rule: tol.rule_text(),
        median_ms,
        output_bytes: out_bytes,
        dumps,
    })
}

/// Whether an epilogue applies to backward-weight.
pub fn epilogue_supported(e: EpilogueOp) -> bool {
    matches!(e, EpilogueOp::PassThrough | EpilogueOp::Scale(_) | EpilogueOp::Bilinear(..))
}
