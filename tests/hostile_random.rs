//! Issue #38, property tests (proptest) over random problems and
//! descriptors: every problem and descriptor either gives an error that
//! names what is wrong, or plans, runs on the emulator and matches the
//! float64 reference. No input may panic. A failing case is shrunk to a
//! small one. Each run draws fresh cases from a new seed, printed at the
//! start (`CONVGRAD_PROPTEST_SEED=N` repeats a run);
//! `CONVGRAD_HOSTILE_CASES=N` runs N descriptor cases instead of the
//! default 400 (under a second each test on the emulator).

use convgrad::check::{self, Init};
use convgrad::ops::bwd_data::{self, BwdDataConfig, BwdDataOp, BwdDataTensors};
use convgrad::ops::bwd_weight::{self, BwdWeightConfig, BwdWeightOp, BwdWeightTensors, SplitK};
use convgrad::ops::{OpError, Workspace, WorkspaceContents};
use convgrad::runtime::{Backend, Device, EmuArch};
use convgrad::types::{ConvLayout, ConvProblem, DType, TensorDesc, TensorRole, TypeConfig};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use std::cell::Cell;

/// A runner of `cases` cases on a fresh seed (or `CONVGRAD_PROPTEST_SEED`'s), printed.
fn runner(test: &str, cases: usize) -> TestRunner {
    let seed = std::env::var("CONVGRAD_PROPTEST_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        (t as u64) ^ ((t >> 64) as u64) ^ std::process::id() as u64
    });
    eprintln!("{test}: proptest seed {seed} (CONVGRAD_PROPTEST_SEED={seed} repeats it)");
    let mut bytes = [0u8; 32];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (seed.rotate_left(8 * (i as u32 % 8)) ^ (i as u64 * 0x9e37_79b9)) as u8;
    }
    let config = Config { cases: cases as u32, failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

/// Runs `test` over `strategy` and fails with the shrunk case.
fn check<S: Strategy>(mut r: TestRunner, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>) {
    if let Err(e) = r.run(&strategy, test) {
        panic!("{e}");
    }
}

/// A size drawn mostly small, sometimes 0, sometimes huge (up to 2^63).
fn hostile_size() -> impl Strategy<Value = usize> {
    prop_oneof![
        36 => 1usize..=9,
        1 => Just(0usize),
        2 => (20u32..63).prop_map(|s| 1usize << s),
        1 => (0usize..=3).prop_map(|d| usize::MAX - d),
    ]
}

/// CK arguments of a random problem with hostile sizes anywhere.
fn hostile_ck() -> impl Strategy<Value = Vec<usize>> {
    (1usize..=3).prop_flat_map(|ndim| prop::collection::vec(hostile_size(), 4 + 6 * ndim).prop_map(move |v| [vec![ndim], v].concat()))
}

/// `from_ck_args`, `supports` of both operations on every family and the
/// sizes of what parses: an error or a value, never a panic or a wrap.
#[test]
fn random_hostile_problems_never_panic() {
    let (ok, refused) = (Cell::new(0), Cell::new(0));
    check(runner("hostile problems", 3000), hostile_ck(), |ck| {
        let p = match ConvProblem::from_ck_args(&ck) {
            Ok(p) => p,
            Err(e) => {
                prop_assert!(!e.to_string().is_empty(), "{ck:?}");
                refused.set(refused.get() + 1);
                return Ok(());
            }
        };
        ok.set(ok.get() + 1);
        // A problem that parses has weights within 32-bit offsets (x and dy
        // past them are split by the plans, #38).
        prop_assert!((1..1 << 31).contains(&p.weight_elems()), "{ck:?}");
        for v in [p.input_elems(), p.output_elems()] {
            prop_assert!(v >= 1, "{ck:?}: {v}");
        }
        prop_assert!(p.checked_flops().is_ok(), "{ck:?}");
        for arch in ["gfx942", "gfx1100", "sm_90"] {
            let _ = bwd_weight::supports(&p, &BwdWeightConfig::default(), arch);
            let _ = bwd_data::supports(&p, &BwdDataConfig::default(), arch);
        }
        Ok(())
    });
    let (ok, refused) = (ok.get(), refused.get());
    assert!(ok > 50 && refused > 50, "the draw covers both: {ok} parsed, {refused} refused");
}

/// A small random problem that parses.
fn small_problem() -> impl Strategy<Value = ConvProblem> {
    (1usize..=2)
        .prop_flat_map(|ndim| {
            let head = (1usize..=3, 1usize..=2, 1usize..=9, 1usize..=9);
            let dims = |lo: usize, hi: usize| prop::collection::vec(lo..=hi, ndim);
            (head, dims(1, 3), dims(1, 7), dims(1, 2), dims(1, 2), prop::collection::vec(0usize..=1, 2 * ndim)).prop_map(
                move |((g, n, k, c), f, i, s, d, pads)| [vec![ndim, g, n, k, c], f, i, s, d, pads].concat(),
            )
        })
        .prop_filter_map("a problem that parses", |v| ConvProblem::from_ck_args(&v).ok())
}

/// How a descriptor is perturbed: `(kind, axis, value)` (see [`perturbed`]).
type Perturb = (u8, usize, usize);

fn perturb() -> impl Strategy<Value = Perturb> {
    (0u8..10, 0usize..=5, any::<usize>())
}

/// The packed descriptor of `role`, then perturbed by `(kind, axis, v)`:
/// one of a wrong length, a zero stride, a random stride, a huge stride, an
/// unused axis's stride, or left packed.
fn perturbed(p: &ConvProblem, layout: ConvLayout, role: TensorRole, (kind, axis, v): Perturb) -> TensorDesc {
    let mut d = TensorDesc::packed(p, layout, role);
    match kind {
        0 => d.lengths[axis] = d.lengths[axis].wrapping_add(1 + v % 2),
        1 => d.strides[axis] = 0,
        2 => d.strides[axis] = v % 65,
        3 => d.strides[axis] = 1 << (31 + v % 33),
        4 => d.strides[axis] = d.strides[axis] * 2 + 3,
        _ => {}
    }
    d
}

fn layout() -> impl Strategy<Value = ConvLayout> {
    (0usize..=3).prop_map(|i| ConvLayout::ALL[i])
}

fn emu() -> Device {
    Device::open(Backend::Emulator(EmuArch::Gfx942), 0).expect("emulator")
}

fn cases() -> usize {
    std::env::var("CONVGRAD_HOSTILE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400)
}

/// f16 values and bytes of `n` random elements.
fn f16s(seed: u64, n: u64) -> (Vec<f64>, Vec<u8>) {
    let v = check::fill_random(seed, Init::Float, DType::F16, n as usize);
    let b = check::to_bytes(DType::F16, &v);
    (v, b)
}

/// Whether a tensor spans more than this test allocates (2^22 elements):
/// such plans are checked, not run.
fn too_big(descs: &[&TensorDesc]) -> bool {
    descs.iter().any(|d| d.span() > 1 << 22)
}

/// The error of a refused plan must name a tensor or field.
fn assert_named(e: &OpError, what: &str) -> Result<(), TestCaseError> {
    let s = e.to_string();
    let named = ["x", "dw", "dy", "w", "dx", "d0", "split_k", "grid", "G", "K", "C", "GEMM"].iter().any(|n| s.contains(n));
    prop_assert!(named, "{what}: error names nothing: {s}");
    Ok(())
}

/// Backward-weight: random problems, perturbed descriptors, random splits.
#[test]
fn random_bwd_weight_descriptors_refuse_or_match_the_reference() {
    let dev = emu();
    let ran = Cell::new(0);
    let split = prop_oneof![(0u32..=5).prop_map(SplitK::Fixed), (0u32..=1).prop_map(|d| SplitK::Fixed(u32::MAX - d)), Just(SplitK::Auto), Just(SplitK::Auto)];
    let strategy = (small_problem(), layout(), split, [perturb(), perturb(), perturb()], any::<u64>());
    check(runner("bwd-weight descriptors", cases()), strategy, |(p, layout, split_k, [px, pdw, pdy], seed)| {
        let cfg = BwdWeightConfig { layout, types: TypeConfig::F16, split_k, ..Default::default() };
        let (x, dw, dy) = (perturbed(&p, layout, TensorRole::Input, px), perturbed(&p, layout, TensorRole::Weight, pdw), perturbed(&p, layout, TensorRole::Output, pdy));
        let what = format!("{p} {layout:?} {split_k:?} x {x:?} dw {dw:?} dy {dy:?}");
        let op = match BwdWeightOp::with_descs(&dev, &p, &cfg, x, dw, dy) {
            Ok(op) => op,
            Err(e) => return assert_named(&e, &what),
        };
        let plan = op.plan();
        if too_big(&[&plan.x, &plan.dy, &plan.dw]) {
            // A strided view of a huge buffer (a stride past 2^31 on G or N):
            // planned as split launches, each within 32-bit offsets.
            prop_assert!(!plan.parts.is_empty(), "{what}: {}", op.describe());
            return Ok(());
        }
        let ((xv, xb), (dyv, dyb)) = (f16s(seed, plan.x.span()), f16s(seed ^ 1, plan.dy.span()));
        let (xbuf, dybuf) = (dev.upload(&xb).unwrap(), dev.upload(&dyb).unwrap());
        let dwbuf = dev.alloc::<u8>(plan.dw.span() as usize * 2).unwrap();
        dwbuf.fill_bytes(0xff).unwrap();
        let ws = dev.alloc::<u8>(op.workspace_bytes()).unwrap();
        let t = BwdWeightTensors { x: (&xbuf).into(), dy: (&dybuf).into(), dw: (&dwbuf).into(), ds: &[] };
        op.execute_on(&dev.default_stream(), t, Workspace::raw(&ws, WorkspaceContents::Unknown)).unwrap();
        dev.synchronize().unwrap();
        // Elements outside the descriptor stay poisoned; the judge reads the tensor's own.
        let dwv = check::from_bytes(DType::F16, &dwbuf.download().unwrap());
        let rep = convgrad::verify::bwd_weight::judge(plan, &cfg, &xv, &dyv, &[], &dwv).report;
        prop_assert!(rep.passed(), "{what}: {} ; {}", op.describe(), rep.summary());
        ran.set(ran.get() + 1);
        Ok(())
    });
    let ran = ran.get();
    eprintln!("{ran} of {} cases ran on the emulator, the others were refused", cases());
    assert!(ran >= cases() / 8, "too few cases ran: {ran}");
}

/// Backward-data: random problems and perturbed descriptors.
#[test]
fn random_bwd_data_descriptors_refuse_or_match_the_reference() {
    let dev = emu();
    let ran = Cell::new(0);
    let strategy = (small_problem(), layout(), [perturb(), perturb(), perturb()], any::<u64>());
    check(runner("bwd-data descriptors", cases()), strategy, |(p, layout, [pdy, pw, pdx], seed)| {
        let cfg = BwdDataConfig { layout, types: TypeConfig::F16, ..Default::default() };
        let (dy, w, dx) = (perturbed(&p, layout, TensorRole::Output, pdy), perturbed(&p, layout, TensorRole::Weight, pw), perturbed(&p, layout, TensorRole::Input, pdx));
        let what = format!("{p} {layout:?} dy {dy:?} w {w:?} dx {dx:?}");
        let op = match BwdDataOp::with_descs(&dev, &p, &cfg, dy, w, dx) {
            Ok(op) => op,
            Err(e) => return assert_named(&e, &what),
        };
        let plan = op.plan();
        if too_big(&[&plan.dy, &plan.w, &plan.dx]) {
            prop_assert!(!plan.parts.is_empty(), "{what}: {}", op.describe());
            return Ok(());
        }
        let ((dyv, dyb), (wv, wb)) = (f16s(seed, plan.dy.span()), f16s(seed ^ 1, plan.w.span()));
        let (dybuf, wbuf) = (dev.upload(&dyb).unwrap(), dev.upload(&wb).unwrap());
        let dxbuf = dev.alloc::<u8>(plan.dx.span() as usize * 2).unwrap();
        dxbuf.fill_bytes(0xff).unwrap();
        let t = BwdDataTensors { dy: (&dybuf).into(), w: (&wbuf).into(), dx: (&dxbuf).into(), ds: &[] };
        // Odd K packs dy and w into a workspace first (poisoned: the copies write all of it).
        let wsbuf = dev.alloc::<u8>(op.workspace_bytes().max(16)).unwrap();
        wsbuf.fill_bytes(0xff).unwrap();
        op.execute_on(&dev.default_stream(), t, Workspace::raw(&wsbuf, WorkspaceContents::Unknown)).unwrap();
        dev.synchronize().unwrap();
        let dxv = check::from_bytes(DType::F16, &dxbuf.download().unwrap());
        let rep = convgrad::verify::bwd_data::judge(plan, &cfg, &dyv, &wv, &[], &dxv).report;
        prop_assert!(rep.passed(), "{what}: {} ; {}", op.describe(), rep.summary());
        ran.set(ran.get() + 1);
        Ok(())
    });
    let ran = ran.get();
    eprintln!("{ran} of {} cases ran on the emulator, the others were refused", cases());
    assert!(ran >= cases() / 8, "too few cases ran: {ran}");
}
