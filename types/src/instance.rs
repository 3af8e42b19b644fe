//! Kernel instances: every (operation, types, tile, matrix atom) the device
//! crate is built with, for which GPU families.
//!
//! [`for_each_instance!`] is the single list. The device crate expands it into
//! kernels, this crate into [`INSTANCES`] (read by the host's heuristic and by
//! the build pipeline for workgroup sizes and LDS bytes).

use crate::dtype::TypeConfig;

/// GPU families, each with its own matrix instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// AMD CDNA2/CDNA3 (gfx90a, gfx942): wave64, MFMA.
    Cdna,
    /// AMD CDNA4 (gfx950): every [`Family::Cdna`] kernel, plus kernels on the
    /// double-k MFMAs only gfx950 has (`v_mfma_f32_32x32x16_*`,
    /// `v_mfma_f32_16x16x32_*`; built with `convgrad_cdna4`).
    Cdna4,
    /// AMD RDNA3 (gfx1100): wave32, WMMA.
    Rdna3,
    /// AMD RDNA4 (gfx1200, gfx1201): wave32, GFX12 WMMA (no operand replicas).
    Rdna4,
    /// NVIDIA sm_80: warp32, mma.sync.
    Nvidia,
    /// NVIDIA sm_90 (Hopper): every [`Family::Nvidia`] kernel, plus warpgroup
    /// kernels on `wgmma.mma_async` (built for `sm_90a` only).
    Hopper,
}

impl Family {
    /// All families.
    pub const ALL: [Family; 6] = [Family::Cdna, Family::Cdna4, Family::Rdna3, Family::Rdna4, Family::Nvidia, Family::Hopper];
    /// Threads per wave (warp).
    pub const fn wave(self) -> u32 {
        match self {
            Family::Cdna | Family::Cdna4 => 64,
            Family::Rdna3 | Family::Rdna4 | Family::Nvidia | Family::Hopper => 32,
        }
    }
    /// The `convgrad_family` cfg value the device crate is built with.
    pub const fn cfg(self) -> &'static str {
        match self {
            Family::Cdna | Family::Cdna4 => "cdna",
            Family::Rdna3 => "rdna3",
            Family::Rdna4 => "rdna4",
            Family::Nvidia | Family::Hopper => "nvidia",
        }
    }
    /// Whether a kernel built for `other` runs here (Hopper runs NVIDIA's,
    /// CDNA4 runs CDNA's).
    pub const fn runs(self, other: Family) -> bool {
        matches!(
            (self, other),
            (Family::Cdna, Family::Cdna)
                | (Family::Cdna4, Family::Cdna | Family::Cdna4)
                | (Family::Rdna3, Family::Rdna3)
                | (Family::Rdna4, Family::Rdna4)
                | (Family::Nvidia, Family::Nvidia)
                | (Family::Hopper, Family::Nvidia | Family::Hopper)
        )
    }
    /// Family of a build architecture (`gfx90a`, `gfx942`, `gfx950`, `gfx1100`, `gfx1200`, `gfx1201`, `sm_80`, `sm_90`).
    pub fn of_arch(arch: &str) -> Option<Family> {
        match arch {
            "gfx90a" | "gfx942" => Some(Family::Cdna),
            "gfx950" => Some(Family::Cdna4),
            "gfx1100" => Some(Family::Rdna3),
            "gfx1200" | "gfx1201" => Some(Family::Rdna4),
            "sm_80" => Some(Family::Nvidia),
            "sm_90" => Some(Family::Hopper),
            _ => None,
        }
    }
}

/// Operations with kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Implicit-GEMM backward-weight main kernel.
    BwdWeight,
    /// Runtime smoke test: one matrix atom through LDS and a barrier.
    Smoke,
    /// Direct backward-weight for tiny per-group GEMMs (depthwise, small C and K):
    /// channel vectors x filter taps per thread, pixel streams summed in LDS
    /// (or one thread per weight element when the layout has no vector run).
    BwdWeightDirect,
    /// Implicit-GEMM backward-data: one GEMM per stride-residue slice, all
    /// slices in one launch, multi-D epilogue.
    BwdData,
    /// Direct backward-data for tiny per-group GEMMs (depthwise, small C and
    /// K): channel vectors x a run of pixels per thread (or one thread per
    /// element when the layout has no vector run).
    BwdDataDirect,
    /// Depthwise backward-data by column strips: each thread keeps three rows
    /// of accumulators and reads every `dy` row of its strip once (3-tall
    /// filter classes, one `x` window per row; else [`Op::BwdDataDirect`]).
    BwdDataDepthwise,
    /// Backward-data by tap shifts (stride 1, at most `bk` output and
    /// `bn / waves_n` input channels per group): one halo tile of `dy` and
    /// the filter of `waves_n` groups in LDS, each tap a row shift of the
    /// same tile fed to the matrix atoms.
    BwdDataTapShift,
    /// Backward-weight by tap shifts (stride 1, at most `bk` output and
    /// `bn / waves_n` input channels per group): per tile of `bm` grid rows,
    /// `dy` and the halo of `x` for `waves_n` groups in LDS, each tap a row
    /// shift of the halo; split-K over the tiles.
    BwdWeightTapShift,
    /// [`Op::BwdWeightTapShift`] at strides up to 4 along y and x (1 along z):
    /// the halo of `x` is staged one phase grid (pixels of one remainder
    /// modulo the stride) at a time, and each tap reads its phase's halo.
    /// A kernel of its own, so that stride 1 runs without the phase tests.
    BwdWeightTapShiftPhased,
    /// Depthwise backward-weight by filter rows: a thread keeps one filter
    /// row's taps for a channel vector and slides a window of `x` along the
    /// output rows (one `dy` and `stride` `x` loads per pixel).
    BwdWeightDepthwise,
    /// Not a convolution kernel: backward-weight's pre-pass for small-C
    /// inputs (RGB stems), which unfolds the taps of the trailing spatial
    /// axes into channels of a workspace copy of `x` (zero padded to whole
    /// 16-byte vectors) so that the GEMM on it loads vectors.
    BwdWeightUnfold,
    /// Backward-data by tap shifts over row segments (Hopper warpgroups;
    /// stride 1, at most `bk` = 64 output channels per group, wide images):
    /// a workgroup keeps one group's filter for `bn` input channels in LDS
    /// and walks tiles of `bm / 64` image rows by 64 columns, staging each
    /// tile's `dy` halo once; every tap reads the halo one line shift on.
    BwdDataRows,
    /// Backward-data as one plain GEMM fed by the tensor memory accelerator
    /// (Hopper; 1x1 filters, stride 1, no padding, channels-last `dY` whose
    /// pixels are evenly spaced): one thread loads each K-slab of `dY` and
    /// `W` with `cp.async.bulk.tensor` into a ring of LDS stages, guarded by
    /// mbarriers; the warpgroups only wait and issue `wgmma`.
    BwdDataTma,
    /// Backward-weight as one plain GEMM on TMA loads (Hopper; the
    /// [`Op::BwdDataTma`] main loop): 1x1 filters, stride 1, no padding,
    /// channels-last `dY` and `X` with evenly spaced pixels, so both
    /// operands are plain `(channels, G, pixels)` tensors read as MN-major
    /// boxes; split-K over the pixels like [`Op::BwdWeight`].
    BwdWeightTma,
}

