//! `cargo xtask bench --op bwd-weight`: times our kernels and PyTorch/cuDNN
//! (`benches/torch_conv_bwd.py`, run with `python3`) on the same device in the
//! same run, and prints a table with the ratio per shape and the geometric
//! means of the dense and the grouped/depthwise shapes.
//!
//! Suite: the shapes of the project's performance anchors plus CK's
//! ResNet-50 layers, in f16 and bf16, NHWGC layout (PyTorch channels_last).
//! On the emulator (`--backend emu`) it reports emulated throughput instead
//! (small shapes, no peer).

use anyhow::{Context, Result, bail};
use clap::Parser;
use convgrad::ops::bwd_weight::{self as op, BwdWeightBuffers, BwdWeightConfig, SplitK};
use convgrad::runtime::{Backend, BackendKind, Device};
use convgrad_types::{ConvLayout, ConvProblem, TypeConfig};

#[derive(Parser, Debug)]
#[command(name = "cargo xtask bench", about = "Benchmark against PyTorch/cuDNN")]
struct BenchArgs {
    /// Operation: bwd-weight.
    #[arg(long, default_value = "bwd-weight")]
    op: String,
    /// auto, hip, cuda, emu.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Emulated GPU for --backend emu.
    #[arg(long)]
    emu_arch: Option<String>,
    /// Comma-separated dtypes.
    #[arg(long, default_value = "f16,bf16")]
    dtypes: String,
    /// Timed runs per shape (median).
    #[arg(long, default_value_t = 50)]
    iters: usize,
    /// Only shapes whose name contains this.
    #[arg(long)]
    filter: Option<String>,
    /// Skip the PyTorch peer.
    #[arg(long)]
    no_peer: bool,
    /// Write the table as JSON here too.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

/// Shape kinds, for the two geometric means.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Dense,
    Grouped,
}

struct Shape {
    name: String,
    kind: Kind,
    p: ConvProblem,
}

/// A square 2-D problem: `(N, G, C, K)`, filter `f x f`, input `hw x hw`, stride `s`, pad `pad`.
fn p2((n, g, c, k): (usize, usize, usize, usize), f: usize, hw: usize, s: usize, pad: usize) -> ConvProblem {
    ConvProblem::from_ck_args(&[2, g, n, k, c, f, f, hw, hw, s, s, 1, 1, pad, pad, pad, pad])
        .expect("suite shape")
}

fn suite() -> Vec<Shape> {
    use Kind::*;
    let mut v = vec![
        Shape {
            name: "seed17 128x128->256 3x3 71 s2".into(),
            kind: Dense,
            p: p2((128, 1, 128, 256), 3, 71, 2, 1),
        },
        Shape {
            name: "128x64->64 3x3 56".into(),
            kind: Dense,
            p: p2((128, 1, 64, 64), 3, 56, 1, 1),
        },
        Shape {
            name: "128x256->256 3x3 14".into(),
            kind: Dense,
            p: p2((128, 1, 256, 256), 3, 14, 1, 1),
        },
        Shape {
            name: "128x512->512 3x3 7".into(),
            kind: Dense,
            p: p2((128, 1, 512, 512), 3, 7, 1, 1),
        },
        Shape {
            name: "128x256->64 1x1 56".into(),
            kind: Dense,
            p: p2((128, 1, 256, 64), 1, 56, 1, 0),
        },
        Shape {
            name: "resnext 64 g32 4->4 3x3 56".into(),
            kind: Grouped,
            p: p2((64, 32, 4, 4), 3, 56, 1, 1),
        },
        Shape {
            name: "resnext 64 g32 16->16 3x3 14".into(),
            kind: Grouped,
            p: p2((64, 32, 16, 16), 3, 14, 1, 1),
        },
        Shape {
            name: "depthwise 64 g144 3x3 56".into(),
            kind: Grouped,
            p: p2((64, 144, 1, 1), 3, 56, 1, 1),
        },
        Shape {
            name: "depthwise 64 g384 3x3 14".into(),
            kind: Grouped,
            p: p2((64, 384, 1, 1), 3, 14, 1, 1),
        },
        Shape {
            name: "3d 4x64->64 3x3x3 16x56x56".into(),
            kind: Dense,
            p: ConvProblem::from_ck_args(&[
                3, 1, 4, 64, 64, 3, 3, 3, 16, 56, 56, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
            ])
            .unwrap(),
        },
        Shape {
            name: "1d 32x256->256 3 1024".into(),
            kind: Dense,
            p: ConvProblem::from_ck_args(&[1, 1, 32, 256, 256, 3, 1024, 1, 1, 1, 1]).unwrap(),
        },
    ];
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
        v.push(Shape {
            name: format!("r50 256x{c}->{k} {f}x{f} {hw} s{s}"),
            kind: Kind::Dense,
            p: p2((256, 1, c, k), f, hw, s, pad),
        });
    }
    v
}

