//! Grouped backward-weight on the emulator, for the gfx942 (MFMA), gfx1100
//! (WMMA) and sm_90 (mma.sync) models: every kernel path against the float64
//! reference, with fresh random inputs per case and NaN-poisoned outputs.

mod common;

use common::{At, Check, DIRECT_LAYOUTS, INITS, device, every_instance, prob, sweep};
use convgrad::check::Init;
use convgrad::ops::bwd_weight::{BwdWeightConfig, OpError, SplitK, plan};
use convgrad::runtime::EmuArch;
use convgrad::types::instance::Family;
use convgrad::types::{ConvLayout, ConvProblem, EpilogueOp, TypeConfig};
use convgrad::verify::bwd_weight::{Case, run};

/// Epilogues to rotate (backward-weight takes one step).
const EPIS: [EpilogueOp; 3] = [EpilogueOp::PassThrough, EpilogueOp::Scale(0.5), EpilogueOp::Bilinear(0.75, -1.5)];
/// Split-K settings to rotate.
const SPLITS: [SplitK; 3] = [SplitK::Fixed(1), SplitK::Auto, SplitK::Fixed(3)];

/// An untimed, undumped case with fresh random inputs.
fn case(problem: ConvProblem, config: BwdWeightConfig, seed: u64, init: Init) -> Case {
    Case { problem, config, seed, init, timed_runs: 0, dump: false }
}

/// A case's options in one line.
fn label(cfg: &BwdWeightConfig) -> String {
    let (t, l) = (cfg.types.name(), cfg.layout.name());
    format!("{t} {l} {:?} {:?} det={}", cfg.epilogue, cfg.split_k, cfg.deterministic)
}

/// A configuration of `layout` and `types` whose epilogue, split-K setting
/// and determinism rotate with the case's place: `at.pick(.., a, b)` with
/// the factors `(a, b)` of each, in that order.
fn rotated(at: At, layout: ConvLayout, types: TypeConfig, [epi, split, det]: [(usize, usize); 3]) -> BwdWeightConfig {
    BwdWeightConfig {
        layout,
        types,
        epilogue: at.pick(&EPIS, epi.0, epi.1),
        split_k: at.pick(&SPLITS, split.0, split.1),
        deterministic: at.pick(&[true, false], det.0, det.1),
        instance: None,
    }
}

/// One case of a suite that forces `instance` (types `t`, the split and
/// determinism given): a channels-last layout family and an epilogue
/// rotated by the case's place, fresh inputs; a deterministic split runs
/// twice and must repeat bitwise. The sweep's `(line, passed)`.
#[allow(clippy::too_many_arguments)]
fn forced_case(
    dev: &convgrad::runtime::Device,
    module: &convgrad::runtime::Module,
    at: At,
    name: &str,
    p: &ConvProblem,
    t: TypeConfig,
    instance: &str,
    (split_k, deterministic): (SplitK, bool),
    seed: u64,
) -> (String, bool) {
    let cfg = BwdWeightConfig {
        layout: at.pick(&common::TAP_SHIFT_LAYOUTS, 1, 1),
        types: t,
        epilogue: at.pick(&EPIS, 1, 2),
        split_k,
        deterministic,
        instance: Some(instance.into()),
    };
    let case = case(*p, cfg.clone(), seed, at.pick(&INITS, 1, 1));
    let o = case.check(dev, module, name);
    let again = deterministic.then(|| case.check(dev, module, name).output_bytes);
    let line = format!("{} -> {} kb={}: {}", label(&cfg), o.instance, o.k_batch, o.report.summary());
    (line, o.passed() && again.is_none_or(|b| b == o.output_bytes))
}

/// Problems covering dims, groups, depthwise, odd C/K, strides, dilations, asymmetric pads.
fn problems() -> Vec<(&'static str, ConvProblem)> {
    common::sweep_problems(
        [
            ("1d dilation3 odd C/K", prob(&[1, 1, 2, 5, 3, 4, 20, 1, 3, 2, 1])),
            ("2d depthwise", prob(&[2, 32, 2, 1, 1, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1])),
            ("2d large K (multi-tile M)", prob(&[2, 1, 1, 136, 9, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1])),
        ],
        [
            // Pixels back to back in packed layouts: offsets without divisions.
            ("2d 1x1 stride1 (flat pixels)", prob(&[2, 1, 2, 72, 40, 1, 1, 5, 7, 1, 1, 1, 1, 0, 0, 0, 0])),
            // 1x1 stride 1 with a right pad: output pixels past the input.
            ("2d 1x1 right pad", prob(&[2, 2, 2, 40, 16, 1, 1, 5, 6, 1, 1, 1, 1, 0, 0, 1, 0])),
        ],
    )
}

/// Runs the suite on one architecture model; dtypes, layouts, epilogues and
/// split-K settings rotate over the problems so every combination kind appears.
fn suite(arch: EmuArch) {
    sweep(&[arch], &problems(), 4, |dev, module, at, name, p| {
        let cfg = rotated(at, at.pick(&ConvLayout::ALL, 1, 3), at.pick(&TypeConfig::ALL, 1, 1), [(1, 1), (2, 1), (1, 1)]);
        let o = case(*p, cfg.clone(), at.seed(1000, 17), at.pick(&INITS, 0, 1)).check(dev, module, name);
        (format!("{} -> {} kb={}: {}", label(&cfg), o.instance, o.k_batch, o.report.summary()), o.passed())
    });
}

common::per_arch!(suite; bwd_weight_gfx942_mfma => Gfx942, bwd_weight_gfx1100_wmma => Gfx1100, bwd_weight_gfx1200_wmma => Gfx1200, bwd_weight_gfx950_mfma => Gfx950, bwd_weight_sm90_mma_sync => Sm90);

/// Every instance of every family runs and passes on a problem that spans
/// several tiles in M and N, with a K tail.
#[test]
fn bwd_weight_every_instance() {
    use convgrad::types::instance::Op;
    let p = prob(&[2, 2, 1, 70, 20, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1]);
    every_instance(&[Op::BwdWeight, Op::BwdWeightDirect], |inst| {
        let cfg = BwdWeightConfig { types: inst.types, instance: Some(inst.name.into()), ..Default::default() };
        case(p, cfg, 77, Init::Float)
    });
}

