//! `cargo xtask verify --op bwd-weight|bwd-data|bwd-data-multi-d [options]`: runs
//! an operation on the best backend present (or the one asked for) and checks
//! it against the float64 CPU reference. Exit code 1 on FAIL (2 on errors).
//!
//! Also accepts CK's positional form: `verify <verify 0|1> <init 0|1|2> <time 0|1>
//! [ndim G N K C <filter> <input> <strides> <dilations> <lpads> <rpads>]`, for
//! every operation (`--op` picks it; default bwd-weight).

use anyhow::{Context, Result, bail};
use clap::Parser;
use convgrad::check::Init;
use convgrad::ops::bwd_data::{self as data_op, BwdDataConfig, DLayout};
use convgrad::ops::bwd_weight::{BwdWeightConfig, SplitK};
use convgrad::runtime::{Backend, BackendKind, Device};
use convgrad::verify::{Outcome, TensorDump, bwd_data, bwd_weight};
use convgrad_types::epilogue::EpiChain;
use convgrad_types::instance::Op;
use convgrad_types::{ConvLayout, ConvProblem, EpilogueOp, TypeConfig};
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(
    name = "cargo xtask verify",
    about = "Check a kernel against the float64 CPU reference"
)]
pub struct VerifyArgs {
    /// Operation: bwd-weight, bwd-data, bwd-data-multi-d (bwd-data with a
    /// fused epilogue; default add-relu with a G_C bias).
    #[arg(long, default_value = "bwd-weight")]
    pub op: String,
    /// auto (HIP, then CUDA, then the emulator), hip, cuda, emu or isa (the real AMD code objects on the CPU).
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Emulated GPU: gfx942, gfx90a, gfx950, gfx1100, gfx1200, gfx1201, sm_80, sm_90 (isa: gfx90a, gfx942, gfx1100).
    #[arg(long)]
    pub emu_arch: Option<String>,
    /// f32, f16, bf16, bf16-f32 (bf16 activations, f32 weight gradient; bwd-weight only),
    /// f32-tf32 (f32 tensors, TF32 matrix operands, f32 accumulation; NVIDIA only, opt-in).
    #[arg(long, default_value = "f16")]
    pub dtype: String,
    /// nhwgc (NHWGC/GKYXC/NHWGK), gnhwc, ngchw-gkyxc, ngchw (NGCHW/GKCYX/NGKHW).
    #[arg(long, default_value = "nhwgc")]
    pub layout: String,
    /// "ndim G N K C <filter> <input> <strides> <dilations> <lpads> <rpads>" (CK's order).
    #[arg(long)]
    pub problem: Option<String>,
    /// bwd-weight: k-batches of split-K, a number or auto (default auto).
    #[arg(long)]
    pub split_k: Option<String>,
    /// bwd-data: rows per strip of the depthwise column-strip kernel (default: chosen).
    #[arg(long)]
    pub strip_rows: Option<usize>,
    /// bwd-weight: deterministic split-K (f32 partials, fixed-order sum).
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
    /// Fused epilogue (D tensors drawn at random). bwd-weight: scale=S or
    /// bilinear=A,B. bwd-data: a chain joined by `+` of pass, add, add-relu,
    /// scale=S, bilinear=A,B, relu-mask (e.g. relu-mask+add); each op reading
    /// a D takes the next one.
    #[arg(long)]
    pub epilogue: Option<String>,
    /// bwd-data: layout of each D tensor, in order (repeat the option or give a
    /// comma-separated list): output, G_C (per channel), G_NHW (per pixel),
    /// G_NHW_C, or a family nhwgc, gnhwc, ngchw. Missing ones: output.
    #[arg(long = "d-layout")]
    pub d_layout: Vec<String>,
    /// bwd-data: D0 is dx itself (in-place accumulation; D0 must be in the output layout).
    #[arg(long)]
    pub alias_d0: bool,
}

/// The operations `verify` checks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OpKind {
    /// Grouped backward-weight.
    BwdWeight,
    /// Grouped backward-data (any epilogue; none by default).
    BwdData,
    /// Grouped backward-data with a fused multi-D epilogue (default add-relu, G_C bias).
    BwdDataMultiD,
}

