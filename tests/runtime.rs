//! Host runtime tests: backend selection, buffers, modules and the argument-ABI
//! checks, launch validation, timing, and the smoke kernel on every backend.
//!
//! Tests that need something a plain `cargo test` machine may lack are
//! `#[ignore]`d, so a run without it reports them as ignored, never as passed;
//! asked for with `--ignored` (or `--include-ignored`), a missing GPU or
//! missing code objects FAIL:
//! - `*cuda*`: an NVIDIA GPU; `smoke_hip`: an AMD GPU and `--features hip`;
//! - `embedded_code_objects_follow_the_abi`: code objects embedded at build
//!   time (`cargo xtask build-kernels` first).
//!
//! On a GPU machine, run the built binary directly:
//! `./runtime --nocapture --test-threads 1 --include-ignored cuda` (see `host/examples/device-run.sh`).

mod common;

use convgrad::runtime::meta::{self, amdgpu, ptx};
use convgrad::runtime::{
    Backend, BackendKind, Device, DeviceBuffer, EmuArch, Event, Kernel, Module, RuntimeError, smoke,
};
use convgrad_types::instance::Family;

fn emu(arch: EmuArch) -> Device {
    Device::open(Backend::Emulator(arch), 0).expect("the emulator always opens")
}

/// Device 0 of `backend`, for a test that needs it (an `#[ignore]`d test
/// that was asked for): a missing device fails the test, never skips it.
fn gpu(backend: Backend) -> Device {
    match Device::open(backend, 0) {
        Ok(d) => {
            println!(
                "{backend}: {} ({}), {} CUs, {} MiB",
                d.name(),
                d.arch(),
                d.compute_units(),
                d.memory_bytes() >> 20
            );
            d
        }
        Err(e) => panic!("this test needs a {backend} device (it is #[ignore]d unless asked for): {e}"),
    }
}

/// The smoke kernel of `d`'s family: how it is launched, and the kernel.
fn smoke_kernel(d: &Device) -> (smoke::SmokeSpec, Kernel) {
    let s = smoke::spec(d.family());
    let k = d.load_module().unwrap().kernel(s.kernel).unwrap();
    (s, k)
}

// ---------------------------------------------------------------- API shape

#[test]
fn handles_are_send_and_sync() {
    fn both<T: Send + Sync>() {}
    both::<Device>();
    both::<DeviceBuffer<f32>>();
    both::<DeviceBuffer<half::f16>>();
    both::<Module>();
    both::<Kernel>();
    both::<Event>();
    both::<RuntimeError>();
}

