//! Runtime find: a [`PlanCache`](super::PlanCache) that times the kernels
//! fitting a problem on the caller's GPU and plans with the fastest, like
//! `torch.backends.cudnn.benchmark` (opt-in).
//!
//! Turned on by [`PlanCache::with_find`](super::PlanCache::with_find) or,
//! for [`PlanCache::new`](super::PlanCache::new) and the global cache, by
//! the environment variable [`ENV`]: `CONVGRAD_FIND=1` (or `measure`):
//! measure what the cache file lacks; `reuse`: use the cache file, measure
//! nothing; unset, `0` or `off`: neither (the tables and hand rules only).
//!
//! The choice for a request, first of:
//! 1. the configuration's forced instance or fixed split-K (find leaves such
//!    requests alone);
//! 2. the cache file's entry for the request's setup ([`find_file`](super::find_file)),
//!    where its instance still exists and fits (else it is measured again);
//! 3. with [`FindMode::Measure`]: a measurement (stored in the file);
//! 4. the tuning table ([`tuned`](super::tuned): `cargo xtask tune`'s,
//!    embedded per architecture), then the hand rules ([`select`](super::select)).
//!
//! A measurement plans the request with every instance of its operation,
//! types and kernel family forced ([`candidates`], which `cargo xtask tune`
//! uses too; backward-weight's GEMM tiles also at each split of
//! [`FindOptions::splits`]) and as the tables and hand rules choose; keeps
//! one plan per distinct launch; runs each [`FindOptions::warmup`] times and
//! then [`FindOptions::runs`] times between two events; and keeps the
//! fastest. The runs read zeroed scratch tensors and write scratch outputs
//! and a scratch workspace (sized for the largest candidate), all freed
//! afterwards: no caller tensor is touched. Only requests whose activations
//! are packed in a layout family are measured (entries are keyed by layout,
//! as the tuning tables are).
//!
//! **Which stream.** The measurement runs on the caller's stream where the
//! caller names one ([`PlanCache::bwd_weight_on`](super::PlanCache::bwd_weight_on),
//! [`bwd_data_on`](super::PlanCache::bwd_data_on): the stream it will pass
//! to `execute_on`, e.g. a framework's stream wrapped by
//! [`Device::wrap_stream`]), else on the device's own stream
//! ([`PlanCache::bwd_weight`](super::PlanCache::bwd_weight)). The scratch
//! zeroing, the runs and the events are queued there, after the caller's
//! work already queued, so the timings are not disturbed by it running
//! concurrently on another stream and the measurement never races with it.
//! The host waits only where it reads a timing (each candidate's end event,
//! which also waits for the caller's work queued before it); afterwards the
//! device's own stream (where frees are ordered) waits for that stream on
//! the device before the scratch buffers are freed.

use super::bwd_data::plan::{BwdDataConfig, BwdDataPlan};
use super::bwd_weight::plan::BwdWeightConfig;
use super::error::OpError;
use super::find_file::{self, CacheFile, FindFile, Setup};
use super::prepared::{BwdDataOp, BwdDataTensors, BwdWeightOp, BwdWeightTensors};
use super::split::SplitK;
use super::tuned::{self, Entry, Operation};
use super::workspace::{Workspace, WorkspaceContents};
use crate::runtime::{BufRef, Device, DeviceBuffer, Stream};
use convgrad_types::instance::{self, Family, Instance, Op};
use convgrad_types::{ConvProblem, TensorDesc, TypeConfig};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable turning runtime find on (see the module docs).
pub const ENV: &str = "CONVGRAD_FIND";

/// Whether a [`PlanCache`](super::PlanCache) measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FindMode {
    /// No find: the tuning tables and hand rules choose.
    #[default]
    Off,
    /// Use the cache file's entries; measure nothing.
    Reuse,
    /// Use the cache file's entries; measure requests it lacks and store them.
    Measure,
}

