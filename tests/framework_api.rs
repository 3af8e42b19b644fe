//! The framework-facing API: prepared operations run on the caller's stream
//! with the caller's memory and workspace, the plan cache, typed
//! "unsupported" reasons, and ordering against work the caller queued before
//! and after. The ordering tests run on CUDA when a GPU is present (the
//! device machine) and on the emulator everywhere.

use convgrad::check::{self, Init};
use convgrad::ops::bwd_data::{BwdDataConfig, BwdDataOp, BwdDataTensors};
use convgrad::ops::bwd_weight::{self, BwdWeightConfig, BwdWeightOp, BwdWeightPlan, BwdWeightTensors, SplitK};
use convgrad::ops::{OpError, PlanCache, Unsupported, Workspace, WorkspaceContents};
use convgrad::runtime::{Backend, Device, EmuArch, RuntimeError};
use convgrad::types::{ConvProblem, DType, DescError, EpilogueOp, TypeConfig};

fn prob(v: &[usize]) -> ConvProblem {
    ConvProblem::from_ck_args(v).unwrap_or_else(|e| panic!("bad test problem {v:?}: {e}"))
}

fn emu() -> Device {
    Device::open(Backend::Emulator(EmuArch::Gfx942), 0).expect("emulator")
}

/// f16 inputs of a bwd-weight plan, fresh per seed, as f64 values and f16 bytes.
fn inputs(plan: &BwdWeightPlan, seed: u64) -> [(Vec<f64>, Vec<u8>); 2] {
    [(1, plan.x.span()), (2, plan.dy.span())].map(|(s, n)| {
        let v = check::fill_random(seed * 7 + s, Init::Float, DType::F16, n as usize);
        let b = check::to_bytes(DType::F16, &v);
        (v, b)
    })
}

/// Judges a downloaded f16 `dw` against the float64 reference with the written rule.
fn judge(plan: &BwdWeightPlan, x: &[f64], dy: &[f64], dw_bytes: &[u8]) -> check::ErrorReport {
    let cfg = BwdWeightConfig { types: TypeConfig::F16, ..Default::default() };
    let dw = check::from_bytes(DType::F16, dw_bytes);
    convgrad::verify::bwd_weight::judge(plan, &cfg, x, dy, &[], &dw).report
}

/// Foreign memory (allocated outside convgrad's buffers), a created stream,
/// a raw workspace in either state: every call checked against the reference.
#[test]
fn execute_on_caller_stream_memory_and_workspace() {
    let dev = emu();
    let p = prob(&[2, 2, 2, 16, 8, 3, 3, 7, 6, 1, 1, 1, 1, 1, 1, 1, 1]);
    for (seed, deterministic) in [(1, false), (2, true), (3, false)] {
        let cfg = BwdWeightConfig { split_k: SplitK::Fixed(3), deterministic, ..Default::default() };
        let op = BwdWeightOp::new(&dev, &p, &cfg).unwrap();
        assert!(op.plan().k_batch > 1 && op.workspace_bytes() > 0, "{}", op.describe());
        let [(x, xb), (dy, dyb)] = inputs(op.plan(), seed);
        // The "framework's" memory: allocations it owns, wrapped with their lengths.
        let owner = [xb.len(), dyb.len(), op.plan().dw.span() as usize * 2, op.workspace_bytes()]
            .map(|n| dev.alloc::<u8>(n).unwrap());
        owner[0].upload(&xb).unwrap();
        owner[1].upload(&dyb).unwrap();
        owner[2].fill_bytes(0xff).unwrap();
        owner[3].fill_bytes(0x5a).unwrap(); // garbage: contents Unknown
        // SAFETY: the owners outlive the wrappers and the synchronous emulator launches.
        let [xw, dyw, dww, ws] = owner.each_ref().map(|b| unsafe { dev.wrap_foreign::<u8>(b.device_addr(), b.len()) }.unwrap());
        assert!(!xw.is_owned());
        let stream = dev.create_stream().unwrap();
        let t = BwdWeightTensors { x: (&xw).into(), dy: (&dyw).into(), dw: (&dww).into(), ds: &[] };
        op.execute_on(&stream, t, Workspace::raw(&ws, WorkspaceContents::Unknown)).unwrap();
        stream.synchronize().unwrap();
        let r = judge(op.plan(), &x, &dy, &dww.download().unwrap());
        assert!(r.passed(), "{} deterministic={deterministic}: {}", op.describe(), r.summary());
        // A non-deterministic call leaves the workspace zero: the next may say so.
        let left = ws.download().unwrap();
        let counters_zero = left[op.plan().partial_elems * 4..].iter().all(|&b| b == 0);
        assert!(counters_zero, "arrival counters not reset");
        if !deterministic {
            assert!(left.iter().all(|&b| b == 0), "atomic call left non-zero partials");
            dww.fill_bytes(0xff).unwrap();
            op.execute_on(&stream, t, Workspace::raw(&ws, WorkspaceContents::Zeroed)).unwrap();
            let r = judge(op.plan(), &x, &dy, &dww.download().unwrap());
            assert!(r.passed(), "second call on a Zeroed workspace: {}", r.summary());
        }
    }
    drop(dev);
}

