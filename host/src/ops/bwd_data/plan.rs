//! Backward-data's plan: the instance (through [`select`]), the stride
//! slices and the argument block, for the problem as given or folded. The
//! family planners (`family::bwd_data`) write their launch; this file keeps
//! what every family shares, and the launch.
//!
//! `dx = f(conv_transpose(dy, w), D0, D1, ...)`, written once per element.
//! One launch covers every stride-residue slice (see the device crate's
//! `conv::bwd_data::gemm`): per group and slice a GEMM with `M = N * ceil(I/S)`
//! pixels, `N = C`, reduction `taps of the slice's class * K`.

use crate::ops::batch::{self, Chunk, CutBy, PlanPart};
use crate::ops::checks::{D_NAMES, check_bases, check_buffer, check_d_count, collect_ds, validate_descs};
use crate::ops::classes::{class_taps, slice_count, tap_step, tilde};
use crate::ops::error::{OpError, Unsupported};
use crate::ops::family::bwd_data::{DataCtx, LIMIT, depthwise, direct, gemm, rows, tap_shift, tma};
use crate::ops::launch::{LaunchSpec, problem_args};
use crate::ops::pack::{self, Packed};
use crate::ops::{fold, select};
use convgrad_types::epilogue::{EpiChain, MAX_D};
use convgrad_types::instance::{Family, Instance, Op};
use convgrad_types::params::{ConvArgs, DirectPart, FastDiv, GemmPart, SlicePart, flags};
use convgrad_types::{ConvLayout, ConvProblem, DescError, EpilogueOp, TensorDesc, TensorRole, TypeConfig};

/// Layout of one `D` tensor of the epilogue. Every `D` is indexed like `dx`
/// (`G, N, C, spatial`); broadcast layouts repeat values along some axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DLayout {
    /// Exactly `dx`'s layout (required for a `D` that aliases `dx`).
    Output,
    /// A full tensor in the activation layout of a family (`NHWGC`, `GNHWC`,
    /// `NGCHW`); CK's `G_NHW_C` is the channels-last one.
    Full(ConvLayout),
    /// One value per channel (bias), CK's `G_C` (`GC`): `G*C` elements,
    /// repeated over the batch and the pixels.
    PerChannel,
    /// One value per pixel, `G_NHW` (`N, spatial, G` order): repeated over channels.
    PerPixel,
}

impl DLayout {
    /// Parses `output`, `G_C`/`GC`, `G_NHW`/`G_NW`/`G_NDHW`, `G_NHW_C` (and its
    /// 1D/3D spellings), or an activation layout family name (`nhwgc`, `gnhwc`, `ngchw`).
    pub fn parse(s: &str) -> Option<DLayout> {
        let u = s.to_ascii_uppercase();
        Some(match u.as_str() {
            "OUTPUT" | "SAME" => DLayout::Output,
            "G_C" | "GC" | "C" => DLayout::PerChannel,
            "G_NW" | "G_NHW" | "G_NDHW" => DLayout::PerPixel,
            "G_NW_C" | "G_NHW_C" | "G_NDHW_C" => DLayout::Full(ConvLayout::NhwgcGkyxcNhwgk),
            _ => DLayout::Full(ConvLayout::parse(s)?),
        })
    }

    /// Name as accepted by [`DLayout::parse`].
    pub fn name(self) -> &'static str {
        match self {
            DLayout::Output => "output",
            DLayout::PerChannel => "G_C",
            DLayout::PerPixel => "G_NHW",
            DLayout::Full(l) => l.name(),
        }
    }

    /// The descriptor of a packed `D` of this layout for `p`, with `dx` for [`DLayout::Output`].
    pub fn desc(self, p: &ConvProblem, dx: &TensorDesc) -> TensorDesc {
        let lengths = TensorDesc::lengths_of(p, TensorRole::Input);
        match self {
            DLayout::Output => *dx,
            DLayout::Full(l) => TensorDesc::packed(p, l, TensorRole::Input),
            DLayout::PerChannel => TensorDesc { lengths, strides: [p.c, 0, 1, 0, 0, 0] },
            DLayout::PerPixel => {
                // (N, D, H, W, G) packed, channel stride 0.
                let [g, _, _, d, h, w] = lengths;
                let strides = [1, d * h * w * g, 0, h * w * g, w * g, g];
                TensorDesc { lengths, strides }
            }
        }
    }
}

