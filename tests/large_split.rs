//! Problems past 2^31 elements (#38): the plans split them along N (and G,
//! and bands of rows of one image) into launches that each address fewer. With the split threshold lowered
//! (`plan_with_limit`), small problems run through the same split on the
//! emulator against the float64 reference (fresh random inputs, NaN-poisoned
//! outputs, the project's tolerance rule); at the real limit, plans only.

mod common;

use common::{device, prob};
use convgrad::check::Init;
use convgrad::ops::bwd_data::{self, BwdDataConfig, DLayout};
use convgrad::ops::bwd_weight::{self, BwdWeightConfig, SplitK};
use convgrad::runtime::{Device, EmuArch, Module};
use convgrad::types::{ConvLayout, ConvProblem, EpilogueOp, TensorDesc, TensorRole, TypeConfig};
use convgrad::verify::{bwd_data as vdata, bwd_weight as vweight};

/// Plans `cfg` on `dev` with packed tensors, splitting at `limit`.
fn weight_plan(dev: &Device, p: &ConvProblem, cfg: &BwdWeightConfig, limit: u64) -> bwd_weight::BwdWeightPlan {
    let d = |r| TensorDesc::packed(p, cfg.layout, r);
    let (x, dw, dy) = (d(TensorRole::Input), d(TensorRole::Weight), d(TensorRole::Output));
    bwd_weight::plan_with_limit(p, cfg, dev.family(), dev.compute_units(), x, dw, dy, limit).expect("plan")
}

/// Runs one split backward-weight case and asserts it passes and splits into `launches`.
fn check_weight(dev: &Device, module: &Module, p: &ConvProblem, cfg: BwdWeightConfig, limit: u64, launches: usize, seed: u64) {
    let plan = weight_plan(dev, p, &cfg, limit);
    assert_eq!(plan.parts.len(), launches, "{}", plan.describe());
    let case = vweight::Case { problem: *p, config: cfg.clone(), seed, init: Init::Float, timed_runs: 0, dump: false };
    let o = vweight::run_planned(dev, module, &case, None, &plan).expect("run");
    let line = format!("{p} {cfg:?} on {}: {} ; {}", dev.arch(), plan.describe(), o.report.summary());
    println!("{line}");
    assert!(o.passed(), "{line}");
}

/// Runs one split backward-data case and asserts it passes and splits into `launches`.
fn check_data(dev: &Device, module: &Module, p: &ConvProblem, cfg: BwdDataConfig, alias_d0: bool, limit: u64, launches: usize) {
    let d = |r| TensorDesc::packed(p, cfg.layout, r);
    let (dy, w, dx) = (d(TensorRole::Output), d(TensorRole::Weight), d(TensorRole::Input));
    let plan = bwd_data::plan_with_limit(p, &cfg, dev.family(), dev.compute_units(), dy, w, dx, limit).expect("plan");
    assert_eq!(plan.parts.len(), launches, "{}", plan.describe());
    let case = vdata::Case { problem: *p, config: cfg.clone(), seed: 38, init: Init::Float, alias_d0, timed_runs: 0, dump: false };
    let o = vdata::run_planned(dev, module, &case, &plan).expect("run");
    let line = format!("{p} {cfg:?} on {}: {} ; {}", dev.arch(), plan.describe(), o.report.summary());
    println!("{line}");
    assert!(o.passed(), "{line}");
}

/// 2-D, G=2, N=5, K=C=8, 3x3 over 6x6, pad 1: an image of x (NHWGC) is
/// 576 elements, so a limit of 1153 fits two: launches of 2, 2 and 1 images.
const ALONG_N: [usize; 17] = [2, 2, 5, 8, 8, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1];
const ALONG_N_LIMIT: u64 = 2 * 576 + 1;

/// 2-D, G=3, N=3, K=C=8, 3x3 over 6x6, pad 1, GNHWC: one image of all three
/// groups spans 2016 elements, the three images of one group 864, two 576:
/// at 800, one group and two images, then one: 6 launches along G and N.
const ALONG_G: [usize; 17] = [2, 3, 3, 8, 8, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1];
const ALONG_G_LIMIT: u64 = 800;

