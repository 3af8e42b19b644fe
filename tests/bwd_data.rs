//! Grouped backward-data (plain and with fused multi-D epilogues) on the
//! emulator, for the gfx942 (MFMA), gfx1100 (WMMA) and sm_90 (mma.sync)
//! models: every kernel path against the float64 reference, with fresh random
//! inputs per case and NaN-poisoned outputs (every element must be written,
//! including pixels that no filter tap reaches).

mod common;

use common::{Check, DIRECT_LAYOUTS, INITS, device, every_instance, prob, sweep};
use convgrad::check::Init;
use convgrad::ops::bwd_data::{BwdDataConfig, DLayout, plan};
use convgrad::ops::OpError;
use convgrad::runtime::EmuArch;
use convgrad::types::instance::{Family, Op};
use convgrad::types::{ConvLayout, ConvProblem, EpilogueOp, TypeConfig};
use convgrad::verify::bwd_data::Case;

/// The dtypes backward-data takes.
const TYPES: [TypeConfig; 3] = [TypeConfig::F32, TypeConfig::F16, TypeConfig::Bf16];

/// Problems covering dims, strides 1 to 4 (and larger than the filter),
/// dilations (also sharing a factor with the stride), asymmetric pads, 1x1
/// with stride 2, groups, depthwise and odd C/K.
fn problems() -> Vec<(&'static str, ConvProblem)> {
    common::sweep_problems(
        [
            ("1d stride3 dil3 odd C/K", prob(&[1, 1, 2, 5, 3, 4, 20, 3, 3, 2, 1])),
            ("2d depthwise stride2", prob(&[2, 32, 2, 1, 1, 3, 3, 9, 8, 2, 2, 1, 1, 1, 1, 1, 1])),
            ("2d many channels (multi-tile N)", prob(&[2, 1, 1, 24, 136, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1])),
        ],
        [("2d small C (direct)", prob(&[2, 4, 2, 4, 3, 3, 3, 10, 9, 1, 2, 1, 1, 1, 1, 0, 1]))],
    )
}

/// Epilogues with their D layouts and whether D0 aliases dx.
fn epilogues() -> Vec<(Vec<EpilogueOp>, Vec<DLayout>, bool)> {
    use EpilogueOp::*;
    vec![
        (vec![], vec![], false),
        (vec![AddRelu], vec![DLayout::PerChannel], false),
        (vec![Bilinear(0.75, -1.5)], vec![DLayout::Output], true),
        (vec![Scale(0.5)], vec![], false),
        (vec![Add, ReluMask], vec![DLayout::Output, DLayout::PerPixel], false),
        (vec![ReluMask, Add, Bilinear(2.0, 0.5), AddRelu], vec![
            DLayout::Full(ConvLayout::GnhwcGkyxcGnhwk),
            DLayout::PerChannel,
            DLayout::Output,
            DLayout::PerPixel,
        ], false),
        (vec![Add], vec![DLayout::Output], true),
    ]
}

/// An untimed, undumped case with fresh random inputs.
fn case(problem: ConvProblem, config: BwdDataConfig, seed: u64, init: Init, alias_d0: bool) -> Case {
    Case { problem, config, seed, init, alias_d0, timed_runs: 0, dump: false }
}

/// The configuration of a case with `epi` (an entry of [`epilogues`]) and
/// its options in one line.
fn with_epilogue(base: BwdDataConfig, epi: (Vec<EpilogueOp>, Vec<DLayout>, bool)) -> (BwdDataConfig, bool, String) {
    let (epilogue, d_layouts, alias) = epi;
    let cfg = BwdDataConfig { epilogue, d_layouts, ..base };
    let (t, l) = (cfg.types.name(), cfg.layout.name());
    let label = format!("{t} {l} {:?} {:?} alias={alias}", cfg.epilogue, cfg.d_layouts);
    (cfg, alias, label)
}

/// Runs the suite on one architecture model; dtypes, layouts and epilogues
/// rotate over the problems so every combination kind appears.
fn suite(arch: EmuArch) {
    let epis = epilogues();
    sweep(&[arch], &problems(), 3, |dev, module, at, name, p| {
        let base = BwdDataConfig { layout: at.pick(&ConvLayout::ALL, 1, 3), types: at.pick(&TYPES, 1, 1), ..Default::default() };
        let (cfg, alias, label) = with_epilogue(base, at.pick(&epis, 2, 1));
        let o = case(*p, cfg, at.seed(2000, 17), at.pick(&INITS, 0, 1), alias).check(dev, module, name);
        (format!("{label} -> {}: {}", o.instance, o.report.summary()), o.passed())
    });
}

common::per_arch!(suite; bwd_data_gfx942_mfma => Gfx942, bwd_data_gfx1100_wmma => Gfx1100, bwd_data_gfx1200_wmma => Gfx1200, bwd_data_gfx950_mfma => Gfx950, bwd_data_sm90_mma_sync => Sm90);

/// Every bwd-data instance of every family runs and passes on a strided
/// problem spanning several tiles in M and N, with a reduction tail.
#[test]
fn bwd_data_every_instance() {
    let p = prob(&[2, 2, 1, 20, 70, 3, 3, 11, 11, 2, 2, 1, 1, 1, 1, 1, 1]);
    every_instance(&[Op::BwdData, Op::BwdDataDirect], |inst| {
        let cfg = BwdDataConfig {
            types: inst.types,
            instance: Some(inst.name.into()),
            epilogue: vec![EpilogueOp::AddRelu],
            d_layouts: vec![DLayout::PerChannel],
            ..Default::default()
        };
        case(p, cfg, 78, Init::Float, false)
    });
}