/// Deterministic split-K gives bitwise identical results run to run (fresh
/// buffers each time); atomic split-K passes the rule.
#[test]
fn bwd_weight_deterministic_is_bitwise_reproducible() {
    let p = prob(&[2, 2, 4, 24, 12, 3, 3, 10, 10, 1, 1, 1, 1, 1, 1, 1, 1]);
    for arch in [EmuArch::Gfx942, EmuArch::Sm90] {
        let (dev, module) = device(arch);
        for t in [TypeConfig::F32, TypeConfig::F16] {
            let cfg = BwdWeightConfig { types: t, split_k: SplitK::Fixed(5), deterministic: true, ..Default::default() };
            let case = case(p, cfg, 5, Init::Float);
            let a = run(&dev, &module, &case).unwrap();
            let b = run(&dev, &module, &case).unwrap();
            assert!(a.passed() && b.passed());
            assert_eq!(a.k_batch, 5);
            assert_eq!(a.output_bytes, b.output_bytes, "{} {}: deterministic split-K differs between runs", dev.arch(), t.name());
        }
    }
}

/// Buffers shorter than the plan's tensors are refused, naming the tensor.
#[test]
fn bwd_weight_short_buffers_are_refused() {
    use convgrad::ops::bwd_weight::BwdWeightBuffers;
    let (dev, _) = device(EmuArch::Gfx942);
    let p = prob(&[2, 1, 1, 8, 8, 3, 3, 5, 5, 1, 1, 1, 1, 1, 1, 1, 1]);
    let cfg = BwdWeightConfig::default();
    let plan = plan(&p, &cfg, dev.family(), dev.compute_units()).unwrap();
    let x = dev.alloc::<u16>(plan.x.span() as usize).unwrap();
    let dy = dev.alloc::<u16>(plan.dy.span() as usize - 1).unwrap();
    let dw = dev.alloc::<u16>(plan.dw.span() as usize).unwrap();
    let mut ds = Vec::new();
    let e = BwdWeightBuffers::checked(&plan, cfg.types, &x, &dy, &dw, &[], &mut ds).unwrap_err();
    assert!(e.to_string().contains("tensor dy holds 199 elements but its descriptor spans 200"), "{e}");
}

/// Bad requests get errors that name the field.
#[test]
fn bwd_weight_bad_requests_are_refused_clearly() {
    let p = prob(&[2, 1, 1, 8, 8, 3, 3, 5, 5, 1, 1, 1, 1, 1, 1, 1, 1]);
    let forced = BwdWeightConfig { instance: Some("bwdw_f16_64x64x32_wmma16".into()), ..Default::default() };
    let e = plan(&p, &forced, Family::Cdna, 8).unwrap_err();
    assert!(matches!(e, OpError::Unsupported(convgrad::ops::Unsupported::Instance { .. })) && e.is_unsupported(), "{e}");
    assert!(e.to_string().contains("does not apply"), "{e}");
    let unknown = BwdWeightConfig { instance: Some("nope".into()), ..Default::default() };
    assert!(plan(&p, &unknown, Family::Cdna, 8).unwrap_err().to_string().contains("no such instance"));
    let relu = BwdWeightConfig { epilogue: EpilogueOp::AddRelu, ..Default::default() };
    assert!(plan(&p, &relu, Family::Cdna, 8).unwrap_err().to_string().contains("epilogue"));
    // A 5x5 filter over a 2x2 input.
    let e = ConvProblem::from_ck_args(&[2, 1, 1, 8, 8, 5, 5, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0]).unwrap_err();
    assert!(e.to_string().contains("smaller than the dilated filter"), "{e}");
    // Over 2^31 elements in x and dy: split along N into launches that fit (#38).
    let big = ConvProblem::from_ck_args(&[2, 1, 4096, 64, 64, 3, 3, 128, 128, 1, 1, 1, 1, 1, 1, 1, 1]).unwrap();
    let split = plan(&big, &BwdWeightConfig::default(), Family::Cdna, 8).unwrap();
    assert!(split.parts.len() >= 2 && split.describe().contains("launches along N"), "{}", split.describe());
    let e = ConvProblem::from_ck_args(&[2, 1, 0, 8, 8, 3, 3, 5, 5, 1, 1, 1, 1, 1, 1, 1, 1]).unwrap_err();
    assert_eq!(e.to_string(), "N = 0 is too small: it must be at least 1");
    // The GEMM tiles launch G * k-batches along grid z (at most 65535): the
    // automatic split stays under it, a fixed one past it and G past it
    // alone are refused by name (MobileNetV2's depthwise 960 on a forced
    // GEMM tile at 128 splits, 98 effective: 94080 workgroups along z; the
    // driver refused the launch).
    let dw960 = prob(&[2, 960, 64, 1, 1, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1]);
    let gemm = |split_k| BwdWeightConfig { instance: Some("bwdw_f16_128x128x32_mma16x8".into()), split_k, ..Default::default() };
    let auto = plan(&dw960, &gemm(SplitK::Auto), Family::Hopper, 132).unwrap();
    assert!(960 * auto.k_batch <= 65535, "k_batch {}", auto.k_batch);
    let e = plan(&dw960, &gemm(SplitK::Fixed(128)), Family::Hopper, 132).unwrap_err().to_string();
    assert!(e.contains("k-batches * G (grid z") && e.contains("65535"), "{e}");
    let wide = prob(&[2, 70000, 1, 1, 1, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1]);
    let e = plan(&wide, &gemm(SplitK::Fixed(1)), Family::Hopper, 132).unwrap_err().to_string();
    assert!(e.contains("G (grid z") && e.contains("65535"), "{e}");
}

/// The direct kernel's channel-vector path (depthwise lanes along groups,
/// small groups along channels, both lane counts, filters of more than one
/// tap block, row segments across row and stream ends) and its scalar fallback: strides, dilations,
/// asymmetric pads, 1D-3D, every type combination, Scale/Bilinear, split-K
/// atomic and deterministic and none. Every path kind must have run.
#[test]
fn bwd_weight_direct_vector_paths() {
    use convgrad::types::instance::{INSTANCES, Op};
    use convgrad::types::params::vec_mode;
    common::direct_vector_sweep(4, vec_mode::ROWS, |dev, module, at, name, p| {
        let t = at.pick(&TypeConfig::ALL, 0, 1);
        let inst = INSTANCES.iter().find(|x| x.op == Op::BwdWeightDirect && x.types == t).unwrap();
        let base = rotated(at, at.pick(&DIRECT_LAYOUTS, 1, 1), t, [(1, 1), (2, 1), (1, 1)]);
        let cfg = BwdWeightConfig { instance: Some(inst.name.into()), ..base };
        let mode = plan(p, &cfg, dev.family(), dev.compute_units()).unwrap().args_template.direct.vec_mode;
        let o = case(*p, cfg.clone(), at.seed(5000, 31), at.pick(&INITS, 0, 1)).check(dev, module, name);
        (format!("{} vec_mode={mode:#x} kb={}: {}", label(&cfg), o.k_batch, o.report.summary()), o.passed(), t, mode)
    });
}

