//! Issue #38, property tests over seeded random inputs (the project's own
//! SplitMix64, so the cases repeat and need no new dependency): every
//! problem and descriptor either gives an error that names what is wrong,
//! or plans, runs on the emulator and matches the float64 reference. No
//! input may panic. Under a second on the emulator; `CONVGRAD_HOSTILE_CASES=N`
//! runs N descriptor cases instead of the default 400.

use convgrad::check::{self, Init, SplitMix64};
use convgrad::ops::bwd_data::{self, BwdDataConfig, BwdDataOp, BwdDataTensors};
use convgrad::ops::bwd_weight::{self, BwdWeightConfig, BwdWeightOp, BwdWeightTensors, SplitK};
use convgrad::ops::{OpError, Workspace, WorkspaceContents};
use convgrad::runtime::{Backend, Device, EmuArch};
use convgrad::types::{ConvLayout, ConvProblem, DType, TensorDesc, TensorRole, TypeConfig};

/// A size drawn mostly small, sometimes 0, sometimes huge (up to 2^63).
fn hostile_size(r: &mut SplitMix64) -> usize {
    match r.below(40) {
        0 => 0,
        1..=2 => 1 << r.range(20, 63),
        3 => usize::MAX - r.range(0, 3),
        _ => r.range(1, 9),
    }
}

/// CK arguments of a random problem with hostile sizes anywhere.
fn hostile_ck(r: &mut SplitMix64) -> Vec<usize> {
    let ndim = r.range(1, 3);
    let mut v = vec![ndim];
    v.extend((0..4 + 6 * ndim).map(|_| hostile_size(r)));
    v
}

/// `from_ck_args`, `supports` of both operations on every family and the
/// sizes of what parses: an error or a value, never a panic or a wrap.
#[test]
fn random_hostile_problems_never_panic() {
    let mut r = SplitMix64::new(38);
    let (mut ok, mut refused) = (0, 0);
    for _ in 0..3000 {
        let ck = hostile_ck(&mut r);
        let p = match ConvProblem::from_ck_args(&ck) {
            Ok(p) => p,
            Err(e) => {
                assert!(!e.to_string().is_empty(), "{ck:?}");
                refused += 1;
                continue;
            }
        };
        ok += 1;
        // A problem that parses has weights within 32-bit offsets (x and dy
        // past them are split along N and G by the plans, #38).
        assert!((1..1 << 31).contains(&p.weight_elems()), "{ck:?}");
        for v in [p.input_elems(), p.output_elems()] {
            assert!(v >= 1, "{ck:?}: {v}");
        }
        assert!(p.checked_flops().is_ok(), "{ck:?}");
        for arch in ["gfx942", "gfx1100", "sm_90"] {
            let _ = bwd_weight::supports(&p, &BwdWeightConfig::default(), arch);
            let _ = bwd_data::supports(&p, &BwdDataConfig::default(), arch);
        }
    }
    assert!(ok > 50 && refused > 50, "the draw covers both: {ok} parsed, {refused} refused");
}

/// A small random problem that parses.
fn small_problem(r: &mut SplitMix64) -> ConvProblem {
    loop {
        let ndim = r.range(1, 2);
        let mut v = vec![ndim, r.range(1, 3), r.range(1, 2), r.range(1, 9), r.range(1, 9)];
        let f: Vec<usize> = (0..ndim).map(|_| r.range(1, 3)).collect();
        let i: Vec<usize> = (0..ndim).map(|_| r.range(1, 7)).collect();
        v.extend(&f);
        v.extend(&i);
        v.extend((0..ndim).map(|_| r.range(1, 2)));
        v.extend((0..ndim).map(|_| r.range(1, 2)));
        v.extend((0..2 * ndim).map(|_| r.range(0, 1)));
        if let Ok(p) = ConvProblem::from_ck_args(&v) {
            return p;
        }
    }
}

