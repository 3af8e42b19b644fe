//! The one place that chooses a kernel.
//!
//! Each kernel family states what it fits (its `fits` in
//! [`family`](super::family), gathered by [`fits`], with the words [`needs`]
//! that `cargo xtask list-instances` prints); a forced instance
//! (`--instance`) goes through the same checks; the automatic choice takes
//! the instances that fit and ranks them by rules measured on the H200
//! (`docs/tuning-log.md`, "kernel choice", has the timings), unless the
//! tuning table ([`tuned`]) holds a measured choice that fits. The op plans
//! (`bwd_weight::plan_with`, `bwd_data::plan_with`) take the [`Choice`];
//! this file imports only the families, the tuning table and the leaves.

use super::classes::class_taps;
use super::error::{OpError, Reason, Unsupported, forced_mismatch};
use super::family::{self, bwd_data as data, bwd_weight as weight};
use super::tuned::{self, Operation};
use convgrad_types::ConvProblem;
use convgrad_types::instance::{self, Family, Instance, Op};
use convgrad_types::TypeConfig;

pub use super::family::bwd_data::rows::RowFit;
pub use super::family::tap_grid::TapShiftFit;
pub use super::request::Request;

/// How a problem fits the chosen kernel family.
#[derive(Clone, Copy, Debug)]
pub enum Fit {
    /// GEMM tiles and direct kernels: any problem (edges masked).
    Any,
    /// Depthwise column strips.
    Strips,
    /// Tap shifts, on this padded grid.
    TapShift(TapShiftFit),
    /// Tap shifts over row segments, tiles of this shape.
    Rows(RowFit),
}

/// The chosen instance and how the problem fits it.
#[derive(Clone, Copy, Debug)]
pub struct Choice {
    /// The instance.
    pub instance: &'static Instance,
    /// How the problem fits it.
    pub fit: Fit,
    /// Backward-weight's split-K count measured best with it (the tuning
    /// table's); it stands for `SplitK::Auto`, a fixed split asked for wins.
    pub split: Option<u32>,
    /// Whether the tuning table chose it (else the hand rules or `forced`).
    pub from_table: bool,
}

impl Choice {
    /// A choice of the hand rules (or a forced one).
    fn rule(instance: &'static Instance, fit: Fit) -> Choice {
        Choice { instance, fit, split: None, from_table: false }
    }
}

/// What a kernel family needs of a problem, in a few words.
pub fn needs(op: Op) -> &'static str {
    match op {
        Op::BwdWeight => weight::gemm::NEEDS,
        Op::BwdData => data::gemm::NEEDS,
        Op::BwdWeightDirect => weight::direct::NEEDS,
        Op::BwdDataDirect => data::direct::NEEDS,
        Op::BwdDataDepthwise => data::depthwise::NEEDS,
        Op::BwdDataTapShift => data::tap_shift::NEEDS,
        Op::BwdWeightTapShift => weight::tap_shift::NEEDS,
        Op::BwdWeightTapShiftPhased => weight::tap_shift::NEEDS_PHASED,
        Op::BwdDataRows => data::rows::NEEDS,
        Op::BwdDataTma => data::tma::NEEDS,
        Op::BwdWeightTma => weight::tma::NEEDS,
        Op::BwdWeightDepthwise => weight::depthwise::NEEDS,
        Op::Smoke => "one atom tile (runtime self-test)",
        Op::BwdWeightUnfold => "backward-weight's small-C pre-pass (runs before the kernel the plan chose)",
    }
}

