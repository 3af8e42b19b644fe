//! `cargo xtask inspect`: the manifest as a table, plus checks on the built
//! objects: matrix instructions present in each kernel's disassembly (AMD,
//! `llvm-objdump -d`) or PTX body (NVIDIA), no scratch / local memory, no
//! spills, launch bounds applied, every instance of the family present.

use crate::build::manifest::{KernelEntry, Manifest};
use crate::build::{self, Arch, Vendor, nvptx};
use crate::util::{self, Toolchain};
use anyhow::{Result, bail};
use std::collections::BTreeMap;

/// Kernel name -> its disassembly / PTX body.
fn bodies(tc: &Toolchain, arch: Arch) -> Result<BTreeMap<String, String>> {
    let path = arch.object_path();
    let mut m = BTreeMap::new();
    match arch.vendor {
        Vendor::Amd => {
            let out = tc.run(
                "llvm-objdump",
                [
                    "-d".into(),
                    format!("--mcpu={}", arch.name).into(),
                    "--no-show-raw-insn".into(),
                    path.clone().into_os_string(),
                ],
            )?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let dis = util::kernels_build_dir()
                .join(arch.name)
                .join("convgrad.dis");
            util::write_if_changed(&dis, text.as_bytes())?;
            let mut cur: Option<String> = None;
            for l in text.lines() {
                // `0000000000001500 <name>:` starts a symbol.
                if let Some(rest) = l.strip_suffix(">:")
                    && let Some((addr, name)) = rest.split_once(" <")
                    && addr.chars().all(|c| c.is_ascii_hexdigit())
                {
                    cur = Some(name.to_string());
                    m.entry(name.to_string()).or_insert_with(String::new);
                    continue;
                }
                if let Some(c) = &cur {
                    let b = m.get_mut(c).expect("inserted");
                    b.push_str(l);
                    b.push('\n');
                }
            }
        }
        Vendor::Nvidia => {
            let ptx = String::from_utf8_lossy(&util::read(&path)?).into_owned();
            for e in nvptx::entries(&ptx) {
                m.insert(e.name, e.body);
            }
        }
    }
    Ok(m)
}

/// Problems of one kernel (empty: fine).
fn check(k: &KernelEntry, body: Option<&str>) -> (Vec<String>, String) {
    let mut p = Vec::new();
    let matrix = match (&k.matrix_instruction, body) {
        (_, None) => {
            p.push("not in the disassembly".into());
            "?".into()
        }
        (None, Some(_)) => "-".into(),
        (Some(mn), Some(b)) => {
            let n = b
                .lines()
                .filter(|l| l.trim_start().starts_with(mn.as_str()))
                .count();
            if n == 0 {
                p.push(format!("no {mn}"));
            }
            format!("{n}x")
        }
    };
    // TMA kernels: every slab a tensor-map box, no per-thread copies left.
    let tma = convgrad_types::instance::find(&k.name).is_some_and(|i| i.op.tma());
    if let (true, Some(b)) = (tma, body) {
        let count = |w: &str| b.lines().filter(|l| l.trim_start().starts_with(w)).count();
        if count("cp.async.bulk.tensor") == 0 {
            p.push("TMA kernel without cp.async.bulk.tensor".into());
        }
        if count("cp.async.cg") + count("cp.async.ca") > 0 {
            p.push("TMA kernel with per-thread cp.async copies".into());
        }
    }
    if let Some(a) = &k.amdgpu {
        if a.scratch_bytes > 0 || a.dynamic_stack {
            p.push(format!(
                "scratch {} B{}",
                a.scratch_bytes,
                if a.dynamic_stack {
                    " + dynamic stack"
                } else {
                    ""
                }
            ));
        }
        if a.vgpr_spill_count > 0 || a.sgpr_spill_count > 0 {
            p.push(format!(
                "spills v{} s{}",
                a.vgpr_spill_count, a.sgpr_spill_count
            ));
        }
        if a.max_flat_workgroup_size != k.workgroup_size {
            p.push(format!(
                "max_flat_workgroup_size {} != {}",
                a.max_flat_workgroup_size, k.workgroup_size
            ));
        }
    }
    if let Some(n) = &k.nvptx {
        if n.local_bytes > 0 {
            p.push(format!("local memory {} B", n.local_bytes));
        }
        if n.spill_store_bytes.unwrap_or(0) > 0 || n.spill_load_bytes.unwrap_or(0) > 0 {
            p.push(format!(
                "spills st {} ld {} B",
                n.spill_store_bytes.unwrap_or(0),
                n.spill_load_bytes.unwrap_or(0)
            ));
        }
        if n.maxntid.as_ref().and_then(|v| v.first()) != Some(&k.workgroup_size) {
            p.push(format!("maxntid {:?} != {}", n.maxntid, k.workgroup_size));
        }
    }
    (p, matrix)
}