#[test]
fn bwd_weight_split_along_n_matches_the_reference() {
    let p = prob(&ALONG_N);
    for arch in [EmuArch::Gfx942, EmuArch::Sm90] {
        let (dev, module) = device(arch);
        let cases = [
            (TypeConfig::F16, SplitK::Auto, EpilogueOp::PassThrough),
            (TypeConfig::F16, SplitK::Fixed(1), EpilogueOp::Scale(0.5)),
            (TypeConfig::Bf16, SplitK::Fixed(3), EpilogueOp::Bilinear(0.75, -1.5)),
        ];
        for (i, (types, split_k, epilogue)) in cases.into_iter().enumerate() {
            let cfg = BwdWeightConfig { types, split_k, epilogue, ..Default::default() };
            check_weight(&dev, &module, &p, cfg, ALONG_N_LIMIT, 3, 100 + i as u64);
        }
        // f32 (the exact FMA kernels) on 16x16 images of 4096 elements: 2, 2, 1.
        let p16 = prob(&[2, 2, 5, 8, 8, 3, 3, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1]);
        let cfg = BwdWeightConfig { types: TypeConfig::F32, split_k: SplitK::Fixed(1), ..Default::default() };
        check_weight(&dev, &module, &p16, cfg, 2 * 4096 + 1, 3, 110);
    }
}

#[test]
fn bwd_weight_split_along_g_matches_the_reference() {
    let p = prob(&ALONG_G);
    let (dev, module) = device(EmuArch::Gfx942);
    for (i, split_k) in [SplitK::Fixed(1), SplitK::Fixed(2)].into_iter().enumerate() {
        let cfg = BwdWeightConfig { layout: ConvLayout::GnhwcGkyxcGnhwk, split_k, ..Default::default() };
        check_weight(&dev, &module, &p, cfg, ALONG_G_LIMIT, 6, 200 + i as u64);
    }
    // Along G alone (every image fits with one group): launches independent,
    // deterministic split-K allowed.
    let g_only = prob(&[2, 3, 1, 8, 8, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1]);
    let cfg = BwdWeightConfig { layout: ConvLayout::GnhwcGkyxcGnhwk, split_k: SplitK::Fixed(2), deterministic: true, ..Default::default() };
    check_weight(&dev, &module, &g_only, cfg.clone(), 600, 3, 210);
    // Every image of one group fits (864 of 1200) though one image of all
    // groups does not (2016): along G with all images, deterministic too.
    check_weight(&dev, &module, &p, cfg, 1200, 3, 211);
}

#[test]
fn bwd_weight_split_refusals_name_the_field() {
    let (dev, _) = device(EmuArch::Gfx942);
    let p = prob(&ALONG_N);
    let d = |r| TensorDesc::packed(&p, ConvLayout::NhwgcGkyxcNhwgk, r);
    let (x, dw, dy) = (d(TensorRole::Input), d(TensorRole::Weight), d(TensorRole::Output));
    let det = BwdWeightConfig { deterministic: true, ..Default::default() };
    let e = bwd_weight::plan_with_limit(&p, &det, dev.family(), 304, x, dw, dy, ALONG_N_LIMIT).unwrap_err();
    assert!(e.to_string().contains("deterministic"), "{e}");
    // Rows of 512 elements (4x64, 8 channels): an output row reads 2 rows
    // at the edges and 3 inside (1536), so at 1000 no band fits and at
    // 1600 bands of one output row do (deterministic is then refused).
    let wide = prob(&[2, 1, 1, 8, 8, 3, 3, 4, 64, 1, 1, 1, 1, 1, 1, 1, 1]);
    let d = |r| TensorDesc::packed(&wide, ConvLayout::NhwgcGkyxcNhwgk, r);
    let (x, dw, dy) = (d(TensorRole::Input), d(TensorRole::Weight), d(TensorRole::Output));
    let e = bwd_weight::plan_with_limit(&wide, &BwdWeightConfig::default(), dev.family(), 304, x, dw, dy, 1000).unwrap_err();
    assert!(e.to_string().contains("one image of one group") && e.to_string().contains("outermost spatial axis"), "{e}");
    let e = bwd_weight::plan_with_limit(&wide, &det, dev.family(), 304, x, dw, dy, 1600).unwrap_err();
    assert!(e.to_string().contains("deterministic"), "{e}");
}

