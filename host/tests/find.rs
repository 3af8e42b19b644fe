//! Runtime find (#39) on the emulator: the timings are CPU time there, which
//! says nothing of the kernels but exercises the mechanism: measured once,
//! stored in the file, reused by a fresh `PlanCache` (the next process)
//! without timing anything; corrupt files, stale entries and entries of
//! another driver version ignored; `off` writes nothing; the measurement
//! runs on the caller's (wrapped) stream and leaves the caller's tensors
//! alone.

use convgrad::ops::bwd_data::BwdDataConfig;
use convgrad::ops::bwd_weight::BwdWeightConfig;
use convgrad::ops::find::{self, Candidate};
use convgrad::ops::find_file::{self, FindFile, Section, Setup};
use convgrad::ops::tuned::{Entry, Operation};
use convgrad::ops::bwd_weight::BwdWeightTensors;
use convgrad::ops::{CacheFile, FindMode, FindOptions, PlanCache, Workspace, WorkspaceContents};
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
    write_for(file, Setup::of(&device()), entries);
}

/// Writes `file` holding `entries` for `setup`.
fn write_for(file: &Path, setup: Setup, entries: Vec<Entry>) {
    let f = FindFile { version: find_file::VERSION, sections: vec![Section { setup, entries }] };
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

#[test]
fn another_driver_version_is_measured_again() {
    let d = dir("driver");
    let file = d.join("kernels.json");
    let dev = device();
    assert_eq!(dev.driver_version(), "convgrad emulator 1");
    assert_eq!(Setup::of(&dev).driver, dev.driver_version());
    // Measure once for this driver; then move the section to another driver.
    let cache = PlanCache::with_find(options(FindMode::Measure, CacheFile::Path(file.clone())));
    let chosen = weight(&cache, &BwdWeightConfig::default());
    let mut e = entries(&file);
    assert_eq!(e.len(), 1);
    // Name another fitting candidate, so that reusing it would show.
    let other = other_fitting_weight(&chosen.0);
    (e[0].instance, e[0].split) = (other.instance.name.to_string(), other.split);
    let old = Setup { driver: "convgrad emulator 0".into(), ..Setup::of(&dev) };
    write_for(&file, old.clone(), e);
    // Reuse: the other driver's entry is not taken (the hand rules are), nothing timed.
    let hand = weight(&PlanCache::with_find(options(FindMode::Off, CacheFile::Off)), &BwdWeightConfig::default());
    let reader = PlanCache::with_find(options(FindMode::Reuse, CacheFile::Path(file.clone())));
    assert_eq!(weight(&reader, &BwdWeightConfig::default()), hand);
    assert_eq!(reader.find_counts(), (0, 0));
    // Measure: measured again and stored in a section of this driver; the old one is kept apart.
    let again = PlanCache::with_find(options(FindMode::Measure, CacheFile::Path(file.clone())));
    weight(&again, &BwdWeightConfig::default());
    assert_eq!(again.find_counts().1, 1, "the other driver's entry was reused");
    let f = FindFile::load(&file).unwrap();
    assert_eq!(f.sections.len(), 2);
    assert_eq!(f.entries(&old)[0].instance, other.instance.name);
    assert_eq!(entries(&file).len(), 1);
    // A file of the previous format (version 1, no driver field) is ignored, then replaced.
    std::fs::write(&file, "{\"version\": 1, \"sections\": []}").unwrap();
    assert!(FindFile::load(&file).is_none());
    let fresh = PlanCache::with_find(options(FindMode::Measure, CacheFile::Path(file.clone())));
    weight(&fresh, &BwdWeightConfig::default());
    assert_eq!(fresh.find_counts().1, 1);
    assert_eq!(FindFile::load(&file).unwrap().version, find_file::VERSION);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn measures_on_the_callers_stream_and_leaves_its_tensors_alone() {
    // A device of its own: launches on its streams are this test's only.
    let dev = Device::open(Backend::Emulator(EmuArch::Gfx942), 0).unwrap();
    // A framework's stream, wrapped (the emulator takes any handle).
    // SAFETY: the emulator never dereferences stream handles.
    let stream = unsafe { dev.wrap_stream(std::ptr::without_provenance_mut(0xf00d)) }.unwrap();
    let own = dev.default_stream();
    let p = problem();
    let [x, dw, dy] = descs(&p, [TensorRole::Input, TensorRole::Weight, TensorRole::Output]);
    // The caller's tensors, with contents of its own (f16 bit patterns).
    let pattern = |seed: u16, n: usize| (0..n as u16).map(|i| 0x3c00 ^ (i.wrapping_mul(seed) & 0x3ff)).collect::<Vec<u16>>();
    let (xv, dyv, dwv) = (pattern(3, x.span() as usize), pattern(5, dy.span() as usize), pattern(7, dw.span() as usize));
    let (xb, dyb, dwb) = (dev.upload(&xv).unwrap(), dev.upload(&dyv).unwrap(), dev.upload(&dwv).unwrap());
    assert_eq!((stream.emulated_launches(), own.emulated_launches()), (Some(0), Some(0)));

    let cache = PlanCache::with_find(options(FindMode::Measure, CacheFile::Off));
    let op = cache.bwd_weight_on(&stream, &p, &BwdWeightConfig::default(), x, dw, dy).unwrap();
    let (timed, measured) = cache.find_counts();
    assert!(timed >= 2 && measured == 1, "timed {timed}, measured {measured}");
    // Every candidate ran (at least once) on the caller's stream, none on the device's own.
    let on_caller = stream.emulated_launches().unwrap();
    assert!(on_caller >= timed as u64, "{on_caller} launches on the caller's stream for {timed} candidates");
    assert_eq!(own.emulated_launches(), Some(0));
    // The caller's tensors are as they were.
    assert_eq!(xb.download().unwrap(), xv);
    assert_eq!(dyb.download().unwrap(), dyv);
    assert_eq!(dwb.download().unwrap(), dwv);

    // The plan is cached: asked again (on either stream), nothing is measured or launched.
    let again = cache.bwd_weight(&dev, &p, &BwdWeightConfig::default(), x, dw, dy).unwrap();
    assert!(std::sync::Arc::ptr_eq(&op, &again));
    assert_eq!((cache.find_counts(), stream.emulated_launches()), ((timed, 1), Some(on_caller)));
    // The caller runs the chosen operation on its stream.
    let ws = dev.alloc::<u8>(op.workspace_bytes().max(1)).unwrap();
    ws.fill_zero().unwrap();
    let t = BwdWeightTensors { x: (&xb).into(), dy: (&dyb).into(), dw: (&dwb).into(), ds: &[] };
    op.execute_on(&stream, t, Workspace::raw(&ws, WorkspaceContents::Zeroed)).unwrap();
    stream.synchronize().unwrap();
    assert!(stream.emulated_launches().unwrap() > on_caller);
    assert_eq!(own.emulated_launches(), Some(0));
    assert_ne!(dwb.download().unwrap(), dwv, "the caller's run wrote dw");

    // Without a stream, find measures on the device's own stream.
    let data_cache = PlanCache::with_find(options(FindMode::Measure, CacheFile::Off));
    let [ddy, dw2, ddx] = descs(&p, [TensorRole::Output, TensorRole::Weight, TensorRole::Input]);
    let before = stream.emulated_launches();
    data_cache.bwd_data(&dev, &p, &BwdDataConfig::default(), ddy, dw2, ddx).unwrap();
    assert_eq!(data_cache.find_counts().1, 1);
    assert!(own.emulated_launches().unwrap() >= data_cache.find_counts().0 as u64);
    assert_eq!(stream.emulated_launches(), before);
}
