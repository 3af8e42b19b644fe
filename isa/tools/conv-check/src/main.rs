//! Usage: `isa-conv-check ARCH "CK ARGS" [INSTANCE|""] [f16|bf16|f32] [SPLIT] [atomic|det] [weight|data]`
//!
//! Plans a backward-weight (default) or backward-data problem with the host crate
//! for ARCH's family, runs the planned (or forced) kernel from
//! `target/kernels/ARCH/convgrad.hsaco` on the isa executor, and compares the result
//! with the host's float64 reference. `LENIENT=1` runs barriers with hardware
//! semantics (divergence counted, not an error). `sweep.sh` runs a problem list.
//! Example: `cargo run -- gfx942 "2 1 2 64 64 3 3 8 8 1 1 1 1 1 1 1 1"`.

use convgrad::ops::bwd_weight::{self, BwdWeightConfig, SplitK};
use convgrad::types::instance::Family;
use convgrad::types::{ConvProblem, TypeConfig};
use convgrad_isa::exec::{Launch, Memory, Program, run};
use convgrad_isa::{Arch, CodeObject};
use half::f16;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arch = Arch::from_name(args.get(1).map(String::as_str).unwrap_or("gfx942")).unwrap();
    let ck: Vec<usize> = args
        .get(2)
        .map(|s| s.split_whitespace().map(|t| t.parse().unwrap()).collect())
        .unwrap_or(vec![2, 1, 2, 16, 16, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1]);
    let inst = args.get(3).cloned().filter(|s| !s.is_empty());
    let types = match args.get(4).map(String::as_str) {
        Some("f32") => TypeConfig::F32,
        Some("bf16") => TypeConfig::Bf16,
        _ => TypeConfig::F16,
    };
    let p = ConvProblem::from_ck_args(&ck).unwrap();
    let split: u32 = args.get(5).map(|v| v.parse().unwrap()).unwrap_or(1);
    let det = args.get(6).is_some_and(|v| v == "det");
    if args.get(7).is_some_and(|v| v == "data") {
        return data(arch, &ck, inst, types);
    }
    let cfg = BwdWeightConfig {
        split_k: SplitK::Fixed(split),
        deterministic: det,
        instance: inst,
        types,
        ..Default::default()
    };
    let fam = if arch == Arch::Gfx1100 {
        Family::Rdna3
    } else {
        Family::Cdna
    };
    let plan = bwd_weight::plan(&p, &cfg, fam, 104).unwrap();
    eprintln!(
        "{} grid {:?} block {} lds {}",
        plan.describe(),
        plan.main.grid,
        plan.main.block,
        plan.main.lds_bytes
    );
    let (nx, ndy, ndw) = (
        plan.x.span() as usize,
        plan.dy.span() as usize,
        plan.dw.span() as usize,
    );
    let mut s = 12345u32;
    let mut rnd = || {
        s = s.wrapping_mul(1664525).wrapping_add(1013904223);
        ((s >> 9) % 2001) as f64 / 1000.0 - 1.0
    };
    let f32io = types == TypeConfig::F32;
    let xs: Vec<f64> = (0..nx).map(|_| rnd()).collect();
    let dys: Vec<f64> = (0..ndy).map(|_| rnd()).collect();
    let enc = |v: &[f64]| -> (Vec<u8>, Vec<f64>) {
        if f32io {
            let q: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            (
                bytemuck::cast_slice(&q).to_vec(),
                q.iter().map(|&x| x as f64).collect(),
            )
        } else if types == TypeConfig::Bf16 {
            let q: Vec<half::bf16> = v.iter().map(|&x| half::bf16::from_f64(x)).collect();
            (
                bytemuck::cast_slice(&q).to_vec(),
                q.iter().map(|x| x.to_f64()).collect(),
            )
        } else {
            let q: Vec<f16> = v.iter().map(|&x| f16::from_f64(x)).collect();
            (
                bytemuck::cast_slice(&q).to_vec(),
                q.iter().map(|x| x.to_f64()).collect(),
            )
        }
    };
    let (xb, xq) = enc(&xs);
    let (dyb, dyq) = enc(&dys);
    let mut mem = Memory::new();
    let px = mem.upload("x", &xb);
    let pdy = mem.upload("dy", &dyb);
    let wbytes = if f32io { 4 } else { 2 };
    let pdw = mem.alloc("dw", ndw * wbytes);
    let pws = if plan.workspace_elems > 0 {
        mem.upload("workspace", &vec![0u8; plan.workspace_elems * 4])
    } else {
        0
    };
    let a = plan.args(px, pdw, pdy, pws, &[]);
    let pargs = mem.upload("ConvArgs", bytemuck::bytes_of(&a));
    let co = CodeObject::load(std::path::Path::new(&format!(
        "{}/../../../target/kernels/{}/convgrad.hsaco",
        env!("CARGO_MANIFEST_DIR"),
        arch.name()
    )))
    .unwrap();
    let prog = Program::new(arch, co.kernel(plan.main.instance.name).unwrap()).unwrap();
    let mut l = Launch::new(1, plan.main.block, pargs.to_le_bytes().to_vec());
    l.grid = plan.main.grid;
    l.dynamic_lds = plan.main.lds_bytes;
    l.strict_barriers = std::env::var("LENIENT").is_err();
    let t = std::time::Instant::now();
    let r = run(&prog, &mut mem, &l);
    let el = t.elapsed();
    match r {
        Err(e) => {
            println!("FAIL {e}");
            std::process::exit(1)
        }
        Ok(c) => eprintln!(
            "ran in {el:?}: divergent barriers {} of {}; {} instr, classes {:?}, matrix cycles {}, lds conflicts {}",
            c.divergent_barriers,
            c.barriers + c.divergent_barriers,
            c.instructions(),
            c.by_class,
            c.matrix_cycles,
            c.lds_bank_conflicts
        ),
    }
    let out = mem.download(pdw, ndw * wbytes);
    let got: Vec<f64> = if f32io {
        bytemuck::cast_slice::<u8, f32>(&out)
            .iter()
            .map(|&x| x as f64)
            .collect()
    } else if types == TypeConfig::Bf16 {
        bytemuck::cast_slice::<u8, half::bf16>(&out)
            .iter()
            .map(|x| x.to_f64())
            .collect()
    } else {
        bytemuck::cast_slice::<u8, f16>(&out)
            .iter()
            .map(|x| x.to_f64())
            .collect()
    };
    let mut want = vec![0f64; ndw];
    convgrad::reference::bwd_weight(&p, &xq, &plan.x, &dyq, &plan.dy, &mut want, &plan.dw);
    let mut worst = 0f64;
    let mut bad = 0;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let e = (g - w).abs();
        let tol = if f32io { 1e-4 } else { 2e-2 } * (1.0 + w.abs());
        if !(e <= tol) {
            if bad < 5 {
                println!("dw[{i}] = {g}, want {w}");
            }
            bad += 1;
        }
        worst = worst.max(e);
    }
    println!(
        "{} {}: {} of {} wrong, worst |err| {worst:.3e}",
        arch, plan.main.instance.name, bad, ndw
    );
    if bad > 0 {
        std::process::exit(2)
    }
}