impl OpKind {
    const ALL: [OpKind; 3] = [OpKind::BwdWeight, OpKind::BwdData, OpKind::BwdDataMultiD];

    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::BwdWeight => "bwd-weight",
            OpKind::BwdData => "bwd-data",
            OpKind::BwdDataMultiD => "bwd-data-multi-d",
        }
    }

    /// Parses [`OpKind::name`], with an error listing the operations.
    pub fn parse(s: &str) -> Result<OpKind> {
        OpKind::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .with_context(|| format!("--op {s}: allowed bwd-weight, bwd-data, bwd-data-multi-d"))
    }

    /// The problem run when none is given, and what it is.
    fn default_problem(self, on_emu: bool) -> (&'static str, &'static str) {
        match (self, on_emu) {
            (OpKind::BwdWeight, false) => (CK_EXAMPLE_20, "CK example 20"),
            (OpKind::BwdWeight, true) => {
                (EMU_EX20, "emulator default: CK example 20's kind, smaller")
            }
            (OpKind::BwdData, false) => (SEED_BWD_DATA, "the seed problem"),
            (OpKind::BwdData, true) => (
                EMU_SEED_BWD_DATA,
                "emulator default: the seed problem's kind, smaller",
            ),
            (OpKind::BwdDataMultiD, false) => (CK_EXAMPLE_38, "CK example 38"),
            (OpKind::BwdDataMultiD, true) => {
                (EMU_EX38, "emulator default: CK example 38's kind, smaller")
            }
        }
    }
}

/// CK example 20's problem (3-D, G=4, N=1, K=128, C=256, 3x3x3, 14^3, pad 1).
const CK_EXAMPLE_20: &str = "3 4 1 128 256 3 3 3 14 14 14 1 1 1 1 1 1 1 1 1 1 1 1";
/// The same kind of problem, small enough for the emulator (~0.3 GFLOP).
const EMU_EX20: &str = "3 4 1 64 64 3 3 3 7 7 7 1 1 1 1 1 1 1 1 1 1 1 1";
/// The project's seed backward-data problem (2-D, G=1, N=128, K=256, C=128, 3x3, 71x71, stride 2, pad 1).
const SEED_BWD_DATA: &str = "2 1 128 256 128 3 3 71 71 2 2 1 1 1 1 1 1";
/// The same kind (strided, dense), small enough for the emulator.
const EMU_SEED_BWD_DATA: &str = "2 1 4 32 32 3 3 15 15 2 2 1 1 1 1 1 1";
/// CK example 38 (grouped backward-data with bias + ReLU: G=32, N=4, K=C=192, 3x3, 28x28, pad 1).
pub const CK_EXAMPLE_38: &str = "2 32 4 192 192 3 3 28 28 1 1 1 1 1 1 1 1";
/// The same kind (grouped, bias + ReLU), small enough for the emulator.
pub const EMU_EX38: &str = "2 4 2 32 32 3 3 10 10 1 1 1 1 1 1 1 1";

fn parse_numbers(s: &str) -> Result<Vec<usize>> {
    s.split([' ', ',', '\t'])
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<usize>()
                .with_context(|| format!("--problem: '{t}' is not a non-negative integer"))
        })
        .collect()
}

/// Parses a problem in CK's order.
pub fn parse_problem(s: &str) -> Result<ConvProblem> {
    ConvProblem::from_ck_args(&parse_numbers(s)?).map_err(|e| anyhow::anyhow!("--problem: {e}"))
}

const EPILOGUE_OPS: &str = "pass, add, add-relu, scale=S, bilinear=A,B, relu-mask";

