//! # `cargo xtask build-kernels`: the kernel build pipeline
//!
//! ```text
//! cargo xtask build-kernels [--arch gfx90a,gfx942,gfx950,gfx1100,gfx1200,gfx1201,sm_80,sm_90] [--release]
//! ```
//!
//! For each architecture (default: all of them):
//!
//! 1. **rustc** — `cargo rustc -p convgrad-device --lib --crate-type cdylib
//!    --target <amdgcn-amd-amdhsa|nvptx64-nvidia-cuda> -Zbuild-std=core --profile kernels`
//!    with `RUSTFLAGS=-Ctarget-cpu=<arch> --cfg convgrad_family="<cdna|rdna3|rdna4|nvidia>"`
//!    and, for the device crate only, `--emit=llvm-bc -Clinker=<stub>`. Profile
//!    `kernels` is fat LTO + `panic=abort`, so `deps/convgrad_device.bc` is the
//!    whole program after rustc's LTO and optimisation, kernels exported, all else
//!    internal. The stub "linker" (`target/kernels-build/bin/convgrad-link-stub`)
//!    only records rustc's link line (which rlibs it would link) and writes an
//!    empty file: nvptx has no `llvm-bitcode-linker` here and the AMD link is
//!    redone below. Cargo target dir: `target/kernels-build/<arch>/cargo`
//!    (per arch, so build-std caches stay warm).
//! 2. **llvm-link** the module with the hand-written IR shim
//!    (`device/shim/amdgpu.ll` or `nvptx.ll`: barrier with workgroup fences, float
//!    atomics — whatever Rust cannot express; it takes the module's datalayout and
//!    triple). Functions still undefined are looked up in the
//!    bitcode members of the rlibs rustc would link (`compiler_builtins`,
//!    `--only-needed`); any left is an error naming them.
//! 3. **Launch bounds** — every kernel (`amdgpu_kernel` / `ptx_kernel` definition)
//!    found in `convgrad_types::instance::INSTANCES` gets, in the IR text,
//!    `"amdgpu-flat-work-group-size"="1,<threads>"` and
//!    `"uniform-work-group-size"="true"` (AMD; the host launches whole workgroups),
//!    or `"nvvm.maxntid"="<threads>"` (NVIDIA, becomes `.maxntid`), with
//!    `<threads> = Instance::threads(family)`. Without it LLVM assumes 1024
//!    threads and caps a gfx9 kernel at 128 VGPRs. Kernels not in INSTANCES are
//!    left alone and reported; INSTANCES for the family missing from the module
//!    are reported too (`cargo xtask inspect` fails on them).
//!    NVIDIA kernels also get their `ConvArgs` block by value
//!    (`ir::args_by_value`): in the parameter space, read as constant-bank
//!    operands instead of global loads repeated after every store and barrier.
//! 4. **opt + llc** — the linked, annotated module is optimised again (this inlines
//!    the shim, and the AMDGPU IR passes only now see the launch bounds: a
//!    gfx942 128x128 tile went from 236 to 167 VGPRs), then compiled for
//!    `-mcpu=<arch>`. Default: `opt -passes=default<O2>`, `llc -O2`.
//!    `--release`: `default<O3>` and `llc -O3` (for benchmarks; resources were
//!    identical on the first kernels). rustc's own part is the `kernels` profile
//!    (opt-level 3, fat LTO) either way: GPU code is never built unoptimised, it
//!    would live in scratch memory.
//! 5. **Link** — AMD: `rust-lld -flavor gnu -shared --no-undefined` gives
//!    `target/kernels/<arch>/convgrad.hsaco` (HSA code object v5/v6 ELF).
//!    NVIDIA: llc's output is `target/kernels/<arch>/convgrad.ptx` (must contain no
//!    `.extern .func`; ptxas runs at load time or in `inspect` where present).
//! 6. **Read back** — AMD: the `NT_AMDGPU_METADATA` msgpack note (VGPR/AGPR/SGPR,
//!    scratch, spills, kernarg layout, max flat workgroup size) and the computed
//!    occupancy; NVIDIA: `ptxas -v` when `ptxas` is on `PATH`, else the PTX `.reg`
//!    declarations, `.local` depots, `.maxntid` and `.param` list. Written to
//!    `target/kernels/<arch>/kernels.json`; `target/kernels/manifest.json` merges
//!    every arch present under `target/kernels`, plus the `ConvArgs` ABI signature.
//!
//! Incremental: cargo skips rustc when nothing changed; steps 2–5 are skipped when
//! the hash of their inputs (module bitcode, shim, launch bounds, opt mode, tool
//! location, pipeline version) matches `target/kernels-build/<arch>/stamp`. Files are
//! only rewritten when their bytes change, so the host crate (which embeds
//! `target/kernels`, see `host/build.rs`) does not rebuild after a no-op run.