/// The packed descriptor of `role`, then perturbed: one of a wrong length,
/// a zero stride, a random stride, a huge stride, an unused axis's stride,
/// or left packed.
fn perturbed(r: &mut SplitMix64, p: &ConvProblem, layout: ConvLayout, role: TensorRole) -> TensorDesc {
    let mut d = TensorDesc::packed(p, layout, role);
    let axis = r.range(0, 5);
    match r.below(10) {
        0 => d.lengths[axis] = d.lengths[axis].wrapping_add(r.range(1, 2)),
        1 => d.strides[axis] = 0,
        2 => d.strides[axis] = r.range(0, 64),
        3 => d.strides[axis] = 1 << r.range(31, 63),
        4 => d.strides[axis] = d.strides[axis] * 2 + 3,
        _ => {}
    }
    d
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

/// The error of a refused plan must name a tensor or field.
fn assert_named(e: &OpError, what: &str) {
    let s = e.to_string();
    let named = ["x", "dw", "dy", "w", "dx", "d0", "split_k", "grid", "G", "K", "C", "GEMM"].iter().any(|n| s.contains(n));
    assert!(named, "{what}: error names nothing: {s}");
}

/// Backward-weight: random problems, perturbed descriptors, random splits.
#[test]
fn random_bwd_weight_descriptors_refuse_or_match_the_reference() {
    let dev = emu();
    let mut r = SplitMix64::new(3801);
    let mut ran = 0;
    for case in 0..cases() {
        let p = small_problem(&mut r);
        let layout = ConvLayout::ALL[r.range(0, 3)];
        let split_k = match r.below(4) {
            0 => SplitK::Fixed(r.range(0, 5) as u32),
            1 => SplitK::Fixed(u32::MAX - r.range(0, 1) as u32),
            _ => SplitK::Auto,
        };
        let cfg = BwdWeightConfig { layout, types: TypeConfig::F16, split_k, ..Default::default() };
        let [x, dw, dy] = [TensorRole::Input, TensorRole::Weight, TensorRole::Output].map(|role| perturbed(&mut r, &p, layout, role));
        let what = format!("case {case}: {p} {layout:?} {split_k:?} x {x:?} dw {dw:?} dy {dy:?}");
        let op = match BwdWeightOp::with_descs(&dev, &p, &cfg, x, dw, dy) {
            Ok(op) => op,
            Err(e) => {
                assert_named(&e, &what);
                continue;
            }
        };
        let plan = op.plan();
        let ((xv, xb), (dyv, dyb)) = (f16s(2 * case as u64, plan.x.span()), f16s(2 * case as u64 + 1, plan.dy.span()));
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
        assert!(rep.passed(), "{what}: {} ; {}", op.describe(), rep.summary());
        ran += 1;
    }
    eprintln!("{ran} of {} cases ran on the emulator, the others were refused", cases());
    assert!(ran >= cases() / 8, "too few cases ran: {ran}");
}

/// Backward-data: random problems and perturbed descriptors.
#[test]
fn random_bwd_data_descriptors_refuse_or_match_the_reference() {
    let dev = emu();
    let mut r = SplitMix64::new(3802);
    let mut ran = 0;
    for case in 0..cases() {
        let p = small_problem(&mut r);
        let layout = ConvLayout::ALL[r.range(0, 3)];
        let cfg = BwdDataConfig { layout, types: TypeConfig::F16, ..Default::default() };
        let [dy, w, dx] = [TensorRole::Output, TensorRole::Weight, TensorRole::Input].map(|role| perturbed(&mut r, &p, layout, role));
        let what = format!("case {case}: {p} {layout:?} dy {dy:?} w {w:?} dx {dx:?}");
        let op = match BwdDataOp::with_descs(&dev, &p, &cfg, dy, w, dx) {
            Ok(op) => op,
            Err(e) => {
                assert_named(&e, &what);
                continue;
            }
        };
        let plan = op.plan();
        let ((dyv, dyb), (wv, wb)) = (f16s(2 * case as u64, plan.dy.span()), f16s(2 * case as u64 + 1, plan.w.span()));
        let (dybuf, wbuf) = (dev.upload(&dyb).unwrap(), dev.upload(&wb).unwrap());
        let dxbuf = dev.alloc::<u8>(plan.dx.span() as usize * 2).unwrap();
        dxbuf.fill_bytes(0xff).unwrap();
        let t = BwdDataTensors { dy: (&dybuf).into(), w: (&wbuf).into(), dx: (&dxbuf).into(), ds: &[] };
        op.execute_on(&dev.default_stream(), t).unwrap();
        dev.synchronize().unwrap();
        let dxv = check::from_bytes(DType::F16, &dxbuf.download().unwrap());
        let rep = convgrad::verify::bwd_data::judge(plan, &cfg, &dyv, &wv, &[], &dxv).report;
        assert!(rep.passed(), "{what}: {} ; {}", op.describe(), rep.summary());
        ran += 1;
    }
    eprintln!("{ran} of {} cases ran on the emulator, the others were refused", cases());
    assert!(ran >= cases() / 8, "too few cases ran: {ran}");
}
