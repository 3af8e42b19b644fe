//! `target/kernels/manifest.json` and the per-arch `target/kernels/<arch>/kernels.json`.
//!
//! ```json
//! {
//!   "format": 1,
//!   "conv_args": { "abi": "0x1234abcd", "size": 512 },
//!   "archs": { "gfx942": { "family": "cdna", "target": "amdgcn-amd-amdhsa",
//!              "code_object": "gfx942/convgrad.hsaco", "bytes": 123, "fnv64": "…",
//!              "opt": "default", "opt_passes": "…", "missing": [], "unlisted": [] } },
//!   "kernels": [ { "name": "…", "arch": "gfx942", "family": "cdna", "op": "BwdWeight",
//!                  "types": "f16", "atom": "Mfma32x32x8", "matrix_instruction": "v_mfma_f32_32x32x8",
//!                  "tile": { "bm": 128, "bn": 128, "bk": 32, "waves_m": 2, "waves_n": 2 },
//!                  "workgroup_size": 256, "lds_bytes": 40960,
//!                  "amdgpu": { "vgpr_count": …, "agpr_count": …, "sgpr_count": …, "scratch_bytes": 0,
//!                              "vgpr_spill_count": 0, "sgpr_spill_count": 0, "occupancy_waves_per_simd": 2, … } } ]
//! }
//! ```
//! `amdgpu` is present on AMD archs, `nvptx` on NVIDIA ones.

use crate::build::ARCHS;
use crate::util;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Manifest format version.
pub const FORMAT: u32 = 1;

/// `target/kernels/manifest.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: u32,
    /// The kernel argument block every kernel takes (NVIDIA by value, AMD by pointer).
    pub conv_args: ConvArgsInfo,
    /// Per built architecture.
    pub archs: BTreeMap<String, ArchEntry>,
    /// Every kernel of every built architecture.
    pub kernels: Vec<KernelEntry>,
}

/// `convgrad_types::params::ConvArgs` as this xtask was compiled with it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConvArgsInfo {
    /// `ConvArgs::ABI`, as `0x%08x`.
    pub abi: String,
    /// `size_of::<ConvArgs>()`.
    pub size: u32,
}

/// One architecture's code object.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ArchEntry {
    /// `cdna`, `rdna3`, `nvidia`.
    pub family: String,
    /// Rust target triple.
    pub target: String,
    /// Path relative to `target/kernels`.
    pub code_object: String,
    /// Size of the code object.
    pub bytes: u64,
    /// FNV-1a 64 of the code object.
    pub fnv64: String,
    /// `default` or `release` (see the pipeline docs).
    pub opt: String,
    /// The opt and llc settings used.
    pub opt_passes: String,
    /// INSTANCES for this family missing from the object.
    pub missing: Vec<String>,
    /// Kernels in the object that INSTANCES does not list.
    pub unlisted: Vec<String>,
}

/// Tile configuration of an instance.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Tile {
    /// Rows of the block tile.
    pub bm: u32,
    /// Columns of the block tile.
    pub bn: u32,
    /// Reduction step.
    pub bk: u32,
    /// Waves along M.
    pub waves_m: u32,
    /// Waves along N.
    pub waves_n: u32,
}

/// One kernel on one architecture.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KernelEntry {
    /// Symbol name (= instance name).
    pub name: String,
    /// Architecture.
    pub arch: String,
    /// Family.
    pub family: String,
    /// `Op` (Debug name).
    pub op: String,
    /// `TypeConfig::name()`.
    pub types: String,
    /// `AtomKind` (Debug name).
    pub atom: String,
    /// Mnemonic prefix the instance's matrix instruction has (`None` for FMA).
    pub matrix_instruction: Option<String>,
    /// Tile.
    pub tile: Tile,
    /// Threads per workgroup (the launch bound the pipeline set).
    pub workgroup_size: u32,
    /// Dynamic LDS bytes it is launched with (`Instance::lds_bytes`).
    pub lds_bytes: u32,
    /// AMD resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amdgpu: Option<AmdResources>,
    /// NVIDIA resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvptx: Option<NvResources>,
}

/// One kernel argument from the AMD metadata.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KernArg {
    /// Byte offset in the kernarg segment.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// `global_buffer`, `by_value`, hidden kinds...
    pub value_kind: String,
}

