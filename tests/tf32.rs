//! Opt-in TF32 compute for f32 convolutions (`TypeConfig::F32Tf32`, issue
//! #40): NVIDIA's `mma.sync` m16n8k8 `.tf32` GEMM instances on the emulator
//! (sm_80 and sm_90 models) for backward-weight and backward-data against the
//! float64 reference under the TF32 rule (fresh random inputs, NaN-poisoned
//! outputs, M/N/K tails, groups, strides, split-K, epilogues); the operand
//! rounding bit for bit (`cvt.rna.tf32.f32`: ties away from zero); the
//! refusal off NVIDIA; and the exact f32 path unchanged by default.

mod common;

use common::{At, INITS, prob, sweep};
use convgrad::check::{self, Tolerance};
use convgrad::ops::bwd_data::{self, BwdDataConfig, BwdDataOp, BwdDataTensors};
use convgrad::ops::bwd_weight::{self, BwdWeightConfig, BwdWeightOp, BwdWeightTensors, SplitK};
use convgrad::ops::{Workspace, WorkspaceContents};
use convgrad::runtime::{Backend, Device, EmuArch};
use convgrad::types::instance::{AtomKind, Family, INSTANCES, Op};
use convgrad::types::{ConvLayout, ConvProblem, DType, EpilogueOp, TypeConfig};
use convgrad::verify::{bwd_data as vd, bwd_weight as vw};

const TF32: TypeConfig = TypeConfig::F32Tf32;

/// The TF32 instances of `op`.
fn tf32_instances(op: Op) -> Vec<&'static str> {
    INSTANCES.iter().filter(|i| i.op == op && i.types == TF32).map(|i| i.name).collect()
}