/// What the user asks for besides the problem.
#[derive(Clone, Debug)]
pub struct BwdDataConfig {
    /// Layout family of dx, w, dy.
    pub layout: ConvLayout,
    /// Data types (f32, f16 or bf16; dx, dy, w and the `D` tensors share it).
    pub types: TypeConfig,
    /// Fused epilogue: applied in order; each op that reads a `D` takes the next one.
    pub epilogue: Vec<EpilogueOp>,
    /// Layout of each `D` tensor, in order (missing entries: [`DLayout::Output`]).
    pub d_layouts: Vec<DLayout>,
    /// Force an instance by name.
    pub instance: Option<String>,
    /// Depthwise column-strip kernel ([`Op::BwdDataDepthwise`]): stride-slice
    /// rows per strip (at least 1), else chosen from the problem and the
    /// device's compute units.
    pub strip_rows: Option<usize>,
}

impl Default for BwdDataConfig {
    fn default() -> Self {
        BwdDataConfig {
            layout: ConvLayout::NhwgcGkyxcNhwgk,
            types: TypeConfig::F16,
            epilogue: Vec::new(),
            d_layouts: Vec::new(),
            instance: None,
            strip_rows: None,
        }
    }
}

/// Everything needed to run one backward-data problem.
#[derive(Clone, Debug)]
pub struct BwdDataPlan {
    /// The problem.
    pub problem: ConvProblem,
    /// Output gradient.
    pub dy: TensorDesc,
    /// Weights.
    pub w: TensorDesc,
    /// Input gradient (written).
    pub dx: TensorDesc,
    /// `D` tensor descriptors (in dx's canonical axes).
    pub ds: Vec<TensorDesc>,
    /// The lowered epilogue.
    pub chain: EpiChain,
    /// The launch.
    pub main: LaunchSpec,
    /// Stride-residue slices (GEMMs) in the launch; 0 for the direct kernel.
    pub slices: u32,
    /// Argument block with pointers left zero; see [`BwdDataPlan::args`].
    pub args_template: ConvArgs,
    /// Whether the tuning table chose the kernel (else the hand rules or a forced instance).
    pub from_table: bool,
    /// Where the plan folds the problem (stride == filter along x, and y
    /// where it tiles the same way) or packs its channels: the problem the
    /// kernel runs and its `w` descriptor, which the TMA kernel's tensor
    /// maps describe (`dy` folds to itself); `None` where the kernel runs
    /// [`problem`](Self::problem) as given.
    pub folded: Option<Box<(ConvProblem, TensorDesc)>>,
    /// Where `K` or `C` fills no 16-byte vectors (2-byte types, `G` = 1, a
    /// GEMM kernel): the pre-pass copies, at the workspace's start, of `dy`
    /// with `K` zero padded to whole vectors (odd `K`) and of `w` with both
    /// padded, that the kernel reads (see `ops::pack`); `None` otherwise.
    pub pack: Option<Box<Packed>>,
    /// Where a tensor spans 2^31 elements or more: the independent launches
    /// the problem is split into (along N, and along G where one image of
    /// every group is too big), run in order; empty otherwise. `main`,
    /// `args_template`, `slices` and `from_table` are then the first part's.
    pub parts: Vec<PlanPart<BwdDataPlan>>,
}

/// Builds the plan for `p` on a device of `family` with `compute_units`
/// (packed tensors).
pub fn plan(
    p: &ConvProblem,
    cfg: &BwdDataConfig,
    family: Family,
    compute_units: u32,
) -> Result<BwdDataPlan, OpError> {
    p.validate()?;
    let dy = TensorDesc::packed(p, cfg.layout, TensorRole::Output);
    let w = TensorDesc::packed(p, cfg.layout, TensorRole::Weight);
    let dx = TensorDesc::packed(p, cfg.layout, TensorRole::Input);
    plan_with(p, cfg, family, compute_units, dy, w, dx)
}

/// As [`plan`], with explicit (possibly strided) descriptors of dy, w, dx.
///
/// **Past 2^31 elements.** The kernels address tensors with 32-bit offsets.
/// Where `dy`, `dx`, a `D` tensor or `w` spans 2^31 elements or more (or
/// `dx`'s elements or the GEMM's M reach 2^31), the plan splits the problem
/// along N into independent launches that each fit
/// ([`BwdDataPlan::parts`]: an image's `dx` depends only on its `dy`; the
/// `D` tensors move with `dx`, base addresses by 64-bit byte offsets), and
/// along G too where one image of every group is still too big, and into
/// bands of `dx` rows of the outermost spatial axis (with the `dy` rows
/// that reach them) where one image of one group is. No workspace.
/// Refused: one row of that axis of one image of one group past the limit.
pub fn plan_with(
    p: &ConvProblem,
    cfg: &BwdDataConfig,
    family: Family,
    compute_units: u32,
    dy: TensorDesc,
    w: TensorDesc,
    dx: TensorDesc,
) -> Result<BwdDataPlan, OpError> {
    plan_with_limit(p, cfg, family, compute_units, dy, w, dx, batch::LIMIT)
}

