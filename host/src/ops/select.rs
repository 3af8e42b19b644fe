//! The one place that chooses a kernel.
//!
//! Each kernel family states what it fits ([`fits`], with the text
//! [`needs`] that `cargo xtask list-instances` prints); a forced instance
//! (`--instance`) goes through the same checks; the automatic choice takes
//! the instances that fit and ranks them by rules measured on the H200
//! (`docs/tuning-log.md`, "kernel choice", has the timings), unless the
//! tuning table ([`tuned`]) holds a measured choice that fits. The plan
//! builders (`bwd_weight::plan_with`, `bwd_data::plan_with`) take the [`Choice`].

use super::bwd_data::{class_taps, tap_step, tilde};
use super::bwd_weight::{SplitK, tap_shift_split};
use super::tuned::{self, Operation};
use super::{OpError, Unsupported, forced_mismatch, lane_axis};
use convgrad_types::contract::bwd_data_direct::HALO;
use convgrad_types::contract::bwd_data_rows::SEG as ROW_SEGMENT;
use convgrad_types::contract::depthwise_strips::{DEPTH, VW as DEPTHWISE_VW};
use convgrad_types::instance::{self, Family, Instance, Op, TileConfig};
use convgrad_types::{ConvProblem, TensorDesc, TypeConfig};

/// A request for a kernel: the problem, its tensors and what the caller asked.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The problem.
    pub p: &'a ConvProblem,
    /// Data types.
    pub types: TypeConfig,
    /// The device's kernel family.
    pub family: Family,
    /// The device's compute units (the tap-shift preference counts rounds).
    pub compute_units: u32,
    /// Activations: x (bwd-weight) or dx (bwd-data).
    pub x: &'a TensorDesc,
    /// Output gradient.
    pub dy: &'a TensorDesc,
    /// An instance forced by name.
    pub forced: Option<&'a str>,
    /// Backward-weight's deterministic split-K (tap shifts are not preferred there).
    pub deterministic: bool,
}

/// How a problem fits the chosen kernel family.
#[derive(Clone, Copy, Debug)]
pub enum Fit {
    /// GEMM tiles and direct kernels: any problem (edges masked).
    Any,
    /// Depthwise column strips.
    Strips,
    /// Tap shifts, on this padded grid.
    TapShift(HaloFit),
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
        Op::BwdWeight | Op::BwdData => "any N, C, K, filter, stride, layout (edges masked)",
        Op::BwdWeightDirect | Op::BwdDataDirect => "any problem (channel vectors where channels-last)",
        Op::BwdDataDepthwise => "C = K = 1, channels-last, <= 3 taps per stride class along y",
        Op::BwdDataHalo => "stride 1, 1-tall z filter, <= 9 taps, K mult. of 8 <= 16, C <= 16, tap shift <= 64 rows",
        Op::BwdWeightHalo => "stride 1, 1-tall z filter, <= 9 taps, C, K mult. of 8 <= 16, channels-last, tap shift <= 64 rows",
        Op::BwdWeightHaloPhased => {
            "a stride of 2-4 along y or x (1 along z), 1-tall z filter, <= 9 taps, C, K mult. of 8 <= 16, channels-last, tap shift <= 64 rows"
        }
        Op::BwdDataRows => {
            "stride 1, 1-tall z filter, <= 9 taps, K mult. of 8 <= 64 contiguous in dy, halo of <= 288 pixels"
        }
        Op::BwdWeightDepthwise => "C = K = 1, groups innermost in x and dy in runs of 2, filter width <= 7",
        Op::Smoke => "one atom tile (runtime self-test)",
        Op::BwdWeightUnfold => "backward-weight's small-C pre-pass (runs before the kernel the plan chose)",
    }
}