/// Problems: tails in M, N and the reduction (odd C/K), groups, strides,
/// dilations, pads, 1-D and 3-D, a multi-tile one.
fn problems() -> Vec<(&'static str, ConvProblem)> {
    vec![
        ("2d 3x3 multi-tile M/N tails", prob(&[2, 1, 2, 70, 20, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("2d grouped odd C/K stride2", prob(&[2, 3, 2, 13, 11, 3, 3, 9, 8, 2, 2, 1, 1, 1, 1, 1, 0])),
        ("1d dilation3 odd C/K", prob(&[1, 1, 2, 5, 3, 4, 20, 1, 3, 2, 1])),
        ("2d 1x1 K=136", prob(&[2, 1, 2, 136, 40, 1, 1, 5, 7, 1, 1, 1, 1, 0, 0, 0, 0])),
        ("3d 3x3x3", prob(&[3, 2, 1, 9, 10, 3, 3, 3, 4, 5, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])),
    ]
}

const WEIGHT_EPIS: [EpilogueOp; 3] = [EpilogueOp::PassThrough, EpilogueOp::Scale(0.5), EpilogueOp::Bilinear(0.75, -1.5)];
const SPLITS: [SplitK; 3] = [SplitK::Fixed(1), SplitK::Auto, SplitK::Fixed(3)];

/// Every TF32 backward-weight instance (forced), and the automatic choice,
/// on every problem: layouts, epilogues, split-K and init rotate.
fn weight_suite(arch: EmuArch) {
    let mut names: Vec<Option<&str>> = tf32_instances(Op::BwdWeight).into_iter().map(Some).collect();
    names.push(None);
    let n = names.len();
    sweep(&[arch], &problems(), n, |dev, module, at: At, name, p| {
        let instance = names[at.j];
        let cfg = BwdWeightConfig {
            layout: at.pick(&ConvLayout::ALL, 1, 1),
            types: TF32,
            epilogue: at.pick(&WEIGHT_EPIS, 1, 2),
            split_k: at.pick(&SPLITS, 2, 1),
            deterministic: at.pick(&[false, true], 1, 1),
            instance: instance.map(Into::into),
        };
        let case = vw::Case { problem: *p, config: cfg.clone(), seed: at.seed(4000, 31), init: at.pick(&INITS, 1, 1), timed_runs: 0, dump: false };
        let o = vw::run(dev, module, &case).unwrap_or_else(|e| panic!("{name}: {e}"));
        let ok = o.passed() && instance.is_none_or(|i| i == o.instance);
        (format!("{} {:?} {:?} -> {} kb={}: {}", cfg.layout.name(), cfg.epilogue, cfg.split_k, o.instance, o.k_batch, o.report.summary()), ok)
    });
}

/// The same for backward-data (with a fused bias + ReLU on some cases).
fn data_suite(arch: EmuArch) {
    let mut names: Vec<Option<&str>> = tf32_instances(Op::BwdData).into_iter().map(Some).collect();
    names.push(None);
    let n = names.len();
    sweep(&[arch], &problems(), n, |dev, module, at: At, name, p| {
        let instance = names[at.j];
        let epilogue = at.pick(&[vec![], vec![EpilogueOp::Scale(2.0)]], 1, 1);
        let cfg = BwdDataConfig { layout: at.pick(&ConvLayout::ALL, 1, 1), types: TF32, epilogue, instance: instance.map(Into::into), ..Default::default() };
        let case = vd::Case { problem: *p, config: cfg.clone(), seed: at.seed(5000, 31), init: at.pick(&INITS, 1, 1), alias_d0: false, timed_runs: 0, dump: false };
        let o = vd::run(dev, module, &case).unwrap_or_else(|e| panic!("{name}: {e}"));
        let ok = o.passed() && instance.is_none_or(|i| i == o.instance);
        (format!("{} {:?} -> {}: {}", cfg.layout.name(), cfg.epilogue, o.instance, o.report.summary()), ok)
    });
}

common::per_arch!(weight_suite; tf32_bwd_weight_sm90 => Sm90, tf32_bwd_weight_sm80 => Sm80);
common::per_arch!(data_suite; tf32_bwd_data_sm90 => Sm90, tf32_bwd_data_sm80 => Sm80);

/// `cvt.rna.tf32.f32` in this file's own words: to nearest, ties away from zero.
fn rna(v: f64) -> f64 {
    f32::from_bits((v as f32).to_bits().wrapping_add(0x1000) & !0x1fff) as f64
}

/// Operand values whose TF32 rounding each way differs: a tie (away from
/// zero gives `1 + 2^-10`, to even `1`), a negative tie, one below the tie,
/// one above, and exact ones.
fn tie_values(n: usize, seed: usize) -> Vec<f64> {
    let h = 2f64.powi(-11);
    let set = [1.0 + h, -(1.0 + h), 1.0 + h / 2.0, 2.0 + 3.0 * h, 3.0, -1.0, 1.0 + 3.0 * h];
    (0..n).map(|i| set[(i * 7 + seed + i / 5) % set.len()]).collect()
}
/// Small integers (exact in TF32).
fn small_ints(n: usize, seed: usize) -> Vec<f64> {
    (0..n).map(|i| ((i * 5 + seed) % 7) as f64 - 3.0).collect()
}

fn bytes(v: &[f64]) -> Vec<u8> {
    check::to_bytes(DType::F32, v)
}

/// Runs backward-weight with `types` on `x`, `dy`; returns dw's bytes.
fn run_weight(dev: &Device, p: &ConvProblem, types: TypeConfig, instance: Option<&str>, x: &[f64], dy: &[f64]) -> Vec<u8> {
    let cfg = BwdWeightConfig { types, split_k: SplitK::Fixed(1), instance: instance.map(Into::into), ..Default::default() };
    let op = BwdWeightOp::new(dev, p, &cfg).unwrap();
    let plan = op.plan();
    let (xb, dyb) = (dev.upload(&bytes(x)).unwrap(), dev.upload(&bytes(dy)).unwrap());
    let dw = dev.upload(&check::poisoned_bytes(DType::F32, plan.dw.span() as usize)).unwrap();
    let ws = dev.alloc::<u8>(op.workspace_bytes().max(16)).unwrap();
    let stream = dev.default_stream();
    op.execute_on(&stream, BwdWeightTensors { x: (&xb).into(), dy: (&dyb).into(), dw: (&dw).into(), ds: &[] }, Workspace::raw(&ws, WorkspaceContents::Zeroed))
        .unwrap();
    stream.synchronize().unwrap();
    dw.download().unwrap()
}

/// Runs backward-data with `types` on `dy`, `w`; returns dx's bytes.
fn run_data(dev: &Device, p: &ConvProblem, types: TypeConfig, instance: Option<&str>, dy: &[f64], w: &[f64]) -> Vec<u8> {
    let cfg = BwdDataConfig { types, instance: instance.map(Into::into), ..Default::default() };
    let op = BwdDataOp::new(dev, p, &cfg).unwrap();
    let plan = op.plan();
    let (dyb, wb) = (dev.upload(&bytes(dy)).unwrap(), dev.upload(&bytes(w)).unwrap());
    let dx = dev.upload(&check::poisoned_bytes(DType::F32, plan.dx.span() as usize)).unwrap();
    let stream = dev.default_stream();
    op.execute_on(&stream, BwdDataTensors { dy: (&dyb).into(), w: (&wb).into(), dx: (&dx).into(), ds: &[] }, Workspace::None).unwrap();
    stream.synchronize().unwrap();
    dx.download().unwrap()
}

/// Bitwise equal f32 outputs, else the count and the first difference.
fn assert_same(got: &[u8], want: &[u8], what: &str) {
    let (g, w) = (check::from_bytes(DType::F32, got), check::from_bytes(DType::F32, want));
    let diff: Vec<usize> = (0..g.len()).filter(|&i| g[i].to_bits() != w[i].to_bits()).collect();
    if let Some(&i) = diff.first() {
        panic!("{what}: {} of {} elements differ; first at {i}: {} instead of {}", diff.len(), g.len(), g[i], w[i]);
    }
}

/// The kernels multiply the operands rounded by `cvt.rna.tf32.f32`, bit for
/// bit: on inputs full of rounding ties, the TF32 result equals the exact
/// f32 kernel's on the inputs rounded to nearest with ties away (every sum
/// here is exact in f32, so the order does not matter), and differs from
/// the f32 kernel's on the unrounded inputs (and so from truncation or ties
/// to even, which give other values on these ties).
#[test]
fn tf32_operands_round_to_nearest_ties_away_bit_for_bit() {
    let p = prob(&[2, 2, 2, 24, 20, 3, 3, 6, 7, 1, 1, 1, 1, 1, 1, 1, 1]);
    let (mut seen_weight, mut seen_data) = (0, 0);
    for arch in [EmuArch::Sm90, EmuArch::Sm80] {
        let dev = Device::open(Backend::Emulator(arch), 0).expect("emulator");
        let wp = bwd_weight::plan(&p, &BwdWeightConfig { types: TF32, ..Default::default() }, dev.family(), dev.compute_units()).unwrap();
        let x = tie_values(wp.x.span() as usize, 1);
        let dy = small_ints(wp.dy.span() as usize, 2);
        let xr: Vec<f64> = x.iter().map(|&v| rna(v)).collect();
        for inst in tf32_instances(Op::BwdWeight) {
            let got = run_weight(&dev, &p, TF32, Some(inst), &x, &dy);
            let want = run_weight(&dev, &p, TypeConfig::F32, None, &xr, &dy);
            let unrounded = run_weight(&dev, &p, TypeConfig::F32, None, &x, &dy);
            assert_same(&got, &want, &format!("{arch:?} {inst}: dw is not the product of RNA-rounded operands"));
            assert_ne!(got, unrounded, "{arch:?} {inst}: the ties did not matter");
            seen_weight += 1;
        }
        let dp = bwd_data::plan(&p, &BwdDataConfig { types: TF32, ..Default::default() }, dev.family(), dev.compute_units()).unwrap();
        let dy = small_ints(dp.dy.span() as usize, 3);
        let w = tie_values(dp.w.span() as usize, 4);
        let wr: Vec<f64> = w.iter().map(|&v| rna(v)).collect();
        for inst in tf32_instances(Op::BwdData) {
            let got = run_data(&dev, &p, TF32, Some(inst), &dy, &w);
            let want = run_data(&dev, &p, TypeConfig::F32, None, &dy, &wr);
            let unrounded = run_data(&dev, &p, TypeConfig::F32, None, &dy, &w);
            assert_same(&got, &want, &format!("{arch:?} {inst}: dx is not the product of RNA-rounded operands"));
            assert_ne!(got, unrounded, "{arch:?} {inst}: the ties did not matter");
            seen_data += 1;
        }
    }
    assert!(seen_weight >= 4 && seen_data >= 4, "{seen_weight} {seen_data}");
}

/// Off NVIDIA, f32-tf32 is refused by name (no xf32 kernels yet), for both
/// operations, automatic or forced.
#[test]
fn tf32_is_refused_off_nvidia() {
    let p = prob(&[2, 1, 2, 64, 64, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1]);
    for family in [Family::Cdna, Family::Cdna4, Family::Rdna3, Family::Rdna4] {
        let e = bwd_weight::plan(&p, &BwdWeightConfig { types: TF32, ..Default::default() }, family, 100).unwrap_err().to_string();
        assert!(e.contains("f32-tf32 only on NVIDIA"), "{family:?}: {e}");
        let e = bwd_data::plan(&p, &BwdDataConfig { types: TF32, ..Default::default() }, family, 100).unwrap_err().to_string();
        assert!(e.contains("f32-tf32 only on NVIDIA"), "{family:?}: {e}");
        let cfg = BwdWeightConfig { types: TF32, instance: Some(tf32_instances(Op::BwdWeight)[0].into()), ..Default::default() };
        assert!(bwd_weight::plan(&p, &cfg, family, 100).is_err());
    }
}

/// f32 stays exact: on NVIDIA f32 never runs a TF32 (or any matrix)
/// instance, TF32 is only asked for by name; f32-tf32 is parsed
/// from its name and picks the TF32 GEMM tiles where f16 picks GEMM tiles,
/// the exact f32 kernels where f16 picks a direct one.
#[test]
fn f32_default_is_exact_and_tf32_opt_in() {
    // The defaults do not change (f16), and name no TF32.
    assert_eq!(BwdWeightConfig::default().types, TypeConfig::F16);
    assert_eq!(BwdDataConfig::default().types, TypeConfig::F16);
    assert_eq!(TypeConfig::parse("f32-tf32"), Some(TF32));
    assert!(!TypeConfig::ALL.contains(&TF32), "the suites' rotation stays on the types every family runs");
    let gemm = prob(&[2, 1, 8, 128, 96, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1]);
    let depthwise = prob(&[2, 32, 2, 1, 1, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1]);
    for family in [Family::Nvidia, Family::Hopper] {
        let name = |types, p: &ConvProblem, weight: bool| {
            if weight {
                bwd_weight::plan(p, &BwdWeightConfig { types, ..Default::default() }, family, 132).unwrap().main.instance.name
            } else {
                bwd_data::plan(p, &BwdDataConfig { types, ..Default::default() }, family, 132).unwrap().main.instance.name
            }
        };
        for weight in [true, false] {
            let f32_inst = convgrad::types::instance::find(name(TypeConfig::F32, &gemm, weight)).unwrap();
            assert_eq!(f32_inst.atom, AtomKind::Fma, "{family:?}: f32 runs {}", f32_inst.name);
            assert_eq!(f32_inst.types, TypeConfig::F32);
            let f16_inst = convgrad::types::instance::find(name(TypeConfig::F16, &gemm, weight)).unwrap();
            let tf32_inst = convgrad::types::instance::find(name(TF32, &gemm, weight)).unwrap();
            assert!(matches!(f16_inst.op, Op::BwdWeight | Op::BwdData | Op::BwdDataTapShift | Op::BwdWeightTapShift), "{}", f16_inst.name);
            assert_eq!((tf32_inst.types, tf32_inst.atom), (TF32, AtomKind::Mma16x8x8Tf32), "{}", tf32_inst.name);
            // Depthwise: f16 takes a direct/depthwise kernel; f32-tf32 the exact f32 one of that family.
            let f16_dw = convgrad::types::instance::find(name(TypeConfig::F16, &depthwise, weight)).unwrap();
            let tf32_dw = convgrad::types::instance::find(name(TF32, &depthwise, weight)).unwrap();
            assert_eq!((tf32_dw.op, tf32_dw.types), (f16_dw.op, TypeConfig::F32), "{} / {}", f16_dw.name, tf32_dw.name);
        }
    }
}

/// The written rule for f32-tf32: both f32 operands rounded to TF32
/// (`u_c = 2^-11`), exact products, f32 accumulation and output:
/// `e_p = (1 + 2^-11)^2 - 1`, everything else as f32's.
#[test]
fn tf32_tolerance_rule() {
    let p = prob(&[2, 1, 2, 70, 20, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1]);
    let u = 2f64.powi(-11);
    for t in [Tolerance::bwd_weight(TF32, &p, 1), Tolerance::bwd_data(TF32, &p)] {
        assert_eq!(t.compute, DType::Tf32);
        assert_eq!(t.out, DType::F32);
        assert!((t.product_err() - ((1.0 + u) * (1.0 + u) - 1.0)).abs() < 1e-18, "{}", t.product_err());
    }
    let exact = Tolerance::bwd_weight(TypeConfig::F32, &p, 1);
    assert!(exact.product_err() < 1e-7, "f32's rule is unchanged: {}", exact.product_err());
}