#[test]
fn backend_names_parse() {
    assert_eq!(Backend::parse("auto", None).unwrap(), Backend::Auto);
    assert_eq!(Backend::parse("HIP", None).unwrap(), Backend::Hip);
    assert_eq!(
        Backend::parse("cuda", Some("gfx1100")).unwrap(),
        Backend::Cuda
    );
    assert_eq!(
        Backend::parse("emu", None).unwrap(),
        Backend::Emulator(EmuArch::Gfx942)
    );
    assert_eq!(
        Backend::parse("emu", Some("gfx1100")).unwrap(),
        Backend::Emulator(EmuArch::Gfx1100)
    );
    assert_eq!(
        "emu:sm_90".parse::<Backend>().unwrap(),
        Backend::Emulator(EmuArch::Sm90)
    );
    assert_eq!(
        Backend::parse("emulator", Some("sm80")).unwrap(),
        Backend::Emulator(EmuArch::Sm80)
    );
    let e = Backend::parse("opencl", None).unwrap_err().to_string();
    assert!(
        e.contains("opencl") && e.contains("auto, hip, cuda, emu or isa"),
        "{e}"
    );
    let e = Backend::parse("emu", Some("gfx1030"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("gfx1030") && e.contains("gfx942"), "{e}");
    assert_eq!(Backend::Emulator(EmuArch::Gfx90a).to_string(), "emu:gfx90a");
}

#[test]
fn compute_capability_selects_ptx() {
    use convgrad::runtime::arch_for_compute_capability as cc;
    assert_eq!(cc(9, 0), Ok("sm_90"));
    assert_eq!(cc(8, 0), Ok("sm_80"));
    assert_eq!(cc(8, 9), Ok("sm_80"));
    assert_eq!(cc(7, 5), Err("sm_75".to_string()));
    assert_eq!(cc(10, 0), Err("sm_100".to_string()));
    let e = RuntimeError::UnsupportedArch {
        device: "T4".into(),
        found: "sm_75".into(),
        supported: vec!["sm_80", "sm_90"],
    };
    assert_eq!(
        e.to_string(),
        "unsupported GPU architecture sm_75 (T4); supported: sm_80, sm_90"
    );
}

#[test]
fn error_messages_name_what_to_do() {
    let e = RuntimeError::NoCodeObject {
        arch: "gfx942".into(),
        built: vec!["sm_90".into()],
    };
    let s = e.to_string();
    assert!(
        s.contains("gfx942")
            && s.contains("built: sm_90")
            && s.contains("cargo xtask build-kernels --arch gfx942"),
        "{s}"
    );
    let e = RuntimeError::NoCodeObject {
        arch: "sm_80".into(),
        built: vec![],
    };
    assert!(e.to_string().contains("built: none"));
    let e = RuntimeError::Call {
        call: "cuModuleLoadData",
        message: "CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)".into(),
    };
    assert_eq!(
        e.to_string(),
        "cuModuleLoadData failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)"
    );
}

// ---------------------------------------------------------------- selection

#[test]
fn auto_picks_a_device_and_says_why() {
    let d = Device::open(Backend::Auto, 0).unwrap();
    let note = d.selection_note();
    println!(
        "auto: {} ({}, {}): {note}",
        d.name(),
        d.arch(),
        d.backend_kind()
    );
    match d.backend_kind() {
        BackendKind::Emulator => {
            assert!(note.contains("hip: ") && note.contains("cuda: "), "{note}");
            assert!(note.ends_with("using emulator gfx942"), "{note}");
            assert_eq!(d.arch(), "gfx942");
        }
        BackendKind::Cuda => assert!(note.contains("cuda: using device 0"), "{note}"),
        BackendKind::Hip => assert!(note.contains("hip: using device 0"), "{note}"),
        BackendKind::Isa => panic!("auto never picks the isa executor: {note}"),
    }
    if !cfg!(feature = "hip") {
        assert!(note.contains("hip: feature not built"), "{note}");
    }
}

#[test]
fn cuda_absent_or_present_is_clean() {
    match Device::open(Backend::Cuda, 0) {
        Ok(d) => {
            assert_eq!(d.backend_kind(), BackendKind::Cuda);
            assert!(d.arch() == "sm_90" || d.arch() == "sm_80", "{}", d.arch());
            assert!(d.compute_units() > 0 && d.memory_bytes() > 0);
            println!(
                "cuda: {} ({}), {} SMs, {} MiB",
                d.name(),
                d.arch(),
                d.compute_units(),
                d.memory_bytes() >> 20
            );
        }
        Err(RuntimeError::NoDevice(why)) => {
            println!("cuda absent, reported cleanly: {why}");
            assert!(why.contains("NVIDIA"), "{why}");
        }
        Err(e) => panic!("unexpected CUDA error: {e}"),
    }
    // An index past the last device is an error, never a panic.
    if let Err(e) = Device::open(Backend::Cuda, 1000) {
        assert!(matches!(e, RuntimeError::NoDevice(_)), "{e}");
    }
}

#[cfg(not(feature = "hip"))]
#[test]
fn hip_without_the_feature_says_so() {
    let e = Device::open(Backend::Hip, 0).unwrap_err();
    assert!(matches!(e, RuntimeError::NotBuilt(_)), "{e}");
    assert!(e.to_string().contains("--features hip"), "{e}");
}

/// With the `hip` feature on a machine without an AMD GPU (CI), opening HIP
/// must be a clean "no AMD GPU" error, and Auto must fall through.
#[cfg(feature = "hip")]
#[test]
fn hip_reports_no_amd_gpu_cleanly() {
    match Device::open(Backend::Hip, 0) {
        Ok(d) => println!(
            "hip: {} ({}), {} CUs",
            d.name(),
            d.arch(),
            d.compute_units()
        ),
        Err(e) => {
            let s = e.to_string();
            println!("hip: {s}");
            assert!(matches!(e, RuntimeError::NoDevice(_)), "{s}");
            assert!(
                s.starts_with("no AMD GPU found (hipGetDeviceCount: "),
                "{s}"
            );
            let d = Device::open(Backend::Auto, 0).unwrap();
            assert!(d.backend_kind() != BackendKind::Hip);
            assert!(
                d.selection_note().contains("hip: no AMD GPU found"),
                "{}",
                d.selection_note()
            );
        }
    }
}

// ---------------------------------------------------------------- metadata

#[test]
fn amd_metadata_is_checked_against_the_abi() {
    let md = amdgpu::test_metadata(
        "gfx942:sramecc+:xnack-",
        vec![
            amdgpu::test_kernel_metadata(
                "good",
                &[(0, 8, "global_buffer"), (8, 4, "hidden_block_count_x")],
                264,
            ),
            amdgpu::test_kernel_metadata("by_value_struct", &[(0, 200, "by_value")], 200),
            amdgpu::test_kernel_metadata(
                "two_args",
                &[(0, 8, "global_buffer"), (8, 8, "global_buffer")],
                16,
            ),
        ],
    );
    let co = amdgpu::parse(&amdgpu::build_test_elf(&md)).unwrap();
    assert_eq!(co.processor(), Some("gfx942"));
    meta::check_amd_abi(&co.kernels[0]).unwrap();
    let e = meta::check_amd_abi(&co.kernels[1]).unwrap_err().to_string();
    assert!(
        e.contains("`by_value_struct`")
            && e.contains("size 200 by_value")
            && e.contains("global_buffer"),
        "{e}"
    );
    let e = meta::check_amd_abi(&co.kernels[2]).unwrap_err().to_string();
    assert!(
        e.contains("`two_args`") && e.contains("2 argument(s)"),
        "{e}"
    );
}

#[test]
fn ptx_params_are_checked_against_the_abi() {
    let n = std::mem::size_of::<convgrad_types::params::ConvArgs>();
    let m = ptx::parse(&format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry smoke_mma(\n\t.param .align 8 .b8 smoke_mma_param_0[{n}]\n)\n.maxntid 32, 1, 1\n{{\n\tret;\n}}\n\
         .visible .entry by_value(\n\t.param .align 8 .b8 by_value_param_0[512]\n)\n{{\n\tret;\n}}\n\
         .visible .entry by_pointer(\n\t.param .u64 .ptr .align 1 by_pointer_param_0\n)\n{{\n\tret;\n}}\n",
    ))
    .unwrap();
    assert_eq!(m.target, "sm_90");
    meta::check_ptx_abi(&m.kernels[0]).unwrap();
    assert_eq!(m.kernels[0].max_threads, Some(32));
    // A block of another size, and the old pointer ABI, are refused by name.
    let e = meta::check_ptx_abi(&m.kernels[1]).unwrap_err().to_string();
    assert!(e.contains("`by_value`") && e.contains("size 512") && e.contains("ConvArgs"), "{e}");
    let e = meta::check_ptx_abi(&m.kernels[2]).unwrap_err().to_string();
    assert!(e.contains("`by_pointer`") && e.contains("size 8"), "{e}");
}

