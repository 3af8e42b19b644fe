//! Depthwise backward-weight by filter rows (`bwdw_depthwise_*`) against the
//! float64 reference, with fresh random inputs per case and NaN-poisoned
//! outputs (every weight must be written): 3x3 to 7x7 filters (and the 4- and
//! 6-wide ones between), strides 1 to 3, dilation, padding wider than the
//! image edge, rows shorter than a chunk, both lane widths, 1-3 D, every type
//! combination, every split mode; the fallbacks where it does not fit; its
//! choice by the selector.
//!
//! On the emulator's gfx942, gfx1100 and sm_90 models, or on the device that
//! `CONVGRAD_TEST_BACKEND` names (e.g. `isa:gfx942`: the real code objects).

mod common;

use common::{Check, INITS, device, every_instance, prob, sweep};
use convgrad::check::Init;
use convgrad::ops::bwd_weight::{BwdWeightConfig, SplitK, SplitKWorkspace, plan};
use convgrad::runtime::EmuArch;
use convgrad::types::instance::{Family, Op};
use convgrad::types::params::vec_mode;
use convgrad::types::{ConvLayout, ConvProblem, EpilogueOp, TypeConfig};
use convgrad::verify::bwd_weight::{Case, run, run_with};

/// Epilogues to rotate (backward-weight takes one step).
const EPIS: [EpilogueOp; 3] = [
    EpilogueOp::PassThrough,
    EpilogueOp::Scale(0.5),
    EpilogueOp::Bilinear(0.75, -1.5),
];
/// Split-K settings to rotate.
const SPLITS: [SplitK; 4] = [
    SplitK::Fixed(1),
    SplitK::Auto,
    SplitK::Fixed(3),
    SplitK::Fixed(7),
];

/// An untimed, undumped case.
fn case(problem: ConvProblem, config: BwdWeightConfig, seed: u64, init: Init) -> Case {
    Case {
        problem,
        config,
        seed,
        init,
        timed_runs: 0,
        dump: false,
    }
}

/// The depthwise instance of types `t`.
fn instance(t: TypeConfig) -> String {
    format!("bwdw_depthwise_{}", t.name().replace('-', ""))
}

/// Channels-last depthwise problems: `(name, problem)`.
fn problems() -> Vec<(&'static str, ConvProblem)> {
    vec![
        (
            "3x3 s1 pad1",
            prob(&[2, 16, 2, 1, 1, 3, 3, 9, 10, 1, 1, 1, 1, 1, 1, 1, 1]),
        ),
        (
            "3x3 s2 pad1",
            prob(&[2, 24, 2, 1, 1, 3, 3, 13, 14, 2, 2, 1, 1, 1, 1, 1, 1]),
        ),
        (
            "5x5 s1 pad2",
            prob(&[2, 20, 2, 1, 1, 5, 5, 11, 12, 1, 1, 1, 1, 2, 2, 2, 2]),
        ),
        (
            "5x5 s2 asym pads",
            prob(&[2, 32, 1, 1, 1, 5, 5, 15, 16, 2, 2, 1, 1, 2, 2, 1, 2]),
        ),
        (
            "7x7 s1 pad3",
            prob(&[2, 24, 2, 1, 1, 7, 7, 10, 13, 1, 1, 1, 1, 3, 3, 3, 3]),
        ),
        (
            "7x7 s2 pad3",
            prob(&[2, 8, 2, 1, 1, 7, 7, 17, 19, 2, 2, 1, 1, 3, 3, 3, 3]),
        ),
        // 6 groups: half lanes (2 per thread); 2 groups, one image: tiny.
        (
            "G=6 5x5 (half lanes)",
            prob(&[2, 6, 2, 1, 1, 5, 5, 8, 9, 1, 1, 1, 1, 2, 2, 2, 2]),
        ),
        (
            "G=2 3x3 s2 tiny",
            prob(&[2, 2, 1, 1, 1, 3, 3, 3, 4, 2, 2, 1, 1, 1, 1, 1, 1]),
        ),
        // One output column (a chunk of one pixel); pads of 4 on one side.
        (
            "one output column",
            prob(&[2, 4, 1, 1, 1, 3, 3, 5, 3, 1, 1, 1, 1, 1, 0, 1, 0]),
        ),
        (
            "5x5 one-sided pads of 4",
            prob(&[2, 8, 2, 1, 1, 5, 5, 6, 7, 1, 2, 1, 1, 4, 0, 0, 4]),
        ),
        // One pixel per chunk: dilation, stride 3.
        (
            "3x3 dil2",
            prob(&[2, 12, 2, 1, 1, 3, 3, 11, 12, 1, 1, 2, 2, 2, 2, 2, 2]),
        ),
        (
            "5x5 stride 3 along x",
            prob(&[2, 8, 2, 1, 1, 5, 5, 12, 16, 1, 3, 1, 1, 2, 2, 2, 2]),
        ),
        // Widths between the bodies' 3, 5 and 7.
        (
            "4x4 asym",
            prob(&[2, 8, 2, 1, 1, 4, 4, 9, 10, 1, 1, 1, 1, 1, 2, 2, 1]),
        ),
        (
            "6x6 asym",
            prob(&[2, 8, 1, 1, 1, 6, 6, 9, 11, 1, 1, 1, 1, 2, 3, 3, 2]),
        ),
        // Streams across row ends (37 columns: 10 chunks, the last of one pixel).
        (
            "7x7 W=37",
            prob(&[2, 8, 3, 1, 1, 7, 7, 6, 37, 1, 1, 1, 1, 3, 3, 3, 3]),
        ),
        ("1d 7 taps s2", prob(&[1, 16, 3, 1, 1, 7, 30, 2, 1, 3, 3])),
        (
            "3d 3x3x3 stride (2,1,2)",
            prob(&[
                3, 8, 1, 1, 1, 3, 3, 3, 4, 5, 9, 2, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1,
            ]),
        ),
    ]
}