/// The checks before a launch: lengths of foreign memory, devices, workspace size and alignment.
#[test]
fn bad_buffers_streams_and_workspaces_are_refused() {
    let dev = emu();
    let other = emu();
    let p = prob(&[2, 2, 2, 16, 8, 3, 3, 7, 6, 1, 1, 1, 1, 1, 1, 1, 1]);
    let cfg = BwdWeightConfig { split_k: SplitK::Fixed(3), ..Default::default() };
    let op = BwdWeightOp::new(&dev, &p, &cfg).unwrap();
    let plan = op.plan();
    let a = dev.alloc::<u8>(4096).unwrap();
    // SAFETY (all wraps below): `a` is live; the calls are refused before any launch.
    let e = unsafe { dev.wrap_foreign::<u8>(a.device_addr() + 16, 4096) }.unwrap_err();
    assert!(matches!(e, RuntimeError::ForeignMemory(_)) && e.to_string().contains("past the end"), "{e}");
    let e = unsafe { dev.wrap_foreign::<f32>(a.device_addr() + 2, 4) }.unwrap_err();
    assert!(e.to_string().contains("not aligned"), "{e}");
    let e = unsafe { dev.wrap_foreign::<u8>(8, 4) }.unwrap_err();
    assert!(e.to_string().contains("not device memory"), "{e}");

    let bytes = |n: u64| n as usize * 2;
    let x = dev.alloc::<u8>(bytes(plan.x.span())).unwrap();
    let dy = dev.alloc::<u8>(bytes(plan.dy.span())).unwrap();
    let dw = dev.alloc::<u8>(bytes(plan.dw.span())).unwrap();
    let short = dev.alloc::<u8>(bytes(plan.dy.span()) - 2).unwrap();
    let ws = dev.alloc::<u8>(op.workspace_bytes()).unwrap();
    let stream = dev.default_stream();
    let t = BwdWeightTensors { x: (&x).into(), dy: (&short).into(), dw: (&dw).into(), ds: &[] };
    let e = op.execute_on(&stream, t, Workspace::raw(&ws, WorkspaceContents::Unknown)).unwrap_err();
    assert!(e.to_string().contains("tensor dy"), "{e}");
    let t = BwdWeightTensors { x: (&x).into(), dy: (&dy).into(), dw: (&dw).into(), ds: &[] };
    let e = op.execute_on(&stream, t, Workspace::None).unwrap_err();
    assert!(e.to_string().starts_with("workspace: bwd-weight needs"), "{e}");
    let small = dev.alloc::<u8>(op.workspace_bytes() - 4).unwrap();
    let e = op.execute_on(&stream, t, Workspace::raw(&small, WorkspaceContents::Zeroed)).unwrap_err();
    assert!(e.to_string().contains(&format!("needs {} bytes", op.workspace_bytes())), "{e}");
    let odd = unsafe { dev.wrap_foreign::<u8>(a.device_addr() + 8, op.workspace_bytes().min(4000)) }.unwrap();
    if op.workspace_bytes() <= 4000 {
        let e = op.execute_on(&stream, t, Workspace::raw(&odd, WorkspaceContents::Zeroed)).unwrap_err();
        assert!(e.to_string().contains("16-byte aligned"), "{e}");
    }
    // Another device's buffer or stream.
    let foreign_x = other.alloc::<u8>(bytes(plan.x.span())).unwrap();
    let t2 = BwdWeightTensors { x: (&foreign_x).into(), ..t };
    let e = op.execute_on(&stream, t2, Workspace::raw(&ws, WorkspaceContents::Unknown)).unwrap_err();
    assert!(e.to_string().contains("x belongs to another device"), "{e}");
    let e = op.execute_on(&other.default_stream(), t, Workspace::raw(&ws, WorkspaceContents::Unknown)).unwrap_err();
    assert!(e.to_string().contains("stream belongs to another device"), "{e}");
    // Nothing above launched: dw is still unwritten (the emulator would have marked it).
    assert!(dev.last_emulator_report().is_none());
}