/// [`plan_with`] splitting where a tensor span or 32-bit count reaches
/// `limit` (at most 2^31) instead of 2^31: lets tests run the split on
/// small problems.
#[doc(hidden)]
#[allow(clippy::too_many_arguments)]
pub fn plan_with_limit(
    p: &ConvProblem,
    cfg: &BwdDataConfig,
    family: Family,
    compute_units: u32,
    dy: TensorDesc,
    w: TensorDesc,
    dx: TensorDesc,
    limit: u64,
) -> Result<BwdDataPlan, OpError> {
    p.validate()?;
    let chain = EpiChain::from_ops(&cfg.epilogue).ok_or(OpError::Desc(DescError::Unsupported {
        field: "epilogue",
        allowed: "at most 8 steps (add-relu counts 2) reading at most 4 D tensors",
    }))?;
    if cfg.d_layouts.len() > chain.num_d as usize {
        return Err(OpError::Usage(format!(
            "{} D layout(s) given but the epilogue reads {} D tensor(s)",
            cfg.d_layouts.len(),
            chain.num_d
        )));
    }
    let ds: Vec<TensorDesc> = (0..chain.num_d as usize)
        .map(|i| cfg.d_layouts.get(i).copied().unwrap_or(DLayout::Output).desc(p, &dx))
        .collect();
    for (name, d, role, written) in [("dy", &dy, TensorRole::Output, false), ("w", &w, TensorRole::Weight, false), ("dx", &dx, TensorRole::Input, true)] {
        batch::validate_whole(p, d, role, name, written)?;
    }
    for (i, d) in ds.iter().enumerate() {
        batch::validate_whole(p, d, TensorRole::Input, D_NAMES[i], false)?;
    }
    let limit = limit.min(batch::LIMIT);
    let mut acts = vec![(&dy, TensorRole::Output), (&w, TensorRole::Weight), (&dx, TensorRole::Input)];
    acts.extend(ds.iter().map(|d| (d, TensorRole::Input)));
    // dx's elements and its pixels per stride phase are 32-bit counts too.
    let fits = |ch: &Chunk| {
        let q = ch.problem(p);
        let slice_pixels: u64 = (0..3).map(|d| q.input[d].div_ceil(q.strides[d]) as u64).product();
        let (g, n) = (q.g as u64, q.n as u64);
        let total = g.saturating_mul(n).saturating_mul(q.c as u64).saturating_mul(q.input_pixels());
        batch::views_fit(&acts, ch, limit) && total < limit && n.saturating_mul(slice_pixels) < limit
    };
    match batch::chunks(p, "dy, dx (one image of one group) or its pixels", CutBy::Input, fits)? {
        None => plan_descs(p, cfg, family, compute_units, chain, [dy, w, dx], ds),
        Some(chunks) => plan_split(p, cfg, family, compute_units, chain, [dy, w, dx], ds, chunks),
    }
}

/// [`plan_with`] for a problem split into `chunks` (see there): each part
/// planned on its views of the tensors.
#[allow(clippy::too_many_arguments)]
fn plan_split(
    p: &ConvProblem,
    cfg: &BwdDataConfig,
    family: Family,
    compute_units: u32,
    chain: EpiChain,
    [dy, w, dx]: [TensorDesc; 3],
    ds: Vec<TensorDesc>,
    chunks: Vec<Chunk>,
) -> Result<BwdDataPlan, OpError> {
    let (act, wei) = (cfg.types.act(), cfg.types.wei());
    let mut parts = Vec::with_capacity(chunks.len());
    let mut cache = batch::SizeCache::new();
    for chunk in chunks {
        let (vdy, ody) = batch::view_bytes(&chunk, &dy, TensorRole::Output, act)?;
        let (vw, ow) = batch::view_bytes(&chunk, &w, TensorRole::Weight, wei)?;
        let (vdx, odx) = batch::view_bytes(&chunk, &dx, TensorRole::Input, act)?;
        let (vds, d_offsets): (Vec<_>, Vec<_>) =
            ds.iter().map(|d| batch::view_bytes(&chunk, d, TensorRole::Input, act)).collect::<Result<Vec<_>, _>>()?.into_iter().unzip();
        let plan = cache.get(&chunk, || plan_descs(&chunk.problem(p), cfg, family, compute_units, chain, [vdy, vw, vdx], vds))?;
        parts.push(PlanPart { chunk, plan, offsets: [ody, ow, odx], d_offsets });
    }
    let first = parts[0].plan.clone();
    Ok(BwdDataPlan { problem: *p, dy, w, dx, ds, parts, ..first })
}