pub mod amdgpu;
pub mod ir;
pub mod manifest;
pub mod nvptx;
mod wgmma_shim;

use crate::util::{self, Fnv64, Toolchain};
use anyhow::{Context, Result, bail};
use convgrad_types::instance::{Family, INSTANCES};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Bump when the pipeline's steps 2–5 change in a way that alters their output.
const PIPELINE_VERSION: &str = "convgrad-pipeline-5";

/// GPU vendor of an architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    /// AMD: HSA code objects.
    Amd,
    /// NVIDIA: PTX.
    Nvidia,
}

/// A build architecture.
#[derive(Clone, Copy, Debug)]
pub struct Arch {
    /// `gfx90a`, `gfx942`, `gfx950`, `gfx1100`, `gfx1200`, `gfx1201`, `sm_80`, `sm_90`.
    pub name: &'static str,
    /// Vendor.
    pub vendor: Vendor,
}

/// Every architecture `build-kernels` knows, in build order.
pub const ARCHS: [Arch; 8] = [
    Arch {
        name: "gfx90a",
        vendor: Vendor::Amd,
    },
    Arch {
        name: "gfx942",
        vendor: Vendor::Amd,
    },
    Arch {
        name: "gfx950",
        vendor: Vendor::Amd,
    },
    Arch {
        name: "gfx1100",
        vendor: Vendor::Amd,
    },
    Arch {
        name: "gfx1200",
        vendor: Vendor::Amd,
    },
    Arch {
        name: "gfx1201",
        vendor: Vendor::Amd,
    },
    Arch {
        name: "sm_80",
        vendor: Vendor::Nvidia,
    },
    Arch {
        name: "sm_90",
        vendor: Vendor::Nvidia,
    },
];

impl Arch {
    /// Looks an architecture up by name.
    pub fn by_name(name: &str) -> Option<Arch> {
        ARCHS.iter().copied().find(|a| a.name == name)
    }
    /// Its family (always known for [`ARCHS`]).
    pub fn family(&self) -> Family {
        Family::of_arch(self.name).expect("every arch in ARCHS has a family")
    }
    /// LLVM CPU name: the arch, except that Hopper builds `sm_90a`, whose
    /// `wgmma` instructions the warpgroup kernels need.
    pub fn cpu(&self) -> &'static str {
        match self.name {
            "sm_90" => "sm_90a",
            n => n,
        }
    }
    /// Rust target triple.
    pub fn triple(&self) -> &'static str {
        match self.vendor {
            Vendor::Amd => "amdgcn-amd-amdhsa",
            Vendor::Nvidia => "nvptx64-nvidia-cuda",
        }
    }
    /// File name of the code object under `target/kernels/<arch>/`.
    pub fn object_name(&self) -> &'static str {
        match self.vendor {
            Vendor::Amd => "convgrad.hsaco",
            Vendor::Nvidia => "convgrad.ptx",
        }
    }
    /// Calling convention of kernels in LLVM IR.
    fn kernel_cc(&self) -> &'static str {
        match self.vendor {
            Vendor::Amd => "amdgpu_kernel",
            Vendor::Nvidia => "ptx_kernel",
        }
    }
    /// The IR shim linked into every object.
    fn shim_path(&self) -> PathBuf {
        let f = match self.vendor {
            Vendor::Amd => "amdgpu.ll",
            Vendor::Nvidia => "nvptx.ll",
        };
        util::workspace_root().join("device/shim").join(f)
    }
    /// `target/kernels/<arch>/<object>`.
    pub fn object_path(&self) -> PathBuf {
        util::kernels_dir().join(self.name).join(self.object_name())
    }
}

