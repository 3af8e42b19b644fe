//! What the backward-data and backward-weight suites share: problems in CK's
//! argument order, the device under test, checking one case against the
//! float64 reference, and the sweep that rotates options over problems,
//! prints a line per case and fails listing every case that did not pass.
//!
//! Each suite includes it with `mod common;` and uses a part of it.
#![allow(dead_code)]

use convgrad::check::Init;
use convgrad::runtime::{Backend, Device, EmuArch, Module};
use convgrad::types::instance::{Family, INSTANCES, Instance, Op};
use convgrad::types::params::vec_mode;
use convgrad::types::{ConvLayout, ConvProblem, TypeConfig};
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
/// (gfx942, gfx950, gfx1100, gfx1200, sm_90) runs `case(instance)` and passes,
/// and the instance that ran is that one. gfx950 runs only its own (gfx942's
/// ran on gfx942).
pub fn every_instance<C: Check>(ops: &[Op], case: impl Fn(&Instance) -> C) {
    for arch in [EmuArch::Gfx942, EmuArch::Gfx950, EmuArch::Gfx1100, EmuArch::Gfx1200, EmuArch::Sm90] {
        let (dev, module) = device(arch);
        let own = |i: &Instance| arch != EmuArch::Gfx950 || !i.on(Family::Cdna);
        for inst in INSTANCES.iter().filter(|i| ops.contains(&i.op) && i.on(dev.family()) && own(i)) {
            let o = case(inst).check(&dev, &module, inst.name);
            assert_eq!(o.instance, inst.name);
            assert!(o.passed(), "{} on {}: {}", inst.name, dev.arch(), o.report.summary());
        }
    }
}

/// One `#[test]` per architecture model, each running `suite` on that model:
/// `per_arch!(suite; test_name => Gfx942, ...)`.
#[allow(unused_macros)]
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
#[allow(unused_imports)]
pub(crate) use per_arch;