/// Parses an epilogue chain: ops joined by `+` (see [`epilogue_name`]).
pub fn parse_epilogue_chain(s: &str) -> Result<Vec<EpilogueOp>> {
    let num = |v: &str| crate::options::finite_f32(&format!("--epilogue {s}"), v);
    s.split('+')
        .map(|op| {
            let op = op.trim();
            Ok(match op.split_once('=') {
                None if matches!(op, "pass" | "pass-through" | "none") => EpilogueOp::PassThrough,
                None if op == "add" => EpilogueOp::Add,
                None if op == "add-relu" => EpilogueOp::AddRelu,
                None if op == "relu-mask" => EpilogueOp::ReluMask,
                Some(("scale", v)) => EpilogueOp::Scale(num(v)?),
                Some(("bilinear", v)) => {
                    let (a, b) = v.split_once(',').with_context(|| {
                        format!("--epilogue {s}: bilinear=A,B needs two numbers")
                    })?;
                    EpilogueOp::Bilinear(num(a)?, num(b)?)
                }
                _ => bail!(
                    "--epilogue {s}: unknown op '{op}'; allowed {EPILOGUE_OPS}, chained with +"
                ),
            })
        })
        .collect()
}

/// The command-line spelling of one epilogue op.
pub fn epilogue_name(op: &EpilogueOp) -> String {
    match op {
        EpilogueOp::PassThrough => "pass".into(),
        EpilogueOp::Scale(s) => format!("scale={s}"),
        EpilogueOp::Bilinear(a, b) => format!("bilinear={a},{b}"),
        EpilogueOp::Add => "add".into(),
        EpilogueOp::AddRelu => "add-relu".into(),
        EpilogueOp::ReluMask => "relu-mask".into(),
    }
}

/// bwd-weight's epilogue: one of pass-through, scale, bilinear.
fn parse_bwd_weight_epilogue(s: Option<&str>) -> Result<EpilogueOp> {
    let Some(s) = s else {
        return Ok(EpilogueOp::PassThrough);
    };
    match parse_epilogue_chain(s)?.as_slice() {
        [op @ (EpilogueOp::PassThrough | EpilogueOp::Scale(_) | EpilogueOp::Bilinear(..))] => {
            Ok(*op)
        }
        _ => bail!("--epilogue {s}: bwd-weight allows one of pass-through, scale=S, bilinear=A,B"),
    }
}

/// `--d-layout` values (repeated and/or comma-separated), in order.
fn parse_d_layouts(v: &[String]) -> Result<Vec<DLayout>> {
    v.iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            DLayout::parse(s).with_context(|| {
                format!(
                    "--d-layout {s}: allowed output, G_C (GC, per channel), G_NHW (per pixel), \
                     G_NHW_C, or a layout family nhwgc, gnhwc, ngchw"
                )
            })
        })
        .collect()
}

/// What one operation's run produced, for the shared printing and dumping.
struct Ran {
    out: Outcome,
    /// Kernel line after the instance name.
    /// Minimum bytes moved (for GB/s).
    bytes: f64,
    /// Epilogue ops, as typed.
    epilogue: Vec<String>,
    /// Op-specific fields of the JSON output and of problem.json.
    extra: serde_json::Map<String, serde_json::Value>,
    /// Op-specific line printed after `types` (may be empty).
    epilogue_line: String,
}

/// Options of the run shared by every operation.
struct Common {
    problem: ConvProblem,
    types: TypeConfig,
    layout: ConvLayout,
    seed: u64,
    init: Init,
    timed_runs: usize,
    dump: bool,
}