/// The cache returns the prepared op it made for the same request and a new
/// one for any difference; `supports` gives typed reasons without a device.
#[test]
fn plan_cache_and_typed_unsupported_reasons() {
    let dev = Device::shared(Backend::Emulator(EmuArch::Gfx1100), 0).unwrap();
    assert!(dev.same_device(&Device::shared(Backend::Emulator(EmuArch::Gfx1100), 0).unwrap()));
    let cache = PlanCache::new();
    let p = prob(&[2, 2, 2, 16, 8, 3, 3, 7, 6, 1, 1, 1, 1, 1, 1, 1, 1]);
    let cfg = BwdWeightConfig::default();
    let d = |r| convgrad::types::TensorDesc::packed(&p, cfg.layout, r);
    use convgrad::types::TensorRole::{Input, Output, Weight};
    let a = cache.bwd_weight(&dev, &p, &cfg, d(Input), d(Weight), d(Output)).unwrap();
    let b = cache.bwd_weight(&dev, &p, &cfg, d(Input), d(Weight), d(Output)).unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    let scaled = BwdWeightConfig { epilogue: EpilogueOp::Scale(0.5), ..cfg.clone() };
    let c = cache.bwd_weight(&dev, &p, &scaled, d(Input), d(Weight), d(Output)).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&a, &c));
    let dcfg = BwdDataConfig::default();
    cache.bwd_data(&dev, &p, &dcfg, d(Output), d(Weight), d(Input)).unwrap();
    assert_eq!(cache.len(), 3);
    cache.clear();
    assert!(cache.is_empty());

    assert_eq!(bwd_weight::supports(&p, &cfg, "gfx942"), Ok(()));
    assert!(matches!(bwd_weight::supports(&p, &cfg, "gfx1030"), Err(Unsupported::Arch { .. })));
    let relu = BwdWeightConfig { epilogue: EpilogueOp::AddRelu, ..cfg.clone() };
    let e = bwd_weight::supports(&p, &relu, "sm_90").unwrap_err();
    assert!(matches!(e, Unsupported::Problem(DescError::Unsupported { field: "epilogue", .. })), "{e}");
    let forced = BwdWeightConfig { instance: Some("bwdw_f16_64x64x32_wmma16".into()), ..cfg.clone() };
    let e = bwd_weight::supports(&p, &forced, "gfx942").unwrap_err();
    assert!(matches!(e, Unsupported::Instance { .. }) && e.to_string().contains("does not apply"), "{e}");
    let e = BwdWeightOp::new(&dev, &p, &relu).unwrap_err();
    assert!(e.is_unsupported(), "{e}");
    assert!(matches!(e, OpError::Desc(_)));
    assert_eq!(convgrad::ops::bwd_data::supports(&p, &dcfg, "sm_80"), Ok(()));
}