/// The emulator models, or the one device `CONVGRAD_TEST_BACKEND` names.
fn archs(all: &[EmuArch]) -> Vec<EmuArch> {
    match std::env::var("CONVGRAD_TEST_BACKEND") {
        Ok(b) if !b.is_empty() => all[..1].to_vec(),
        _ => all.to_vec(),
    }
}

/// Every problem, types, epilogues and split modes rotating, on one model:
/// the depthwise instance runs (forced: 3x3 at stride 1 is the direct
/// kernel's by choice) and passes; both lane widths and both chunk kinds ran.
fn suite(arch: EmuArch) {
    let mut seen = std::collections::BTreeSet::new();
    sweep(
        &archs(&[arch]),
        &problems(),
        3,
        |dev, module, at, name, p| {
            let t = at.pick(&TypeConfig::ALL, 1, 1);
            let cfg = BwdWeightConfig {
                layout: ConvLayout::NhwgcGkyxcNhwgk,
                types: t,
                epilogue: at.pick(&EPIS, 1, 2),
                split_k: at.pick(&SPLITS, 1, 1),
                deterministic: at.pick(&[true, false], 1, 1),
                instance: Some(instance(t)),
            };
            let pl = plan(p, &cfg, dev.family(), dev.compute_units()).unwrap();
            seen.insert(pl.args_template.direct.vec_mode);
            let o = case(*p, cfg.clone(), at.seed(9000, 37), at.pick(&INITS, 0, 1))
                .check(dev, module, name);
            let line = format!(
                "{} {:?} {:?} det={} -> {} kb={}: {}",
                t.name(),
                cfg.epilogue,
                cfg.split_k,
                cfg.deterministic,
                o.instance,
                o.k_batch,
                o.report.summary()
            );
            (line, o.passed() && o.instance == instance(t))
        },
    );
    use vec_mode::{DEPTHWISE, HALF, ON};
    for want in [ON | DEPTHWISE, ON | DEPTHWISE | HALF] {
        assert!(
            seen.contains(&want),
            "no case ran vec_mode {want:#x} (ran {seen:?})"
        );
    }
}

common::per_arch!(suite; depthwise_rows_gfx942 => Gfx942, depthwise_rows_gfx1100 => Gfx1100, depthwise_rows_sm90 => Sm90);

/// Every depthwise instance on every family, 7x7 at stride 2 with a tail.
#[test]
fn depthwise_rows_every_instance() {
    let p = prob(&[2, 12, 2, 1, 1, 7, 7, 11, 13, 2, 2, 1, 1, 3, 3, 3, 3]);
    every_instance(&[Op::BwdWeightDepthwise], |inst| {
        let cfg = BwdWeightConfig {
            types: inst.types,
            instance: Some(inst.name.into()),
            ..Default::default()
        };
        case(p, cfg, 11, Init::Float)
    });
}