impl Op {
    /// The kernel families of backward-weight: the ones its selection and
    /// tuning consider (a new family adds itself here).
    pub const BWD_WEIGHT: &'static [Op] =
        &[Op::BwdWeight, Op::BwdWeightDirect, Op::BwdWeightTapShift, Op::BwdWeightTapShiftPhased, Op::BwdWeightDepthwise, Op::BwdWeightTma];
    /// The kernel families of backward-data.
    pub const BWD_DATA: &'static [Op] = &[Op::BwdData, Op::BwdDataDirect, Op::BwdDataDepthwise, Op::BwdDataTapShift, Op::BwdDataRows, Op::BwdDataTma];

    /// Whether its kernels run the TMA main loop (a producer warp beside
    /// the warpgroups, tensor maps in the argument block, mbarriers in LDS).
    pub const fn tma(self) -> bool {
        matches!(self, Op::BwdDataTma | Op::BwdWeightTma)
    }
}

/// Matrix atoms: one hardware matrix instruction (or the scalar FMA fallback).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomKind {
    /// `v_mfma_f32_32x32x8{f16,bf16_1k}`, wave64.
    Mfma32x32x8,
    /// `v_mfma_f32_16x16x16{f16,bf16_1k}`, wave64.
    Mfma16x16x16,
    /// gfx950 `v_mfma_f32_32x32x16_{f16,bf16}`, wave64 (8 operand elements a lane).
    Mfma32x32x16,
    /// gfx950 `v_mfma_f32_16x16x32_{f16,bf16}`, wave64 (8 operand elements a lane).
    Mfma16x16x32,
    /// `v_wmma_f32_16x16x16_{f16,bf16}`, wave32.
    Wmma16x16x16,
    /// GFX12 (RDNA4) `v_wmma_f32_16x16x16_{f16,bf16}`, wave32: the same
    /// instruction name with 8 operand elements a lane (no replicas).
    Wmma16x16x16Gfx12,
    /// `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}`, warp32.
    Mma16x8x16,
    /// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`, warp32: f32
    /// operands rounded to TF32 (`cvt.rna.tf32.f32`) first. Fed by the
    /// double-buffered main loop (4-byte elements, no `ldmatrix`).
    Mma16x8x8Tf32,
    /// `wgmma.mma_async.sync.aligned.m64n128k16.f32.{f16,bf16}`: one warpgroup
    /// (4 warps, 128 threads), both operands in LDS.
    Wgmma64x128x16,
    /// `wgmma.mma_async.sync.aligned.m64n64k16.f32.{f16,bf16}`: the same for
    /// 64 columns.
    Wgmma64x64x16,
    /// Scalar f32 FMA per thread (f32 data, and the finishing kernels).
    Fma,
}

impl AtomKind {
    /// `(M, N, K)` of one instruction.
    pub const fn shape(self) -> (u32, u32, u32) {
        match self {
            AtomKind::Mfma32x32x8 => (32, 32, 8),
            AtomKind::Mfma32x32x16 => (32, 32, 16),
            AtomKind::Mfma16x16x32 => (16, 16, 32),
            AtomKind::Mfma16x16x16 | AtomKind::Wmma16x16x16 | AtomKind::Wmma16x16x16Gfx12 => (16, 16, 16),
            AtomKind::Mma16x8x16 => (16, 8, 16),
            AtomKind::Mma16x8x8Tf32 => (16, 8, 8),
            AtomKind::Wgmma64x128x16 => (64, 128, 16),
            AtomKind::Wgmma64x64x16 => (64, 64, 16),
            AtomKind::Fma => (1, 1, 1),
        }
    }
    /// Hopper's warpgroup instructions: 128 threads per "wave", operands in LDS.
    pub const fn warpgroup(self) -> bool {
        matches!(self, AtomKind::Wgmma64x128x16 | AtomKind::Wgmma64x64x16)
    }
    /// gfx950's double-k MFMAs: twice the k of gfx942's per instruction, so
    /// the tile heuristics take them before an equal gfx942 tile.
    pub const fn double_k(self) -> bool {
        matches!(self, AtomKind::Mfma32x32x16 | AtomKind::Mfma16x16x32)
    }
    /// NVIDIA's tensor-core atoms (mma.sync, wgmma): multistage main loops,
    /// accumulators held in column pairs.
    pub const fn nvidia(self) -> bool {
        matches!(self, AtomKind::Mma16x8x16) || self.warpgroup()
    }
    /// Instruction mnemonic prefix that must appear in the disassembly.
    pub const fn mnemonic(self) -> Option<&'static str> {
        match self {
            AtomKind::Mfma32x32x8 => Some("v_mfma_f32_32x32x8"),
            AtomKind::Mfma16x16x16 => Some("v_mfma_f32_16x16x16"),
            AtomKind::Mfma32x32x16 => Some("v_mfma_f32_32x32x16"),
            AtomKind::Mfma16x16x32 => Some("v_mfma_f32_16x16x32"),
            AtomKind::Wmma16x16x16 | AtomKind::Wmma16x16x16Gfx12 => Some("v_wmma_f32_16x16x16"),
            AtomKind::Mma16x8x16 => Some("mma.sync.aligned.m16n8k16"),
            AtomKind::Mma16x8x8Tf32 => Some("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
            AtomKind::Wgmma64x128x16 => Some("wgmma.mma_async.sync.aligned.m64n128k16"),
            AtomKind::Wgmma64x64x16 => Some("wgmma.mma_async.sync.aligned.m64n64k16"),
            AtomKind::Fma => None,
        }
    }
}

/// A block tile: `bm x bn` of the result per workgroup, `bk` of the
/// reduction per main-loop step, `waves_m x waves_n` waves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TileConfig {
    /// Rows of the block tile (GEMM M).
    pub bm: u32,
    /// Columns of the block tile (GEMM N).
    pub bn: u32,
    /// Reduction step.
    pub bk: u32,
    /// Waves along M.
    pub waves_m: u32,
    /// Waves along N.
    pub waves_n: u32,
    /// Stages of the main loop where the instance sets them (0: the
    /// atom's choice, [`TileConfig::stages`]): TMA tiles with a deeper ring
    /// in one workgroup per SM for grids that do not fill two.
    pub ring: u32,
}

