//! `cargo xtask verify --op bwd-weight [options]`: runs an operation on the best
//! backend present (or the one asked for) and checks it against the float64
//! CPU reference. Exit code 1 on FAIL.
//!
//! Also accepts CK's positional form: `verify <verify 0|1> <init 0|1|2> <time 0|1>
//! [ndim G N K C <filter> <input> <strides> <dilations> <lpads> <rpads>]`.

use anyhow::{Context, Result, bail};
use clap::Parser;
use convgrad::check::Init;
use convgrad::ops::bwd_weight::{BwdWeightConfig, SplitK};
use convgrad::runtime::{Backend, BackendKind, Device};
use convgrad::verify::{Outcome, TensorDump, bwd_weight};
use convgrad_types::{ConvLayout, ConvProblem, EpilogueOp, TypeConfig};
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(
    name = "cargo xtask verify",
    about = "Check a kernel against the float64 CPU reference"
)]
pub struct VerifyArgs {
    /// Operation: bwd-weight (bwd-data and bwd-data-multi-d are not built yet).
    #[arg(long, default_value = "bwd-weight")]
    pub op: String,
    /// auto (HIP, then CUDA, then the emulator), hip, cuda or emu.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Emulated GPU: gfx942, gfx90a, gfx1100, sm_80, sm_90.
    #[arg(long)]
    pub emu_arch: Option<String>,
    /// f32, f16, bf16, bf16-f32 (bf16 activations, f32 weight gradient).
    #[arg(long, default_value = "f16")]
    pub dtype: String,
    /// nhwgc (NHWGC/GKYXC/NHWGK), gnhwc, ngchw-gkyxc, ngchw (NGCHW/GKCYX/NGKHW).
    #[arg(long, default_value = "nhwgc")]
    pub layout: String,
    /// "ndim G N K C <filter> <input> <strides> <dilations> <lpads> <rpads>" (CK's order).
    #[arg(long)]
    pub problem: Option<String>,
    /// k-batches of split-K: a number or auto.
    #[arg(long, default_value = "auto")]
    pub split_k: String,
    /// Deterministic split-K (f32 partials, fixed-order sum).
    #[arg(long)]
    pub deterministic: bool,
    /// Seed of the random inputs (default: drawn from the clock, printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// int (integers in [-5, 4]) or float (uniform [-1, 1)).
    #[arg(long, default_value = "float")]
    pub init: String,
    /// Also time the kernel: median of this many runs.
    #[arg(long, num_args = 0..=1, default_missing_value = "20")]
    pub time: Option<usize>,
    /// Write problem.json and one .npy per tensor into this folder.
    #[arg(long)]
    pub dump: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Force a kernel instance (see `cargo xtask list-instances`).
    #[arg(long)]
    pub instance: Option<String>,
    /// Fused epilogue: scale=S or bilinear=A,B (D tensor drawn at random).
    #[arg(long)]
    pub epilogue: Option<String>,
}

/// CK example 20's problem (3-D, G=4, N=1, K=128, C=256, 3x3x3, 14^3, pad 1).
const CK_EXAMPLE_20: &str = "3 4 1 128 256 3 3 3 14 14 14 1 1 1 1 1 1 1 1 1 1 1 1";
/// The same kind of problem, small enough for the emulator (~0.3 GFLOP).
const EMU_DEFAULT: &str = "3 4 1 64 64 3 3 3 7 7 7 1 1 1 1 1 1 1 1 1 1 1 1";

fn parse_numbers(s: &str) -> Result<Vec<usize>> {
    s.split([' ', ',', '\t'])
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<usize>()
                .with_context(|| format!("--problem: '{t}' is not a non-negative integer"))
        })
        .collect()
}

fn parse_epilogue(s: Option<&str>) -> Result<EpilogueOp> {
    let Some(s) = s else {
        return Ok(EpilogueOp::PassThrough);
    };
    let num = |v: &str| {
        v.trim()
            .parse::<f32>()
            .with_context(|| format!("--epilogue: '{v}' is not a number"))
    };
    Ok(match s.split_once('=') {
        None if s == "pass-through" || s == "none" => EpilogueOp::PassThrough,
        Some(("scale", v)) => EpilogueOp::Scale(num(v)?),
        Some(("bilinear", v)) => {
            let (a, b) = v
                .split_once(',')
                .context("--epilogue bilinear=A,B needs two numbers")?;
            EpilogueOp::Bilinear(num(a)?, num(b)?)
        }
        _ => bail!("--epilogue '{s}': bwd-weight allows pass-through, scale=S, bilinear=A,B"),
    })
}