/// `cargo xtask inspect`.
pub fn run(archs: Option<&str>, kernel: Option<&str>) -> Result<()> {
    let tc = Toolchain::locate()?;
    let m = Manifest::load()?;
    let archs: Vec<Arch> = match archs {
        Some(_) => build::parse_archs(archs)?,
        None => {
            let built: Vec<Arch> = build::ARCHS
                .iter()
                .copied()
                .filter(|a| m.archs.contains_key(a.name))
                .collect();
            let not: Vec<&str> = build::ARCHS
                .iter()
                .filter(|a| !m.archs.contains_key(a.name))
                .map(|a| a.name)
                .collect();
            if !not.is_empty() {
                println!("not built (skipped): {}", not.join(", "));
            }
            built
        }
    };
    if archs.is_empty() {
        bail!("no architecture built: run `cargo xtask build-kernels`");
    }
    println!(
        "ConvArgs: ABI {} size {} B",
        m.conv_args.abi, m.conv_args.size
    );
    let mut failures: Vec<String> = Vec::new();
    for arch in archs {
        let Some(ae) = m.archs.get(arch.name) else {
            failures.push(format!(
                "{}: not built (run `cargo xtask build-kernels --arch {}`)",
                arch.name, arch.name
            ));
            continue;
        };
        let object = util::read(&arch.object_path())?;
        if util::hash_hex(&object) != ae.fnv64 {
            failures.push(format!(
                "{}: {} changed since the manifest was written; rerun build-kernels",
                arch.name, ae.code_object
            ));
        }
        let bodies = bodies(&tc, arch)?;
        println!(
            "\n{} ({}, {}, opt {}): {}",
            arch.name, ae.family, ae.target, ae.opt, ae.code_object
        );
        let mut rows: Vec<Vec<String>> = vec![
            match arch.vendor {
                Vendor::Amd => [
                    "kernel",
                    "wg",
                    "LDS",
                    "vgpr",
                    "agpr",
                    "sgpr",
                    "scratch",
                    "spill v/s",
                    "occ",
                    "limit",
                    "matrix",
                    "status",
                ],
                Vendor::Nvidia => [
                    "kernel",
                    "wg",
                    "LDS",
                    "regs",
                    "ptx b32/b64",
                    "spill st/ld",
                    "local",
                    "maxntid",
                    "params",
                    "",
                    "matrix",
                    "status",
                ],
            }
            .map(String::from)
            .to_vec(),
        ];
        for k in m.kernels.iter().filter(|k| k.arch == arch.name) {
            let (problems, matrix) = check(k, bodies.get(&k.name).map(String::as_str));
            let status = if problems.is_empty() {
                "ok".to_string()
            } else {
                problems.join("; ")
            };
            for p in &problems {
                failures.push(format!("{}: {}: {p}", arch.name, k.name));
            }
            let mut row = vec![
                k.name.clone(),
                k.workgroup_size.to_string(),
                k.lds_bytes.to_string(),
            ];
            if let Some(a) = &k.amdgpu {
                row.extend([
                    a.vgpr_count.to_string(),
                    a.agpr_count.to_string(),
                    a.sgpr_count.to_string(),
                    a.scratch_bytes.to_string(),
                    format!("{}/{}", a.vgpr_spill_count, a.sgpr_spill_count),
                    a.occupancy_waves_per_simd.to_string(),
                    a.occupancy_limited_by.clone(),
                ]);
            }
            if let Some(n) = &k.nvptx {
                let opt = |v: Option<u32>| v.map_or("-".to_string(), |v| v.to_string());
                row.extend([
                    if n.source == "ptxas" {
                        opt(n.registers)
                    } else {
                        "n/a (no ptxas)".into()
                    },
                    format!(
                        "{}/{}",
                        n.ptx_regs.get("b32").unwrap_or(&0),
                        n.ptx_regs.get("b64").unwrap_or(&0)
                    ),
                    format!("{}/{}", opt(n.spill_store_bytes), opt(n.spill_load_bytes)),
                    n.local_bytes.to_string(),
                    n.maxntid.as_ref().map_or("-".into(), |v| {
                        v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
                    }),
                    n.params.len().to_string(),
                    String::new(),
                ]);
            }
            row.extend([
                format!(
                    "{} {}",
                    k.matrix_instruction.as_deref().unwrap_or("fma"),
                    matrix
                ),
                status,
            ]);
            rows.push(row);
        }
        print!("{}", util::table(&rows));
        // Re-derive missing/unlisted against the INSTANCES this xtask was built with
        // (the object's kernels = the manifest's entries plus the unlisted ones).
        let found: Vec<String> = m
            .kernels
            .iter()
            .filter(|k| k.arch == arch.name)
            .map(|k| k.name.clone())
            .chain(ae.unlisted.iter().cloned())
            .collect();
        let (_, missing, unlisted) = build::classify(arch, &found);
        for name in &missing {
            failures.push(format!(
                "{}: kernel {name} (INSTANCES, family {}) is missing from the object",
                arch.name, ae.family
            ));
        }
        if !unlisted.is_empty() {
            println!("note: kernels not in INSTANCES: {}", unlisted.join(", "));
        }
        if let Some(kn) = kernel {
            match bodies.get(kn) {
                Some(b) => println!("\n--- {kn} on {} ---\n{b}", arch.name),
                None => println!("\n--- {kn}: not in the {} object ---", arch.name),
            }
        }
        if arch.vendor == Vendor::Amd {
            println!(
                "disassembly: {}",
                util::kernels_build_dir()
                    .join(arch.name)
                    .join("convgrad.dis")
                    .display()
            );
        }
    }
    if !failures.is_empty() {
        eprintln!("\ninspect: {} problem(s):", failures.len());
        for f in &failures {
            eprintln!("  {f}");
        }
        bail!("inspect failed");
    }
    println!("\ninspect: all kernels ok");
    Ok(())
}
