//! The isa backend (`Backend::Isa`): the real AMD code objects of gfx90a,
//! gfx942 and gfx1100 run on the CPU by `convgrad-isa`, through the same
//! runtime, planner and verify harness as every other backend (issue #26).

use convgrad::check::Init;
use convgrad::ops::bwd_weight::{self as bw, BwdWeightConfig, SplitK};
use convgrad::ops::bwd_data::BwdDataConfig;
use convgrad::runtime::{Backend, BackendKind, Device, IsaArch};
use convgrad::types::{ConvProblem, TypeConfig};
use convgrad::verify::{bwd_data, bwd_weight};

const ARCHS: [IsaArch; 3] = [IsaArch::Gfx90a, IsaArch::Gfx942, IsaArch::Gfx1100];

fn prob(v: &[usize]) -> ConvProblem {
    ConvProblem::from_ck_args(v).expect("test problem")
}

fn open(arch: IsaArch) -> Device {
    let dev = Device::open(Backend::Isa(arch), 0).expect("isa device");
    assert_eq!(dev.backend_kind(), BackendKind::Isa);
    assert_eq!(dev.arch(), arch.name());
    dev
}

#[test]
fn bwd_weight_on_every_amd_arch() {
    // Plain, split-K with atomic partials (workspace zeroed by the runtime, the
    // last workgroup sums), and f32.
    let cases = [
        (TypeConfig::F16, SplitK::Fixed(1)),
        (TypeConfig::F16, SplitK::Fixed(2)),
        (TypeConfig::F32, SplitK::Auto),
    ];
    for arch in ARCHS {
        let dev = open(arch);
        let module = dev.load_module().expect("module");
        for (types, split_k) in cases {
            let case = bwd_weight::Case {
                problem: prob(&[2, 1, 2, 32, 16, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1]),
                config: BwdWeightConfig { types, split_k, ..Default::default() },
                seed: 11,
                init: Init::Float,
                timed_runs: 0,
                dump: false,
            };
            let out = bwd_weight::run(&dev, &module, &case)
                .unwrap_or_else(|e| panic!("{} {types:?} {split_k:?}: {e}", arch.name()));
            println!("{} bwd-weight {types:?} {}: {}", arch.name(), out.describe, out.report.summary());
            assert!(out.passed(), "{} {types:?} {split_k:?}: {}", arch.name(), out.report.summary());
        }
    }
}

#[test]
fn bwd_data_on_every_amd_arch() {
    for arch in ARCHS {
        let dev = open(arch);
        let module = dev.load_module().expect("module");
        for (types, p) in [
            (TypeConfig::F16, [2, 1, 2, 16, 32, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1]),
            (TypeConfig::Bf16, [2, 1, 1, 16, 16, 3, 3, 9, 9, 2, 2, 1, 1, 1, 1, 1, 1]),
        ] {
            let case = bwd_data::Case {
                problem: prob(&p),
                config: BwdDataConfig { types, ..Default::default() },
                seed: 12,
                init: Init::Float,
                alias_d0: false,
                timed_runs: 0,
                dump: false,
            };
            let out = bwd_data::run(&dev, &module, &case)
                .unwrap_or_else(|e| panic!("{} {types:?}: {e}", arch.name()));
            println!("{} bwd-data {types:?} {}: {}", arch.name(), out.describe, out.report.summary());
            assert!(out.passed(), "{} {types:?}: {}", arch.name(), out.report.summary());
        }
    }
}

#[test]
fn parse_names_the_allowed_architectures() {
    assert_eq!(Backend::parse("isa", None).unwrap(), Backend::Isa(IsaArch::Gfx942));
    assert_eq!(Backend::parse("isa:gfx1100", None).unwrap(), Backend::Isa(IsaArch::Gfx1100));
    assert_eq!(Backend::parse("ISA", Some("gfx90a")).unwrap(), Backend::Isa(IsaArch::Gfx90a));
    for b in ARCHS.map(Backend::Isa) {
        assert_eq!(b.to_string().parse::<Backend>().unwrap(), b);
    }
    for (name, arch) in [("isa", Some("sm_90")), ("isa:gfx1200", None), ("isa:", None)] {
        let e = Backend::parse(name, arch).expect_err(name).to_string();
        assert!(e.contains("gfx90a, gfx942, gfx1100"), "{e}");
    }
    let e = Device::open(Backend::Isa(IsaArch::Gfx942), 1).expect_err("index 1").to_string();
    assert!(e.contains("index 0"), "{e}");
}

#[test]
fn missing_kernel_and_executor_errors_are_runtime_errors() {
    let dev = open(IsaArch::Gfx942);
    let module = dev.load_module().expect("module");
    let e = module.kernel("bwdw_no_such_kernel").expect_err("missing kernel").to_string();
    assert!(e.contains("bwdw_no_such_kernel") && e.contains("gfx942"), "{e}");

    // A real kernel given addresses that are no allocation: the executor's
    // memory check stops it, and the launch returns an error naming the kernel.
    let p = prob(&[2, 1, 2, 16, 16, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1]);
    let cfg = BwdWeightConfig { split_k: SplitK::Fixed(1), ..Default::default() };
    let plan = bw::plan(&p, &cfg, dev.family(), dev.compute_units()).expect("plan");
    let kernel = module.kernel(plan.main.instance.name).expect("kernel");
    let bogus = 0x7_0000_0000u64;
    let args = plan.args(bogus, bogus + (1 << 24), bogus + (2 << 24), 0, &[]);
    let e = dev
        .launch(&kernel, plan.main.grid, plan.main.block, plan.main.lds_bytes, &args)
        .expect_err("bogus addresses")
        .to_string();
    assert!(e.contains(plan.main.instance.name) && e.contains("out-of-bounds"), "{e}");
    // The device stays usable.
    let b = dev.upload(&[1.0f32, 2.0, 3.0]).expect("upload");
    assert_eq!(b.download().expect("download"), vec![1.0, 2.0, 3.0]);
}
