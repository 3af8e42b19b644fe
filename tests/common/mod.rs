//! What the backward-data and backward-weight suites share: problems in CK's
//! argument order, the device under test, checking one case against the
//! float64 reference, and the sweep that rotates options over problems,
//! prints a line per case and fails listing every case that did not pass.
//!
//! Each suite includes it with `mod common;` and uses a part of it.
#![allow(dead_code)]

use convgrad::check::Init;
use convgrad::runtime::{Backend, Device, EmuArch, Module};
use convgrad::types::instance::{INSTANCES, Instance, Op};
use convgrad::types::{ConvLayout, ConvProblem};
use convgrad::verify::{Outcome, bwd_data, bwd_weight};

/// `ndim G N K C filter input strides dilations lpads rpads` in CK's order.
pub fn prob(v: &[usize]) -> ConvProblem {
    ConvProblem::from_ck_args(v).unwrap_or_else(|e| panic!("bad test problem {v:?}: {e}"))
}

/// Input kinds to rotate: uniform floats, small integers.
pub const INITS: [Init; 2] = [Init::Float, Init::Int];

/// Layouts rotated over the direct kernels' cases: channels-last (whose
/// channel vectors the vector paths read) twice as often as the others.
pub const DIRECT_LAYOUTS: [ConvLayout; 4] = [
    ConvLayout::NhwgcGkyxcNhwgk,
    ConvLayout::NhwgcGkyxcNhwgk,
    ConvLayout::GnhwcGkyxcGnhwk,
    ConvLayout::NgchwGkcyxNgkhw,
];

/// The emulator model `arch`, or, when `CONVGRAD_TEST_BACKEND` names one
/// (`cuda`, `hip`), that GPU: the same suite then runs on real hardware.
pub fn device(arch: EmuArch) -> (Device, Module) {
    let backend = match std::env::var("CONVGRAD_TEST_BACKEND") {
        Ok(b) if !b.is_empty() => Backend::parse(&b, None).expect("CONVGRAD_TEST_BACKEND: auto|hip|cuda|emu"),
        _ => Backend::Emulator(arch),
    };
    let dev = Device::open(backend, 0).expect("device");
    let module = dev.load_module().expect("module");
    (dev, module)
}

/// A verification case of either operation: runs on a device with fresh
/// random inputs and a NaN-poisoned output, judged against the reference.
pub trait Check {
    /// Runs the case; an error (not a failed comparison) panics, naming the
    /// case `name` and its configuration.
    fn check(&self, dev: &Device, module: &Module, name: &str) -> Outcome;
}

impl Check for bwd_weight::Case {
    fn check(&self, dev: &Device, module: &Module, name: &str) -> Outcome {
        bwd_weight::run(dev, module, self).unwrap_or_else(|e| panic!("{name} {:?}: {e}", self.config))
    }
}

impl Check for bwd_data::Case {
    fn check(&self, dev: &Device, module: &Module, name: &str) -> Outcome {
        bwd_data::run(dev, module, self).unwrap_or_else(|e| panic!("{name} {:?}: {e}", self.config))
    }
}

/// A case's place in a sweep: problem `i`, variant `j`. Options rotate with
/// it so that every combination kind appears without running all of them.
#[derive(Clone, Copy, Debug)]
pub struct At {
    /// Index of the problem.
    pub i: usize,
    /// Index of the variant of that problem.
    pub j: usize,
}

impl At {
    /// `xs[(a * i + b * j) % xs.len()]`.
    pub fn pick<T: Clone>(self, xs: &[T], a: usize, b: usize) -> T {
        xs[(a * self.i + b * self.j) % xs.len()].clone()
    }

    /// `base + step * i + j`: a fresh seed per case.
    pub fn seed(self, base: u64, step: u64) -> u64 {
        base + step * self.i as u64 + self.j as u64
    }
}