#[test]
fn bwd_data_split_along_n_and_g_matches_the_reference() {
    let (dev, module) = device(EmuArch::Gfx942);
    let p = prob(&ALONG_N);
    let plain = BwdDataConfig::default();
    check_data(&dev, &module, &p, plain.clone(), false, ALONG_N_LIMIT, 3);
    // Multi-D epilogue: a bias per channel (does not move along N) and a
    // full D; then D0 aliasing dx.
    let bias = BwdDataConfig {
        epilogue: vec![EpilogueOp::Add, EpilogueOp::AddRelu],
        d_layouts: vec![DLayout::PerChannel, DLayout::Full(ConvLayout::NhwgcGkyxcNhwgk)],
        ..plain.clone()
    };
    check_data(&dev, &module, &p, bias, false, ALONG_N_LIMIT, 3);
    let aliased = BwdDataConfig { epilogue: vec![EpilogueOp::Bilinear(0.5, 1.0)], types: TypeConfig::F32, ..plain.clone() };
    check_data(&dev, &module, &p, aliased, true, ALONG_N_LIMIT, 3);
    let g = BwdDataConfig { layout: ConvLayout::GnhwcGkyxcGnhwk, ..plain };
    check_data(&dev, &module, &prob(&ALONG_G), g, false, ALONG_G_LIMIT, 6);
}

/// 2-D, G=1, N=72, K=C=8, 3x3 over 2048x2048, pad 1: x and dy of 72 * 2^25
/// elements (2.4e9), the problem `.device/s30-large.sh` runs.
const LARGE: [usize; 17] = [2, 1, 72, 8, 8, 3, 3, 2048, 2048, 1, 1, 1, 1, 1, 1, 1, 1];

#[test]
fn problems_past_2_31_elements_plan_into_launches_that_fit() {
    let p = ConvProblem::from_ck_args(&LARGE).expect("problems past 2^31 elements are accepted");
    assert!(p.input_elems() >= 1 << 31 && p.output_elems() >= 1 << 31);
    let family = convgrad::types::instance::Family::Hopper;
    let spans = |d: &TensorDesc| d.span();
    let wp = bwd_weight::plan(&p, &BwdWeightConfig::default(), family, 132).expect("bwd-weight plan");
    assert!(wp.parts.len() >= 2, "{}", wp.describe());
    assert_eq!(wp.parts.iter().map(|q| q.chunk.images).sum::<usize>(), p.n);
    for q in &wp.parts {
        assert!(spans(&q.plan.x) < 1 << 31 && spans(&q.plan.dy) < 1 << 31, "{}", q.plan.describe());
        assert!(q.plan.k_batch >= 2 && q.plan.atomic_partials);
    }
    assert!(wp.workspace_elems >= wp.partial_elems && wp.partial_elems >= p.weight_elems() as usize);
    let dp = bwd_data::plan(&p, &BwdDataConfig::default(), family, 132).expect("bwd-data plan");
    assert!(dp.parts.len() >= 2, "{}", dp.describe());
    for q in &dp.parts {
        assert!(spans(&q.plan.dx) < 1 << 31 && spans(&q.plan.dy) < 1 << 31, "{}", q.plan.describe());
    }
    // The last part starts where the others end, by 64-bit byte offsets.
    let last = dp.parts.last().unwrap();
    assert_eq!(last.offsets[2], (last.chunk.n0 * 2048 * 2048 * 8 * 2) as u64);
    // One image past 2^31 elements (3.2e9) runs in bands of rows, each
    // view within 2^31 elements, together covering every row once.
    let one = ConvProblem::from_ck_args(&[2, 1, 2, 8, 8, 3, 3, 20000, 20000, 1, 1, 1, 1, 1, 1, 1, 1]).unwrap();
    let dp = bwd_data::plan(&one, &BwdDataConfig::default(), family, 132).expect("bwd-data plan of one image past 2^31");
    assert!(dp.describe().contains("along N and H"), "{}", dp.describe());
    let rows: usize = dp.parts.iter().filter(|q| q.chunk.n0 == 0).map(|q| q.chunk.cut.unwrap().in_len).sum();
    assert_eq!(rows, 20000);
    for q in &dp.parts {
        assert!(spans(&q.plan.dx) < 1 << 31 && spans(&q.plan.dy) < 1 << 31, "{}", q.plan.describe());
    }
    let wp = bwd_weight::plan(&one, &BwdWeightConfig::default(), family, 132).expect("bwd-weight plan of one image past 2^31");
    let rows: usize = wp.parts.iter().filter(|q| q.chunk.n0 == 0).map(|q| q.chunk.cut.unwrap().out_len).sum();
    assert_eq!(rows, 20000);
    for q in &wp.parts {
        assert!(spans(&q.plan.x) < 1 << 31 && q.plan.k_batch >= 2 && q.plan.atomic_partials, "{}", q.plan.describe());
    }
}

