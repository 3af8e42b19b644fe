//! The per-user file of runtime find ([`find`](super::find)): measured
//! choices by device, read by the next process.
//!
//! The file: the path given to [`CacheFile::Path`], else `$CONVGRAD_FIND_CACHE`
//! (`off`, `none`, `0` or empty: no file; a path `dir/name.json`: this file
//! is `dir/name.kernels.json`, beside the one `convgrad_torch`'s aten-or-
//! convgrad cache keeps there), else `$XDG_CACHE_HOME/convgrad/kernels.json`
//! (default `~/.cache/convgrad/kernels.json`).
//!
//! It holds one section per device setup ([`Setup`]: device name, arch,
//! backend, compute units, driver version ([`Device::driver_version`]: CUDA's
//! `cuDriverGetVersion`, HIP's `hipDriverGetVersion`, a fixed version of the
//! emulator), convgrad version, hash of the built kernels), each a list of [`tuned::Entry`](super::tuned::Entry) records,
//! the format `cargo xtask tune` writes (`host/tuning/<arch>.json`), keyed
//! by the caller's problem (not a folded one) and packed activation layout.
//! A file that does not parse is ignored (and replaced at the next write):
//! the file only saves time, it never decides correctness. Writes go to a
//! temporary file renamed over the old one, after merging what other
//! processes stored meanwhile.

use super::tuned::Entry;
use crate::runtime::Device;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The environment variable naming the cache file's place (see the module docs).
pub const CACHE_ENV: &str = "CONVGRAD_FIND_CACHE";

/// The file format's version; a file of another is ignored (and replaced
/// at the next write). 2: sections keyed by the driver version too.
pub const VERSION: u32 = 2;

/// Where runtime find keeps its measurements.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CacheFile {
    /// `$CONVGRAD_FIND_CACHE`, else the user's cache directory (module docs).
    #[default]
    FromEnv,
    /// This file.
    Path(PathBuf),
    /// No file: measurements last as long as the `PlanCache`.
    Off,
}

impl CacheFile {
    /// The file's path, or `None` for no file.
    pub fn resolve(&self) -> Option<PathBuf> {
        match self {
            CacheFile::Path(p) => Some(p.clone()),
            CacheFile::Off => None,
            CacheFile::FromEnv => match std::env::var_os(CACHE_ENV) {
                Some(v) => {
                    let s = v.to_string_lossy();
                    if ["off", "none", "0", ""].iter().any(|o| s.eq_ignore_ascii_case(o)) {
                        return None;
                    }
                    let p = PathBuf::from(&v);
                    let stem = p.file_stem().map_or("find".into(), |s| s.to_string_lossy().into_owned());
                    Some(p.with_file_name(format!("{stem}.kernels.json")))
                }
                None => {
                    let base = std::env::var_os("XDG_CACHE_HOME")
                        .filter(|v| !v.is_empty())
                        .map(PathBuf::from)
                        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
                    Some(base.join("convgrad").join("kernels.json"))
                }
            },
        }
    }
}

/// What makes a measurement stale: a file section applies only to the same setup.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// The device's name (`NVIDIA H100 80GB HBM3`, `AMD Instinct MI300X`, ...).
    pub device: String,
    /// Its architecture (`sm_90`, `gfx942`, ...).
    pub arch: String,
    /// The backend (`Cuda`, `Hip`, `Emulator`, `Isa`).
    pub backend: String,
    /// Its compute units (SMs).
    pub compute_units: u32,
    /// The driver's version ([`Device::driver_version`]): measurements of
    /// another driver are taken again.
    pub driver: String,
    /// convgrad's version.
    pub convgrad: String,
    /// FNV-1a hash of the built kernels of `arch` (`none` where this build has none).
    pub kernels: String,
}

impl Setup {
    /// The setup of `dev` in this build.
    pub fn of(dev: &Device) -> Setup {
        Setup {
            device: dev.name().to_string(),
            arch: dev.arch().to_string(),
            backend: format!("{:?}", dev.backend_kind()),
            compute_units: dev.compute_units(),
            driver: dev.driver_version().to_string(),
            convgrad: env!("CARGO_PKG_VERSION").to_string(),
            kernels: kernels_hash(dev.arch()),
        }
    }
}

/// FNV-1a (64 bits) of the built kernels of `arch`, hashed once per process.
fn kernels_hash(arch: &str) -> String {
    static DONE: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
    let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, h)) = done.iter().find(|(a, _)| a == arch) {
        return h.clone();
    }
    let h = crate::code_objects::code_object(arch).map_or("none".to_string(), |b| {
        let h = b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| (h ^ x as u64).wrapping_mul(0x100_0000_01b3));
        format!("{h:016x}")
    });
    done.push((arch.to_string(), h.clone()));
    h
}

/// One setup's measurements.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    /// The setup measured on.
    pub setup: Setup,
    /// The winners, in `cargo xtask tune`'s entry format.
    pub entries: Vec<Entry>,
}

/// The whole file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindFile {
    /// Format version ([`VERSION`]).
    pub version: u32,
    /// One section per setup.
    pub sections: Vec<Section>,
}

/// The lookup key of an entry: operation, types, problem, layout, deterministic.
pub(crate) fn same_key(a: &Entry, b: &Entry) -> bool {
    (a.op, &a.types, &a.problem, &a.layout, a.deterministic) == (b.op, &b.types, &b.problem, &b.layout, b.deterministic)
}

impl FindFile {
    /// The file at `path`, or `None` where it is missing, unreadable, does
    /// not parse or has another version (each logged, none an error).
    pub fn load(path: &Path) -> Option<FindFile> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                if e.kind() != std::io::ErrorKind::NotFound {
                    log::warn!("find cache {}: cannot read it ({e}); ignored", path.display());
                }
                return None;
            }
        };
        match serde_json::from_str::<FindFile>(&text) {
            Ok(f) if f.version == VERSION => Some(f),
            Ok(f) => {
                log::warn!("find cache {}: version {} (not {VERSION}); ignored", path.display(), f.version);
                None
            }
            Err(e) => {
                log::warn!("find cache {}: does not parse ({e}); ignored", path.display());
                None
            }
        }
    }
    /// The entries of `setup` (none for a setup the file lacks).
    pub fn entries(&self, setup: &Setup) -> Vec<Entry> {
        self.sections.iter().filter(|s| &s.setup == setup).flat_map(|s| s.entries.iter().cloned()).collect()
    }
    /// Adds `e` to `setup`'s section, replacing an entry of the same key.
    pub fn insert(&mut self, setup: &Setup, e: Entry) {
        let at = match self.sections.iter().position(|s| &s.setup == setup) {
            Some(at) => at,
            None => {
                self.sections.push(Section { setup: setup.clone(), entries: vec![] });
                self.sections.len() - 1
            }
        };
        let entries = &mut self.sections[at].entries;
        entries.retain(|o| !same_key(o, &e));
        entries.push(e);
    }
}

/// Stores `e` for `setup` in the file at `path`: reads what is there now
/// (other processes' entries are kept), adds `e`, writes a temporary file
/// and renames it over the old one.
pub fn store(path: &Path, setup: &Setup, e: Entry) -> std::io::Result<()> {
    let mut file = FindFile::load(path).unwrap_or(FindFile { version: VERSION, sections: vec![] });
    file.insert(setup, e);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let name = path.file_name().map_or("kernels.json".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.{}.{nanos}.tmp", std::process::id()));
    let text = serde_json::to_string_pretty(&file).map_err(std::io::Error::other)? + "\n";
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

