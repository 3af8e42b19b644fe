//! Verification of grouped backward-data with its fused multi-D epilogue.

use super::{Error, Outcome, TensorDump, memory_order_dump};
use crate::check::{self, Init, Tolerance};
use crate::ops::bwd_data::{self as op, BwdDataBuffers, BwdDataConfig, DLayout};
use crate::ops::{D_NAMES, OpError};
use crate::reference;
use crate::runtime::{Device, Module};
use convgrad_types::{ConvProblem, TensorDesc, TensorRole};

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
    let p = &case.problem;
    let cfg = &case.config;
    let plan = op::plan(p, cfg, dev.family(), dev.compute_units())?;
    let t = cfg.types.act();
    let n_dx = plan.dx.span() as usize;
    let dy = check::fill_random(case.seed, case.init, t, plan.dy.span() as usize);
    let w = check::fill_random(case.seed.wrapping_add(1), case.init, cfg.types.wei(), plan.w.span() as usize);
    let ds: Vec<Vec<f64>> = plan
        .ds
        .iter()
        .enumerate()
        .map(|(i, d)| check::fill_random(case.seed.wrapping_add(2 + i as u64), case.init, t, d.span() as usize))
        .collect();
    if case.alias_d0 && (ds.is_empty() || plan.ds[0] != plan.dx) {
        return Err("aliasing D0 with dx needs an epilogue that reads a D0 in the `output` layout".into());
    }

    let dy_buf = dev.upload(&check::to_bytes(t, &dy))?;
    let w_buf = dev.upload(&check::to_bytes(cfg.types.wei(), &w))?;
    let dx_init = if case.alias_d0 { check::to_bytes(t, &ds[0]) } else { check::poisoned_bytes(t, n_dx) };
    let dx_buf = dev.upload(&dx_init)?;
    let d_bufs = ds
        .iter()
        .enumerate()
        .filter(|(i, _)| !(case.alias_d0 && *i == 0))
        .map(|(_, d)| dev.upload(&check::to_bytes(t, d)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut d_addrs: Vec<u64> = d_bufs.iter().map(|b| b.device_addr()).collect();
    if case.alias_d0 {
        d_addrs.insert(0, dx_buf.device_addr());
    }
    let bufs = BwdDataBuffers { dy: dy_buf.device_addr(), w: w_buf.device_addr(), dx: dx_buf.device_addr(), ds: &d_addrs };

    op::execute(dev, module, &plan, bufs)?;
    dev.synchronize()?;
    let out_bytes = dx_buf.download()?;
    let out = check::from_bytes(t, &out_bytes);

    let median_ms = if case.timed_runs > 0 {
        let mut times = Vec::with_capacity(case.timed_runs);
        for _ in 0..case.timed_runs {
            let ((), ms) = dev.time(|| {
                op::execute(dev, module, &plan, bufs).map_err(|e| match e {
                    OpError::Runtime(r) => r,
                    other => panic!("plan was already checked: {other}"),
                })
            })?;
            times.push(ms as f64);
        }
        times.sort_by(f64::total_cmp);
        Some(times[times.len() / 2])
    } else {
        None
    };

    // Reference: exact accumulator, and the same pass on |dy|, |w| for the bound.
    let mut acc = vec![0.0; n_dx];
    reference::bwd_data(p, &dy, &plan.dy, &w, &plan.w, &mut acc, &plan.dx);
    let mut abs = vec![0.0; n_dx];
    reference::bwd_data(
        p,
        &reference::abs_values(&dy),
        &plan.dy,
        &reference::abs_values(&w),
        &plan.w,
        &mut abs,
        &plan.dx,
    );
    let dts: Vec<(&[f64], &TensorDesc)> = ds.iter().zip(&plan.ds).map(|(d, dd)| (d.as_slice(), dd)).collect();
    let tol = Tolerance::bwd_data(cfg.types, p);
    let exp = check::expected(&tol, &plan.dx, &acc, Some(&abs), &plan.chain, &dts);
    let report = check::compare(&out, &exp.reference, &exp.bound, &plan.dx);

    let dumps = if case.dump {
        let mut v = Vec::new();
        let l = cfg.layout;
        let mut push = |name: &'static str, letters: String, order: &[usize], desc: &TensorDesc, buf: &[f64], dtype| {
            let (shape, values) = memory_order_dump(buf, desc, order);
            v.push(TensorDump { name, layout: letters, shape, dtype, values });
        };
        let full = |role: TensorRole, l: convgrad_types::ConvLayout| {
            let mut b = [0u8; 6];
            let (order, len) = l.memory_order(role, p.ndim);
            (l.letters(role, p.ndim, &mut b).to_string(), order[..len].to_vec())
        };
        let (dl, dord) = full(TensorRole::Output, l);
        push("dy", dl, &dord, &plan.dy, &dy, t.name());
        let (wl, word) = full(TensorRole::Weight, l);
        push("w", wl, &word, &plan.w, &w, cfg.types.wei().name());
        for (i, d) in ds.iter().enumerate() {
            let (letters, order) = d_dump_layout(cfg.d_layouts.get(i).copied().unwrap_or(DLayout::Output), p, l);
            push(D_NAMES[i], letters, &order, &plan.ds[i], d, t.name());
        }
        let (xl, xord) = full(TensorRole::Input, l);
        push("dx", xl.clone(), &xord, &plan.dx, &out, t.name());
        push("reference", xl, &xord, &plan.dx, &exp.reference, "f64");
        v
    } else {
        Vec::new()
    };

    Ok(Outcome {
        instance: plan.main.instance.name,
        describe: plan.describe(),
        k_batch: 1,
        split_mode: "none",
        report,
        rule: tol.rule_text(),
        median_ms,
        output_bytes: out_bytes,
        dumps,
    })
}

/// Layout letters and memory order (outermost first) of a `D` tensor for dumps:
/// broadcast axes are left out (`G_C` -> `(G, C)`).
fn d_dump_layout(d: DLayout, p: &ConvProblem, family: convgrad_types::ConvLayout) -> (String, Vec<usize>) {
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
        DLayout::Output | DLayout::Full(_) => {
            let l = if let DLayout::Full(l) = d { l } else { family };
            let mut b = [0u8; 6];
            let (order, len) = l.memory_order(TensorRole::Input, p.ndim);
            (l.letters(TensorRole::Input, p.ndim, &mut b).to_string(), order[..len].to_vec())
        }
    }
}