/// Every embedded code object (whatever `cargo xtask build-kernels` produced
/// before this build) targets its architecture, has the instance table's
/// kernels of its family, and every kernel passes the argument-ABI check that
/// module loading applies on a GPU.
#[test]
#[ignore = "needs embedded code objects: `cargo xtask build-kernels`, then run with --ignored"]
fn embedded_code_objects_follow_the_abi() {
    let built = convgrad::code_objects::built_archs();
    assert!(!built.is_empty(), "no code objects embedded: run `cargo xtask build-kernels` before building this test");
    for &arch in built {
        let image = convgrad::code_objects::code_object(arch).unwrap();
        let family = Family::of_arch(arch).unwrap();
        let kernels = if family.runs(Family::Nvidia) {
            let m = ptx::parse(std::str::from_utf8(image).unwrap()).unwrap();
            // Hopper is built as sm_90a (wgmma).
            let target = if family == Family::Hopper { format!("{arch}a") } else { arch.to_string() };
            assert_eq!(m.target, target, "PTX .target");
            for k in &m.kernels {
                meta::check_ptx_abi(k).unwrap();
            }
            m.kernels
        } else {
            let co = amdgpu::parse(image).unwrap();
            assert_eq!(co.processor(), Some(arch), "amdhsa.target {}", co.target);
            for k in &co.kernels {
                meta::check_amd_abi(k).unwrap();
            }
            co.kernels
        };
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        for inst in convgrad_types::instance::INSTANCES
            .iter()
            .filter(|i| i.on(family))
        {
            assert!(
                names.contains(&inst.name),
                "{arch}: {} missing from {names:?}",
                inst.name
            );
            let k = kernels.iter().find(|k| k.name == inst.name).unwrap();
            if let Some(max) = k.max_threads {
                assert!(
                    inst.threads(family) as u64 <= max,
                    "{arch} {}: launched with {} threads, allows {max}",
                    inst.name,
                    inst.threads(family)
                );
            }
        }
        println!("{arch}: {} kernels, ABI ok", kernels.len());
    }
}

