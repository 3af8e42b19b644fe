//! Grouped convolution backward-weight: planning (instance, split-K, argument
//! block) and execution on any [`crate::runtime`] device.
//!
//! GEMM per group: `M = K`, `N = C * Z*Y*X`, reduction `N_batch * Do*Ho*Wo`.

use convgrad_types::epilogue::{EpiChain, MAX_D};
use super::{fold, select, unfold};
use convgrad_types::instance::{Family, Op};
use convgrad_types::contract::bwd_weight_direct::{SEG, TAP_BLOCK};
use convgrad_types::params::{ConvArgs, FastDiv, GemmPart, flags, vec_mode};
use convgrad_types::{ConvLayout, ConvProblem, DescError, EpilogueOp, TensorDesc, TensorRole, TypeConfig};

pub use super::{LaunchSpec, OpError, Unsupported};

/// How to split the reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitK {
    /// Chosen from the problem and the device's compute units (CK's rule).
    Auto,
    /// This many k-batches, 1 to [`MAX_SPLIT_K`] (0 or more is an error
    /// naming `split_k`); fewer run where the reduction has fewer K tiles
    /// or the kernel family caps its split (`BwdWeightPlan::k_batch` says
    /// how many run).
    Fixed(u32),
}

/// The largest fixed split-K: k-batches run along grid z, at most 65535.
pub const MAX_SPLIT_K: u32 = 65535;

/// Refuses a fixed split of 0 or past [`MAX_SPLIT_K`], naming `split_k`.
pub fn check_split(split: SplitK) -> Result<(), DescError> {
    match split {
        SplitK::Fixed(0) => Err(DescError::TooSmall { field: "split_k", value: 0, min: 1 }),
        SplitK::Fixed(n) if n > MAX_SPLIT_K => {
            Err(DescError::TooLarge { field: "split_k", value: n as u64, max: MAX_SPLIT_K as u64 })
        }
        _ => Ok(()),
    }
}

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
pub fn plan_with(
    p: &ConvProblem,
    cfg: &BwdWeightConfig,
    family: Family,
    compute_units: u32,
    x: TensorDesc,
    dw: TensorDesc,
    dy: TensorDesc,
) -> Result<BwdWeightPlan, OpError> {
    p.validate()?;
    let chain = match cfg.epilogue {
        EpilogueOp::PassThrough | EpilogueOp::Scale(_) | EpilogueOp::Bilinear(..) => {
            EpiChain::from_ops(&[cfg.epilogue]).expect("one step fits")
        }
        _ => {
            return Err(OpError::Desc(DescError::Unsupported {
                field: "epilogue",
                allowed: "pass-through, scale=S or bilinear=A,B on the weight gradient",
            }));
        }
    };
    let ds = vec![dw; chain.num_d as usize];
    super::validate_descs(p, &[
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
            folded => return folded.map(|plan| BwdWeightPlan { problem: *p, x, dw, ds, ..plan }),
        }
    }
    let given = plan_on(p, cfg, family, compute_units, chain, x, dw, dy)?;
    // Channels that fill no vector: where the GEMM would gather them one by
    // one, the kernels run the problem unfolded (the direct kernels' tiny
    // GEMMs stay; as for the fold, a forced instance that does not fit the
    // unfolded problem runs the problem as given).
    let gathers = given.main.instance.op == Op::BwdWeight;
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
    Ok(given)
}