/// Whether instance `i` can run the request's problem, and how; else the
/// first need the problem does not meet.
pub fn fits(i: &Instance, r: &Request<'_>) -> Result<Fit, Reason> {
    match i.op {
        Op::BwdWeight | Op::BwdData | Op::BwdWeightDirect | Op::BwdDataDirect => Ok(Fit::Any),
        Op::BwdDataDepthwise => data::depthwise::fits(r).map(|()| Fit::Strips),
        Op::BwdWeightTapShift | Op::BwdWeightTapShiftPhased => {
            weight::tap_shift::fits(r, &i.tile, i.op == Op::BwdWeightTapShiftPhased).map(Fit::TapShift)
        }
        Op::BwdDataTapShift => data::tap_shift::fits(r, &i.tile).map(Fit::TapShift),
        Op::BwdDataRows => data::rows::fits(r, &i.tile).map(Fit::Rows),
        Op::BwdDataTma => data::tma::fits(r, r.w, &i.tile).map(|()| Fit::Any),
        Op::BwdWeightTma => weight::tma::fits(r, &i.tile).map(|()| Fit::Any),
        Op::BwdWeightDepthwise => weight::depthwise::fits(r).map(|_| Fit::Any),
        Op::Smoke => Err(Reason::NotConvolution("a runtime self-test, not a convolution kernel")),
        Op::BwdWeightUnfold => Err(Reason::NotConvolution("a pre-pass that copies x, not a convolution kernel")),
    }
}

/// The instance named `name` for an operation whose kernels are `ops`,
/// checked against the request like every automatic candidate.
fn forced(name: &str, ops: &[Op], what: &'static str, r: &Request<'_>) -> Result<Choice, OpError> {
    let i = instance::find(name).ok_or_else(|| forced_mismatch(name, Reason::NoSuchInstance))?;
    if !(ops.contains(&i.op) && i.types == r.types && i.on(r.family)) {
        return Err(forced_mismatch(name, Reason::OtherKind {
            op: i.op,
            types: i.types.name(),
            families: i.families,
            wanted_op: what,
            wanted_types: r.types.name(),
            family: r.family,
        }));
    }
    let fit = fits(i, r).map_err(|why| forced_mismatch(name, why))?;
    Ok(Choice::rule(i, fit))
}

/// The forced instance, else the tuning table's where it fits the request
/// (`None`: the hand rules choose). Notes the request's table key either way
/// ([`tuned::last_key`]).
fn forced_or_tuned(op: Operation, ops: &[Op], r: &Request<'_>) -> Result<Option<Choice>, OpError> {
    let key = tuned::Key::of(op, r);
    tuned::note(key);
    if let Some(name) = r.forced {
        return forced(name, ops, op.name(), r).map(Some);
    }
    let Some(key) = key else { return Ok(None) };
    let hit = tuned::lookup(&key).map_err(|e| OpError::Usage(e.to_string()))?;
    Ok(hit.and_then(|h| {
        let i = h.instance;
        let applies = ops.contains(&i.op) && i.types == r.types && i.on(r.family);
        let fit = fits(i, r).ok().filter(|_| applies)?;
        Some(Choice { instance: i, fit, split: h.split, from_table: true })
    }))
}