fn emu_suite() -> Vec<Shape> {
    vec![
        Shape {
            name: "emu 8x64->64 3x3 14".into(),
            kind: Kind::Dense,
            p: p2((8, 1, 64, 64), 3, 14, 1, 1),
        },
        Shape {
            name: "emu 4 g8 16->16 3x3 14".into(),
            kind: Kind::Grouped,
            p: p2((4, 8, 16, 16), 3, 14, 1, 1),
        },
        Shape {
            name: "emu depthwise 4 g64 3x3 14".into(),
            kind: Kind::Grouped,
            p: p2((4, 64, 1, 1), 3, 14, 1, 1),
        },
    ]
}

/// Median kernel time of one problem (ms), with fresh random inputs.
fn time_ours(
    dev: &Device,
    module: &convgrad::runtime::Module,
    p: &ConvProblem,
    t: TypeConfig,
    iters: usize,
) -> Result<(f64, String)> {
    let cfg = BwdWeightConfig {
        layout: ConvLayout::NhwgcGkyxcNhwgk,
        types: t,
        split_k: SplitK::Auto,
        ..Default::default()
    };
    let plan = op::plan(p, &cfg, dev.family(), dev.compute_units())?;
    let (act, wei) = (t.act(), t.wei());
    let x = dev.upload(&convgrad::check::to_bytes(
        act,
        &convgrad::check::fill_random(1, convgrad::check::Init::Float, act, plan.x.span() as usize),
    ))?;
    let dy = dev.upload(&convgrad::check::to_bytes(
        act,
        &convgrad::check::fill_random(
            2,
            convgrad::check::Init::Float,
            act,
            plan.dy.span() as usize,
        ),
    ))?;
    let dw = dev.alloc::<u8>(plan.dw.span() as usize * wei.bytes())?;
    let ws = if plan.workspace_elems > 0 {
        Some(dev.alloc::<f32>(plan.workspace_elems)?)
    } else {
        None
    };
    let bufs = BwdWeightBuffers {
        x: x.device_addr(),
        dy: dy.device_addr(),
        dw: dw.device_addr(),
        ds: &[],
    };
    let go = || op::execute(dev, module, &plan, bufs, ws.as_ref());
    for _ in 0..3.min(iters) {
        go()?;
    }
    dev.synchronize()?;
    let mut ts = Vec::with_capacity(iters);
    for _ in 0..iters {
        let ((), ms) = dev.time(|| {
            go().map_err(|e| match e {
                op::OpError::Runtime(r) => r,
                other => panic!("{other}"),
            })
        })?;
        ts.push(ms as f64);
    }
    ts.sort_by(f64::total_cmp);
    Ok((
        ts[ts.len() / 2],
        format!("{} kb={}", plan.main.instance.name, plan.k_batch),
    ))
}

