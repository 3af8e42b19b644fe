//! Measured kernel choices: a table that `cargo xtask tune` writes from
//! timings on a GPU and that [`select`](super::select) consults, for a
//! request with no forced instance, before its hand rules.
//!
//! Runtime find ([`find`](super::find), opt-in on a `PlanCache`) comes
//! before this table: its per-user cache file holds entries of this
//! [`Entry`] format measured on the caller's own GPU; an entry of a table
//! `cargo xtask tune` wrote becomes a cache-file entry by copying it into
//! the device's section (keyed there by the caller's, unfolded, problem).
//!
//! The table in use is the first of:
//! 1. a table installed with [`set_override`];
//! 2. the JSON file named by the environment variable [`ENV`]
//!    (`CONVGRAD_TUNING=path`; `none` or `off`: no table, the hand rules only);
//! 3. the tables embedded per architecture (`host/tuning/<arch>.json`).
//!
//! An entry applies to a request with the same operation, data types,
//! problem (the one the kernels run: a folded problem has its own entry),
//! activation layout (packed tensors only) and, for backward-weight,
//! deterministic flag, on a device of its architecture's kernel family. The
//! planner knows the family, not the architecture: where two architectures
//! share one (gfx90a and gfx942), the entry measured with the device's
//! compute-unit count wins. An entry whose instance does not fit the request
//! (its strides or sizes) is passed over (the hand rules choose); a table
//! that does not parse, names what does not exist, names an instance of
//! another operation, data types or kernel family than the entry's, or
//! gives a split outside 1 to [`MAX_SPLIT_K`](super::split::MAX_SPLIT_K)
//! is an error naming the file and the entry.

use super::split::MAX_SPLIT_K;
use super::request::Request;
use convgrad_types::instance::{self, Family, Instance, Op};
use convgrad_types::{ConvLayout, ConvProblem, TensorDesc, TensorRole, TypeConfig};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

/// The environment variable naming a table file that replaces the embedded tables.
pub const ENV: &str = "CONVGRAD_TUNING";

/// The tables built into the crate, by architecture.
const EMBEDDED: [(&str, &str); 5] = [
    ("gfx90a", include_str!("../../tuning/gfx90a.json")),
    ("gfx942", include_str!("../../tuning/gfx942.json")),
    ("gfx1100", include_str!("../../tuning/gfx1100.json")),
    ("sm_80", include_str!("../../tuning/sm_80.json")),
    ("sm_90", include_str!("../../tuning/sm_90.json")),
];

/// The operation an entry chooses for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operation {
    /// Backward-weight.
    BwdWeight,
    /// Backward-data.
    BwdData,
}

impl Operation {
    /// `bwd-weight` or `bwd-data`.
    pub fn name(self) -> &'static str {
        match self {
            Operation::BwdWeight => "bwd-weight",
            Operation::BwdData => "bwd-data",
        }
    }
}

/// One measured choice, as the JSON file holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The operation.
    pub op: Operation,
    /// The architecture it was measured on: `sm_90`, `gfx942`, ...
    pub arch: String,
    /// Data types (`TypeConfig` name): `f16`, `bf16`, `f32`, `bf16-f32`, `f32-tf32`.
    pub types: String,
    /// The problem in CK's argument order, numbers separated by spaces
    /// (`ConvProblem::ck_args`, what `cargo xtask verify --problem` takes).
    pub problem: String,
    /// The activation layout of packed x (dx) and dy: `NHWGC`, `GNHWC` or `NGCHW`.
    pub layout: String,
    /// Backward-weight's deterministic split-K.
    #[serde(default, skip_serializing_if = "is_false")]
    pub deterministic: bool,
    /// The instance to run.
    pub instance: String,
    /// Backward-weight's split-K count (`SplitK::Fixed`), where the automatic one lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<u32>,
    /// Compute units of the GPU measured on (tells apart architectures of one family).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_units: Option<u32>,
    /// The measured time in ms (information only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<f64>,
    /// The hand rule's time in ms (information only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hand_ms: Option<f64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A tuning table: `{"device": "...", "entries": [...]}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    /// What it was measured on, in words (information only).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub device: String,
    /// The entries.
    pub entries: Vec<Entry>,
}