/// [`plan_with`] for a problem that runs as one launch, its `D` tensors'
/// descriptors given: the plan as given, or on channel-packed copies where
/// `K` fills no vectors and the GEMM would gather `dy` element by element
/// (a forced instance that does not fit the packed problem runs it as given).
fn plan_descs(
    p: &ConvProblem,
    cfg: &BwdDataConfig,
    family: Family,
    compute_units: u32,
    chain: EpiChain,
    [dy, w, dx]: [TensorDesc; 3],
    ds: Vec<TensorDesc>,
) -> Result<BwdDataPlan, OpError> {
    let given = plan_unpacked(p, cfg, family, compute_units, chain, [dy, w, dx], ds.clone());
    let (act, wei) = (cfg.types.act(), cfg.types.wei());
    // A GEMM kernel as given, or a forced instance that only fits packed.
    let gathers = match &given {
        Ok(g) => matches!(g.main.instance.op, Op::BwdData | Op::BwdDataRows | Op::BwdDataTapShift),
        Err(e) => matches!(e, OpError::Unsupported(Unsupported::Instance { .. })),
    };
    // C under a vector keeps its narrow tiles (and the fold along x).
    let (pack_dy, pack_c) = (pack::needs(act, p.k), pack::needs(act, p.c) && p.c > pack::LANES);
    if !(gathers && p.g == 1 && act == wei && (pack_dy || pack_c)) {
        return given;
    }
    // dy with K padded where K is odd; w always (its K rows, or its C
    // columns readable as whole vectors: `flags::W_PADDED`).
    let mut q = *p;
    q.k = pack::padded(p.k);
    let mut copies = Vec::new();
    if pack_dy {
        copies.push(pack::copy("dy", &dy, p.n, false, 0, act, family)?);
    }
    let at = copies.first().map_or(0, |c| c.bytes);
    copies.push(pack::copy("w", &w, q.k, true, at, wei, family)?);
    let qdy = copies.first().filter(|_| pack_dy).map_or(dy, |c| c.desc);
    let qw = copies[copies.len() - 1].desc;
    let mut packed = match plan_unpacked(&q, cfg, family, compute_units, chain, [qdy, qw, dx], ds) {
        Err(OpError::Unsupported(Unsupported::Instance { .. })) => return given,
        r => r?,
    };
    packed.args_template.flags |= flags::W_PADDED;
    let view = packed.folded.take().unwrap_or_else(|| Box::new((q, qw)));
    let pack = Some(Box::new(Packed { problem: q, copies }));
    Ok(BwdDataPlan { problem: *p, dy, w, folded: Some(view), pack, ..packed })
}

/// [`plan_descs`] without the channel pack: validation, the fold, the plan.
fn plan_unpacked(
    p: &ConvProblem,
    cfg: &BwdDataConfig,
    family: Family,
    compute_units: u32,
    chain: EpiChain,
    [dy, w, dx]: [TensorDesc; 3],
    ds: Vec<TensorDesc>,
) -> Result<BwdDataPlan, OpError> {
    validate_descs(p, &[
        ("dy", &dy, TensorRole::Output, false),
        ("w", &w, TensorRole::Weight, false),
        ("dx", &dx, TensorRole::Input, true),
    ])?;
    for (i, d) in ds.iter().enumerate() {
        d.validate_for(p, TensorRole::Input, D_NAMES[i], false)?;
    }
    // Stride == filter along x: the kernels run the folded problem (a forced
    // instance that does not fit it runs the problem as given).
    let acts: Vec<&TensorDesc> = std::iter::once(&dx).chain(&ds).collect();
    if let Some(f) = fold::along_x(p, &acts, &[&w], true) {
        let by = f.c / p.c;
        let fds: Vec<TensorDesc> = ds.iter().map(|d| fold::desc(d, &f, by, true)).collect();
        let (fdx, fw) = (fold::desc(&dx, &f, by, true), fold::desc(&w, &f, by, false));
        // y too where it tiles the same way: one GEMM (only the GEMM's
        // epilogue stores by channel rows; other kernels take the x fold).
        if let Some((f2, f2dx, f2w)) = fds.is_empty().then(|| fold::along_y(&f, &fdx, &fw)).flatten()
            && let Ok(mut plan) = plan_on(&f2, cfg, family, compute_units, chain, dy, f2w, f2dx, vec![])
            && plan.main.instance.op == Op::BwdData
        {
            plan.args_template.slices.div_channel_row = FastDiv::new(f.c as u32);
            plan.args_template.slices.channel_row_stride = fdx.strides[4] as u32;
            return Ok(BwdDataPlan { problem: *p, w, dx, ds, folded: Some(Box::new((f2, f2w))), ..plan });
        }
        match plan_on(&f, cfg, family, compute_units, chain, dy, fw, fdx, fds) {
            Err(OpError::Unsupported(Unsupported::Instance { .. })) => {}
            folded => return folded.map(|plan| BwdDataPlan { problem: *p, w, dx, ds, folded: Some(Box::new((f, fw))), ..plan }),
        }
    }
    plan_on(p, cfg, family, compute_units, chain, dy, w, dx, ds)
}

