//! Backward-weight's plan: the instance (through [`select`]), split-K and
//! the argument block, for the problem as given or folded or unfolded.
//! The family planners (`family::bwd_weight`) write their launch; this
//! file keeps what every family shares.

use crate::ops::batch::{self, Chunk, CutBy, PlanPart};
use crate::ops::checks::{check_buffer, collect_ds, validate_descs};
use crate::ops::error::{OpError, Unsupported};
use crate::ops::family::bwd_weight::{WeightCtx, WeightLaunch, check_partials, depthwise, direct, gemm, tap_shift, tma, unfold};
use crate::ops::launch::{LaunchSpec, problem_args};
use crate::ops::split::{SplitK, check_split};
use crate::ops::workspace::SplitKWorkspace;
use crate::ops::pack::{self, Packed};
use crate::ops::{fold, select};
use convgrad_types::epilogue::{EpiChain, MAX_D};
use convgrad_types::instance::{Family, Op};
use convgrad_types::params::{ConvArgs, FastDiv, GemmPart, flags};
use convgrad_types::{ConvLayout, ConvProblem, DescError, EpilogueOp, TensorDesc, TensorRole, TypeConfig};

/// What the user asks for besides the problem.
#[derive(Clone, Debug)]
pub struct BwdWeightConfig {
    /// Layout family of x, dw, dy.
    pub layout: ConvLayout,
    /// Data types.
    pub types: TypeConfig,
    /// Fused epilogue on the weight gradient: PassThrough, Scale or Bilinear (with one D).
    pub epilogue: EpilogueOp,
    /// Split-K.
    pub split_k: SplitK,
    /// Deterministic split-K (per-batch partials, fixed-order sum) instead of atomics.
    pub deterministic: bool,
    /// Force an instance by name.
    pub instance: Option<String>,
}

impl Default for BwdWeightConfig {
    fn default() -> Self {
        BwdWeightConfig {
            layout: ConvLayout::NhwgcGkyxcNhwgk,
            types: TypeConfig::F16,
            epilogue: EpilogueOp::PassThrough,
            split_k: SplitK::Auto,
            deterministic: false,
            instance: None,
        }
    }
}

/// Everything needed to run one backward-weight problem.
#[derive(Clone, Debug)]
pub struct BwdWeightPlan {
    /// The problem.
    pub problem: ConvProblem,
    /// Tensor descriptors of x, dw, dy.
    pub x: TensorDesc,
    /// dw.
    pub dw: TensorDesc,
    /// dy.
    pub dy: TensorDesc,
    /// D tensor descriptors (in dw's canonical axes).
    pub ds: Vec<TensorDesc>,
    /// The launch (with split-K, the last workgroup of each output tile sums
    /// the tile's partials and writes it: there is no second launch).
    pub main: LaunchSpec,
    /// Number of k-batches.
    pub k_batch: u32,
    /// Workspace elements, 4 bytes each (0 without split-K): the f32 partials,
    /// then one `u32` arrival counter per output tile. See [`SplitKWorkspace`].
    pub workspace_elems: usize,
    /// Elements of the workspace that hold partials (the counters follow).
    pub partial_elems: usize,
    /// Whether partials are added atomically (they must start at zero) rather
    /// than stored per k-batch (deterministic mode).
    pub atomic_partials: bool,
    /// Argument block with pointers left zero; see [`BwdWeightPlan::args`].
    pub args_template: ConvArgs,
    /// Whether the tuning table chose the kernel (else the hand rules or a forced instance).
    pub from_table: bool,
    /// The pre-pass that unfolds a small-C `x` into channels, where the
    /// plan runs the unfolded problem (see [`UnfoldPlan`]).
    pub unfold: Option<Box<UnfoldPlan>>,
    /// Where the plan folds the problem (stride == filter along x) or packs
    /// its channels: the problem the kernel runs and its `x` descriptor,
    /// which the TMA kernel's tensor maps describe (`dy` folds to itself);
    /// `None` where the kernel runs [`problem`](Self::problem) as given.
    pub folded: Option<Box<(ConvProblem, TensorDesc)>>,
    /// Where `C` or `K` fills no 16-byte vectors (2-byte types, `G` = 1,
    /// the GEMM kernel): the pre-pass copies of `x` and/or `dy` with those
    /// channels zero padded to whole vectors, at the workspace's start, that
    /// the kernel reads; its stores skip `dW`'s padding rows and columns
    /// (see `ops::pack`). `None` otherwise.
    pub pack: Option<Box<Packed>>,
    /// Where `x` or `dy` spans 2^31 elements or more: the launches the
    /// problem is split into (along N, and along G where one image of every
    /// group is too big), run in order; empty otherwise. `main`,
    /// `args_template`, `k_batch` and `from_table` are then the first part's,
    /// and the workspace is shared (see [`plan_with`]).
    pub parts: Vec<PlanPart<BwdWeightPlan>>,
}