/// Backward-data on a created stream with foreign memory, against the reference.
#[test]
fn bwd_data_execute_on_caller_stream() {
    let dev = emu();
    let p = prob(&[2, 2, 2, 8, 16, 3, 3, 9, 8, 2, 2, 1, 1, 1, 1, 1, 1]);
    let op = BwdDataOp::new(&dev, &p, &BwdDataConfig::default()).unwrap();
    let plan = op.plan();
    let dy = check::fill_random(11, Init::Float, DType::F16, plan.dy.span() as usize);
    let w = check::fill_random(12, Init::Float, DType::F16, plan.w.span() as usize);
    let dyb = dev.upload(&check::to_bytes(DType::F16, &dy)).unwrap();
    let wb = dev.upload(&check::to_bytes(DType::F16, &w)).unwrap();
    let dxb = dev.alloc::<u8>(plan.dx.span() as usize * 2).unwrap();
    dxb.fill_bytes(0xff).unwrap();
    // SAFETY: `dxb` outlives the wrapper.
    let dx = unsafe { dev.wrap_foreign::<u8>(dxb.device_addr(), dxb.len()) }.unwrap();
    let stream = dev.create_stream().unwrap();
    op.execute_on(&stream, BwdDataTensors { dy: (&dyb).into(), w: (&wb).into(), dx: (&dx).into(), ds: &[] }, Workspace::None).unwrap();
    stream.synchronize().unwrap();
    let dx_vals = check::from_bytes(DType::F16, &dxb.download().unwrap());
    let r = convgrad::verify::bwd_data::judge(plan, &BwdDataConfig::default(), &dy, &w, &[], &dx_vals).report;
    assert!(r.passed(), "{}: {}", op.describe(), r.summary());
}

/// Tensors whose base is not 16-byte aligned (a view 2 or 8 bytes into its
/// allocation, as a framework's slices at an element offset make) are
/// refused before any launch, naming the tensor, in both operations and on
/// every kernel family the rules pick here (the Hopper TMA tile included):
/// the kernels move 16-byte vectors, which fault on such an address. The
/// same tensors aligned run and match the reference, so the refusal is
/// what changed. Before this check the emulator caught the cp.async tile
/// reading 16 bytes at byte offset 2 of dy.
#[test]
fn unaligned_tensor_bases_are_refused_by_name() {
    for arch in [EmuArch::Sm90, EmuArch::Gfx942] {
        let dev = Device::open(Backend::Emulator(arch), 0).expect("emulator");
        let stream = dev.create_stream().unwrap();
        // A 1x1 layer (TMA on the sm_90 model) and a 3x3 one.
        for (pi, v) in [[2, 1, 2, 64, 128, 1, 1, 9, 7, 1, 1, 1, 1, 0, 0, 0, 0], [2, 1, 2, 16, 24, 3, 3, 6, 5, 1, 1, 1, 1, 1, 1, 1, 1]].iter().enumerate() {
            let p = prob(v);
            let dcfg = BwdDataConfig { types: TypeConfig::F16, ..Default::default() };
            let op = BwdDataOp::new(&dev, &p, &dcfg).unwrap();
            let plan = op.plan();
            let (dy_len, w_len, dx_len) = (plan.dy.span() as usize, plan.w.span() as usize, plan.dx.span() as usize);
            let seed = 700 + 10 * pi as u64;
            let dy = check::fill_random(seed, Init::Float, DType::F16, dy_len);
            let w = check::fill_random(seed + 1, Init::Float, DType::F16, w_len);
            // Each tensor `off` bytes into an allocation 16 bytes longer.
            let place = |vals: &[f64], off: usize| {
                let mut bytes = vec![0u8; off];
                bytes.extend(check::to_bytes(DType::F16, vals));
                bytes.resize(vals.len() * 2 + 16, 0);
                dev.upload(&bytes).unwrap()
            };
            for (dy_off, w_off, dx_off) in [(0usize, 0usize, 0usize), (2, 0, 0), (0, 8, 0), (0, 0, 2)] {
                let (dyb, wb, dxb) = (place(&dy, dy_off), place(&w, w_off), dev.alloc::<u8>(dx_len * 2 + 16).unwrap());
                dxb.fill_bytes(0xff).unwrap();
                // SAFETY: the allocations outlive the views; each view lies inside its allocation.
                let view = |b: &convgrad::runtime::DeviceBuffer<u8>, off: usize, len: usize| unsafe { dev.wrap_foreign::<u8>(b.device_addr() + off as u64, len * 2) }.unwrap();
                let (dyv, wv, dxv) = (view(&dyb, dy_off, dy_len), view(&wb, w_off, w_len), view(&dxb, dx_off, dx_len));
                let r = op.execute_on(&stream, BwdDataTensors { dy: (&dyv).into(), w: (&wv).into(), dx: (&dxv).into(), ds: &[] }, Workspace::None);
                stream.synchronize().unwrap();
                let what = format!("{arch:?} {}: dy +{dy_off} B, w +{w_off} B, dx +{dx_off} B", op.describe());
                match [(dy_off, "dy"), (w_off, "w"), (dx_off, "dx")].iter().find(|(o, _)| *o != 0) {
                    None => {
                        r.unwrap_or_else(|e| panic!("{what}: {e}"));
                        let got = check::from_bytes(DType::F16, &dxb.download().unwrap()[..dx_len * 2]);
                        let rep = convgrad::verify::bwd_data::judge(plan, &dcfg, &dy, &w, &[], &got).report;
                        assert!(rep.passed(), "{what}: {}", rep.summary());
                    }
                    Some((_, name)) => {
                        let e = r.expect_err(&what).to_string();
                        assert!(e.starts_with(&format!("{name}: address")) && e.contains("16-byte aligned"), "{what}: {e}");
                    }
                }
            }
            // Backward-weight on the same problem: x (the dx buffer's role) misaligned.
            let wop = BwdWeightOp::new(&dev, &p, &BwdWeightConfig::default()).unwrap();
            let [(_, xb), (_, dyb)] = inputs(wop.plan(), seed + 2);
            let xa = dev.upload(&[vec![0u8; 8], xb].concat()).unwrap();
            let dya = dev.upload(&dyb).unwrap();
            let dw = dev.alloc::<u8>(wop.plan().dw.span() as usize * 2).unwrap();
            let ws = dev.alloc::<u8>(wop.workspace_bytes().max(16)).unwrap();
            // SAFETY: `xa` outlives the view, which lies inside it.
            let xv = unsafe { dev.wrap_foreign::<u8>(xa.device_addr() + 8, xa.len() - 8) }.unwrap();
            let t = BwdWeightTensors { x: (&xv).into(), dy: (&dya).into(), dw: (&dw).into(), ds: &[] };
            let e = wop.execute_on(&stream, t, Workspace::raw(&ws, WorkspaceContents::Unknown)).unwrap_err().to_string();
            assert!(e.starts_with("x: address") && e.contains("16-byte aligned"), "{arch:?} {}: {e}", wop.describe());
        }
    }
}