/// Bad requests get errors that name the field, before anything runs.
#[test]
fn bwd_data_bad_requests() {
    let p = prob(&[2, 1, 1, 8, 8, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1]);
    let err = |cfg: &BwdDataConfig| plan(&p, cfg, Family::Nvidia, 132).unwrap_err().to_string();
    let e = err(&BwdDataConfig { types: TypeConfig::Bf16F32, ..Default::default() });
    assert!(e.contains("bf16-f32") && e.contains("f32, f16 and bf16"), "{e}");
    let e = err(&BwdDataConfig { instance: Some("bwdw_f16_64x64x32_mma16x8".into()), ..Default::default() });
    assert!(e.contains("does not apply"), "{e}");
    let e = err(&BwdDataConfig { epilogue: vec![EpilogueOp::Add; 5], ..Default::default() });
    assert!(e.contains("epilogue"), "{e}");
    let e = err(&BwdDataConfig { d_layouts: vec![DLayout::PerChannel], ..Default::default() });
    assert!(e.contains("D layout"), "{e}");
    // A D that aliases dx in a broadcast layout would race: refused at execute.
    let (dev, module) = device(EmuArch::Sm90);
    let cfg = BwdDataConfig { epilogue: vec![EpilogueOp::Add], d_layouts: vec![DLayout::PerChannel], ..Default::default() };
    let pl = plan(&p, &cfg, dev.family(), dev.compute_units()).unwrap();
    let [dy, w, buf] = [pl.dy.span(), pl.w.span(), pl.dx.span()].map(|n| dev.alloc::<u16>(n as usize).unwrap());
    let ds = [buf.device_addr()];
    let bufs = convgrad::ops::bwd_data::BwdDataBuffers { dy: dy.device_addr(), w: w.device_addr(), dx: buf.device_addr(), ds: &ds, workspace: 0 };
    // SAFETY: buffers of `dev` spanning the plan's tensors; D0 at dx's address, which `execute` refuses.
    let e = unsafe { convgrad::ops::bwd_data::execute(&dev, &module, &pl, bufs) }.unwrap_err();
    assert!(matches!(e, OpError::Usage(_)) && e.to_string().contains("aliases dx"), "{e}");
}

/// The direct kernel's channel-vector path (depthwise lanes along groups,
/// small groups along channels, 16- and 8-byte vectors, gathered or vector
/// weights) and its scalar fallback (channel runs that no vector divides,
/// channels-first layouts): strides, dilations, asymmetric pads, 1D-3D, every
/// dtype, epilogues reading broadcast D tensors or dx itself. Every path kind
/// must have run.
#[test]
fn bwd_data_direct_vector_paths() {
    use convgrad::types::params::vec_mode;
    let epis = epilogues();
    common::direct_vector_sweep(TYPES.len(), vec_mode::DY_KVEC, |dev, module, at, name, p| {
        let t = at.pick(&TYPES, 0, 1);
        let base = BwdDataConfig {
            layout: at.pick(&DIRECT_LAYOUTS, 1, 1),
            types: t,
            instance: Some(format!("bwdd_direct_{}", t.name())),
            ..Default::default()
        };
        let (cfg, alias, label) = with_epilogue(base, at.pick(&epis, 1, 2));
        let mode = plan(p, &cfg, dev.family(), dev.compute_units()).unwrap().args_template.direct.vec_mode;
        let o = case(*p, cfg, at.seed(4000, 31), at.pick(&INITS, 0, 1), alias).check(dev, module, name);
        (format!("{label} vec_mode={mode:#x}: {}", o.report.summary()), o.passed(), t, mode)
    });
}