// ---------------------------------------------------------------- emulator: modules, launch checks

/// gfx950 has gfx942's kernels and its own double-k MFMA ones; gfx942 lacks those.
#[test]
fn gfx950_module_adds_double_k_kernels() {
    let names = |a| emu(a).load_module().unwrap().kernel_names();
    let (cdna3, cdna4) = (names(EmuArch::Gfx942), names(EmuArch::Gfx950));
    assert!(cdna3.iter().all(|n| cdna4.contains(n)), "{cdna3:?} {cdna4:?}");
    for k in ["bwdw_f16_64x64x32_mfma16k32", "bwdd_bf16_128x128x32_mfma32k16"] {
        assert!(cdna4.iter().any(|n| n == k) && !cdna3.iter().any(|n| n == k), "{k}");
    }
}

#[test]
fn emulator_module_lists_kernels() {
    for (arch, family) in [
        (EmuArch::Gfx942, Family::Cdna),
        (EmuArch::Gfx950, Family::Cdna4),
        (EmuArch::Gfx1100, Family::Rdna3),
        (EmuArch::Gfx1201, Family::Rdna4),
        (EmuArch::Sm90, Family::Hopper),
    ] {
        let d = emu(arch);
        assert_eq!(d.family(), family);
        assert_eq!(d.wave_size(), family.wave());
        let m = d.load_module().unwrap();
        let names = m.kernel_names();
        let s = smoke::spec(family);
        assert!(names.iter().any(|n| n == s.kernel), "{names:?}");
        m.kernel(s.kernel).unwrap();
        let e = m.kernel("no_such_kernel").unwrap_err().to_string();
        assert!(
            e.contains("`no_such_kernel`") && e.contains(s.kernel),
            "{e}"
        );
        // Another family's kernel is not there.
        let other = if family.runs(Family::Nvidia) {
            "smoke_mfma"
        } else {
            "smoke_mma"
        };
        assert!(m.kernel(other).is_err());
    }
}

#[test]
fn launch_shapes_are_checked_before_running() {
    let d = emu(EmuArch::Gfx942);
    let (s, k) = smoke_kernel(&d);
    let args = convgrad_types::params::ConvArgs::default();
    // SAFETY (every launch of this test): each is refused by a shape or device
    // check before any kernel runs, so the null addresses are never used.
    let e = unsafe { d.launch(&k, [0, 1, 1], s.block, s.lds_bytes, &args) }
        .unwrap_err()
        .to_string();
    assert!(e.contains("empty grid"), "{e}");
    let e = unsafe { d.launch(&k, [1, 1, 1], 48, s.lds_bytes, &args) }
        .unwrap_err()
        .to_string();
    assert!(e.contains("multiple of the wave size 64"), "{e}");
    let e = unsafe { d.launch(&k, [1, 1, 1], 64, 65 * 1024, &args) }
        .unwrap_err()
        .to_string();
    assert!(e.contains("exceed the device's 65536 bytes"), "{e}");
    // A kernel of one device cannot be launched on another.
    let other = emu(EmuArch::Gfx942);
    let e = unsafe { other.launch(&k, s.grid, s.block, s.lds_bytes, &args) }.unwrap_err();
    assert!(matches!(e, RuntimeError::WrongDevice("kernel")), "{e}");
}