fn peer(shapes: &[(&Shape, TypeConfig)], iters: usize) -> Result<(String, Vec<Option<f64>>)> {
    let list: Vec<serde_json::Value> = shapes
        .iter()
        .map(|(s, t)| {
            let sp = s.p.spatial();
            serde_json::json!({ "op": "bwd-weight", "dtype": t.name(), "G": s.p.g, "N": s.p.n, "C": s.p.c, "K": s.p.k,
                "filter": sp.filter, "input": sp.input, "strides": sp.strides, "dilations": sp.dilations,
                "lpads": sp.lpads, "rpads": sp.rpads })
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
    let ms = v["ms"]
        .as_array()
        .context("peer output")?
        .iter()
        .map(|x| x.as_f64())
        .collect();
    Ok((who, ms))
}

fn geomean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// Entry point of `cargo xtask bench`.
pub fn run(args: &[String]) -> Result<()> {
    let a = BenchArgs::parse_from(std::iter::once("bench".to_string()).chain(args.iter().cloned()));
    if a.op != "bwd-weight" {
        bail!("--op {}: only bwd-weight has kernels so far", a.op);
    }
    let dev = Device::open(Backend::parse(&a.backend, a.emu_arch.as_deref())?, 0)?;
    let module = dev.load_module()?;
    let emu = dev.backend_kind() == BackendKind::Emulator;
    println!(
        "device: {:?} {} ({}) ; {}",
        dev.backend_kind(),
        dev.name(),
        dev.arch(),
        dev.selection_note()
    );
    let types: Vec<TypeConfig> = a
        .dtypes
        .split(',')
        .map(|s| {
            TypeConfig::parse(s)
                .with_context(|| format!("--dtypes: '{s}' is not f32, f16, bf16, bf16-f32"))
        })
        .collect::<Result<_>>()?;
    let shapes = if emu { emu_suite() } else { suite() };
    let sel: Vec<(&Shape, TypeConfig)> = types
        .iter()
        .flat_map(|&t| shapes.iter().map(move |s| (s, t)))
        .filter(|(s, _)| {
            a.filter
                .as_ref()
                .is_none_or(|f| s.name.contains(f.as_str()))
        })
        .collect();
    let iters = if emu { 1 } else { a.iters };
    let (who, theirs) = if emu || a.no_peer {
        (String::from("none"), vec![None; sel.len()])
    } else {
        peer(&sel, iters)?
    };
    println!("peer:   {who}");
    println!(
        "{:<34} {:>5} {:>10} {:>9} {:>10} {:>9} {:>7}  kernel",
        "shape", "type", "ours ms", "TFLOPS", "peer ms", "TFLOPS", "ratio"
    );
    let mut ratios: [Vec<f64>; 2] = [vec![], vec![]];
    let mut rows = vec![];
    for ((s, t), peer_ms) in sel.iter().zip(&theirs) {
        let (ms, kern) = time_ours(&dev, &module, &s.p, *t, iters)?;
        let tf = |ms: f64| s.p.flops() as f64 / ms / 1e9;
        let ratio = peer_ms.map(|p| p / ms);
        if let Some(r) = ratio {
            ratios[(s.kind == Kind::Grouped) as usize].push(r);
        }
        let emu_note = if emu {
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
            "{:<34} {:>5} {:>10.4} {:>9.2} {:>10} {:>9} {:>7}  {kern}{emu_note}",
            s.name,
            t.name(),
            ms,
            tf(ms),
            peer_ms.map_or("-".into(), |p| format!("{p:.4}")),
            peer_ms.map_or("-".into(), |p| format!("{:.2}", tf(p))),
            ratio.map_or("-".into(), |r| format!("{r:.3}x")),
        );
        rows.push(serde_json::json!({ "shape": s.name, "dtype": t.name(), "ours_ms": ms, "peer_ms": peer_ms,
            "ratio": ratio, "kernel": kern, "kind": format!("{:?}", s.kind) }));
    }
    for (i, name) in ["dense", "grouped/depthwise"].iter().enumerate() {
        if let Some(g) = geomean(&ratios[i]) {
            println!(
                "geomean ratio (peer time / ours) over {} {name} shapes: {g:.3}x",
                ratios[i].len()
            );
        }
    }
    if let Some(p) = &a.json {
        std::fs::write(
            p,
            serde_json::to_string_pretty(
                &serde_json::json!({ "device": dev.name(), "peer": who, "rows": rows }),
            )?,
        )?;
    }
    Ok(())
}
