//! Runtime find (#39) on the emulator: the timings are CPU time there, which
//! says nothing of the kernels but exercises the mechanism: measured once,
//! stored in the file, reused by a fresh `PlanCache` (the next process)
//! without timing anything; corrupt files and stale entries ignored; `off`
//! writes nothing.

use convgrad::ops::bwd_data::BwdDataConfig;
use convgrad::ops::bwd_weight::BwdWeightConfig;
use convgrad::ops::find::{self, Candidate};
use convgrad::ops::find_file::{FindFile, Section, Setup};
use convgrad::ops::tuned::{Entry, Operation};
use convgrad::ops::{CacheFile, FindMode, FindOptions, PlanCache};
use convgrad::runtime::{Backend, Device, EmuArch};
use convgrad::types::{ConvLayout, ConvProblem, TensorDesc, TensorRole, TypeConfig};
use std::path::{Path, PathBuf};

fn device() -> Device {
    Device::shared(Backend::Emulator(EmuArch::Gfx942), 0).expect("emulator")
}

/// Two groups of 8 -> 8 channels, 3x3, 6x6, batch 1: small enough to emulate every candidate.
fn problem() -> ConvProblem {
    ConvProblem::from_ck_args(&[2, 2, 1, 8, 8, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1]).unwrap()
}

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("convgrad-find-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn options(mode: FindMode, file: CacheFile) -> FindOptions {
    FindOptions { mode, file, warmup: 0, runs: 1, splits: vec![2] }
}

fn descs(p: &ConvProblem, roles: [TensorRole; 3]) -> [TensorDesc; 3] {
    roles.map(|r| TensorDesc::packed(p, ConvLayout::NhwgcGkyxcNhwgk, r))
}

/// The backward-weight plan's instance and k-batches through `cache`.
fn weight(cache: &PlanCache, cfg: &BwdWeightConfig) -> (String, u32) {
    let p = problem();
    let [x, dw, dy] = descs(&p, [TensorRole::Input, TensorRole::Weight, TensorRole::Output]);
    let op = cache.bwd_weight(&device(), &p, cfg, x, dw, dy).unwrap();
    (op.plan().main.instance.name.to_string(), op.plan().k_batch)
}

/// The backward-data plan's instance through `cache`.
fn data(cache: &PlanCache) -> String {
    let p = problem();
    let [dy, w, dx] = descs(&p, [TensorRole::Output, TensorRole::Weight, TensorRole::Input]);
    let op = cache.bwd_data(&device(), &p, &BwdDataConfig::default(), dy, w, dx).unwrap();
    op.plan().main.instance.name.to_string()
}

fn entries(file: &Path) -> Vec<Entry> {
    FindFile::load(file).expect("the file parses").entries(&Setup::of(&device()))
}

/// Writes `file` holding `entries` for the emulator's setup.
fn write(file: &Path, entries: Vec<Entry>) {
    let f = FindFile { version: 1, sections: vec![Section { setup: Setup::of(&device()), entries }] };
    std::fs::write(file, serde_json::to_string(&f).unwrap()).unwrap();
}

/// The candidates of the test problem's backward-weight that plan, other than `not`.
fn other_fitting_weight(not: &str) -> Candidate {
    let (p, dev) = (problem(), device());
    let [x, dw, dy] = descs(&p, [TensorRole::Input, TensorRole::Weight, TensorRole::Output]);
    find::candidates(Operation::BwdWeight, TypeConfig::F16, dev.family(), &[2])
        .into_iter()
        .find(|c| {
            let cfg = BwdWeightConfig { instance: Some(c.instance.name.into()), ..Default::default() };
            c.instance.name != not && convgrad::ops::bwd_weight::BwdWeightOp::with_descs(&dev, &p, &cfg, x, dw, dy).is_ok()
        })
        .expect("a second fitting instance")
}