/// The plan of [`plan_with`] for the problem the kernels run (`p` folded or
/// not): the choice, the size limits, the common argument block, then the
/// chosen family's planner.
#[allow(clippy::too_many_arguments)]
fn plan_on(
    p: &ConvProblem,
    cfg: &BwdDataConfig,
    family: Family,
    compute_units: u32,
    chain: EpiChain,
    dy: TensorDesc,
    w: TensorDesc,
    dx: TensorDesc,
    ds: Vec<TensorDesc>,
) -> Result<BwdDataPlan, OpError> {
    let slices = slice_count(p);
    if slices > 65535 {
        return Err(OpError::Desc(DescError::TooLarge {
            field: "product of the strides (stride-residue slices, grid y)",
            value: slices as u64,
            max: 65535,
        }));
    }
    if p.g > 65535 {
        return Err(OpError::Desc(DescError::TooLarge { field: "G (grid z)", value: p.g as u64, max: 65535 }));
    }
    let (types, forced) = (cfg.types, cfg.instance.as_deref());
    let request = select::Request { p, types, family, compute_units, x: &dx, dy: &dy, w: &w, forced, deterministic: false };
    let choice = select::bwd_data(&request)?;
    let inst = choice.instance;
    check_strip_rows(cfg.strip_rows, inst)?;
    let slice_rows: [usize; 3] = std::array::from_fn(|d| p.input[d].div_ceil(p.strides[d]));
    let (tiles_m, tiles_n, total) = check_sizes(p, inst, &slice_rows)?;
    let (dy, w, dx) = (&dy, &w, &dx);
    let strip_rows = cfg.strip_rows;
    let c = DataCtx { p, inst, family, compute_units, types, dy, w, dx, strip_rows, slice_rows, slices, total, tiles_m, tiles_n };
    let mut args = common_args(&c, chain, &ds);
    let grid = match (choice.fit, inst.op) {
        (select::Fit::Rows(f), _) => rows::plan(&c, &f, &mut args),
        (select::Fit::TapShift(f), _) => tap_shift::plan(&c, &f, &mut args),
        (_, Op::BwdDataDepthwise) => depthwise::plan(&c, &mut args)?,
        (_, Op::BwdDataDirect) => direct::plan(&c, &mut args),
        (_, Op::BwdDataTma) => tma::plan(&c, &mut args)?,
        _ => gemm::plan(&c),
    };
    let main = LaunchSpec { instance: inst, grid, block: inst.threads(family), lds_bytes: inst.lds_bytes() };
    main.check_grid()?;
    let slices = if is_direct(inst) { 0 } else { slices as u32 };
    let (dy, w, dx) = (*dy, *w, *dx);
    let from_table = choice.from_table;
    Ok(BwdDataPlan {
        problem: *p,
        dy,
        w,
        dx,
        ds,
        chain,
        main,
        slices,
        args_template: args,
        from_table,
        folded: None,
        pack: None,
        parts: Vec::new(),
    })
}

/// Whether `inst` is one of the direct kernels (no slice GEMMs).
fn is_direct(inst: &Instance) -> bool {
    matches!(inst.op, Op::BwdDataDirect | Op::BwdDataDepthwise)
}

/// Refuses `strip_rows` of 0, or given for another kernel than the strips.
fn check_strip_rows(strip_rows: Option<usize>, inst: &Instance) -> Result<(), OpError> {
    match strip_rows {
        Some(0) => Err(OpError::Usage("strip_rows: at least 1 (slice rows per strip)".into())),
        Some(_) if inst.op != Op::BwdDataDepthwise => Err(OpError::Usage(format!(
            "strip_rows applies to the depthwise column-strip kernel (bwdd_depthwise_*); this problem runs {}",
            inst.name
        ))),
        _ => Ok(()),
    }
}

/// `(tiles along M, tiles along N, dx elements)` on `inst`'s tile, each
/// GEMM size and the tiles (of the tiled kernels) within 2^31 - 1.
fn check_sizes(p: &ConvProblem, inst: &Instance, slice_rows: &[usize; 3]) -> Result<(u32, u32, u64), OpError> {
    let gm = p.n as u64 * slice_rows.iter().map(|&r| r as u64).product::<u64>();
    let total = p.g as u64 * p.n as u64 * p.c as u64 * p.input_pixels();
    for (field, v) in [
        ("GEMM M (N * input pixels per stride slice)", gm),
        ("GEMM K (class taps * K)", class_taps(p) * p.k as u64),
        ("input-gradient elements (G * N * C * pixels)", total),
    ] {
        if v > LIMIT {
            return Err(OpError::Desc(DescError::TooLarge { field, value: v, max: LIMIT }));
        }
    }
    let tiles_m = gm.div_ceil(inst.tile.bm as u64) as u32;
    let tiles_n = (p.c as u64).div_ceil(inst.tile.bn as u64) as u32;
    if !is_direct(inst) && tiles_m as u64 * tiles_n as u64 > LIMIT {
        return Err(OpError::Desc(DescError::TooLarge {
            field: "GEMM tiles (grid x)",
            value: tiles_m as u64 * tiles_n as u64,
            max: LIMIT,
        }));
    }
    Ok((tiles_m, tiles_n, total))
}

