//! Grouped convolution backward-data with a fused multi-D epilogue:
//! planning (instance, slices, argument block) and execution.
//!
//! `dx = f(conv_transpose(dy, w), D0, D1, ...)`, written once per element.
//! One launch covers every stride-residue slice (see the device crate's
//! `conv::bwd_data::gemm`): per group and slice a GEMM with `M = N * ceil(I/S)`
//! pixels, `N = C`, reduction `taps of the slice's class * K`.

pub use super::{LaunchSpec, OpError, Unsupported};
use super::{check_buffer, fold, select};
use convgrad_types::epilogue::{EpiChain, MAX_D};
use convgrad_types::instance::{Family, Op};
use convgrad_types::params::{ConvArgs, DirectPart, FastDiv, GemmPart, SlicePart, vec_mode};
use convgrad_types::contract::bwd_data_direct::{KV, RUN};
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
}

/// Taps of the largest residue class, per dim: `ceil(filter / tilde)`.
pub(super) fn class_taps(p: &ConvProblem) -> u64 {
    (0..3).map(|d| p.filter[d].div_ceil(tilde(p, d)) as u64).product()
}

/// `S / gcd(S, dilation)` along canonical spatial dim `d`.
pub(super) fn tilde(p: &ConvProblem, d: usize) -> usize {
    p.strides[d] / gcd(p.strides[d], p.dilations[d])
}