/// Backward-weight's pre-pass for small-C inputs (RGB stems): a launch that
/// writes `x'`, the taps of the trailing spatial axes unfolded into
/// channels zero padded to whole 16-byte vectors, at the start of the
/// workspace; the main launch runs the unfolded problem on it (its split-K
/// part follows `x'`) and does not store the padding columns.
#[derive(Clone, Debug)]
pub struct UnfoldPlan {
    /// The launch (`bwdw_unfold_*`).
    pub launch: LaunchSpec,
    /// Its argument block (the caller's problem), addresses left zero.
    pub args_template: ConvArgs,
    /// f32 workspace elements ahead of the split-K part that hold `x'`.
    pub ws_elems: usize,
}

impl UnfoldPlan {
    /// Spatial axes unfolded, counted from x (1: x; 2: y and x; 3: all).
    pub fn dims(&self) -> usize {
        self.args_template.unfold.dims as usize
    }
    /// Channels `C'` of `x'`, and the real ones among them (taps times `C`).
    pub fn channels(&self) -> (usize, usize) {
        let u = &self.args_template.unfold;
        (u.div_vecs.div as usize * unfold::LANES, u.valid as usize)
    }
}

/// Builds the plan for `p` on a device of `family` with `compute_units`.
pub fn plan(
    p: &ConvProblem,
    cfg: &BwdWeightConfig,
    family: Family,
    compute_units: u32,
) -> Result<BwdWeightPlan, OpError> {
    p.validate()?;
    let x = TensorDesc::packed(p, cfg.layout, TensorRole::Input);
    let dw = TensorDesc::packed(p, cfg.layout, TensorRole::Weight);
    let dy = TensorDesc::packed(p, cfg.layout, TensorRole::Output);
    plan_with(p, cfg, family, compute_units, x, dw, dy)
}

/// As [`plan`], with explicit (possibly strided) tensor descriptors.
///
/// **Past 2^31 elements.** The kernels address tensors with 32-bit offsets.
/// Where `x` or `dy` spans 2^31 elements or more (or the reduction
/// `N * output pixels` reaches 2^31), the plan splits the problem along N
/// into launches that each fit ([`BwdWeightPlan::parts`], base addresses
/// moved by 64-bit byte offsets); where one image of every group is still
/// too big, along G too; where one image of one group is, into bands of
/// output rows of its outermost spatial axis (each band a convolution of
/// its own, see `ops::batch`). Along N or rows the launches of a group range add their
/// f32 partials atomically into one split-K workspace (each launch at least
/// 2 k-batches) and only the last launch sums them, applies the epilogue
/// and writes `dw`: the result is the atomic split-K path's, as accurate.
/// The workspace ([`BwdWeightPlan::workspace_elems`]) is then the largest
/// unfolded `x'` of a part, the f32 partials of one group range (`G' * K *
/// C * filter taps`) and the arrival counters. Refused: one row of that
/// axis of one image of one group past the limit, and `deterministic` with
/// a split along N or rows.
pub fn plan_with(
    p: &ConvProblem,
    cfg: &BwdWeightConfig,
    family: Family,
    compute_units: u32,
    x: TensorDesc,
    dw: TensorDesc,
    dy: TensorDesc,
) -> Result<BwdWeightPlan, OpError> {
    plan_with_limit(p, cfg, family, compute_units, x, dw, dy, batch::LIMIT)
}