/// The argument block every family starts from: the problem, the strides,
/// the slice GEMMs and their classes, the epilogue.
fn common_args(c: &DataCtx<'_>, chain: EpiChain, ds: &[TensorDesc]) -> ConvArgs {
    let (p, slice_rows) = (c.p, c.slice_rows);
    let u3 = |v: [usize; 3]| v.map(|x| x as u32);
    let tl: [usize; 3] = std::array::from_fn(|d| tilde(p, d));
    let dot = |more: bool| -> [FastDiv; 3] {
        std::array::from_fn(|d| FastDiv::new((p.filter[d] / tl[d] + more as usize) as u32))
    };
    let gm = p.n as u64 * slice_rows.iter().map(|&r| r as u64).product::<u64>();
    let mut args = ConvArgs {
        x_strides: c.dx.strides_u32(),
        w_strides: c.w.strides_u32(),
        dy_strides: c.dy.strides_u32(),
        gemm: GemmPart {
            m: gm as u32,
            n: p.c as u32,
            k: (class_taps(p) * p.k as u64) as u32,
            k_batch: 1,
            tiles_m: c.tiles_m,
            tiles_n: c.tiles_n,
            ..Default::default()
        },
        direct: DirectPart { dx_elems: c.total as u32, ..Default::default() },
        epi: chain,
        div_c: FastDiv::new(p.c as u32),
        div_g: FastDiv::new(p.g as u32),
        slices: SlicePart {
            tilde: u3(tl),
            tap_step: std::array::from_fn(|d| tap_step(p, d) as u32),
            count: c.slices as u32,
            rows: u3(slice_rows),
            div_rows: slice_rows.map(|r| FastDiv::new(r as u32)),
            div_stride: p.strides.map(|s| FastDiv::new(s as u32)),
            div_k: FastDiv::new(p.k as u32),
            div_dot: [dot(false), dot(true)],
            // Plain channels: one channel row (the y fold sets its rows).
            div_channel_row: FastDiv::new(p.c as u32),
            ..Default::default()
        },
        div_in: p.input.map(|i| FastDiv::new(i as u32)),
        div_x: FastDiv::new(p.filter[2] as u32),
        ..problem_args(p)
    };
    for (i, d) in ds.iter().enumerate().take(MAX_D) {
        args.d_strides[i] = d.strides_u32();
    }
    args
}

impl BwdDataPlan {
    /// What runs, in one line: the kernel and how the problem maps onto it.
    pub fn describe(&self) -> String {
        let a = &self.args_template;
        let how = if self.main.instance.op == Op::BwdDataRows {
            let t = &a.tap_shift;
            format!(
                "row segments: tiles of {} image rows x 64 pixels ({} segments x {} bands per image, {} tiles), {} workgroups walking them",
                t.halo_rows, t.div_halo[0].div, t.div_halo[1].div, t.tiles, t.tiles_per_batch
            )
        } else if a.tma_rows.k_pad > 0 {
            let b = a.tma_rows.lg_block.map(|l| 1u32 << l);
            format!("TMA pixel blocks {}x{}x{} (W x H x N), {} tiles along M", b[0], b[1], b[2], a.gemm.tiles_m)
        } else if a.tap_shift.halo_rows > 0 {
            let [hp, wp] = a.tap_shift.div_halo.map(|d| d.div);
            format!("tap shifts: {} image rows per tile of a {hp}x{wp} padded grid", a.tap_shift.halo_rows)
        } else if a.strips.rows > 0 {
            format!("depthwise strips of {} slice rows (direct kernel)", a.strips.rows)
        } else if self.slices == 0 {
            "stride slices 0 (direct kernel)".into()
        } else {
            format!("stride slices {}", self.slices)
        };
        let table = if self.from_table { " ; tuning table" } else { "" };
        let split = batch::describe(&self.problem, &self.parts);
        let packed = self.pack.as_ref().map_or(String::new(), |k| {
            let c = (self.problem.c, self.problem.c.div_ceil(pack::LANES) * pack::LANES);
            pack::describe(&k.copies, &[("K", k.problem.k, self.problem.k), ("C", c.1, c.0)])
        });
        let runs = self.pack.as_ref().map_or(&self.problem, |k| &k.problem);
        format!("{} ; {how}{}{packed}{table}{split}", self.main.instance.name, fold::describe(runs, a))
    }
    /// Workspace bytes each call needs: the channel-packed copies (of a
    /// split plan, the largest part's); 0 without them.
    pub fn workspace_bytes(&self) -> usize {
        let parts = self.parts.iter().map(|q| q.plan.workspace_bytes()).max().unwrap_or(0);
        self.pack.as_ref().map_or(0, |k| k.bytes()).max(parts)
    }
    /// The argument block with device addresses filled in (packed: the
    /// copies of `dy` and `w` in the workspace).
    pub fn args(&self, bufs: &BwdDataBuffers<'_>) -> ConvArgs {
        let mut a = self.args_template;
        let pack = self.pack.as_deref();
        a.x = bufs.dx;
        a.w = Packed::addr(pack, "w", bufs.w, bufs.workspace);
        a.dy = Packed::addr(pack, "dy", bufs.dy, bufs.workspace);
        for (i, &d) in bufs.ds.iter().enumerate().take(MAX_D) {
            a.d[i] = d;
        }
        a
    }
}