/// Entry point of `cargo xtask verify`.
pub fn run(args: &[String]) -> Result<()> {
    // CK's positional form: leading integers, then any options.
    let n_pos = args.iter().take_while(|t| t.parse::<usize>().is_ok()).count();
    let (positional, opts) = args.split_at(n_pos);
    let a = VerifyArgs::parse_from(std::iter::once("verify".to_string()).chain(opts.iter().cloned()));
    if a.op != "bwd-weight" {
        bail!(
            "--op {}: only bwd-weight is implemented so far (bwd-data and bwd-data-multi-d are tracked separately)",
            a.op
        );
    }
    let mut init = match a.init.as_str() {
        "int" | "1" => Init::Int,
        "float" | "2" => Init::Float,
        o => bail!("--init {o}: allowed int or float"),
    };
    let mut time = a.time;
    let mut problem_text = a.problem.clone();
    if !positional.is_empty() {
        // CK: verify init time [problem...]
        let v = parse_numbers(&positional.join(" "))?;
        if v.len() < 3 {
            bail!("positional form: verify(0|1) init(0|1|2) time(0|1) [ndim G N K C ...]");
        }
        init = match v[1] {
            1 => Init::Int,
            _ => Init::Float,
        };
        if v[2] != 0 {
            time = Some(time.unwrap_or(20));
        }
        if v.len() > 3 {
            problem_text = Some(
                v[3..]
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
    }
    let backend = Backend::parse(&a.backend, a.emu_arch.as_deref())?;
    let dev = Device::open(backend, 0)?;
    let on_emu = dev.backend_kind() == BackendKind::Emulator;
    let (text, defaulted) = match &problem_text {
        Some(t) => (t.clone(), false),
        None => (
            (if on_emu { EMU_DEFAULT } else { CK_EXAMPLE_20 }).to_string(),
            true,
        ),
    };
    let problem = ConvProblem::from_ck_args(&parse_numbers(&text)?)
        .map_err(|e| anyhow::anyhow!("--problem: {e}"))?;
    let types = TypeConfig::parse(&a.dtype)
        .with_context(|| format!("--dtype {}: allowed f32, f16, bf16, bf16-f32", a.dtype))?;
    let layout = ConvLayout::parse(&a.layout).with_context(|| {
        format!(
            "--layout {}: allowed nhwgc, gnhwc, ngchw-gkyxc, ngchw",
            a.layout
        )
    })?;
    let split_k = match a.split_k.as_str() {
        "auto" => SplitK::Auto,
        n => SplitK::Fixed(
            n.parse()
                .ok()
                .filter(|&k: &u32| k >= 1)
                .with_context(|| format!("--split-k {n}: a number >= 1 or auto"))?,
        ),
    };
    let seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64 % 1_000_000_007)
    });
    let config = BwdWeightConfig {
        layout,
        types,
        epilogue: parse_epilogue(a.epilogue.as_deref())?,
        split_k,
        deterministic: a.deterministic,
        instance: a.instance.clone(),
    };
    let module = dev.load_module()?;
    let case = bwd_weight::Case {
        problem,
        config,
        seed,
        init,
        timed_runs: time.unwrap_or(0),
        dump: a.dump.is_some(),
    };
    let out = bwd_weight::run(&dev, &module, &case).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(dir) = &a.dump {
        dump(dir, &case, &out).with_context(|| format!("--dump {}", dir.display()))?;
    }
    let flops = problem.flops() as f64;
    let bytes = problem.bwd_weight_bytes(types.act().bytes(), types.wei().bytes()) as f64;
    if a.json {
        let v = serde_json::json!({
            "op": "bwd-weight", "problem": problem.ck_args().collect::<Vec<_>>(), "problem_text": problem.to_string(),
            "backend": format!("{:?}", dev.backend_kind()), "device": dev.name(), "arch": dev.arch(),
            "dtype": types.name(), "layout": layout.name(), "instance": out.instance, "k_batch": out.k_batch,
            "split_mode": out.split_mode, "seed": seed, "max_abs": out.report.max_abs, "max_rel": out.report.max_rel,
            "rel_l2": out.report.rel_l2, "worst_ratio": out.report.worst_ratio, "failed": out.report.fail_count,
            "unwritten": out.report.unwritten_count, "rule": out.rule, "pass": out.passed(),
            "median_ms": out.median_ms, "tflops": out.median_ms.map(|ms| flops / ms / 1e9),
            "gbps": out.median_ms.map(|ms| bytes / ms / 1e6),
        });
        println!("{v}");
    } else {
        println!(
            "op        bwd-weight ({})",
            if defaulted {
                if on_emu {
                    "emulator default: CK example 20's kind, smaller"
                } else {
                    "CK example 20"
                }
            } else {
                "given"
            }
        );
        println!("problem   {problem}  ({} GFLOP)", fmt3(flops / 1e9));
        println!(
            "          ck: {}",
            problem
                .ck_args()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
        println!(
            "types     {} ; layout {} ; epilogue {:?}",
            types.name(),
            layout.name(),
            case.config.epilogue
        );
        println!(
            "backend   {:?}: {} ({}) ; {}",
            dev.backend_kind(),
            dev.name(),
            dev.arch(),
            dev.selection_note()
        );
        println!(
            "kernel    {} ; k_batch {} ; split-K {}",
            out.instance, out.k_batch, out.split_mode
        );
        println!(
            "inputs    {} seed {seed}",
            if init == Init::Int {
                "int [-5, 4]"
            } else {
                "float [-1, 1)"
            }
        );
        println!("tolerance {}", out.rule);
        println!("result    {}", out.report.summary());
        if let Some(ms) = out.median_ms {
            println!(
                "time      {} ms median of {} ; {} TFLOPS ; {} GB/s",
                fmt3(ms),
                case.timed_runs,
                fmt3(flops / ms / 1e9),
                fmt3(bytes / ms / 1e6)
            );
        }
        println!("{}", if out.passed() { "PASS" } else { "FAIL" });
    }
    if !out.passed() {
        std::process::exit(1);
    }
    Ok(())
}