#[test]
fn emulator_load_module_image_is_refused() {
    let e = emu(EmuArch::Sm90)
        .load_module_image(b".version 8.0")
        .unwrap_err()
        .to_string();
    assert!(e.contains("load_module()"), "{e}");
}

// ---------------------------------------------------------------- emulator: memory (needs the emulator's bodies)

#[test]
fn emulator_buffers_round_trip() {
    let d = emu(EmuArch::Gfx942);
    let data: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
    let b = d.upload(&data).unwrap();
    assert_eq!(b.len(), 1000);
    assert_eq!(b.bytes(), 4000);
    assert_ne!(b.device_addr(), 0);
    assert_eq!(b.download().unwrap(), data);
    let e = b.upload(&data[..10]).unwrap_err().to_string();
    assert!(
        e.contains("upload")
            && e.contains("10 elements (40 bytes)")
            && e.contains("1000 elements (4000 bytes)"),
        "{e}"
    );
    let mut small = vec![0f32; 3];
    assert!(matches!(
        b.download_into(&mut small),
        Err(RuntimeError::SizeMismatch {
            what: "download",
            ..
        })
    ));
    b.fill_nan().unwrap();
    assert!(b.download().unwrap().iter().all(|v| v.is_nan()));
    b.fill_zero().unwrap();
    assert!(b.download().unwrap().iter().all(|&v| v == 0.0));
    let h = d.alloc::<half::f16>(7).unwrap();
    h.fill_nan().unwrap();
    assert!(h.download().unwrap().iter().all(|v| v.is_nan()));
    let bf = d.alloc::<half::bf16>(7).unwrap();
    bf.fill_nan().unwrap();
    assert!(bf.download().unwrap().iter().all(|v| v.is_nan()));
    b.require_len("x", 1000).unwrap();
    let e = b.require_len("x", 1001).unwrap_err().to_string();
    assert_eq!(
        e,
        "buffer for x too small: the problem needs 1001 elements (4004 bytes), the buffer holds 1000 elements (4000 bytes)"
    );
    let empty = d.alloc::<u32>(0).unwrap();
    assert!(empty.is_empty() && empty.download().unwrap().is_empty());
    assert_eq!(empty.device_addr(), 0);
}

// ---------------------------------------------------------------- smoke kernel

fn check_smoke(d: &Device) {
    let r = smoke::run(d, 7).unwrap_or_else(|e| panic!("{} {}: {e}", d.backend_kind(), d.arch()));
    println!(
        "{} {}: {} {}x{}x{} block {} lds {}: max |err| {:.3e}, {} NaN, {:.3} ms",
        d.backend_kind(),
        d.arch(),
        r.spec.kernel,
        r.spec.m,
        r.spec.n,
        r.spec.k,
        r.spec.block,
        r.spec.lds_bytes,
        r.max_abs_err,
        r.nan_count,
        r.ms
    );
    assert_eq!(
        r.nan_count, 0,
        "{} elements of D left unwritten",
        r.nan_count
    );
    assert!(
        r.passed(),
        "max |err| {} > {}",
        r.max_abs_err,
        smoke::SmokeReport::TOLERANCE
    );
    assert!(r.ms >= 0.0);
}

fn smoke_emulator(arch: EmuArch) {
    check_smoke(&emu(arch));
}

common::per_arch!(smoke_emulator;
    smoke_emulator_gfx942 => Gfx942,
    smoke_emulator_gfx90a => Gfx90a,
    smoke_emulator_gfx950 => Gfx950,
    smoke_emulator_gfx1100 => Gfx1100,
    smoke_emulator_gfx1200 => Gfx1200,
    smoke_emulator_gfx1201 => Gfx1201,
    smoke_emulator_sm_90 => Sm90,
    smoke_emulator_sm_80 => Sm80,
);