/// [`plan_with`] splitting where a tensor span or 32-bit count reaches
/// `limit` (at most 2^31) instead of 2^31: lets tests run the split on
/// small problems.
#[doc(hidden)]
#[allow(clippy::too_many_arguments)]
pub fn plan_with_limit(
    p: &ConvProblem,
    cfg: &BwdWeightConfig,
    family: Family,
    compute_units: u32,
    x: TensorDesc,
    dw: TensorDesc,
    dy: TensorDesc,
    limit: u64,
) -> Result<BwdWeightPlan, OpError> {
    p.validate()?;
    weight_chain(cfg)?;
    for (name, d, role, written) in [("x", &x, TensorRole::Input, false), ("dw", &dw, TensorRole::Weight, true), ("dy", &dy, TensorRole::Output, false)] {
        batch::validate_whole(p, d, role, name, written)?;
    }
    let limit = limit.min(batch::LIMIT);
    let acts = [(&x, TensorRole::Input), (&dy, TensorRole::Output), (&dw, TensorRole::Weight)];
    let fits = |c: &Chunk| batch::views_fit(&acts, c, limit) && (c.images as u64).saturating_mul(c.problem(p).output_pixels()) < limit;
    match batch::chunks(p, "x, dy (one image of one group) or its output pixels", CutBy::Output, fits)? {
        None => plan_whole(p, cfg, family, compute_units, x, dw, dy),
        Some(chunks) => plan_split(p, cfg, family, compute_units, [x, dw, dy], chunks),
    }
}

/// The epilogue `cfg` asks for as a chain: backward-weight's steps only.
fn weight_chain(cfg: &BwdWeightConfig) -> Result<EpiChain, OpError> {
    match cfg.epilogue {
        EpilogueOp::PassThrough | EpilogueOp::Scale(_) | EpilogueOp::Bilinear(..) => {
            Ok(EpiChain::from_ops(&[cfg.epilogue]).expect("one step fits"))
        }
        _ => Err(OpError::Desc(DescError::Unsupported {
            field: "epilogue",
            allowed: "pass-through, scale=S or bilinear=A,B on the weight gradient",
        })),
    }
}

/// [`plan_with`] for a problem that runs as one launch (and its pre-pass).
fn plan_whole(
    p: &ConvProblem,
    cfg: &BwdWeightConfig,
    family: Family,
    compute_units: u32,
    x: TensorDesc,
    dw: TensorDesc,
    dy: TensorDesc,
) -> Result<BwdWeightPlan, OpError> {
    let chain = weight_chain(cfg)?;
    let ds = vec![dw; chain.num_d as usize];
    validate_descs(p, &[
        ("x", &x, TensorRole::Input, false),
        ("dw", &dw, TensorRole::Weight, true),
        ("dy", &dy, TensorRole::Output, false),
    ])?;
    check_split(cfg.split_k)?;
    // Stride == filter along x: the kernels run the folded problem (a forced
    // instance that does not fit it runs the problem as given).
    if let Some(f) = fold::along_x(p, &[&x], &[&dw], false) {
        let by = f.c / p.c;
        let (fx, fdw) = (fold::desc(&x, &f, by, true), fold::desc(&dw, &f, by, false));
        match plan_on(&f, cfg, family, compute_units, chain, fx, fdw, dy) {
            Err(OpError::Unsupported(Unsupported::Instance { .. })) => {}
            folded => {
                return folded.map(|plan| BwdWeightPlan { problem: *p, x, dw, ds, folded: Some(Box::new((f, fx))), ..plan });
            }
        }
    }
    let given = plan_on(p, cfg, family, compute_units, chain, x, dw, dy);
    // Channels that fill no vector: where the GEMM would gather them one by
    // one, the kernels run the problem unfolded (the direct kernels' tiny
    // GEMMs stay; as for the fold, a forced instance that does not fit the
    // unfolded problem runs the problem as given; one that fits neither
    // may fit it packed).
    let gathers = match &given {
        Ok(g) => g.main.instance.op == Op::BwdWeight,
        Err(e) => matches!(e, OpError::Unsupported(Unsupported::Instance { .. })),
    };
    if let Some(u) = unfold::choose(p, cfg.types, &dw).filter(|_| gathers) {
        match plan_on(&u.problem, cfg, family, compute_units, chain, u.x, u.dw, dy) {
            Err(OpError::Unsupported(Unsupported::Instance { .. })) => {}
            Err(e) => return Err(e),
            Ok(mut plan) => {
                let inst = unfold::Unfolded::instance(cfg.types);
                let launch = LaunchSpec { instance: inst, grid: [u.grid_x(), 1, 1], block: inst.threads(family), lds_bytes: 0 };
                launch.check_grid()?;
                let ws_elems = u.ws_elems();
                plan.args_template.unfold.valid = if u.valid == u.cols { 0 } else { u.valid as u32 };
                plan.workspace_elems += ws_elems;
                let pre = UnfoldPlan { launch, args_template: u.args(p, &x), ws_elems };
                return Ok(BwdWeightPlan { problem: *p, x, dw, ds, unfold: Some(Box::new(pre)), ..plan });
            }
        }
    }
    // Channel counts that fill no vector: where the GEMM would gather them
    // one by one, the kernels run on channel-packed copies of x and/or dy.
    if gathers && let Some(plan) = plan_packed(p, cfg, family, compute_units, chain, [x, dw, dy], &ds)? {
        return Ok(plan);
    }
    given
}