/// Whether instance `i` can run the request's problem, and how; else the
/// first need the problem does not meet.
pub fn fits(i: &Instance, r: &Request<'_>) -> Result<Fit, String> {
    match i.op {
        Op::BwdWeight | Op::BwdData | Op::BwdWeightDirect | Op::BwdDataDirect => Ok(Fit::Any),
        Op::BwdDataDepthwise => strips(r).then_some(Fit::Strips).ok_or_else(|| {
            format!(
                "depthwise column strips need C = K = 1, the groups innermost in dx and dy in runs of \
                 {DEPTHWISE_VW} (a channels-last layout), at most 3 taps per stride class along y one dy row \
                 apart, one along z, and an x span of at most {HALO} (use bwdd_direct_{})",
                r.types.name()
            )
        }),
        Op::BwdWeightHalo | Op::BwdWeightHaloPhased => weight_tap_shifts(r, &i.tile, i.op == Op::BwdWeightHaloPhased)
            .map(Fit::TapShift)
            .map_err(|w| format!("tap shifts need {w}")),
        Op::BwdDataHalo => data_tap_shifts(r, &i.tile).map(Fit::TapShift).map_err(|w| format!("tap shifts need {w}")),
        Op::BwdDataRows => data_rows(r, &i.tile).map(Fit::Rows).map_err(|w| format!("row segments need {w}")),
        Op::BwdWeightDepthwise => depthwise_rows(r).map(|_| Fit::Any),
        Op::Smoke => Err("a runtime self-test, not a convolution kernel".into()),
        Op::BwdWeightUnfold => Err("a pre-pass that copies x, not a convolution kernel".into()),
    }
}