/// Runs `variants` cases of every problem on every architecture model in
/// `archs` (or on the GPU that `CONVGRAD_TEST_BACKEND` names): `case` runs the
/// one at `At { i, j }` and returns the rest of its line (after the model,
/// the problem's name and the problem) and whether it passed. Prints every
/// line; fails at the end, listing the lines of the cases that did not pass.
pub fn sweep(
    archs: &[EmuArch],
    problems: &[(&str, ConvProblem)],
    variants: usize,
    mut case: impl FnMut(&Device, &Module, At, &str, &ConvProblem) -> (String, bool),
) {
    let mut failures = Vec::new();
    let mut n = 0;
    for &arch in archs {
        let (dev, module) = device(arch);
        for (i, (name, p)) in problems.iter().enumerate() {
            for j in 0..variants {
                let (rest, passed) = case(&dev, &module, At { i, j }, name, p);
                let line = format!("{} {name} [{p}] {rest}", dev.arch());
                println!("{line}");
                n += 1;
                if !passed {
                    failures.push(line);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {n} cases failed:\n{}", failures.len(), failures.join("\n"));
}

/// Every instance of the kernel kinds `ops` built for each model's family
/// (gfx942, gfx1100, sm_90) runs `case(instance)` and passes, and the
/// instance that ran is that one.
pub fn every_instance<C: Check>(ops: &[Op], case: impl Fn(&Instance) -> C) {
    for arch in [EmuArch::Gfx942, EmuArch::Gfx1100, EmuArch::Sm90] {
        let (dev, module) = device(arch);
        for inst in INSTANCES.iter().filter(|i| ops.contains(&i.op) && i.on(dev.family())) {
            let o = case(inst).check(&dev, &module, inst.name);
            assert_eq!(o.instance, inst.name);
            assert!(o.passed(), "{} on {}: {}", inst.name, dev.arch(), o.report.summary());
        }
    }
}

/// One `#[test]` per architecture model, each running `suite` on that model:
/// `per_arch!(suite; test_name => Gfx942, ...)`.
macro_rules! per_arch {
    ($suite:ident; $($test:ident => $arch:ident),+ $(,)?) => {
        $(
            #[test]
            fn $test() {
                $suite(convgrad::runtime::EmuArch::$arch);
            }
        )+
    };
}
pub(crate) use per_arch;

/// Stride == filter along x, for the folding tests of both operations:
/// `(name, problem, folds in a channels-last layout)`. `trailing_folds`:
/// whether a row that is no whole number of windows folds (backward-weight
/// reads none of the trailing columns; backward-data must write them).
pub fn stride_equals_filter(trailing_folds: bool) -> Vec<(&'static str, ConvProblem, bool)> {
    vec![
        ("patch 4x4 s4 C=3", prob(&[2, 1, 2, 96, 3, 4, 4, 16, 12, 4, 4, 1, 1, 0, 0, 0, 0]), true),
        ("2x2 s2 C=8", prob(&[2, 1, 2, 64, 8, 2, 2, 10, 12, 2, 2, 1, 1, 0, 0, 0, 0]), true),
        ("1d k2 s2", prob(&[1, 1, 3, 136, 8, 2, 14, 2, 1, 0, 0]), true),
        ("3d 1x2x2", prob(&[3, 1, 2, 64, 8, 1, 2, 2, 3, 4, 6, 1, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0]), true),
        ("grouped 2x2 s2", prob(&[2, 2, 2, 64, 8, 2, 2, 6, 8, 2, 2, 1, 1, 0, 0, 0, 0]), true),
        ("trailing columns", prob(&[2, 1, 2, 96, 3, 4, 4, 8, 13, 4, 4, 1, 1, 0, 0, 0, 0]), trailing_folds),
        ("padded 2x2 s2 C=8", prob(&[2, 1, 2, 64, 8, 2, 2, 8, 8, 2, 2, 1, 1, 1, 1, 1, 1]), false),
    ]
}

/// Whether a problem with `g` groups folds in `layout`: x's channels back
/// to back (GNHWC, or NHWGC with one group).
pub fn channels_last(layout: ConvLayout, g: usize) -> bool {
    layout == ConvLayout::GnhwcGkyxcGnhwk || (layout == ConvLayout::NhwgcGkyxcNhwgk && g == 1)
}