/// Where the kernel does not fit, the selector keeps the direct kernel (which
/// passes) and forcing it is refused with the reason: odd groups (no channel
/// vectors), groups not innermost (GNHWC, NGCHW), groups of two channels, a
/// filter wider than 7.
#[test]
fn depthwise_rows_fall_back_where_they_do_not_fit() {
    let nhwgc = ConvLayout::NhwgcGkyxcNhwgk;
    let cases = [
        (
            "odd G=5 7x7",
            prob(&[2, 5, 2, 1, 1, 7, 7, 9, 9, 1, 1, 1, 1, 3, 3, 3, 3]),
            nhwgc,
            "runs of 2",
        ),
        (
            "odd G=7 3x3 s2",
            prob(&[2, 7, 2, 1, 1, 3, 3, 9, 9, 2, 2, 1, 1, 1, 1, 1, 1]),
            nhwgc,
            "runs of 2",
        ),
        (
            "GNHWC 5x5",
            prob(&[2, 8, 2, 1, 1, 5, 5, 9, 9, 1, 1, 1, 1, 2, 2, 2, 2]),
            ConvLayout::GnhwcGkyxcGnhwk,
            "runs of 2",
        ),
        (
            "NGCHW 7x7",
            prob(&[2, 8, 2, 1, 1, 7, 7, 9, 9, 1, 1, 1, 1, 3, 3, 3, 3]),
            ConvLayout::NgchwGkcyxNgkhw,
            "runs of 2",
        ),
        (
            "C=K=2 groups",
            prob(&[2, 8, 2, 2, 2, 5, 5, 9, 9, 1, 1, 1, 1, 2, 2, 2, 2]),
            nhwgc,
            "C = K = 1",
        ),
        (
            "9x9",
            prob(&[2, 8, 1, 1, 1, 9, 9, 12, 12, 1, 1, 1, 1, 4, 4, 4, 4]),
            nhwgc,
            "at most 7",
        ),
    ];
    for arch in archs(&[EmuArch::Gfx942, EmuArch::Sm90]) {
        let (dev, module) = device(arch);
        for (i, (name, p, layout, why)) in cases.iter().enumerate() {
            let t = [TypeConfig::F16, TypeConfig::F32][i % 2];
            let cfg = BwdWeightConfig {
                layout: *layout,
                types: t,
                ..Default::default()
            };
            let o = case(*p, cfg.clone(), 70 + i as u64, Init::Float).check(&dev, &module, name);
            assert!(
                !o.instance.starts_with("bwdw_depthwise"),
                "{name}: chose {}",
                o.instance
            );
            assert!(
                o.passed(),
                "{name} on {}: {}",
                dev.arch(),
                o.report.summary()
            );
            let forced = BwdWeightConfig {
                instance: Some(instance(t)),
                ..cfg
            };
            let e = plan(p, &forced, dev.family(), dev.compute_units()).unwrap_err();
            assert!(
                e.to_string().contains("does not apply") && e.to_string().contains(why),
                "{name}: {e}"
            );
        }
    }
}