#[test]
#[ignore = "needs an NVIDIA GPU: run with --ignored"]
fn smoke_cuda() {
    check_smoke(&gpu(Backend::Cuda));
}

#[cfg(feature = "hip")]
#[test]
#[ignore = "needs an AMD GPU: run with --ignored"]
fn smoke_hip() {
    check_smoke(&gpu(Backend::Hip));
}

/// Repeated launches with events, and a device shared across threads (emulator).
#[test]
fn events_time_launches_and_devices_are_shared() {
    events_and_sharing(&emu(EmuArch::Gfx942));
}

/// [`events_time_launches_and_devices_are_shared`] on the CUDA device.
#[test]
#[ignore = "needs an NVIDIA GPU: run with --ignored"]
fn events_time_launches_and_devices_are_shared_cuda() {
    events_and_sharing(&gpu(Backend::Cuda));
}

fn events_and_sharing(d: &Device) {
    let (s, k) = smoke_kernel(d);
    let a = d.alloc::<half::f16>(s.m * s.k).unwrap();
    let b = d.alloc::<half::f16>(s.k * s.n).unwrap();
    a.fill_zero().unwrap();
    b.fill_zero().unwrap();
    let out = d.alloc::<f32>(s.m * s.n).unwrap();
    let args = smoke::args(&s, &a, &b, &out);
    // SAFETY (both launches below): `args` points the smoke kernel at `a`, `b`
    // and `out`, allocated above with the m x k, k x n and m x n elements of
    // `s` (the spec `args` was built from) and alive until this function
    // returns, after the launches are waited for; only `out` is written.
    let ((), ms) = d
        .time(|| {
            for _ in 0..10 {
                unsafe { d.launch(&k, s.grid, s.block, s.lds_bytes, &args)? };
            }
            Ok(())
        })
        .unwrap();
    assert!(ms >= 0.0);
    std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| {
                unsafe { d.launch(&k, s.grid, s.block, s.lds_bytes, &args) }.unwrap();
                d.synchronize().unwrap();
            });
        }
    });
    assert!(out.download().unwrap().iter().all(|&v| v == 0.0));
    println!(
        "{} {}: 10 launches in {ms:.3} ms",
        d.backend_kind(),
        d.arch()
    );
}

/// Dynamic LDS above CUDA's 48 KiB default (the runtime opts the kernel in):
/// the smoke kernel, launched with 100 KiB, still computes the product (emulator).
#[test]
fn large_lds_launch() {
    large_lds(&emu(EmuArch::Sm90));
}

/// [`large_lds_launch`] on the CUDA device.
#[test]
#[ignore = "needs an NVIDIA GPU: run with --ignored"]
fn large_lds_launch_cuda() {
    large_lds(&gpu(Backend::Cuda));
}

fn large_lds(d: &Device) {
    let (s, k) = smoke_kernel(d);
    let ha: Vec<half::f16> = (0..s.m * s.k)
        .map(|i| half::f16::from_f32((i % 7) as f32 - 3.0))
        .collect();
    let hb: Vec<half::f16> = (0..s.k * s.n)
        .map(|i| half::f16::from_f32((i % 5) as f32 - 2.0))
        .collect();
    let (a, b) = (d.upload(&ha).unwrap(), d.upload(&hb).unwrap());
    let out = d.alloc::<f32>(s.m * s.n).unwrap();
    out.fill_nan().unwrap();
    // SAFETY: the smoke kernel reads `a` (m x k), `b` (k x n) and writes `out`
    // (m x n), the lengths of `s` they were allocated with; all three outlive
    // the `synchronize` below. The larger LDS is the kernel's own scratch.
    unsafe { d.launch(&k, s.grid, s.block, 100 * 1024, &smoke::args(&s, &a, &b, &out)) }.unwrap();
    d.synchronize().unwrap();
    assert_eq!(
        out.download().unwrap(),
        smoke::cpu_product(&ha, &hb, s.m, s.n, s.k),
        "{}",
        d.arch()
    );
    println!(
        "{} {}: launch with 100 KiB LDS ok",
        d.backend_kind(),
        d.arch()
    );
}

