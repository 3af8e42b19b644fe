//! `cargo xtask tune --op bwd-weight|bwd-data`: measures the kernel choice
//! per shape on the present GPU and writes the tuning table the host crate
//! reads (`convgrad::ops::tuned`; default `host/tuning/<arch>.json`, embedded
//! at the next build).
//!
//! For each shape of the suite (`bench`'s options and suites; fused-epilogue
//! shapes are left out: the table is keyed without the epilogue) it times the
//! hand rules' plan and every instance that applies (planned with it forced:
//! `select::fits` decides), backward-weight's GEMM tiles at several split-K
//! counts too, with the median of `--iters` runs. Where the fastest beats the
//! hand rules by `--min-gain` percent, its result is checked once against
//! the float64 reference (the verify harness) and it becomes the shape's
//! entry; otherwise the hand rules hold and the shape has none. Entries of
//! other shapes already in the file are kept. On the emulator (`--backend
//! emu`, one timed run) the path runs but the times mean nothing, so the
//! table goes to `target/tuning/emu-<arch>.json` unless `--out` says otherwise.
//!
//! The candidates are the host crate's (`convgrad::ops::find::candidates`),
//! the ones runtime find times. `--find` runs runtime find itself on the
//! selected shapes instead and prints its choice and time against the
//! tables' and hand rules' (`compare`).

mod compare;

use crate::bench::{self, Op, Shape, ShapeArgs};
use crate::util;
use anyhow::{Context, Result};
use clap::Parser;
use convgrad::check::Init;
use convgrad::ops::bwd_data::{self as data_op, BwdDataPlan};
use convgrad::ops::bwd_weight::{self as weight_op, BwdWeightConfig, BwdWeightPlan, SplitK};
use convgrad::ops::find;
use convgrad::ops::tuned::{self, Entry, Key, Operation, Table};
use convgrad::runtime::{Device, Module};
use convgrad::verify;
use convgrad_types::TypeConfig;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(name = "cargo xtask tune", about = "Measure the kernel choice per shape and write the tuning table")]
struct TuneArgs {
    #[command(flatten)]
    common: ShapeArgs,
    /// Tune only the first N shapes (per dtype).
    #[arg(long)]
    limit: Option<usize>,
    /// Split-K counts tried on backward-weight's GEMM tiles, besides the automatic one.
    #[arg(long, default_value = "1,2,4,8,16,32,64,128", value_delimiter = ',')]
    splits: Vec<u32>,
    /// Tune backward-weight's deterministic split-K.
    #[arg(long)]
    deterministic: bool,
    /// Percent the fastest must beat the hand rules by to become an entry (noise margin).
    #[arg(long, default_value_t = 2.0)]
    min_gain: f64,
    /// The table file to update (default: host/tuning/<arch>.json; emulator: target/tuning/emu-<arch>.json).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Instead of tuning: run runtime find (`PlanCache` with `FindMode::Measure`)
    /// on the selected shapes and print the tables' and hand rules' choice
    /// and time against find's (both timed again here, alternately).
    #[arg(long)]
    find: bool,
    /// With --find: the find cache file to use and update (default: none, every shape measured).
    #[arg(long, requires = "find")]
    find_cache: Option<PathBuf>,
}

/// One way to run a shape: a plan, what it runs, and its table key.
struct Way {
    /// The instance, and the split-K count asked for (`None`: automatic).
    instance: &'static str,
    split: Option<u32>,
    /// What decides the launch besides the instance: (k-batches, reduction per batch).
    launch: (u32, u32),
    key: Option<Key>,
    plan: Planned,
}

enum Planned {
    Weight(BwdWeightPlan),
    Data(BwdDataPlan),
}

impl Way {
    /// The kernel and its split, in a few words.
    fn label(&self) -> String {
        match self.launch.0 {
            0 | 1 => self.instance.to_string(),
            kb => format!("{} kb={kb}", self.instance),
        }
    }
}

/// What one run of the tuner works on.
struct Run<'a> {
    a: &'a TuneArgs,
    op: Op,
    dev: &'a Device,
    module: &'a Module,
    iters: usize,
}