/// On an NVIDIA GPU (`#[ignore]`d elsewhere; run with `--ignored`, where a
/// missing GPU fails): convgrad's launch on the caller's
/// stream (made with the driver API, as a framework would) sees the inputs
/// the caller copied in just before it, behind 40 slow memsets, and the
/// caller's copy of the result just after it sees the result. The control
/// runs the same on convgrad's own stream and must read the NaN-poisoned
/// inputs, which shows the test can fail.
#[test]
#[ignore = "needs an NVIDIA GPU: run with --ignored"]
fn cuda_caller_stream_orders_before_and_after() {
    use cudarc::driver::{CudaContext, result};
    let dev = Device::open(Backend::Cuda, 0).unwrap_or_else(|e| panic!("this test needs a CUDA device: {e}"));
    // The primary context, which convgrad and PyTorch share.
    let ctx = CudaContext::new(0).unwrap();
    ctx.bind_to_thread().unwrap();
    // ResNet-50's 64-channel 3x3 layer at batch 32: a launch of about 0.3 ms.
    let p = prob(&[2, 1, 32, 64, 64, 3, 3, 56, 56, 1, 1, 1, 1, 1, 1, 1, 1]);
    let op = BwdWeightOp::new(&dev, &p, &BwdWeightConfig::default()).unwrap();
    let [(x, xb), (dy, dyb)] = inputs(op.plan(), 5);
    let dw_bytes = op.plan().dw.span() as usize * 2;
    const SCRATCH: usize = 1 << 30;
    let run = |on_callers_stream: bool| -> check::ErrorReport {
        let caller = ctx.new_stream().unwrap();
        let raw = caller.cu_stream();
        // SAFETY: plain driver calls on allocations made here, freed at the end
        // after the caller's stream and the device have drained.
        unsafe {
            let [x_src, dy_src, xd, dyd, dw, dw_copy, ws, scratch] =
                [xb.len(), dyb.len(), xb.len(), dyb.len(), dw_bytes, dw_bytes, op.workspace_bytes().max(16), SCRATCH]
                    .map(|n| result::malloc_sync(n).unwrap());
            result::memcpy_htod_sync(x_src, &xb).unwrap();
            result::memcpy_htod_sync(dy_src, &dyb).unwrap();
            for (d, n) in [(xd, xb.len()), (dyd, dyb.len()), (dw, dw_bytes), (dw_copy, dw_bytes)] {
                result::memset_d8_sync(d, 0xff, n).unwrap();
            }
            // The caller's work before: slow memsets, then the inputs arrive.
            for i in 0..40 {
                result::memset_d8_async(scratch, i, SCRATCH, raw).unwrap();
            }
            result::memcpy_dtod_async(xd, x_src, xb.len(), raw).unwrap();
            result::memcpy_dtod_async(dyd, dy_src, dyb.len(), raw).unwrap();
            let stream = if on_callers_stream { dev.wrap_stream(raw as *mut _).unwrap() } else { dev.default_stream() };
            let [xw, dyw, dww, wsw] = [(xd, xb.len()), (dyd, dyb.len()), (dw, dw_bytes), (ws, op.workspace_bytes())]
                .map(|(a, n)| dev.wrap_foreign::<u8>(a, n).unwrap());
            let t = BwdWeightTensors { x: (&xw).into(), dy: (&dyw).into(), dw: (&dww).into(), ds: &[] };
            op.execute_on(&stream, t, Workspace::raw(&wsw, WorkspaceContents::Unknown)).unwrap();
            // The caller's work after: a copy of the result.
            result::memcpy_dtod_async(dw_copy, dw, dw_bytes, raw).unwrap();
            result::stream::synchronize(raw).unwrap();
            dev.synchronize().unwrap();
            let mut out = vec![0u8; dw_bytes];
            result::memcpy_dtoh_sync(&mut out, dw_copy).unwrap();
            for a in [x_src, dy_src, xd, dyd, dw, dw_copy, ws, scratch] {
                result::free_sync(a).unwrap();
            }
            judge(op.plan(), &x, &dy, &out)
        }
    };
    let ordered = run(true);
    println!("caller's stream: {} ({})", ordered.summary(), op.describe());
    assert!(ordered.passed(), "{}", ordered.summary());
    let control = run(false);
    println!("control on convgrad's own stream: {}", control.summary());
    assert!(!control.passed(), "the unordered control passed: the test would not catch a wrong stream");
}