/// The selector's structural rule on every family: the depthwise kernel for
/// filter rows of 3 taps or more where the direct kernel has no row path
/// (ConvNeXt 7x7, MobileNetV2 3x3 at stride 2, EfficientNet 5x5), the
/// direct kernel for 3x3 at stride 1 and 1x1.
#[test]
fn depthwise_rows_are_chosen_by_the_selector() {
    let sq =
        |g, n, f, hw, s, pad| prob(&[2, g, n, 1, 1, f, f, hw, hw, s, s, 1, 1, pad, pad, pad, pad]);
    let layers = [
        ("ConvNeXt-T 96ch 56x56 7x7", sq(96, 32, 7, 56, 1, 3), true),
        ("ConvNeXt-T 192ch 28x28 7x7", sq(192, 32, 7, 28, 1, 3), true),
        (
            "MobileNetV2 96ch 112x112 3x3 s2",
            sq(96, 64, 3, 112, 2, 1),
            true,
        ),
        (
            "EfficientNet-B0 240ch 28x28 5x5",
            sq(240, 32, 5, 28, 1, 2),
            true,
        ),
        (
            "EfficientNet-B0 144ch 56x56 5x5 s2",
            sq(144, 32, 5, 56, 2, 2),
            true,
        ),
        (
            "MobileNetV2 144ch 56x56 3x3 s1",
            sq(144, 64, 3, 56, 1, 1),
            false,
        ),
        ("1x1 depthwise", sq(64, 8, 1, 14, 1, 0), false),
    ];
    for (family, cus) in [
        (Family::Hopper, 132),
        (Family::Nvidia, 108),
        (Family::Cdna, 304),
        (Family::Rdna3, 96),
    ] {
        for t in [
            TypeConfig::F16,
            TypeConfig::Bf16,
            TypeConfig::F32,
            TypeConfig::Bf16F32,
        ] {
            for (name, p, chosen) in &layers {
                let cfg = BwdWeightConfig {
                    types: t,
                    ..Default::default()
                };
                let pl = plan(p, &cfg, family, cus).unwrap();
                let got = pl.main.instance.name;
                let want = if *chosen {
                    instance(t)
                } else {
                    format!("bwdw_direct_{}", t.name().replace('-', ""))
                };
                assert_eq!(
                    got,
                    want,
                    "{name} {} on {family:?}: {}",
                    t.name(),
                    pl.describe()
                );
                assert!(
                    pl.k_batch >= 1 && pl.main.grid[2] == pl.k_batch,
                    "{name}: {}",
                    pl.describe()
                );
            }
        }
    }
    // What it fits, as `list-instances` prints it.
    assert!(convgrad::ops::select::needs(Op::BwdWeightDepthwise).contains("C = K = 1"));
}

/// Deterministic split-K is bitwise reproducible (partials summed in LDS and
/// in the workspace in a fixed order), with and without a split.
#[test]
fn depthwise_rows_deterministic_is_bitwise_reproducible() {
    let p = prob(&[2, 16, 4, 1, 1, 7, 7, 20, 24, 1, 2, 1, 1, 3, 3, 3, 3]);
    for arch in archs(&[EmuArch::Sm90, EmuArch::Gfx942]) {
        let (dev, module) = device(arch);
        for (t, split) in [
            (TypeConfig::F32, 5),
            (TypeConfig::F16, 5),
            (TypeConfig::Bf16, 1),
        ] {
            let cfg = BwdWeightConfig {
                types: t,
                split_k: SplitK::Fixed(split),
                deterministic: true,
                instance: Some(instance(t)),
                ..Default::default()
            };
            let case = case(p, cfg, 21, Init::Float);
            let a = run(&dev, &module, &case).unwrap();
            let b = run(&dev, &module, &case).unwrap();
            assert!(
                a.passed() && b.passed(),
                "{}: {}",
                t.name(),
                a.report.summary()
            );
            assert!(a.k_batch > 1 || split == 1, "{}: k_batch {}", t.name(), a.k_batch);
            assert_eq!(
                a.output_bytes,
                b.output_bytes,
                "{} {}: deterministic split-K differs between runs",
                dev.arch(),
                t.name()
            );
        }
    }
}

/// One split-K workspace across atomic and stored calls: the last workgroup
/// of each column block zeroes the atomic sums and resets its counter, and
/// stored partials are zeroed before a call that needs zeros.
#[test]
fn depthwise_rows_split_k_workspace_is_reused() {
    let p = prob(&[2, 24, 3, 1, 1, 5, 5, 14, 15, 2, 2, 1, 1, 2, 2, 2, 2]);
    for arch in archs(&[EmuArch::Gfx942, EmuArch::Sm90]) {
        let (dev, module) = device(arch);
        let ws = SplitKWorkspace::new(&dev, 1 << 16).unwrap();
        for (i, (kb, det)) in [(4, false), (4, false), (6, true), (3, true), (4, false)]
            .into_iter()
            .enumerate()
        {
            let cfg = BwdWeightConfig {
                split_k: SplitK::Fixed(kb),
                deterministic: det,
                ..Default::default()
            };
            let o = run_with(
                &dev,
                &module,
                &case(p, cfg, 50 + i as u64, Init::Float),
                Some(&ws),
            )
            .unwrap();
            assert_eq!(o.instance, "bwdw_depthwise_f16");
            assert!(
                o.k_batch > 1 && o.k_batch <= kb,
                "call {i}: k_batch {} for {kb} asked",
                o.k_batch
            );
            assert!(
                o.passed(),
                "{arch:?} call {i} ({kb} batches, deterministic {det}): {}",
                o.report.summary()
            );
        }
    }
}