/// The problems both operations' main suites sweep, in this order (a case's
/// options rotate with its index): dims, groups, strides (also larger than
/// the filter), dilations, asymmetric pads, 1x1 with stride 2, 3D. `own`
/// holds each suite's problems at the places they take: a 1-D problem with a
/// dilation and odd C/K, a depthwise one, one spanning several tiles; `extra`
/// follow the shared ones.
pub fn sweep_problems(
    own: [(&'static str, ConvProblem); 3],
    extra: impl IntoIterator<Item = (&'static str, ConvProblem)>,
) -> Vec<(&'static str, ConvProblem)> {
    let [odd, depthwise, multi_tile] = own;
    let mut v = vec![
        ("1d stride2 asym-pad", prob(&[1, 2, 3, 24, 16, 3, 17, 2, 1, 0, 2])),
        odd,
        ("2d 3x3 pad1", prob(&[2, 1, 2, 40, 24, 3, 3, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("2d groups stride2 dil2", prob(&[2, 3, 2, 16, 8, 3, 3, 11, 10, 2, 2, 2, 2, 1, 2, 2, 0])),
        depthwise,
        ("2d 1x1 stride2", prob(&[2, 1, 3, 33, 17, 1, 1, 7, 9, 2, 2, 1, 1, 0, 0, 0, 0])),
        ("2d stride > filter", prob(&[2, 2, 2, 7, 5, 2, 2, 13, 12, 4, 3, 1, 1, 1, 0, 0, 2])),
        multi_tile,
        ("3d 3x3x3 pad1", prob(&[3, 2, 1, 12, 8, 3, 3, 3, 5, 6, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("3d stride (2,1,2) asym", prob(&[3, 1, 2, 9, 6, 2, 3, 2, 6, 5, 7, 2, 1, 2, 1, 1, 1, 0, 1, 1, 1, 0, 0])),
    ];
    v.extend(extra);
    v
}

/// The problems both operations' direct-kernel sweeps run (channel vectors
/// along groups for depthwise, along channels for small groups, and the
/// scalar fallback), each operation's own kinds next to the other's:
/// strided, dilated depthwise problems with asymmetric pads (3x3, 5x5), 1-D
/// depthwise ones, depthwise strides over the filter, groups of C = K = 4;
/// rows longer than backward-weight's row segments, with streams across row
/// ends; filter rows wider than one of backward-data's windows (taps in
/// several groups) and its stride-2 classes with K = 8.
pub fn direct_problems() -> Vec<(&'static str, ConvProblem)> {
    vec![
        // Depthwise: lanes along groups.
        ("depthwise 1d stride3", prob(&[1, 8, 3, 1, 1, 4, 23, 3, 2, 1, 2])),
        ("depthwise 1d stride3 dil2", prob(&[1, 8, 2, 1, 1, 4, 23, 3, 2, 1, 2])),
        ("depthwise 3x3 pad1", prob(&[2, 16, 2, 1, 1, 3, 3, 9, 10, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("depthwise 5x5 stride2 dil2 asym", prob(&[2, 24, 2, 1, 1, 5, 5, 15, 14, 2, 2, 2, 1, 2, 1, 0, 1])),
        ("depthwise stride2 dil2 asym", prob(&[2, 24, 2, 1, 1, 3, 3, 11, 12, 2, 2, 2, 1, 2, 1, 0, 1])),
        ("depthwise G=12 stride > filter", prob(&[2, 12, 2, 1, 1, 2, 2, 9, 11, 4, 3, 1, 1, 1, 0, 0, 2])),
        ("depthwise G=10 stride4 > filter", prob(&[2, 10, 2, 1, 1, 2, 2, 9, 11, 4, 3, 1, 1, 1, 0, 0, 2])),
        ("depthwise 3d", prob(&[3, 8, 1, 1, 1, 3, 3, 3, 4, 5, 6, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1])),
        ("depthwise G=6", prob(&[2, 6, 2, 1, 1, 3, 3, 7, 8, 1, 2, 1, 1, 1, 1, 1, 1])),
        // Rows longer than a segment, streams across row ends.
        ("depthwise 3x3 W=29", prob(&[2, 8, 3, 1, 1, 3, 3, 5, 29, 1, 1, 1, 1, 1, 1, 1, 1])),
        // Filter rows wider than one window (taps in several groups).
        ("depthwise 5x5", prob(&[2, 8, 2, 1, 1, 5, 5, 9, 12, 1, 1, 1, 1, 2, 2, 2, 2])),
        // Small groups: lanes along channels, or the scalar fallback.
        ("groups C=K=4", prob(&[2, 6, 2, 4, 4, 3, 3, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("groups C=2 dil3", prob(&[2, 4, 2, 2, 2, 3, 3, 10, 9, 1, 1, 3, 3, 2, 3, 3, 2])),
        ("groups C=8 K=3 stride2", prob(&[2, 3, 2, 3, 8, 3, 3, 10, 9, 2, 2, 1, 1, 1, 1, 1, 0])),
        ("odd C=3", prob(&[2, 4, 2, 4, 3, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("groups C=K=4, whole windows", prob(&[2, 6, 2, 4, 4, 3, 3, 9, 19, 1, 1, 1, 1, 1, 1, 1, 1])),
        ("groups C=4 K=2 1x3 W=21 asym", prob(&[2, 2, 2, 2, 4, 1, 3, 4, 21, 2, 1, 1, 1, 0, 0, 1, 2])),
        ("groups C=4 K=2 1x7", prob(&[2, 2, 2, 2, 4, 1, 7, 5, 19, 1, 1, 1, 1, 0, 3, 0, 2])),
        // Stride-2 classes, K = 8.
        ("groups C=4 K=8 stride2", prob(&[2, 2, 2, 8, 4, 3, 3, 11, 10, 2, 2, 1, 1, 1, 1, 1, 0])),
    ]
}

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

/// The direct kernels' channel-vector sweep of either operation: `variants`
/// cases of every problem of [`direct_problems`] on the gfx942 and sm_90
/// models, `case` running one
/// and returning its line, whether it passed, its dtypes and the `vec_mode`
/// its plan chose. Every path kind must have run at both lane widths (2- and
/// 4-byte activations): the scalar fallback, depthwise lanes along groups
/// (full and half vectors), lanes along channels (full and half), and the
/// operation's own mode bit `own` (set along with any of those).
pub fn direct_vector_sweep(
    variants: usize,
    own: u32,
    mut case: impl FnMut(&Device, &Module, At, &str, &ConvProblem) -> (String, bool, TypeConfig, u32),
) {
    use vec_mode::{DEPTHWISE, HALF, ON};
    let mut seen = std::collections::BTreeSet::new();
    sweep(&[EmuArch::Gfx942, EmuArch::Sm90], &direct_problems(), variants, |dev, module, at, name, p| {
        let (line, passed, t, mode) = case(dev, module, at, name, p);
        seen.insert((t.act().bytes(), mode & !own));
        if mode & own != 0 {
            seen.insert((t.act().bytes(), own));
        }
        (line, passed)
    });
    for bytes in [2, 4] {
        for want in [0, ON | DEPTHWISE, ON | DEPTHWISE | HALF, ON, ON | HALF, own] {
            assert!(seen.contains(&(bytes, want)), "no {bytes}-byte case ran vec_mode {want:#x} (ran {seen:?})");
        }
    }
}

/// The dtypes the tap-shift kernels take.
pub const TAP_SHIFT_TYPES: [TypeConfig; 2] = [TypeConfig::F16, TypeConfig::Bf16];

/// The layouts the tap-shift kernels take: both channels-last families.
pub const TAP_SHIFT_LAYOUTS: [ConvLayout; 2] = [ConvLayout::NhwgcGkyxcNhwgk, ConvLayout::GnhwcGkyxcGnhwk];

/// The problems both operations' tap-shift suites run (stride 1, at most 16
/// channels per group): `own` first (each operation's tiles that straddle
/// images and its K = 8 case), then dilation with asymmetric pads and C = 8,
/// a 2x3 filter, 1D, 3D with a 1-tall z filter, 1x1.
pub fn tap_shift_problems(own: &[(&'static str, ConvProblem)]) -> Vec<(&'static str, ConvProblem)> {
    let mut v = own.to_vec();
    v.extend([
        ("dil2 asym pads, C=8", prob(&[2, 4, 2, 16, 8, 3, 3, 10, 9, 1, 1, 2, 2, 2, 1, 1, 2])),
        ("2x3 unpadded", prob(&[2, 3, 2, 16, 16, 2, 3, 8, 12, 1, 1, 1, 1, 0, 0, 0, 0])),
        ("1d", prob(&[1, 4, 3, 16, 16, 5, 30, 1, 1, 2, 2])),
        ("3d 1x3x3", prob(&[3, 2, 2, 8, 8, 1, 3, 3, 3, 6, 7, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1])),
        ("1x1", prob(&[2, 4, 2, 16, 16, 1, 1, 7, 9, 1, 1, 1, 1, 0, 0, 0, 0])),
    ]);
    v
}

/// The tap-shift instance of kind `op` for `t` on `dev`'s family. `None`
/// only on RDNA3 and RDNA4, which have no tap-shift kernels (they went to
/// scratch on gfx1100): a suite pointed at such a device
/// (`CONVGRAD_TEST_BACKEND`) says so.
pub fn tap_shift_instance(op: Op, t: TypeConfig, dev: &Device) -> Option<&'static Instance> {
    let found = INSTANCES.iter().find(|i| i.op == op && i.types == t && i.on(dev.family()));
    if found.is_none() {
        assert!(matches!(dev.family(), Family::Rdna3 | Family::Rdna4), "no tap-shift kernel for {t:?} on {:?}", dev.family());
    }
    found
}

/// A forced tap-shift instance `name` is refused, naming itself and the
/// reason, for the problems both operations refuse (K not a multiple of 8,
/// more than 9 filter taps, a tap shift beyond the tile) and
/// `own` (CK arguments, reason); `plan` gives a problem's planning error.
pub fn tap_shift_refusals(name: &str, own: &[(Vec<usize>, &str)], plan: impl Fn(&ConvProblem) -> String) {
    let shared = [
        (vec![2, 4, 2, 24, 16, 3, 3, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1], "K a multiple of 8"),
        (vec![2, 4, 2, 16, 16, 5, 5, 9, 9, 1, 1, 1, 1, 2, 2, 2, 2], "at most 9 filter taps"),
        (vec![2, 4, 2, 16, 16, 3, 3, 56, 56, 1, 1, 1, 1, 1, 1, 1, 1], "largest tap shift"),
    ];
    for (v, why) in shared.iter().chain(own) {
        let e = plan(&prob(v));
        assert!(e.contains(&format!("{name} does not apply")) && e.contains(why), "{v:?}: {e}");
    }
}