impl FindMode {
    /// The mode [`ENV`] asks for (`Off` where unset or not understood, which is logged).
    pub fn from_env() -> FindMode {
        match std::env::var(ENV) {
            Ok(v) => match v.to_ascii_lowercase().as_str() {
                "1" | "on" | "measure" | "true" => FindMode::Measure,
                "reuse" => FindMode::Reuse,
                "" | "0" | "off" | "false" => FindMode::Off,
                other => {
                    log::warn!("{ENV}={other}: not 1, measure, reuse or off; find stays off");
                    FindMode::Off
                }
            },
            Err(_) => FindMode::Off,
        }
    }
}

/// Runtime find's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FindOptions {
    /// Measure, reuse or neither.
    pub mode: FindMode,
    /// Where measurements are kept across processes.
    pub file: CacheFile,
    /// Untimed runs per candidate before the timed ones.
    pub warmup: u32,
    /// Timed runs per candidate (at least 1; their mean is compared).
    pub runs: u32,
    /// Split-K counts tried on backward-weight's GEMM tiles besides the automatic one.
    pub splits: Vec<u32>,
}

impl Default for FindOptions {
    fn default() -> Self {
        FindOptions { mode: FindMode::Off, file: CacheFile::FromEnv, warmup: 2, runs: 5, splits: vec![1, 2, 4, 8, 16, 32, 64, 128] }
    }
}

impl FindOptions {
    /// The defaults with the mode of [`ENV`].
    pub fn from_env() -> FindOptions {
        FindOptions { mode: FindMode::from_env(), ..FindOptions::default() }
    }
}

/// One way to run a request: an instance forced, and a split-K count (`None`: automatic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The instance.
    pub instance: &'static Instance,
    /// Backward-weight's fixed split-K count.
    pub split: Option<u32>,
}

/// Every instance of `op`'s kernels in `types` built for `family`, the GEMM
/// tiles of backward-weight also at each count of `splits` (whether each
/// fits a problem is the planner's to say). `cargo xtask tune` and runtime
/// find enumerate with this.
pub fn candidates(op: Operation, types: TypeConfig, family: Family, splits: &[u32]) -> Vec<Candidate> {
    let ops = match op {
        Operation::BwdWeight => Op::BWD_WEIGHT,
        Operation::BwdData => Op::BWD_DATA,
    };
    let mut out = vec![];
    for i in instance::INSTANCES.iter().filter(|i| ops.contains(&i.op) && i.types == types && i.on(family)) {
        out.push(Candidate { instance: i, split: None });
        if matches!(i.op, Op::BwdWeight | Op::BwdWeightTma) {
            out.extend(splits.iter().map(|&s| Candidate { instance: i, split: Some(s) }));
        }
    }
    out
}