/// Entry point of `cargo xtask verify`.
pub fn run(args: &[String]) -> Result<()> {
    // CK's positional form: leading integers, then any options.
    let n_pos = args
        .iter()
        .take_while(|t| t.parse::<usize>().is_ok())
        .count();
    let (positional, opts) = args.split_at(n_pos);
    let a =
        VerifyArgs::parse_from(std::iter::once("verify".to_string()).chain(opts.iter().cloned()));
    let op = OpKind::parse(&a.op)?;
    check_op_options(op, &a)?;
    if let Some(name) = &a.instance {
        let kinds = if op == OpKind::BwdWeight { Op::BWD_WEIGHT } else { Op::BWD_DATA };
        crate::options::check_instance(name, kinds, op.name())?;
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
            0 | 2 => Init::Float,
            o => bail!("positional init {o}: allowed 0, 1 (int) or 2 (float)"),
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
    let types = TypeConfig::parse(&a.dtype)
        .with_context(|| format!("--dtype {}: allowed f32, f16, bf16, bf16-f32, f32-tf32", a.dtype))?;
    let layout = ConvLayout::parse(&a.layout).with_context(|| {
        format!(
            "--layout {}: allowed nhwgc, gnhwc, ngchw-gkyxc, ngchw",
            a.layout
        )
    })?;
    let backend = Backend::parse(&a.backend, a.emu_arch.as_deref())?;
    let dev = Device::open(backend, 0)?;
    let on_emu = matches!(dev.backend_kind(), BackendKind::Emulator | BackendKind::Isa);
    let (text, why) = match &problem_text {
        Some(t) => (t.clone(), "given"),
        None => {
            let (t, why) = op.default_problem(on_emu);
            (t.to_string(), why)
        }
    };
    let problem = parse_problem(&text)?;
    let seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64 % 1_000_000_007)
    });
    let common = Common {
        problem,
        types,
        layout,
        seed,
        init,
        timed_runs: time.unwrap_or(0),
        dump: a.dump.is_some(),
    };
    let module = dev.load_module()?;
    // The kernel and the float64 reference take minutes on large problems
    // (or on the emulator): a spinner with the time elapsed, on a terminal.
    let spin = crate::progress::spinner(format!("{} {problem}: kernel, then the float64 reference", op.name()));
    let ran = match op {
        OpKind::BwdWeight => run_bwd_weight(&dev, &module, &a, &common),
        OpKind::BwdData | OpKind::BwdDataMultiD => run_bwd_data(&dev, &module, op, &a, &common),
    };
    spin.finish_and_clear();
    let ran = ran?;
    if let Some(dir) = &a.dump {
        dump(dir, op, &common, &ran).with_context(|| format!("--dump {}", dir.display()))?;
    }
    report(op, why, &dev, &common, &ran, a.json);
    if !ran.out.passed() {
        std::process::exit(1);
    }
    Ok(())
}

/// Options that belong to one kind of operation only.
fn check_op_options(op: OpKind, a: &VerifyArgs) -> Result<()> {
    if op == OpKind::BwdWeight {
        if !a.d_layout.is_empty() {
            bail!(
                "--d-layout applies to bwd-data and bwd-data-multi-d only (bwd-weight's bilinear D has dw's layout)"
            );
        }
        if a.alias_d0 {
            bail!("--alias-d0 applies to bwd-data and bwd-data-multi-d only");
        }
        if a.strip_rows.is_some() {
            bail!("--strip-rows applies to bwd-data and bwd-data-multi-d only (the depthwise strip kernel)");
        }
    } else {
        if let Some(s) = &a.split_k {
            bail!(
                "--split-k {s}: split-K applies to bwd-weight only ({} writes each dx element once)",
                op.name()
            );
        }
        if a.deterministic {
            bail!(
                "--deterministic applies to bwd-weight only (its split-K); {} is deterministic as it is",
                op.name()
            );
        }
    }
    Ok(())
}

fn run_bwd_weight(
    dev: &Device,
    module: &convgrad::runtime::Module,
    a: &VerifyArgs,
    c: &Common,
) -> Result<Ran> {
    let split_k = a.split_k.as_deref().map_or(Ok(SplitK::Auto), crate::options::parse_split_k)?;
    let config = BwdWeightConfig {
        layout: c.layout,
        types: c.types,
        epilogue: parse_bwd_weight_epilogue(a.epilogue.as_deref())?,
        split_k,
        deterministic: a.deterministic,
        instance: a.instance.clone(),
    };
    let case = bwd_weight::Case {
        problem: c.problem,
        config,
        seed: c.seed,
        init: c.init,
        timed_runs: c.timed_runs,
        dump: c.dump,
    };
    let out = bwd_weight::run(dev, module, &case)
        .map_err(anyhow::Error::from_boxed)
        .with_context(|| format!("bwd-weight {}", c.problem))?;
    let mut extra = serde_json::Map::new();
    extra.insert("k_batch".into(), out.k_batch.into());
    extra.insert("split_mode".into(), out.split_mode.into());
    Ok(Ran {
        bytes: c
            .problem
            .bwd_weight_bytes(c.types.act().bytes(), c.types.wei().bytes()) as f64,
        epilogue: vec![epilogue_name(&case.config.epilogue)],
        epilogue_line: String::new(),
        extra,
        out,
    })
}

