//! The isa backend (`Backend::Isa`): the real AMD code objects of gfx90a,
//! gfx942 and gfx1100 (and, in their own tests, RDNA4's gfx1200/gfx1201) run on the CPU by `convgrad-isa`, through the same
//! runtime, planner and verify harness as every other backend (issue #26).

mod common;

use common::Check;
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

/// Runs every case of `cases` (each named by its options) on the code object of
/// each architecture of `archs`; each must pass against the reference.
fn on_archs<C: Check>(archs: &[IsaArch], op: &str, cases: &[(String, C)]) {
    for &arch in archs {
        let dev = open(arch);
        let module = dev.load_module().expect("module");
        for (what, case) in cases {
            let name = format!("{} {op} {what}", arch.name());
            let out = case.check(&dev, &module, &name);
            println!("{name} {}: {}", out.describe, out.report.summary());
            assert!(out.passed(), "{name}: {}", out.report.summary());
        }
    }
}

#[test]
fn bwd_weight_on_every_amd_arch() {
    bwd_weight_cases(&ARCHS);
}

/// RDNA4 (#40): the GFX12 code objects (split wait counters, GFX12 WMMA).
#[test]
fn bwd_weight_on_rdna4() {
    bwd_weight_cases(&[IsaArch::Gfx1200, IsaArch::Gfx1201]);
}

#[test]
fn bwd_data_on_rdna4() {
    bwd_data_cases(&[IsaArch::Gfx1200, IsaArch::Gfx1201]);
}

fn bwd_weight_cases(archs: &[IsaArch]) {
    // Plain, split-K with atomic partials (workspace zeroed by the runtime, the
    // last workgroup sums), and f32.
    let p = prob(&[2, 1, 2, 32, 16, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1]);
    let cases = [
        (TypeConfig::F16, SplitK::Fixed(1)),
        (TypeConfig::F16, SplitK::Fixed(2)),
        (TypeConfig::F32, SplitK::Auto),
    ]
    .map(|(types, split_k)| {
        let config = BwdWeightConfig { types, split_k, ..Default::default() };
        let case = bwd_weight::Case { problem: p, config, seed: 11, init: Init::Float, timed_runs: 0, dump: false };
        (format!("{types:?} {split_k:?}"), case)
    });
    on_archs(archs, "bwd-weight", &cases);
}

#[test]
fn bwd_data_on_every_amd_arch() {
    bwd_data_cases(&ARCHS);
}

fn bwd_data_cases(archs: &[IsaArch]) {
    let cases = [
        (TypeConfig::F16, [2, 1, 2, 16, 32, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1]),
        (TypeConfig::Bf16, [2, 1, 1, 16, 16, 3, 3, 9, 9, 2, 2, 1, 1, 1, 1, 1, 1]),
    ]
    .map(|(types, p)| {
        let config = BwdDataConfig { types, ..Default::default() };
        let case =
            bwd_data::Case { problem: prob(&p), config, seed: 12, init: Init::Float, alias_d0: false, timed_runs: 0, dump: false };
        (format!("{types:?}"), case)
    });
    on_archs(archs, "bwd-data", &cases);
}