/// What runtime find needs of a prepared operation.
pub(super) trait Findable: Sized {
    /// Its configuration.
    type Config: Clone + std::fmt::Debug;
    /// The operation it is.
    const OP: Operation;
    /// Plans it.
    fn make(dev: &Device, p: &ConvProblem, cfg: &Self::Config, descs: [TensorDesc; 3]) -> Result<Self, OpError>;
    /// Whether the configuration leaves the choice open (no forced instance or split).
    fn open(cfg: &Self::Config) -> bool;
    /// Data types and backward-weight's deterministic flag.
    fn types(cfg: &Self::Config) -> (TypeConfig, bool);
    /// The configuration with `c` forced.
    fn forced(cfg: &Self::Config, c: Candidate) -> Self::Config;
    /// The instance its plan runs.
    fn instance(&self) -> &'static Instance;
    /// What it launches, in words (tells candidates apart).
    fn launch(&self) -> String;
    /// Bytes of each buffer a call takes: three tensors, the `D` tensors, the workspace.
    fn sizes(&self, t: TypeConfig) -> ([usize; 3], Vec<usize>, usize);
    /// Queues one call on scratch buffers.
    fn run(&self, s: &Stream, t: &[DeviceBuffer<u8>; 3], ds: &[BufRef<'_>], ws: &DeviceBuffer<u8>) -> Result<(), OpError>;
}

fn bytes(d: &TensorDesc, t: convgrad_types::DType) -> usize {
    d.span() as usize * t.bytes()
}

impl Findable for BwdWeightOp {
    type Config = BwdWeightConfig;
    const OP: Operation = Operation::BwdWeight;
    fn make(dev: &Device, p: &ConvProblem, cfg: &BwdWeightConfig, [x, dw, dy]: [TensorDesc; 3]) -> Result<Self, OpError> {
        BwdWeightOp::with_descs(dev, p, cfg, x, dw, dy)
    }
    fn open(cfg: &BwdWeightConfig) -> bool {
        cfg.instance.is_none() && cfg.split_k == SplitK::Auto
    }
    fn types(cfg: &BwdWeightConfig) -> (TypeConfig, bool) {
        (cfg.types, cfg.deterministic)
    }
    fn forced(cfg: &BwdWeightConfig, c: Candidate) -> BwdWeightConfig {
        let split_k = c.split.map_or(SplitK::Auto, SplitK::Fixed);
        BwdWeightConfig { instance: Some(c.instance.name.to_string()), split_k, ..cfg.clone() }
    }
    fn instance(&self) -> &'static Instance {
        self.plan().main.instance
    }
    fn launch(&self) -> String {
        self.describe()
    }
    fn sizes(&self, t: TypeConfig) -> ([usize; 3], Vec<usize>, usize) {
        let p = self.plan();
        let ds = p.ds.iter().map(|d| bytes(d, t.wei())).collect();
        ([bytes(&p.x, t.act()), bytes(&p.dy, t.act()), bytes(&p.dw, t.wei())], ds, self.workspace_bytes())
    }
    fn run(&self, s: &Stream, t: &[DeviceBuffer<u8>; 3], ds: &[BufRef<'_>], ws: &DeviceBuffer<u8>) -> Result<(), OpError> {
        let tensors = BwdWeightTensors { x: (&t[0]).into(), dy: (&t[1]).into(), dw: (&t[2]).into(), ds };
        let ws = if self.workspace_bytes() == 0 { Workspace::None } else { Workspace::raw(ws, WorkspaceContents::Unknown) };
        self.execute_on(s, tensors, ws)
    }
}

impl Findable for BwdDataOp {
    type Config = BwdDataConfig;
    const OP: Operation = Operation::BwdData;
    fn make(dev: &Device, p: &ConvProblem, cfg: &BwdDataConfig, [dy, w, dx]: [TensorDesc; 3]) -> Result<Self, OpError> {
        BwdDataOp::with_descs(dev, p, cfg, dy, w, dx)
    }
    fn open(cfg: &BwdDataConfig) -> bool {
        cfg.instance.is_none()
    }
    fn types(cfg: &BwdDataConfig) -> (TypeConfig, bool) {
        (cfg.types, false)
    }
    fn forced(cfg: &BwdDataConfig, c: Candidate) -> BwdDataConfig {
        BwdDataConfig { instance: Some(c.instance.name.to_string()), ..cfg.clone() }
    }
    fn instance(&self) -> &'static Instance {
        self.plan().main.instance
    }
    fn launch(&self) -> String {
        self.describe()
    }
    fn sizes(&self, t: TypeConfig) -> ([usize; 3], Vec<usize>, usize) {
        let p: &BwdDataPlan = self.plan();
        let ds = p.ds.iter().map(|d| bytes(d, t.act())).collect();
        ([bytes(&p.dy, t.act()), bytes(&p.w, t.wei()), bytes(&p.dx, t.act())], ds, self.workspace_bytes())
    }
    fn run(&self, s: &Stream, t: &[DeviceBuffer<u8>; 3], ds: &[BufRef<'_>], ws: &DeviceBuffer<u8>) -> Result<(), OpError> {
        let tensors = BwdDataTensors { dy: (&t[0]).into(), w: (&t[1]).into(), dx: (&t[2]).into(), ds };
        let ws = if self.workspace_bytes() == 0 { Workspace::None } else { Workspace::raw(ws, WorkspaceContents::Unknown) };
        self.execute_on(s, tensors, ws)
    }
}

/// Runtime find's state in one [`PlanCache`](super::PlanCache).
#[derive(Debug, Default)]
pub(super) struct Finder {
    pub(super) options: FindOptions,
    /// The cache file's entries by setup, read once per setup (then kept up to date by this finder's stores).
    loaded: Mutex<Vec<(Setup, Vec<Entry>)>>,
    /// Candidates timed so far.
    pub(super) timed: AtomicUsize,
    /// Requests measured so far.
    pub(super) measured: AtomicUsize,
}

/// A request's entry key, where its activations are packed in a layout family.
fn entry_key(op: Operation, dev: &Device, p: &ConvProblem, types: TypeConfig, deterministic: bool, descs: &[TensorDesc; 3]) -> Option<Entry> {
    // x (dx) and dy: the first and third descriptor of bwd-weight, the third and first of bwd-data.
    let (x, dy) = match op {
        Operation::BwdWeight => (&descs[0], &descs[2]),
        Operation::BwdData => (&descs[2], &descs[0]),
    };
    let layout = tuned::packed_layout(p, x, dy)?;
    let key = tuned::Key {
        op,
        family: dev.family(),
        types,
        problem: *p,
        layout,
        deterministic: deterministic && op == Operation::BwdWeight,
        compute_units: dev.compute_units(),
    };
    Some(key.entry(dev.arch(), "", None))
}

impl Finder {
    pub(super) fn new(options: FindOptions) -> Finder {
        Finder { options, ..Finder::default() }
    }

    /// The file's entries for `setup` (read on first use).
    fn entries(&self, setup: &Setup) -> Vec<Entry> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, e)) = loaded.iter().find(|(s, _)| s == setup) {
            return e.clone();
        }
        let path = self.options.file.resolve();
        let entries = path.and_then(|p| FindFile::load(&p)).map_or(vec![], |f| f.entries(setup));
        loaded.push((setup.clone(), entries.clone()));
        entries
    }

    /// Keeps `e` for `setup` here and in the file.
    fn store(&self, setup: &Setup, e: Entry) {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, entries)) = loaded.iter_mut().find(|(s, _)| s == setup) {
            entries.retain(|o| !find_file::same_key(o, &e));
            entries.push(e.clone());
        }
        if let Some(path) = self.options.file.resolve()
            && let Err(err) = find_file::store(&path, setup, e)
        {
            log::warn!("find cache {}: cannot write it ({err}); the choice lasts this process", path.display());
        }
    }

    /// The operation for a request: the cache file's choice, else a
    /// measured one, else `None` (plan as the tables and hand rules say).
    /// A measurement runs on `stream` (a stream of `dev`).
    pub(super) fn choose<T: Findable>(&self, dev: &Device, stream: &Stream, p: &ConvProblem, cfg: &T::Config, descs: [TensorDesc; 3]) -> Result<Option<T>, OpError> {
        if self.options.mode == FindMode::Off || !T::open(cfg) {
            return Ok(None);
        }
        let (types, det) = T::types(cfg);
        let Some(key) = entry_key(T::OP, dev, p, types, det, &descs) else { return Ok(None) };
        let setup = Setup::of(dev);
        if let Some(e) = self.entries(&setup).into_iter().find(|e| find_file::same_key(e, &key)) {
            match instance::find(&e.instance).map(|i| T::make(dev, p, &T::forced(cfg, Candidate { instance: i, split: e.split }), descs)) {
                Some(Ok(op)) => return Ok(Some(op)),
                Some(Err(err)) => log::info!("find cache: {} no longer fits {} ({err}); measured again", e.instance, key.label()),
                None => log::info!("find cache: no instance {} any more ({}); measured again", e.instance, key.label()),
            }
        }
        if self.options.mode != FindMode::Measure {
            return Ok(None);
        }
        let Some((op, entry)) = self.measure::<T>(dev, stream, p, cfg, descs, key)? else { return Ok(None) };
        self.measured.fetch_add(1, Ordering::Relaxed);
        self.store(&setup, entry);
        Ok(Some(op))
    }

    /// Times every candidate of a request on `stream`; the fastest and its entry.
    fn measure<T: Findable>(&self, dev: &Device, stream: &Stream, p: &ConvProblem, cfg: &T::Config, descs: [TensorDesc; 3], key: Entry) -> Result<Option<(T, Entry)>, OpError> {
        let (types, _) = T::types(cfg);
        // The tables' and hand rules' plan first, then one per distinct launch;
        // `spelling[i]`: the candidate that names plan i's launch in an entry.
        let hand = T::make(dev, p, cfg, descs)?;
        let mut spelling: Vec<Option<Candidate>> = vec![None];
        let mut ways = vec![hand];
        for c in candidates(T::OP, types, dev.family(), &self.options.splits) {
            let Ok(op) = T::make(dev, p, &T::forced(cfg, c), descs) else { continue };
            let launch = op.launch();
            match ways.iter().position(|w| w.instance().name == op.instance().name && w.launch() == launch) {
                Some(at) => {
                    spelling[at].get_or_insert(c);
                }
                None => {
                    ways.push(op);
                    spelling.push(Some(c));
                }
            }
        }
        // Scratch buffers for the largest candidate, inputs zeroed.
        let mut size = [0usize; 3];
        let (mut dsize, mut wsize) = (vec![], 0usize);
        for w in &ways {
            let (t, d, ws) = w.sizes(types);
            for i in 0..3 {
                size[i] = size[i].max(t[i]);
            }
            dsize.resize(dsize.len().max(d.len()), 0);
            for (a, b) in dsize.iter_mut().zip(d) {
                *a = (*a).max(b);
            }
            wsize = wsize.max(ws);
        }
        // Allocations are usable on any stream when made; zeroed on `stream`.
        let alloc = |n: usize| -> Result<DeviceBuffer<u8>, OpError> {
            let b = dev.alloc::<u8>(n.max(16))?;
            b.fill_bytes_on(stream, 0)?;
            Ok(b)
        };
        let scratch = [alloc(size[0])?, alloc(size[1])?, alloc(size[2])?];
        let dbufs = dsize.iter().map(|&n| alloc(n)).collect::<Result<Vec<_>, _>>()?;
        let ds: Vec<BufRef<'_>> = dbufs.iter().map(BufRef::from).collect();
        let ws = alloc(wsize)?;
        let (warmup, runs) = (self.options.warmup, self.options.runs.max(1));
        let mut best: Option<(f64, usize)> = None;
        let mut hand_ms = None;
        for (i, w) in ways.iter().enumerate() {
            let time = || -> Result<f64, OpError> {
                for _ in 0..warmup {
                    w.run(stream, &scratch, &ds, &ws)?;
                }
                let start = stream.record_event()?;
                for _ in 0..runs {
                    w.run(stream, &scratch, &ds, &ws)?;
                }
                let end = stream.record_event()?;
                Ok(start.elapsed_ms(&end)? as f64 / runs as f64)
            };
            self.timed.fetch_add(1, Ordering::Relaxed);
            match time() {
                Ok(ms) => {
                    log::debug!("find {}: {} {ms:.4} ms", key.label(), w.launch());
                    if i == 0 {
                        hand_ms = Some(ms);
                    }
                    if best.is_none_or(|(b, _)| ms < b) {
                        best = Some((ms, i));
                    }
                }
                Err(e) => log::warn!("find {}: {} failed ({e}); left out", key.label(), w.launch()),
            }
        }
        // The scratch buffers are freed in the order of the device's own
        // stream: it waits (on the device) for the runs first; where it
        // cannot, the host does.
        if let Err(e) = dev.default_stream().wait_for(stream) {
            log::debug!("find: the device's stream cannot wait for the caller's ({e}); synchronizing");
            stream.synchronize()?;
        }
        let Some((ms, at)) = best else { return Ok(None) };
        let c = spelling[at].unwrap_or(Candidate { instance: ways[at].instance(), split: None });
        log::info!("find {}: {} {ms:.4} ms (tables and hand rules: {hand_ms:?} ms)", key.label(), ways[at].launch());
        let entry = Entry { instance: c.instance.name.to_string(), split: c.split, ms: Some(ms), hand_ms, ..key };
        Ok(Some((ways.swap_remove(at), entry)))
    }
}
