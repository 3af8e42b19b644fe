//! Every planning decision over a wide problem set, as text: the chosen
//! kernel, grid, block, LDS, split and a hash of the argument block, or the
//! error. Refactors of the kernel choice must leave it unchanged:
//!
//! ```sh
//! CONVGRAD_PLAN_SNAPSHOT=/tmp/before.txt cargo test --release -p convgrad --test plan_snapshot -- --ignored
//! # ... change the code ...
//! CONVGRAD_PLAN_SNAPSHOT=/tmp/after.txt cargo test --release -p convgrad --test plan_snapshot -- --ignored
//! diff /tmp/before.txt /tmp/after.txt
//! ```
//!
//! The problems: real-network layers (ResNet-50, ResNeXt, MobileNet
//! depthwise, a 3-D UNet layer, a 1-D audio layer) and 400 seeded random
//! ones (groups, odd channels, strides, dilations, asymmetric pads, 1-3 D),
//! each in every layout family, type, split mode and several epilogues, on
//! three kernel families and three compute-unit counts.

use convgrad::check::SplitMix64;
use convgrad::ops::bwd_data::{self, BwdDataConfig, DLayout};
use convgrad::ops::LaunchSpec;
use convgrad::ops::bwd_weight::{self, BwdWeightConfig, SplitK};
use convgrad::types::instance::Family;
use convgrad::types::params::ConvArgs;
use convgrad::types::{ConvLayout, ConvProblem, EpilogueOp, TypeConfig};
use std::fmt::Write as _;
use std::hash::{DefaultHasher, Hash, Hasher};

fn problems() -> Vec<ConvProblem> {
    let ck = |v: &[usize]| ConvProblem::from_ck_args(v).unwrap();
    let sq = |n, g, c, k, f, hw, s, pad| ck(&[2, g, n, k, c, f, f, hw, hw, s, s, 1, 1, pad, pad, pad, pad]);
    let mut v = vec![
        sq(32, 1, 3, 64, 7, 224, 2, 3),
        sq(32, 1, 64, 64, 3, 56, 1, 1),
        sq(32, 1, 256, 64, 1, 56, 1, 0),
        sq(32, 1, 128, 128, 3, 28, 2, 1),
        sq(32, 1, 512, 512, 3, 7, 1, 1),
        sq(32, 1, 1024, 2048, 1, 14, 2, 0),
        sq(32, 32, 4, 4, 3, 56, 1, 1),
        sq(32, 32, 16, 16, 3, 14, 1, 1),
        sq(32, 32, 8, 8, 3, 28, 1, 1),
        sq(32, 144, 1, 1, 3, 56, 1, 1),
        sq(32, 384, 1, 1, 3, 14, 1, 1),
        sq(32, 96, 1, 1, 3, 112, 2, 1),
        sq(32, 240, 1, 1, 5, 28, 1, 2),
        sq(32, 32, 12, 12, 3, 28, 1, 1),
        sq(32, 1, 3, 768, 16, 224, 16, 0),
        ck(&[3, 1, 2, 32, 32, 3, 3, 3, 16, 64, 64, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]),
        ck(&[3, 4, 1, 128, 256, 3, 3, 3, 14, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]),
        ck(&[1, 1, 8, 512, 512, 3, 4000, 1, 1, 1, 1]),
        ck(&[2, 1, 128, 256, 128, 3, 3, 71, 71, 2, 2, 1, 1, 1, 1, 1, 1]),
    ];
    let mut r = SplitMix64::new(20_261_124);
    let mut pick = |v: &[usize]| v[r.below(v.len() as u64) as usize];
    while v.len() < 420 {
        let nd = pick(&[1, 2, 2, 3]);
        let g = pick(&[1, 1, 2, 4, 32, 64]);
        let depthwise = pick(&[0, 0, 0, 0, 1]) == 1;
        let c = if depthwise { 1 } else { pick(&[1, 3, 4, 8, 12, 16, 24, 32, 64, 100, 128]) };
        let k = if depthwise { 1 } else { pick(&[1, 4, 8, 16, 32, 64, 96, 256]) };
        let n = pick(&[1, 2, 3, 8]);
        // Per dim: filter, input, stride, dilation, left and right pad.
        let dims: Vec<[usize; 6]> = (0..nd)
            .map(|_| {
                let f = pick(&[1, 1, 2, 3, 3, 5, 7]);
                let i = pick(&[2, 5, 7, 9, 14, 17, 28, 40]).max(f);
                [f, i, pick(&[1, 1, 2, 3]), pick(&[1, 1, 2]), pick(&[0, 1, 2]), pick(&[0, 1, 2])]
            })
            .collect();
        let s: Vec<Vec<usize>> = (0..6).map(|j| dims.iter().map(|d| d[j]).collect()).collect();
        let mut a = vec![nd, g, n, k, c];
        for part in &s {
            a.extend(part);
        }
        if let Ok(p) = ConvProblem::from_ck_args(&a) {
            v.push(p);
        }
    }
    v
}