impl TileConfig {
    /// The tile of a kernel's const parameters (`BM, BN, BK, WM, WN`).
    pub const fn of(bm: usize, bn: usize, bk: usize, waves_m: usize, waves_n: usize) -> TileConfig {
        TileConfig { bm: bm as u32, bn: bn as u32, bk: bk as u32, waves_m: waves_m as u32, waves_n: waves_n as u32, ring: 0 }
    }
    /// The tile with `stages` in its main loop's ring (0: the atom's choice).
    pub const fn with_ring(self, stages: usize) -> TileConfig {
        TileConfig { ring: stages as u32, ..self }
    }
    /// Threads per workgroup for a family's wave size.
    pub const fn threads(&self, wave: u32) -> u32 {
        self.waves_m * self.waves_n * wave
    }
    /// LDS bytes: A (`bm` rows) and B (`bn` rows) of `bk + LDS_PAD` elements
    /// of `elem_bytes` each (K-contiguous), double-buffered.
    pub const fn lds_bytes(&self, elem_bytes: u32) -> u32 {
        2 * (self.bm + self.bn) * (self.bk + Self::LDS_PAD) * elem_bytes
    }
    /// Padding elements per K-contiguous LDS row (spreads rows over banks,
    /// keeps 16-byte alignment for 2-byte types).
    pub const LDS_PAD: u32 = 8;
    /// Main-loop stages in flight with `atom`: the asynchronous multistage
    /// pipeline on NVIDIA (copies run `stages - 1` steps ahead), double
    /// buffering elsewhere.
    pub const fn stages(&self, atom: AtomKind) -> u32 {
        if self.ring != 0 {
            return self.ring;
        }
        match atom {
            // Copies `stages - 2` steps ahead, plus the slab the instructions in
            // flight read: 96 k ahead on 32-deep slabs, 64 on 64-deep ones
            // (three stages keep two workgroups of 128x64 on an SM).
            a if a.warpgroup() => if self.bk >= 64 { 3 } else { 5 },
            AtomKind::Mma16x8x16 => {
                if self.bk >= 64 {
                    3
                } else {
                    4
                }
            }
            _ => 2,
        }
    }
    /// Bytes of one operand's slab of `rows` in the multistage pipeline, which
    /// keeps the operand's global layout: `[rows][bk + pad]` (K-contiguous) or
    /// `[bk][rows + pad]` (row-contiguous), whichever is larger. The warpgroup
    /// atoms' swizzled layouts spread over the banks without padding.
    pub const fn slab_bytes(rows: u32, bk: u32, elem_bytes: u32, atom: AtomKind) -> u32 {
        if atom.warpgroup() {
            return rows * bk * elem_bytes;
        }
        let (k_major, mn_major) = (rows * (bk + Self::LDS_PAD), bk * (rows + Self::LDS_PAD));
        (if k_major > mn_major { k_major } else { mn_major }) * elem_bytes
    }
    /// Row length (f32) of the epilogue's result tile in LDS. NVIDIA's
    /// accumulators go out as column pairs, a half-warp's 8-byte stores
    /// covering 4 rows x 8 columns: rows padded to start 8 banks apart do not
    /// collide (4 apart collided 2-way). The AMD atoms store along rows: no
    /// padding, which keeps 128x128 inside 64 KiB.
    pub const fn epilogue_ld(&self, atom: AtomKind) -> u32 {
        if atom.nvidia() { self.bn + 8 } else { self.bn }
    }
    /// LDS bytes of the epilogue's f32 result tile, `[bm][epilogue_ld]`.
    pub const fn epilogue_bytes(&self, atom: AtomKind) -> u32 {
        self.bm * self.epilogue_ld(atom) * 4
    }
    /// LDS bytes of the main loop with `atom` on `elem_bytes` inputs: the
    /// multistage (NVIDIA) slabs, or AMD's double buffer.
    pub const fn main_lds_bytes(&self, atom: AtomKind, elem_bytes: u32) -> u32 {
        if atom.nvidia() {
            self.stages(atom) * self.stage_bytes(elem_bytes, atom)
        } else {
            self.lds_bytes(elem_bytes)
        }
    }
    /// Whether the epilogue's row table (8 bytes per tile row after the
    /// result tile) fits the LDS the main loop already takes, so it costs
    /// no occupancy (NVIDIA tiles; AMD's 128x128 result tile fills 64 KiB).
    pub const fn row_table_fits(&self, atom: AtomKind, elem_bytes: u32) -> bool {
        self.epilogue_bytes(atom) + 8 * self.bm <= self.main_lds_bytes(atom, elem_bytes)
    }
    /// Tap-shift tiles ([`Op::BwdDataTapShift`]): rows of `dy` staged past the
    /// `bm` output rows, which bounds the largest tap shift.
    pub const HALO_SLACK: u32 = 64;
    /// Tap-shift tiles: most filter taps (their weights all sit in LDS).
    pub const HALO_TAPS: u32 = 9;
    /// Tap-shift tiles: `dy` row length in LDS, elements (`waves_n` groups of
    /// `bk` channels, padded).
    pub const fn halo_a_ld(&self) -> u32 {
        self.waves_n * self.bk + Self::LDS_PAD
    }
    /// Tap-shift tiles: weight row length in LDS (`bn / waves_n` channels; padded
    /// for `ldmatrix` on mma.sync, else packed to keep AMD under 64 KiB).
    pub const fn halo_b_ld(&self, atom: AtomKind) -> u32 {
        let c = self.bn / self.waves_n;
        if matches!(atom, AtomKind::Mma16x8x16) { c + Self::LDS_PAD } else { c }
    }
    /// Tap-shift tiles: bytes of the `dy` halo (`bm + HALO_SLACK` rows).
    pub const fn halo_a_bytes(&self, elem_bytes: u32) -> u32 {
        (self.bm + Self::HALO_SLACK) * self.halo_a_ld() * elem_bytes
    }
    /// Tap-shift tiles: LDS bytes of the main loop (halo, then the weights of
    /// `waves_n` groups x `HALO_TAPS` taps x `bk` rows).
    pub const fn halo_main_bytes(&self, atom: AtomKind, elem_bytes: u32) -> u32 {
        let b = self.waves_n * Self::HALO_TAPS * self.bk * self.halo_b_ld(atom) * elem_bytes;
        self.halo_a_bytes(elem_bytes) + b
    }
    /// Tap-shift tiles, backward-weight: `x` row length in LDS (`bn` channels, padded).
    pub const fn halo_x_ld(&self) -> u32 {
        self.bn + Self::LDS_PAD
    }
    /// Tap-shift tiles, backward-weight: LDS bytes (`dy` for `bm` grid rows, then
    /// the `x` halo of `bm + HALO_SLACK`).
    pub const fn halo_w_bytes(&self, elem_bytes: u32) -> u32 {
        (self.bm * self.halo_a_ld() + (self.bm + Self::HALO_SLACK) * self.halo_x_ld()) * elem_bytes
    }
    /// Row-segment tiles ([`Op::BwdDataRows`]): 128-byte lines (pixels of
    /// 64 channels) of the `dy` halo, `(bm / 64 + (Y-1)*dil) x (64 + (X-1)*dil)`
    /// at most (a 3x3 filter's 4 x 66 for two image rows).
    pub const ROW_HALO_LINES: u32 = 288;
    /// Row-segment tiles: LDS bytes of the halo's region, which the
    /// epilogue's result tile and row table reuse (whichever is larger, on
    /// the 1024-byte boundary the swizzle repeats at).
    pub const fn rows_halo_bytes(&self, atom: AtomKind, elem_bytes: u32) -> u32 {
        let halo = Self::ROW_HALO_LINES * self.bk * elem_bytes;
        let tile = self.epilogue_bytes(atom) + 8 * self.bm;
        (if halo > tile { halo } else { tile }).next_multiple_of(1024)
    }
    /// Row-segment tiles: LDS bytes (the halo's region, then `HALO_TAPS`
    /// taps of `bk x bn` weights).
    pub const fn rows_lds_bytes(&self, atom: AtomKind, elem_bytes: u32) -> u32 {
        self.rows_halo_bytes(atom, elem_bytes) + Self::HALO_TAPS * self.bk * self.bn * elem_bytes
    }
    /// TMA tiles ([`Op::BwdDataTma`]): LDS byte of the first stage's
    /// mbarrier, past both the stages and the epilogue's result tile with
    /// its row table (the epilogue reuses the stages' bytes, never these).
    pub const fn tma_mbar_offset(&self, atom: AtomKind, elem_bytes: u32) -> u32 {
        let main = self.main_lds_bytes(atom, elem_bytes);
        let tile = self.epilogue_bytes(atom) + 8 * self.bm;
        (if main > tile { main } else { tile }).next_multiple_of(8)
    }
    /// Bytes of one multistage stage (A then B).
    pub const fn stage_bytes(&self, elem_bytes: u32, atom: AtomKind) -> u32 {
        Self::slab_bytes(self.bm, self.bk, elem_bytes, atom) + Self::slab_bytes(self.bn, self.bk, elem_bytes, atom)
    }
}