/// [`plan_whole`] on channel-packed copies of `x` (where `C` fills no
/// vectors and is `dW`'s innermost axis) and/or `dy` (where `K` fills
/// none), for 2-byte types and `G` = 1; `None` where nothing is packed or
/// a forced instance does not fit the packed problem (it runs as given).
#[allow(clippy::too_many_arguments)]
fn plan_packed(
    p: &ConvProblem,
    cfg: &BwdWeightConfig,
    family: Family,
    compute_units: u32,
    chain: EpiChain,
    [x, dw, dy]: [TensorDesc; 3],
    ds: &[TensorDesc],
) -> Result<Option<BwdWeightPlan>, OpError> {
    // x's channels load as vectors only where C is dW's innermost axis.
    let (act, wei) = (cfg.types.act(), cfg.types.wei());
    let (pack_x, pack_dy) = (pack::needs(act, p.c) && dw.strides[2] == 1, pack::needs(act, p.k));
    if p.g != 1 || act != wei || !(pack_x || pack_dy) {
        return Ok(None);
    }
    let mut q = *p;
    (q.c, q.k) = (if pack_x { pack::padded(p.c) } else { p.c }, if pack_dy { pack::padded(p.k) } else { p.k });
    let mut copies = Vec::new();
    let (mut qx, mut qdy) = (x, dy);
    if pack_x {
        copies.push(pack::copy("x", &x, p.n, false, 0, act, family)?);
        qx = copies[0].desc;
    }
    if pack_dy {
        let at = copies.first().map_or(0, |c| c.bytes);
        copies.push(pack::copy("dy", &dy, p.n, false, at, act, family)?);
        qdy = copies[copies.len() - 1].desc;
    }
    // dW keeps its strides; the stores skip rows and columns past K and C.
    let mut qdw = dw;
    (qdw.lengths[1], qdw.lengths[2]) = (q.k, q.c);
    let mut plan = match plan_on(&q, cfg, family, compute_units, chain, qx, qdw, qdy) {
        Err(OpError::Unsupported(Unsupported::Instance { .. })) => return Ok(None),
        r => r?,
    };
    let u = &mut plan.args_template.unfold;
    u.valid = if pack_x { p.c as u32 } else { 0 };
    u.rows = if pack_dy { p.k as u32 } else { 0 };
    let packed = Packed { problem: q, copies };
    plan.workspace_elems += packed.bytes() / 4;
    let (folded, pack) = (Some(Box::new((q, qx))), Some(Box::new(packed)));
    Ok(Some(BwdWeightPlan { problem: *p, x, dw, dy, ds: ds.to_vec(), folded, pack, ..plan }))
}