/// The workspace contract behind `WorkspaceContents::Zeroed`: every kernel
/// family (GEMM tiles, the direct kernel, tap shifts) leaves the whole
/// workspace zero after an atomic split-K call, on every emulated family.
#[test]
fn atomic_calls_leave_the_workspace_zero() {
    let problems = [
        prob(&[2, 1, 8, 16, 16, 3, 3, 28, 28, 1, 1, 1, 1, 1, 1, 1, 1]), // tap shifts where they fit
        prob(&[2, 2, 2, 32, 24, 3, 3, 9, 9, 2, 2, 1, 1, 1, 1, 1, 1]),   // GEMM tiles
        prob(&[2, 16, 2, 1, 1, 3, 3, 12, 12, 1, 1, 1, 1, 1, 1, 1, 1]),  // direct (depthwise)
        prob(&[2, 8, 2, 4, 4, 3, 3, 12, 12, 1, 1, 1, 1, 1, 1, 1, 1]),   // direct (4 channels)
    ];
    for arch in [EmuArch::Gfx942, EmuArch::Gfx1100, EmuArch::Sm90] {
        let dev = Device::open(Backend::Emulator(arch), 0).unwrap();
        for p in &problems {
            for split in [SplitK::Fixed(4), SplitK::Auto] {
                let cfg = BwdWeightConfig { split_k: split, ..Default::default() };
                let op = BwdWeightOp::new(&dev, p, &cfg).unwrap();
                if op.workspace_bytes() == 0 {
                    continue;
                }
                let [(x, xb), (dy, dyb)] = inputs(op.plan(), 9);
                let (xd, dyd) = (dev.upload(&xb).unwrap(), dev.upload(&dyb).unwrap());
                let dw = dev.alloc::<u8>(op.plan().dw.span() as usize * 2).unwrap();
                let ws = dev.alloc::<u8>(op.workspace_bytes()).unwrap();
                ws.fill_zero().unwrap();
                let t = BwdWeightTensors { x: (&xd).into(), dy: (&dyd).into(), dw: (&dw).into(), ds: &[] };
                for _ in 0..2 {
                    dw.fill_bytes(0xff).unwrap();
                    op.execute_on(&dev.default_stream(), t, Workspace::raw(&ws, WorkspaceContents::Zeroed)).unwrap();
                    let r = judge(op.plan(), &x, &dy, &dw.download().unwrap());
                    assert!(r.passed(), "{} {}: {}", dev.arch(), op.describe(), r.summary());
                    let left = ws.download().unwrap();
                    let nz = left.iter().position(|&b| b != 0);
                    assert!(nz.is_none(), "{} {}: byte {nz:?} of {} left non-zero", dev.arch(), op.describe(), left.len());
                }
            }
        }
    }
}