/// One split-K workspace kept across calls of both kernels and both split
/// modes: the last workgroup of each tile leaves it zeroed (atomic sums) or
/// the next call zeroes it where stored partials would spoil its sums or
/// counters; each call is checked against the reference.
#[test]
fn bwd_weight_split_k_workspace_is_reused() {
    use convgrad::ops::bwd_weight::SplitKWorkspace;
    use convgrad::verify::bwd_weight::run_with;
    let gemm = prob(&[2, 2, 2, 24, 16, 3, 3, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1]);
    let direct = prob(&[2, 16, 3, 1, 1, 3, 3, 20, 20, 1, 1, 1, 1, 1, 1, 1, 1]);
    let stem = prob(&[2, 1, 2, 24, 3, 7, 7, 22, 22, 2, 2, 1, 1, 3, 3, 3, 3]);
    for arch in [EmuArch::Gfx942, EmuArch::Sm90] {
        let (dev, module) = device(arch);
        let ws = SplitKWorkspace::new(&dev, 1 << 16).unwrap();
        // (problem, k-batches, deterministic): atomic after atomic, stored
        // after atomic, atomic after stored, fewer stored batches after more.
        let calls = [
            (gemm, 3, false),
            (gemm, 3, false),
            (gemm, 6, true),
            (gemm, 2, true),
            (gemm, 3, false),
            (direct, 4, false),
            (direct, 4, false),
            (direct, 5, true),
            (direct, 3, true),
            (direct, 4, false),
            (gemm, 2, false),
            // x' at the workspace's start, then a call that needs zeros there.
            (stem, 3, false),
            (stem, 4, true),
            (stem, 3, false),
            (gemm, 3, false),
        ];
        for (i, (p, kb, det)) in calls.into_iter().enumerate() {
            let cfg = BwdWeightConfig { split_k: SplitK::Fixed(kb), deterministic: det, ..Default::default() };
            let case = case(p, cfg, 40 + i as u64, Init::Float);
            let o = run_with(&dev, &module, &case, Some(&ws)).unwrap();
            assert!(o.k_batch > 1 && o.k_batch <= kb, "call {i}: k_batch {} for {kb} asked", o.k_batch);
            assert!(o.passed(), "{arch:?} call {i} ({kb} batches, deterministic {det}): {}", o.report.summary());
        }
    }
}

/// The direct channel-vector path in deterministic split-K mode is bitwise
/// reproducible (partials summed in LDS and in the workspace in fixed order).
#[test]
fn bwd_weight_direct_deterministic_is_bitwise_reproducible() {
    let p = prob(&[2, 32, 4, 1, 1, 3, 3, 24, 24, 1, 1, 1, 1, 1, 1, 1, 1]);
    let (dev, module) = device(EmuArch::Sm90);
    for t in [TypeConfig::F32, TypeConfig::F16] {
        let cfg = BwdWeightConfig { types: t, split_k: SplitK::Fixed(5), deterministic: true, ..Default::default() };
        assert_ne!(plan(&p, &cfg, dev.family(), dev.compute_units()).unwrap().args_template.direct.vec_mode, 0);
        let case = case(p, cfg, 9, Init::Float);
        let a = run(&dev, &module, &case).unwrap();
        let b = run(&dev, &module, &case).unwrap();
        assert!(a.passed() && b.passed());
        assert_eq!(a.k_batch, 5);
        assert_eq!(a.output_bytes, b.output_bytes, "{}: deterministic direct split-K differs between runs", t.name());
    }
}