fn fmt3(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

fn dump(dir: &Path, case: &bwd_weight::Case, out: &Outcome) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let p = &case.problem;
    let s = p.spatial();
    let mut tensors = serde_json::Map::new();
    for t in &out.dumps {
        let file = format!("{}.npy", t.name);
        write_npy(&dir.join(&file), t)?;
        tensors.insert(
            t.name.to_string(),
            serde_json::json!({ "file": file, "layout": t.layout, "shape": t.shape, "dtype": t.dtype,
                "stored_as": if t.dtype == "bf16" { "f32 (exact widening: numpy has no bfloat16)" } else { t.dtype } }),
        );
    }
    let j = serde_json::json!({
        "op": "bwd-weight", "ndim": p.ndim, "G": p.g, "N": p.n, "K": p.k, "C": p.c,
        "filter": s.filter, "input": s.input, "strides": s.strides, "dilations": s.dilations,
        "lpads": s.lpads, "rpads": s.rpads, "output": &p.output()[p.first_axis()..],
        "dtype": case.config.types.name(), "layout": case.config.layout.name(),
        "epilogue": format!("{:?}", case.config.epilogue), "seed": case.seed, "instance": out.instance,
        "k_batch": out.k_batch, "pass": out.passed(), "tensors": tensors,
    });
    std::fs::write(dir.join("problem.json"), serde_json::to_string_pretty(&j)?)?;
    Ok(())
}

fn write_npy(path: &Path, t: &TensorDump) -> Result<()> {
    use npyz::WriterBuilder;
    let f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let shape: Vec<u64> = t.shape.iter().map(|&x| x as u64).collect();
    match t.dtype {
        "f64" => {
            let mut w = npyz::WriteOptions::new()
                .default_dtype()
                .shape(&shape)
                .writer(f)
                .begin_nd()?;
            w.extend(t.values.iter().copied())?;
            w.finish()?;
        }
        "f16" => {
            let mut w = npyz::WriteOptions::new()
                .default_dtype()
                .shape(&shape)
                .writer(f)
                .begin_nd()?;
            w.extend(t.values.iter().map(|&v| half::f16::from_f64(v)))?;
            w.finish()?;
        }
        _ => {
            let mut w = npyz::WriteOptions::new()
                .default_dtype()
                .shape(&shape)
                .writer(f)
                .begin_nd()?;
            w.extend(t.values.iter().map(|&v| v as f32))?;
            w.finish()?;
        }
    }
    Ok(())
}