/// The plan of [`plan_with`] for the problem the kernels run (`p` folded or not).
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
        forced: cfg.instance.as_deref(),
        deterministic: cfg.deterministic,
    })?;
    // The tuning table's measured split stands in for the automatic one; a fixed split asked for wins.
    let split_k = match (cfg.split_k, choice.split) {
        (SplitK::Auto, Some(n)) => SplitK::Fixed(n),
        (s, _) => s,
    };
    let inst = choice.instance;
    let halo = match choice.fit {
        select::Fit::TapShift(h) => Some(h),
        _ => None,
    };
    let (gm, gn) = (p.k as u64, p.c as u64 * p.filter_taps());
    let gk = p.n as u64 * p.output_pixels();
    for (field, v) in [("GEMM M (K)", gm), ("GEMM N (C*filter)", gn), ("GEMM K (N*output pixels)", gk)] {
        if v > u32::MAX as u64 / 2 {
            return Err(OpError::Desc(DescError::TooLarge { field, value: v, max: u32::MAX as u64 / 2 }));
        }
    }
    let t = inst.tile;
    let direct = inst.op == Op::BwdWeightDirect;
    let tiles_m = gm.div_ceil(t.bm as u64) as u32;
    let tiles_n = gn.div_ceil(t.bn as u64) as u32;
    // The direct kernel splits the reduction in steps of 64 output pixels.
    let step = if direct { 64 } else { t.bk };
    let k_tiles = gk.div_ceil(step as u64).max(1) as u32;
    let weights = p.g as u64 * gm * gn;
    // im2col(X) in element copies (channels not whole 16-byte vectors, e.g.
    // the RGB stem): the copies cannot run ahead of the multiplies, so more
    // resident workgroups hide their latency.
    let lanes = 16 / cfg.types.act().bytes() as u64;
    let x_vectors = x.strides[2] == 1 && dw.strides[2] == 1 && (p.c as u64).is_multiple_of(lanes);
    let want = match split_k {
        // Direct: about 2048 threads per compute unit in all.
        SplitK::Auto if direct => (2048 * compute_units as u64).div_ceil(weights) as u32,
        // CK: k_batch = occupancy * CUs / (tiles * G), clamped to the K tiles and 128.
        // Splitting costs an atomic per element and split, and the tile's
        // last workgroup sums it: once the tiles alone fill three quarters of
        // one round of two blocks per CU, one split is faster. (The timings
        // behind these rules: docs/tuning-log.md, "kernel choice".)
        SplitK::Auto => {
            let blocks = (tiles_m as u64 * tiles_n as u64 * p.g as u64).max(1);
            // A round: the workgroups a CU holds at once (at least the launch
            // bound's `min_blocks` and 8 warps; more where measured).
            let per_cu = inst.resident_per_cu(family) as u64;
            let round = per_cu * compute_units as u64;
            if blocks > round && x_vectors {
                // Past one round, a last round that is mostly empty idles
                // the GPU for a whole tile's time: split so the rounds fill
                // (fewest rounds per split, up to 4 splits of at least
                // 4096 reductions each). U-Net's 1024->512 at 32x32: 288
                // tiles of 128x128 over 264 slots, 1, 2, 3, 4 splits 0.557,
                // 0.500, 0.478, 0.468 ms (H200); its 512->1024 at 16x16, as
                // many tiles with a 4096-long reduction: 0.153 ms unsplit,
                // 0.174 in two.
                let rounds = |kb: u64| (blocks * kb).div_ceil(round) as f64 / kb as f64;
                (1..=4u64).filter(|&kb| gk / kb >= 4096).fold(1, |best, kb| if rounds(kb) < rounds(best) { kb } else { best }) as u32
            } else if 4 * blocks >= 3 * round {
                1
            } else if !x_vectors {
                (2 * round / blocks) as u32
            } else {
                // One round of two blocks per CU: more splits cost more
                // partials than they hide. Where that leaves one split, two
                // rounds pay while each split keeps 64 K-steps of 32.
                let k = (round / blocks) as u32;
                let two = (2 * round / blocks).max(1);
                if k < 2 && gk / two >= 2048 { two as u32 } else { k }
            }
        }
        SplitK::Fixed(n) => n,
    };
    // Element copies: up to two rounds of resident workgroups (a 3-channel
    // stem's 3 column tiles fill 0.7 of one round at 128).
    let cap = if direct { 4096 } else if x_vectors { 128 } else { 256 };
    // The GEMM tiles' grid z is G * k_batch, at most 65535: the automatic
    // split stays under it (a fixed one past it is refused below).
    let z_cap = if direct || !matches!(split_k, SplitK::Auto) { u32::MAX } else { (GRID_Z / p.g.max(1) as u64).max(1) as u32 };
    let k_batch0 = want.clamp(1, k_tiles.min(cap).min(z_cap));
    let k_per_batch = k_tiles.div_ceil(k_batch0) * step;
    let k_batch = (gk as u32).div_ceil(k_per_batch).max(1);
    let partial = p.g as u64 * gm * gn;
    if k_batch > 1 && partial * k_batch as u64 > u32::MAX as u64 {
        return Err(OpError::Desc(DescError::TooLarge {
            field: "split-K workspace (k_batch * G * K * C * filter)",
            value: partial * k_batch as u64,
            max: u32::MAX as u64,
        }));
    }
    // The direct kernel's channel-vector path: columns (channel vector, k, tap
    // block) times streams of output pixels per workgroup, summed in LDS.
    let fast = direct
        .then(|| super::direct_vec_mode(p, cfg.types.act().bytes(), &x, &dy))
        .flatten()
        .map(|(mode, vw)| {
            let vectors = (p.g * p.c / vw) as u64;
            let tap_blocks = p.filter_taps().div_ceil(TAP_BLOCK as u64);
            let cols = vectors * p.k as u64 * tap_blocks;
            let (block_cols, streams, col_blocks) = column_blocks(cols);
            // Streams are runs of reduction units: row segments of up to
            // SEG pixels on the row path (a tap block is then one whole
            // filter row, `TAP_BLOCK` = 3), else output pixels.
            let rows = p.filter[2] == 3 && p.strides[2] == 1 && p.dilations[2] == 1;
            let (segs, units) = if rows {
                let o = p.output();
                let segs = (o[2] as u64).div_ceil(SEG as u64);
                (segs, p.n as u64 * o[0] as u64 * segs * o[1] as u64)
            } else {
                (1, gk)
            };
            // One round of `min_blocks` workgroups per compute unit, with
            // streams of at least 64 output pixels: every split adds an LDS
            // sum and partials to combine. Two rounds where one would leave
            // streams of 256 pixels or more, with atomic partials (the
            // deterministic finish reads every split in turn). A fixed split
            // may go down to one unit (row segment or pixel) per stream.
            let kb = match split_k {
                SplitK::Auto => {
                    let round = inst.min_blocks() as u64 * compute_units as u64;
                    let one = round.div_ceil(col_blocks);
                    let long = gk.div_ceil(one * streams) >= 256 && !cfg.deterministic;
                    (if long { 2 * one } else { one }).min(gk.div_ceil(streams * 64))
                }
                SplitK::Fixed(n) => n as u64,
            }
            .clamp(1, 4096)
            .min(units.div_ceil(streams));
            let len = units.div_ceil(kb * streams).max(1);
            let kb = units.div_ceil(len * streams).max(1);
            let fast = FastPlan { mode, rows, vectors, tap_blocks, segs, cols, block_cols, col_blocks, len };
            (fast, kb as u32)
        })
        .filter(|&(_, kb)| kb <= 65535 && (kb == 1 || (p.g as u64 * gm * gn) * kb as u64 <= u32::MAX as u64));
    // A family that plans its own launch (`OWN_LAUNCHES`).
    let own = match OWN_LAUNCHES.iter().find(|(op, _)| *op == inst.op) {
        Some((_, launch)) => {
            let deterministic = cfg.deterministic;
            Some(launch(&OwnRequest { p, inst, x: &x, dy: &dy, split_k, deterministic, compute_units })?)
        }
        None => None,
    };
    let (k_batch, k_per_batch) = match (&own, &fast, &halo) {
        (Some(o), _, _) => (o.k_batch, 0),
        (_, Some((f, kb)), _) => (*kb, f.len as u32),
        (_, _, Some(h)) => {
            tap_shift_split(h.tiles, p.g.div_ceil(t.waves_n as usize), split_k, inst.min_blocks(), compute_units)
        }
        _ => (k_batch, k_per_batch),
    };
    let gemm = !direct && own.is_none() && fast.is_none() && halo.is_none();
    if gemm && p.g as u64 * k_batch as u64 > GRID_Z {
        let field = if k_batch == 1 { "G (grid z of the GEMM tiles)" } else { "split-K k-batches * G (grid z of the GEMM tiles)" };
        return Err(OpError::Desc(DescError::TooLarge { field, value: p.g as u64 * k_batch as u64, max: GRID_Z }));
    }
    if (halo.is_some() || own.is_some()) && k_batch > 1 && partial * k_batch as u64 > u32::MAX as u64 {
        return Err(OpError::Desc(DescError::TooLarge {
            field: "split-K workspace (k_batch * G * K * C * filter)",
            value: partial * k_batch as u64,
            max: u32::MAX as u64,
        }));
    }
    let mode = match (k_batch, cfg.deterministic) {
        (1, _) => 0,
        (_, true) => flags::SPLITK_STORE,
        (_, false) => flags::SPLITK_ATOMIC,
    };
    let mut args = ConvArgs {
        flags: mode,
        x_strides: x.strides_u32(),
        w_strides: dw.strides_u32(),
        dy_strides: dy.strides_u32(),
        gemm: GemmPart {
            m: gm as u32,
            n: gn as u32,
            k: gk as u32,
            k_batch,
            k_per_batch,
            tiles_m,
            tiles_n,
            partial_elems: partial as u32,
            div_n: FastDiv::new(gn as u32),
        },
        epi: chain,
        div_out: p.output().map(|o| FastDiv::new(o as u32)),
        div_c: FastDiv::new(p.c as u32),
        div_x: FastDiv::new(p.filter[2] as u32),
        div_y: FastDiv::new(p.filter[1] as u32),
        div_zyx: FastDiv::new(p.filter_taps() as u32),
        div_g: FastDiv::new(p.g as u32),
        ..super::problem_args(p)
    };
    for (i, d) in ds.iter().enumerate().take(MAX_D) {
        args.d_strides[i] = d.strides_u32();
    }
    if let Some((f, _)) = &fast {
        args.gemm.k_per_batch = 0;
        args.direct.vec_mode = f.mode | if f.rows { vec_mode::ROWS } else { 0 };
        args.direct.cols = f.cols as u32;
        args.direct.block_cols = f.block_cols as u32;
        args.direct.stream_len = f.len as u32;
        args.direct.div_vec = FastDiv::new(f.vectors as u32);
        args.direct.div_block_cols = FastDiv::new(f.block_cols as u32);
        args.direct.div_tap_blocks = FastDiv::new(f.tap_blocks as u32);
        args.direct.div_segs = FastDiv::new(f.segs as u32);
    }
    if let Some(h) = &halo {
        h.set(&mut args);
        args.tap_shift.tiles = h.tiles as u32;
        args.tap_shift.tiles_per_batch = k_per_batch;
        args.gemm.k_per_batch = 0;
        args.div_in[0] = FastDiv::new(p.input[0] as u32);
    }
    let own_grid_x = own.map(|o| {
        (o.set_args)(&mut args);
        o.grid_x
    });
    let grid = if let Some(gx) = own_grid_x {
        [gx, 1, k_batch]
    } else if halo.is_some() {
        [p.g.div_ceil(t.waves_n as usize) as u32, 1, k_batch]
    } else if let Some((f, kb)) = &fast {
        [f.col_blocks as u32, 1, *kb]
    } else if direct {
        [(weights as u32).div_ceil(inst.threads(family)), 1, k_batch]
    } else {
        [tiles_m * tiles_n, 1, p.g as u32 * k_batch]
    };
    let main = LaunchSpec {
        instance: inst,
        grid,
        block: inst.threads(family),
        lds_bytes: inst.lds_bytes(),
    };
    main.check_grid()?;
    let partial_elems = match mode {
        flags::SPLITK_STORE => (partial * k_batch as u64) as usize,
        flags::SPLITK_ATOMIC => partial as usize,
        _ => 0,
    };
    // One arrival counter per output tile: grid x (per group on the GEMM).
    let tiles = if direct || halo.is_some() || own_grid_x.is_some() { grid[0] as usize } else { grid[0] as usize * p.g };
    let workspace_elems = if mode == 0 { 0 } else { partial_elems + tiles };
    Ok(BwdWeightPlan {
        problem: *p,
        x,
        dw,
        dy,
        ds,
        main,
        k_batch,
        workspace_elems,
        partial_elems,
        atomic_partials: mode == flags::SPLITK_ATOMIC,
        args_template: args,
        from_table: choice.from_table,
        unfold: None,
    })
}

