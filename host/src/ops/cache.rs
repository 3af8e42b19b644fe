//! The plan cache: one prepared operation per problem, configuration,
//! tensor strides and device, as frameworks keep cuDNN / MIOpen plans.

use super::error::OpError;
use super::find::{FindOptions, Finder};
use super::bwd_data::plan::BwdDataConfig;
use super::bwd_weight::plan::BwdWeightConfig;
use super::prepared::{BwdDataOp, BwdWeightOp};
use crate::runtime::{Device, Stream};
use convgrad_types::{ConvProblem, TensorDesc};
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, OnceLock};

/// Prepared operations by problem + configuration + descriptors + device.
///
/// Planning and resolving a kernel cost microseconds and a driver call; a
/// training step calls the same layers again and again. Entries keep their
/// device open and are never evicted (a network has a bounded set of
/// layers); [`PlanCache::clear`] drops them. Thread-safe.
///
/// With runtime find on ([`PlanCache::with_find`], or `CONVGRAD_FIND=1` for
/// [`PlanCache::new`] and [`PlanCache::global`]) a request met for the first
/// time takes the choice stored in the per-user cache file, else the
/// fastest of its fitting kernels timed on the device (stored in the file
/// for the next process); see [`find`](super::find). The `_on` methods
/// ([`PlanCache::bwd_weight_on`]) take the caller's stream, which such a
/// measurement is queued on.
pub struct PlanCache {
    weight: Mutex<HashMap<Key, Arc<BwdWeightOp>>>,
    data: Mutex<HashMap<Key, Arc<BwdDataOp>>>,
    find: Finder,
}

impl Default for PlanCache {
    /// [`PlanCache::new`].
    fn default() -> Self {
        Self::new()
    }
}

/// The lookup key: the device's identity and the request, the configuration
/// by its `Debug` text (it holds `f32` epilogue factors, which are not
/// `Hash`; their text is exact).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    device: usize,
    problem: ConvProblem,
    descs: [TensorDesc; 3],
    config: String,
}

impl Key {
    fn new(dev: &Device, problem: &ConvProblem, config: &impl std::fmt::Debug, descs: [TensorDesc; 3]) -> Key {
        // An entry holds its device open, so no other device reuses the address.
        let device = Arc::as_ptr(dev.inner()) as usize;
        Key { device, problem: *problem, descs, config: format!("{config:?}") }
    }
}

fn get_or_plan<T>(
    map: &Mutex<HashMap<Key, Arc<T>>>,
    key: Key,
    make: impl FnOnce() -> Result<T, OpError>,
) -> Result<Arc<T>, OpError> {
    if let Some(op) = map.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        log::trace!("plan cache: hit for {}", key.problem);
        return Ok(op.clone());
    }
    // Planned outside the lock; a racing thread's entry wins.
    let op = Arc::new(make()?);
    Ok(map.lock().unwrap_or_else(|e| e.into_inner()).entry(key).or_insert(op).clone())
}

/// [`PlanCache`] methods `$name` and `$name_on` returning the prepared
/// operation `$op` for a problem, a configuration `$cfg` and the descriptors
/// `$t` (in the order of `$op::with_descs`), planned on first use and kept in
/// the map `$map`. `$name` takes a device (runtime find measures on its own
/// stream), `$name_on` the stream the caller will run the operation on
/// (runtime find measures there).
macro_rules! cached_op {
    ($(#[$doc:meta])* $name:ident, $(#[$doc_on:meta])* $name_on:ident($cfg:ty, [$($t:ident),+]) -> $op:ident in $map:ident) => {
        $(#[$doc])*
        pub fn $name(&self, dev: &Device, p: &ConvProblem, cfg: &$cfg, $($t: TensorDesc),+) -> Result<Arc<$op>, OpError> {
            self.$name_on(&dev.default_stream(), p, cfg, $($t),+)
        }
        $(#[$doc_on])*
        pub fn $name_on(&self, stream: &Stream, p: &ConvProblem, cfg: &$cfg, $($t: TensorDesc),+) -> Result<Arc<$op>, OpError> {
            let dev = &stream.device();
            let key = Key::new(dev, p, cfg, [$($t),+]);
            get_or_plan(&self.$map, key, || {
                let found = self.find.choose::<$op>(dev, stream, p, cfg, [$($t),+])?;
                let op = match found {
                    Some(op) => op,
                    None => $op::with_descs(dev, p, cfg, $($t),+)?,
                };
                log::debug!("plan cache: planned {} {p}: {}", stringify!($name), op.describe());
                Ok(op)
            })
        }
    };
}

impl PlanCache {
    /// An empty cache; runtime find as the environment variable
    /// [`CONVGRAD_FIND`](super::find::ENV) says (off where unset).
    pub fn new() -> Self {
        Self::with_find(FindOptions::from_env())
    }
    /// An empty cache with runtime find as `options` say (the environment is not read).
    pub fn with_find(options: FindOptions) -> Self {
        PlanCache { weight: Mutex::default(), data: Mutex::default(), find: Finder::new(options) }
    }
    /// The runtime find settings.
    pub fn find_options(&self) -> &FindOptions {
        &self.find.options
    }
    /// Kernel candidates timed by runtime find so far, and requests measured.
    pub fn find_counts(&self) -> (usize, usize) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.find.timed.load(Relaxed), self.find.measured.load(Relaxed))
    }
    /// The process-wide cache.
    pub fn global() -> &'static PlanCache {
        static GLOBAL: OnceLock<PlanCache> = OnceLock::new();
        GLOBAL.get_or_init(PlanCache::new)
    }
    cached_op! {
        /// The backward-weight operation for `p` with descriptors of x, dw, dy
        /// on `dev`, planned on first use (a runtime find measurement runs on
        /// the device's own stream; see [`PlanCache::bwd_weight_on`]).
        bwd_weight,
        /// [`PlanCache::bwd_weight`] on the device of `stream`, the stream the
        /// caller will run the operation on: a runtime find measurement is
        /// queued there, ordered with the caller's work (see [`find`](super::find)).
        bwd_weight_on(BwdWeightConfig, [x, dw, dy]) -> BwdWeightOp in weight
    }
    cached_op! {
        /// The backward-data operation for `p` with descriptors of dy, w, dx on
        /// `dev`, planned on first use (a runtime find measurement runs on the
        /// device's own stream; see [`PlanCache::bwd_data_on`]).
        bwd_data,
        /// [`PlanCache::bwd_data`] on the device of `stream`, the stream the
        /// caller will run the operation on: a runtime find measurement is
        /// queued there, ordered with the caller's work (see [`find`](super::find)).
        bwd_data_on(BwdDataConfig, [dy, w, dx]) -> BwdDataOp in data
    }
    /// Operations cached.
    pub fn len(&self) -> usize {
        fn n<T>(m: &Mutex<HashMap<Key, T>>) -> usize {
            m.lock().map_or(0, |m| m.len())
        }
        n(&self.weight) + n(&self.data)
    }
    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Drops every entry (and the devices they kept open, if nothing else holds them).
    pub fn clear(&self) {
        self.weight.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.data.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}
