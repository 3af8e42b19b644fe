//! `cargo xtask bench --op bwd-weight|bwd-data`: times our kernels and
//! PyTorch/cuDNN (`benches/torch_conv_bwd.py`, run with `python3`) on the same
//! device in the same run, and prints a table with the ratio per shape and the
//! geometric means of the dense and the grouped/depthwise shapes.
//!
//! Suite (both operations): the shapes of the project's performance anchors
//! plus CK's ResNet-50 layers, in f16 and bf16, NHWGC layout (PyTorch
//! channels_last). bwd-data adds a fused-epilogue pair, CK example 38 without
//! and with add-relu on a G_C bias, and reports the fused version's overhead
//! (outside the geometric means; its peer is PyTorch's unfused
//! backward-data + bias + ReLU). On the emulator (`--backend emu`) it reports
//! emulated throughput instead (small shapes, no peer).
//!
//! A shape that fails is reported and recorded (its row has an `error`), the
//! others still run, and the exit status is non-zero. `--json FILE` is
//! rewritten whole after every row (`"complete": false` until the end), so
//! a run stopped part way keeps what it measured; `--plot FILE.svg` charts
//! the rows (see [`crate::plot`]). A bar on stderr shows the progress when
//! stderr is a terminal.

use crate::verify::{CK_EXAMPLE_38, EMU_EX38, parse_problem};
use anyhow::{Context, Result, bail};
use clap::Parser;
use convgrad::check::{Init, fill_random, to_bytes};
use convgrad::ops::OpError;
use convgrad::ops::bwd_data::{self as data_op, BwdDataBuffers, BwdDataConfig, BwdDataPlan, DLayout};
use convgrad::ops::bwd_weight::{self as weight_op, BwdWeightBuffers, BwdWeightConfig, BwdWeightPlan, SplitK};
use convgrad::runtime::{Backend, BackendKind, Device, DeviceBuffer, Module};
use convgrad_types::{ConvLayout, ConvProblem, DType, EpilogueOp, TypeConfig};

#[derive(Parser, Debug)]
#[command(name = "cargo xtask bench", about = "Benchmark against PyTorch/cuDNN")]
struct BenchArgs {
    #[command(flatten)]
    common: ShapeArgs,
    /// Skip the PyTorch peer.
    #[arg(long)]
    no_peer: bool,
    /// Write the table as JSON here too, rewritten after every shape (failed ones with their error).
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Write an SVG chart of the ratios per layer and per network here (see `cargo xtask plot`).
    #[arg(long)]
    plot: Option<std::path::PathBuf>,
    /// Force this kernel instance (tuning); shapes it cannot run are skipped.
    #[arg(long)]
    instance: Option<String>,
    /// bwd-weight: force this many split-K batches, 1 to 65535 (tuning; default: chosen).
    #[arg(long)]
    split_k: Option<String>,
    /// Instead of the kernels: the host time of CALLS cached-plan calls per
    /// layer (`execute_on`, with a plan-cache lookup, with memory wrapping).
    #[arg(long, value_name = "CALLS")]
    host_cost: Option<usize>,
}

/// The options `bench` and `tune` share: the device, the operation, the shapes.
#[derive(clap::Args, Debug)]
pub(crate) struct ShapeArgs {
    /// Operation: bwd-weight or bwd-data.
    #[arg(long, default_value = "bwd-weight")]
    op: String,
    /// auto, hip, cuda, emu, isa.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Emulated GPU for --backend emu (isa: gfx90a, gfx942, gfx1100).
    #[arg(long)]
    emu_arch: Option<String>,
    /// Comma-separated dtypes.
    #[arg(long, default_value = "f16,bf16")]
    dtypes: String,
    /// Timed runs per shape (median; one on the emulator).
    #[arg(long, default_value_t = 50)]
    iters: usize,
    /// Only shapes whose name contains this (or one of several, `a|b`).
    #[arg(long)]
    filter: Option<String>,
    /// Which shapes: `bench` (the anchors and CK's ResNet-50 layers),
    /// `networks` (layers of real networks, with per-network geomeans) or
    /// `channels` (layers with channel counts that are no multiple of 8,
    /// each followed by its twin with them rounded up to one).
    #[arg(long, default_value = "bench")]
    suite: String,
}

/// What [`ShapeArgs`] select, with the device opened.
pub(crate) struct Session {
    pub op: Op,
    pub types: Vec<TypeConfig>,
    pub dev: Device,
    pub module: Module,
    pub emu: bool,
    /// The suite's shapes (before `--filter`).
    pub shapes: Vec<Shape>,
    /// Timed runs per shape.
    pub iters: usize,
}