/// The automatic k_batch's measured decisions on an H200 (132 SMs): one round
/// of two blocks (and at least 8 warps) per SM; two where that leaves a deep reduction unsplit; four
/// blocks per SM for element copies (20 channels: 2 x 264 / 3 column tiles = 176 splits, under
/// their cap of 256; the RGB stem runs unfolded, on vectors: 88); no split once the tiles fill the
/// GPU (CK example 20).
#[test]
fn bwd_weight_auto_split_k() {
    let cfg = BwdWeightConfig { types: TypeConfig::F16, ..Default::default() };
    for (name, v, want) in [
        ("r50 1x1 14 256->1024", &[2, 1, 256, 1024, 256, 1, 1, 14, 14, 1, 1, 1, 1, 0, 0, 0, 0][..], 16),
        ("512ch 3x3 7, 128 images", &[2, 1, 128, 512, 512, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1], 3),
        ("512ch 3x3 7, 16 images", &[2, 1, 16, 512, 512, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1], 1),
        ("RGB stem, unfolded", &[2, 1, 256, 64, 3, 7, 7, 224, 224, 2, 2, 1, 1, 3, 3, 3, 3], 88),
        ("20 channels, packed to 24", &[2, 1, 256, 64, 20, 3, 3, 112, 112, 2, 2, 1, 1, 1, 1, 1, 1], 66),
        ("CK example 20", &[3, 4, 1, 128, 256, 3, 3, 3, 14, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], 1),
        // 288 tiles over 264 slots: four splits fill 5 rounds (1.25 per
        // split) instead of a second round of 24 tiles; the same tiles over
        // a 4096-long reduction stay whole.
        ("U-Net 1024->512 at 32x32", &[2, 1, 16, 512, 1024, 3, 3, 32, 32, 1, 1, 1, 1, 1, 1, 1, 1], 4),
        ("U-Net 512->1024 at 16x16", &[2, 1, 16, 1024, 512, 3, 3, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1], 1),
    ] {
        let got = plan(&prob(v), &cfg, Family::Nvidia, 132).unwrap().k_batch;
        assert_eq!(got, want, "{name}");
    }
    // Hopper's one-warpgroup 64x128 tiles, nine column tiles: the
    // `cp.async` one in rounds of three per SM (3 * 132 / 9 = 44 splits, not
    // 2 * 132 / 9 = 29); the TMA one, which the rules take at K = 64, in
    // rounds of two (`min_blocks`; its 72 KiB ring would let three fit).
    let dec1 = prob(&[2, 1, 16, 64, 128, 3, 3, 256, 256, 1, 1, 1, 1, 1, 1, 1, 1]);
    let pl = plan(&dec1, &cfg, Family::Hopper, 132).unwrap();
    assert_eq!((pl.main.instance.name, pl.k_batch), ("bwdw_f16_64x128x64_tma", 29));
    let cp_async = BwdWeightConfig { instance: Some("bwdw_f16_64x128x32_wgmma".into()), ..cfg.clone() };
    assert_eq!(plan(&dec1, &cp_async, Family::Hopper, 132).unwrap().k_batch, 44);
    // ResNeXt 16->16: on the 64-thread 16x48 tile (forced), and by tap
    // shifts (automatic): one round of three workgroups per SM over 8 group
    // sets and 74 row tiles, two tiles each.
    let rx16 = prob(&[2, 32, 64, 16, 16, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1]);
    let gemm = BwdWeightConfig { instance: Some("bwdw_f16_16x48x32_mma16x8".into()), ..cfg.clone() };
    assert_eq!(plan(&rx16, &gemm, Family::Nvidia, 132).unwrap().k_batch, 5);
    let auto = plan(&rx16, &cfg, Family::Nvidia, 132).unwrap();
    assert_eq!((auto.main.instance.name, auto.k_batch), ("bwdw_halo_f16_224x64x16_mma16x8", 37));
    // The direct kernel: one round of four workgroups per SM over its column
    // blocks, two where one leaves streams of 256 pixels or more (atomic
    // partials only), streams of at least 64 pixels.
    let rx4 = [2, 32, 64, 4, 4, 3, 3, 56, 56, 1, 1, 1, 1, 1, 1, 1, 1];
    for (name, v, deterministic, want) in [
        ("ResNeXt 4->4, 570-pixel streams at one round", &rx4[..], false, 349),
        ("ResNeXt 4->4 deterministic", &rx4[..], true, 175),
        ("depthwise G=144 56x56", &[2, 144, 64, 1, 1, 3, 3, 56, 56, 1, 1, 1, 1, 1, 1, 1, 1], false, 171),
        ("depthwise G=384 14x14, 64-pixel streams", &[2, 384, 64, 1, 1, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1], false, 25),
    ] {
        let cfg = BwdWeightConfig { deterministic, ..cfg.clone() };
        let plan = plan(&prob(v), &cfg, Family::Nvidia, 132).unwrap();
        assert!(plan.main.instance.name.starts_with("bwdw_direct"), "{name}: {}", plan.main.instance.name);
        assert_eq!(plan.k_batch, want, "{name}");
    }
}