/// Device buffers of one backward-data call, by device address. A `D` may
/// be `dx` itself (in-place accumulation) when its layout is [`DLayout::Output`].
#[derive(Clone, Copy, Debug)]
pub struct BwdDataBuffers<'a> {
    /// Output gradient (spanning `plan.dy`).
    pub dy: u64,
    /// Weights (spanning `plan.w`).
    pub w: u64,
    /// Input gradient, written (spanning `plan.dx`).
    pub dx: u64,
    /// `D` tensors of the epilogue.
    pub ds: &'a [u64],
    /// Workspace of [`BwdDataPlan::workspace_bytes`] (16-byte aligned;
    /// 0 where that is 0).
    pub workspace: u64,
}

impl<'a> BwdDataBuffers<'a> {
    /// Takes typed device buffers, checking each one's length against the
    /// plan (`ds` receives the `D` addresses; a `D` may be `dx` itself;
    /// `workspace` may be `None` where the plan needs none).
    #[allow(clippy::too_many_arguments)]
    pub fn checked<T: bytemuck::Pod>(
        plan: &BwdDataPlan,
        types: TypeConfig,
        dy: &crate::runtime::DeviceBuffer<T>,
        w: &crate::runtime::DeviceBuffer<T>,
        dx: &crate::runtime::DeviceBuffer<T>,
        d: &[&crate::runtime::DeviceBuffer<T>],
        ds: &'a mut Vec<u64>,
        workspace: Option<&crate::runtime::DeviceBuffer<u8>>,
    ) -> Result<Self, OpError> {
        check_buffer("dy", &plan.dy, types.act(), dy.bytes())?;
        check_buffer("w", &plan.w, types.wei(), w.bytes())?;
        check_buffer("dx", &plan.dx, types.act(), dx.bytes())?;
        collect_ds(&plan.ds, types.act(), d, ds)?;
        check_workspace(plan, workspace.map_or(0, |b| b.bytes()))?;
        let workspace = workspace.map_or(0, |b| b.device_addr());
        Ok(BwdDataBuffers { dy: dy.device_addr(), w: w.device_addr(), dx: dx.device_addr(), ds, workspace })
    }
}

/// Refuses a workspace of `bytes` shorter than `plan` needs.
pub(crate) fn check_workspace(plan: &BwdDataPlan, bytes: usize) -> Result<(), OpError> {
    let need = plan.workspace_bytes();
    if bytes < need {
        return Err(OpError::Usage(format!(
            "workspace: bwd-data needs {need} bytes for its channel-packed copies (BwdDataOp::workspace_bytes), got {bytes}"
        )));
    }
    Ok(())
}