/// [`plan_with`] for a problem split into `chunks` (see there): each part
/// planned on its views of the tensors, with the first part's instance (the
/// parts of a group range share the atomic partials' layout); the shared
/// workspace is the largest `x'` of a part, then the largest partials, then
/// the most counters.
fn plan_split(
    p: &ConvProblem,
    cfg: &BwdWeightConfig,
    family: Family,
    compute_units: u32,
    [x, dw, dy]: [TensorDesc; 3],
    chunks: Vec<Chunk>,
) -> Result<BwdWeightPlan, OpError> {
    let chain = weight_chain(cfg)?;
    // Launches that share a group range sum into the same partials.
    let along_n = chunks.iter().any(|c| c.images < p.n || c.cut.is_some());
    if along_n && cfg.deterministic {
        return Err(OpError::Desc(DescError::Unsupported {
            field: "deterministic",
            allowed: "off where x or dy spans 2^31 elements or more: the problem is split along N (or a spatial axis) and the launches add their partials atomically (#38)",
        }));
    }
    let mut parts: Vec<PlanPart<BwdWeightPlan>> = Vec::with_capacity(chunks.len());
    let mut cache = batch::SizeCache::new();
    for chunk in chunks {
        let instance = parts.first().map(|f| f.plan.main.instance.name.to_string()).or_else(|| cfg.instance.clone());
        let cfg = BwdWeightConfig { instance, ..cfg.clone() };
        let plan = cache.get(&chunk, || plan_part(p, &cfg, family, compute_units, [&x, &dw, &dy], (chunk, along_n)))?;
        parts.push(part_at(chunk, plan, &cfg, [&x, &dw, &dy], chain.num_d as usize)?);
    }
    let max = |f: &dyn Fn(&BwdWeightPlan) -> usize| parts.iter().map(|q| f(&q.plan)).max().unwrap_or(0);
    let scratch = max(&|q| q.scratch_bytes() / 4);
    let partial_elems = max(&|q| q.partial_elems);
    let counters = max(&|q| q.workspace_elems.saturating_sub(q.scratch_bytes() / 4 + q.partial_elems));
    let workspace_elems = scratch
        .checked_add(partial_elems)
        .and_then(|v| v.checked_add(counters))
        .ok_or(DescError::Overflow { field: "split-K workspace of a split problem" })?;
    let first = parts[0].plan.clone();
    Ok(BwdWeightPlan {
        problem: *p,
        x,
        dw,
        dy,
        ds: vec![dw; chain.num_d as usize],
        workspace_elems,
        partial_elems,
        atomic_partials: !cfg.deterministic && partial_elems > 0,
        unfold: None,
        pack: None,
        parts,
        ..first
    })
}

/// A part of [`plan_split`]: `plan` (of a chunk of `chunk`'s size) and the
/// byte offsets of `chunk`'s views.
fn part_at(chunk: Chunk, plan: BwdWeightPlan, cfg: &BwdWeightConfig, [x, dw, dy]: [&TensorDesc; 3], num_d: usize) -> Result<PlanPart<BwdWeightPlan>, OpError> {
    let (act, wei) = (cfg.types.act(), cfg.types.wei());
    let ox = batch::view_bytes(&chunk, x, TensorRole::Input, act)?.1;
    let ody = batch::view_bytes(&chunk, dy, TensorRole::Output, act)?.1;
    let odw = batch::view_bytes(&chunk, dw, TensorRole::Weight, wei)?.1;
    Ok(PlanPart { chunk, plan, offsets: [ox, ody, odw], d_offsets: vec![odw; num_d] })
}

/// The plan of one chunk of [`plan_split`] on its views (along N with at
/// least 2 atomic k-batches, so that its partials are added, not written).
fn plan_part(
    p: &ConvProblem,
    cfg: &BwdWeightConfig,
    family: Family,
    compute_units: u32,
    [x, dw, dy]: [&TensorDesc; 3],
    (chunk, along_n): (Chunk, bool),
) -> Result<BwdWeightPlan, OpError> {
    let (act, wei) = (cfg.types.act(), cfg.types.wei());
    let (vx, _) = batch::view_bytes(&chunk, x, TensorRole::Input, act)?;
    let (vdy, _) = batch::view_bytes(&chunk, dy, TensorRole::Output, act)?;
    let (vdw, _) = batch::view_bytes(&chunk, dw, TensorRole::Weight, wei)?;
    let sp = chunk.problem(p);
    let mut plan = plan_whole(&sp, cfg, family, compute_units, vx, vdw, vdy)?;
    if along_n && plan.k_batch < 2 {
        let two = BwdWeightConfig { split_k: SplitK::Fixed(2), ..cfg.clone() };
        plan = plan_whole(&sp, &two, family, compute_units, vx, vdw, vdy)?;
    }
    if along_n && !(plan.k_batch >= 2 && plan.atomic_partials) {
        return Err(OpError::Usage(format!(
            "split_k: a problem split along N (past 2^31 elements, #38) needs at least 2 atomic k-batches per launch; {} runs {} on {} images",
            plan.main.instance.name, plan.k_batch, chunk.images
        )));
    }
    Ok(plan)
}