impl ShapeArgs {
    /// Opens the device, prints it, and lists the suite.
    pub(crate) fn open(&self) -> Result<Session> {
        let op = Op::parse(&self.op)?;
        let types: Vec<TypeConfig> = self
            .dtypes
            .split(',')
            .map(|s| {
                TypeConfig::parse(s)
                    .with_context(|| format!("--dtypes: '{s}' is not f32, f16, bf16, bf16-f32, f32-tf32"))
            })
            .collect::<Result<_>>()?;
        let dev = Device::open(Backend::parse(&self.backend, self.emu_arch.as_deref())?, 0)?;
        let module = dev.load_module()?;
        let emu = matches!(dev.backend_kind(), BackendKind::Emulator | BackendKind::Isa);
        println!(
            "op:     {} ; device: {:?} {} ({}) ; {}",
            op.name(),
            dev.backend_kind(),
            dev.name(),
            dev.arch(),
            dev.selection_note()
        );
        let shapes = shapes(op, emu, &self.suite)?;
        let iters = if emu { 1 } else { self.iters };
        Ok(Session { op, types, dev, module, emu, shapes, iters })
    }
    /// The (shape, dtype) pairs `--filter` keeps, dtype by dtype; an error
    /// when a part of the filter matches no shape of the suite.
    pub(crate) fn selected<'a>(&self, s: &'a Session) -> Result<Vec<(&'a Shape, TypeConfig)>> {
        crate::options::check_filter(self.filter.as_deref(), &self.suite, s.shapes.iter().map(|sh| sh.name.as_str()))?;
        Ok(s.types
            .iter()
            .flat_map(|&t| s.shapes.iter().map(move |sh| (sh, t)))
            .filter(|(sh, _)| {
                self.filter
                    .as_ref()
                    .is_none_or(|f| f.split('|').any(|f| sh.name.contains(f)))
            })
            .collect())
    }

    /// The operation's kernel kinds, for checking `--instance`.
    pub(crate) fn instance_kinds(&self) -> Result<&'static [convgrad_types::instance::Op]> {
        Ok(match Op::parse(&self.op)? {
            Op::BwdWeight => convgrad_types::instance::Op::BWD_WEIGHT,
            Op::BwdData => convgrad_types::instance::Op::BWD_DATA,
        })
    }
}

/// The operations the bench times.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Op {
    BwdWeight,
    BwdData,
}

impl Op {
    fn parse(s: &str) -> Result<Op> {
        Ok(match s {
            "bwd-weight" => Op::BwdWeight,
            "bwd-data" => Op::BwdData,
            o => bail!(
                "--op {o}: allowed bwd-weight, bwd-data (bwd-data includes the fused-epilogue pair)"
            ),
        })
    }
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::BwdWeight => "bwd-weight",
            Op::BwdData => "bwd-data",
        }
    }
}

/// Shape kinds, for the two geometric means.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Dense,
    Grouped,
    /// The fused-epilogue pair: reported as an overhead, outside the geometric means.
    Epilogue,
}

pub(crate) struct Shape {
    pub name: String,
    kind: Kind,
    pub p: ConvProblem,
    /// Fused add-relu on a G_C bias (bwd-data only).
    pub fused: bool,
    /// The network of a `--suite networks` layer.
    net: Option<&'static str>,
}

impl Shape {
    fn new(name: impl Into<String>, kind: Kind, p: ConvProblem) -> Shape {
        Shape {
            name: name.into(),
            kind,
            p,
            fused: false,
            net: None,
        }
    }
}

