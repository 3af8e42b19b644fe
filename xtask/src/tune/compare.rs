//! `cargo xtask tune --find`: runtime find (the host crate's `PlanCache` in
//! `FindMode::Measure`) on the selected shapes, against the tuning tables'
//! and hand rules' choice. Both plans are timed again here (the bench's
//! timer, alternately, each keeping its faster median), so the line says
//! what find's choice is worth, not what find measured.

use crate::bench::{self, Op, Session, ShapeArgs};
use anyhow::{Context, Result};
use convgrad::ops::bwd_weight::{BwdWeightConfig, SplitK};
use convgrad::ops::{CacheFile, FindMode, FindOptions, PlanCache};
use convgrad_types::{ConvLayout, TensorDesc, TensorRole};
use std::path::PathBuf;

/// A plan's kernel and split, in a few words.
fn label(instance: &str, k_batch: u32) -> String {
    if k_batch > 1 { format!("{instance} kb={k_batch}") } else { instance.to_string() }
}

/// Runs find on the selected shapes (the first `limit` per dtype, fused ones left out) and prints the comparison.
pub(super) fn run(
    common: &ShapeArgs,
    session: &Session,
    limit: Option<usize>,
    deterministic: bool,
    splits: &[u32],
    cache: Option<PathBuf>,
) -> Result<()> {
    let dev = &session.dev;
    let file = cache.map_or(CacheFile::Off, CacheFile::Path);
    let found = PlanCache::with_find(FindOptions { mode: FindMode::Measure, file, splits: splits.to_vec(), ..FindOptions::default() });
    let hand = PlanCache::with_find(FindOptions::default());
    let mut per_type = std::collections::HashMap::new();
    let mut ratios = vec![];
    for (s, t) in common.selected(session)? {
        let n = per_type.entry(t).or_insert(0usize);
        if s.fused || limit.is_some_and(|l| *n >= l) {
            continue;
        }
        *n += 1;
        let d = |r| TensorDesc::packed(&s.p, ConvLayout::NhwgcGkyxcNhwgk, r);
        let (x, w, y) = (d(TensorRole::Input), d(TensorRole::Weight), d(TensorRole::Output));
        let what = || format!("{} {} {}", session.op.name(), s.name, t.name());
        let start = std::time::Instant::now();
        let (labels, ms) = match session.op {
            Op::BwdWeight => {
                let cfg = BwdWeightConfig { deterministic, ..bench::weight_config(t, None, SplitK::Auto) };
                let h = hand.bwd_weight(dev, &s.p, &cfg, x, w, y).with_context(what)?;
                let f = found.bwd_weight(dev, &s.p, &cfg, x, w, y).with_context(what)?;
                let inputs = bench::Inputs::weight(dev, h.plan(), t)?;
                let plans = [h.plan(), f.plan()];
                let labels = plans.map(|p| label(p.main.instance.name, p.k_batch));
                (labels, best_of_two(|i| bench::time_weight_on(dev, &session.module, plans[i], &inputs, session.iters))?)
            }
            Op::BwdData => {
                let cfg = bench::data_config(s, t, None);
                let h = hand.bwd_data(dev, &s.p, &cfg, y, w, x).with_context(what)?;
                let f = found.bwd_data(dev, &s.p, &cfg, y, w, x).with_context(what)?;
                let inputs = bench::Inputs::data(dev, h.plan(), t)?;
                let plans = [h.plan(), f.plan()];
                let labels = plans.map(|p| label(p.main.instance.name, 0));
                (labels, best_of_two(|i| bench::time_data_on(dev, &session.module, plans[i], &inputs, session.iters))?)
            }
        };
        ratios.push(ms[0] / ms[1]);
        crate::progress::println(format_args!(
            "{:<44} {:>5} hand {:<40} {:>9.4} ms ; find {:<40} {:>9.4} ms ; {:.3}x (find took {:.1} s)",
            s.name,
            t.name(),
            labels[0],
            ms[0],
            labels[1],
            ms[1],
            ms[0] / ms[1],
            start.elapsed().as_secs_f64()
        ));
    }
    let (timed, measured) = found.find_counts();
    let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len().max(1) as f64).exp();
    println!(
        "{} shapes; find measured {measured} ({timed} candidate timings); hand / find time geomean {geo:.3}x, worst {:.3}x",
        ratios.len(),
        ratios.iter().copied().fold(f64::INFINITY, f64::min)
    );
    Ok(())
}

/// Times plans 0 and 1 in two rounds (the second in reverse order), each keeping its faster time.
fn best_of_two(mut time: impl FnMut(usize) -> Result<f64>) -> Result<[f64; 2]> {
    let mut best = [f64::INFINITY; 2];
    for i in [0, 1, 1, 0] {
        best[i] = best[i].min(time(i)?);
    }
    Ok(best)
}