/// What a kernel family that plans its own launch is given.
pub(super) struct OwnRequest<'a> {
    /// The problem the kernels run (folded or not).
    pub p: &'a ConvProblem,
    /// The chosen instance.
    pub inst: &'static convgrad_types::instance::Instance,
    /// Tensors x and dy.
    pub x: &'a TensorDesc,
    pub dy: &'a TensorDesc,
    /// The split asked for (or the tuning table's).
    pub split_k: SplitK,
    /// Deterministic split-K.
    pub deterministic: bool,
    /// The device's compute units.
    pub compute_units: u32,
}

/// Largest grid y or z of a launch (CUDA and HIP alike).
const GRID_Z: u64 = 65535;

/// A family's own launch: its k-batches, workgroups along grid x (one
/// split-K arrival counter each; grid z is the k-batch) and the argument
/// parts it reads, set on the common header.
pub(super) struct OwnLaunch {
    pub k_batch: u32,
    pub grid_x: u32,
    pub set_args: Box<dyn FnOnce(&mut ConvArgs)>,
}

/// Kernel families that plan their own launch in their own module, one line each.
type Launcher = fn(&OwnRequest<'_>) -> Result<OwnLaunch, OpError>;
const OWN_LAUNCHES: &[(Op, Launcher)] = &[(Op::BwdWeightDepthwise, super::bwd_weight_depthwise::launch)];

/// `(k_batch, tiles per batch)` of the tap-shift kernel for `tiles` row
/// tiles and `sets` group sets: one round of `per_cu` workgroups per compute
/// unit (a second, partial round costs as much as a whole one), or the
/// requested split.
pub(super) fn tap_shift_split(tiles: usize, sets: usize, split: SplitK, per_cu: u32, compute_units: u32) -> (u32, u32) {
    let want = match split {
        SplitK::Auto => (per_cu as usize * compute_units.max(1) as usize / sets.max(1)).max(1),
        SplitK::Fixed(n) => n as usize,
    };
    let per = tiles.div_ceil(want.clamp(1, tiles.max(1)));
    (tiles.div_ceil(per).max(1) as u32, per as u32)
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
            None => fold::describe(&self.problem, a),
        };
        let table = if self.from_table { " ; tuning table" } else { "" };
        format!("{} ; k_batch {} ; split-K {mode}{shifts}{folded}{table}", self.main.instance.name, self.k_batch)
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
        for (i, &d) in ds.iter().enumerate().take(MAX_D) {
            a.d[i] = d;
        }
        a
    }
    /// The pre-pass's argument block: it reads `x` and writes `x'` at the workspace's start.
    pub fn unfold_args(&self, x: u64, workspace: u64) -> Option<ConvArgs> {
        self.unfold.as_ref().map(|u| ConvArgs { x, w: workspace, ..u.args_template })
    }
    /// Bytes at the workspace's start that every call overwrites (`x'`).
    pub fn scratch_bytes(&self) -> usize {
        self.unfold.as_ref().map_or(0, |u| 4 * u.ws_elems)
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
        let need = super::check_buffer;
        need("x", &plan.x, types.act(), x.bytes())?;
        need("dy", &plan.dy, types.act(), dy.bytes())?;
        need("dw", &plan.dw, types.wei(), dw.bytes())?;
        super::collect_ds(&plan.ds, types.wei(), d, ds)?;
        Ok(BwdWeightBuffers { x: x.device_addr(), dy: dy.device_addr(), dw: dw.device_addr(), ds })
    }
}