/// A square 2-D shape: name, kind, `(N, G, C, K)`, filter `f x f`, input
/// `hw x hw`, stride `s`, pad `pad`.
type Square = (&'static str, Kind, (usize, usize, usize, usize), usize, usize, usize, usize);

/// A square 2-D problem: `(N, G, C, K)`, filter `f x f`, input `hw x hw`, stride `s`, pad `pad`.
fn p2(
    (n, g, c, k): (usize, usize, usize, usize),
    f: usize,
    hw: usize,
    s: usize,
    pad: usize,
) -> ConvProblem {
    ConvProblem::from_ck_args(&[2, g, n, k, c, f, f, hw, hw, s, s, 1, 1, pad, pad, pad, pad])
        .expect("suite shape")
}

/// The shapes of a table of [`Square`]s, in its order.
fn squares(rows: &[Square]) -> Vec<Shape> {
    rows.iter()
        .map(|&(name, kind, nk, f, hw, s, pad)| Shape::new(name, kind, p2(nk, f, hw, s, pad)))
        .collect()
}

/// The shared suite: anchors plus CK's ResNet-50 layers.
fn suite() -> Vec<Shape> {
    use Kind::*;
    let mut v = squares(&[
        ("seed17 128x128->256 3x3 71 s2", Dense, (128, 1, 128, 256), 3, 71, 2, 1),
        ("128x64->64 3x3 56", Dense, (128, 1, 64, 64), 3, 56, 1, 1),
        ("128x256->256 3x3 14", Dense, (128, 1, 256, 256), 3, 14, 1, 1),
        ("128x512->512 3x3 7", Dense, (128, 1, 512, 512), 3, 7, 1, 1),
        ("128x256->64 1x1 56", Dense, (128, 1, 256, 64), 1, 56, 1, 0),
        ("resnext 64 g32 4->4 3x3 56", Grouped, (64, 32, 4, 4), 3, 56, 1, 1),
        ("resnext 64 g32 16->16 3x3 14", Grouped, (64, 32, 16, 16), 3, 14, 1, 1),
        ("depthwise 64 g144 3x3 56", Grouped, (64, 144, 1, 1), 3, 56, 1, 1),
        ("depthwise 64 g384 3x3 14", Grouped, (64, 384, 1, 1), 3, 14, 1, 1),
    ]);
    v.push(Shape::new(
        "3d 4x64->64 3x3x3 16x56x56",
        Dense,
        ConvProblem::from_ck_args(&[
            3, 1, 4, 64, 64, 3, 3, 3, 16, 56, 56, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        ])
        .expect("suite shape"),
    ));
    v.push(Shape::new(
        "1d 32x256->256 3 1024",
        Dense,
        ConvProblem::from_ck_args(&[1, 1, 32, 256, 256, 3, 1024, 1, 1, 1, 1])
            .expect("suite shape"),
    ));
    // CK's ResNet-50 layers (K, C, filter, Hi=Wi, stride, pad), N = 256.
    let r50: [(usize, usize, usize, usize, usize, usize); 20] = [
        (256, 1024, 1, 14, 1, 0),
        (512, 1024, 1, 14, 1, 0),
        (512, 128, 1, 28, 1, 0),
        (512, 2048, 1, 7, 1, 0),
        (1024, 256, 1, 14, 1, 0),
        (128, 256, 1, 56, 1, 0),
        (64, 256, 1, 56, 1, 0),
        (128, 512, 1, 28, 1, 0),
        (256, 512, 1, 28, 1, 0),
        (2048, 512, 1, 7, 1, 0),
        (256, 64, 1, 56, 1, 0),
        (64, 64, 1, 56, 1, 0),
        (128, 128, 3, 28, 1, 1),
        (128, 128, 3, 56, 2, 1),
        (256, 256, 3, 14, 1, 1),
        (256, 256, 3, 28, 2, 1),
        (512, 512, 3, 14, 2, 1),
        (512, 512, 3, 7, 1, 1),
        (64, 64, 3, 56, 1, 1),
        (64, 3, 7, 224, 2, 3),
    ];
    for (k, c, f, hw, s, pad) in r50 {
        v.push(Shape::new(
            format!("r50 256x{c}->{k} {f}x{f} {hw} s{s}"),
            Dense,
            p2((256, 1, c, k), f, hw, s, pad),
        ));
    }
    v
}

fn emu_suite() -> Vec<Shape> {
    squares(&[
        ("emu 8x64->64 3x3 14", Kind::Dense, (8, 1, 64, 64), 3, 14, 1, 1),
        ("emu 4 g8 16->16 3x3 14", Kind::Grouped, (4, 8, 16, 16), 3, 14, 1, 1),
        ("emu depthwise 4 g64 3x3 14", Kind::Grouped, (4, 64, 1, 1), 3, 14, 1, 1),
    ])
}

/// The fused-epilogue pair of `problem` (CK example 38's kind): plain, then add-relu + G_C bias.
fn epilogue_pair(name: &str, problem: &str) -> Result<[Shape; 2]> {
    let p = parse_problem(problem)?;
    Ok([
        Shape::new(name, Kind::Epilogue, p),
        Shape {
            name: format!("{name} +bias+relu"),
            kind: Kind::Epilogue,
            p,
            fused: true,
            net: None,
        },
    ])
}

/// The layers of real networks (`--suite networks`).
fn network_suite() -> Vec<Shape> {
    layer_shapes(crate::networks::layers())
}

/// Network layers as bench shapes, named `net layer`.
fn layer_shapes(layers: Vec<crate::networks::Layer>) -> Vec<Shape> {
    layers
        .into_iter()
        .map(|l| Shape {
            name: format!("{} {}", l.net, l.name),
            kind: if l.p.g > 1 { Kind::Grouped } else { Kind::Dense },
            p: l.p,
            fused: false,
            net: Some(l.net),
        })
        .collect()
}

/// What the real AMD code object of the last launch executed on the isa
/// backend (its times mean nothing): wave-instructions by class, matrix-unit
/// busy cycles against all issued instructions, LDS bank conflicts, bytes.
fn isa_note(c: &convgrad::runtime::IsaCounters) -> String {
    let class = |k: &str| c.by_class.get(k).copied().unwrap_or(0);
    let matrix = class("mfma") + class("wmma");
    format!(
        " (isa: {} wave-instr: valu {} salu {} matrix {} lds {} vmem {}; matrix busy {} cycles; LDS conflicts {} cycles; global {} KB read, {} KB written)",
        c.instructions(),
        class("valu"),
        class("salu"),
        matrix,
        class("lds"),
        class("vmem_load") + class("vmem_store") + class("vmem_atomic"),
        c.matrix_cycles,
        c.lds_bank_conflicts,
        c.global_bytes_read / 1024,
        c.global_bytes_written / 1024,
    )
}

/// The shapes of `op` on a GPU or on the emulator.
fn shapes(op: Op, emu: bool, suite_name: &str) -> Result<Vec<Shape>> {
    match suite_name {
        "bench" => {}
        "networks" if emu => bail!("--suite networks: full-size layers, meant for a GPU (the emulator runs `bench`'s small shapes)"),
        "networks" => return Ok(network_suite()),
        "channels" if emu => bail!("--suite channels: full-size layers, meant for a GPU"),
        "channels" => return Ok(layer_shapes(crate::networks::odd_channel_pairs())),
        other => bail!("--suite {other}: allowed bench, networks, channels"),
    }
    let mut v = if emu { emu_suite() } else { suite() };
    if op == Op::BwdData {
        v.extend(if emu {
            epilogue_pair("emu ck38 g4 2x32->32 3x3 10", EMU_EX38)?
        } else {
            epilogue_pair("ck38 g32 4x192->192 3x3 28", CK_EXAMPLE_38)?
        });
    }
    Ok(v)
}

/// A device buffer of `elems` random values of type `t`.
fn random_buffer(dev: &Device, seed: u64, t: DType, elems: usize) -> Result<DeviceBuffer<u8>> {
    Ok(dev.upload(&to_bytes(t, &fill_random(seed, Init::Float, t, elems)))?)
}

/// The environment variable that times our calls on an idle GPU (the old
/// way, host work included), like the peer's `CONVGRAD_PEER_IDLE`.
const IDLE_ENV: &str = "CONVGRAD_BENCH_IDLE";

/// Bytes of the fill queued ahead of each timed call on a GPU: 256 MiB take
/// about 0.1 ms at 3 TB/s, longer than the host work of one call (plan
/// lookup, tensor-map encoding, argument block, launches), so the start
/// event fires when the fill ends and the interval holds GPU time only.
const BUSY_BYTES: usize = 256 << 20;

/// Work that keeps a GPU busy while a timed call is queued, so that both
/// sides of `bench` are timed the same way: the PyTorch peer queues a sleep
/// kernel ahead of its start event (`benches/torch_conv_bwd.py`). Without it
/// our interval also held our host work per call (measured apart by the
/// host-cost rows), which on layers of 10-30 us was up to half of it.
struct BusyAhead(Option<DeviceBuffer<u8>>);

impl BusyAhead {
    fn new(dev: &Device) -> Result<BusyAhead> {
        let gpu = matches!(dev.backend_kind(), BackendKind::Cuda | BackendKind::Hip);
        let idle = std::env::var(IDLE_ENV).is_ok_and(|v| v == "1");
        Ok(BusyAhead(if gpu && !idle { Some(dev.alloc::<u8>(BUSY_BYTES)?) } else { None }))
    }
    /// Queues the fill (nothing on the emulators or with [`IDLE_ENV`]).
    fn queue(&self) -> Result<()> {
        if let Some(b) = &self.0 {
            b.fill_bytes(0)?;
        }
        Ok(())
    }
}

/// The environment variable that times `n` calls queued back to back per
/// interval (the interval's time / `n`; default 1), on both sides: later
/// calls find the operands in L2 and their launches overlap the calls before.
const BATCH_ENV: &str = "CONVGRAD_BENCH_BATCH";

/// Calls per timed interval ([`BATCH_ENV`]).
fn batch_calls() -> Result<usize> {
    match std::env::var(BATCH_ENV) {
        Err(_) => Ok(1),
        Ok(v) => match v.parse::<usize>() {
            Ok(n) if (1..=1000).contains(&n) => Ok(n),
            _ => bail!("{BATCH_ENV}={v}: allowed a whole number of calls from 1 to 1000"),
        },
    }
}

/// Median of `iters` timed calls of `go` (ms), after up to 3 warm-up calls;
/// on a GPU each call queued behind [`BusyAhead`]'s fill (GPU time only).
fn median_ms(dev: &Device, iters: usize, go: impl Fn() -> Result<(), OpError>) -> Result<f64> {
    for _ in 0..3.min(iters) {
        go()?;
    }
    let busy = BusyAhead::new(dev)?;
    let batch = batch_calls()?;
    dev.synchronize()?;
    let mut ts = Vec::with_capacity(iters);
    for _ in 0..iters {
        busy.queue()?;
        let mut planned = None;
        let ((), ms) = dev.time(|| {
            for _ in 0..batch {
                match go() {
                    Err(OpError::Runtime(r)) => return Err(r),
                    Err(other) => {
                        planned = Some(other);
                        return Ok(());
                    }
                    Ok(()) => {}
                }
            }
            Ok(())
        })?;
        if let Some(e) = planned {
            return Err(e.into());
        }
        ts.push(ms as f64 / batch as f64);
    }
    ts.sort_by(f64::total_cmp);
    Ok(ts[ts.len() / 2])
}

/// The configuration a shape runs with: NHWGC, types `t`, `instance` forced if given.
pub(crate) fn weight_config(t: TypeConfig, instance: Option<&str>, split_k: SplitK) -> BwdWeightConfig {
    BwdWeightConfig {
        layout: ConvLayout::NhwgcGkyxcNhwgk,
        types: t,
        split_k,
        instance: instance.map(Into::into),
        ..Default::default()
    }
}

/// As [`weight_config`], for backward-data (the fused shape adds add-relu on a G_C bias).
pub(crate) fn data_config(s: &Shape, t: TypeConfig, instance: Option<&str>) -> BwdDataConfig {
    BwdDataConfig {
        layout: ConvLayout::NhwgcGkyxcNhwgk,
        types: t,
        epilogue: if s.fused {
            vec![EpilogueOp::AddRelu]
        } else {
            vec![]
        },
        d_layouts: if s.fused {
            vec![DLayout::PerChannel]
        } else {
            vec![]
        },
        instance: instance.map(Into::into),
        strip_rows: None,
    }
}

/// Random inputs and the output buffer of one shape, shared by every plan
/// timed on it (a plan keeps the caller's descriptors, whichever kernel runs).
pub(crate) struct Inputs {
    /// x (bwd-weight) or dy (bwd-data).
    a: DeviceBuffer<u8>,
    /// dy (bwd-weight) or w (bwd-data).
    b: DeviceBuffer<u8>,
    /// dw or dx.
    out: DeviceBuffer<u8>,
    /// The epilogue's D tensors (bwd-data).
    ds: Vec<DeviceBuffer<u8>>,
}

impl Inputs {
    /// Fresh random x and dy of types `t` for a backward-weight plan.
    pub(crate) fn weight(dev: &Device, plan: &BwdWeightPlan, t: TypeConfig) -> Result<Inputs> {
        Ok(Inputs {
            a: random_buffer(dev, 1, t.act(), plan.x.span() as usize)?,
            b: random_buffer(dev, 2, t.act(), plan.dy.span() as usize)?,
            out: dev.alloc::<u8>(plan.dw.span() as usize * t.wei().bytes())?,
            ds: vec![],
        })
    }

    /// Fresh random dy, w and D tensors of types `t` for a backward-data plan.
    pub(crate) fn data(dev: &Device, plan: &BwdDataPlan, t: TypeConfig) -> Result<Inputs> {
        let (act, wei) = (t.act(), t.wei());
        let ds = plan.ds.iter().enumerate().map(|(i, d)| random_buffer(dev, 4 + i as u64, act, d.span() as usize));
        Ok(Inputs {
            a: random_buffer(dev, 2, act, plan.dy.span() as usize)?,
            b: random_buffer(dev, 3, wei, plan.w.span() as usize)?,
            out: dev.alloc::<u8>(plan.dx.span() as usize * act.bytes())?,
            ds: ds.collect::<Result<Vec<_>>>()?,
        })
    }
}

/// Median time of a backward-weight plan (ms) with fresh random inputs of types `t`.
pub(crate) fn time_weight(dev: &Device, module: &Module, plan: &BwdWeightPlan, t: TypeConfig, iters: usize) -> Result<f64> {
    time_weight_on(dev, module, plan, &Inputs::weight(dev, plan, t)?, iters)
}

/// Median time of a backward-weight plan (ms) on `inputs`.
pub(crate) fn time_weight_on(dev: &Device, module: &Module, plan: &BwdWeightPlan, inputs: &Inputs, iters: usize) -> Result<f64> {
    let ws = weight_op::SplitKWorkspace::for_plan(dev, plan)?;
    let bufs = BwdWeightBuffers {
        x: inputs.a.device_addr(),
        dy: inputs.b.device_addr(),
        dw: inputs.out.device_addr(),
        ds: &[],
    };
    // SAFETY: `inputs` holds buffers of `dev` allocated for `plan`'s spans, apart, alive past the timing.
    median_ms(dev, iters, || unsafe { weight_op::execute(dev, module, plan, bufs, ws.as_ref()) })
}

/// Median time of a backward-data plan (ms) with fresh random inputs of types `t`.
pub(crate) fn time_data(dev: &Device, module: &Module, plan: &BwdDataPlan, t: TypeConfig, iters: usize) -> Result<f64> {
    time_data_on(dev, module, plan, &Inputs::data(dev, plan, t)?, iters)
}

/// Median time of a backward-data plan (ms) on `inputs`.
pub(crate) fn time_data_on(dev: &Device, module: &Module, plan: &BwdDataPlan, inputs: &Inputs, iters: usize) -> Result<f64> {
    let d_addrs: Vec<u64> = inputs.ds.iter().map(|b| b.device_addr()).collect();
    // The channel-packed copies' workspace (timed with the kernel: the copies run every call).
    let ws = match plan.workspace_bytes() {
        0 => None,
        n => Some(dev.alloc::<u8>(n)?),
    };
    let bufs = BwdDataBuffers {
        dy: inputs.a.device_addr(),
        w: inputs.b.device_addr(),
        dx: inputs.out.device_addr(),
        ds: &d_addrs,
        workspace: ws.as_ref().map_or(0, |b| b.device_addr()),
    };
    // SAFETY: `inputs` holds buffers of `dev` allocated for `plan`'s spans, apart, alive past the timing.
    median_ms(dev, iters, || unsafe { data_op::execute(dev, module, plan, bufs) })
}

/// Median kernel time of one shape (ms), with fresh random inputs, and the kernel's description.
#[allow(clippy::too_many_arguments)]
fn time_ours(
    dev: &Device,
    module: &Module,
    op: Op,
    s: &Shape,
    t: TypeConfig,
    iters: usize,
    instance: Option<&str>,
    split_k: Option<u32>,
) -> Result<(f64, String)> {
    let (family, cus) = (dev.family(), dev.compute_units());
    match op {
        Op::BwdWeight => {
            let split = split_k.map_or(SplitK::Auto, SplitK::Fixed);
            let plan = weight_op::plan(&s.p, &weight_config(t, instance, split), family, cus)?;
            log::debug!("plan {} {}: {}", s.name, t.name(), plan.describe());
            let ms = time_weight(dev, module, &plan, t, iters)?;
            Ok((
                ms,
                format!("{} kb={}", plan.main.instance.name, plan.k_batch),
            ))
        }
        Op::BwdData => {
            let plan = data_op::plan(&s.p, &data_config(s, t, instance), family, cus)?;
            log::debug!("plan {} {}: {}", s.name, t.name(), plan.describe());
            let ms = time_data(dev, module, &plan, t, iters)?;
            let how = match plan.slices {
                0 => "direct".to_string(),
                n => format!("slices={n}"),
            };
            Ok((ms, format!("{} {how}", plan.main.instance.name)))
        }
    }
}

/// Times the selected shapes with PyTorch: (who, ms per shape).
fn peer(
    op: Op,
    shapes: &[(&Shape, TypeConfig)],
    iters: usize,
) -> Result<(String, Vec<Option<f64>>)> {
    let list: Vec<serde_json::Value> = shapes
        .iter()
        .map(|(s, t)| {
            let sp = s.p.spatial();
            serde_json::json!({ "op": op.name(), "dtype": t.name(), "G": s.p.g, "N": s.p.n, "C": s.p.c, "K": s.p.k,
                "filter": sp.filter, "input": sp.input, "strides": sp.strides, "dilations": sp.dilations,
                "lpads": sp.lpads, "rpads": sp.rpads, "epilogue": if s.fused { "add-relu-bias" } else { "none" } })
        })
        .collect();
    let dir = std::env::temp_dir().join("convgrad-bench");
    std::fs::create_dir_all(&dir)?;
    let f = dir.join("shapes.json");
    std::fs::write(&f, serde_json::to_string(&list)?)?;
    let script = std::env::var("CONVGRAD_TORCH_BENCH").unwrap_or_else(|_| {
        let here =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/torch_conv_bwd.py");
        if here.exists() {
            here.display().to_string()
        } else {
            "benches/torch_conv_bwd.py".into()
        }
    });
    // One process times every shape; a spinner shows the time it takes (and
    // the script's lines before its last, the result, if it prints any).
    let spin = crate::progress::spinner(format!("PyTorch peer: timing {} shape(s)", shapes.len()));
    let started = std::time::Instant::now();
    let context = || format!("running the PyTorch peer ({script}); use --no-peer to skip");
    let reader = duct::cmd!("python3", &script, &f, iters.to_string()).reader().with_context(context)?;
    let (mut last, mut lines) = (String::new(), 0usize);
    for line in std::io::BufRead::lines(std::io::BufReader::new(reader)) {
        let line = line.with_context(context)?;
        if !last.is_empty() {
            lines += 1;
            spin.set_message(format!("PyTorch peer: {lines} of {} shape(s): {}", shapes.len(), last.trim()));
        }
        last = line;
    }
    spin.finish_and_clear();
    log::info!("PyTorch peer: {} shape(s) in {:.1} s", shapes.len(), started.elapsed().as_secs_f64());
    let v: serde_json::Value = serde_json::from_str(&last).with_context(|| format!("the PyTorch peer's last line: {last}"))?;
    let who = format!(
        "PyTorch {} cuDNN {} on {}",
        v["torch"], v["cudnn"], v["device"]
    );
    let ms: Vec<Option<f64>> = v["ms"]
        .as_array()
        .context("peer output")?
        .iter()
        .map(|x| x.as_f64())
        .collect();
    if ms.len() != shapes.len() {
        bail!(
            "the PyTorch peer timed {} shapes, {} asked for",
            ms.len(),
            shapes.len()
        );
    }
    Ok((who, ms))
}

/// Per-network geomeans and worst layers of a `--suite networks` run.
fn report_networks(per_net: &[(&'static str, String, &'static str, f64)]) {
    // In order of first appearance (the rows come per dtype).
    let mut nets: Vec<&str> = vec![];
    for r in per_net {
        if !nets.contains(&r.0) {
            nets.push(r.0);
        }
    }
    for net in nets {
        let rows: Vec<_> = per_net.iter().filter(|r| r.0 == net).collect();
        let g = geomean(&rows.iter().map(|r| r.3).collect::<Vec<_>>()).unwrap_or(f64::NAN);
        let worst = rows.iter().min_by(|a, b| a.3.total_cmp(&b.3)).expect("a row");
        println!("network {net:<16} geomean {g:.3}x over {} ; worst {:.3}x: {} {}", rows.len(), worst.3, worst.1, worst.2);
    }
    if let Some(w) = per_net.iter().min_by(|a, b| a.3.total_cmp(&b.3)) {
        let under = per_net.iter().filter(|r| r.3 < 0.5).count();
        println!("worst layer overall: {:.3}x {} {} ; {under} of {} under 0.5x", w.3, w.1, w.2, per_net.len());
    }
}

fn geomean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// Entry point of `cargo xtask bench`.
pub fn run(args: &[String]) -> Result<()> {
    let a = BenchArgs::parse_from(std::iter::once("bench".to_string()).chain(args.iter().cloned()));
    let split_k = a.split_k.as_deref().map(|s| crate::options::parse_split_count("--split-k", s)).transpose()?;
    if let Some(name) = &a.instance {
        crate::options::check_instance(name, a.common.instance_kinds()?, &a.common.op)?;
    }
    let session = a.common.open()?;
    if let Some(calls) = a.host_cost {
        return crate::host_cost::run(&session.dev, calls.max(1));
    }
    let sel = a.common.selected(&session)?;
    let Session { op, ref types, ref dev, ref module, emu, iters, .. } = session;
    let (who, theirs) = if emu || a.no_peer || sel.is_empty() {
        (String::from("none"), vec![None; sel.len()])
    } else {
        peer(op, &sel, iters)?
    };
    println!("peer:   {who}");
    println!(
        "{:<44} {:>5} {:>10} {:>9} {:>10} {:>9} {:>7}  kernel",
        "shape", "type", "ours ms", "TFLOPS", "peer ms", "TFLOPS", "ratio"
    );
    let mut out = JsonOut::new(a.json.clone(), op.name(), dev.name(), &who)?;
    let mut ratios: [Vec<f64>; 2] = [vec![], vec![]];
    // Per network: (layer, dtype, ratio), for `--suite networks`.
    let mut per_net: Vec<(&'static str, String, &'static str, f64)> = vec![];
    let (mut measured, mut failed) = (0usize, vec![]);
    // (dtype, fused) -> ours ms, for the overhead of the fused epilogue.
    let mut pair: Vec<(TypeConfig, bool, f64)> = vec![];
    let bar = crate::progress::bar(sel.len(), "bench");
    for ((s, t), peer_ms) in sel.iter().zip(&theirs) {
        bar.set_message(format!("{} {}", s.name, t.name()));
        let timed = time_ours(dev, module, op, s, *t, iters, a.instance.as_deref(), split_k)
            .with_context(|| format!("{} {} {}", op.name(), s.name, t.name()));
        let row = |extra: serde_json::Value| {
            let mut r = serde_json::json!({ "shape": s.name, "dtype": t.name(), "kind": format!("{:?}", s.kind), "fused": s.fused,
                "net": s.net, "peer_ms": peer_ms });
            r.as_object_mut().expect("an object").extend(extra.as_object().expect("an object").clone());
            r
        };
        let (ms, kern) = match (timed, &a.instance) {
            (Ok(r), _) => r,
            // A forced instance that cannot run a shape skips it.
            (Err(e), Some(_)) => {
                crate::progress::println(format_args!("{:<44} {:>5} skipped: {e:#}", s.name, t.name()));
                out.push(row(serde_json::json!({ "ours_ms": null, "ratio": null, "skipped": format!("{e:#}") })))?;
                bar.inc(1);
                continue;
            }
            (Err(e), None) => {
                crate::progress::println(format_args!("{:<44} {:>5} FAILED: {e:#}", s.name, t.name()));
                out.push(row(serde_json::json!({ "ours_ms": null, "ratio": null, "error": format!("{e:#}") })))?;
                failed.push(format!("{} {}", s.name, t.name()));
                bar.inc(1);
                continue;
            }
        };
        measured += 1;
        let tf = |ms: f64| s.p.flops() as f64 / ms / 1e9;
        let ratio = peer_ms.map(|p| p / ms);
        if let (Some(net), Some(r)) = (s.net, ratio) {
            per_net.push((net, s.name.clone(), t.name(), r));
        }
        match (s.kind, ratio) {
            (Kind::Dense, Some(r)) => ratios[0].push(r),
            (Kind::Grouped, Some(r)) => ratios[1].push(r),
            (Kind::Epilogue, _) => pair.push((*t, s.fused, ms)),
            _ => {}
        }
        let emu_note = if let Some(c) = dev.last_isa_counters() {
            isa_note(&c)
        } else if emu {
            dev.last_emulator_report()
                .map(|r| {
                    format!(
                        " ({:.0} MFLOP/s emulated)",
                        s.p.flops() as f64 / r.elapsed.as_secs_f64() / 1e6
                    )
                })
                .unwrap_or_default()
        } else {
            String::new()
        };
        crate::progress::println(format_args!(
            "{:<44} {:>5} {:>10.4} {:>9.2} {:>10} {:>9} {:>7}  {kern}{emu_note}",
            s.name,
            t.name(),
            ms,
            tf(ms),
            peer_ms.map_or("-".into(), |p| format!("{p:.4}")),
            peer_ms.map_or("-".into(), |p| format!("{:.2}", tf(p))),
            ratio.map_or("-".into(), |r| format!("{r:.3}x")),
        ));
        out.push(row(serde_json::json!({ "ours_ms": ms, "ratio": ratio, "kernel": kern })))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    for (i, name) in ["dense", "grouped/depthwise"].iter().enumerate() {
        if let Some(g) = geomean(&ratios[i]) {
            println!(
                "geomean ratio (peer time / ours) over {} {name} shapes: {g:.3}x",
                ratios[i].len()
            );
        }
    }
    report_networks(&per_net);
    let mut overheads = vec![];
    for &t in types {
        let find = |fused: bool| {
            pair.iter()
                .find(|&&(pt, f, _)| pt == t && f == fused)
                .map(|p| p.2)
        };
        if let (Some(plain), Some(fused)) = (find(false), find(true)) {
            let pct = (fused / plain - 1.0) * 100.0;
            let verdict = if emu {
                "emulated wall time, not a GPU measurement"
            } else if pct < 10.0 {
                "target < 10%: met"
            } else {
                "target < 10%: NOT met"
            };
            println!(
                "fused epilogue (add-relu + G_C bias) overhead, {}: {plain:.4} -> {fused:.4} ms = {pct:+.1}% ({verdict})",
                t.name()
            );
            overheads.push(serde_json::json!({ "dtype": t.name(), "plain_ms": plain, "fused_ms": fused, "overhead_pct": pct }));
        }
    }
    out.finish(overheads)?;
    if let Some(p) = &a.plot {
        crate::plot::write(out.doc(), p).with_context(|| format!("--plot {}", p.display()))?;
        println!("chart: {}", p.display());
    }
    if !failed.is_empty() {
        bail!("{} of {} shape(s) failed: {}", failed.len(), sel.len(), failed.join(", "));
    }
    crate::options::check_measured(measured, sel.len(), "every shape was skipped: --instance cannot run them")
}

/// The `--json` document of a run: the run's fields and its rows, the file
/// rewritten whole after every row (through a temporary file and a rename,
/// so a reader never sees half a file), `"complete": false` until
/// [`JsonOut::finish`]. Without a path it only keeps the document (for `--plot`).
pub(crate) struct JsonOut {
    path: Option<std::path::PathBuf>,
    doc: serde_json::Value,
}

impl JsonOut {
    /// A document with no rows yet, written at once where there is a path.
    pub(crate) fn new(path: Option<std::path::PathBuf>, op: &str, device: &str, peer: &str) -> Result<JsonOut> {
        let doc = serde_json::json!({ "op": op, "device": device, "peer": peer, "complete": false, "failed": 0,
            "rows": [], "fused_epilogue_overhead": [] });
        let out = JsonOut { path, doc };
        out.save()?;
        Ok(out)
    }

    /// Appends a row (one with an `error` counts as failed) and rewrites the file.
    pub(crate) fn push(&mut self, row: serde_json::Value) -> Result<()> {
        if row.get("error").is_some() {
            let n = self.doc["failed"].as_u64().unwrap_or(0);
            self.doc["failed"] = (n + 1).into();
        }
        self.doc["rows"].as_array_mut().expect("rows").push(row);
        self.save()
    }

    /// Adds the fused-epilogue overheads, marks the run complete, rewrites the file.
    pub(crate) fn finish(&mut self, overheads: Vec<serde_json::Value>) -> Result<()> {
        self.doc["fused_epilogue_overhead"] = overheads.into();
        self.doc["complete"] = true.into();
        self.save()
    }

    /// The document as it stands.
    pub(crate) fn doc(&self) -> &serde_json::Value {
        &self.doc
    }

    fn save(&self) -> Result<()> {
        let Some(p) = &self.path else { return Ok(()) };
        let mut tmp = p.clone().into_os_string();
        tmp.push(".partial");
        let tmp = std::path::PathBuf::from(tmp);
        let text = serde_json::to_string_pretty(&self.doc)?;
        std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, p)).with_context(|| format!("--json {}", p.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::JsonOut;

    fn read(p: &std::path::Path) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    /// Rows reach the file as they come; a failed row is kept with its
    /// error and counted, the earlier rows stay.
    #[test]
    fn json_is_written_row_by_row_with_failures() {
        let dir = std::env::temp_dir().join(format!("convgrad-bench-json-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bench.json");
        let mut out = JsonOut::new(Some(p.clone()), "bwd-weight", "Test GPU", "none").unwrap();
        assert_eq!(read(&p)["rows"].as_array().unwrap().len(), 0);
        out.push(serde_json::json!({ "shape": "a", "dtype": "f16", "ours_ms": 1.5, "ratio": null })).unwrap();
        let v = read(&p);
        assert_eq!((v["rows"][0]["shape"].as_str(), v["complete"].as_bool(), v["failed"].as_u64()), (Some("a"), Some(false), Some(0)));
        out.push(serde_json::json!({ "shape": "b", "dtype": "f16", "ours_ms": null, "error": "plan: nothing fits" })).unwrap();
        let v = read(&p);
        assert_eq!(v["rows"].as_array().unwrap().len(), 2, "{v}");
        assert_eq!(v["rows"][0]["ours_ms"].as_f64(), Some(1.5), "{v}");
        assert_eq!(v["rows"][1]["error"].as_str(), Some("plan: nothing fits"), "{v}");
        assert_eq!((v["failed"].as_u64(), v["complete"].as_bool()), (Some(1), Some(false)));
        out.push(serde_json::json!({ "shape": "c", "dtype": "f16", "ours_ms": 2.0 })).unwrap();
        out.finish(vec![]).unwrap();
        let v = read(&p);
        assert_eq!((v["rows"].as_array().unwrap().len(), v["complete"].as_bool()), (3, Some(true)));
        assert!(!dir.join("bench.json.partial").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `bench --backend emu` on one small shape: a row in the JSON file
    /// and a chart that names it.
    #[test]
    fn bench_on_the_emulator_writes_json_and_chart() {
        let dir = std::env::temp_dir().join(format!("convgrad-bench-emu-{}", std::process::id()));
        let (json, svg) = (dir.join("r.json"), dir.join("r.svg"));
        std::fs::create_dir_all(&dir).unwrap();
        let args = ["--backend", "emu", "--op", "bwd-weight", "--dtypes", "f16", "--filter", "emu 8x64->64"];
        let mut args: Vec<String> = args.map(String::from).to_vec();
        args.extend(["--json".into(), json.display().to_string(), "--plot".into(), svg.display().to_string()]);
        super::run(&args).unwrap();
        let v = read(&json);
        assert_eq!((v["complete"].as_bool(), v["failed"].as_u64()), (Some(true), Some(0)), "{v}");
        let rows = v["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{v}");
        assert!(rows[0]["ours_ms"].as_f64().unwrap() > 0.0 && rows[0]["kernel"].is_string(), "{v}");
        let chart = std::fs::read_to_string(&svg).unwrap();
        assert!(chart.contains("<svg") && chart.contains("emu 8x64-&gt;64 3x3 14 f16"), "{chart}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A shape that fails (bf16-f32 has no backward-data kernel) is a row
    /// with its error, after the row that ran, and the run fails.
    #[test]
    fn bench_records_a_failing_shape_and_fails() {
        let dir = std::env::temp_dir().join(format!("convgrad-bench-fail-{}", std::process::id()));
        let json = dir.join("r.json");
        std::fs::create_dir_all(&dir).unwrap();
        let args = ["--backend", "emu", "--op", "bwd-data", "--dtypes", "f16,bf16-f32", "--filter", "emu 8x64->64"];
        let mut args: Vec<String> = args.map(String::from).to_vec();
        args.extend(["--json".into(), json.display().to_string()]);
        let e = format!("{:#}", super::run(&args).unwrap_err());
        assert!(e.contains("1 of 2 shape(s) failed: emu 8x64->64 3x3 14 bf16-f32"), "{e}");
        let v = read(&json);
        assert_eq!((v["complete"].as_bool(), v["failed"].as_u64()), (Some(true), Some(1)), "{v}");
        let rows = v["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 2, "{v}");
        assert!(rows[0]["ours_ms"].as_f64().is_some() && rows[0].get("error").is_none(), "{v}");
        assert!(rows[1]["ours_ms"].is_null() && rows[1]["error"].as_str().unwrap().contains("no bwd-data kernel for bf16-f32"), "{v}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