/// CUDA only: what the driver says reaches the error, and ABI mismatches are
/// caught before the driver sees the module.
#[test]
#[ignore = "needs an NVIDIA GPU: run with --ignored"]
fn cuda_module_errors_are_explained() {
    let d = gpu(Backend::Cuda);
    let n = std::mem::size_of::<convgrad_types::params::ConvArgs>();
    let entry = |name: &str, params: &str, body: &str| {
        format!(".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry {name}(\n{params}\n)\n{{\n{body}\tret;\n}}\n")
    };
    let by_value = |name: &str| format!("\t.param .align 8 .b8 {name}_param_0[{n}]");
    let bad = entry("bad", &by_value("bad"), "\tnot_an_instruction %r1;\n");
    let e = d.load_module_image(bad.as_bytes()).unwrap_err();
    println!("bad PTX: {e}");
    assert!(
        matches!(
            &e,
            RuntimeError::Call {
                call: "cuModuleLoadData",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("CUDA_ERROR_"), "{e}");
    for (name, params) in [("two", "\t.param .u64 a,\n\t.param .u32 b"), ("pointer", "\t.param .u64 pointer_param_0")] {
        let e = d.load_module_image(entry(name, params, "").as_bytes()).unwrap_err();
        assert!(
            matches!(&e, RuntimeError::ArgLayout { kernel, .. } if kernel == name),
            "{e}"
        );
    }
    let ok = entry("one", &by_value("one"), "");
    let m = d.load_module_image(ok.as_bytes()).unwrap();
    let k = m.kernel("one").unwrap();
    // SAFETY: kernel `one` is an empty body (`ret`): it addresses no memory.
    unsafe { d.launch(&k, [2, 1, 1], 32, 0, &convgrad_types::params::ConvArgs::default()) }.unwrap();
    d.synchronize().unwrap();
    // An argument block of another size is refused before the driver sees it.
    // SAFETY: refused (argument block size) before the driver sees it.
    let e = unsafe { d.launch(&k, [2, 1, 1], 32, 0, &0u64) }.unwrap_err().to_string();
    assert!(e.contains("`one`") && e.contains("ConvArgs"), "{e}");
    let e = m.kernel("two").unwrap_err().to_string();
    assert!(e.contains("`two`") && e.contains("one"), "{e}");
}

// ---------------------------------------------------------------- emulator: workgroup order

/// The emulator runs workgroups in a different order on each launch, so
/// atomic f32 split-K differs bitwise from run to run (the determinism test
/// applied to it would fail: it can see a non-deterministic reduction),
/// while deterministic split-K stays bitwise identical.
#[test]
fn emulator_atomic_split_k_differs_between_runs() {
    use convgrad::check::Init;
    use convgrad::ops::bwd_weight::{BwdWeightConfig, SplitK};
    use convgrad::types::TypeConfig;
    use convgrad::verify::bwd_weight::{Case, run};
    let (dev, module) = common::device(EmuArch::Gfx942);
    let p = common::prob(&[2, 2, 4, 24, 12, 3, 3, 10, 10, 1, 1, 1, 1, 1, 1, 1, 1]);
    let outputs = |deterministic: bool| -> Vec<Vec<u8>> {
        let config = BwdWeightConfig { types: TypeConfig::F32, split_k: SplitK::Fixed(5), deterministic, ..Default::default() };
        let case = Case { problem: p, config, seed: 9, init: Init::Float, timed_runs: 0, dump: false };
        (0..4)
            .map(|_| {
                let o = run(&dev, &module, &case).unwrap();
                assert!(o.passed() && o.k_batch == 5, "det={deterministic}: {}", o.report.summary());
                o.output_bytes
            })
            .collect()
    };
    let atomic = outputs(false);
    assert!(
        atomic.windows(2).any(|w| w[0] != w[1]),
        "atomic split-K was bitwise identical over 4 runs: the emulator does not reorder workgroups"
    );
    let det = outputs(true);
    assert!(det.windows(2).all(|w| w[0] == w[1]), "deterministic split-K differs between runs");
}