/// The direct kernel's channel-vector launch (see `bwd_weight_direct`).
struct FastPlan {
    /// [`vec_mode`] bits of the lanes (`ROWS` is added from `rows`).
    mode: u32,
    /// Streams walk row segments (a 3-wide filter at unit stride and dilation along x).
    rows: bool,
    /// Channel vectors per `k`, tap blocks per vector, row segments per output row.
    vectors: u64,
    tap_blocks: u64,
    segs: u64,
    /// Thread columns in all and per workgroup, and workgroups along the columns.
    cols: u64,
    block_cols: u64,
    col_blocks: u64,
    /// Reduction units (row segments or pixels) per stream.
    len: u64,
}

/// The direct kernel's column blocking for `cols` columns: `(columns per
/// workgroup, streams per workgroup, workgroups along the columns)`, with
/// the most of a workgroup's 256 threads busy (fewer blocks on a tie): 108
/// columns run as 3 blocks of 36 columns times 7 streams (252 threads), not
/// one of 108 times 2 (216); 384 as 3 of 128 times 2, not 256 + 128.
pub(super) fn column_blocks(cols: u64) -> (u64, u64, u64) {
    let mut best = (0, 0, 0);
    let mut best_busy = 0;
    // Up to 8 blocks more than the fewest: enough to reach 98% busy for the
    // column counts of depthwise and 4-channel groups.
    for blocks in 1..=cols.div_ceil(256) + 8 {
        let cb = cols.div_ceil(blocks);
        if cb > 256 {
            continue;
        }
        let (streams, nb) = (256 / cb, cols.div_ceil(cb));
        // Busy threads per mille of the workgroups'.
        let busy = cols * streams * 1000 / (nb * 256);
        if busy > best_busy {
            (best, best_busy) = ((cb, streams, nb), busy);
        }
    }
    best
}