#[test]
fn measures_once_stores_and_reuses() {
    let d = dir("reuse");
    let file = d.join("kernels.json");
    let opts = options(FindMode::Measure, CacheFile::Path(file.clone()));
    let first = PlanCache::with_find(opts.clone());
    let chosen = weight(&first, &BwdWeightConfig::default());
    let (timed, measured) = first.find_counts();
    assert!(timed >= 2 && measured == 1, "timed {timed}, measured {measured}");
    // Asked again, the plan cache answers: nothing more is timed.
    assert_eq!(weight(&first, &BwdWeightConfig::default()), chosen);
    assert_eq!(first.find_counts(), (timed, 1));
    let stored = entries(&file);
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!((stored[0].op, stored[0].instance.as_str(), stored[0].layout.as_str()), (Operation::BwdWeight, chosen.0.as_str(), "NHWGC"));
    assert!(stored[0].ms.is_some() && stored[0].hand_ms.is_some());
    // Backward-data goes into the same section.
    let chosen_data = data(&first);
    assert_eq!(first.find_counts().1, 2);
    assert_eq!(entries(&file).len(), 2);

    // The next process: the file's choices, nothing timed.
    let next = PlanCache::with_find(opts.clone());
    assert_eq!(weight(&next, &BwdWeightConfig::default()), chosen);
    assert_eq!(data(&next), chosen_data);
    assert_eq!(next.find_counts(), (0, 0));

    // It is the file that decides: an entry naming another fitting candidate is taken as it is.
    let other = other_fitting_weight(&chosen.0);
    let mut edited = entries(&file);
    let e = edited.iter_mut().find(|e| e.op == Operation::BwdWeight).unwrap();
    (e.instance, e.split) = (other.instance.name.to_string(), other.split);
    write(&file, edited);
    let reader = PlanCache::with_find(options(FindMode::Reuse, CacheFile::Path(file.clone())));
    assert_eq!(weight(&reader, &BwdWeightConfig::default()).0, other.instance.name);
    assert_eq!(reader.find_counts(), (0, 0));
    // A forced instance is left alone.
    let forced = BwdWeightConfig { instance: Some(chosen.0.clone()), ..Default::default() };
    assert_eq!(weight(&reader, &forced).0, chosen.0);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn corrupt_file_is_ignored_and_replaced() {
    let d = dir("corrupt");
    let file = d.join("kernels.json");
    std::fs::write(&file, "{\"version\": 1, \"sections\": [ not json").unwrap();
    let hand = weight(&PlanCache::with_find(options(FindMode::Off, CacheFile::Off)), &BwdWeightConfig::default());
    // Reuse: the hand rules, no error.
    let reader = PlanCache::with_find(options(FindMode::Reuse, CacheFile::Path(file.clone())));
    assert_eq!(weight(&reader, &BwdWeightConfig::default()), hand);
    assert_eq!(reader.find_counts(), (0, 0));
    // Measure: measured, and the file rewritten whole.
    let cache = PlanCache::with_find(options(FindMode::Measure, CacheFile::Path(file.clone())));
    weight(&cache, &BwdWeightConfig::default());
    assert_eq!(cache.find_counts().1, 1);
    assert_eq!(entries(&file).len(), 1);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn stale_entries_are_measured_again() {
    let d = dir("stale");
    let file = d.join("kernels.json");
    let dev = device();
    // An entry for the request as runtime find keys it, naming `instance`.
    let key = |instance: &str| Entry {
            op: Operation::BwdWeight,
            arch: dev.arch().to_string(),
            types: "f16".into(),
            problem: problem().ck_args().map(|n| n.to_string()).collect::<Vec<_>>().join(" "),
            layout: "NHWGC".into(),
            deterministic: false,
            instance: instance.to_string(),
            split: None,
            compute_units: Some(dev.compute_units()),
        ms: Some(0.001),
        hand_ms: None,
    };
    // A depthwise kernel does not fit two groups of 8 channels.
    let depthwise = convgrad::types::instance::INSTANCES
        .iter()
        .find(|i| i.op == convgrad::types::instance::Op::BwdWeightDepthwise && i.types == TypeConfig::F16 && i.on(dev.family()))
        .expect("a depthwise backward-weight instance");
    for stale in ["bwdw_no_such_instance", depthwise.name] {
        write(&file, vec![key(stale)]);
        let cache = PlanCache::with_find(options(FindMode::Measure, CacheFile::Path(file.clone())));
        let (chosen, _) = weight(&cache, &BwdWeightConfig::default());
        assert_ne!(chosen, stale);
        assert_eq!(cache.find_counts().1, 1, "{stale} was not measured again");
        let now = entries(&file);
        assert_eq!(now.len(), 1, "{now:?}");
        assert_eq!(now[0].instance, chosen);
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn off_writes_nothing_and_mode_off_times_nothing() {
    let d = dir("off");
    let file = d.join("kernels.json");
    let cache = PlanCache::with_find(options(FindMode::Measure, CacheFile::Off));
    weight(&cache, &BwdWeightConfig::default());
    assert_eq!(cache.find_counts().1, 1);
    // Nothing written anywhere in the directory, and a fresh cache measures again.
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
    let again = PlanCache::with_find(options(FindMode::Measure, CacheFile::Off));
    weight(&again, &BwdWeightConfig::default());
    assert_eq!(again.find_counts().1, 1);
    // Mode off: a file is neither read nor written, nothing timed.
    let off = PlanCache::with_find(options(FindMode::Off, CacheFile::Path(file.clone())));
    weight(&off, &BwdWeightConfig::default());
    assert_eq!(off.find_counts(), (0, 0));
    assert!(!file.exists());
    assert_eq!(CacheFile::Path(file.clone()).resolve(), Some(file));
    assert_eq!(CacheFile::Off.resolve(), None);
    std::fs::remove_dir_all(&d).unwrap();
}