/// Queues `plan`'s launch of `kernel` on `stream`; of a split plan, each
/// part's launch on its tensors' views (base addresses moved by the part's
/// byte offsets), a part's kernel other than `kernel` from `resolve`.
///
/// # Safety
/// `bufs` keep [`super::execute`]'s contract for `plan`.
pub(crate) unsafe fn launch(
    dev: &crate::runtime::Device,
    stream: &crate::runtime::Stream,
    kernel: &crate::runtime::Kernel,
    resolve: &dyn Fn(&str) -> Result<crate::runtime::Kernel, OpError>,
    plan: &BwdDataPlan,
    bufs: BwdDataBuffers<'_>,
) -> Result<(), OpError> {
    check_d_count(plan.ds.len(), bufs.ds.len())?;
    check_bases([("dy", bufs.dy), ("w", bufs.w), ("dx", bufs.dx)].into_iter().chain(D_NAMES.into_iter().zip(bufs.ds.iter().copied())))?;
    for (i, (&d, desc)) in bufs.ds.iter().zip(&plan.ds).enumerate() {
        // In place is safe only element for element: each thread reads the D
        // value of the element it then writes.
        if d == bufs.dx && *desc != plan.dx {
            return Err(OpError::Usage(format!(
                "{} aliases dx but has another layout ({:?} vs {:?}); an aliasing D must use the `output` layout",
                D_NAMES[i],
                desc.strides,
                plan.dx.strides
            )));
        }
    }
    if plan.workspace_bytes() > 0 && (bufs.workspace == 0 || !bufs.workspace.is_multiple_of(16)) {
        return Err(OpError::Usage(format!(
            "workspace: bwd-data needs {} bytes at a 16-byte aligned address (BwdDataOp::workspace_bytes), got {:#x}",
            plan.workspace_bytes(),
            bufs.workspace
        )));
    }
    if plan.parts.is_empty() {
        // SAFETY: as the main launch's below.
        unsafe { launch_packs(dev, stream, resolve, plan, &bufs)? };
        let args = with_maps(dev, plan, plan.args(&bufs))?;
        // SAFETY: `bufs` hold `plan`'s tensors (this fn's contract) and the
        // arguments are the plan's own.
        unsafe { dev.launch_on(stream, kernel, plan.main.grid, plan.main.block, plan.main.lds_bytes, &args)? };
    }
    let at = |base: u64, off: u64| {
        base.checked_add(off).ok_or_else(|| OpError::Usage(format!("address {base:#x} + {off} passes 64 bits")))
    };
    for part in &plan.parts {
        let mut ds = [0u64; MAX_D];
        for ((d, &b), &off) in ds.iter_mut().zip(bufs.ds).zip(&part.d_offsets) {
            *d = at(b, off)?;
        }
        let [ody, ow, odx] = part.offsets;
        let pb = BwdDataBuffers {
            dy: at(bufs.dy, ody)?,
            w: at(bufs.w, ow)?,
            dx: at(bufs.dx, odx)?,
            ds: &ds[..bufs.ds.len().min(MAX_D)],
            workspace: bufs.workspace,
        };
        let m = &part.plan.main;
        let own = (m.instance.name != plan.main.instance.name).then(|| resolve(m.instance.name)).transpose()?;
        // SAFETY: a part's views lie inside `bufs`' tensors (its offsets and
        // sub-plan come from the plan that split them) and are disjoint as they are.
        unsafe { launch_packs(dev, stream, resolve, &part.plan, &pb)? };
        let args = with_maps(dev, &part.plan, part.plan.args(&pb))?;
        unsafe { dev.launch_on(stream, own.as_ref().unwrap_or(kernel), m.grid, m.block, m.lds_bytes, &args)? };
    }
    Ok(())
}

/// Queues `plan`'s channel-pack copies (if it packs): each reads a caller's
/// tensor and writes its copy into the workspace.
///
/// # Safety
/// As [`launch`]: `bufs` hold the plan's tensors and its workspace.
unsafe fn launch_packs(
    dev: &crate::runtime::Device,
    stream: &crate::runtime::Stream,
    resolve: &dyn Fn(&str) -> Result<crate::runtime::Kernel, OpError>,
    plan: &BwdDataPlan,
    bufs: &BwdDataBuffers<'_>,
) -> Result<(), OpError> {
    for c in plan.pack.iter().flat_map(|k| &k.copies) {
        let src = if c.tensor == "dy" { bufs.dy } else { bufs.w };
        let k = resolve(c.launch.instance.name)?;
        let l = &c.launch;
        // SAFETY: the copy reads the caller's tensor and writes its bytes of the workspace.
        unsafe { dev.launch_on(stream, &k, l.grid, l.block, 0, &c.args(src, bufs.workspace))? };
    }
    Ok(())
}

/// `args` with the tensor maps of `plan`'s TMA kernel filled in (other
/// kernels: unchanged). The maps describe the problem the kernel runs (the
/// folded or packed one where the plan folds or packs): a plan whose
/// argument block says otherwise is refused.
fn with_maps(dev: &crate::runtime::Device, plan: &BwdDataPlan, mut args: ConvArgs) -> Result<ConvArgs, OpError> {
    if plan.main.instance.op != Op::BwdDataTma {
        return Ok(args);
    }
    let (p, w) = plan.folded.as_deref().map_or((&plan.problem, &plan.w), |(p, w)| (p, w));
    if (args.k, args.c) != (p.k as u32, p.c as u32) {
        return Err(OpError::Usage(format!("bwd-data: the TMA plan's argument block does not match its problem {p:?}")));
    }
    let t = &plan.main.instance.tile;
    let dy = plan.pack.as_ref().and_then(|k| k.copy("dy")).map_or(&plan.dy, |c| &c.desc);
    let maps = tma::maps(p, dy, w, t, &args.tma_rows, args.dy, args.w).map_err(OpError::Usage)?;
    for (slot, m) in args.tma.iter_mut().zip(&maps) {
        *slot = dev.encode_tma(m)?;
    }
    Ok(args)
}
