//! Issue #38: the hostile inputs a caller can give the safe API, each refused
//! with an error naming the field (or run correctly), checked on the
//! emulator, which would otherwise report the out-of-bounds accesses these
//! inputs caused before. Each test fails without the checks it names.

use convgrad::check::{self, Init};
use convgrad::ops::bwd_data::{self, BwdDataConfig, BwdDataOp, BwdDataTensors};
use convgrad::ops::bwd_weight::{self, BwdWeightConfig, BwdWeightOp, BwdWeightTensors, SplitK, SplitKWorkspace};
use convgrad::ops::tuned::{Entry, Operation, Table};
use convgrad::ops::{OpError, PlanCache, Workspace, WorkspaceContents};
use convgrad::runtime::{Backend, Device, EmuArch};
use convgrad::types::instance::Family;
use convgrad::types::{ConvProblem, DType, DescError, TensorDesc, TensorRole, TypeConfig};

fn prob(v: &[usize]) -> ConvProblem {
    ConvProblem::from_ck_args(v).unwrap_or_else(|e| panic!("bad test problem {v:?}: {e}"))
}

fn emu() -> Device {
    Device::open(Backend::Emulator(EmuArch::Gfx942), 0).expect("emulator")
}

/// 2-D, G = 2, N = 2, K = 15, C = 8, 3x3 filter over 7x6, pad 1.
fn small() -> ConvProblem {
    prob(&[2, 2, 2, 15, 8, 3, 3, 7, 6, 1, 1, 1, 1, 1, 1, 1, 1])
}

/// The packed descriptors of `p` for `cfg`'s layout: x (dx), w (dw), dy.
fn packed(p: &ConvProblem, cfg_layout: convgrad::types::ConvLayout) -> [TensorDesc; 3] {
    [TensorRole::Input, TensorRole::Weight, TensorRole::Output].map(|r| TensorDesc::packed(p, cfg_layout, r))
}

/// `a^-1 mod 2^64` for odd `a` (Newton's iteration).
fn inverse_mod_2_64(a: u64) -> u64 {
    let mut inv = a;
    for _ in 0..6 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(inv)));
    }
    assert_eq!(a.wrapping_mul(inv), 1);
    inv
}

/// Asserts `e` is a layout error for `tensor` on `axis` whose text contains `what`.
fn assert_layout(e: &OpError, tensor: &str, axis: usize, what: &str) {
    let ok = matches!(e, OpError::Desc(DescError::Layout { tensor: t, axis: a, .. }) if *t == tensor && *a == axis);
    assert!(ok && e.to_string().contains(what), "want {tensor} axis {axis} `{what}`, got {e:?}: {e}");
}

/// A filter of 2^22 x 2^21 x 2^21 taps (2^64, wrapping to 0 in u64): refused
/// by name at construction; a problem built field by field past `new` is
/// refused by `supports` (no divide by zero) and by planning.
#[test]
fn sizes_past_64_bits_are_refused_by_name() {
    let (a, b) = (1usize << 22, 1usize << 21);
    // 3-D, G = N = K = C = 1, filter a x b x b over a 1^3 input padded by the filter.
    let ck = [3, 1, 1, 1, 1, a, b, b, 1, 1, 1, 1, 1, 1, 1, 1, 1, a, b, b, 0, 0, 0];
    let e = ConvProblem::from_ck_args(&ck).unwrap_err();
    assert!(matches!(e, DescError::Overflow { field } if field.starts_with("filter taps")), "{e:?}");
    assert!(e.to_string().contains("overflows 64 bits"), "{e}");
    // The input side: 2^22 x 2^21 x 2^21 input pixels.
    let ck = [3, 1, 1, 1, 1, 1, 1, 1, a, b, b, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0];
    let e = ConvProblem::from_ck_args(&ck).unwrap_err();
    assert!(matches!(e, DescError::Overflow { field } if field.starts_with("input pixels")), "{e:?}");

    // Public fields: a caller may skip `new`. Nothing wraps, nothing panics.
    let mut p = prob(&[3, 1, 1, 1, 1, 1, 1, 1, 4, 4, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]);
    p.filter = [a, b, b];
    p.lpads = [a, b, b];
    assert_eq!((p.weight_elems(), p.flops(), p.filter_taps()), (u64::MAX, u64::MAX, u64::MAX));
    assert!(p.checked_flops().is_err() && p.checked_weight_elems().is_err());
    for arch in ["gfx942", "gfx1100", "sm_90"] {
        let e = bwd_weight::supports(&p, &BwdWeightConfig::default(), arch).unwrap_err();
        assert!(e.to_string().contains("filter taps"), "{arch}: {e}");
        let e = bwd_data::supports(&p, &BwdDataConfig::default(), arch).unwrap_err();
        assert!(e.to_string().contains("filter taps"), "{arch}: {e}");
    }
    // A window larger than the padded input, and zeros, built by fields:
    // `output()` gives 0 for the axis, never an underflow panic.
    let mut q = small();
    q.filter[2] = 99;
    assert_eq!(q.output()[2], 0);
    assert!(matches!(q.checked_output(), Err(DescError::EmptyOutput { .. })));
    q.filter[2] = 0;
    q.strides[1] = 0;
    assert_eq!(q.output()[1..], [0, 0]);
    assert!(q.validate().is_err() && bwd_weight::supports(&q, &BwdWeightConfig::default(), "sm_90").is_err());
}