/// One image of one group past the (lowered) limit: bands of rows, each
/// launch's GEMM K at least 2 k-batches long (rows of 128 pixels).
#[test]
fn bwd_weight_bands_of_one_image_match_the_reference() {
    let cases: [(&[usize], u64, usize); 4] = [
        // 2 images of 16x128x8 (16384 elements), pad 1, stride 1: at 5200,
        // 5 bands of 3-4 output rows reading up to 5 input rows (5120) each.
        (&[2, 1, 2, 8, 8, 3, 3, 16, 128, 1, 1, 1, 1, 1, 1, 1, 1], 5200, 10),
        // stride 2, dilation 2, pads 2/0 (asymmetric): windows past the band on both sides.
        (&[2, 1, 2, 8, 8, 3, 3, 17, 128, 2, 2, 2, 2, 2, 2, 0, 0], 7200, 0),
        // 3-D, 3x3x3 over 8x6x6 (bands of depth), stride 1, pad 1.
        (&[3, 1, 1, 8, 8, 3, 3, 3, 8, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], 1800, 0),
        // grouped, GNHWC: one image of one group past the limit.
        (&[2, 2, 1, 8, 8, 3, 3, 12, 128, 1, 1, 1, 1, 1, 1, 1, 1], 4000, 0),
    ];
    let (dev, module) = device(EmuArch::Gfx942);
    for (i, &(ck, limit, launches)) in cases.iter().enumerate() {
        let p = prob(ck);
        let layout = if p.g > 1 { ConvLayout::GnhwcGkyxcGnhwk } else { ConvLayout::NhwgcGkyxcNhwgk };
        let types = [TypeConfig::F16, TypeConfig::Bf16, TypeConfig::F32, TypeConfig::F16][i];
        let cfg = BwdWeightConfig { layout, types, epilogue: EpilogueOp::Scale(0.5), ..Default::default() };
        let plan = weight_plan(&dev, &p, &cfg, limit);
        assert!(plan.parts.iter().all(|q| q.chunk.cut.is_some()), "{}", plan.describe());
        let n = if launches > 0 { launches } else { plan.parts.len() };
        assert!(n >= 2 * p.g * p.n, "{}", plan.describe());
        check_weight(&dev, &module, &p, cfg, limit, n, 300 + i as u64);
    }
}

#[test]
fn bwd_data_bands_of_one_image_match_the_reference() {
    let (dev, module) = device(EmuArch::Gfx942);
    let plain = BwdDataConfig::default();
    // pad 1, stride 1; then stride 2 with a 1x1 filter (rows no dy reaches),
    // then stride 2, dilation 2, asymmetric pads; 3-D.
    let cases: [(&[usize], u64); 4] = [
        (&[2, 1, 2, 8, 8, 3, 3, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1], 700),
        (&[2, 1, 1, 8, 8, 1, 1, 17, 16, 2, 2, 1, 1, 0, 0, 0, 0], 500),
        (&[2, 1, 1, 8, 8, 3, 3, 17, 16, 2, 2, 2, 2, 2, 2, 0, 1], 600),
        (&[3, 1, 1, 8, 8, 3, 3, 3, 8, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], 1800),
    ];
    for (i, &(ck, limit)) in cases.iter().enumerate() {
        let p = prob(ck);
        let types = [TypeConfig::F16, TypeConfig::Bf16, TypeConfig::F32, TypeConfig::F16][i];
        let d = |r| TensorDesc::packed(&p, plain.layout, r);
        let plan = bwd_data::plan_with_limit(&p, &BwdDataConfig { types, ..plain.clone() }, dev.family(), dev.compute_units(), d(TensorRole::Output), d(TensorRole::Weight), d(TensorRole::Input), limit).expect("plan");
        assert!(plan.parts.len() >= 2 && plan.parts.iter().all(|q| q.chunk.cut.is_some()), "{}", plan.describe());
        check_data(&dev, &module, &p, BwdDataConfig { types, ..plain.clone() }, false, limit, plan.parts.len());
    }
    // Multi-D epilogue in bands: a bias per channel (does not move) and a
    // full D (moves with dx), then D0 aliasing dx.
    let p = prob(&[2, 1, 2, 8, 8, 3, 3, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1]);
    let bias = BwdDataConfig {
        epilogue: vec![EpilogueOp::Add, EpilogueOp::AddRelu],
        d_layouts: vec![DLayout::PerChannel, DLayout::Full(ConvLayout::NhwgcGkyxcNhwgk)],
        ..plain.clone()
    };
    check_data(&dev, &module, &p, bias, false, 700, 10);
    let aliased = BwdDataConfig { epilogue: vec![EpilogueOp::Bilinear(0.5, 1.0)], ..plain };
    check_data(&dev, &module, &p, aliased, true, 700, 10);
}