impl Run<'_> {
    fn weight_config(&self, t: TypeConfig, instance: Option<&str>, split: Option<u32>) -> BwdWeightConfig {
        let split_k = split.map_or(SplitK::Auto, SplitK::Fixed);
        BwdWeightConfig { deterministic: self.a.deterministic, ..bench::weight_config(t, instance, split_k) }
    }

    /// The plan of shape `s` in types `t` with `instance` forced (`None`: the hand rules).
    fn plan(&self, s: &Shape, t: TypeConfig, instance: Option<&str>, split: Option<u32>) -> Result<Way> {
        let (family, cus) = (self.dev.family(), self.dev.compute_units());
        let (name, launch, plan) = match self.op {
            Op::BwdWeight => {
                let plan = weight_op::plan(&s.p, &self.weight_config(t, instance, split), family, cus)?;
                (plan.main.instance.name, (plan.k_batch, plan.args_template.per_batch()), Planned::Weight(plan))
            }
            Op::BwdData => {
                let plan = data_op::plan(&s.p, &bench::data_config(s, t, instance), family, cus)?;
                (plan.main.instance.name, (0, 0), Planned::Data(plan))
            }
        };
        // The selection just made tells the key (of the folded problem where the plan folds).
        Ok(Way { instance: name, split, launch, key: tuned::last_key(), plan })
    }

    /// Random inputs for shape `s` in types `t`, made once for all its ways (from the hand rules' plan).
    fn inputs(&self, hand: &Way, t: TypeConfig) -> Result<bench::Inputs> {
        match &hand.plan {
            Planned::Weight(p) => bench::Inputs::weight(self.dev, p, t),
            Planned::Data(p) => bench::Inputs::data(self.dev, p, t),
        }
    }

    fn time(&self, w: &Way, inputs: &bench::Inputs) -> Result<f64> {
        match &w.plan {
            Planned::Weight(p) => bench::time_weight_on(self.dev, self.module, p, inputs, self.iters),
            Planned::Data(p) => bench::time_data_on(self.dev, self.module, p, inputs, self.iters),
        }
    }

    /// Whether `w` computes shape `s` right (once, against the float64 reference).
    fn check(&self, s: &Shape, t: TypeConfig, w: &Way) -> Result<bool> {
        let (dev, module, problem) = (self.dev, self.module, s.p);
        let passed = match self.op {
            Op::BwdWeight => {
                let config = self.weight_config(t, Some(w.instance), w.split);
                let case = verify::bwd_weight::Case { problem, config, seed: 1, init: Init::Float, timed_runs: 0, dump: false };
                verify::bwd_weight::run(dev, module, &case)
            }
            Op::BwdData => {
                let config = bench::data_config(s, t, Some(w.instance));
                let case = verify::bwd_data::Case {
                    problem,
                    config,
                    seed: 1,
                    init: Init::Float,
                    alias_d0: false,
                    timed_runs: 0,
                    dump: false,
                };
                verify::bwd_data::run(dev, module, &case)
            }
        };
        Ok(passed.map_err(|e| anyhow::anyhow!("{e}"))?.passed())
    }

    /// Every way to run `s` that the table could name under the key of the
    /// hand rules' plan `hand`, that one first; one per distinct launch.
    fn ways(&self, s: &Shape, t: TypeConfig, hand: Way) -> Vec<Way> {
        let op = if self.op == Op::BwdWeight { Operation::BwdWeight } else { Operation::BwdData };
        let mut ways = vec![hand];
        // The enumeration runtime find uses: every instance of the operation,
        // types and family; the GEMM tiles also at each split count.
        for c in find::candidates(op, t, self.dev.family(), &self.a.splits) {
            // Instances that do not fit are refused; one that runs unfolded
            // where the hand rules fold has a key the lookup never sees.
            let Ok(w) = self.plan(s, t, Some(c.instance.name), c.split) else { continue };
            let seen = ways.iter().any(|o| o.instance == w.instance && o.launch == w.launch);
            if w.key == ways[0].key && !seen {
                ways.push(w);
            }
        }
        ways
    }

    /// Tunes one shape: prints its line, returns its key and its entry (if
    /// the hand rules lose).
    fn shape(&self, s: &Shape, t: TypeConfig) -> Result<Option<(Key, Option<Entry>)>> {
        let hand = self.plan(s, t, None, None)?;
        let Some(key) = hand.key else {
            crate::progress::println(format_args!("{:<44} {:>5} no table key (tensors not packed in a layout family)", s.name, t.name()));
            return Ok(None);
        };
        let inputs = self.inputs(&hand, t)?;
        let ways = self.ways(s, t, hand);
        log::debug!("tune {} {}: {} way(s): {}", s.name, t.name(), ways.len(), ways.iter().map(Way::label).collect::<Vec<_>>().join(", "));
        // Two rounds, the second in reverse order, each way keeping its
        // faster median: clock and cache drift over a round favours no way.
        let mut best_ms = vec![f64::INFINITY; ways.len()];
        for round in 0..2 {
            for i in 0..ways.len() {
                let i = if round == 0 { i } else { ways.len() - 1 - i };
                let ms = self.time(&ways[i], &inputs).with_context(|| format!("timing {}", ways[i].label()))?;
                best_ms[i] = best_ms[i].min(ms);
            }
        }
        let mut timed: Vec<(f64, Way)> = best_ms.into_iter().zip(ways).collect();
        let (hand_ms, hand_label) = (timed[0].0, timed[0].1.label());
        let hand_launch = (timed[0].1.instance, timed[0].1.launch);
        timed.sort_by(|a, b| a.0.total_cmp(&b.0));
        // The fastest that beats the hand rules and computes the right result
        // (the hand rules' own plan is checked by the test suites, not here).
        let beats = |ms: f64, w: &Way| (w.instance, w.launch) != hand_launch && ms * (1.0 + self.a.min_gain / 100.0) < hand_ms;
        let mut best = None;
        for (ms, w) in &timed {
            if !beats(*ms, w) {
                break;
            }
            if self.check(s, t, w)? {
                best = Some((*ms, w));
                break;
            }
            crate::progress::println(format_args!("{:<44} {:>5} {} FAILED the reference check: left out", s.name, t.name(), w.label()));
        }
        let (ms, w) = best.unwrap_or_else(|| {
            let hand = timed.iter().find(|(_, w)| (w.instance, w.launch) == hand_launch).expect("the hand rules' way is timed");
            (hand.0, &hand.1)
        });
        let wins = beats(ms, w);
        crate::progress::println(format_args!(
            "{:<44} {:>5} best {:<40} {ms:>9.4} ms ; hand rules {:<40} {hand_ms:>9.4} ms ; {:.3}x{}",
            s.name,
            t.name(),
            w.label(),
            hand_label,
            hand_ms / ms,
            if wins { " -> table" } else { "" }
        ));
        let entry = wins.then(|| Entry { ms: Some(ms), hand_ms: Some(hand_ms), ..key.entry(self.dev.arch(), w.instance, w.split) });
        Ok(Some((key, entry)))
    }
}