/// The x (dx) descriptor with every length 1 over a 1-element buffer, a dW
/// stride whose span wraps (15^-1 mod 2^64 on K), a dW stride of 0 on K or
/// one that overlaps C: refused when planned, by every planning entry point.
#[test]
fn descriptors_not_matching_the_problem_are_refused_at_plan() {
    let dev = emu();
    let p = small();
    let cfg = BwdWeightConfig::default();
    let [x, dw, dy] = packed(&p, cfg.layout);
    let ones = TensorDesc { lengths: [1; 6], strides: [1; 6] };
    assert_eq!(ones.span(), 1);
    let e = bwd_weight::plan_with(&p, &cfg, Family::Cdna, 304, ones, dw, dy).unwrap_err();
    assert_layout(&e, "x", 0, "length differs from the problem's");
    let e = BwdWeightOp::with_descs(&dev, &p, &cfg, ones, dw, dy).unwrap_err();
    assert_layout(&e, "x", 0, "length differs");
    let e = PlanCache::new().bwd_weight(&dev, &p, &cfg, ones, dw, dy).unwrap_err();
    assert_layout(&e, "x", 0, "length differs");

    // K = 15: (15 - 1) * 15^-1 wraps in u64 (the old span then passed the check).
    let inv = inverse_mod_2_64(15);
    let mut wraps = dw;
    wraps.strides[1] = inv as usize;
    assert_eq!(wraps.span(), u64::MAX, "span saturates, never wraps");
    let e = bwd_weight::plan_with(&p, &cfg, Family::Cdna, 304, x, wraps, dy).unwrap_err();
    assert_layout(&e, "dw", 1, "overflows 64 bits");
    // Outputs aliasing: stride 0 on K; K's stride equal to C's (1 in GKYXC).
    for (stride, what) in [(0, "stride 0"), (1, "written elements would alias")] {
        let mut alias = dw;
        alias.strides[1] = stride;
        let e = bwd_weight::plan_with(&p, &cfg, Family::Cdna, 304, x, alias, dy).unwrap_err();
        assert_layout(&e, "dw", 1, what);
    }
    // A span past 32-bit offsets on a read tensor through a stride past
    // them on G: the plan splits along G (#38), one group per launch, whose
    // view keeps no stride on G (the kernels take strides in 32 bits) and
    // starts 2^31 elements further.
    let mut far = x;
    far.strides[0] = 1 << 31;
    let plan = bwd_weight::plan_with(&p, &cfg, Family::Cdna, 304, far, dw, dy).expect("split along G");
    assert_eq!(plan.parts.len(), 2, "{}", plan.describe());
    for q in &plan.parts {
        assert!(q.plan.x.strides.iter().all(|&s| (s as u64) < 1 << 31), "{:?}", q.plan.x);
    }
    assert_eq!(plan.parts[1].offsets[0], 2 << 31, "f16 bytes of 2^31 elements");
    // The same stride on an axis the plans do not cut (C): refused.
    let mut far_c = x;
    far_c.strides[2] = 1 << 31;
    let e = bwd_weight::plan_with(&p, &cfg, Family::Cdna, 304, far_c, dw, dy).unwrap_err();
    assert_layout(&e, "x", 2, "stride past 2^31 - 1");
    // A huge stride on the unused z slot (length 1): the kernels scale it in
    // 32 bits (the emulator caught the overflow), so it is refused too.
    let mut z = x;
    z.strides[3] = 1 << 40;
    let e = bwd_weight::plan_with(&p, &cfg, Family::Cdna, 304, z, dw, dy).unwrap_err();
    assert_layout(&e, "x", 3, "stride past 2^31 - 1");

    // Backward-data: dx all ones, dx with a zero stride on N.
    let dcfg = BwdDataConfig::default();
    let e = bwd_data::plan_with(&p, &dcfg, Family::Cdna, 304, dy, dw, ones).unwrap_err();
    assert_layout(&e, "dx", 0, "length differs");
    let e = PlanCache::new().bwd_data(&dev, &p, &dcfg, dy, dw, ones).unwrap_err();
    assert_layout(&e, "dx", 0, "length differs");
    let mut alias = x;
    alias.strides[1] = 0;
    let e = BwdDataOp::with_descs(&dev, &p, &dcfg, dy, dw, alias).unwrap_err();
    assert_layout(&e, "dx", 1, "stride 0");
    // A read tensor may broadcast (stride 0): planned.
    let mut bcast = dy;
    bcast.strides[1] = 0;
    bwd_data::plan_with(&p, &dcfg, Family::Cdna, 304, bcast, dw, x).unwrap();
}