/// `workspace_after` threads the state of one caller workspace through calls
/// of both modes and several split counts: each call told exactly what the
/// workspace holds (no memset where it holds zeros) gives the right result.
/// Claiming zeros after a deterministic call instead must go wrong.
#[test]
fn workspace_state_threads_through_mixed_calls() {
    let dev = emu();
    let p = prob(&[2, 2, 2, 16, 8, 3, 3, 7, 6, 1, 1, 1, 1, 1, 1, 1, 1]);
    let op = |k, deterministic| {
        BwdWeightOp::new(&dev, &p, &BwdWeightConfig { split_k: SplitK::Fixed(k), deterministic, ..Default::default() }).unwrap()
    };
    let calls = [(3, false), (3, true), (2, false), (4, true), (2, true), (4, false), (3, false)];
    let most = calls.iter().map(|&(k, d)| op(k, d).workspace_bytes()).max().unwrap();
    let ws = dev.alloc::<u8>(most).unwrap();
    ws.fill_zero().unwrap();
    let [(x, xb), (dy, dyb)] = inputs(op(3, false).plan(), 4);
    let (xd, dyd) = (dev.upload(&xb).unwrap(), dev.upload(&dyb).unwrap());
    let dw = dev.alloc::<u8>(op(3, false).plan().dw.span() as usize * 2).unwrap();
    let t = BwdWeightTensors { x: (&xd).into(), dy: (&dyd).into(), dw: (&dw).into(), ds: &[] };
    let mut state = WorkspaceContents::Zeroed;
    let run = |k, det, claim: WorkspaceContents| {
        let o = op(k, det);
        dw.fill_bytes(0xff).unwrap();
        o.execute_on(&dev.default_stream(), t, Workspace::raw(&ws, claim)).unwrap();
        (judge(o.plan(), &x, &dy, &dw.download().unwrap()), o.workspace_after(claim))
    };
    for &(k, det) in &calls {
        let (r, after) = run(k, det, state);
        assert!(r.passed(), "split {k} deterministic={det} on {state:?}: {}", r.summary());
        state = after;
    }
    assert_eq!(state, WorkspaceContents::ZeroFrom(op(4, true).plan().partial_elems * 4), "the widest deterministic partials stay");
    let (_, after) = run(4, true, state);
    assert!(matches!(after, WorkspaceContents::ZeroFrom(_)));
    let (lie, _) = run(3, false, WorkspaceContents::Zeroed);
    assert!(!lie.passed(), "an atomic call on deterministic leftovers claimed as zeros passed");
}