/// `dilation / gcd(S, dilation)` along canonical spatial dim `d`: how far the
/// output pixel moves between consecutive taps of one class.
pub(super) fn tap_step(p: &ConvProblem, d: usize) -> usize {
    p.dilations[d] / gcd(p.strides[d], p.dilations[d])
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Groups per thread of the depthwise strip kernel.
const DEPTHWISE_VW: usize = convgrad_types::contract::depthwise_strips::VW;

/// `(strips, rows per strip)` for `rows` slice rows, `per_strip` threads per
/// strip in workgroups of `block`, `round` workgroups resident at once: the
/// fewest strips that minimise rounds times steps per thread (rows + 2).
/// Long strips read fewer halo rows and fill fewer dropped slots; the
/// rounds count the tail (timings: docs/tuning-log.md, "kernel choice").
fn depthwise_strip_count(rows: usize, per_strip: u64, block: u64, round: u64) -> (usize, usize) {
    let cost = |strips: usize| {
        let blocks = (per_strip * strips as u64).div_ceil(block);
        blocks.div_ceil(round) * (rows.div_ceil(strips) as u64 + 2)
    };
    let strips = (1..=rows.max(1)).min_by_key(|&s| cost(s)).unwrap_or(1);
    (strips, rows.div_ceil(strips).max(1))
}

fn slice_count(p: &ConvProblem) -> usize {
    p.strides.iter().product()
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
pub fn plan_with(
    p: &ConvProblem,
    cfg: &BwdDataConfig,
    family: Family,
    compute_units: u32,
    dy: TensorDesc,
    w: TensorDesc,
    dx: TensorDesc,
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
    super::validate_descs(p, &[
        ("dy", &dy, TensorRole::Output, false),
        ("w", &w, TensorRole::Weight, false),
        ("dx", &dx, TensorRole::Input, true),
    ])?;
    for (i, d) in ds.iter().enumerate() {
        d.validate_for(p, TensorRole::Input, super::D_NAMES[i], false)?;
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
            return Ok(BwdDataPlan { problem: *p, w, dx, ds, ..plan });
        }
        match plan_on(&f, cfg, family, compute_units, chain, dy, fw, fdx, fds) {
            Err(OpError::Unsupported(Unsupported::Instance { .. })) => {}
            folded => return folded.map(|plan| BwdDataPlan { problem: *p, w, dx, ds, ..plan }),
        }
    }
    plan_on(p, cfg, family, compute_units, chain, dy, w, dx, ds)
}

/// The plan of [`plan_with`] for the problem the kernels run (`p` folded or not).
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
    let choice = select::bwd_data(&select::Request {
        p,
        types: cfg.types,
        family,
        compute_units,
        x: &dx,
        dy: &dy,
        forced: cfg.instance.as_deref(),
        deterministic: false,
    })?;
    let inst = choice.instance;
    let halo_rows = match choice.fit {
        select::Fit::TapShift(h) => Some(h),
        _ => None,
    };
    let row_tiles = match choice.fit {
        select::Fit::Rows(f) => Some(f),
        _ => None,
    };
    match cfg.strip_rows {
        Some(0) => return Err(OpError::Usage("strip_rows: at least 1 (slice rows per strip)".into())),
        Some(_) if inst.op != Op::BwdDataDepthwise => {
            return Err(OpError::Usage(format!(
                "strip_rows applies to the depthwise column-strip kernel (bwdd_depthwise_*); this problem runs {}",
                inst.name
            )));
        }
        _ => {}
    }
    let direct = matches!(inst.op, Op::BwdDataDirect | Op::BwdDataDepthwise);
    let t = inst.tile;
    let slice_rows: [usize; 3] = std::array::from_fn(|d| p.input[d].div_ceil(p.strides[d]));
    let gm = p.n as u64 * slice_rows.iter().map(|&r| r as u64).product::<u64>();
    let gn = p.c as u64;
    let total = p.g as u64 * p.n as u64 * p.c as u64 * p.input_pixels();
    let limit = u32::MAX as u64 / 2;
    for (field, v) in [
        ("GEMM M (N * input pixels per stride slice)", gm),
        ("GEMM K (class taps * K)", class_taps(p) * p.k as u64),
        ("input-gradient elements (G * N * C * pixels)", total),
    ] {
        if v > limit {
            return Err(OpError::Desc(DescError::TooLarge { field, value: v, max: limit }));
        }
    }
    let tiles_m = gm.div_ceil(t.bm as u64) as u32;
    let tiles_n = gn.div_ceil(t.bn as u64) as u32;
    if !direct && tiles_m as u64 * tiles_n as u64 > limit {
        return Err(OpError::Desc(DescError::TooLarge {
            field: "GEMM tiles (grid x)",
            value: tiles_m as u64 * tiles_n as u64,
            max: limit,
        }));
    }
    let u3 = |v: [usize; 3]| v.map(|x| x as u32);
    let tl: [usize; 3] = std::array::from_fn(|d| tilde(p, d));
    let dot = |more: bool| -> [FastDiv; 3] {
        std::array::from_fn(|d| FastDiv::new((p.filter[d] / tl[d] + more as usize) as u32))
    };
    let mut args = ConvArgs {
        x_strides: dx.strides_u32(),
        w_strides: w.strides_u32(),
        dy_strides: dy.strides_u32(),
        gemm: GemmPart {
            m: gm as u32,
            n: gn as u32,
            k: (class_taps(p) * p.k as u64) as u32,
            k_batch: 1,
            tiles_m,
            tiles_n,
            ..Default::default()
        },
        direct: DirectPart { dx_elems: total as u32, ..Default::default() },
        epi: chain,
        div_c: FastDiv::new(p.c as u32),
        div_g: FastDiv::new(p.g as u32),
        slices: SlicePart {
            tilde: u3(tl),
            tap_step: std::array::from_fn(|d| tap_step(p, d) as u32),
            count: slices as u32,
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
        ..super::problem_args(p)
    };
    for (i, d) in ds.iter().enumerate().take(MAX_D) {
        args.d_strides[i] = d.strides_u32();
    }
    // The direct kernel's channel-vector path: threads run
    // `(n, iz, iy, residue x, run of RUN slice positions, channel vector)`.
    // Channel lanes read their weights as one vector too (else the scalar
    // path runs: a gather beside the vector load in the kernel made LLVM
    // merge both into 2-byte loads).
    let fast = (direct && inst.op == Op::BwdDataDirect)
        .then(|| super::direct_vec_mode(p, cfg.types.act().bytes(), &dx, &dy))
        .flatten()
        .filter(|&(mode, vw)| mode & vec_mode::DEPTHWISE != 0 || super::lane_axis(&w, 2, vw))
        .map(|(mode, vw)| {
            let lanes = mode & vec_mode::DEPTHWISE == 0;
            let kvec = if lanes && super::lane_axis(&dy, 2, KV) { vec_mode::DY_KVEC } else { 0 };
            let vectors = (p.g * p.c / vw) as u64;
            let runs = slice_rows[2].div_ceil(RUN) as u64;
            let threads = vectors * runs * p.strides[2] as u64 * (p.n * p.input[0] * p.input[1]) as u64;
            (mode | kvec, vectors, runs, threads)
        })
        .filter(|f| f.3 <= limit);
    // Depthwise strips: `(n, iz, residue y, strip, residue x, run, vector)`.
    let fast = fast.or_else(|| {
        (inst.op == Op::BwdDataDepthwise).then_some(())?;
        let vectors = (p.g / DEPTHWISE_VW) as u64;
        let runs = slice_rows[2].div_ceil(RUN) as u64;
        let per_strip = vectors * runs * (p.strides[2] * p.strides[1] * p.n * p.input[0]) as u64;
        let round = inst.min_blocks() as u64 * compute_units.max(1) as u64;
        let (strips, rows) = match cfg.strip_rows {
            Some(r) => (slice_rows[1].div_ceil(r), r),
            None => depthwise_strip_count(slice_rows[1], per_strip, inst.threads(family) as u64, round),
        };
        let threads = per_strip * strips as u64;
        args.strips.div_strips = FastDiv::new(strips as u32);
        args.strips.rows = rows as u32;
        Some((vec_mode::ON | vec_mode::DEPTHWISE | vec_mode::HALF, vectors, runs, threads))
    });
    if inst.op == Op::BwdDataDepthwise && fast.is_none_or(|f| f.3 > limit) {
        return Err(OpError::Desc(DescError::TooLarge {
            field: "depthwise strip threads (G / 2 * runs * strips * N * D)",
            value: fast.map_or(0, |f| f.3),
            max: limit,
        }));
    }
    let fast = fast.filter(|f| f.3 <= limit);
    if let Some((mode, vectors, runs, _)) = fast {
        args.direct.vec_mode = mode;
        args.direct.div_vec = FastDiv::new(vectors as u32);
        args.direct.div_runs = FastDiv::new(runs as u32);
    }
    let grid = if let Some(f) = row_tiles {
        // Persistent workgroups: as many as stay resident, each walking tiles.
        let resident = inst.resident_per_cu(family) as usize * compute_units.max(1) as usize;
        let workgroups = f.tiles.min(resident) as u32;
        f.set(&mut args, workgroups);
        [workgroups, p.c.div_ceil(inst.tile.bn as usize) as u32, p.g as u32]
    } else if let Some(h) = halo_rows {
        h.set(&mut args);
        [h.tiles as u32, p.g.div_ceil(inst.tile.waves_n as usize) as u32, 1]
    } else if let Some((.., threads)) = fast {
        [(threads as u32).div_ceil(inst.threads(family)), 1, 1]
    } else if direct {
        [(total as u32).div_ceil(inst.threads(family)), 1, 1]
    } else {
        [tiles_m * tiles_n, slices as u32, p.g as u32]
    };
    let main = LaunchSpec { instance: inst, grid, block: inst.threads(family), lds_bytes: inst.lds_bytes() };
    main.check_grid()?;
    Ok(BwdDataPlan {
        problem: *p,
        dy,
        w,
        dx,
        ds,
        chain,
        main,
        slices: if direct { 0 } else { slices as u32 },
        args_template: args,
        from_table: choice.from_table,
    })
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
        format!("{} ; {how}{}{table}", self.main.instance.name, fold::describe(&self.problem, a))
    }
    /// The argument block with device addresses filled in.
    pub fn args(&self, bufs: &BwdDataBuffers<'_>) -> ConvArgs {
        let mut a = self.args_template;
        a.x = bufs.dx;
        a.w = bufs.w;
        a.dy = bufs.dy;
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
}

impl<'a> BwdDataBuffers<'a> {
    /// Takes typed device buffers, checking each one's length against the
    /// plan (`ds` receives the `D` addresses; a `D` may be `dx` itself).
    pub fn checked<T: bytemuck::Pod>(
        plan: &BwdDataPlan,
        types: TypeConfig,
        dy: &crate::runtime::DeviceBuffer<T>,
        w: &crate::runtime::DeviceBuffer<T>,
        dx: &crate::runtime::DeviceBuffer<T>,
        d: &[&crate::runtime::DeviceBuffer<T>],
        ds: &'a mut Vec<u64>,
    ) -> Result<Self, OpError> {
        check_buffer("dy", &plan.dy, types.act(), dy.bytes())?;
        check_buffer("w", &plan.w, types.wei(), w.bytes())?;
        check_buffer("dx", &plan.dx, types.act(), dx.bytes())?;
        super::collect_ds(&plan.ds, types.act(), d, ds)?;
        Ok(BwdDataBuffers { dy: dy.device_addr(), w: w.device_addr(), dx: dx.device_addr(), ds })
    }
}

/// Runs a plan on the device's own stream: one launch writes every element
/// of `dx`. [`BwdDataOp`] is the framework-facing form (resolved kernel,
/// caller's stream, checked buffers): prefer it.
///
/// # Safety
///
/// The kernel reads and writes `bufs` by address, unchecked. The caller
/// guarantees that:
/// - `plan` is one [`plan`] or [`plan_with`] returned, unmodified;
/// - `bufs.dy`, `bufs.w` and `bufs.dx` point to device memory of `dev`
///   holding at least `plan.dy.span()`, `plan.w.span()` and `plan.dx.span()`
///   elements of the plan's types, each of `bufs.ds` (as many as the
///   epilogue reads) at least the span of its `plan.ds` descriptor
///   ([`BwdDataBuffers::checked`] checks these lengths);
/// - the bytes `dx` spans overlap none of `dy`, `w` or the `D` tensors,
///   except a `D` at `dx`'s own address (`execute` refuses it unless its
///   layout is [`DLayout::Output`]: in place, element for element);
/// - all of it stays allocated, and is not used by other work, until the
///   launch on `dev`'s default stream has completed.
pub unsafe fn execute(
    dev: &crate::runtime::Device,
    module: &crate::runtime::Module,
    plan: &BwdDataPlan,
    bufs: BwdDataBuffers<'_>,
) -> Result<(), OpError> {
    let k = module.kernel(plan.main.instance.name)?;
    launch(dev, &dev.default_stream(), &k, plan, bufs)
}

/// Queues `plan`'s launch of `kernel` on `stream`.
pub(crate) fn launch(
    dev: &crate::runtime::Device,
    stream: &crate::runtime::Stream,
    kernel: &crate::runtime::Kernel,
    plan: &BwdDataPlan,
    bufs: BwdDataBuffers<'_>,
) -> Result<(), OpError> {
    super::check_d_count(plan.ds.len(), bufs.ds.len())?;
    for (i, (&d, desc)) in bufs.ds.iter().zip(&plan.ds).enumerate() {
        // In place is safe only element for element: each thread reads the D
        // value of the element it then writes.
        if d == bufs.dx && *desc != plan.dx {
            return Err(OpError::Usage(format!(
                "{} aliases dx but has another layout ({:?} vs {:?}); an aliasing D must use the `output` layout",
                super::D_NAMES[i],
                desc.strides,
                plan.dx.strides
            )));
        }
    }
    dev.launch_on(stream, kernel, plan.main.grid, plan.main.block, plan.main.lds_bytes, &plan.args(&bufs))?;
    Ok(())
}

/// Whether `cfg` can run `p` (packed tensors of `cfg.layout`) on `arch`
/// (`gfx90a`, `gfx942`, `gfx1100`, `sm_80`, `sm_90`): planning without a
/// device, so a framework can decide to fall back before allocating anything.
pub fn supports(p: &ConvProblem, cfg: &BwdDataConfig, arch: &str) -> Result<(), Unsupported> {
    let family = Unsupported::family_of(arch)?;
    plan(p, cfg, family, 1).map(|_| ()).map_err(Unsupported::from_plan)
}

pub use super::prepared::{BwdDataOp, BwdDataTensors};