/// Split-K counts of 0 or past the grid, and tuning-table splits past it:
/// errors naming the field, not silently clamped.
#[test]
fn out_of_range_splits_are_errors() {
    let p = small();
    for (n, what) in [(0, "split_k = 0 is too small"), (u32::MAX, "split_k = 4294967295 is too large")] {
        let cfg = BwdWeightConfig { split_k: SplitK::Fixed(n), ..Default::default() };
        let e = bwd_weight::plan(&p, &cfg, Family::Hopper, 132).unwrap_err();
        assert!(e.to_string().contains(what), "{n}: {e}");
        assert!(bwd_weight::supports(&p, &cfg, "sm_90").is_err());
    }
    let cfg = BwdWeightConfig { split_k: SplitK::Fixed(bwd_weight::MAX_SPLIT_K), ..Default::default() };
    bwd_weight::plan(&p, &cfg, Family::Hopper, 132).unwrap();
    let entry = |split| Entry {
        op: Operation::BwdWeight,
        arch: "sm_90".into(),
        types: "f16".into(),
        problem: p.ck_args().map(|n| n.to_string()).collect::<Vec<_>>().join(" "),
        layout: "NHWGC".into(),
        deterministic: false,
        instance: "bwdw_direct_f16".into(),
        split: Some(split),
        compute_units: None,
        ms: None,
        hand_ms: None,
    };
    let text = Table { device: String::new(), entries: vec![entry(4_000_000_000)] }.to_json();
    let e = Table::from_json(&text, "hostile.json").unwrap_err().to_string();
    assert!(e.contains("hostile.json") && e.contains("split 4000000000"), "{e}");
    let text = Table { device: String::new(), entries: vec![entry(2)] }.to_json();
    Table::from_json(&text, "fine.json").unwrap();
    // The wrong operation's kernel.
    let text = Table { device: String::new(), entries: vec![Entry { instance: "bwdd_direct_f16".into(), ..entry(2) }] }.to_json();
    let e = Table::from_json(&text, "op.json").unwrap_err().to_string();
    assert!(e.contains("not a bwd-weight one"), "{e}");
}