/// One kernel instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instance {
    /// Kernel symbol name (the same on every family that builds it).
    pub name: &'static str,
    /// Families it is built for.
    pub families: &'static [Family],
    /// Operation.
    pub op: Op,
    /// Type combination.
    pub types: TypeConfig,
    /// Tile.
    pub tile: TileConfig,
    /// Matrix atom.
    pub atom: AtomKind,
}

impl Instance {
    /// Workgroup size on `family`.
    pub const fn threads(&self, family: Family) -> u32 {
        match self.atom {
            // The FMA atom is one thread: its "waves" are single threads.
            AtomKind::Fma => self.tile.waves_m * self.tile.waves_n,
            // Its "waves" are warpgroups; a TMA tile has a producer warp too.
            a if a.warpgroup() => self.tile.waves_m * self.tile.waves_n * 128 + if self.op.tma() { 32 } else { 0 },
            _ => self.tile.threads(family.wave()),
        }
    }
    /// Workgroups of the GEMM a compute unit holds at once on `family`, by
    /// which backward-weight's automatic split-K sizes one round: at least
    /// 8 warps or [`Instance::min_blocks`], more where measured. Hopper's
    /// one-warpgroup 64x128 tile keeps three (ncu on the H200: three by
    /// registers, 139 a thread, and by its 60 KiB of LDS); splitting for
    /// three instead of two per SM took 7-13% off five U-Net and ResNet-50
    /// layers (docs/tuning-log.md, session 23).
    pub const fn resident_per_cu(&self, family: Family) -> u32 {
        let floor = {
            let warps8 = 256 / self.threads(family);
            if warps8 > self.min_blocks() { warps8 } else { self.min_blocks() }
        };
        match (family, self.atom, self.tile.bm, self.tile.bn, self.tile.bk) {
            // Row-segment tiles hold their filter in LDS, TMA tiles their
            // ring: as many as fit an SM's 227 KiB (1 KiB more each for the
            // driver).
            _ if matches!(self.op, Op::BwdDataRows) || self.op.tma() => {
                let fit = 227 * 1024 / (self.lds_bytes() + 1024);
                if fit < floor { fit } else { floor }
            }
            (Family::Hopper, AtomKind::Wgmma64x128x16, 64, 128, 32) => 3,
            _ => floor,
        }
    }
    /// Workgroups per SM the NVIDIA build keeps resident at least (the
    /// launch bound `.minnctapersm`, which caps registers per thread); the
    /// automatic split-K sizes its round of workgroups per CU with it on
    /// every family.
    pub const fn min_blocks(&self) -> u32 {
        match self.op {
            // Latency-bound streams of loads: four 256-thread blocks (64
            // registers) hide more of it than two (128).
            Op::BwdWeightDirect => 4,
            Op::BwdWeightTapShift | Op::BwdWeightTapShiftPhased => 3,
            _ => 2,
        }
    }
    /// LDS bytes it is launched with.
    pub const fn lds_bytes(&self) -> u32 {
        match self.op {
            Op::BwdDataDirect | Op::BwdDataDepthwise | Op::BwdWeightUnfold => 0,
            // The channel-vector path sums its streams in LDS: 256 threads x 4
            // f32 lanes (`bwd_data_direct::LANES`, shared by both direct kernels).
            Op::BwdWeightDirect => 256 * 4 * 4,
            // The depthwise kernel sums its streams the same way, one tap at a time.
            Op::BwdWeightDepthwise => 256 * 4 * 4,
            // A (m x k) and B (n x k) f16 tiles, unpadded.
            Op::Smoke => (self.tile.bm + self.tile.bn) * self.tile.bk * 2,
            // The halo tiles, or every wave's sums of every tap as f32 (the
            // fragments of the atoms, which cover `bk x bn / waves_n`).
            Op::BwdWeightTapShift | Op::BwdWeightTapShiftPhased => {
                let main = self.tile.halo_w_bytes(self.types.act().bytes() as u32);
                let sums = self.tile.bk * TileConfig::HALO_TAPS * self.tile.bn * 4;
                if main > sums { main } else { sums }
            }
            // The result tile and its row table fit in the halo's place.
            Op::BwdDataRows => self.tile.rows_lds_bytes(self.atom, self.types.act().bytes() as u32),
            // The halo and weights, or the result tile and its row table.
            Op::BwdDataTapShift => {
                let main = self.tile.halo_main_bytes(self.atom, self.types.act().bytes() as u32);
                let tile = self.tile.epilogue_bytes(self.atom) + 8 * self.tile.bm;
                if main > tile { main } else { tile }
            }
            // The stages (or the result tile and its row table), then two
            // 8-byte mbarriers per stage (full, empty).
            Op::BwdDataTma | Op::BwdWeightTma => {
                let elem = self.types.act().bytes() as u32;
                self.tile.tma_mbar_offset(self.atom, elem) + 16 * self.tile.stages(self.atom)
            }
            _ => {
                // Main loop (double-buffered A and B slabs) or the f32 result
                // tile the epilogue goes through, whichever is larger.
                let main = self.tile.main_lds_bytes(self.atom, self.types.act().bytes() as u32);
                let tile = self.tile.epilogue_bytes(self.atom);
                if main > tile { main } else { tile }
            }
        }
    }
    /// Whether the instance is built for `family`.
    pub fn on(&self, family: Family) -> bool {
        self.families.iter().any(|&f| family.runs(f))
    }
}