/// A table that does not parse or names what does not exist.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("tuning table {origin}: {what}")]
pub struct TableError {
    /// The file (or `embedded <arch>`, `override`).
    pub origin: String,
    /// What is wrong.
    pub what: String,
}

impl Table {
    /// Parses and checks a table; `origin` names it in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<Table, TableError> {
        parse(text, origin).map(|t| t.0)
    }
    /// Reads, parses and checks the table file `path`.
    pub fn load(path: &std::path::Path) -> Result<Table, TableError> {
        read(path).map(|t| t.0)
    }
    /// The table as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a table serializes") + "\n"
    }
    /// The entries checked and resolved, or what is wrong with the first bad one.
    fn resolve(&self) -> Result<Entries, String> {
        let each = |(n, e): (usize, &Entry)| e.resolve().map_err(|w| format!("entry {n} ({}): {w}", e.label()));
        self.entries.iter().enumerate().map(each).collect::<Result<_, _>>().map(Arc::new)
    }
}

/// A table and its resolved entries from JSON `text`; `origin` names it in errors.
fn parse(text: &str, origin: &str) -> Result<(Table, Entries), TableError> {
    let err = |what: String| TableError { origin: origin.to_string(), what };
    let t: Table = serde_json::from_str(text).map_err(|e| err(format!("not a tuning table: {e}")))?;
    let resolved = t.resolve().map_err(err)?;
    Ok((t, resolved))
}

/// [`parse`] of the file `path`.
fn read(path: &std::path::Path) -> Result<(Table, Entries), TableError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| TableError { origin: origin.clone(), what: format!("cannot read it: {e}") })?;
    parse(&text, &origin)
}

impl Entry {
    /// The entry in a few words, for errors and reports.
    pub fn label(&self) -> String {
        format!("{} {} {} `{}` {}", self.op.name(), self.arch, self.types, self.problem, self.layout)
    }
    fn resolve(&self) -> Result<Resolved, String> {
        let family = Family::of_arch(&self.arch)
            .ok_or_else(|| format!("unknown arch `{}` (gfx90a, gfx942, gfx1100, sm_80, sm_90)", self.arch))?;
        let types = TypeConfig::parse(&self.types)
            .ok_or_else(|| format!("unknown types `{}` (f32, f16, bf16, bf16-f32, f32-tf32)", self.types))?;
        let numbers = self
            .problem
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<Vec<usize>, _>>()
            .map_err(|e| format!("problem `{}`: {e}", self.problem))?;
        let problem = ConvProblem::from_ck_args(&numbers).map_err(|e| format!("problem `{}`: {e}", self.problem))?;
        let layout = ACT_LAYOUTS
            .into_iter()
            .find(|l| l.eq_ignore_ascii_case(&self.layout))
            .ok_or_else(|| format!("unknown layout `{}` ({})", self.layout, ACT_LAYOUTS.join(", ")))?;
        let inst = instance::find(&self.instance)
            .ok_or_else(|| format!("no instance `{}` (see `cargo xtask list-instances`)", self.instance))?;
        if self.op == Operation::BwdData && (self.split.is_some() || self.deterministic) {
            return Err("split and deterministic are backward-weight's".into());
        }
        if let Some(n) = self.split.filter(|n| !(1..=MAX_SPLIT_K).contains(n)) {
            return Err(format!("split {n}: 1 to {MAX_SPLIT_K} k-batches (grid z)"));
        }
        let ops = match self.op {
            Operation::BwdWeight => Op::BWD_WEIGHT,
            Operation::BwdData => Op::BWD_DATA,
        };
        if !ops.contains(&inst.op) {
            return Err(format!("instance `{}` is a {:?} kernel, not a {} one", self.instance, inst.op, self.op.name()));
        }
        if inst.types != types {
            return Err(format!("instance `{}` runs {}, the entry says {}", self.instance, inst.types.name(), types.name()));
        }
        if !inst.on(family) {
            return Err(format!("instance `{}` has no {family:?} build (arch {})", self.instance, self.arch));
        }
        let key = Key {
            op: self.op,
            family,
            types,
            problem,
            layout,
            deterministic: self.deterministic,
            compute_units: self.compute_units.unwrap_or(0),
        };
        Ok(Resolved { key, instance: inst, split: self.split })
    }
}