/// The plan of [`plan_with`] for the problem the kernels run (`p` folded or
/// not): the choice, the GEMM sizes, the common argument block, then the
/// chosen family's planner.
#[allow(clippy::too_many_arguments)]
fn plan_on(
    p: &ConvProblem,
    cfg: &BwdWeightConfig,
    family: Family,
    compute_units: u32,
    chain: EpiChain,
    x: TensorDesc,
    dw: TensorDesc,
    dy: TensorDesc,
) -> Result<BwdWeightPlan, OpError> {
    let ds = vec![dw; chain.num_d as usize];
    let choice = select::bwd_weight(&select::Request {
        p,
        types: cfg.types,
        family,
        compute_units,
        x: &x,
        dy: &dy,
        w: &dw,
        forced: cfg.instance.as_deref(),
        deterministic: cfg.deterministic,
    })?;
    // The tuning table's measured split stands in for the automatic one; a fixed split asked for wins.
    let split_k = match (cfg.split_k, choice.split) {
        (SplitK::Auto, Some(n)) => SplitK::Fixed(n),
        (s, _) => s,
    };
    let (inst, (gm, gn, gk)) = (choice.instance, gemm_sizes(p)?);
    // The TMA kernel's reduction runs over whole blocks of output pixels on filters with taps.
    let gk = if inst.op == Op::BwdWeightTma { tma::reduction(p, &inst.tile) } else { gk };
    let (tiles_m, tiles_n) = (gm.div_ceil(inst.tile.bm as u64) as u32, gn.div_ceil(inst.tile.bn as u64) as u32);
    let (types, deterministic) = (cfg.types, cfg.deterministic);
    let (x, dw, dy) = (&x, &dw, &dy);
    let c = WeightCtx { p, inst, family, compute_units, types, x, dw, dy, split_k, deterministic, gm, gn, gk, tiles_m, tiles_n };
    // The GEMM's split is every family's first check (the order errors come in).
    let base = gemm::split(&c);
    check_partials(c.weights(), base.0)?;
    let mut args = common_args(&c, chain, &ds);
    if inst.op == Op::BwdWeightTma {
        args.tma_rows = tma::rows(p, &inst.tile);
    }
    let launch = match (inst.op, choice.fit) {
        (_, select::Fit::TapShift(f)) => tap_shift::plan(&c, &f, &mut args)?,
        (Op::BwdWeightDepthwise, _) => depthwise::plan(&c, &mut args)?,
        (Op::BwdWeightDirect, _) => direct::plan(&c, base, &mut args),
        _ => gemm::plan(&c, base, &mut args)?,
    };
    let plan = finish(&c, launch, args)?;
    Ok(BwdWeightPlan { x: *x, dw: *dw, dy: *dy, ds, from_table: choice.from_table, ..plan })
}

/// The per-group GEMM `(M, N, reduction)`, each within 2^31 - 1.
fn gemm_sizes(p: &ConvProblem) -> Result<(u64, u64, u64), OpError> {
    let (gm, gn) = (p.k as u64, p.c as u64 * p.filter_taps());
    let gk = p.n as u64 * p.output_pixels();
    for (field, v) in [("GEMM M (K)", gm), ("GEMM N (C*filter)", gn), ("GEMM K (N*output pixels)", gk)] {
        if v > u32::MAX as u64 / 2 {
            return Err(OpError::Desc(DescError::TooLarge { field, value: v, max: u32::MAX as u64 / 2 }));
        }
    }
    Ok((gm, gn, gk))
}

/// The argument block every family starts from: the problem, the strides,
/// the GEMM sizes and the epilogue (the family sets its k-batches and part).
fn common_args(c: &WeightCtx<'_>, chain: EpiChain, ds: &[TensorDesc]) -> ConvArgs {
    let p = c.p;
    let mut args = ConvArgs {
        x_strides: c.x.strides_u32(),
        w_strides: c.dw.strides_u32(),
        dy_strides: c.dy.strides_u32(),
        gemm: GemmPart {
            m: c.gm as u32,
            n: c.gn as u32,
            k: c.gk as u32,
            k_batch: 0,
            k_per_batch: 0,
            tiles_m: c.tiles_m,
            tiles_n: c.tiles_n,
            partial_elems: c.weights() as u32,
            div_n: FastDiv::new(c.gn as u32),
        },
        epi: chain,
        div_out: p.output().map(|o| FastDiv::new(o as u32)),
        div_c: FastDiv::new(p.c as u32),
        div_x: FastDiv::new(p.filter[2] as u32),
        div_y: FastDiv::new(p.filter[1] as u32),
        div_zyx: FastDiv::new(p.filter_taps() as u32),
        div_g: FastDiv::new(p.g as u32),
        ..problem_args(p)
    };
    for (i, d) in ds.iter().enumerate().take(MAX_D) {
        args.d_strides[i] = d.strides_u32();
    }
    args
}