/// The list of instances. `$m!(name, [families], op, types, bm, bn, bk, waves_m, waves_n, atom)`
/// is invoked once per instance; extra leading tokens are passed through.
#[macro_export]
macro_rules! for_each_instance {
    ($m:ident $(, $extra:tt)*) => {
        // Backward-weight, f16 and bf16 on the matrix units.
        $m!($($extra,)* bwdw_f16_128x128x32_mfma32, [Cdna], BwdWeight, F16, 128, 128, 32, 2, 4, Mfma32x32x8);
        $m!($($extra,)* bwdw_f16_128x128x32_mfma32k16, [Cdna4], BwdWeight, F16, 128, 128, 32, 2, 4, Mfma32x32x16);
        $m!($($extra,)* bwdw_f16_64x64x32_mfma16, [Cdna], BwdWeight, F16, 64, 64, 32, 2, 2, Mfma16x16x16);
        $m!($($extra,)* bwdw_f16_64x64x32_mfma16k32, [Cdna4], BwdWeight, F16, 64, 64, 32, 2, 2, Mfma16x16x32);
        $m!($($extra,)* bwdw_bf16_128x128x32_mfma32, [Cdna], BwdWeight, Bf16, 128, 128, 32, 2, 4, Mfma32x32x8);
        $m!($($extra,)* bwdw_bf16_128x128x32_mfma32k16, [Cdna4], BwdWeight, Bf16, 128, 128, 32, 2, 4, Mfma32x32x16);
        $m!($($extra,)* bwdw_bf16_64x64x32_mfma16, [Cdna], BwdWeight, Bf16, 64, 64, 32, 2, 2, Mfma16x16x16);
        $m!($($extra,)* bwdw_bf16_64x64x32_mfma16k32, [Cdna4], BwdWeight, Bf16, 64, 64, 32, 2, 2, Mfma16x16x32);
        $m!($($extra,)* bwdw_bf16f32_128x128x32_mfma32, [Cdna], BwdWeight, Bf16F32, 128, 128, 32, 2, 4, Mfma32x32x8);
        $m!($($extra,)* bwdw_f16_64x64x32_wmma16, [Rdna3], BwdWeight, F16, 64, 64, 32, 2, 2, Wmma16x16x16);
        $m!($($extra,)* bwdw_f16_64x64x32_wmma12, [Rdna4], BwdWeight, F16, 64, 64, 32, 2, 2, Wmma16x16x16Gfx12);
        $m!($($extra,)* bwdw_bf16_64x64x32_wmma16, [Rdna3], BwdWeight, Bf16, 64, 64, 32, 2, 2, Wmma16x16x16);
        $m!($($extra,)* bwdw_bf16_64x64x32_wmma12, [Rdna4], BwdWeight, Bf16, 64, 64, 32, 2, 2, Wmma16x16x16Gfx12);
        $m!($($extra,)* bwdw_bf16f32_64x64x32_wmma16, [Rdna3], BwdWeight, Bf16F32, 64, 64, 32, 2, 2, Wmma16x16x16);
        $m!($($extra,)* bwdw_bf16f32_64x64x32_wmma12, [Rdna4], BwdWeight, Bf16F32, 64, 64, 32, 2, 2, Wmma16x16x16Gfx12);
        $m!($($extra,)* bwdw_f16_128x128x32_mma16x8, [Nvidia], BwdWeight, F16, 128, 128, 32, 2, 4, Mma16x8x16);
        $m!($($extra,)* bwdw_f16_64x64x32_mma16x8, [Nvidia], BwdWeight, F16, 64, 64, 32, 2, 2, Mma16x8x16);
        $m!($($extra,)* bwdw_bf16_128x128x32_mma16x8, [Nvidia], BwdWeight, Bf16, 128, 128, 32, 2, 4, Mma16x8x16);
        $m!($($extra,)* bwdw_bf16_64x64x32_mma16x8, [Nvidia], BwdWeight, Bf16, 64, 64, 32, 2, 2, Mma16x8x16);
        $m!($($extra,)* bwdw_bf16f32_128x128x32_mma16x8, [Nvidia], BwdWeight, Bf16F32, 128, 128, 32, 2, 4, Mma16x8x16);
        $m!($($extra,)* bwdw_f16_128x128x32_wgmma, [Hopper], BwdWeight, F16, 128, 128, 32, 2, 1, Wgmma64x128x16);
        $m!($($extra,)* bwdw_bf16_128x128x32_wgmma, [Hopper], BwdWeight, Bf16, 128, 128, 32, 2, 1, Wgmma64x128x16);
        $m!($($extra,)* bwdw_f16_64x64x32_wgmma, [Hopper], BwdWeight, F16, 64, 64, 32, 1, 1, Wgmma64x64x16);
        $m!($($extra,)* bwdw_bf16_64x64x32_wgmma, [Hopper], BwdWeight, Bf16, 64, 64, 32, 1, 1, Wgmma64x64x16);
        // 64 output channels over a wide N (C x taps of 512 and more): one
        // warpgroup of 64x128 reads dy half as often as 64x64 tiles.
        $m!($($extra,)* bwdw_f16_64x128x32_wgmma, [Hopper], BwdWeight, F16, 64, 128, 32, 1, 1, Wgmma64x128x16);
        $m!($($extra,)* bwdw_bf16_64x128x32_wgmma, [Hopper], BwdWeight, Bf16, 64, 128, 32, 1, 1, Wgmma64x128x16);
        // Narrow tiles for grouped problems with few output channels per group (K = 16).
        // 48 columns: three taps of 16 channels, so a 3x3 filter of C = 16 (144
        // columns) fills three tiles where 16x64 padded a fourth of its loads and
        // multiplies.
        $m!($($extra,)* bwdw_f16_16x48x32_mma16x8, [Nvidia], BwdWeight, F16, 16, 48, 32, 1, 2, Mma16x8x16);
        $m!($($extra,)* bwdw_bf16_16x48x32_mma16x8, [Nvidia], BwdWeight, Bf16, 16, 48, 32, 1, 2, Mma16x8x16);
        $m!($($extra,)* bwdw_f16_16x64x32_mma16x8, [Nvidia], BwdWeight, F16, 16, 64, 32, 1, 2, Mma16x8x16);
        $m!($($extra,)* bwdw_bf16_16x64x32_mma16x8, [Nvidia], BwdWeight, Bf16, 16, 64, 32, 1, 2, Mma16x8x16);
        $m!($($extra,)* bwdw_f16_16x64x32_mfma16, [Cdna], BwdWeight, F16, 16, 64, 32, 1, 2, Mfma16x16x16);
        $m!($($extra,)* bwdw_bf16_16x64x32_mfma16, [Cdna], BwdWeight, Bf16, 16, 64, 32, 1, 2, Mfma16x16x16);
        $m!($($extra,)* bwdw_f16_16x64x32_wmma16, [Rdna3], BwdWeight, F16, 16, 64, 32, 1, 2, Wmma16x16x16);
        $m!($($extra,)* bwdw_f16_16x64x32_wmma12, [Rdna4], BwdWeight, F16, 16, 64, 32, 1, 2, Wmma16x16x16Gfx12);
        $m!($($extra,)* bwdw_bf16_16x64x32_wmma16, [Rdna3], BwdWeight, Bf16, 16, 64, 32, 1, 2, Wmma16x16x16);
        $m!($($extra,)* bwdw_bf16_16x64x32_wmma12, [Rdna4], BwdWeight, Bf16, 16, 64, 32, 1, 2, Wmma16x16x16Gfx12);
        // Backward-weight by tap shifts (`Op::BwdWeightTapShift`): 4 groups of at
        // most 16 channels; 224 grid rows per tile (one 14x14 image) on
        // NVIDIA, 128 on CDNA (64 KiB of LDS).
        $m!($($extra,)* bwdw_halo_f16_224x64x16_mma16x8, [Nvidia], BwdWeightTapShift, F16, 224, 64, 16, 1, 4, Mma16x8x16);
        $m!($($extra,)* bwdw_halo_bf16_224x64x16_mma16x8, [Nvidia], BwdWeightTapShift, Bf16, 224, 64, 16, 1, 4, Mma16x8x16);
        $m!($($extra,)* bwdw_halo_f16_128x64x16_mfma16, [Cdna], BwdWeightTapShift, F16, 128, 64, 16, 1, 4, Mfma16x16x16);
        $m!($($extra,)* bwdw_halo_bf16_128x64x16_mfma16, [Cdna], BwdWeightTapShift, Bf16, 128, 64, 16, 1, 4, Mfma16x16x16);
        // The same at strides (`Op::BwdWeightTapShiftPhased`).
        $m!($($extra,)* bwdw_halo_phased_f16_224x64x16_mma16x8, [Nvidia], BwdWeightTapShiftPhased, F16, 224, 64, 16, 1, 4, Mma16x8x16);
        $m!($($extra,)* bwdw_halo_phased_bf16_224x64x16_mma16x8, [Nvidia], BwdWeightTapShiftPhased, Bf16, 224, 64, 16, 1, 4, Mma16x8x16);
        $m!($($extra,)* bwdw_halo_phased_f16_128x64x16_mfma16, [Cdna], BwdWeightTapShiftPhased, F16, 128, 64, 16, 1, 4, Mfma16x16x16);
        $m!($($extra,)* bwdw_halo_phased_bf16_128x64x16_mfma16, [Cdna], BwdWeightTapShiftPhased, Bf16, 128, 64, 16, 1, 4, Mfma16x16x16);
        // Backward-weight, f32: scalar FMA tiles on every family.
        $m!($($extra,)* bwdw_f32_64x64x16_fma, [Cdna, Rdna3, Rdna4, Nvidia], BwdWeight, F32, 64, 64, 16, 16, 16, Fma);
        // Backward-weight, f32 data on TF32 matrix operands (opt-in `F32Tf32`).
        $m!($($extra,)* bwdw_f32tf32_128x128x32_mma16x8k8, [Nvidia], BwdWeight, F32Tf32, 128, 128, 32, 2, 4, Mma16x8x8Tf32);
        $m!($($extra,)* bwdw_f32tf32_64x64x32_mma16x8k8, [Nvidia], BwdWeight, F32Tf32, 64, 64, 32, 2, 2, Mma16x8x8Tf32);
        // Backward-weight, direct path for tiny per-group GEMMs (f32 FMA, any family).
        $m!($($extra,)* bwdw_direct_f32, [Cdna, Rdna3, Rdna4, Nvidia], BwdWeightDirect, F32, 256, 1, 1, 256, 1, Fma);
        $m!($($extra,)* bwdw_direct_f16, [Cdna, Rdna3, Rdna4, Nvidia], BwdWeightDirect, F16, 256, 1, 1, 256, 1, Fma);
        $m!($($extra,)* bwdw_direct_bf16, [Cdna, Rdna3, Rdna4, Nvidia], BwdWeightDirect, Bf16, 256, 1, 1, 256, 1, Fma);
        $m!($($extra,)* bwdw_direct_bf16f32, [Cdna, Rdna3, Rdna4, Nvidia], BwdWeightDirect, Bf16F32, 256, 1, 1, 256, 1, Fma);
        // Backward-weight, depthwise by filter rows with a sliding window (f32 FMA, any family).
        $m!($($extra,)* bwdw_depthwise_f32, [Cdna, Rdna3, Rdna4, Nvidia], BwdWeightDepthwise, F32, 256, 1, 1, 256, 1, Fma);
        $m!($($extra,)* bwdw_depthwise_f16, [Cdna, Rdna3, Rdna4, Nvidia], BwdWeightDepthwise, F16, 256, 1, 1, 256, 1, Fma);
        $m!($($extra,)* bwdw_depthwise_bf16, [Cdna, Rdna3, Rdna4, Nvidia], BwdWeightDepthwise, Bf16, 256, 1, 1, 256, 1, Fma);
        $m!($($extra,)* bwdw_depthwise_bf16f32, [Cdna, Rdna3, Rdna4, Nvidia], BwdWeightDepthwise, Bf16F32, 256, 1, 1, 256, 1, Fma);
        // Backward-weight's pre-pass for small-C inputs, by element size (bf16f32 takes bf16's).
        $m!($($extra,)* bwdw_unfold_f16, [Cdna, Rdna3, Rdna4, Nvidia], BwdWeightUnfold, F16, 256, 1, 1, 256, 1, Fma);
        $m!($($extra,)* bwdw_unfold_bf16, [Cdna, Rdna3, Rdna4, Nvidia], BwdWeightUnfold, Bf16, 256, 1, 1, 256, 1, Fma);
        // Backward-data (stride-residue slices in one launch), on the matrix units.
        $m!($($extra,)* bwdd_f16_128x128x32_mfma32, [Cdna], BwdData, F16, 128, 128, 32, 2, 4, Mfma32x32x8);
        $m!($($extra,)* bwdd_f16_128x128x32_mfma32k16, [Cdna4], BwdData, F16, 128, 128, 32, 2, 4, Mfma32x32x16);
        $m!($($extra,)* bwdd_f16_64x64x32_mfma16, [Cdna], BwdData, F16, 64, 64, 32, 2, 2, Mfma16x16x16);
        $m!($($extra,)* bwdd_f16_64x64x32_mfma16k32, [Cdna4], BwdData, F16, 64, 64, 32, 2, 2, Mfma16x16x32);
        $m!($($extra,)* bwdd_bf16_128x128x32_mfma32, [Cdna], BwdData, Bf16, 128, 128, 32, 2, 4, Mfma32x32x8);
        $m!($($extra,)* bwdd_bf16_128x128x32_mfma32k16, [Cdna4], BwdData, Bf16, 128, 128, 32, 2, 4, Mfma32x32x16);
        $m!($($extra,)* bwdd_bf16_64x64x32_mfma16, [Cdna], BwdData, Bf16, 64, 64, 32, 2, 2, Mfma16x16x16);
        $m!($($extra,)* bwdd_bf16_64x64x32_mfma16k32, [Cdna4], BwdData, Bf16, 64, 64, 32, 2, 2, Mfma16x16x32);
        $m!($($extra,)* bwdd_f16_64x64x32_wmma16, [Rdna3], BwdData, F16, 64, 64, 32, 2, 2, Wmma16x16x16);
        $m!($($extra,)* bwdd_f16_64x64x32_wmma12, [Rdna4], BwdData, F16, 64, 64, 32, 2, 2, Wmma16x16x16Gfx12);
        $m!($($extra,)* bwdd_bf16_64x64x32_wmma16, [Rdna3], BwdData, Bf16, 64, 64, 32, 2, 2, Wmma16x16x16);
        $m!($($extra,)* bwdd_bf16_64x64x32_wmma12, [Rdna4], BwdData, Bf16, 64, 64, 32, 2, 2, Wmma16x16x16Gfx12);
        $m!($($extra,)* bwdd_f16_128x128x32_mma16x8, [Nvidia], BwdData, F16, 128, 128, 32, 2, 4, Mma16x8x16);
        $m!($($extra,)* bwdd_f16_64x64x32_mma16x8, [Nvidia], BwdData, F16, 64, 64, 32, 2, 2, Mma16x8x16);
        $m!($($extra,)* bwdd_bf16_128x128x32_mma16x8, [Nvidia], BwdData, Bf16, 128, 128, 32, 2, 4, Mma16x8x16);
        $m!($($extra,)* bwdd_bf16_64x64x32_mma16x8, [Nvidia], BwdData, Bf16, 64, 64, 32, 2, 2, Mma16x8x16);
        // Hopper: two warpgroups of 64x128 on wgmma, operands in LDS.
        $m!($($extra,)* bwdd_f16_128x128x32_wgmma, [Hopper], BwdData, F16, 128, 128, 32, 2, 1, Wgmma64x128x16);
        $m!($($extra,)* bwdd_bf16_128x128x32_wgmma, [Hopper], BwdData, Bf16, 128, 128, 32, 2, 1, Wgmma64x128x16);
        // 64 channels per group: two warpgroups of 64x64, 64 k a step (half
        // the barriers of 32; three stages keep two workgroups on an SM).
        $m!($($extra,)* bwdd_f16_128x64x64_wgmma, [Hopper], BwdData, F16, 128, 64, 64, 2, 1, Wgmma64x64x16);
        $m!($($extra,)* bwdd_bf16_128x64x64_wgmma, [Hopper], BwdData, Bf16, 128, 64, 64, 2, 1, Wgmma64x64x16);
        // Narrow tiles for grouped problems with few channels per group (C = 16, 32).
        $m!($($extra,)* bwdd_f16_128x16x32_mma16x8, [Nvidia], BwdData, F16, 128, 16, 32, 4, 1, Mma16x8x16);
        $m!($($extra,)* bwdd_bf16_128x16x32_mma16x8, [Nvidia], BwdData, Bf16, 128, 16, 32, 4, 1, Mma16x8x16);
        $m!($($extra,)* bwdd_f16_128x32x32_mma16x8, [Nvidia], BwdData, F16, 128, 32, 32, 4, 1, Mma16x8x16);
        $m!($($extra,)* bwdd_bf16_128x32x32_mma16x8, [Nvidia], BwdData, Bf16, 128, 32, 32, 4, 1, Mma16x8x16);
        // Small tiles where every larger one leaves most SMs idle (no split-K
        // in backward-data: 3-D U-Net's 8^3 128->256 runs 32 tiles of 64x64).
        $m!($($extra,)* bwdd_f16_32x64x32_mma16x8, [Nvidia], BwdData, F16, 32, 64, 32, 2, 2, Mma16x8x16);
        $m!($($extra,)* bwdd_bf16_32x64x32_mma16x8, [Nvidia], BwdData, Bf16, 32, 64, 32, 2, 2, Mma16x8x16);
        $m!($($extra,)* bwdd_f16_32x32x32_mma16x8, [Nvidia], BwdData, F16, 32, 32, 32, 2, 2, Mma16x8x16);
        $m!($($extra,)* bwdd_bf16_32x32x32_mma16x8, [Nvidia], BwdData, Bf16, 32, 32, 32, 2, 2, Mma16x8x16);
        $m!($($extra,)* bwdd_f16_128x16x32_mfma16, [Cdna], BwdData, F16, 128, 16, 32, 4, 1, Mfma16x16x16);
        $m!($($extra,)* bwdd_bf16_128x16x32_mfma16, [Cdna], BwdData, Bf16, 128, 16, 32, 4, 1, Mfma16x16x16);
        $m!($($extra,)* bwdd_f16_128x16x32_wmma16, [Rdna3], BwdData, F16, 128, 16, 32, 4, 1, Wmma16x16x16);
        $m!($($extra,)* bwdd_f16_128x16x32_wmma12, [Rdna4], BwdData, F16, 128, 16, 32, 4, 1, Wmma16x16x16Gfx12);
        $m!($($extra,)* bwdd_bf16_128x16x32_wmma16, [Rdna3], BwdData, Bf16, 128, 16, 32, 4, 1, Wmma16x16x16);
        $m!($($extra,)* bwdd_bf16_128x16x32_wmma12, [Rdna4], BwdData, Bf16, 128, 16, 32, 4, 1, Wmma16x16x16Gfx12);
        $m!($($extra,)* bwdd_f16_128x32x32_mfma16, [Cdna], BwdData, F16, 128, 32, 32, 4, 1, Mfma16x16x16);
        $m!($($extra,)* bwdd_bf16_128x32x32_mfma16, [Cdna], BwdData, Bf16, 128, 32, 32, 4, 1, Mfma16x16x16);
        $m!($($extra,)* bwdd_f16_128x32x32_wmma16, [Rdna3], BwdData, F16, 128, 32, 32, 4, 1, Wmma16x16x16);
        $m!($($extra,)* bwdd_f16_128x32x32_wmma12, [Rdna4], BwdData, F16, 128, 32, 32, 4, 1, Wmma16x16x16Gfx12);
        $m!($($extra,)* bwdd_bf16_128x32x32_wmma16, [Rdna3], BwdData, Bf16, 128, 32, 32, 4, 1, Wmma16x16x16);
        $m!($($extra,)* bwdd_bf16_128x32x32_wmma12, [Rdna4], BwdData, Bf16, 128, 32, 32, 4, 1, Wmma16x16x16Gfx12);
        $m!($($extra,)* bwdd_f32_64x64x16_fma, [Cdna, Rdna3, Rdna4, Nvidia], BwdData, F32, 64, 64, 16, 16, 16, Fma);
        // Backward-data, f32 data on TF32 matrix operands (opt-in `F32Tf32`).
        $m!($($extra,)* bwdd_f32tf32_128x128x32_mma16x8k8, [Nvidia], BwdData, F32Tf32, 128, 128, 32, 2, 4, Mma16x8x8Tf32);
        $m!($($extra,)* bwdd_f32tf32_64x64x32_mma16x8k8, [Nvidia], BwdData, F32Tf32, 64, 64, 32, 2, 2, Mma16x8x8Tf32);
        // Backward-data, direct path (depthwise, small C and K).
        $m!($($extra,)* bwdd_direct_f32, [Cdna, Rdna3, Rdna4, Nvidia], BwdDataDirect, F32, 256, 1, 1, 256, 1, Fma);
        $m!($($extra,)* bwdd_direct_f16, [Cdna, Rdna3, Rdna4, Nvidia], BwdDataDirect, F16, 256, 1, 1, 256, 1, Fma);
        $m!($($extra,)* bwdd_direct_bf16, [Cdna, Rdna3, Rdna4, Nvidia], BwdDataDirect, Bf16, 256, 1, 1, 256, 1, Fma);
        // Backward-data, depthwise column strips. Not on CDNA yet: with its
        // epilogue inside the row walk, gfx90a/gfx942 spill 96-200 scalar
        // registers (64-bit lane masks and the epilogue's uniforms); CDNA keeps
        // the direct kernel for depthwise problems.
        $m!($($extra,)* bwdd_depthwise_f32, [Rdna3, Rdna4, Nvidia], BwdDataDepthwise, F32, 256, 1, 1, 256, 1, Fma);
        $m!($($extra,)* bwdd_depthwise_f16, [Rdna3, Rdna4, Nvidia], BwdDataDepthwise, F16, 256, 1, 1, 256, 1, Fma);
        $m!($($extra,)* bwdd_depthwise_bf16, [Rdna3, Rdna4, Nvidia], BwdDataDepthwise, Bf16, 256, 1, 1, 256, 1, Fma);
        // Backward-data by tap shifts: 4 groups of at most 16 channels, a
        // halo of 224 + 64 rows (14x14 images: one image per tile). Not on
        // RDNA3 yet: gfx1100 put its accumulators in scratch (452 B).
        $m!($($extra,)* bwdd_halo_f16_224x64x16_mma16x8, [Nvidia], BwdDataTapShift, F16, 224, 64, 16, 2, 4, Mma16x8x16);
        $m!($($extra,)* bwdd_halo_bf16_224x64x16_mma16x8, [Nvidia], BwdDataTapShift, Bf16, 224, 64, 16, 2, 4, Mma16x8x16);
        $m!($($extra,)* bwdd_halo_f16_224x64x16_mfma16, [Cdna], BwdDataTapShift, F16, 224, 64, 16, 2, 4, Mfma16x16x16);
        $m!($($extra,)* bwdd_halo_bf16_224x64x16_mfma16, [Cdna], BwdDataTapShift, Bf16, 224, 64, 16, 2, 4, Mfma16x16x16);
        // Backward-data by tap shifts over row segments: two warpgroups, one
        // image row of 64 pixels each, 64 input channels, the filter resident
        // while the workgroup walks its tiles (U-Net's 64-channel layers).
        // Measured and dropped (session 24, docs/tuning-log.md): a
        // 128-channel tile (m64n128, one workgroup per SM) and a pipelined
        // walk (two halos, two accumulator sets, one workgroup per SM).
        $m!($($extra,)* bwdd_rows_f16_128x64x64_wgmma, [Hopper], BwdDataRows, F16, 128, 64, 64, 2, 1, Wgmma64x64x16);
        $m!($($extra,)* bwdd_rows_bf16_128x64x64_wgmma, [Hopper], BwdDataRows, Bf16, 128, 64, 64, 2, 1, Wgmma64x64x16);
        // Backward-data of 1x1 stride-1 layers as one GEMM on TMA loads.
        $m!($($extra,)* bwdd_f16_128x128x64_tma, [Hopper], BwdDataTma, F16, 128, 128, 64, 2, 1, Wgmma64x128x16);
        $m!($($extra,)* bwdd_bf16_128x128x64_tma, [Hopper], BwdDataTma, Bf16, 128, 128, 64, 2, 1, Wgmma64x128x16);
        // The same with a ring of 6 stages (192 KiB, one workgroup per SM),
        // for grids of at most one workgroup per SM: on the H200 0.75-0.83x
        // the 3-stage tile's time on 50-100 workgroups, 1.2-1.4x on 196 and
        // more (tuning-log 2026-11-28g).
        $m!($($extra,)* bwdd_f16_128x128x64_tma_ring6, [Hopper], BwdDataTma, F16, 128, 128, 64, 2, 1, Wgmma64x128x16, 6);
        $m!($($extra,)* bwdd_bf16_128x128x64_tma_ring6, [Hopper], BwdDataTma, Bf16, 128, 128, 64, 2, 1, Wgmma64x128x16, 6);
        // 64 channels wide (one warpgroup of 128x64 on m64n64), for C = 64
        // where the 128-wide tile is half idle; 3 stages (72 KiB) keep three
        // workgroups on an SM.
        $m!($($extra,)* bwdd_f16_128x64x64_tma, [Hopper], BwdDataTma, F16, 128, 64, 64, 2, 1, Wgmma64x64x16);
        $m!($($extra,)* bwdd_bf16_128x64x64_tma, [Hopper], BwdDataTma, Bf16, 128, 64, 64, 2, 1, Wgmma64x64x16);
        // Backward-weight of 1x1 stride-1 layers as one GEMM on TMA loads
        // (both operands MN-major boxes), split-K over the pixels.
        $m!($($extra,)* bwdw_f16_128x128x64_tma, [Hopper], BwdWeightTma, F16, 128, 128, 64, 2, 1, Wgmma64x128x16);
        $m!($($extra,)* bwdw_bf16_128x128x64_tma, [Hopper], BwdWeightTma, Bf16, 128, 128, 64, 2, 1, Wgmma64x128x16);
        // With a 6-stage ring (one workgroup per SM) for grids whose tiles
        // alone fit one workgroup per SM (split-K then fills one round).
        $m!($($extra,)* bwdw_f16_128x128x64_tma_ring6, [Hopper], BwdWeightTma, F16, 128, 128, 64, 2, 1, Wgmma64x128x16, 6);
        $m!($($extra,)* bwdw_bf16_128x128x64_tma_ring6, [Hopper], BwdWeightTma, Bf16, 128, 128, 64, 2, 1, Wgmma64x128x16, 6);
        // 64 rows (one consumer warpgroup, 24 KiB a stage): twice the tiles
        // of the 128x128 one, for short reductions that split-K would
        // otherwise fill (cuDNN's wgrad kernel on ResNet-50's 512->2048 runs
        // 128 tiles of 64x128 unsplit).
        $m!($($extra,)* bwdw_f16_64x128x64_tma, [Hopper], BwdWeightTma, F16, 64, 128, 64, 1, 1, Wgmma64x128x16);
        $m!($($extra,)* bwdw_bf16_64x128x64_tma, [Hopper], BwdWeightTma, Bf16, 64, 128, 64, 1, 1, Wgmma64x128x16);
        // Smoke kernels: one atom through LDS and a barrier (runtime checks).
        $m!($($extra,)* smoke_mfma, [Cdna], Smoke, F16, 32, 32, 8, 1, 1, Mfma32x32x8);
        $m!($($extra,)* smoke_wmma, [Rdna3], Smoke, F16, 16, 16, 16, 1, 1, Wmma16x16x16);
        $m!($($extra,)* smoke_wmma12, [Rdna4], Smoke, F16, 16, 16, 16, 1, 1, Wmma16x16x16Gfx12);
        $m!($($extra,)* smoke_mma, [Nvidia], Smoke, F16, 16, 8, 16, 1, 1, Mma16x8x16);
    };
}