fn hash(v: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

/// A plan's launch, `counts` (the operation's own) and its argument block's
/// hash, in one line.
fn launch_line(main: &LaunchSpec, counts: &str, args: &ConvArgs) -> String {
    let (name, grid, block, lds) = (main.instance.name, main.grid, main.block, main.lds_bytes);
    format!("{name} {grid:?} {block} {lds} {counts} a{:x}", hash(&bytemuck::bytes_of(args)))
}

#[test]
#[ignore = "writes a snapshot for refactors: set CONVGRAD_PLAN_SNAPSHOT"]
fn plan_snapshot() {
    let Ok(path) = std::env::var("CONVGRAD_PLAN_SNAPSHOT") else {
        panic!("set CONVGRAD_PLAN_SNAPSHOT to the output file");
    };
    let mut out = String::new();
    let fams = [Family::Cdna, Family::Rdna3, Family::Nvidia];
    for (pi, p) in problems().iter().enumerate() {
        for (li, &layout) in ConvLayout::ALL.iter().enumerate() {
            for (ti, &types) in TypeConfig::ALL.iter().enumerate() {
                for fam in fams {
                    for cus in [8, 132, 304] {
                        // Rotate the options over the problem index to bound the count.
                        let split = [SplitK::Auto, SplitK::Fixed(1), SplitK::Fixed(3), SplitK::Auto][(pi + li) % 4];
                        let det = (pi + ti) % 3 == 0;
                        let epi = [EpilogueOp::PassThrough, EpilogueOp::Scale(0.5), EpilogueOp::Bilinear(0.5, 2.0)][pi % 3];
                        let wcfg = BwdWeightConfig { layout, types, epilogue: epi, split_k: split, deterministic: det, instance: None };
                        let w = match bwd_weight::plan(p, &wcfg, fam, cus) {
                            Ok(pl) => launch_line(&pl.main, &format!("k{} ws{}", pl.k_batch, pl.workspace_elems), &pl.args_template),
                            Err(e) => format!("error: {e}"),
                        };
                        let (epis, dl): (Vec<EpilogueOp>, Vec<DLayout>) = match pi % 4 {
                            0 => (vec![], vec![]),
                            1 => (vec![EpilogueOp::AddRelu], vec![DLayout::PerChannel]),
                            2 => (vec![EpilogueOp::ReluMask, EpilogueOp::Add], vec![DLayout::PerPixel, DLayout::Output]),
                            _ => (vec![EpilogueOp::Scale(2.0)], vec![]),
                        };
                        let dcfg = BwdDataConfig { layout, types, epilogue: epis, d_layouts: dl, instance: None, strip_rows: None };
                        let d = match bwd_data::plan(p, &dcfg, fam, cus) {
                            Ok(pl) => launch_line(&pl.main, &format!("s{}", pl.slices), &pl.args_template),
                            Err(e) => format!("error: {e}"),
                        };
                        let _ = writeln!(out, "{pi} {} {} {fam:?} {cus} | W {w} | D {d}", layout.name(), types.name());
                    }
                }
            }
        }
    }
    // Forced instances: every instance on every problem of the first 40.
    for p in problems().iter().take(40) {
        for i in convgrad::types::instance::INSTANCES.iter() {
            let w = BwdWeightConfig { types: i.types, instance: Some(i.name.into()), ..Default::default() };
            let d = BwdDataConfig { types: i.types, instance: Some(i.name.into()), ..Default::default() };
            for fam in fams {
                let a = bwd_weight::plan(p, &w, fam, 132).map(|pl| pl.main.grid).map_err(|e| e.to_string());
                let b = bwd_data::plan(p, &d, fam, 132).map(|pl| pl.main.grid).map_err(|e| e.to_string());
                let _ = writeln!(out, "forced {} {fam:?} {p} | {a:?} | {b:?}", i.name);
            }
        }
    }
    std::fs::write(&path, out).unwrap();
}