/// The plan of a family's launch: the split-K mode, the launch (its grid
/// checked) and the workspace (partials, then one arrival counter per
/// output tile). Tensors are left to the caller.
fn finish(c: &WeightCtx<'_>, l: WeightLaunch, mut args: ConvArgs) -> Result<BwdWeightPlan, OpError> {
    let mode = match (l.k_batch, c.deterministic) {
        (1, _) => 0,
        (_, true) => flags::SPLITK_STORE,
        (_, false) => flags::SPLITK_ATOMIC,
    };
    args.flags = mode;
    let inst = c.inst;
    let main = LaunchSpec { instance: inst, grid: l.grid, block: inst.threads(c.family), lds_bytes: inst.lds_bytes() };
    main.check_grid()?;
    let partial = c.weights();
    let partial_elems = match mode {
        flags::SPLITK_STORE => (partial * l.k_batch as u64) as usize,
        flags::SPLITK_ATOMIC => partial as usize,
        _ => 0,
    };
    let workspace_elems = if mode == 0 { 0 } else { partial_elems + l.counters };
    Ok(BwdWeightPlan {
        problem: *c.p,
        x: *c.x,
        dw: *c.dw,
        dy: *c.dy,
        ds: Vec::new(),
        main,
        k_batch: l.k_batch,
        workspace_elems,
        partial_elems,
        atomic_partials: mode == flags::SPLITK_ATOMIC,
        args_template: args,
        from_table: false,
        unfold: None,
        pack: None,
        folded: None,
        parts: Vec::new(),
    })
}