/// Writes `table` to `out`, entries in a stable order.
fn save(table: &mut Table, out: &std::path::Path, dev: &Device, arch: &str) -> Result<()> {
    table.entries.sort_by_key(|e| (e.arch.clone(), e.op.name(), e.types.clone(), e.layout.clone(), e.deterministic, e.problem.clone()));
    table.device = format!("{} ({arch}, {} compute units)", dev.name(), dev.compute_units());
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(out, table.to_json()).with_context(|| format!("writing {}", out.display()))
}

/// Entry point of `cargo xtask tune`.
pub fn run(args: &[String]) -> Result<()> {
    let a = TuneArgs::parse_from(std::iter::once("tune".to_string()).chain(args.iter().cloned()));
    for n in &a.splits {
        crate::options::parse_split_count("--splits", &n.to_string())?;
    }
    let session = a.common.open()?;
    if a.find {
        return compare::run(&a.common, &session, a.limit, a.deterministic, &a.splits, a.find_cache.clone());
    }
    let (dev, arch) = (&session.dev, session.dev.arch().to_string());
    let out = a.out.clone().unwrap_or_else(|| match session.emu {
        true => util::workspace_root().join(format!("target/tuning/emu-{arch}.json")),
        false => util::workspace_root().join(format!("host/tuning/{arch}.json")),
    });
    // Keep the file's other entries; a file that does not load is not overwritten.
    let mut table = if out.exists() { Table::load(&out)? } else { Table::default() };
    // The hand rules are the baseline: no table while tuning.
    tuned::set_override(Some(&Table::default()))?;
    let run = Run { a: &a, op: session.op, dev, module: &session.module, iters: session.iters };
    let mut per_type = std::collections::HashMap::new();
    let (mut shapes, mut won) = (0, 0);
    let selected: Vec<_> = a
        .common
        .selected(&session)?
        .into_iter()
        .filter(|(s, t)| {
            let n = per_type.entry(*t).or_insert(0usize);
            let keep = !s.fused && a.limit.is_none_or(|l| *n < l);
            *n += keep as usize;
            keep
        })
        .collect();
    let bar = crate::progress::bar(selected.len(), "tune");
    for (s, t) in selected {
        bar.set_message(format!("{} {}", s.name, t.name()));
        let tuned = run.shape(s, t).with_context(|| format!("{} {} {}", session.op.name(), s.name, t.name()));
        bar.inc(1);
        let tuned = tuned?;
        let Some((key, entry)) = tuned else { continue };
        // The new measurement replaces this arch's entry for the key, or drops it where the hand rules won.
        table.entries.retain(|e| !(e.arch == arch && key.matches(e)));
        shapes += 1;
        won += entry.is_some() as usize;
        table.entries.extend(entry);
        // Written after every shape: a run stopped by a time limit keeps what it measured.
        save(&mut table, &out, dev, &arch)?;
    }
    bar.finish_and_clear();
    tuned::set_override(None)?;
    save(&mut table, &out, dev, &arch)?;
    println!(
        "{shapes} shapes tuned, {won} where the hand rules lose; {} entries in {}",
        table.entries.len(),
        out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use convgrad::ops::tuned::{Operation, Table};

    /// The whole path on the emulator, one shape per operation: plans, times,
    /// checks and writes a table the host crate loads.
    #[test]
    fn tunes_on_the_emulator() {
        let dir = std::env::temp_dir().join(format!("convgrad-tune-test-{}", std::process::id()));
        let out = dir.join("table.json");
        let weight_entries = |t: &Table| t.entries.iter().filter(|e| e.op == Operation::BwdWeight).count();
        let mut after = vec![];
        for op in ["bwd-weight", "bwd-data"] {
            let args = ["--backend", "emu", "--op", op, "--dtypes", "f16", "--limit", "1", "--splits", "2", "--min-gain=-100"];
            let mut args: Vec<String> = args.map(String::from).to_vec();
            args.extend(["--out".into(), out.display().to_string()]);
            super::run(&args).unwrap();
            after.push(Table::load(&out).unwrap());
        }
        // Tuning one operation keeps the other's entries.
        assert_eq!(weight_entries(&after[0]), weight_entries(&after[1]));
        assert!(after[1].device.contains("gfx942"), "{}", after[1].device);
        assert!(after[1].entries.iter().all(|e| e.arch == "gfx942" && e.types == "f16"), "{:?}", after[1]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--find` on the emulator: runtime find on one shape per operation,
    /// its choice stored in the cache file named.
    #[test]
    fn find_compares_on_the_emulator() {
        let dir = std::env::temp_dir().join(format!("convgrad-tune-find-test-{}", std::process::id()));
        let file = dir.join("kernels.json");
        for op in ["bwd-weight", "bwd-data"] {
            let args = ["--backend", "emu", "--op", op, "--dtypes", "f16", "--limit", "1", "--splits", "2", "--find"];
            let mut args: Vec<String> = args.map(String::from).to_vec();
            args.extend(["--find-cache".into(), file.display().to_string()]);
            super::run(&args).unwrap();
        }
        let f = convgrad::ops::find_file::FindFile::load(&file).expect("find wrote its cache file");
        let ops: Vec<_> = f.sections.iter().flat_map(|s| s.entries.iter().map(|e| e.op)).collect();
        assert_eq!(ops, [Operation::BwdWeight, Operation::BwdData]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
