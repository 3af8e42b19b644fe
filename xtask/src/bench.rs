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
    /// Write the table as JSON here too.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
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
    /// Which shapes: `bench` (the anchors and CK's ResNet-50 layers) or
    /// `networks` (layers of real networks, with per-network geomeans).
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
                    .with_context(|| format!("--dtypes: '{s}' is not f32, f16, bf16, bf16-f32"))
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
    crate::networks::layers()
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
        other => bail!("--suite {other}: allowed bench, networks"),
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

/// Median of `iters` timed calls of `go` (ms), after up to 3 warm-up calls.
fn median_ms(dev: &Device, iters: usize, go: impl Fn() -> Result<(), OpError>) -> Result<f64> {
    for _ in 0..3.min(iters) {
        go()?;
    }
    dev.synchronize()?;
    let mut ts = Vec::with_capacity(iters);
    for _ in 0..iters {
        let mut planned = None;
        let ((), ms) = dev.time(|| match go() {
            Err(OpError::Runtime(r)) => Err(r),
            Err(other) => {
                planned = Some(other);
                Ok(())
            }
            Ok(()) => Ok(()),
        })?;
        if let Some(e) = planned {
            return Err(e.into());
        }
        ts.push(ms as f64);
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
    let bufs = BwdDataBuffers {
        dy: inputs.a.device_addr(),
        w: inputs.b.device_addr(),
        dx: inputs.out.device_addr(),
        ds: &d_addrs,
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
            let ms = time_weight(dev, module, &plan, t, iters)?;
            Ok((
                ms,
                format!("{} kb={}", plan.main.instance.name, plan.k_batch),
            ))
        }
        Op::BwdData => {
            let plan = data_op::plan(&s.p, &data_config(s, t, instance), family, cus)?;
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
    let out = duct::cmd!("python3", &script, &f, iters.to_string())
        .read()
        .with_context(|| format!("running the PyTorch peer ({script}); use --no-peer to skip"))?;
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap_or(""))?;
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
    let mut ratios: [Vec<f64>; 2] = [vec![], vec![]];
    // Per network: (layer, dtype, ratio), for `--suite networks`.
    let mut per_net: Vec<(&'static str, String, &'static str, f64)> = vec![];
    let mut rows = vec![];
    // (dtype, fused) -> ours ms, for the overhead of the fused epilogue.
    let mut pair: Vec<(TypeConfig, bool, f64)> = vec![];
    for ((s, t), peer_ms) in sel.iter().zip(&theirs) {
        let timed = time_ours(dev, module, op, s, *t, iters, a.instance.as_deref(), split_k)
            .with_context(|| format!("{} {} {}", op.name(), s.name, t.name()));
        let (ms, kern) = match (timed, &a.instance) {
            (Ok(r), _) => r,
            (Err(e), Some(_)) => {
                println!("{:<44} {:>5} skipped: {e:#}", s.name, t.name());
                continue;
            }
            (Err(e), None) => return Err(e),
        };
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
        println!(
            "{:<44} {:>5} {:>10.4} {:>9.2} {:>10} {:>9} {:>7}  {kern}{emu_note}",
            s.name,
            t.name(),
            ms,
            tf(ms),
            peer_ms.map_or("-".into(), |p| format!("{p:.4}")),
            peer_ms.map_or("-".into(), |p| format!("{:.2}", tf(p))),
            ratio.map_or("-".into(), |r| format!("{r:.3}x")),
        );
        rows.push(serde_json::json!({ "shape": s.name, "dtype": t.name(), "ours_ms": ms, "peer_ms": peer_ms,
            "ratio": ratio, "kernel": kern, "kind": format!("{:?}", s.kind), "fused": s.fused }));
    }
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
    if let Some(p) = &a.json {
        std::fs::write(
            p,
            serde_json::to_string_pretty(
                &serde_json::json!({ "op": op.name(), "device": dev.name(), "peer": who,
                "rows": rows, "fused_epilogue_overhead": overheads }),
            )?,
        )?;
    }
    crate::options::check_measured(rows.len(), sel.len(), "every shape was skipped: --instance cannot run them")
}