/// Activation layouts of the layout families (x and dy: `ConvLayout::name`'s first part).
const ACT_LAYOUTS: [&str; 3] = ["NHWGC", "GNHWC", "NGCHW"];

/// What a request is looked up by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    /// The operation.
    pub op: Operation,
    /// The device's kernel family.
    pub family: Family,
    /// Data types.
    pub types: TypeConfig,
    /// The problem the kernels run.
    pub problem: ConvProblem,
    /// Activation layout of x (dx) and dy, both packed.
    pub layout: &'static str,
    /// Deterministic split-K (backward-weight).
    pub deterministic: bool,
    /// The device's compute units (prefers an entry measured with as many; not matched).
    pub compute_units: u32,
}

impl Key {
    /// The key of a request, or `None` where x (dx) or dy is not a packed
    /// tensor of a layout family (strided views have no entries).
    pub fn of(op: Operation, r: &Request<'_>) -> Option<Key> {
        let p = r.p;
        let layout = packed_layout(p, r.x, r.dy)?;
        let deterministic = op == Operation::BwdWeight && r.deterministic;
        Some(Key { op, family: r.family, types: r.types, problem: *p, layout, deterministic, compute_units: r.compute_units })
    }
    /// Same lookup key (compute units aside).
    fn same(&self, o: &Key) -> bool {
        Key { compute_units: 0, ..*self } == Key { compute_units: 0, ..*o }
    }
    /// The entry recording `instance` (and `split`) for this key, measured on `arch`.
    pub fn entry(&self, arch: &str, instance: &str, split: Option<u32>) -> Entry {
        Entry {
            op: self.op,
            arch: arch.to_string(),
            types: self.types.name().to_string(),
            problem: self.problem.ck_args().map(|n| n.to_string()).collect::<Vec<_>>().join(" "),
            layout: self.layout.to_string(),
            deterministic: self.deterministic,
            instance: instance.to_string(),
            split,
            compute_units: Some(self.compute_units),
            ms: None,
            hand_ms: None,
        }
    }
    /// Whether `e` is an entry for this key (on an architecture of this family).
    pub fn matches(&self, e: &Entry) -> bool {
        e.resolve().is_ok_and(|r| r.key.same(self))
    }
}

/// The activation layout (`NHWGC`, `GNHWC`, `NGCHW`) in which `x` (dx)
/// and `dy` are packed for `p`, or `None` where they are not both packed in
/// one layout family (strided views). Runtime find keys its entries by it.
pub fn packed_layout(p: &ConvProblem, x: &TensorDesc, dy: &TensorDesc) -> Option<&'static str> {
    let packed = |l: ConvLayout| {
        same_elements(&TensorDesc::packed(p, l, TensorRole::Input), x)
            && same_elements(&TensorDesc::packed(p, l, TensorRole::Output), dy)
    };
    let layout = ConvLayout::ALL.into_iter().find(|&l| packed(l))?;
    Some(layout.name().split('/').next().expect("a layout name"))
}

/// Whether `a` and `b` address the same elements: equal lengths, and equal
/// strides on every axis longer than 1 (a folded problem's channels-last
/// descriptor keeps the caller's stride on its single group).
fn same_elements(a: &TensorDesc, b: &TensorDesc) -> bool {
    a.lengths == b.lengths && (0..a.lengths.len()).all(|i| a.lengths[i] == 1 || a.strides[i] == b.strides[i])
}

/// An entry checked against the instance table.
#[derive(Clone, Copy, Debug)]
struct Resolved {
    key: Key,
    instance: &'static Instance,
    split: Option<u32>,
}

/// What the table says for a request.
#[derive(Clone, Copy, Debug)]
pub struct Hit {
    /// The instance.
    pub instance: &'static Instance,
    /// Backward-weight's split-K count, where one was measured best.
    pub split: Option<u32>,
}