/// The tap-shift kernel (`bwdw_halo_*`, at most 16 channels per group):
/// tiles that straddle images, a part-filled group set, K = 8 and C = 8,
/// dilation with asymmetric pads, a 2x3 filter, 1D, 3D with a 1-tall z
/// filter, 1x1, strides (ResNeXt's 3x3 at stride 2 on odd and even images,
/// 2x3 strides with dilation 2 where phases go unused, a 1x1 at stride 2,
/// stride 3 past a 2-wide filter: the `bwdw_halo_phased_*` kernels), both
/// channels-last layout families, f16 and bf16, every
/// split mode (none with the epilogue, atomic, deterministic and bitwise
/// reproducible); refusals by name; chosen automatically on NVIDIA and CDNA
/// where it fits with two row tiles or more per workgroup, atomic split-K
/// only (RDNA3 has no instance).
#[test]
fn bwd_weight_tap_shifts() {
    use convgrad::types::instance::Op;
    let problems = common::tap_shift_problems(&[
        ("3x3 pad1, tiles across images", prob(&[2, 6, 3, 16, 16, 3, 3, 13, 12, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("K=8 C=16", prob(&[2, 5, 2, 8, 16, 3, 3, 9, 11, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("3x3 s2 pad1 C=K=8", prob(&[2, 5, 3, 8, 8, 3, 3, 14, 13, 2, 2, 1, 1, 1, 1, 1, 1])),
        ("3x3 s2 pad1 odd", prob(&[2, 3, 2, 16, 16, 3, 3, 11, 15, 2, 2, 1, 1, 1, 1, 1, 1])),
        ("3x3 s2x3 dil2 asym pads", prob(&[2, 2, 2, 16, 8, 3, 3, 13, 17, 2, 3, 2, 2, 2, 1, 1, 2])),
        ("1x1 s2", prob(&[2, 3, 2, 16, 16, 1, 1, 9, 10, 2, 2, 1, 1, 0, 0, 0, 0])),
        ("2x2 s3", prob(&[2, 4, 2, 8, 16, 2, 2, 11, 10, 3, 3, 1, 1, 0, 0, 0, 0])),
    ]);
    let splits = [(SplitK::Fixed(1), false), (SplitK::Auto, false), (SplitK::Fixed(3), true)];
    sweep(&[EmuArch::Sm90, EmuArch::Gfx942], &problems, common::TAP_SHIFT_TYPES.len(), |dev, module, at, name, p| {
        let t = at.pick(&common::TAP_SHIFT_TYPES, 0, 1);
        // Strides take the phase-grid kernel, stride 1 the one without phases.
        let op = if p.strides.iter().all(|&s| s == 1) { Op::BwdWeightTapShift } else { Op::BwdWeightTapShiftPhased };
        let Some(halo) = common::tap_shift_instance(op, t, dev) else {
            return (format!("{name}: no tap-shift kernels on RDNA3"), true);
        };
        forced_case(dev, module, at, name, p, t, halo.name, at.pick(&splits, 1, 1), at.seed(8000, 31))
    });
    let forced = |name: &str| BwdWeightConfig { instance: Some(name.into()), ..Default::default() };
    let (plain, phased) = ("bwdw_halo_f16_224x64x16_mma16x8", "bwdw_halo_phased_f16_224x64x16_mma16x8");
    let plan_err = |name: &str, p: &ConvProblem| plan(p, &forced(name), Family::Nvidia, 132).unwrap_err().to_string();
    let plain_own = [
        (vec![2, 4, 2, 16, 12, 3, 3, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1], "C a multiple of 8"),
        (vec![2, 4, 2, 16, 16, 3, 3, 9, 9, 2, 2, 1, 1, 1, 1, 1, 1], "stride 1 in every dim"),
    ];
    common::tap_shift_refusals(plain, &plain_own, |p| plan_err(plain, p));
    // The phase-grid kernel names the stride first, so its refusals are strided.
    for (v, why) in [
        (vec![2, 4, 2, 24, 16, 3, 3, 9, 9, 2, 2, 1, 1, 1, 1, 1, 1], "K a multiple of 8"),
        (vec![2, 4, 2, 16, 16, 5, 5, 9, 9, 2, 2, 1, 1, 2, 2, 2, 2], "at most 9 filter taps"),
        (vec![2, 4, 2, 16, 16, 3, 3, 19, 19, 5, 5, 1, 1, 1, 1, 1, 1], "at most 4 along y and x"),
        (vec![3, 4, 2, 16, 16, 1, 3, 3, 6, 7, 7, 2, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1], "stride 1 along z"),
        (vec![2, 4, 2, 16, 16, 3, 3, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1], "above 1 along one"),
    ] {
        let e = plan_err(phased, &prob(&v));
        assert!(e.contains(&format!("{phased} does not apply")) && e.contains(why), "{v:?}: {e}");
    }
    let rx16 = prob(&[2, 32, 64, 16, 16, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1]);
    // Chosen where every workgroup gets two row tiles or more: ResNeXt
    // 16->16 at 14x14 (not on RDNA3, which has no instance), not at 7x7.
    let rx16_7 = prob(&[2, 32, 64, 16, 16, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1]);
    // Strided problems fit (forced above) but keep the GEMM: the phase grids
    // were slower on the H100 (ResNeXt 8->8 at stride 2).
    let rx8_s2 = prob(&[2, 32, 64, 8, 8, 3, 3, 56, 56, 2, 2, 1, 1, 1, 1, 1, 1]);
    assert!(plan(&rx8_s2, &forced(phased), Family::Nvidia, 132).is_ok());
    for family in Family::ALL {
        let strided = plan(&rx8_s2, &BwdWeightConfig::default(), family, 132).unwrap().main.instance;
        assert_eq!(strided.op, Op::BwdWeight, "{family:?} stride 2: {}", strided.name);
        let auto = plan(&rx16, &BwdWeightConfig::default(), family, 132).unwrap().main.instance;
        let rdna = matches!(family, Family::Rdna3 | Family::Rdna4);
        assert_eq!(auto.op == Op::BwdWeightTapShift, !rdna, "{family:?}: {}", auto.name);
        let small = plan(&rx16_7, &BwdWeightConfig::default(), family, 132).unwrap().main.instance;
        assert_eq!(small.op, Op::BwdWeight, "{family:?} 7x7: {}", small.name);
        let det = BwdWeightConfig { deterministic: true, ..Default::default() };
        let det = plan(&rx16, &det, family, 132).unwrap().main.instance;
        assert_eq!(det.op, Op::BwdWeight, "{family:?} deterministic: {}", det.name);
    }
}

/// `problems` on the TMA instances on sm_90, forced: 16-bit types, ring
/// depths (3 stages on even problem places, 6 on odd), split-K none,
/// automatic, deterministic (a bitwise repeat) and fixed in turn, seeds
/// from `seed`.
fn tma_sweep(problems: &[(&str, ConvProblem)], seed: (u64, u64)) {
    use convgrad::types::instance::Op;
    let splits = [(SplitK::Fixed(1), false), (SplitK::Auto, false), (SplitK::Fixed(3), true), (SplitK::Fixed(2), false)];
    sweep(&[EmuArch::Sm90], problems, 2, |dev, module, at, name, p| {
        if !dev.family().runs(Family::Hopper) {
            return (format!("{name}: no TMA kernels on {:?}", dev.family()), true);
        }
        let t = at.pick(&common::TAP_SHIFT_TYPES, 0, 1);
        let tmas: Vec<_> =
            convgrad::types::instance::INSTANCES.iter().filter(|i| i.op == Op::BwdWeightTma && i.types == t).collect();
        assert!(tmas.len() >= 2, "a TMA instance per ring depth and 16-bit type");
        let tma = at.pick(&tmas, 1, 0);
        forced_case(dev, module, at, name, p, t, tma.name, at.pick(&splits, 1, 1), at.seed(seed.0, seed.1))
    });
}

/// Backward-weight of 1x1 layers on the TMA main loop (both operands
/// MN-major boxes of the tensor maps): K, C and pixel tails, groups whose K
/// ends inside a box, rings that wrap around, split-K atomic and
/// deterministic (bitwise reproducible), the epilogues, both channels-last
/// layout families, f16 and bf16, on the sm_90 model (boxes land late, at
/// the first wait on their mbarrier). Problems the kernel cannot run are
/// refused by name; the hand rules take it on Hopper only, in place of the
/// `cp.async` tile of the same size.
#[test]
fn bwd_weight_tma() {
    use convgrad::types::instance::Op;
    let problems = [
        ("K, C, pixel tails", prob(&[2, 1, 2, 96, 160, 1, 1, 9, 10, 1, 1, 1, 1, 0, 0, 0, 0])),
        ("G=3 K=72 C=64", prob(&[2, 3, 3, 72, 64, 1, 1, 7, 9, 1, 1, 1, 1, 0, 0, 0, 0])),
        // 7 slabs of 64 pixels: the 3-stage ring wraps twice unsplit.
        ("K=C=128 ring wraps", prob(&[2, 1, 2, 128, 128, 1, 1, 13, 17, 1, 1, 1, 1, 0, 0, 0, 0])),
        // 14 slabs: the 6-stage ring (picked for odd problem places) wraps too.
        ("K=C=128 ring6 wraps", prob(&[2, 1, 2, 128, 128, 1, 1, 20, 21, 1, 1, 1, 1, 0, 0, 0, 0])),
        ("1d", prob(&[1, 1, 3, 64, 136, 1, 50, 1, 1, 0, 0])),
        ("3d", prob(&[3, 1, 2, 80, 64, 1, 1, 1, 3, 5, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0])),
    ];
    tma_sweep(&problems, (9300, 43));
    let forced = BwdWeightConfig { instance: Some("bwdw_f16_128x128x64_tma".into()), ..Default::default() };
    for (v, why) in [
        (vec![3, 1, 2, 64, 128, 3, 3, 3, 5, 5, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "2-D problem"),
        (vec![2, 1, 2, 64, 128, 1, 1, 99, 9, 9, 2, 1, 1, 0, 0, 0, 0], "at most 8"),
        (vec![2, 1, 2, 64, 96, 3, 3, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1], "a multiple of 64"),
        // Grouped: no channel pack (with G = 1 it runs on the packed copies).
        (vec![2, 2, 2, 64, 60, 1, 1, 9, 9, 1, 1, 1, 1, 0, 0, 0, 0], "16-byte"),
        (vec![2, 1, 2, 32, 128, 1, 1, 9, 9, 1, 1, 1, 1, 0, 0, 0, 0], "half the tile's rows"),
        (vec![2, 1, 2, 64, 32, 1, 1, 9, 9, 1, 1, 1, 1, 0, 0, 0, 0], "half the tile's columns"),
    ] {
        let e = plan(&prob(&v), &forced, Family::Hopper, 132).unwrap_err().to_string();
        assert!(e.contains("bwdw_f16_128x128x64_tma does not apply") && e.contains(why), "{v:?}: {e}");
    }
    let one = [2, 1, 64, 1024, 256, 1, 1, 14, 14, 1, 1, 1, 1, 0, 0, 0, 0];
    let nchw = BwdWeightConfig { layout: ConvLayout::NgchwGkcyxNgkhw, ..forced.clone() };
    let e = plan(&prob(&one), &nchw, Family::Hopper, 132).unwrap_err().to_string();
    assert!(e.contains("K contiguous in dy"), "{e}");
    let cfg = BwdWeightConfig { types: TypeConfig::F16, ..Default::default() };
    let chosen = |v: &[usize], family| plan(&prob(v), &cfg, family, 132).unwrap().main.instance.op;
    // ResNet-50's layer3 1x1 256->1024 at batch 64: the 128x128 tile, 16
    // tiles, so the 6-stage ring (at most one workgroup per SM of 132).
    assert_eq!(chosen(&one, Family::Hopper), Op::BwdWeightTma);
    let ring = |v: &[usize], cus| {
        let i = plan(&prob(v), &cfg, Family::Hopper, cus).unwrap().main.instance;
        assert_eq!(i.op, Op::BwdWeightTma, "{v:?}");
        i.tile.stages(i.atom)
    };
    assert_eq!(ring(&one, 132), 6);
    assert_eq!(ring(&one, 8), 3);
    assert_ne!(chosen(&one, Family::Nvidia), Op::BwdWeightTma);
}

/// The TMA kernel on filters with taps: each reduction step a block of 64
/// output pixels, `dy` read at the block's corner and `x` at the corner
/// shifted by `tap * dilation - pad` (zeros past every edge, negative
/// coordinates included), a column box of 64 channels per tap. Tails of K
/// and of the pixel blocks, dilation, asymmetric padding, a 1x1 filter with
/// padding, groups, 1-D; split-K none, automatic, deterministic (bitwise
/// repeat); rings that wrap.
#[test]
fn bwd_weight_tma_taps() {
    use convgrad::types::instance::Op;
    let problems = [
        ("3x3 pad 1, K=96 C=128", prob(&[2, 1, 2, 96, 128, 3, 3, 9, 10, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("3x3 dilation 2, G=2, 7x7 N=3", prob(&[2, 2, 3, 72, 64, 3, 3, 7, 7, 1, 1, 2, 2, 2, 2, 2, 2])),
        ("5x3 pads (2,0) / (1,2)", prob(&[2, 1, 2, 64, 64, 5, 3, 8, 11, 1, 1, 1, 1, 2, 0, 1, 2])),
        // 8 blocks of 64 pixels: both rings wrap unsplit.
        ("3x3 ring wraps", prob(&[2, 1, 2, 128, 192, 3, 3, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("1x1 pad 1", prob(&[2, 1, 2, 64, 64, 1, 1, 6, 5, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("1x7 pad 3, 1-D", prob(&[1, 1, 2, 80, 64, 7, 37, 1, 1, 3, 3])),
        // Strides: x's box steps by them (the map's element strides).
        ("3x3 stride 2 pad 1", prob(&[2, 1, 2, 64, 128, 3, 3, 15, 14, 2, 2, 1, 1, 1, 1, 1, 1])),
        // Several blocks along W and H (5 x 35 output pixels).
        ("3x3 stride 2, wide", prob(&[2, 1, 2, 64, 64, 3, 3, 9, 70, 2, 2, 1, 1, 1, 1, 1, 1])),
        ("1x1 stride 2", prob(&[2, 1, 3, 96, 64, 1, 1, 13, 12, 2, 2, 1, 1, 0, 0, 0, 0])),
        ("3x3 stride (3,2) dilation 2", prob(&[2, 1, 2, 64, 64, 3, 3, 17, 16, 3, 2, 2, 2, 2, 1, 2, 1])),
    ];
    tma_sweep(&problems, (9400, 47));
    // The hand rules take it on Hopper for taps and strides with the
    // 3-stage ring: the 128x128 tile where K fills its 128 rows
    // (tuning-log 2026-11-29b); the 64x128 one where K is 64 (ResNet-50
    // layer1 3x3, U-Net's dec1) or where its tiles fill the 132 SMs unsplit
    // while the 128x128 ones fall short of two rounds (ResNet-50 layer4
    // 3x3: 288 / 144 tiles; a ConvNeXt-like 2x2 stride-2 downsampling
    // 384->768, folded: 144 / 72); not off Hopper (tuning-log 2026-11-29c).
    let cfg = BwdWeightConfig { types: TypeConfig::F16, ..Default::default() };
    let chosen = |v: &[usize], family| plan(&prob(v), &cfg, family, 132).unwrap().main.instance;
    for (v, bm) in [
        (&[2, 1, 64, 256, 256, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1][..], 128),
        (&[2, 1, 64, 512, 256, 1, 1, 56, 56, 2, 2, 1, 1, 0, 0, 0, 0], 128),
        (&[2, 1, 16, 512, 512, 3, 3, 64, 64, 1, 1, 4, 4, 4, 4, 4, 4], 128),
        (&[2, 1, 64, 64, 64, 3, 3, 56, 56, 1, 1, 1, 1, 1, 1, 1, 1], 64),
        (&[2, 1, 16, 64, 128, 3, 3, 256, 256, 1, 1, 1, 1, 1, 1, 1, 1], 64),
        (&[2, 1, 64, 512, 512, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1], 64),
        (&[2, 1, 64, 768, 384, 2, 2, 14, 14, 2, 2, 1, 1, 0, 0, 0, 0], 64),
    ] {
        let i = chosen(v, Family::Hopper);
        assert_eq!((i.op, i.tile.bm, i.tile.stages(i.atom)), (Op::BwdWeightTma, bm, 3), "{v:?}");
        assert_ne!(chosen(v, Family::Nvidia).op, Op::BwdWeightTma, "{v:?}");
    }
    // K = 32: neither TMA tile.
    assert_ne!(chosen(&[2, 1, 64, 32, 128, 3, 3, 28, 28, 1, 1, 1, 1, 1, 1, 1, 1], Family::Hopper).op, Op::BwdWeightTma);
}

/// The hand rules' TMA tile on problems the plan folds (stride == filter
/// along x: x's taps become channels): ConvNeXt's 2x2 stride-2
/// downsampling, a `1 x 2` stride-`(1, 2)` filter that folds to 1x1, a
/// 4x4 patch of 16 channels, the 64x128 tile at K = 64. The tensor maps must describe the folded
/// problem the kernel runs (a training step once failed here with "the TMA
/// plan's argument block does not match its problem"), and the result the
/// problem as given.
#[test]
fn bwd_weight_tma_folded() {
    use convgrad::types::instance::Op;
    let problems = [
        ("ConvNeXt down 2x2 s2", prob(&[2, 1, 2, 128, 64, 2, 2, 8, 12, 2, 2, 1, 1, 0, 0, 0, 0])),
        ("1x2 s(1,2) to 1x1", prob(&[2, 1, 2, 128, 64, 1, 2, 6, 8, 1, 2, 1, 1, 0, 0, 0, 0])),
        ("patch 4x4 s4 C=16", prob(&[2, 1, 2, 128, 16, 4, 4, 8, 8, 4, 4, 1, 1, 0, 0, 0, 0])),
        // K = 64: the 64x128 tile.
        ("2x2 s2 K=64", prob(&[2, 1, 2, 64, 64, 2, 2, 8, 12, 2, 2, 1, 1, 0, 0, 0, 0])),
    ];
    sweep(&[EmuArch::Sm90], &problems, 2, |dev, module, at, name, p| {
        // On another GPU (`CONVGRAD_TEST_BACKEND`, e.g. the isa executor's gfx942) there is no TMA tile.
        if !dev.family().runs(Family::Hopper) {
            return (format!("{name}: no TMA kernels on {:?}", dev.family()), true);
        }
        let types = [TypeConfig::F16, TypeConfig::Bf16][at.j];
        let cfg = BwdWeightConfig { types, ..Default::default() };
        let o = case(*p, cfg, at.seed(9500, 41), at.pick(&INITS, 1, 1)).check(dev, module, name);
        let tma = convgrad::types::instance::INSTANCES.iter().any(|i| i.name == o.instance && i.op == Op::BwdWeightTma);
        let folded = o.describe.contains(" folded");
        (format!("{} -> {} (TMA {tma}, folded {folded}): {}", types.name(), o.describe, o.report.summary()), o.passed() && tma && folded)
    });
}

/// The tile heuristic's measured decisions, per family: the 16-row tile only
/// where K fits it (K = 16), 64 rows for K = 32 (faster than 16 or 32 rows on
/// the H200), the direct kernel below 8 output channels per group; smaller
/// tiles for short reductions (H100, tuning-log 2026-11-26f).
#[test]
fn bwd_weight_tile_choice() {
    use convgrad::types::instance::Op;
    for family in [Family::Cdna, Family::Rdna3, Family::Rdna4, Family::Nvidia] {
        for (k, want) in [(16, Some(16)), (32, Some(64)), (4, None)] {
            let p = prob(&[2, 32, 4, k, 16, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1]);
            let cfg = BwdWeightConfig { types: TypeConfig::F16, ..Default::default() };
            let inst = plan(&p, &cfg, family, 100).unwrap().main.instance;
            let got = (inst.op == Op::BwdWeight).then_some(inst.tile.bm);
            assert_eq!(got, want, "{family:?} K={k}: chose {}", inst.name);
        }
    }
    // NVIDIA's 16-row tiles by padding: 48 columns for 3x3 filters of C = 16
    // (144 columns, or 36 at C = 4), 64 for 1x1 of C = 64.
    for family in [Family::Nvidia, Family::Hopper] {
        for (c, f, bn) in [(16, 3, 48), (4, 3, 48), (64, 1, 64)] {
            let p = prob(&[2, 32, 4, 16, c, f, f, 14, 14, 1, 1, 1, 1, f / 2, f / 2, f / 2, f / 2]);
            for types in [TypeConfig::F16, TypeConfig::Bf16] {
                let cfg = BwdWeightConfig { types, ..Default::default() };
                let inst = plan(&p, &cfg, family, 132).unwrap().main.instance;
                assert_eq!((inst.tile.bm, inst.tile.bn), (16, bn), "{family:?} {} C={c} {f}x{f}: chose {}", types.name(), inst.name);
            }
        }
    }
    // Hopper: the warpgroup tiles before mma.sync of the same shape, f16 and bf16.
    for (ch, bm) in [(256, 128), (64, 64)] {
        let p = prob(&[2, 1, 32, ch, ch, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1]);
        for types in [TypeConfig::F16, TypeConfig::Bf16] {
            let cfg = BwdWeightConfig { types, ..Default::default() };
            let inst = plan(&p, &cfg, Family::Hopper, 132).unwrap().main.instance;
            assert!(inst.atom.warpgroup() && inst.tile.bm == bm, "{} {ch}ch: chose {}", types.name(), inst.name);
        }
    }
}

/// Stride == filter along x (ViT's patch embedding, ConvNeXt's stem and
/// downsampling, 1-D `k == s`): where x's channels lie back to back the
/// kernels run the problem folded (x's taps as channels; `describe` says so)
/// and pass against the reference of the problem as given, with trailing
/// input columns outside every window too; channels-first layouts and pads
/// run unfolded and pass.
#[test]
fn bwd_weight_stride_equals_filter() {
    let problems = common::stride_equals_filter(true);
    let named: Vec<(&str, ConvProblem)> = problems.iter().map(|&(n, p, _)| (n, p)).collect();
    sweep(&[EmuArch::Gfx942, EmuArch::Gfx1100, EmuArch::Sm90], &named, 3, |dev, module, at, name, p| {
        let layout = at.pick(&ConvLayout::ALL, 1, 1);
        let cfg = rotated(at, layout, at.pick(&TypeConfig::ALL, 1, 2), [(1, 1), (1, 2), (0, 1)]);
        let o = case(*p, cfg.clone(), at.seed(9000, 13), at.pick(&INITS, 1, 1)).check(dev, module, name);
        let want = problems[at.i].2 && common::channels_last(layout, p.g);
        // Not "unfolded" (small-C inputs with padding, copied first).
        let folded = o.describe.contains(" folded");
        let line = format!("{} -> {} (folded {folded}, expected {want}): {}", label(&cfg), o.describe, o.report.summary());
        (line, o.passed() && folded == want)
    });
}

/// Small-C inputs (RGB stems, 1-4 channels, 1-D to 3-D, strides, dilations,
/// asymmetric pads) run unfolded into channels where the GEMM would gather
/// them element by element: 2-byte types with channels-last weights (not
/// where the direct kernel runs). Every
/// layout, type, epilogue and split-K mode against the reference, and the
/// plan says whether it unfolded.
#[test]
fn bwd_weight_small_c_unfolded() {
    let named = [
        ("ResNet stem 7x7 s2", prob(&[2, 1, 2, 64, 3, 7, 7, 30, 30, 2, 2, 1, 1, 3, 3, 3, 3])),
        ("U-Net 3x3 s1 RGB", prob(&[2, 1, 2, 32, 3, 3, 3, 20, 20, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("MobileNet 3x3 s2 RGB", prob(&[2, 1, 2, 32, 3, 3, 3, 21, 21, 2, 2, 1, 1, 1, 1, 1, 1])),
        ("3-D 4 channels", prob(&[3, 1, 1, 16, 4, 3, 3, 3, 8, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("1-D 2 channels dilated", prob(&[1, 1, 2, 24, 2, 5, 40, 2, 2, 2, 2])),
        ("1 channel 5x5 asym", prob(&[2, 1, 2, 16, 1, 5, 5, 19, 23, 1, 2, 1, 1, 2, 1, 1, 2])),
    ];
    sweep(&[EmuArch::Gfx942, EmuArch::Gfx1100, EmuArch::Sm90], &named, 3, |dev, module, at, name, p| {
        let layout = at.pick(&ConvLayout::ALL, 1, 1);
        let cfg = rotated(at, layout, at.pick(&TypeConfig::ALL, 1, 2), [(1, 1), (1, 2), (0, 1)]);
        let o = case(*p, cfg.clone(), at.seed(11000, 7), at.pick(&INITS, 1, 1)).check(dev, module, name);
        // Never a GEMM gathering the channels one by one where they could be
        // unfolded; the direct kernel's tiny GEMMs (some of these small
        // problems, unfolded or not) need no vectors. Unfolded only where eligible.
        let eligible = cfg.types.act().bytes() == 2 && layout != ConvLayout::NgchwGkcyxNgkhw;
        let unfolded = o.describe.contains("unfolded");
        let gathers = !unfolded && !o.instance.starts_with("bwdw_direct");
        let ok = if eligible { !gathers } else { !unfolded };
        let line = format!("{} -> {} (unfolded {unfolded}, eligible {eligible}): {}", label(&cfg), o.describe, o.report.summary());
        (line, o.passed() && ok)
    });
}

/// Odd channel counts (`C` or `K` not a multiple of 8, 2-byte types, `G` =
/// 1): the plan copies `x` (where `C` is `dW`'s innermost axis) and/or `dy`
/// with those channels zero padded to whole vectors into the workspace, the
/// GEMM runs on the copies and its stores skip `dW`'s padding rows and
/// columns (YOLOv5's 255-channel heads, ShuffleNet's 58 and 116); split-K
/// modes and epilogues rotate. f32 and grouped problems run unpacked.
#[test]
fn bwd_weight_channel_pack() {
    let named = [
        ("YOLO head 1x1 K=255", prob(&[2, 1, 2, 255, 64, 1, 1, 6, 7, 1, 1, 1, 1, 0, 0, 0, 0])),
        ("ShuffleNet 1x1 C=K=58", prob(&[2, 1, 2, 58, 58, 1, 1, 7, 6, 1, 1, 1, 1, 0, 0, 0, 0])),
        ("3x3 C=116 K=24", prob(&[2, 1, 2, 24, 116, 3, 3, 5, 6, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("3x3 s2 C=13 K=100", prob(&[2, 1, 2, 100, 13, 3, 3, 9, 8, 2, 2, 1, 1, 1, 1, 1, 1])),
        ("grouped C=K=12 per group", prob(&[2, 2, 2, 12, 12, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1])),
    ];
    sweep(&[EmuArch::Gfx942, EmuArch::Gfx1100, EmuArch::Sm90], &named, 3, |dev, module, at, name, p| {
        let layout = at.pick(&ConvLayout::ALL, 1, 2);
        let cfg = rotated(at, layout, at.pick(&TypeConfig::ALL, 1, 1), [(1, 1), (1, 2), (0, 1)]);
        let o = case(*p, cfg.clone(), at.seed(12500, 7), at.pick(&INITS, 1, 1)).check(dev, module, name);
        let two = cfg.types.act().bytes() == 2 && cfg.types.act() == cfg.types.wei() && p.g == 1;
        let c_inner = layout != ConvLayout::NgchwGkcyxNgkhw;
        let eligible = two && (!p.k.is_multiple_of(8) || (!p.c.is_multiple_of(8) && c_inner));
        let packed = o.describe.contains("channel-packed");
        let gathers = !packed && !o.instance.starts_with("bwdw_direct");
        let ok = if eligible { !gathers } else { !packed };
        let line = format!("{} -> {} (packed {packed}, eligible {eligible}): {}", label(&cfg), o.describe, o.report.summary());
        (line, o.passed() && ok)
    });
}