/// The instance named `name` for an operation whose kernels are `ops`,
/// checked against the request like every automatic candidate.
fn forced(name: &str, ops: &[Op], what: &str, r: &Request<'_>) -> Result<Choice, OpError> {
    let i = instance::find(name)
        .ok_or_else(|| forced_mismatch(name, "names no such instance (see `cargo xtask list-instances`)".into()))?;
    if !(ops.contains(&i.op) && i.types == r.types && i.on(r.family)) {
        return Err(forced_mismatch(name, format!(
            "does not apply: it is {:?} {} for {:?}, the problem needs {what} {} on {:?}",
            i.op,
            i.types.name(),
            i.families,
            r.types.name(),
            r.family
        )));
    }
    let fit = fits(i, r).map_err(|why| forced_mismatch(name, format!("does not apply: {why}")))?;
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
fn family_of(op: Op, r: &Request<'_>) -> impl Iterator<Item = &'static Instance> {
    let (types, family) = (r.types, r.family);
    instance::INSTANCES.iter().filter(move |i| i.op == op && i.types == types && i.on(family))
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
    if let Some(c) = forced_or_tuned(Operation::BwdWeight, Op::BWD_WEIGHT, r)? {
        return Ok(c);
    }
    let p = r.p;
    let (m, n) = (p.k as u64, p.c as u64 * p.filter_taps());
    let padded =
        |i: &Instance| m.div_ceil(i.tile.bm as u64) * i.tile.bm as u64 * n.div_ceil(i.tile.bn as u64) * i.tile.bn as u64;
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
    tiles.sort_by_key(|i| (over(i), u32::MAX - i.tile.bm * i.tile.bn, !i.atom.warpgroup()));
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
    let direct = family_of(Op::BwdWeightDirect, r).next();
    // Per-group GEMMs that would fill under a tenth of even the least padded
    // tile, or with under 8 output channels (at least half of a 16-row
    // matrix tile is padding), go to the direct kernel.
    let least = tiles.iter().map(|&i| padded(i)).min().unwrap_or(u64::MAX);
    let inst = match (tiles.first().copied(), direct) {
        (Some(_), Some(d)) if 10 * m * n < least || m < 8 => d,
        (Some(b), _) => b,
        (None, Some(d)) => d,
        (None, None) => return Err(no_kernel("bwd-weight", "f32, f16, bf16 and bf16-f32", r)),
    };
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
        return Ok(c);
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
        let shifts = first_fitting(Op::BwdWeightHalo, r).filter(|c| match c.fit {
            Fit::TapShift(f) => {
                let sets = p.g.div_ceil(c.instance.tile.waves_n as usize);
                tap_shift_split(f.tiles, sets, SplitK::Auto, c.instance.min_blocks(), r.compute_units).1 >= 2
            }
            _ => false,
        });
        if let Some(c) = shifts {
            return Ok(c);
        }
    }
    Ok(Choice::rule(inst, Fit::Any))
}

/// Backward-data's kernel: per group and stride slice a GEMM `N = C`,
/// reduction `class taps * K`.
pub fn bwd_data(r: &Request<'_>) -> Result<Choice, OpError> {
    if let Some(c) = forced_or_tuned(Operation::BwdData, Op::BWD_DATA, r)? {
        return Ok(c);
    }
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
    let inst = if let (true, Some(d)) = (short || scalar_dy || (n < 8 && !narrow), direct) {
        d
    } else {
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
        let order = |i: &&Instance| (waste(i) > 20, waste(i), u32::MAX - i.tile.bm * i.tile.bn, !i.atom.warpgroup());
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
        match tiles.first().copied().or(direct) {
            Some(i) => i,
            None => return Err(no_kernel("bwd-data", "f32, f16 and bf16", r)),
        }
    };
    // Depthwise column strips in place of the direct kernel where they fit.
    let mut choice = Choice::rule(inst, Fit::Any);
    if inst.op == Op::BwdDataDirect
        && let Some(c) = first_fitting(Op::BwdDataDepthwise, r)
    {
        choice = c;
    }
    // Tap shifts in place of the slice GEMM, or of the direct kernel from 8
    // channels per group, where the problem fits them.
    let replaceable = choice.instance.op == Op::BwdData || (choice.instance.op == Op::BwdDataDirect && p.c >= 8);
    if replaceable && let Some(c) = first_fitting(Op::BwdDataHalo, r) {
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
    Ok(choice)
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

/// Whether the depthwise column-strip kernel applies (module docs of the
/// device crate's `conv::bwd_data::depthwise`).
fn strips(r: &Request<'_>) -> bool {
    let p = r.p;
    let taps = |d: usize| p.filter[d].div_ceil(tilde(p, d));
    p.c == 1
        && p.k == 1
        && lane_axis(r.x, 0, DEPTHWISE_VW)
        && lane_axis(r.dy, 0, DEPTHWISE_VW)
        && taps(0) == 1
        && taps(1) <= DEPTH
        && tap_step(p, 1) == 1
        && (taps(2) - 1) * tap_step(p, 2) <= HALO
}

/// The lanes (groups per thread) of the depthwise filter-row kernel (the
/// device crate's `conv::bwd_weight::depthwise`), or what keeps it from the problem.
fn depthwise_rows(r: &Request<'_>) -> Result<usize, String> {
    use convgrad_types::contract::bwd_weight_depthwise::{LANES, MAX_F};
    let p = r.p;
    if p.c != 1 || p.k != 1 {
        return Err("depthwise filter rows need C = K = 1 (one channel per group)".into());
    }
    if p.filter[2] > MAX_F {
        return Err(format!("depthwise filter rows need a filter width of at most {MAX_F}"));
    }
    super::bwd_weight_depthwise::lanes(r.x, r.dy).ok_or_else(|| {
        format!(
            "depthwise filter rows need the groups innermost in x and dy in runs of {} (a channels-last \
             layout, G even; use bwdw_direct_{})",
            LANES / 2,
            r.types.name()
        )
    })
}

/// Backward-weight's tap-shift grid for tile `t`: the result pixels are dy's.
fn weight_tap_shifts(r: &Request<'_>, t: &TileConfig, phased: bool) -> Result<HaloFit, &'static str> {
    let p = r.p;
    let (y, x) = (p.strides[1], p.strides[2]);
    let stride = if phased {
        (p.strides[0] == 1 && y <= 4 && x <= 4 && y * x > 1, "stride 1 along z, at most 4 along y and x and above 1 along one (stride 1 takes bwdw_halo_*)")
    } else {
        (p.strides.iter().all(|&s| s == 1), "stride 1 in every dim (strides take bwdw_halo_phased_*)")
    };
    halo_fit(p, t, p.output(), &[
        stride,
        (p.k <= t.bk as usize && lane_axis(r.dy, 2, 8), "K a multiple of 8 up to the tile's, contiguous in dy"),
        (
            p.c <= (t.bn / t.waves_n) as usize && lane_axis(r.x, 2, 8),
            "C a multiple of 8 up to the tile's channels per group, contiguous in x",
        ),
        (r.x.span() < 1 << 31 && r.dy.span() < 1 << 31, "x and dy of fewer than 2^31 elements"),
    ])
}

/// Backward-data's tap-shift grid for tile `t`: the result pixels are dx's.
fn data_tap_shifts(r: &Request<'_>, t: &TileConfig) -> Result<HaloFit, &'static str> {
    let p = r.p;
    halo_fit(p, t, p.input, &[
        (p.strides.iter().all(|&s| s == 1), "stride 1 in every dim"),
        (p.k <= t.bk as usize && lane_axis(r.dy, 2, 8), "K a multiple of 8 up to the tile's, contiguous in dy"),
        (p.c <= (t.bn / t.waves_n) as usize, "C up to the tile's channels per group"),
        (r.dy.span() < 1 << 31, "dy of fewer than 2^31 elements"),
    ])
}

/// Backward-data's row segments (the device crate's `conv::bwd_data::rows`)
/// for tile `t`: `bm / 64` image rows by 64 pixels a tile.
fn data_rows(r: &Request<'_>, t: &TileConfig) -> Result<RowFit, &'static str> {
    let p = r.p;
    let pad = |d: usize| (p.filter[d] - 1) * p.dilations[d];
    let rows = t.bm as usize / ROW_SEGMENT;
    let lines = (rows + pad(1)) * (ROW_SEGMENT + pad(2));
    let segs = p.input[2].div_ceil(ROW_SEGMENT);
    let bands = p.input[1].div_ceil(rows);
    let tiles = (p.n * p.input[0]) as u64 * bands as u64 * segs as u64;
    let checks = [
        (p.strides.iter().all(|&s| s == 1), "stride 1 in every dim"),
        (p.filter[0] == 1 && p.lpads[0] == 0 && p.rpads[0] == 0, "a 1-tall, unpadded z filter"),
        (p.filter[1] * p.filter[2] <= TileConfig::HALO_TAPS as usize, "at most 9 filter taps"),
        (lines <= TileConfig::ROW_HALO_LINES as usize, "a halo ((rows + (Y-1) * dil) x (64 + (X-1) * dil)) of at most 288 pixels"),
        (p.k <= t.bk as usize && lane_axis(r.dy, 2, 8), "K a multiple of 8 up to 64, contiguous in dy"),
        (r.dy.span() < 1 << 31, "dy of fewer than 2^31 elements"),
        (tiles < 1 << 31, "fewer than 2^31 tiles"),
    ];
    if let Some(c) = checks.iter().find(|c| !c.0) {
        return Err(c.1);
    }
    Ok(RowFit { rows, segs, bands, tiles: tiles as usize })
}

/// How a problem falls into row-segment tiles.
#[derive(Clone, Copy, Debug)]
pub struct RowFit {
    /// Image rows per tile.
    pub rows: usize,
    /// 64-pixel segments per image row.
    pub segs: usize,
    /// Bands of `rows` image rows per image.
    pub bands: usize,
    /// Tiles over all images.
    pub tiles: usize,
}

impl RowFit {
    /// Stores the tiling in the argument block, `workgroups` walking it.
    pub fn set(&self, args: &mut convgrad_types::params::ConvArgs, workgroups: u32) {
        use convgrad_types::params::FastDiv;
        args.tap_shift.halo_rows = self.rows as u32;
        args.tap_shift.tiles = self.tiles as u32;
        args.tap_shift.tiles_per_batch = workgroups;
        args.tap_shift.div_halo = [FastDiv::new(self.segs as u32), FastDiv::new(self.bands as u32)];
    }
    /// Whether the hand rules take it over the slice GEMM, as measured on
    /// the H200 (docs/tuning-log.md, 2026-11-26c): at least 48 output
    /// channels (the halo stages 64; at 16-32 the GEMM was 1.2-2x faster),
    /// at most two 64-channel column tiles (each stages the halo again: at
    /// 256 channels the GEMM was 1.3x faster), at most 1/5 of the computed
    /// pixels past the image (ResNet-50's 56-pixel rows compute 64: 1.4x
    /// faster still), and tiles for two rounds of the GPU's resident
    /// workgroups.
    pub fn rows_worth(&self, p: &ConvProblem, compute_units: u32) -> bool {
        let computed = (self.segs * ROW_SEGMENT * self.bands * self.rows) as u64;
        let real = (p.input[1] * p.input[2]) as u64;
        computed * 5 <= real * 6 && p.k >= 48 && p.c <= 128 && self.tiles as u64 >= 4 * compute_units as u64
    }
}

/// Where a tap-shift kernel (the device crate's `conv::tap_grid`) puts a
/// problem: `pixels` (the result pixels the tile rows walk) on a grid padded
/// by the dilated filter, `rows` image rows per tile.
#[derive(Clone, Copy, Debug)]
pub struct HaloFit {
    /// Image rows per tile.
    pub rows: usize,
    /// Grid rows per image.
    pub hp: usize,
    /// Grid row length.
    pub wp: usize,
    /// Tiles over all images.
    pub tiles: usize,
}

impl HaloFit {
    /// Stores the grid in the argument block.
    pub fn set(&self, args: &mut convgrad_types::params::ConvArgs) {
        use convgrad_types::params::FastDiv;
        args.tap_shift.halo_rows = self.rows as u32;
        args.tap_shift.div_halo = [FastDiv::new(self.hp as u32), FastDiv::new(self.wp as u32)];
    }
}

/// The grid of `p` for tile `t`, or what keeps the tap-shift kernels from
/// it (the first failed check, the op's own `extra` checks first).
fn halo_fit(
    p: &ConvProblem,
    t: &TileConfig,
    pixels: [usize; 3],
    extra: &[(bool, &'static str)],
) -> Result<HaloFit, &'static str> {
    // Grid steps of the dilated filter: its extent at stride 1, phase grid
    // steps at a stride (backward-weight; the device's `conv::tap_grid`).
    let pad = |d: usize| (p.filter[d] - 1) * p.dilations[d] / p.strides[d];
    let (hp, wp) = (pixels[1] + pad(1), pixels[2] + pad(2));
    let shift = pad(1) * wp + pad(2);
    let images = p.n * pixels[0];
    let common = [
        (p.filter[0] == 1 && p.lpads[0] == 0 && p.rpads[0] == 0, "a 1-tall, unpadded z filter"),
        (p.filter[1] * p.filter[2] <= TileConfig::HALO_TAPS as usize, "at most 9 filter taps"),
        (wp <= t.bm as usize, "a padded row (W + (X-1) * dilation) of at most the tile's rows"),
        (shift <= TileConfig::HALO_SLACK as usize, "a largest tap shift ((Y-1) * dil / stride * padded row + (X-1) * dil / stride) of at most 64 rows"),
        ((images as u64 * hp as u64) < (1 << 31), "fewer than 2^31 padded image rows"),
    ];
    if let Some(c) = extra.iter().chain(&common).find(|c| !c.0) {
        return Err(c.1);
    }
    // Tiles may straddle images: small images share one.
    let rows = t.bm as usize / wp;
    Ok(HaloFit { rows, hp, wp, tiles: (images * hp).div_ceil(rows) })
}