#[test]
fn parse_names_the_allowed_architectures() {
    assert_eq!(Backend::parse("isa", None).unwrap(), Backend::Isa(IsaArch::Gfx942));
    assert_eq!(Backend::parse("isa:gfx1100", None).unwrap(), Backend::Isa(IsaArch::Gfx1100));
    assert_eq!(Backend::parse("ISA", Some("gfx90a")).unwrap(), Backend::Isa(IsaArch::Gfx90a));
    for b in ARCHS.map(Backend::Isa) {
        assert_eq!(b.to_string().parse::<Backend>().unwrap(), b);
    }
    assert_eq!(Backend::parse("isa:gfx1200", None).unwrap(), Backend::Isa(IsaArch::Gfx1200));
    assert_eq!(Backend::parse("isa", Some("gfx1201")).unwrap(), Backend::Isa(IsaArch::Gfx1201));
    for (name, arch) in [("isa", Some("sm_90")), ("isa:gfx1250", None), ("isa:", None)] {
        let e = Backend::parse(name, arch).expect_err(name).to_string();
        assert!(e.contains("gfx90a, gfx942, gfx950, gfx1100, gfx1200, gfx1201"), "{e}");
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
    // SAFETY: this breaks `launch`'s contract on purpose, on the one backend
    // where that is harmless: the isa executor runs the code object on the CPU
    // against its own allocation table, so an address that is no allocation is
    // an error of the executor, never an access of this process's memory.
    let e = unsafe { dev.launch(&kernel, plan.main.grid, plan.main.block, plan.main.lds_bytes, &args) }
        .expect_err("bogus addresses")
        .to_string();
    assert!(e.contains(plan.main.instance.name) && e.contains("out-of-bounds"), "{e}");
    // The device stays usable.
    let b = dev.upload(&[1.0f32, 2.0, 3.0]).expect("upload");
    assert_eq!(b.download().expect("download"), vec![1.0, 2.0, 3.0]);
}

/// The gfx942 code object with the instructions of kernel `name` that `pick`
/// accepts (given its words) changed by `edit`; at least one.
fn broken_image(name: &str, pick: impl Fn(&convgrad_isa::decode::Inst, &[u32]) -> bool, edit: impl Fn(&mut [u32])) -> Vec<u8> {
    let mut image = convgrad::code_objects::code_object("gfx942").expect("gfx942 code object built").to_vec();
    let co = convgrad_isa::CodeObject::parse(&image).expect("code object");
    let k = co.kernel(name).unwrap_or_else(|| panic!("no kernel {name}"));
    let insts = convgrad_isa::decode::decode_all(co.arch, &k.code, k.entry).expect("decodes");
    // The kernel's bytes in the file (kernels share prologues: match all of it).
    let n = k.code.len();
    let base = (0..image.len() - n).find(|&p| image[p..p + n] == k.code[..]).expect("kernel code in the image");
    let mut edited = 0;
    for inst in &insts {
        let at = (inst.addr - k.entry) as usize;
        let mut words: Vec<u32> =
            k.code[at..at + inst.len as usize].chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        if !pick(inst, &words) {
            continue;
        }
        edit(&mut words);
        for (j, w) in words.iter().enumerate() {
            image[base + at + 4 * j..base + at + 4 * j + 4].copy_from_slice(&w.to_le_bytes());
        }
        edited += 1;
    }
    assert!(edited > 0, "{name}: no instruction to break");
    image
}

/// Runs the MFMA backward-weight kernel from `image` on a small problem:
/// whether it computed the right weights (an executor error counts as not).
fn weight_kernel_passes(dev: &Device, image: &[u8]) -> bool {
    let module = dev.load_module_image(image).expect("the image loads");
    let case = bwd_weight::Case {
        problem: prob(&[2, 1, 2, 64, 64, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1]),
        config: BwdWeightConfig { types: TypeConfig::F16, instance: Some(MFMA_KERNEL.into()), ..Default::default() },
        seed: 5,
        init: Init::Float,
        timed_runs: 0,
        dump: false,
    };
    match bwd_weight::run(dev, &module, &case) {
        Ok(out) => {
            println!("{}", out.report.summary());
            out.passed()
        }
        Err(e) => {
            println!("error: {e}");
            false
        }
    }
}

const MFMA_KERNEL: &str = "bwdw_f16_64x64x32_mfma16";

/// A deliberately broken code object fails: the kernel's first MFMA with its A
/// and B operands swapped (the result is wrong), and its first scalar load
/// at a shifted offset (it reads past the kernel-argument segment: an
/// executor error). The intact image passes the same check, so the failures
/// are the edits'.
#[test]
fn broken_code_objects_fail() {
    let dev = open(IsaArch::Gfx942);
    let intact = convgrad::code_objects::code_object("gfx942").expect("gfx942 code object built");
    assert!(weight_kernel_passes(&dev, intact), "the intact image must pass");
    // VOP3P: src0 in bits 0-8 of the second word, src1 in bits 9-17.
    let first = std::cell::Cell::new(true);
    let swapped = broken_image(
        MFMA_KERNEL,
        |i, w| i.name.starts_with("v_mfma") && w[1] & 0x1ff != (w[1] >> 9) & 0x1ff && first.replace(false),
        |w| {
            let (s0, s1) = (w[1] & 0x1ff, (w[1] >> 9) & 0x1ff);
            w[1] = (w[1] & !0x3_ffff) | s1 | (s0 << 9);
        },
    );
    assert!(!weight_kernel_passes(&dev, &swapped), "swapped MFMA operands went unnoticed");
    // SMEM (GFX9): the byte offset in bits 0-20 of the second word; the first
    // scalar load reads the argument block.
    let first = std::cell::Cell::new(true);
    let shifted = broken_image(MFMA_KERNEL, |i, _| i.name.starts_with("s_load") && first.replace(false), |w| w[1] += 8);
    assert!(!weight_kernel_passes(&dev, &shifted), "a shifted kernel-argument load went unnoticed");
}