/// The entry for `key` in the table in use, if any; an error where the
/// table in use (a file named by [`ENV`]) does not load.
pub fn lookup(key: &Key) -> Result<Option<Hit>, TableError> {
    let Some(table) = active()? else { return Ok(None) };
    let found: Vec<&Resolved> = table.iter().filter(|r| r.key.same(key)).collect();
    let best = found.iter().find(|r| r.key.compute_units == key.compute_units).or(found.first());
    Ok(best.map(|r| Hit { instance: r.instance, split: r.split }))
}

/// Resolved entries, shared by the lookups.
type Entries = Arc<Vec<Resolved>>;

/// A table installed by [`set_override`].
static OVERRIDE: RwLock<Option<Entries>> = RwLock::new(None);
/// The file of [`ENV`] as last read: the variable's value and what it gave.
static FROM_ENV: Mutex<Option<(String, Result<Entries, TableError>)>> = Mutex::new(None);
/// The embedded tables, merged.
static BUILT_IN: OnceLock<Result<Entries, TableError>> = OnceLock::new();

/// Installs `table` in place of the file of [`ENV`] and the embedded tables
/// for this process (an empty table: the hand rules only); `None` removes it.
/// Plans made before (a `PlanCache`'s included) keep their choice. Errors
/// where an entry names what does not exist.
pub fn set_override(table: Option<&Table>) -> Result<(), TableError> {
    let resolved = table.map(|t| t.resolve().map_err(|what| TableError { origin: "override".into(), what })).transpose()?;
    *OVERRIDE.write().unwrap_or_else(PoisonError::into_inner) = resolved;
    Ok(())
}

/// The embedded table of `arch` (empty for an architecture without one).
pub fn embedded(arch: &str) -> Result<Table, TableError> {
    EMBEDDED
        .iter()
        .find(|e| e.0 == arch)
        .map_or(Ok(Table::default()), |(a, text)| Table::from_json(text, &format!("embedded {a}")))
}

/// The resolved entries in use, or `None` for no table.
fn active() -> Result<Option<Entries>, TableError> {
    if let Some(t) = OVERRIDE.read().unwrap_or_else(PoisonError::into_inner).clone() {
        return Ok(Some(t));
    }
    match std::env::var(ENV) {
        Ok(v) if v.eq_ignore_ascii_case("none") || v.eq_ignore_ascii_case("off") => Ok(None),
        Ok(v) if !v.is_empty() => {
            let mut cached = FROM_ENV.lock().unwrap_or_else(PoisonError::into_inner);
            // Read again only when the variable names another file.
            if cached.as_ref().is_none_or(|c| c.0 != v) {
                let loaded = read(v.as_ref()).map(|t| t.1);
                *cached = Some((v, loaded));
            }
            cached.as_ref().expect("just set").1.clone().map(Some)
        }
        _ => BUILT_IN
            .get_or_init(|| {
                let mut all = Vec::new();
                for (arch, text) in EMBEDDED {
                    all.extend(parse(text, &format!("embedded {arch}"))?.1.iter().copied());
                }
                Ok(Arc::new(all))
            })
            .clone()
            .map(Some),
    }
}

thread_local! {
    /// The key of this thread's last selection (see [`last_key`]).
    static LAST: std::cell::Cell<Option<Key>> = const { std::cell::Cell::new(None) };
}

/// Records the key of a selection on this thread (forced or not).
pub(super) fn note(key: Option<Key>) {
    LAST.with(|l| l.set(key));
}

/// The key of the last kernel selection on this thread, forced or not
/// (`None` for strided tensors): after planning, the key an entry for that
/// plan's problem needs (the folded one where the plan folds it). For
/// `cargo xtask tune`.
pub fn last_key() -> Option<Key> {
    LAST.with(|l| l.get())
}

#[cfg(test)]
mod tests {
    /// Every embedded table parses and names existing instances.
    #[test]
    fn embedded_tables_load() {
        for (arch, _) in super::EMBEDDED {
            super::embedded(arch).unwrap();
        }
    }
}