/// The split-K workspace of backward-weight calls: f32 partials and one
/// `u32` arrival counter per output tile after them.
///
/// The kernels leave what they use as they found it (the last workgroup of a
/// tile zeroes the atomic sums it read and resets its counter), so the
/// workspace is zeroed when allocated and not before every call. It remembers
/// how far partials may be left behind: per-batch partials of deterministic
/// calls stay in place, and a later call whose zeros they cover zeroes the
/// workspace first; so does the call after a failed launch.
#[derive(Debug)]
pub struct SplitKWorkspace {
    pub(crate) buf: crate::runtime::DeviceBuffer<f32>,
    /// Elements `0..dirty` may be non-zero; all after them are zero.
    pub(crate) dirty: std::cell::Cell<usize>,
}

impl SplitKWorkspace {
    /// A zero-filled workspace of `elems` elements on `dev`.
    pub fn new(dev: &crate::runtime::Device, elems: usize) -> crate::runtime::Result<Self> {
        let buf = dev.alloc::<f32>(elems)?;
        buf.fill_zero()?;
        Ok(SplitKWorkspace { buf, dirty: std::cell::Cell::new(0) })
    }
    /// The workspace `plan` needs, or `None` when it splits no reduction.
    pub fn for_plan(dev: &crate::runtime::Device, plan: &BwdWeightPlan) -> crate::runtime::Result<Option<Self>> {
        (plan.workspace_elems > 0).then(|| Self::new(dev, plan.workspace_elems)).transpose()
    }
    /// Its size in elements.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.buf.len() == 0
    }
    /// Device address of element 0.
    pub fn device_addr(&self) -> u64 {
        self.buf.device_addr()
    }
}