fn data(arch: Arch, ck: &[usize], inst: Option<String>, types: TypeConfig) {
    use convgrad::ops::bwd_data::{self, BwdDataBuffers, BwdDataConfig};
    let p = ConvProblem::from_ck_args(ck).unwrap();
    let cfg = BwdDataConfig {
        instance: inst,
        types,
        ..Default::default()
    };
    let fam = if arch == Arch::Gfx1100 {
        Family::Rdna3
    } else {
        Family::Cdna
    };
    let plan = bwd_data::plan(&p, &cfg, fam, 104).unwrap();
    eprintln!(
        "grid {:?} block {} lds {}",
        plan.main.grid, plan.main.block, plan.main.lds_bytes
    );
    let (ndy, nw, ndx) = (
        plan.dy.span() as usize,
        plan.w.span() as usize,
        plan.dx.span() as usize,
    );
    let mut s = 777u32;
    let mut rnd = || {
        s = s.wrapping_mul(1664525).wrapping_add(1013904223);
        ((s >> 9) % 2001) as f64 / 1000.0 - 1.0
    };
    let f32io = types == TypeConfig::F32;
    let bf = types == TypeConfig::Bf16;
    let enc = |v: &[f64]| -> (Vec<u8>, Vec<f64>) {
        if f32io {
            let q: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            (
                bytemuck::cast_slice(&q).to_vec(),
                q.iter().map(|&x| x as f64).collect(),
            )
        } else if bf {
            let q: Vec<half::bf16> = v.iter().map(|&x| half::bf16::from_f64(x)).collect();
            (
                bytemuck::cast_slice(&q).to_vec(),
                q.iter().map(|x| x.to_f64()).collect(),
            )
        } else {
            let q: Vec<f16> = v.iter().map(|&x| f16::from_f64(x)).collect();
            (
                bytemuck::cast_slice(&q).to_vec(),
                q.iter().map(|x| x.to_f64()).collect(),
            )
        }
    };
    let dys: Vec<f64> = (0..ndy).map(|_| rnd()).collect();
    let ws: Vec<f64> = (0..nw).map(|_| rnd()).collect();
    let (dyb, dyq) = enc(&dys);
    let (wb, wq) = enc(&ws);
    let mut mem = Memory::new();
    let pdy = mem.upload("dy", &dyb);
    let pw = mem.upload("w", &wb);
    let eb = if f32io { 4 } else { 2 };
    let pdx = mem.alloc("dx", ndx * eb);
    let a = plan.args(&BwdDataBuffers {
        dy: pdy,
        w: pw,
        dx: pdx,
        ds: &[],
    });
    let pargs = mem.upload("ConvArgs", bytemuck::bytes_of(&a));
    let co = CodeObject::load(std::path::Path::new(&format!(
        "{}/../../../target/kernels/{}/convgrad.hsaco",
        env!("CARGO_MANIFEST_DIR"),
        arch.name()
    )))
    .unwrap();
    let prog = Program::new(arch, co.kernel(plan.main.instance.name).unwrap()).unwrap();
    let mut l = Launch::new(1, plan.main.block, pargs.to_le_bytes().to_vec());
    l.grid = plan.main.grid;
    l.dynamic_lds = plan.main.lds_bytes;
    let t = std::time::Instant::now();
    match run(&prog, &mut mem, &l) {
        Err(e) => {
            println!("FAIL {e}");
            std::process::exit(1)
        }
        Ok(c) => eprintln!("ran in {:?}: {} instr", t.elapsed(), c.instructions()),
    }
    let out = mem.download(pdx, ndx * eb);
    let got: Vec<f64> = if f32io {
        bytemuck::cast_slice::<u8, f32>(&out)
            .iter()
            .map(|&x| x as f64)
            .collect()
    } else if bf {
        bytemuck::cast_slice::<u8, half::bf16>(&out)
            .iter()
            .map(|x| x.to_f64())
            .collect()
    } else {
        bytemuck::cast_slice::<u8, f16>(&out)
            .iter()
            .map(|x| x.to_f64())
            .collect()
    };
    let mut want = vec![0f64; ndx];
    convgrad::reference::bwd_data(&p, &dyq, &plan.dy, &wq, &plan.w, &mut want, &plan.dx);
    let mut worst = 0f64;
    let mut bad = 0;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let e = (g - w).abs();
        let tol = if f32io { 1e-4 } else { 3e-2 } * (1.0 + w.abs());
        if !(e <= tol) {
            if bad < 5 {
                println!("dx[{i}] = {g}, want {w}");
            }
            bad += 1;
        }
        worst = worst.max(e);
    }
    println!(
        "{} {} (bwd-data): {} of {} wrong, worst |err| {worst:.3e}",
        arch, plan.main.instance.name, bad, ndx
    );
    if bad > 0 {
        std::process::exit(2)
    }
}