macro_rules! table_entry {
    ($v:ident, $name:ident, [$($fam:ident),*], $op:ident, $ty:ident, $bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $atom:ident $(, $ring:literal)?) => {
        $v[{
            let mut i = 0;
            while $v[i].is_some() {
                i += 1;
            }
            i
        }] = Some(Instance {
            name: stringify!($name),
            families: &[$(Family::$fam),*],
            op: Op::$op,
            types: TypeConfig::$ty,
            tile: TileConfig { bm: $bm, bn: $bn, bk: $bk, waves_m: $wm, waves_n: $wn, ring: 0 $(+ $ring)? },
            atom: AtomKind::$atom,
        });
    };
}

const MAX_INSTANCES: usize = 160;

const TABLE: [Option<Instance>; MAX_INSTANCES] = {
    let mut v: [Option<Instance>; MAX_INSTANCES] = [None; MAX_INSTANCES];
    for_each_instance!(table_entry, v);
    v
};

const COUNT: usize = {
    let mut i = 0;
    while i < MAX_INSTANCES && TABLE[i].is_some() {
        i += 1;
    }
    i
};

/// Every instance, in declaration order.
pub static INSTANCES: [Instance; COUNT] = {
    let mut out = [match TABLE[0] {
        Some(i) => i,
        None => panic!("no instances"),
    }; COUNT];
    let mut i = 0;
    while i < COUNT {
        out[i] = match TABLE[i] {
            Some(x) => x,
            None => panic!("hole in instance table"),
        };
        i += 1;
    }
    out
};

/// Looks an instance up by name.
pub fn find(name: &str) -> Option<&'static Instance> {
    INSTANCES.iter().find(|i| i.name == name)
}