/// Runs a plan on the device's own stream: one launch; with split-K, the
/// workspace is zeroed first only where a previous call left partials that
/// this one needs as zeros ([`SplitKWorkspace`]). `workspace` must hold
/// `plan.workspace_elems` elements (it may be `None` when that is 0).
/// [`BwdWeightOp`] is the framework-facing form (resolved kernel, caller's
/// stream and workspace, checked buffers): prefer it.
///
/// # Safety
///
/// The kernels read and write `bufs` by address, unchecked. The caller
/// guarantees that:
/// - `plan` is one [`plan`] or [`plan_with`] returned, unmodified;
/// - `bufs.x` and `bufs.dy` point to device memory of `dev` holding at least
///   `plan.x.span()` / `plan.dy.span()` elements of the activation type the
///   plan was made for, `bufs.dw` at least `plan.dw.span()` elements of the
///   weight type, and each of `bufs.ds` (as many as the epilogue reads) at
///   least the span of its `plan.ds` descriptor ([`BwdWeightBuffers::checked`]
///   checks these lengths);
/// - the bytes `dw` spans overlap none of the other tensors' nor the
///   workspace's;
/// - all of it stays allocated, and is not used by other work, until the
///   launches on `dev`'s default stream have completed.
pub unsafe fn execute(
    dev: &crate::runtime::Device,
    module: &crate::runtime::Module,
    plan: &BwdWeightPlan,
    bufs: BwdWeightBuffers<'_>,
    workspace: Option<&SplitKWorkspace>,
) -> Result<(), OpError> {
    let k = module.kernel(plan.main.instance.name)?;
    let pre = plan.unfold.as_ref().map(|u| module.kernel(u.launch.instance.name)).transpose()?;
    let ws = workspace.map_or(super::Workspace::None, super::Workspace::Tracked);
    super::prepared::launch_bwd_weight(dev, &dev.default_stream(), &k, pre.as_ref(), plan, bufs, ws)
}

/// Whether `cfg` can run `p` (packed tensors of `cfg.layout`) on `arch`
/// (`gfx90a`, `gfx942`, `gfx1100`, `sm_80`, `sm_90`): planning without a
/// device, so a framework can decide to fall back before allocating anything.
pub fn supports(p: &ConvProblem, cfg: &BwdWeightConfig, arch: &str) -> Result<(), Unsupported> {
    let family = Unsupported::family_of(arch)?;
    plan(p, cfg, family, 1).map(|_| ()).map_err(Unsupported::from_plan)
}

pub use super::prepared::{BwdWeightOp, BwdWeightTensors};