/// Parses `--arch` (comma/space separated names, or `all`); `None` is all five.
pub fn parse_archs(list: Option<&str>) -> Result<Vec<Arch>> {
    let Some(list) = list else {
        return Ok(ARCHS.to_vec());
    };
    let mut out: Vec<Arch> = Vec::new();
    for name in list
        .split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if name == "all" {
            return Ok(ARCHS.to_vec());
        }
        let arch = Arch::by_name(name).with_context(|| {
            let known: Vec<&str> = ARCHS.iter().map(|a| a.name).collect();
            format!("unknown arch `{name}`; known: {}", known.join(", "))
        })?;
        if !out.iter().any(|a| a.name == arch.name) {
            out.push(arch);
        }
    }
    if out.is_empty() {
        bail!("--arch names no architecture");
    }
    Ok(out)
}

/// Options of `build-kernels`.
pub struct BuildOpts {
    /// Architectures to build.
    pub archs: Vec<Arch>,
    /// Re-run the full `opt -O3` pipeline after the shim is linked.
    pub release: bool,
}

/// `cargo xtask build-kernels`.
///
/// Architectures build in parallel, [`jobs`] at a time: each one's rustc
/// (fat LTO, one codegen unit), opt and llc run on one core, so on CI's two
/// cores two at a time halve the wall time. Each has its own cargo target
/// dir and work dir, so the outputs do not depend on the order.
pub fn run(opts: &BuildOpts) -> Result<()> {
    let t0 = Instant::now();
    let tc = Toolchain::locate()?;
    tc.require_rust_src()?;
    let stub = ensure_link_stub()?;
    let ptxas = nvptx::find_ptxas();
    let jobs = jobs(opts.archs.len())?;
    eprintln!("building {} architectures, {jobs} at a time", opts.archs.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<Result<(ArchReport, f64)>>> = Vec::new();
    results.resize_with(opts.archs.len(), || None);
    let results = std::sync::Mutex::new(results);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(arch) = opts.archs.get(i) else { break };
                    let t = Instant::now();
                    let r = build_arch(&tc, &stub, *arch, opts.release, ptxas.as_deref())
                        .with_context(|| format!("building kernels for {}", arch.name))
                        .map(|rep| (rep, t.elapsed().as_secs_f64()));
                    if let Ok((rep, secs)) = &r {
                        print_arch(*arch, rep, *secs);
                    }
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
                }
            });
        }
    });
    let mut problems = Vec::new();
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    for (arch, r) in opts.archs.iter().zip(results) {
        let (report, _) = r.context("an architecture was not built")??;
        if !report.missing.is_empty() {
            problems.push(format!(
                "{}: kernels of INSTANCES for family {} missing from the object: {}",
                arch.name,
                arch.family().cfg(),
                report.missing.join(", ")
            ));
        }
    }
    let manifest = manifest::assemble()?;
    let path = util::kernels_dir().join("manifest.json");
    util::write_if_changed(&path, manifest.to_json()?.as_bytes())?;
    for p in &problems {
        eprintln!("warning: {p}");
    }
    eprintln!(
        "manifest: {} ({} kernels, {} archs) in {:.1}s",
        path.display(),
        manifest.kernels.len(),
        manifest.archs.len(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

/// How many architectures build at once: `CONVGRAD_KERNEL_JOBS`, else the
/// available cores (at most one per architecture).
fn jobs(archs: usize) -> Result<usize> {
    let n = match std::env::var("CONVGRAD_KERNEL_JOBS") {
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n >= 1 => n,
            _ => bail!("CONVGRAD_KERNEL_JOBS={v:?}: allowed a whole number of at least 1"),
        },
        Err(_) => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    Ok(n.min(archs).max(1))
}

/// One line per architecture when it is done (and its unlisted kernels).
fn print_arch(arch: Arch, report: &ArchReport, secs: f64) {
    if !report.unlisted.is_empty() {
        eprintln!(
            "warning: {}: kernels not in INSTANCES (no launch bounds set, not in the manifest): {}",
            arch.name,
            report.unlisted.join(", ")
        );
    }
    let object = arch.object_path();
    eprintln!(
        "{:>8} {} -> {} ({} kernels{}, {secs:.1}s)",
        if report.rebuilt { "built" } else { "fresh" },
        arch.name,
        object.strip_prefix(util::workspace_root()).unwrap_or(&object).display(),
        report.kernels.len(),
        if report.rebuilt { "" } else { ", llvm steps skipped" },
    );
}

/// What one arch's build produced.
pub struct ArchReport {
    /// Whether steps 2–5 ran (false: skipped, inputs unchanged).
    pub rebuilt: bool,
    /// Kernel entries, in INSTANCES order.
    pub kernels: Vec<manifest::KernelEntry>,
    /// INSTANCES for the family that the object lacks.
    pub missing: Vec<String>,
    /// Kernels in the object that INSTANCES does not list.
    pub unlisted: Vec<String>,
}

/// The stub "linker" rustc is pointed at: records its arguments to `<out>.linkargs`
/// (expanding `@file` response files) and leaves an empty `<out>`.
fn ensure_link_stub() -> Result<PathBuf> {
    const STUB: &str = r#"#!/bin/sh
# convgrad kernel pipeline: rustc's link step is redone by `cargo xtask build-kernels`.
# Records the link line (one argument per line) next to the output and writes an empty output.
out=""; prev=""
for a in "$@"; do
  case "$a" in @*) args=$(cat "${a#@}") ;; esac
  [ "$prev" = "-o" ] && out="$a"
  prev="$a"
done
[ -n "$out" ] || { echo "convgrad-link-stub: no -o argument" >&2; exit 1; }
{ for a in "$@"; do case "$a" in @*) cat "${a#@}"; echo ;; *) printf '%s\n' "$a" ;; esac; done; } > "$out.linkargs"
: > "$out"
"#;
    let path = util::kernels_build_dir().join("bin/convgrad-link-stub");
    util::write_if_changed(&path, STUB.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mut perm = std::fs::metadata(&path)?.permissions();
        if perm.mode() & 0o111 != 0o111 {
            perm.set_mode(0o755);
            std::fs::set_permissions(&path, perm)
                .with_context(|| format!("chmod {}", path.display()))?;
        }
    }
    Ok(path)
}