/// Buffers that overlap where a call writes, and a tracked workspace of
/// another device: refused before any launch.
#[test]
fn overlapping_buffers_and_foreign_workspaces_are_refused() {
    let dev = emu();
    let other = emu();
    let p = small();
    let cfg = BwdWeightConfig { split_k: SplitK::Fixed(3), ..Default::default() };
    let op = BwdWeightOp::new(&dev, &p, &cfg).unwrap();
    let plan = op.plan();
    let bytes = |n: u64| n as usize * 2;
    let [x, dy, dw] = [plan.x.span(), plan.dy.span(), plan.dw.span()].map(|n| dev.alloc::<u8>(bytes(n)).unwrap());
    let big = dev.alloc::<u8>(bytes(plan.x.span() + plan.dw.span())).unwrap();
    // SAFETY: `big` outlives the wraps; every call below is refused before a launch.
    let x_in_big = unsafe { dev.wrap_foreign::<u8>(big.device_addr(), bytes(plan.x.span())) }.unwrap();
    let dw_in_big = unsafe { dev.wrap_foreign::<u8>(big.device_addr() + 2, bytes(plan.dw.span())) }.unwrap();
    let stream = dev.default_stream();
    let ws = dev.alloc::<u8>(op.workspace_bytes()).unwrap();
    let t = BwdWeightTensors { x: (&x_in_big).into(), dy: (&dy).into(), dw: (&dw_in_big).into(), ds: &[] };
    let e = op.execute_on(&stream, t, Workspace::raw(&ws, WorkspaceContents::Unknown)).unwrap_err();
    assert!(matches!(e, OpError::Desc(DescError::Overlap { written: "dw", other: "x" })), "{e}");
    // The workspace over the end of dw (16-byte aligned, as it must be).
    let combo = dev.alloc::<u8>(dw.len() + op.workspace_bytes() + 16).unwrap();
    let dw_c = unsafe { dev.wrap_foreign::<u8>(combo.device_addr(), dw.len()) }.unwrap();
    let ws_c = unsafe { dev.wrap_foreign::<u8>(combo.device_addr() + 16, op.workspace_bytes()) }.unwrap();
    let t = BwdWeightTensors { x: (&x).into(), dy: (&dy).into(), dw: (&dw_c).into(), ds: &[] };
    let e = op.execute_on(&stream, t, Workspace::raw(&ws_c, WorkspaceContents::Unknown)).unwrap_err();
    assert!(matches!(e, OpError::Desc(DescError::Overlap { written: "workspace", other: "dw" })), "{e}");
    // A tracked workspace of another device (only raw ones were checked).
    let foreign = SplitKWorkspace::for_plan(&other, plan).unwrap().expect("a split plan has a workspace");
    let t = BwdWeightTensors { x: (&x).into(), dy: (&dy).into(), dw: (&dw).into(), ds: &[] };
    let e = op.execute_on(&stream, t, Workspace::Tracked(&foreign)).unwrap_err();
    assert!(e.to_string().contains("workspace belongs to another device"), "{e}");
    assert!(dev.last_emulator_report().is_none(), "nothing may have launched");
    drop((x_in_big, dw_in_big, dw_c, ws_c));

    // Backward-data: dy inside dx.
    let dop = BwdDataOp::new(&dev, &p, &BwdDataConfig::default()).unwrap();
    let dplan = dop.plan();
    let (dx_bytes, dy_bytes) = (bytes(dplan.dx.span()), bytes(dplan.dy.span()));
    let w = dev.alloc::<u8>(bytes(dplan.w.span())).unwrap();
    let combo = dev.alloc::<u8>(dx_bytes + dy_bytes).unwrap();
    combo.fill_bytes(0).unwrap();
    w.fill_bytes(0).unwrap();
    let dx = unsafe { dev.wrap_foreign::<u8>(combo.device_addr(), dx_bytes) }.unwrap();
    let dy_on_dx = unsafe { dev.wrap_foreign::<u8>(combo.device_addr() + dx_bytes as u64 - 2, dy_bytes) }.unwrap();
    let t = BwdDataTensors { dy: (&dy_on_dx).into(), w: (&w).into(), dx: (&dx).into(), ds: &[] };
    let e = dop.execute_on(&stream, t, Workspace::None).unwrap_err();
    assert!(matches!(e, OpError::Desc(DescError::Overlap { written: "dx", other: "dy" })), "{e}");
    // One byte further they are apart: the call runs.
    let dy_apart = unsafe { dev.wrap_foreign::<u8>(combo.device_addr() + dx_bytes as u64, dy_bytes) }.unwrap();
    assert!(dev.last_emulator_report().is_none(), "nothing may have launched");
    dx.fill_bytes(0xff).unwrap();
    let t = BwdDataTensors { dy: (&dy_apart).into(), w: (&w).into(), dx: (&dx).into(), ds: &[] };
    dop.execute_on(&stream, t, Workspace::None).unwrap();
    stream.synchronize().unwrap();
    assert!(dev.last_emulator_report().is_some(), "it launched");
    assert!(dx.download().unwrap().iter().all(|&b| b == 0), "dx = conv(0, 0) written whole");
}

/// Valid descriptors keep running: a strided dW (K rows padded) and a
/// strided dx match the reference on the emulator.
#[test]
fn valid_strided_descriptors_still_run_correctly() {
    let dev = emu();
    let p = small();
    let cfg = BwdWeightConfig { types: TypeConfig::F16, ..Default::default() };
    let [x, dw, dy] = packed(&p, cfg.layout);
    let mut padded = dw;
    padded.strides[1] += 8; // a gap after each K row of C * taps
    padded.strides[0] = padded.strides[1] * p.k;
    let op = BwdWeightOp::with_descs(&dev, &p, &cfg, x, padded, dy).unwrap();
    let plan = op.plan();
    let fill = |seed, n: u64| check::fill_random(seed, Init::Float, DType::F16, n as usize);
    let (xv, dyv) = (fill(1, plan.x.span()), fill(2, plan.dy.span()));
    let xb = dev.upload(&check::to_bytes(DType::F16, &xv)).unwrap();
    let dyb = dev.upload(&check::to_bytes(DType::F16, &dyv)).unwrap();
    let dwb = dev.alloc::<u8>(plan.dw.span() as usize * 2).unwrap();
    dwb.fill_bytes(0xff).unwrap();
    let ws = dev.alloc::<u8>(op.workspace_bytes()).unwrap();
    let stream = dev.default_stream();
    let t = BwdWeightTensors { x: (&xb).into(), dy: (&dyb).into(), dw: (&dwb).into(), ds: &[] };
    op.execute_on(&stream, t, Workspace::raw(&ws, WorkspaceContents::Unknown)).unwrap();
    stream.synchronize().unwrap();
    let dwv = check::from_bytes(DType::F16, &dwb.download().unwrap());
    let r = convgrad::verify::bwd_weight::judge(plan, &cfg, &xv, &dyv, &[], &dwv).report;
    assert!(r.passed(), "{}: {}", op.describe(), r.summary());
}