fn run_bwd_data(
    dev: &Device,
    module: &convgrad::runtime::Module,
    op: OpKind,
    a: &VerifyArgs,
    c: &Common,
) -> Result<Ran> {
    let mut d_layouts = parse_d_layouts(&a.d_layout)?;
    let epilogue = match a.epilogue.as_deref() {
        Some(s) => parse_epilogue_chain(s)?,
        None if op == OpKind::BwdDataMultiD => {
            // CK example 38: bias (one value per channel) + ReLU.
            if d_layouts.is_empty() {
                d_layouts.push(DLayout::PerChannel);
            }
            vec![EpilogueOp::AddRelu]
        }
        None => Vec::new(),
    };
    let epilogue = epilogue
        .into_iter()
        .filter(|e| *e != EpilogueOp::PassThrough)
        .collect::<Vec<_>>();
    if op == OpKind::BwdDataMultiD && EpiChain::from_ops(&epilogue).is_some_and(|c| c.num_d == 0) {
        bail!(
            "--op bwd-data-multi-d needs an epilogue that reads a D tensor (add, add-relu, bilinear=A,B, \
             relu-mask); use --op bwd-data for none"
        );
    }
    let config = BwdDataConfig {
        layout: c.layout,
        types: c.types,
        epilogue,
        d_layouts,
        instance: a.instance.clone(),
        strip_rows: a.strip_rows,
    };
    let case = bwd_data::Case {
        problem: c.problem,
        config,
        seed: c.seed,
        init: c.init,
        alias_d0: a.alias_d0,
        timed_runs: c.timed_runs,
        dump: c.dump,
    };
    // Planned once: the run and the report below both read it.
    let plan = data_op::plan(&c.problem, &case.config, dev.family(), dev.compute_units())
        .with_context(|| format!("{} {}", op.name(), c.problem))?;
    let out = bwd_data::run_planned(dev, module, &case, &plan)
        .map_err(anyhow::Error::from_boxed)
        .with_context(|| format!("{} {}", op.name(), c.problem))?;
    let act = c.types.act().bytes() as u64;
    let d_bytes: u64 = plan.ds.iter().map(|d| d.span() * act).sum();
    let bytes = (c
        .problem
        .bwd_data_bytes(c.types.act().bytes(), c.types.wei().bytes())
        + d_bytes) as f64;
    let d_names: Vec<&str> = (0..plan.ds.len())
        .map(|i| {
            case.config
                .d_layouts
                .get(i)
                .copied()
                .unwrap_or(DLayout::Output)
                .name()
        })
        .collect();
    let epilogue: Vec<String> = case.config.epilogue.iter().map(epilogue_name).collect();
    let epilogue_line = if epilogue.is_empty() {
        "none".to_string()
    } else {
        let ds = d_names
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let alias = if i == 0 && a.alias_d0 {
                    " = dx, in place"
                } else {
                    ""
                };
                format!("D{i} {l}{alias}")
            })
            .collect::<Vec<_>>()
            .join(", ");
        let defaulted = if a.epilogue.is_none() {
            " (default: CK example 38's bias + ReLU)"
        } else {
            ""
        };
        format!("{} ; {ds}{defaulted}", epilogue.join("+"))
    };
    let mut extra = serde_json::Map::new();
    extra.insert("slices".into(), plan.slices.into());
    extra.insert("strip_rows".into(), plan.args_template.strips.rows.into());
    extra.insert("halo_rows".into(), plan.args_template.tap_shift.halo_rows.into());
    extra.insert("d_layouts".into(), serde_json::json!(d_names));
    extra.insert("alias_d0".into(), a.alias_d0.into());
    Ok(Ran {
        bytes,
        epilogue,
        epilogue_line,
        extra,
        out,
    })
}