/// LLVM options that let the loops over a wave's fragments unroll fully
/// (NVIDIA: a 64x64 wave tile is 32 atoms a step; rolled, the accumulators
/// would be indexed at run time and live in local memory).
fn unroll_args(arch: Arch) -> &'static [&'static str] {
    match arch.vendor {
        Vendor::Nvidia => &["-unroll-threshold=2000"],
        Vendor::Amd => &[],
    }
}

/// Step 1: cargo rustc. Returns (module bitcode path, rlibs on rustc's link line).
fn rustc_step(arch: Arch, stub: &Path) -> Result<(PathBuf, Vec<PathBuf>)> {
    let target_dir = util::kernels_build_dir().join(arch.name).join("cargo");
    let family = arch.family().cfg();
    let mut rustflags = vec![
        format!("-Ctarget-cpu={}", arch.cpu()),
        "--cfg".into(),
        format!("convgrad_family=\"{family}\""),
    ];
    if arch.family() == Family::Hopper {
        rustflags.extend(["--cfg".into(), "convgrad_wgmma".into()]);
    }
    if arch.family() == Family::Cdna4 {
        rustflags.extend(["--cfg".into(), "convgrad_cdna4".into()]);
    }
    rustflags.extend(unroll_args(arch).iter().map(|a| format!("-Cllvm-args={a}")));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let args: Vec<String> = [
        "rustc",
        "-p",
        "convgrad-device",
        "--lib",
        "--crate-type",
        "cdylib",
        "--target",
        arch.triple(),
        "-Zbuild-std=core",
        "--profile",
        "kernels",
        "--",
        "--emit=llvm-bc",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("-Clinker={}", stub.display())])
    .collect();
    eprintln!("   rustc {} (RUSTFLAGS={})", arch.name, rustflags.join(" "));
    let status = duct::cmd(&cargo, &args)
        .dir(util::workspace_root())
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("CARGO_ENCODED_RUSTFLAGS", rustflags.join("\x1f"))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .unchecked()
        .run()
        .with_context(|| format!("could not run `{}`", cargo.to_string_lossy()))?;
    if !status.status.success() {
        bail!(
            "`cargo {}` failed for {} (see the errors above). If it says `-Zbuild-std` needs `rust-src`, \
             run `rustup component add rust-src`.",
            args.join(" "),
            arch.name
        );
    }
    let deps = target_dir.join(arch.triple()).join("kernels/deps");
    let bc = deps.join("convgrad_device.bc");
    if !bc.exists() {
        bail!(
            "rustc produced no bitcode at {} (did `--emit=llvm-bc` get lost?)",
            bc.display()
        );
    }
    let linkargs = deps.join(format!(
        "convgrad_device.{}.linkargs",
        match arch.vendor {
            Vendor::Amd => "elf",
            Vendor::Nvidia => "ptx",
        }
    ));
    let rlibs = std::fs::read_to_string(&linkargs)
        .map(|s| {
            s.lines()
                .filter(|l| l.ends_with(".rlib"))
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default();
    Ok((bc, rlibs))
}

fn build_arch(
    tc: &Toolchain,
    stub: &Path,
    arch: Arch,
    release: bool,
    ptxas: Option<&Path>,
) -> Result<ArchReport> {
    let (bc_path, rlibs) = rustc_step(arch, stub)?;
    let work = util::kernels_build_dir().join(arch.name);
    std::fs::create_dir_all(&work)?;
    let family = arch.family();
    let bc = util::read(&bc_path)?;
    let mut shim = util::read(&arch.shim_path())?;
    if family == Family::Hopper {
        shim.extend_from_slice(wgmma_shim::wgmma_shim().as_bytes());
    }

    // Launch bounds for every instance of the family (whether or not it is present).
    let bounds: BTreeMap<&str, (u32, u32)> = INSTANCES
        .iter()
        .filter(|i| i.on(family))
        .map(|i| (i.name, (i.threads(family), i.min_blocks())))
        .collect();
    // Re-optimising after the launch bounds are set matters: the AMDGPU IR passes in
    // opt's pipeline read `amdgpu-flat-work-group-size` (gfx942 bwdw 128x128: 236
    // unified VGPRs with `always-inline` only, 167 after `default<O2>`).
    let (opt_passes, llc_opt) = if release {
        ("default<O3>", "-O3")
    } else {
        ("default<O2>", "-O2")
    };

    let mut h = Fnv64::default();
    h.field(PIPELINE_VERSION.as_bytes())
        .field(tc.bin.to_string_lossy().as_bytes())
        .field(arch.name.as_bytes())
        .field(opt_passes.as_bytes())
        .field(llc_opt.as_bytes())
        .field(&bc)
        .field(&shim);
    for (k, (t, b)) in &bounds {
        h.field(k.as_bytes()).field(&t.to_le_bytes()).field(&b.to_le_bytes());
    }
    for r in &rlibs {
        h.field(r.to_string_lossy().as_bytes());
    }
    let stamp = h.hex();
    let stamp_path = work.join("stamp");
    let out = arch.object_path();
    let fresh =
        out.exists() && std::fs::read_to_string(&stamp_path).is_ok_and(|s| s.trim() == stamp);

    if !fresh {
        let _ = std::fs::remove_file(&stamp_path);
        llvm_steps(
            tc,
            arch,
            &work,
            &bc_path,
            &shim,
            &rlibs,
            &bounds,
            (opt_passes, llc_opt),
        )?;
        std::fs::write(&stamp_path, &stamp)?;
    }

    // Step 6: read back (cheap; always, so the manifest reflects the object on disk).
    let object = util::read(&out)?;
    let report = match arch.vendor {
        Vendor::Amd => amdgpu::read_back(arch, &object),
        Vendor::Nvidia => nvptx::read_back(arch, &object, &out, ptxas),
    }
    .with_context(|| format!("reading back resources from {}", out.display()))?;
    let arch_file = manifest::ArchFile {
        arch: manifest::ArchEntry {
            family: family.cfg().into(),
            target: arch.triple().into(),
            code_object: format!("{}/{}", arch.name, arch.object_name()),
            bytes: object.len() as u64,
            fnv64: util::hash_hex(&object),
            opt: if release {
                "release".into()
            } else {
                "default".into()
            },
            opt_passes: format!("opt -passes={opt_passes}; llc {llc_opt}"),
            missing: report.missing.clone(),
            unlisted: report.unlisted.clone(),
        },
        kernels: report.kernels.clone(),
    };
    util::write_if_changed(
        &util::kernels_dir().join(arch.name).join("kernels.json"),
        arch_file.to_json()?.as_bytes(),
    )?;
    Ok(ArchReport {
        rebuilt: !fresh,
        ..report
    })
}

/// Steps 2–5.
#[allow(clippy::too_many_arguments)]
fn llvm_steps(
    tc: &Toolchain,
    arch: Arch,
    work: &Path,
    bc: &Path,
    shim: &[u8],
    rlibs: &[PathBuf],
    bounds: &BTreeMap<&str, (u32, u32)>,
    (opt_passes, llc_opt): (&str, &str),
) -> Result<()> {
    let p = |f: &str| work.join(f);
    // The shim has no datalayout/triple of its own: llvm-link takes the module's
    // (its warning about the difference goes to the captured stderr).
    std::fs::write(p("shim.ll"), shim)?;

    // 2. link module + shim (text output: step 3 edits it).
    tc.run(
        "llvm-link",
        [
            bc.as_os_str(),
            p("shim.ll").as_os_str(),
            "-S".as_ref(),
            "-o".as_ref(),
            p("linked.ll").as_os_str(),
        ],
    )
    .context("llvm-link of the module and the IR shim")?;
    let mut linked = std::fs::read_to_string(p("linked.ll"))?;
    let mut undefined = ir::undefined_functions(&linked);
    if !undefined.is_empty() {
        let members = ir::bitcode_members(tc, rlibs, &p("rlib-members"))?;
        if !members.is_empty() {
            let mut args: Vec<std::ffi::OsString> =
                vec![p("linked.ll").into(), "--only-needed".into()];
            args.extend(members.iter().map(|m| m.clone().into_os_string()));
            args.extend(["-S".into(), "-o".into(), p("linked2.ll").into()]);
            tc.run("llvm-link", args)
                .context("llvm-link of compiler_builtins")?;
            linked = std::fs::read_to_string(p("linked2.ll"))?;
            undefined = ir::undefined_functions(&linked);
        }
    }
    if !undefined.is_empty() {
        bail!(
            "functions called but defined nowhere (not in the device crate, {}, nor compiler_builtins): {}. \
             Define them in the shim or stop calling them.",
            arch.shim_path().display(),
            undefined.join(", ")
        );
    }

    // 3. argument block by value (NVIDIA), launch bounds.
    if arch.vendor == Vendor::Nvidia {
        let bytes = std::mem::size_of::<convgrad_types::params::ConvArgs>() as u32;
        linked = ir::args_by_value(&linked, arch.kernel_cc(), bytes)?;
    }
    let mut attrs: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for k in ir::kernels(&linked, arch.kernel_cc()) {
        if let Some(&(t, blocks)) = bounds.get(k.as_str()) {
            let a = match arch.vendor {
                Vendor::Amd => vec![
                    ("amdgpu-flat-work-group-size".to_string(), format!("1,{t}")),
                    ("uniform-work-group-size".to_string(), "true".to_string()),
                ],
                // Resident blocks per SM at least (`Instance::min_blocks`): with two,
                // ptxas keeps a 256-thread block within 128 registers (like CUDA's
                // __launch_bounds__(256, 2)).
                Vendor::Nvidia => vec![
                    ("nvvm.maxntid".to_string(), t.to_string()),
                    ("nvvm.minctasm".to_string(), blocks.to_string()),
                ],
            };
            attrs.insert(k, a);
        }
    }
    std::fs::write(
        p("annotated.ll"),
        ir::annotate(&linked, arch.kernel_cc(), &attrs)?,
    )?;

    // 4. opt + llc.
    let mut opt_args: Vec<std::ffi::OsString> = vec![format!("-passes={opt_passes}").into()];
    opt_args.extend(unroll_args(arch).iter().map(Into::into));
    opt_args.extend([p("annotated.ll").into_os_string(), "-o".into(), p("opt.bc").into_os_string()]);
    tc.run("opt", opt_args).context("opt")?;
    let triple = format!("-mtriple={}", arch.triple());
    let cpu = format!("-mcpu={}", arch.cpu());
    // llc with the target, then `flags`, writing `output` from opt.bc.
    let llc = |flags: &[&str], output: &str| -> Result<()> {
        let mut args: Vec<std::ffi::OsString> = [triple.as_str(), cpu.as_str()]
            .iter()
            .chain(flags)
            .chain(&["-o"])
            .map(Into::into)
            .collect();
        args.extend([p(output).into_os_string(), p("opt.bc").into_os_string()]);
        tc.run("llc", args).context("llc")?;
        Ok(())
    };
    let out = arch.object_path();
    std::fs::create_dir_all(out.parent().unwrap())?;
    match arch.vendor {
        Vendor::Amd => {
            llc(&[llc_opt, "-filetype=obj"], "convgrad.o")?;
            // 5. link the code object.
            let mut args: Vec<std::ffi::OsString> = [
                "-flavor",
                "gnu",
                "-shared",
                "--no-undefined",
                "--gc-sections",
                "-o",
            ]
            .map(Into::into)
            .to_vec();
            args.push(p("convgrad.hsaco").into());
            args.push(p("convgrad.o").into());
            args.extend(rlibs.iter().map(|r| r.clone().into_os_string()));
            tc.run("rust-lld", args)
                .context("rust-lld (linking the HSA code object)")?;
            util::write_if_changed(&out, &util::read(&p("convgrad.hsaco"))?)?;
        }
        Vendor::Nvidia => {
            // PTX 7.8 at least: with older ISA versions (sm_80's default is
            // 7.0) llc copies by-value kernel parameters to local memory.
            // sm_90a needs 8.0 (wgmma) and 8.1 (red.global.v4.f32).
            let ptx = if arch.family() == Family::Hopper { "-mattr=+ptx81" } else { "-mattr=+ptx78" };
            llc(&[ptx, llc_opt], "convgrad.ptx")?;
            let ptx = std::fs::read_to_string(p("convgrad.ptx"))?;
            let ext = nvptx::extern_functions(&ptx);
            if !ext.is_empty() {
                bail!(
                    "the PTX calls functions it does not define (libcalls llc introduced?): {}. \
                     Provide them in {} or avoid the operation.",
                    ext.join(", "),
                    arch.shim_path().display()
                );
            }
            util::write_if_changed(&out, ptx.as_bytes())?;
        }
    }
    Ok(())
}

/// Splits the kernels found in an object into: INSTANCES of the arch's family that
/// are present (INSTANCES order), those missing, and names INSTANCES does not list.
pub fn classify(
    arch: Arch,
    found: &[String],
) -> (
    Vec<&'static convgrad_types::instance::Instance>,
    Vec<String>,
    Vec<String>,
) {
    let family = arch.family();
    let mut present = Vec::new();
    let mut missing = Vec::new();
    for i in INSTANCES.iter().filter(|i| i.on(family)) {
        if found.iter().any(|f| f == i.name) {
            present.push(i);
        } else {
            missing.push(i.name.to_string());
        }
    }
    let unlisted = found
        .iter()
        .filter(|f| {
            !INSTANCES
                .iter()
                .any(|i| i.on(family) && i.name == f.as_str())
        })
        .cloned()
        .collect();
    (present, missing, unlisted)
}

/// The instance-derived part of a manifest entry.
pub fn entry(arch: Arch, i: &convgrad_types::instance::Instance) -> manifest::KernelEntry {
    let family = arch.family();
    manifest::KernelEntry {
        name: i.name.into(),
        arch: arch.name.into(),
        family: family.cfg().into(),
        op: format!("{:?}", i.op),
        types: i.types.name().into(),
        atom: format!("{:?}", i.atom),
        matrix_instruction: i.atom.mnemonic().map(Into::into),
        tile: manifest::Tile {
            bm: i.tile.bm,
            bn: i.tile.bn,
            bk: i.tile.bk,
            waves_m: i.tile.waves_m,
            waves_n: i.tile.waves_n,
        },
        workgroup_size: i.threads(family),
        lds_bytes: i.lds_bytes(),
        amdgpu: None,
        nvptx: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_kernels() {
        let gfx942 = Arch::by_name("gfx942").unwrap();
        let cdna: Vec<&str> = INSTANCES
            .iter()
            .filter(|i| i.on(Family::Cdna))
            .map(|i| i.name)
            .collect();
        let mut found: Vec<String> = cdna[1..].iter().map(|s| s.to_string()).collect();
        found.push("not_an_instance".into());
        let (present, missing, unlisted) = classify(gfx942, &found);
        assert_eq!(present.len(), cdna.len() - 1);
        assert_eq!(missing, vec![cdna[0].to_string()]);
        assert_eq!(unlisted, vec!["not_an_instance".to_string()]);
    }

    #[test]
    fn parses_arch_lists() {
        assert_eq!(parse_archs(None).unwrap().len(), ARCHS.len());
        let a = parse_archs(Some("sm_90,gfx942 sm_90")).unwrap();
        assert_eq!(
            a.iter().map(|a| a.name).collect::<Vec<_>>(),
            ["sm_90", "gfx942"]
        );
        assert!(parse_archs(Some("gfx908")).is_err());
    }
}