/// Resources of an AMD kernel, from the `.amdhsa.kernels` metadata note.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AmdResources {
    /// `.vgpr_count` (on gfx90a/gfx942 the unified count: arch VGPRs rounded to 4, plus AGPRs).
    pub vgpr_count: u32,
    /// `.agpr_count`.
    pub agpr_count: u32,
    /// `.sgpr_count` (VCC, flat scratch and XNACK included).
    pub sgpr_count: u32,
    /// `.private_segment_fixed_size`: scratch bytes per work-item.
    pub scratch_bytes: u32,
    /// `.uses_dynamic_stack`.
    pub dynamic_stack: bool,
    /// `.vgpr_spill_count`.
    pub vgpr_spill_count: u32,
    /// `.sgpr_spill_count`.
    pub sgpr_spill_count: u32,
    /// `.group_segment_fixed_size`: static LDS (the dynamic part is `lds_bytes`).
    pub static_lds_bytes: u32,
    /// `.kernarg_segment_size`.
    pub kernarg_size: u32,
    /// `.args`.
    pub args: Vec<KernArg>,
    /// `.max_flat_workgroup_size`.
    pub max_flat_workgroup_size: u32,
    /// `.wavefront_size`.
    pub wavefront_size: u32,
    /// Waves per SIMD the resources allow (see `amdgpu::occupancy`).
    pub occupancy_waves_per_simd: u32,
    /// What limits it: `vgpr`, `sgpr`, `lds`, `workgroup` or `max`.
    pub occupancy_limited_by: String,
}

/// One `.param` of a PTX entry.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PtxParam {
    /// Parameter name.
    pub name: String,
    /// Its PTX type and qualifiers (e.g. `.u64 .ptr .align 1`).
    pub ty: String,
}

/// Resources of an NVIDIA kernel.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NvResources {
    /// `ptxas` (registers/spills measured) or `ptx` (declarations only).
    pub source: String,
    /// Registers per thread (ptxas).
    pub registers: Option<u32>,
    /// Spill store bytes (ptxas).
    pub spill_store_bytes: Option<u32>,
    /// Spill load bytes (ptxas).
    pub spill_load_bytes: Option<u32>,
    /// Stack frame bytes (ptxas).
    pub stack_frame_bytes: Option<u32>,
    /// PTX virtual registers declared, per `.reg` type (`b32`, `b64`, `pred`...).
    pub ptx_regs: BTreeMap<String, u32>,
    /// Bytes of `.local` memory the PTX declares (a stack: 0 expected).
    pub local_bytes: u32,
    /// `.maxntid`.
    pub maxntid: Option<Vec<u32>>,
    /// `.param` list.
    pub params: Vec<PtxParam>,
}

/// `target/kernels/<arch>/kernels.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ArchFile {
    /// The arch's entry of [`Manifest::archs`].
    pub arch: ArchEntry,
    /// Its kernels.
    pub kernels: Vec<KernelEntry>,
}

impl ArchFile {
    /// Pretty JSON.
    pub fn to_json(&self) -> Result<String> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }
}

impl Manifest {
    /// Pretty JSON.
    pub fn to_json(&self) -> Result<String> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }
    /// Reads `target/kernels/manifest.json`.
    pub fn load() -> Result<Manifest> {
        let path = util::kernels_dir().join("manifest.json");
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "reading {} (run `cargo xtask build-kernels` first)",
                path.display()
            )
        })?;
        let m: Manifest =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        Ok(m)
    }
}

/// The ABI info of `ConvArgs`.
pub fn conv_args() -> ConvArgsInfo {
    use convgrad_types::params::ConvArgs;
    ConvArgsInfo {
        abi: format!("{:#010x}", ConvArgs::ABI),
        size: std::mem::size_of::<ConvArgs>() as u32,
    }
}

/// Merges every `target/kernels/<arch>/kernels.json` whose code object exists.
pub fn assemble() -> Result<Manifest> {
    let mut m = Manifest {
        format: FORMAT,
        conv_args: conv_args(),
        archs: BTreeMap::new(),
        kernels: Vec::new(),
    };
    for arch in ARCHS {
        let f = util::kernels_dir().join(arch.name).join("kernels.json");
        if !f.exists() || !arch.object_path().exists() {
            continue;
        }
        let text =
            std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        let Ok(af) = serde_json::from_str::<ArchFile>(&text) else {
            eprintln!(
                "warning: {} is from another pipeline version; rebuild {} to include it",
                f.display(),
                arch.name
            );
            continue;
        };
        m.archs.insert(arch.name.to_string(), af.arch);
        m.kernels.extend(af.kernels);
    }
    Ok(m)
}