/// Prints the outcome (text or one JSON object).
fn report(op: OpKind, why: &str, dev: &Device, c: &Common, r: &Ran, json: bool) {
    let p = &c.problem;
    let out = &r.out;
    let flops = p.flops() as f64;
    if json {
        let mut v = serde_json::json!({
            "op": op.name(), "problem": p.ck_args().collect::<Vec<_>>(), "problem_text": p.to_string(),
            "problem_source": why, "backend": format!("{:?}", dev.backend_kind()), "device": dev.name(),
            "arch": dev.arch(), "dtype": c.types.name(), "layout": c.layout.name(), "epilogue": r.epilogue,
            "instance": out.instance, "seed": c.seed, "max_abs": out.report.max_abs,
            "max_rel": out.report.max_rel, "rel_l2": out.report.rel_l2, "worst_ratio": out.report.worst_ratio,
            "failed": out.report.fail_count, "unwritten": out.report.unwritten_count, "rule": out.rule,
            "pass": out.passed(), "median_ms": out.median_ms, "tflops": out.median_ms.map(|ms| flops / ms / 1e9),
            "gbps": out.median_ms.map(|ms| r.bytes / ms / 1e6),
        });
        if let Some(m) = v.as_object_mut() {
            m.extend(r.extra.clone());
        }
        println!("{v}");
        return;
    }
    println!("op        {} ({why})", op.name());
    println!("problem   {p}  ({} GFLOP)", fmt3(flops / 1e9));
    println!(
        "          ck: {}",
        p.ck_args()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    if r.epilogue_line.is_empty() {
        println!(
            "types     {} ; layout {} ; epilogue {}",
            c.types.name(),
            c.layout.name(),
            r.epilogue.join("+")
        );
    } else {
        println!("types     {} ; layout {}", c.types.name(), c.layout.name());
        println!("epilogue  {}", r.epilogue_line);
    }
    println!(
        "backend   {:?}: {} ({}) ; {}",
        dev.backend_kind(),
        dev.name(),
        dev.arch(),
        dev.selection_note()
    );
    println!("kernel    {}", out.describe);
    println!(
        "inputs    {} seed {}",
        if c.init == Init::Int {
            "int [-5, 4]"
        } else {
            "float [-1, 1)"
        },
        c.seed
    );
    println!("tolerance {}", out.rule);
    println!("result    {}", out.report.summary());
    if let Some(ms) = out.median_ms {
        println!(
            "time      {} ms median of {} ; {} TFLOPS ; {} GB/s",
            fmt3(ms),
            c.timed_runs,
            fmt3(flops / ms / 1e9),
            fmt3(r.bytes / ms / 1e6)
        );
    }
    println!("{}", if out.passed() { "PASS" } else { "FAIL" });
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

/// Writes problem.json and one .npy per tensor.
fn dump(dir: &Path, op: OpKind, c: &Common, r: &Ran) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let p = &c.problem;
    let s = p.spatial();
    let mut tensors = serde_json::Map::new();
    for t in &r.out.dumps {
        let file = format!("{}.npy", t.name);
        write_npy(&dir.join(&file), t)?;
        tensors.insert(
            t.name.to_string(),
            serde_json::json!({ "file": file, "layout": t.layout, "shape": t.shape, "dtype": t.dtype,
                "stored_as": if t.dtype == "bf16" { "f32 (exact widening: numpy has no bfloat16)" } else { t.dtype } }),
        );
    }
    let mut j = serde_json::json!({
        "op": op.name(), "ndim": p.ndim, "G": p.g, "N": p.n, "K": p.k, "C": p.c,
        "filter": s.filter, "input": s.input, "strides": s.strides, "dilations": s.dilations,
        "lpads": s.lpads, "rpads": s.rpads, "output": &p.output()[p.first_axis()..],
        "dtype": c.types.name(), "layout": c.layout.name(), "epilogue": r.epilogue, "seed": c.seed,
        "init": if c.init == Init::Int { "int" } else { "float" }, "instance": r.out.instance,
        "pass": r.out.passed(), "tensors": tensors,
    });
    if let Some(m) = j.as_object_mut() {
        m.extend(r.extra.clone());
    }
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