impl BwdWeightPlan {
    /// What runs, in one line: the kernel, the split and, for tap shifts, the grid.
    pub fn describe(&self) -> String {
        let mode = match (self.k_batch, self.atomic_partials) {
            (1, _) => "none",
            (_, true) => "atomic",
            (_, false) => "deterministic",
        };
        let a = &self.args_template;
        let shifts = if a.tap_shift.halo_rows > 0 {
            let [hp, wp] = a.tap_shift.div_halo.map(|d| d.div);
            format!(" ; tap shifts: {} image rows per tile of a {hp}x{wp} padded grid", a.tap_shift.halo_rows)
        } else {
            String::new()
        };
        let folded = match &self.unfold {
            Some(u) => {
                let axes = ["x", "y and x", "z, y and x"][u.dims() - 1];
                let (cols, valid) = u.channels();
                format!(" ; {axes} unfolded into channels first (C' = {cols} for {valid}, {})", u.launch.instance.name)
            }
            None => match &self.pack {
                Some(k) => {
                    let dims = [("C", k.problem.c, self.problem.c), ("K", k.problem.k, self.problem.k)];
                    pack::describe(&k.copies, &dims)
                }
                None => fold::describe(&self.problem, a),
            },
        };
        let table = if self.from_table { " ; tuning table" } else { "" };
        let split = batch::describe(&self.problem, &self.parts);
        format!("{} ; k_batch {} ; split-K {mode}{shifts}{folded}{table}{split}", self.main.instance.name, self.k_batch)
    }
    /// The argument block with device addresses filled in (unfolded: `x'`
    /// at the workspace's start, the split-K part after it).
    pub fn args(&self, x: u64, dw: u64, dy: u64, workspace: u64, ds: &[u64]) -> ConvArgs {
        let mut a = self.args_template;
        a.x = x;
        a.w = dw;
        a.dy = dy;
        a.ws = workspace;
        if let Some(u) = &self.unfold {
            a.x = workspace;
            a.ws = if self.workspace_elems > u.ws_elems { workspace + 4 * u.ws_elems as u64 } else { 0 };
        }
        if let Some(k) = self.pack.as_deref() {
            a.x = Packed::addr(Some(k), "x", x, workspace);
            a.dy = Packed::addr(Some(k), "dy", dy, workspace);
            a.ws = if self.workspace_elems * 4 > k.bytes() { workspace + k.bytes() as u64 } else { 0 };
        }
        for (i, &d) in ds.iter().enumerate().take(MAX_D) {
            a.d[i] = d;
        }
        a
    }
    /// The pre-pass's argument block: it reads `x` and writes `x'` at the workspace's start.
    pub fn unfold_args(&self, x: u64, workspace: u64) -> Option<ConvArgs> {
        self.unfold.as_ref().map(|u| ConvArgs { x, w: workspace, ..u.args_template })
    }
    /// Bytes at the workspace's start that every call overwrites (`x'`; of
    /// a split plan, the largest part's).
    pub fn scratch_bytes(&self) -> usize {
        let parts = self.parts.iter().map(|q| q.plan.scratch_bytes()).max().unwrap_or(0);
        let pack = self.pack.as_ref().map_or(0, |k| k.bytes());
        self.unfold.as_ref().map_or(0, |u| 4 * u.ws_elems).max(pack).max(parts)
    }
    /// The pre-pass kernel the plan (or a part of it) launches, if any.
    pub fn pre_pass(&self) -> Option<&'static str> {
        let packs = self.pack.as_ref().and_then(|k| k.copies.first()).map(|c| c.launch.instance.name);
        let own = self.unfold.as_ref().map(|u| u.launch.instance.name).or(packs);
        own.or_else(|| self.parts.iter().find_map(|q| q.plan.pre_pass()))
    }
    /// The f32 partials each output element sums: `k_batch`, or of a plan
    /// split along N, the k-batches of every launch of the first group range.
    pub fn k_batches(&self) -> u32 {
        match self.parts.first() {
            None => self.k_batch,
            Some(f) => self.parts.iter().filter(|q| q.chunk.g0 == f.chunk.g0).map(|q| q.plan.k_batch).sum(),
        }
    }
    /// GEMM-K each output element accumulates over (the tolerance grows with it).
    pub fn accumulation_length(&self) -> u64 {
        self.problem.n as u64 * self.problem.output_pixels()
    }
}

/// Device buffers of one backward-weight call, by device address.
#[derive(Clone, Copy, Debug)]
pub struct BwdWeightBuffers<'a> {
    /// Input activations (act type, spanning `plan.x`).
    pub x: u64,
    /// Output gradient (act type, spanning `plan.dy`).
    pub dy: u64,
    /// Weight gradient, written (weight type, spanning `plan.dw`).
    pub dw: u64,
    /// `D` tensors of the epilogue (weight type).
    pub ds: &'a [u64],
}

impl<'a> BwdWeightBuffers<'a> {
    /// Takes typed device buffers, checking each one's byte length against the
    /// plan's tensor descriptors and data types (`ds` receives the addresses of
    /// the `D` buffers, which must be checked the same way).
    pub fn checked<X: bytemuck::Pod, W: bytemuck::Pod>(
        plan: &BwdWeightPlan,
        types: TypeConfig,
        x: &crate::runtime::DeviceBuffer<X>,
        dy: &crate::runtime::DeviceBuffer<X>,
        dw: &crate::runtime::DeviceBuffer<W>,
        d: &[&crate::runtime::DeviceBuffer<W>],
        ds: &'a mut Vec<u64>,
    ) -> Result<Self, OpError> {
        let need = check_buffer;
        need("x", &plan.x, types.act(), x.bytes())?;
        need("dy", &plan.dy, types.act(), dy.bytes())?;
        need("dw", &plan.dw, types.wei(), dw.bytes())?;
        collect_ds(&plan.ds, types.wei(), d, ds)?;
        Ok(BwdWeightBuffers { x: x.device_addr(), dy: dy.device_addr(), dw: dw.device_addr(), ds })
    }
}

impl SplitKWorkspace {
    /// The workspace `plan` needs, or `None` when it splits no reduction.
    pub fn for_plan(dev: &crate::runtime::Device, plan: &BwdWeightPlan) -> crate::runtime::Result<Option<Self>> {
        (plan.workspace_elems > 0).then(|| Self::new(dev, plan.workspace_elems)).transpose()
    }
}