/// The instances of kernel family `op` serving the request's types on its family.
/// `f32-tf32` has GEMM tiles of its own (TF32 matrix operands); every other
/// family serves it with the exact f32 kernels (same f32 tensors, and exact
/// f32 products are within TF32's tolerance).
fn family_of(op: Op, r: &Request<'_>) -> impl Iterator<Item = &'static Instance> {
    let family = r.family;
    let types = match r.types {
        TypeConfig::F32Tf32 if !matches!(op, Op::BwdWeight | Op::BwdData) => TypeConfig::F32,
        t => t,
    };
    instance::INSTANCES.iter().filter(move |i| i.op == op && i.types == types && i.on(family))
}

/// `f32-tf32` only where its TF32 matrix instruction is built: NVIDIA
/// (`mma.sync` m16n8k8 `.tf32`, sm_80 and sm_90). AMD's xf32 MFMAs
/// (gfx942 only) have no kernels yet.
fn tf32_family(r: &Request<'_>, op: &'static str) -> Result<(), OpError> {
    if r.types == TypeConfig::F32Tf32 && !matches!(r.family, Family::Nvidia | Family::Hopper) {
        return Err(no_kernel(op, "f32-tf32 only on NVIDIA (sm_80, sm_90); use f32 (exact) elsewhere", r));
    }
    Ok(())
}

/// The first instance of family `op` that fits, with its fit.
fn first_fitting(op: Op, r: &Request<'_>) -> Option<Choice> {
    family_of(op, r).find_map(|i| fits(i, r).ok().map(|fit| Choice::rule(i, fit)))
}

/// Whether a tile `tile_len` wide along a per-group channel count `len` may
/// be chosen: tiles under 64 are only taken where the channels fit one of
/// them (per useful channel they are slower).
fn narrow_tile_fits(len: u64, tile_len: u32) -> bool {
    tile_len >= 64 || len <= tile_len as u64
}

/// Backward-weight reductions (`N * output pixels`) up to this long take the
/// tile that fills a round without split-K ([`bwd_weight`]).
const SHORT_REDUCTION: u64 = 4096;

/// Backward-weight's kernel: GEMM per group `M = K`, `N = C * taps`.
pub fn bwd_weight(r: &Request<'_>) -> Result<Choice, OpError> {
    tf32_family(r, "bwd-weight")?;
    if let Some(c) = forced_or_tuned(Operation::BwdWeight, Op::BWD_WEIGHT, r)? {
        return Ok(c);
    }
    let inst = weight_gemm_or_direct(r)?;
    if let Some(c) = weight_tma(inst, r) {
        return Ok(c);
    }
    Ok(weight_replacement(inst, r).unwrap_or(Choice::rule(inst, Fit::Any)))
}

/// The TMA GEMM in place of a `cp.async` warpgroup GEMM tile, where it
/// fits.
///
/// 1x1 stride-1 layers (pixels in order) of 64 channels or more: its ring
/// as backward-data's ([`tma_tile`]): the deepest where the tiles alone
/// hold at most one workgroup per SM (split-K then fills one round), else
/// the shallowest. H200, f16, the networks suite's 14 such layers
/// (tuning-log 2026-11-28h): the 6-stage ring was faster than the 3-stage
/// one on all, and than the tile the rules chose before (64x64 for short
/// reductions, else 128x128) on 11, by up to 17-20% (ResNet-50 128->512
/// and 64->64, MobileNetV2 320->1280); 2-6% slower on three (64->256,
/// EfficientNet 80->480, MobileNetV2 960->160).
///
/// Filters with taps or strides, where K (the tile's 128 rows) is at least
/// 128: the 3-stage ring. H200, f16, 26 such layers of five networks
/// (tuning-log 2026-11-29b; float64 checks and sanitizers passed in the
/// same session): 1.06-1.71x faster than the tile the rules chose on all
/// 26 (median 1.5x; DeepLabV3's dilated layers 1.2-1.7x); the 6-stage ring
/// lost to the 3-stage one on all stride-1 layers but one (3% the other
/// way) and on 3 of 6 strided ones (up to 1.5x slower; up to 9% faster).
/// With K = 64 half the tile idles and it was 0.68-0.89x (ResNet-50 layer1
/// 3x3, U-Net's 64-wide ends).
///
/// There the 64x128 tile ([`narrow_weight_pays`]) in its place.
fn weight_tma(inst: &'static Instance, r: &Request<'_>) -> Option<Choice> {
    if !(inst.op == Op::BwdWeight && inst.atom.warpgroup()) {
        return None;
    }
    let p = r.p;
    if !weight::tma::in_order(p) {
        // No grid is small enough for the deeper ring: the shallowest.
        if narrow_weight_pays(p, r.compute_units)
            && let Some(c) = tma_ring(Op::BwdWeightTma, r, (64, 128), |_| u64::MAX)
        {
            return Some(c);
        }
        return if p.k >= 128 { tma_ring(Op::BwdWeightTma, r, (128, 128), |_| u64::MAX) } else { None };
    }
    tma_ring(Op::BwdWeightTma, r, (128, 128), |i| weight_tiles_of(p, i.tile.bm, i.tile.bn))
}

/// Backward-weight's output tiles of `bm x bn` (before split-K).
fn weight_tiles_of(p: &ConvProblem, bm: u32, bn: u32) -> u64 {
    p.g as u64 * (p.k as u64).div_ceil(bm as u64) * (p.c as u64 * p.filter_taps()).div_ceil(bn as u64)
}

/// Whether backward-weight on a filter with taps or strides takes the
/// 64x128 TMA tile: where K is 48 to 64 (the 128-row tile half idle), or,
/// on a short reduction ([`SHORT_REDUCTION`], as for the `cp.async` tiles),
/// where its tiles fill the compute units unsplit while the 128x128 tiles
/// fall short of two rounds (so split-K or a second, partial round would
/// pay for them). H200, f16 (tuning-log 2026-11-29c, float64 checks
/// passed in the same run), against the rules' tile before: ResNet-50
/// layer1 3x3 (K = 64) 67.2 -> 52.8 us, layer4 3x3 43.4 -> 40.4 and with
/// stride 2 43.4 -> 38.7 (288 tiles against 144), ConvNeXt-T's 384->768
/// 2x2 stride-2 downsampling 39.5 -> 22.9 (144 tiles unsplit against 72 at
/// split-K 3). Slower where its tiles need split-K as well (ResNet-50
/// layer2 and layer3 3x3, 1.09-1.19x), not taken there.
fn narrow_weight_pays(p: &ConvProblem, compute_units: u32) -> bool {
    let cus = compute_units as u64;
    let short = p.n as u64 * p.output_pixels() <= SHORT_REDUCTION;
    fills_64(p.k) || (short && weight_tiles_of(p, 64, 128) >= cus && weight_tiles_of(p, 128, 128) < 2 * cus)
}

/// Whether `len` channels fill most of a narrow TMA tile's 64 (48 to 64):
/// where the 128-wide tile would idle half its rows or columns.
fn fills_64(len: usize) -> bool {
    (48..=64).contains(&len)
}

/// The fitting `bm x bn` instance of TMA family `op` with the deepest ring
/// where its `workgroups` fit one per compute unit, else with the
/// shallowest.
fn tma_ring(op: Op, r: &Request<'_>, (bm, bn): (u32, u32), workgroups: impl Fn(&Instance) -> u64) -> Option<Choice> {
    let shaped = |i: &&'static Instance| (i.tile.bm, i.tile.bn) == (bm, bn);
    family_of(op, r).filter(shaped).filter_map(|i| fits(i, r).ok().map(|fit| Choice::rule(i, fit))).max_by_key(|c| {
        let ring = c.instance.tile.stages(c.instance.atom);
        if workgroups(c.instance) <= r.compute_units as u64 { ring } else { u32::MAX - ring }
    })
}

/// Backward-weight's GEMM tile `M x N` pads the per-group GEMM to.
fn weight_padded(p: &ConvProblem, i: &Instance) -> u64 {
    let (m, n) = (p.k as u64, p.c as u64 * p.filter_taps());
    m.div_ceil(i.tile.bm as u64) * i.tile.bm as u64 * n.div_ceil(i.tile.bn as u64) * i.tile.bn as u64
}

/// Backward-weight's GEMM tiles, best first.
fn weight_tiles(r: &Request<'_>) -> Vec<&'static Instance> {
    let p = r.p;
    let (m, n) = (p.k as u64, p.c as u64 * p.filter_taps());
    let padded = |i: &Instance| weight_padded(p, i);
    // Narrow tiles (under 64 rows) only where K fits one of them; full-height
    // tiles wider than tall only where N spans at least four of them (what
    // they save is reading dy once per column tile).
    let wide_fits = |i: &Instance| i.tile.bm < 64 || i.tile.bn <= i.tile.bm || n >= 4 * i.tile.bn as u64;
    let mut tiles: Vec<&'static Instance> =
        family_of(Op::BwdWeight, r).filter(|i| narrow_tile_fits(m, i.tile.bm) && wide_fits(i)).collect();
    // The largest tile whose padding stays within an eighth of it, else the
    // least padding; warpgroup tiles before mma.sync.
    // (A validated problem has m, n >= 1, so `padded` is never 0; `max(1)` keeps it so.)
    let over = |i: &Instance| {
        let waste = padded(i).saturating_sub(m * n);
        if waste * 8 / padded(i).max(1) >= 1 { waste } else { 0 }
    };
    tiles.sort_by_key(|i| (over(i), u32::MAX - i.tile.bm * i.tile.bn, !i.atom.warpgroup(), !i.atom.double_k()));
    // A short reduction (at most 4096 products: ResNet-50's layer4 at batch
    // 64, a 3-D U-Net's 8^3 level, ConvNeXt's last downsampling) cannot fill
    // the GPU by split-K without each split's fixed costs (pipeline fill,
    // partial sums) outweighing its work: of the tiles padded as little as
    // the first, take the first whose tiles alone fill 60% of a round of
    // resident workgroups, else the one with the most. H100, f16, ms, the
    // largest tile / this rule's (`xtask tune`, tuning-log 2026-11-26f):
    // 3-D U-Net 128->256 at 8^3 0.0404 / 0.0186 (64x64), ResNet-50 layer4
    // 3x3 0.0776 / 0.0686 (64x128), 1x1 512->2048 0.0480 / 0.0373; longer
    // ones keep the largest (U-Net 512->1024 at 16x16, 4096 long, fills a
    // round with 128x128).
    let blocks = |i: &Instance| p.g as u64 * m.div_ceil(i.tile.bm as u64) * n.div_ceil(i.tile.bn as u64);
    let fills = |i: &Instance| 10 * blocks(i) >= 6 * i.resident_per_cu(r.family) as u64 * r.compute_units as u64;
    let reduction = p.n as u64 * p.output_pixels();
    let same = tiles.iter().take_while(|&&i| over(i) == over(tiles[0])).count();
    if reduction <= SHORT_REDUCTION
        && let Some(at) = tiles[..same].iter().position(|&i| fills(i)).or_else(|| {
            // Most workgroups; the earliest of equals (warpgroup tiles first).
            tiles[..same].iter().enumerate().rev().max_by_key(|(_, i)| blocks(i)).map(|(at, _)| at)
        })
    {
        tiles.swap(0, at);
    }
    tiles
}

/// Backward-weight's GEMM tile, or the direct kernel for tiny GEMMs.
fn weight_gemm_or_direct(r: &Request<'_>) -> Result<&'static Instance, OpError> {
    let (p, tiles) = (r.p, weight_tiles(r));
    let (m, n) = (p.k as u64, p.c as u64 * p.filter_taps());
    let direct = family_of(Op::BwdWeightDirect, r).next();
    // Per-group GEMMs that would fill under a tenth of even the least padded
    // tile, or with under 8 output channels (at least half of a 16-row
    // matrix tile is padding), go to the direct kernel.
    let least = tiles.iter().map(|&i| weight_padded(p, i)).min().unwrap_or(u64::MAX);
    Ok(match (tiles.first().copied(), direct) {
        (Some(_), Some(d)) if 10 * m * n < least || m < 8 => d,
        (Some(b), _) => b,
        (None, Some(d)) => d,
        (None, None) => return Err(no_kernel("bwd-weight", "f32, f16, bf16, bf16-f32 and f32-tf32", r)),
    })
}

/// A family that takes backward-weight's problem in place of `inst`, where
/// the hand rules prefer one.
fn weight_replacement(inst: &'static Instance, r: &Request<'_>) -> Option<Choice> {
    let p = r.p;
    // Depthwise filter rows in place of the direct kernel where they fit, a
    // filter row has 3 taps or more and the direct kernel has no row path
    // (3 wide at stride and dilation 1 along x). Per output pixel and filter
    // row they load one dy and `stride` x vectors; the direct kernel loads
    // one dy per block of 3 taps and one x per tap (7x7: 68 loads per pixel,
    // 9.7 per filter row, against 2 at stride 1 and 3 at stride 2; 3x3 at
    // stride 2: 4 against 3). On its row path it loads 2.25 per pixel and
    // row against the window's 2: that case stays with the measured kernel.
    let row_path = p.filter[2] == 3 && p.strides[2] == 1 && p.dilations[2] == 1;
    if inst.op == Op::BwdWeightDirect
        && p.filter[2] >= 3
        && !row_path
        && let Some(c) = first_fitting(Op::BwdWeightDepthwise, r)
    {
        return Some(c);
    }
    // Tap shifts in place of the GEMM where the problem fits them at stride
    // 1 and the automatic split leaves every workgroup at least two row tiles
    // (each workgroup puts the partials of its whole filters once); not in
    // deterministic mode (its finisher reads every split's partials in
    // turn). Strided problems keep the GEMM: their phase grids, one staged
    // at a time, were slower on the H100 (ResNeXt 8->8 s2 f16 0.169 ms
    // against 0.150 on 16x48, RegNetX 16->16 g2 s2 0.115; tuning-log
    // 2026-11-26e); a tuning table may still name
    // `bwdw_halo_phased_*` for them.
    if inst.op == Op::BwdWeight && !r.deterministic && p.strides.iter().all(|&s| s == 1) {
        return first_fitting(Op::BwdWeightTapShift, r).filter(|c| match c.fit {
            Fit::TapShift(f) => {
                let i = c.instance;
                weight::tap_shift::two_tiles_per_split(&f, &i.tile, p.g, i.min_blocks(), r.compute_units)
            }
            _ => false,
        });
    }
    None
}

/// Backward-data's kernel: per group and stride slice a GEMM `N = C`,
/// reduction `class taps * K`.
pub fn bwd_data(r: &Request<'_>) -> Result<Choice, OpError> {
    tf32_family(r, "bwd-data")?;
    if let Some(c) = forced_or_tuned(Operation::BwdData, Op::BWD_DATA, r)? {
        return Ok(c);
    }
    let inst = data_gemm_or_direct(r)?;
    Ok(data_replacement(Choice::rule(inst, Fit::Any), r))
}

/// Backward-data's slice-GEMM tile, or the direct kernel for short dot
/// products and narrow channels.
fn data_gemm_or_direct(r: &Request<'_>) -> Result<&'static Instance, OpError> {
    let p = r.p;
    let direct = family_of(Op::BwdDataDirect, r).next();
    let (n, red) = (p.c as u64, class_taps(p) * p.k as u64);
    // The direct kernel for short dot products of grouped problems (C *
    // reduction under 1024: depthwise, a few channels per group; one group's
    // GEMM, even a 3-channel stem's, keeps the matrix tiles, which are faster
    // on MobileNetV2's stem), for C under 8 where the
    // family has no tile of at most 16 columns, and where dy's k run is no
    // multiple of 8 with C * K up to 256 (the GEMM would gather it element
    // by element).
    let narrow = family_of(Op::BwdData, r).any(|i| i.tile.bn <= 16);
    let scalar_dy = !p.k.is_multiple_of(8) && n * p.k as u64 <= 256;
    let short = n * red < 1024 && p.g > 1;
    if let (true, Some(d)) = (short || scalar_dy || (n < 8 && !narrow), direct) {
        return Ok(d);
    }
    data_tiles(r).first().copied().or(direct).ok_or_else(|| no_kernel("bwd-data", "f32, f16 and bf16", r))
}

/// Backward-data's slice-GEMM tiles, best first.
fn data_tiles(r: &Request<'_>) -> Vec<&'static Instance> {
    let (p, n) = (r.p, r.p.c as u64);
    // Narrow tiles (under 64 columns) only where C fits one of them.
    let mut tiles: Vec<&'static Instance> =
        family_of(Op::BwdData, r).filter(|i| narrow_tile_fits(n, i.tile.bn)).collect();
    // The largest tile whose channel padding stays within 20% of it, else
    // the least padding; where C is a multiple of 8 (vector loads) tiles
    // count as at least 32 wide; warpgroup tiles before mma.sync.
    let cols = |i: &Instance| if n.is_multiple_of(8) { i.tile.bn.max(32) } else { i.tile.bn } as u64;
    let waste = |i: &Instance| {
        let padded = n.div_ceil(cols(i)) * cols(i);
        (padded - n) * 100 / padded
    };
    let order = |i: &&Instance| {
        (waste(i) > 20, waste(i), u32::MAX - i.tile.bm * i.tile.bn, !i.atom.warpgroup(), !i.atom.double_k())
    };
    tiles.sort_by_key(order);
    // Backward-data has no split-K: where that tile leaves over half the
    // compute units idle, a smaller tile padding C no more that fills
    // half of them (the least padded, then largest such), else the one
    // with the most workgroups. Narrow tiles count here: idle SMs cost
    // more than their speed per channel (3-D U-Net 8^3 128->256: 32
    // tiles of 64x64, 128 of 32x32).
    let half = r.compute_units.div_ceil(2) as u64;
    if let Some(&first) = tiles.first()
        && data_workgroups(p, first) < half
    {
        let mut class: Vec<_> = family_of(Op::BwdData, r).filter(|&i| waste(i) <= waste(first)).collect();
        class.sort_by_key(order);
        let filling = class.iter().copied().find(|&i| data_workgroups(p, i) >= half);
        let most = class.iter().copied().max_by_key(|&i| (data_workgroups(p, i), i.tile.bm * i.tile.bn));
        if let Some(i) = filling.or(most) {
            tiles.insert(0, i);
        }
    }
    tiles
}

/// The family that takes backward-data's problem in place of `choice`'s,
/// where the hand rules prefer one (else `choice`).
fn data_replacement(mut choice: Choice, r: &Request<'_>) -> Choice {
    let (p, inst) = (r.p, choice.instance);
    // Depthwise column strips in place of the direct kernel where they fit.
    if inst.op == Op::BwdDataDirect
        && let Some(c) = first_fitting(Op::BwdDataDepthwise, r)
    {
        choice = c;
    }
    // Tap shifts in place of the slice GEMM, or of the direct kernel from 8
    // channels per group, where the problem fits them.
    let replaceable = choice.instance.op == Op::BwdData || (choice.instance.op == Op::BwdDataDirect && p.c >= 8);
    if replaceable && let Some(c) = first_fitting(Op::BwdDataTapShift, r) {
        choice = c;
    }
    // Row segments in place of the slice GEMM (or of a narrow tile) where
    // tiles of 64 pixels waste little of the image rows and the reduction
    // fills most of the 64 channels the halo stages.
    if choice.instance.op == Op::BwdData
        && let Some(c) = first_fitting(Op::BwdDataRows, r)
        && let Fit::Rows(f) = c.fit
        && f.rows_worth(p, r.compute_units)
    {
        choice = c;
    }
    // The TMA GEMM in place of the slice GEMM on the plain 1x1 layers it
    // takes: 1.17-1.60x faster than the cp.async warpgroup tile on all nine
    // ResNet-50 1x1 shapes (H100, 100 to 3136 workgroups; tuning-log
    // 2026-11-28c). On filters with taps in place of the row segments too.
    let tma = match choice.instance.op {
        Op::BwdData | Op::BwdDataRows if fills_64(p.c) && p.k >= 128 => narrow_data_tma_tile(r),
        Op::BwdData if family::tma::plain_gemm(p) => tma_tile(r),
        Op::BwdData | Op::BwdDataRows if !family::tma::plain_gemm(p) => taps_tma_tile(r),
        _ => None,
    };
    if let Some(c) = tma {
        choice = c;
    }
    choice
}

/// The TMA tile on a filter with taps (stride 1; `fits` checks the rest)
/// where `C` fills the 128-wide column tile and `K` a 64-channel box per
/// tap; its ring as on 1x1 layers ([`tma_tile`]). H200, f16, the networks
/// suite's stride-1 layers with taps, after the producer's one coordinate
/// computation per slab (tuning-log 2026-11-29c): 1.2-1.9x faster than the
/// `cp.async` 128x128 tile on all 17 with C >= 128 and K >= 64 (ResNet-50
/// layer2 3x3 1.32x, layer4 3x3 1.37x, U-Net enc3 1.58x, Stable Diffusion's
/// 8x8 layers 1.3-1.9x), and than the row segments on U-Net's dec1 (128->64,
/// 1.25x). Slower where C = 64 (half the tile idle: 0.46-0.93x against the
/// row segments) and K = 32 (DenseNet, 0.78-0.92x: a tap's box half zeros).
fn taps_tma_tile(r: &Request<'_>) -> Option<Choice> {
    let p = r.p;
    if p.c < 128 || p.k < 64 {
        return None;
    }
    tma_tile(r)
}

/// The 128x64 TMA tile (3-stage ring) where C is 48 to 64 (one column
/// tile, most of it used) and K at least 128, 1x1 or with taps. H200, f16
/// (tuning-log 2026-11-29c, float64 checks passed in the same run): U-Net's
/// enc2 3x3 64->128 184.4 -> 123.0 us (against the `cp.async` 128x64
/// tile), ResNet-50's 1x1 64->256 58.7 -> 51.8 (against the 128x128 TMA
/// tile). With K = 64 the row segments stay ahead (ResNet-50 layer1 3x3
/// 56.4 against 61.9, U-Net enc1 225.0 against 284.7).
fn narrow_data_tma_tile(r: &Request<'_>) -> Option<Choice> {
    tma_ring(Op::BwdDataTma, r, (128, 64), |_| u64::MAX)
}

/// The TMA tile for `r`: the deepest ring where the grid holds at most one
/// workgroup per compute unit (nothing shares the SM, so the deeper ring
/// hides more latency), else the shallowest, which keeps two workgroups
/// per SM (one's epilogue overlaps the other's loads). H200, seven 1x1
/// layers of 50 to 1568 x 2 workgroups: each on the side of the rule
/// (tuning-log 2026-11-28g).
fn tma_tile(r: &Request<'_>) -> Option<Choice> {
    tma_ring(Op::BwdDataTma, r, (128, 128), |i| data_workgroups(r.p, i))
}

/// Workgroups of backward-data's slice GEMM on tile `i`: per group and
/// stride slice, tiles of the largest slice's pixels by C.
fn data_workgroups(p: &ConvProblem, i: &Instance) -> u64 {
    let slice_pixels: u64 = (0..3).map(|d| p.input[d].div_ceil(p.strides[d]) as u64).product::<u64>() * p.n as u64;
    let slices: u64 = p.strides.iter().map(|&s| s as u64).product();
    p.g as u64 * slices * slice_pixels.div_ceil(i.tile.bm as u64) * (p.c as u64).div_ceil(i.tile.bn as u64)
}

fn no_kernel(op: &'static str, served: &'static str, r: &Request<'_>) -> OpError {
    OpError::Unsupported(Unsupported::NoKernel { op, types: r.types.name(), family: r.family, served })
}