/// The depthwise column-strip kernel (not built for CDNA, which keeps the
/// direct kernel: checked too): strips of several rows (and shorter
/// last strips), stride-2 classes with one or two taps per dim, dilation with
/// a tap step of one row, tapless classes (stride over the filter), 1D, 3D
/// with a flat filter, every dtype and epilogue (also D aliasing dx); on the
/// three models, with the chosen strip length and forced ones (1 to 7 rows).
/// Problems it cannot take are refused by name; the strip rule's measured
/// choices are pinned.
#[test]
fn bwd_data_depthwise_strips() {
    let problems = [
        ("depthwise 3x3 pad1, 3 strips", prob(&[2, 16, 2, 1, 1, 3, 3, 19, 10, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("depthwise stride2 asym", prob(&[2, 24, 2, 1, 1, 3, 3, 11, 12, 2, 2, 1, 1, 1, 0, 0, 1])),
        ("depthwise stride2 dil2", prob(&[2, 8, 2, 1, 1, 3, 3, 13, 14, 2, 2, 2, 2, 2, 1, 1, 2])),
        ("depthwise 2x3 asym pad", prob(&[2, 6, 1, 1, 1, 2, 3, 17, 9, 1, 1, 1, 1, 0, 1, 1, 1])),
        ("depthwise 1d", prob(&[1, 8, 2, 1, 1, 3, 23, 1, 1, 1, 1])),
        ("depthwise 3d 1x3x3", prob(&[3, 4, 1, 1, 1, 1, 3, 3, 3, 9, 8, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1])),
        ("depthwise stride3 > filter", prob(&[2, 10, 2, 1, 1, 2, 2, 9, 11, 3, 3, 1, 1, 0, 0, 0, 2])),
        ("depthwise x dil2", prob(&[2, 4, 2, 1, 1, 3, 2, 12, 11, 1, 1, 1, 2, 1, 1, 1, 1])),
        ("depthwise 3 rows", prob(&[2, 2, 3, 1, 1, 3, 3, 3, 40, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("depthwise 40 rows", prob(&[2, 4, 1, 1, 1, 3, 3, 40, 9, 1, 1, 1, 1, 1, 1, 1, 1])),
    ];
    let epis = epilogues();
    sweep(&[EmuArch::Gfx942, EmuArch::Gfx1100, EmuArch::Sm90], &problems, TYPES.len(), |dev, module, at, name, p| {
        let t = at.pick(&TYPES, 0, 1);
        let strips = !dev.family().runs(Family::Cdna);
        let strip_rows = at.pick(&[None, Some(1), Some(2), Some(4), Some(7)], 1, 1).filter(|_| strips);
        let (cfg, alias, _) = with_epilogue(BwdDataConfig { types: t, strip_rows, ..Default::default() }, at.pick(&epis, 1, 3));
        let o = case(*p, cfg.clone(), at.seed(6000, 29), at.pick(&INITS, 1, 1), alias).check(dev, module, name);
        let (epi, dl) = (&cfg.epilogue, &cfg.d_layouts);
        let line = format!("{} rows={strip_rows:?} {epi:?} {dl:?} alias={alias} -> {}: {}", t.name(), o.instance, o.report.summary());
        let want = format!("bwdd_{}_{}", if strips { "depthwise" } else { "direct" }, t.name());
        (line, o.instance == want && o.passed())
    });
    // Forced where it does not apply: groups not innermost, a 5-tall filter.
    let forced = BwdDataConfig { types: TypeConfig::F16, instance: Some("bwdd_depthwise_f16".into()), ..Default::default() };
    let depthwise = |f: usize| prob(&[2, 8, 2, 1, 1, f, f, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1]);
    for (p, layout) in [(depthwise(3), ConvLayout::GnhwcGkyxcGnhwk), (depthwise(5), ConvLayout::NhwgcGkyxcNhwgk)] {
        let e = plan(&p, &BwdDataConfig { layout, ..forced.clone() }, Family::Nvidia, 132).unwrap_err().to_string();
        assert!(e.contains("bwdd_depthwise_f16 does not apply") && e.contains("bwdd_direct_f16"), "{e}");
    }
    // Automatically: strips for a 3x3 depthwise problem, the direct kernel for 5x5.
    let auto = BwdDataConfig { types: TypeConfig::F16, ..Default::default() };
    for family in Family::ALL {
        let want = if family.runs(Family::Cdna) { "bwdd_direct_f16" } else { "bwdd_depthwise_f16" };
        assert_eq!(plan(&depthwise(3), &auto, family, 132).unwrap().main.instance.name, want);
        assert_eq!(plan(&depthwise(5), &auto, family, 132).unwrap().main.instance.name, "bwdd_direct_f16");
    }
    // Strip lengths on 132 SMs (H200 timings at `depthwise_strip_count`).
    for (v, rows) in [
        ([2, 144, 64, 1, 1, 3, 3, 56, 56, 1, 1, 1, 1, 1, 1, 1, 1], 28),
        ([2, 384, 64, 1, 1, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1], 7),
        ([2, 32, 64, 1, 1, 3, 3, 112, 112, 1, 1, 1, 1, 1, 1, 1, 1], 28),
    ] {
        let pl = plan(&prob(&v), &auto, Family::Nvidia, 132).unwrap();
        assert_eq!(pl.args_template.strips.rows, rows, "{v:?}");
    }
    let e = plan(&depthwise(5), &BwdDataConfig { strip_rows: Some(4), ..auto.clone() }, Family::Nvidia, 132).unwrap_err();
    assert!(e.to_string().contains("strip_rows applies"), "{e}");
    let e = plan(&depthwise(3), &BwdDataConfig { strip_rows: Some(0), ..auto }, Family::Nvidia, 132).unwrap_err();
    assert!(e.to_string().contains("at least 1"), "{e}");
}

/// The tap-shift kernel (`bwdd_halo_*`, stride 1, at most 16 channels per
/// group): tiles that straddle images, a part-filled group set, C under the
/// tile's 16 (runs cut short), K = 8, dilation with asymmetric pads, a
/// filter smaller than the pads need, 1D, 3D with a 1-tall z filter, 1x1,
/// both channels-last layout families, f16 and bf16, rotating epilogues
/// (dx aliased too). Forced on every case so each runs it; problems it
/// cannot run are refused by name.
#[test]
fn bwd_data_tap_shifts() {
    let problems = common::tap_shift_problems(&[
        ("3x3 pad1, tiles across images", prob(&[2, 6, 2, 16, 16, 3, 3, 20, 21, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("K=8 C=12", prob(&[2, 5, 3, 8, 12, 3, 3, 9, 11, 1, 1, 1, 1, 1, 1, 1, 1])),
    ]);
    let epis = epilogues();
    // CDNA and NVIDIA (gfx1100 went to scratch; see the instance list).
    sweep(&[EmuArch::Gfx942, EmuArch::Gfx90a, EmuArch::Sm90], &problems, common::TAP_SHIFT_TYPES.len(), |dev, module, at, name, p| {
        let t = at.pick(&common::TAP_SHIFT_TYPES, 0, 1);
        let Some(halo) = common::tap_shift_instance(Op::BwdDataTapShift, t, dev) else {
            return (format!("{name}: no tap-shift kernels on RDNA3"), true);
        };
        let base = BwdDataConfig { layout: at.pick(&common::TAP_SHIFT_LAYOUTS, 1, 1), types: t, instance: Some(halo.name.into()), ..Default::default() };
        let (cfg, alias, label) = with_epilogue(base, at.pick(&epis, 1, 3));
        let o = case(*p, cfg, at.seed(7000, 31), at.pick(&INITS, 1, 1), alias).check(dev, module, name);
        (format!("{label} -> {}: {}", o.instance, o.report.summary()), o.passed())
    });
    let forced = BwdDataConfig { instance: Some("bwdd_halo_f16_224x64x16_mma16x8".into()), ..Default::default() };
    let own = [
        (vec![2, 4, 2, 16, 16, 3, 3, 9, 9, 2, 2, 1, 1, 1, 1, 1, 1], "stride 1"),
        (vec![2, 4, 2, 16, 32, 3, 3, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1], "C up to"),
        (vec![3, 4, 2, 16, 16, 3, 3, 3, 5, 5, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "z filter"),
    ];
    common::tap_shift_refusals("bwdd_halo_f16_224x64x16_mma16x8", &own, |p| {
        plan(p, &forced, Family::Nvidia, 132).unwrap_err().to_string()
    });
    let e = plan(&prob(&[2, 4, 2, 16, 16, 3, 3, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1]), &BwdDataConfig {
        layout: ConvLayout::NgchwGkcyxNgkhw,
        ..forced
    }, Family::Nvidia, 132)
    .unwrap_err()
    .to_string();
    assert!(e.contains("contiguous in dy"), "{e}");
}

/// Tap shifts over row segments (`bwdd_rows_*`, Hopper warpgroups): image
/// rows of more than one 64-pixel segment (the last part-filled) and an odd
/// number of rows (a half-empty band), K under 64 (the reduction stops at
/// 48), C over one 64-channel column tile and no multiple of 8 (element
/// weight copies, runs cut short), groups, dilation with asymmetric pads, an
/// unpadded 2x3 filter, 1D, 3D with a 1-tall z filter, f16 and bf16, both
/// channels-last layout families, rotating epilogues (dx aliased too).
/// Forced on every case (on the sm_90 model, whose warpgroup instruction the
/// emulator runs). The emulator counts its host cores as compute units, so
/// its few workgroups each walk several tiles. Problems the kernel cannot
/// run are refused by name.
#[test]
fn bwd_data_row_segments() {
    let problems = [
        ("3x3 pad1, 2 segments, 5 rows", prob(&[2, 1, 2, 64, 64, 3, 3, 5, 70, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("K=40 C=100", prob(&[2, 1, 1, 40, 100, 3, 3, 4, 64, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("G=2 1x3 dil2 asym pads", prob(&[2, 2, 1, 16, 24, 1, 3, 6, 40, 1, 1, 1, 2, 0, 2, 0, 1])),
        ("2x3 unpadded", prob(&[2, 1, 2, 24, 16, 2, 3, 5, 66, 1, 1, 1, 1, 0, 0, 0, 0])),
        ("1d", prob(&[1, 1, 3, 32, 16, 5, 150, 1, 1, 2, 2])),
        ("3d 1x3x3", prob(&[3, 1, 2, 16, 8, 1, 3, 3, 3, 6, 7, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1])),
    ];
    let epis = epilogues();
    sweep(&[EmuArch::Sm90], &problems, 2, |dev, module, at, name, p| {
        // Another backend named by CONVGRAD_TEST_BACKEND (isa:gfx942, sm_80) has no warpgroups.
        if !dev.family().runs(Family::Hopper) {
            return (format!("{name}: no row-segment kernels on {:?}", dev.family()), true);
        }
        let t = at.pick(&common::TAP_SHIFT_TYPES, 0, 1);
        let rows = convgrad::types::instance::INSTANCES
            .iter()
            .find(|i| i.op == Op::BwdDataRows && i.types == t)
            .expect("a row-segment instance per 16-bit type");
        let base = BwdDataConfig { layout: at.pick(&common::TAP_SHIFT_LAYOUTS, 1, 1), types: t, instance: Some(rows.name.into()), ..Default::default() };
        let (cfg, alias, label) = with_epilogue(base, at.pick(&epis, 1, 3));
        let o = case(*p, cfg, at.seed(9000, 37), at.pick(&INITS, 1, 1), alias).check(dev, module, name);
        (format!("{label} -> {}: {}", o.instance, o.report.summary()), o.passed())
    });
    let forced = BwdDataConfig { instance: Some("bwdd_rows_f16_128x64x64_wgmma".into()), ..Default::default() };
    for (v, why) in [
        (vec![2, 1, 2, 64, 64, 3, 3, 9, 70, 2, 2, 1, 1, 1, 1, 1, 1], "stride 1"),
        (vec![2, 1, 2, 72, 64, 3, 3, 9, 70, 1, 1, 1, 1, 1, 1, 1, 1], "K a multiple of 8 up to 64"),
        // Grouped: no channel pack (with G = 1 it runs on the packed copies).
        (vec![2, 2, 2, 20, 64, 3, 3, 9, 70, 1, 1, 1, 1, 1, 1, 1, 1], "K a multiple of 8 up to 64"),
        (vec![2, 1, 2, 64, 64, 5, 5, 9, 70, 1, 1, 1, 1, 2, 2, 2, 2], "at most 9 filter taps"),
        (vec![2, 1, 2, 64, 64, 3, 3, 9, 70, 1, 1, 2, 2, 2, 2, 2, 2], "288 pixels"),
        (vec![3, 1, 2, 16, 16, 3, 3, 3, 5, 5, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "z filter"),
    ] {
        let e = plan(&prob(&v), &forced, Family::Hopper, 132).unwrap_err().to_string();
        assert!(e.contains("bwdd_rows_f16_128x64x64_wgmma does not apply") && e.contains(why), "{v:?}: {e}");
    }
    let e = plan(&prob(&[2, 1, 2, 64, 64, 3, 3, 9, 70, 1, 1, 1, 1, 1, 1, 1, 1]), &BwdDataConfig {
        layout: ConvLayout::NgchwGkcyxNgkhw,
        ..forced.clone()
    }, Family::Hopper, 132)
    .unwrap_err()
    .to_string();
    assert!(e.contains("contiguous in dy"), "{e}");
    let e = plan(&prob(&[2, 1, 2, 64, 64, 3, 3, 9, 70, 1, 1, 1, 1, 1, 1, 1, 1]), &forced, Family::Nvidia, 132).unwrap_err().to_string();
    assert!(e.contains("does not apply"), "{e}");
}

/// `problems` on the TMA instances on sm_90, forced: 16-bit types, ring
/// depths (3 stages, two workgroups per SM; 6, one), channels-last layouts,
/// epilogues and inputs in turn, seeds from `seed`.
fn tma_sweep(problems: &[(&str, ConvProblem)], seed: (u64, u64)) {
    let epis = epilogues();
    sweep(&[EmuArch::Sm90], problems, 2, |dev, module, at, name, p| {
        if !dev.family().runs(Family::Hopper) {
            return (format!("{name}: no TMA kernels on {:?}", dev.family()), true);
        }
        let t = at.pick(&common::TAP_SHIFT_TYPES, 0, 1);
        let tmas: Vec<_> =
            convgrad::types::instance::INSTANCES.iter().filter(|i| i.op == Op::BwdDataTma && i.types == t).collect();
        assert!(tmas.len() >= 2, "a TMA instance per ring depth and 16-bit type");
        let tma = at.pick(&tmas, 1, 1);
        let base = BwdDataConfig { layout: at.pick(&common::TAP_SHIFT_LAYOUTS, 1, 1), types: t, instance: Some(tma.name.into()), ..Default::default() };
        let (cfg, alias, label) = with_epilogue(base, at.pick(&epis, 1, 3));
        let o = case(*p, cfg, at.seed(seed.0, seed.1), at.pick(&INITS, 1, 1), alias).check(dev, module, name);
        (format!("{label} -> {}: {}", o.instance, o.report.summary()), o.passed())
    });
}

/// The TMA GEMM (`bwdd_*_128x128x64_tma`, Hopper): 1x1 stride-1 layers
/// with tails in every GEMM dimension (pixels past the last 128-row tile,
/// C past a 128-column tile and under one, K past a 64-deep slab and under
/// one), groups (a 3-D map over dy's groups), 1-D and 3-D, f16 and bf16,
/// both ring depths (wrapping around: 8 slabs),
/// both channels-last layout families, rotating epilogues (dx aliased too).
/// Forced on every case on the sm_90 model, whose emulator lands each box
/// late (at the first wait on its mbarrier) with the 128-byte swizzle.
/// Problems the kernel cannot run are refused by name; the hand rules take
/// it for plain 1x1 layers on Hopper only.
#[test]
fn bwd_data_tma() {
    let problems = [
        ("M, C, K tails", prob(&[2, 1, 2, 96, 160, 1, 1, 9, 10, 1, 1, 1, 1, 0, 0, 0, 0])),
        ("K=40 C=72 G=2", prob(&[2, 2, 3, 40, 72, 1, 1, 7, 9, 1, 1, 1, 1, 0, 0, 0, 0])),
        ("K=200 C=264", prob(&[2, 1, 1, 200, 264, 1, 1, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0])),
        // 8 slabs: every ring (3 and 6 stages) wraps around.
        ("K=456 C=136 ring wraps", prob(&[2, 1, 2, 456, 136, 1, 1, 5, 7, 1, 1, 1, 1, 0, 0, 0, 0])),
        ("1d", prob(&[1, 1, 3, 64, 128, 1, 50, 1, 1, 0, 0])),
        ("3d", prob(&[3, 1, 2, 24, 64, 1, 1, 1, 3, 5, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0])),
    ];
    tma_sweep(&problems, (9100, 41));
    let forced = BwdDataConfig { instance: Some("bwdd_f16_128x128x64_tma".into()), ..Default::default() };
    for (v, why) in [
        (vec![3, 1, 2, 64, 128, 3, 3, 3, 5, 5, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "2-D problem"),
        (vec![2, 1, 2, 64, 128, 1, 1, 9, 9, 2, 2, 1, 1, 0, 0, 0, 0], "stride 1"),
        (vec![2, 1, 2, 64, 128, 3, 3, 9, 9, 2, 2, 1, 1, 1, 1, 1, 1], "stride 1"),
        (vec![2, 1, 2, 64, 32, 1, 1, 9, 9, 1, 1, 1, 1, 0, 0, 0, 0], "half the tile"),
        (vec![2, 2, 2, 60, 128, 1, 1, 9, 9, 1, 1, 1, 1, 0, 0, 0, 0], "16-byte"),
    ] {
        let e = plan(&prob(&v), &forced, Family::Hopper, 132).unwrap_err().to_string();
        assert!(e.contains("bwdd_f16_128x128x64_tma does not apply") && e.contains(why), "{v:?}: {e}");
    }
    // With G = 1 the odd K runs on channel-packed copies, which the tile takes.
    let packed = plan(&prob(&[2, 1, 2, 60, 128, 1, 1, 9, 9, 1, 1, 1, 1, 0, 0, 0, 0]), &forced, Family::Hopper, 132).unwrap();
    assert!(packed.pack.is_some() && packed.main.instance.op == Op::BwdDataTma, "{}", packed.describe());
    let one = [2, 1, 8, 64, 128, 1, 1, 14, 14, 1, 1, 1, 1, 0, 0, 0, 0];
    let e = plan(&prob(&one), &BwdDataConfig { layout: ConvLayout::NgchwGkcyxNgkhw, ..forced }, Family::Hopper, 132).unwrap_err().to_string();
    assert!(e.contains("K contiguous in dy"), "{e}");
    let cfg = BwdDataConfig { types: TypeConfig::F16, ..Default::default() };
    let chosen = |v: &[usize], family| plan(&prob(v), &cfg, family, 132).unwrap().main.instance.op;
    assert_eq!(chosen(&one, Family::Hopper), Op::BwdDataTma);
    assert_ne!(chosen(&one, Family::Nvidia), Op::BwdDataTma);
    // The ring: 6 stages where the grid holds at most one workgroup per SM
    // (132 here), else 3. ResNet-50's layer4 1x1 512->2048 (N = 64, 7x7:
    // 25 x 4 tiles) and layer3 256->1024 (14x14: 98 x 2).
    let ring = |v: &[usize]| {
        let i = plan(&prob(v), &cfg, Family::Hopper, 132).unwrap().main.instance;
        assert_eq!(i.op, Op::BwdDataTma, "{v:?}");
        i.tile.stages(i.atom)
    };
    assert_eq!(ring(&[2, 1, 64, 2048, 512, 1, 1, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0]), 6);
    assert_eq!(ring(&[2, 1, 64, 1024, 256, 1, 1, 14, 14, 1, 1, 1, 1, 0, 0, 0, 0]), 3);
    assert_ne!(chosen(&[2, 1, 8, 64, 128, 1, 1, 14, 14, 2, 2, 1, 1, 0, 0, 0, 0], Family::Hopper), Op::BwdDataTma);
}

/// The TMA kernel on filters with taps: each tile's rows a block of pixels,
/// each tap's A slab one box of `dy` shifted by `pad - tap * dilation`
/// (zeros read past every edge, negative coordinates included), `K`
/// padded to the tile's 64 per tap. Both rings wrap (9 taps or more); K, C,
/// N and pixel tails; dilation; asymmetric and one-sided padding; a 1x1
/// filter with padding; groups; the block shapes the host picks.
#[test]
fn bwd_data_tma_taps() {
    let problems = [
        ("3x3 pad 1, K=64 C=128", prob(&[2, 1, 2, 64, 128, 3, 3, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("3x3, K=72 C=136 N=3 7x7 tails", prob(&[2, 1, 3, 72, 136, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("3x3 dilation 2 pad 2, G=2", prob(&[2, 2, 2, 40, 64, 3, 3, 10, 12, 1, 1, 2, 2, 2, 2, 2, 2])),
        ("5x3 pads (2,0) / (1,2)", prob(&[2, 1, 2, 64, 96, 5, 3, 8, 11, 1, 1, 1, 1, 2, 0, 1, 2])),
        ("1x1 pad 1", prob(&[2, 1, 2, 64, 64, 1, 1, 6, 5, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("1x7 pad (0,3), 1-D", prob(&[1, 1, 2, 48, 80, 7, 37, 1, 1, 3, 3])),
    ];
    tma_sweep(&problems, (9200, 43));
    // The blocks the host picks: the least padding, wider first among equals.
    let forced = BwdDataConfig { instance: Some("bwdd_f16_128x128x64_tma".into()), ..Default::default() };
    for (v, blocks) in [
        ([2, 1, 64, 64, 64, 3, 3, 56, 56, 1, 1, 1, 1, 1, 1, 1, 1], "8x8x2"),
        ([2, 1, 64, 128, 128, 3, 3, 28, 28, 1, 1, 1, 1, 1, 1, 1, 1], "4x4x8"),
        ([2, 1, 64, 256, 256, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1], "2x2x32"),
        ([2, 1, 64, 512, 512, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1], "8x1x16"),
    ] {
        let d = plan(&prob(&v), &forced, Family::Hopper, 132).unwrap().describe();
        assert!(d.contains(&format!("TMA pixel blocks {blocks}")), "{v:?}: {d}");
    }
    // The hand rules take it on Hopper where C fills the 128-wide column
    // tile and K a box per tap, its ring as on 1x1 layers (6 stages where
    // the grid is one round of 132 SMs, else 3): ResNet-50 layer3 3x3
    // (N = 64, 14x14: 98 x 2 tiles), layer2 3x3 (C = 128), DeepLabV3's
    // dilated layer4, Stable Diffusion's 320-channel layer, U-Net's dec1
    // (K = 64, in place of the row segments), and layer4 3x3 at 7x7 (25 x 4
    // tiles, one round: 6 stages). Not C = 64, K = 32, or sm_80.
    let cfg = BwdDataConfig { types: TypeConfig::F16, ..Default::default() };
    let chosen = |v: &[usize], family| plan(&prob(v), &cfg, family, 132).unwrap().main.instance;
    for (v, ring) in [
        ([2, 1, 64, 256, 256, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1], 3),
        ([2, 1, 64, 128, 128, 3, 3, 28, 28, 1, 1, 1, 1, 1, 1, 1, 1], 3),
        ([2, 1, 16, 512, 512, 3, 3, 64, 64, 1, 1, 4, 4, 4, 4, 4, 4], 3),
        ([2, 1, 8, 320, 320, 3, 3, 64, 64, 1, 1, 1, 1, 1, 1, 1, 1], 3),
        ([2, 1, 16, 64, 128, 3, 3, 256, 256, 1, 1, 1, 1, 1, 1, 1, 1], 3),
        ([2, 1, 64, 512, 512, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1], 6),
    ] {
        let i = chosen(&v, Family::Hopper);
        assert_eq!((i.op, i.tile.stages(i.atom)), (Op::BwdDataTma, ring), "{v:?}");
        assert_ne!(chosen(&v, Family::Nvidia).op, Op::BwdDataTma, "{v:?}");
    }
    for v in [[2, 1, 64, 64, 64, 3, 3, 56, 56, 1, 1, 1, 1, 1, 1, 1, 1], [2, 1, 64, 32, 128, 3, 3, 56, 56, 1, 1, 1, 1, 1, 1, 1, 1]] {
        assert_ne!(chosen(&v, Family::Hopper).op, Op::BwdDataTma, "{v:?}");
    }
    // C = 48-64 with K >= 128, 1x1 or with taps: the 128x64 TMA tile
    // (U-Net's enc2 64->128, ResNet-50's 1x1 64->256; tuning-log 2026-11-29c).
    for v in [[2, 1, 16, 128, 64, 3, 3, 128, 128, 1, 1, 1, 1, 1, 1, 1, 1], [2, 1, 64, 256, 64, 1, 1, 56, 56, 1, 1, 1, 1, 0, 0, 0, 0]] {
        let i = chosen(&v, Family::Hopper);
        assert_eq!((i.op, i.tile.bn), (Op::BwdDataTma, 64), "{v:?}");
        assert_ne!(chosen(&v, Family::Nvidia).op, Op::BwdDataTma, "{v:?}");
    }
}

/// The hand rules' TMA tile on a problem the plan folds into a plain 1x1
/// GEMM (`1 x 2` filter at stride `(1, 2)`: x's taps become channels): the
/// tensor maps describe the folded problem the kernel runs, the result the
/// problem as given.
#[test]
fn bwd_data_tma_folded() {
    let problems = [("1x2 s(1,2) to 1x1", prob(&[2, 1, 2, 128, 64, 1, 2, 6, 8, 1, 2, 1, 1, 0, 0, 0, 0]))];
    sweep(&[EmuArch::Sm90], &problems, 2, |dev, module, at, name, p| {
        // On another GPU (`CONVGRAD_TEST_BACKEND`, e.g. the isa executor's gfx942) there is no TMA tile.
        if !dev.family().runs(Family::Hopper) {
            return (format!("{name}: no TMA kernels on {:?}", dev.family()), true);
        }
        let types = [TypeConfig::F16, TypeConfig::Bf16][at.j];
        let cfg = BwdDataConfig { types, ..Default::default() };
        let o = case(*p, cfg, at.seed(9600, 43), at.pick(&INITS, 1, 1), false).check(dev, module, name);
        let tma = convgrad::types::instance::INSTANCES.iter().any(|i| i.name == o.instance && i.op == Op::BwdDataTma);
        let folded = o.describe.contains(" folded");
        (format!("{} -> {} (TMA {tma}, folded {folded}): {}", types.name(), o.describe, o.report.summary()), o.passed() && tma && folded)
    });
}

/// The hand rules take row segments on Hopper for 48-64 output channels,
/// at most 128 input channels and wide rows: U-Net's 64-channel layers at
/// 256x256 (enc1 64->64: the slice GEMM ran it at under half cuDNN's
/// speed, and the RGB-output enc1 3->64), ResNet-50's layer1 at 56x56
/// (rows of one 64-pixel segment); not 16 output channels, 256 input
/// channels, 14-pixel rows or sm_80. U-Net's dec1 (128->64) takes the TMA
/// tile in their place (`bwd_data_tma_taps`).
#[test]
fn bwd_data_row_segment_choice() {
    let cfg = BwdDataConfig { types: TypeConfig::F16, ..Default::default() };
    let op = |v: &[usize], family| plan(&prob(v), &cfg, family, 132).unwrap().main.instance.op;
    let enc1 = [2, 1, 16, 64, 64, 3, 3, 256, 256, 1, 1, 1, 1, 1, 1, 1, 1];
    for (v, rows) in [
        (enc1.to_vec(), true),
        (vec![2, 1, 16, 64, 128, 3, 3, 256, 256, 1, 1, 1, 1, 1, 1, 1, 1], false),
        (vec![2, 1, 16, 64, 3, 3, 3, 256, 256, 1, 1, 1, 1, 1, 1, 1, 1], true),
        (vec![2, 1, 32, 64, 64, 3, 3, 56, 56, 1, 1, 1, 1, 1, 1, 1, 1], true),
        (vec![2, 1, 32, 64, 64, 1, 1, 56, 56, 1, 1, 1, 1, 0, 0, 0, 0], true),
        (vec![2, 1, 32, 64, 256, 1, 1, 56, 56, 1, 1, 1, 1, 0, 0, 0, 0], false),
        (vec![2, 1, 16, 16, 64, 3, 3, 256, 256, 1, 1, 1, 1, 1, 1, 1, 1], false),
        (vec![2, 1, 64, 64, 64, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1], false),
    ] {
        assert_eq!(op(&v, Family::Hopper) == Op::BwdDataRows, rows, "{v:?}");
    }
    assert_eq!(op(&enc1, Family::Nvidia), Op::BwdData);
    let pl = plan(&prob(&enc1), &cfg, Family::Hopper, 132).unwrap();
    assert_eq!(pl.main.grid, [264, 1, 1], "{}", pl.describe());
    assert!(pl.describe().contains("row segments"), "{}", pl.describe());
}

/// The tile heuristic's measured decisions, per family: a narrow tile only
/// where C fits one (16, 32 channels per group; the 32-wide one for both),
/// 64x64 for C = 48 (the narrow tiles are slower per useful channel), the
/// widest unpadded tile for C = 256, tap shifts for 8 and 16 channels per
/// group (stride 1; RDNA3: the 32-wide tile and the direct kernel), the
/// direct kernel for 4 and 12, the 16-wide tile for an RGB stem (C = 3, K = 64, 7x7
/// stride 2). Hopper takes its warpgroup tiles
/// (128 and 64 wide) where they are unpadded. (H200 timings in
/// docs/tuning-log.md, "kernel choice"; the rules are `ops::select::bwd_data`.)
#[test]
fn bwd_data_tile_choice() {
    let cfg = BwdDataConfig { types: TypeConfig::F16, ..Default::default() };
    for family in Family::ALL {
        let rdna = matches!(family, Family::Rdna3 | Family::Rdna4);
        let wide = if rdna { 64 } else { 128 };
        let hopper = family == Family::Hopper;
        for (c, want, wgmma) in [
            (16, Some(32), false),
            (32, Some(32), false),
            (48, Some(64), hopper),
            (64, Some(64), hopper),
            (256, Some(wide), hopper),
            (4, None, false),
            (8, None, false),
            (12, None, false),
        ] {
            let p = prob(&[2, 32, 4, c, c, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1]);
            let inst = plan(&p, &cfg, family, 132).unwrap().main.instance;
            // 8 and 16 channels per group, stride 1: tap shifts (not on RDNA3/RDNA4 yet).
            if (c == 8 || c == 16) && !rdna {
                assert_eq!(inst.op, Op::BwdDataTapShift, "{family:?} C=K={c}: chose {}", inst.name);
                continue;
            }
            // Hopper's C = 256 (32 groups x 7 x 2 tiles): the TMA tile in place of the slice GEMM's, as wide.
            let tma = hopper && c == 256;
            assert_eq!(inst.op == Op::BwdDataTma, tma, "{family:?} C=K={c}: chose {}", inst.name);
            let got = (inst.op == Op::BwdData || tma).then_some(inst.tile.bn);
            assert_eq!(got, want, "{family:?} C=K={c}: chose {}", inst.name);
            assert_eq!(inst.atom.warpgroup(), wgmma, "{family:?} C=K={c}: chose {}", inst.name);
        }
        let stem = prob(&[2, 1, 2, 64, 3, 7, 7, 32, 32, 2, 2, 1, 1, 3, 3, 3, 3]);
        let inst = plan(&stem, &cfg, family, 132).unwrap().main.instance;
        assert_eq!((inst.op, inst.tile.bn), (Op::BwdData, 16), "{family:?} RGB stem: chose {}", inst.name);
    }
}

/// Stride == filter along x (ViT's patch embedding, ConvNeXt's stem and
/// downsampling, 1-D `k == s`): where x's channels lie back to back the
/// kernels run the problem folded (x's taps as channels; `describe` says so)
/// and pass against the reference of the problem as given; channels-first
/// layouts, broadcast `D` tensors, pads and rows that are no whole number of
/// windows run unfolded and pass too.
#[test]
fn bwd_data_stride_equals_filter() {
    // Problems whose x fold leaves a multiple of 8 channels, tiled along y too.
    const Y_FOLDS: [&str; 4] = ["2x2 s2 C=8", "3d 1x2x2", "grouped 2x2 s2", "patch 4x4 s4 C=8"];
    let mut problems = common::stride_equals_filter(false);
    // ViT's patch embedding in small: 8 channels become 32 along x, 128 along y.
    problems.push(("patch 4x4 s4 C=8", common::prob(&[2, 1, 2, 40, 8, 4, 4, 8, 12, 4, 4, 1, 1, 0, 0, 0, 0]), true));
    let named: Vec<(&str, ConvProblem)> = problems.iter().map(|&(n, p, _)| (n, p)).collect();
    let epis = [
        (vec![], vec![], false),
        (vec![EpilogueOp::Bilinear(0.75, -1.5)], vec![DLayout::Output], true),
        (vec![EpilogueOp::AddRelu], vec![DLayout::PerChannel], false),
        (vec![EpilogueOp::Add], vec![DLayout::Output], false),
    ];
    sweep(&[EmuArch::Gfx942, EmuArch::Gfx1100, EmuArch::Sm90], &named, 3, |dev, module, at, name, p| {
        let layout = at.pick(&ConvLayout::ALL, 1, 1);
        let base = BwdDataConfig { layout, types: at.pick(&TYPES, 1, 2), ..Default::default() };
        let epi = at.pick(&epis, 1, 1);
        let broadcast = epi.1.contains(&DLayout::PerChannel);
        let no_d = epi.0.is_empty();
        let (cfg, alias, label) = with_epilogue(base, epi);
        let o = case(*p, cfg, at.seed(9000, 13), at.pick(&INITS, 1, 1), alias).check(dev, module, name);
        let want = problems[at.i].2 && common::channels_last(layout, p.g) && !broadcast;
        let folded = o.describe.contains("folded");
        // y folds too (one GEMM, dx stored by channel rows) where x's fold
        // leaves a multiple of 8 channels and no D tensor is read.
        let want_y = want && no_d && Y_FOLDS.contains(&name);
        let folded_y = o.describe.contains("x and y folded");
        let line = format!(
            "{label} -> {} (folded {folded}/{folded_y}, expected {want}/{want_y}): {}",
            o.describe,
            o.report.summary()
        );
        (line, o.passed() && folded == want && folded_y == want_y)
    });
}

/// Odd channel counts (`K` or `C` not a multiple of 8, 2-byte types, `G` =
/// 1): the plan copies `dy` (odd `K`) and `w` with those channels zero
/// padded to whole vectors into a NaN-poisoned workspace first, and the
/// GEMM runs on the copies (YOLOv5's 255-channel heads, ShuffleNet's 58,
/// a 3x3 layer of 100 input channels); every layout family (the copies are
/// channels-last whatever the caller's layout), epilogues, strides. f32 and
/// grouped problems run unpacked.
#[test]
fn bwd_data_channel_pack() {
    let named = [
        ("YOLO head 1x1 K=255", prob(&[2, 1, 2, 255, 64, 1, 1, 6, 7, 1, 1, 1, 1, 0, 0, 0, 0])),
        ("ShuffleNet 3x3 K=58 C=24", prob(&[2, 1, 2, 58, 24, 3, 3, 7, 6, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("3x3 s2 K=13 C=40", prob(&[2, 1, 2, 13, 40, 3, 3, 9, 8, 2, 2, 1, 1, 1, 1, 1, 1])),
        ("1x1 K=100 C=58", prob(&[2, 1, 2, 100, 58, 1, 1, 5, 5, 1, 1, 1, 1, 0, 0, 0, 0])),
        ("grouped K=13 per group", prob(&[2, 2, 2, 13, 16, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("3x3 C=100 K=64", prob(&[2, 1, 2, 64, 100, 3, 3, 6, 7, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("1x1 s2 C=58 K=24", prob(&[2, 1, 2, 24, 58, 1, 1, 9, 8, 2, 2, 1, 1, 0, 0, 0, 0])),
    ];
    sweep(&[EmuArch::Gfx942, EmuArch::Gfx1100, EmuArch::Sm90], &named, 3, |dev, module, at, name, p| {
        let types = at.pick(&TYPES, 1, 1);
        let layout = at.pick(&ConvLayout::ALL, 1, 2);
        let base = BwdDataConfig { types, layout, ..Default::default() };
        let (cfg, alias, label) = with_epilogue(base, at.pick(&epilogues(), 2, 1));
        let o = case(*p, cfg, at.seed(12000, 13), at.pick(&INITS, 1, 1), alias).check(dev, module, name);
        let eligible = types.act().bytes() == 2 && p.g == 1 && (p.k % 8 != 0 || p.c % 8 != 0);
        let packed = o.describe.contains("channel-packed");
        // Never a GEMM gathering dy element by element where it could be packed.
        let ok = if eligible { packed || o.instance.starts_with("bwdd_direct") } else { !packed };
        (format!("{label} -> {} (packed {packed}): {}", o.describe, o.report.summary()), o.passed() && ok)
    });
}
