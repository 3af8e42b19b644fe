//! Runs the real `smoke_mfma` (gfx942, gfx90a) and `smoke_wmma` (gfx1100) code
//! objects end to end: `D (M x N, f32) = A (M x K) * B (K x N)` with A and B f16
//! row-major (contract: `device/src/kernels/smoke.rs`), compared with a product
//! computed here in f64. Also checks that the memory checks fire.

mod common;

use convgrad_isa::decode::{Operand, decode_all};
use convgrad_isa::exec::{Counters, Launch, Memory, Program, run};
use convgrad_isa::{Arch, CodeObject};
use half::f16;

/// The layout signature the kernel compares `ConvArgs::abi` (offset 0x40) with: the
/// literal of the first `s_cmp_*_u32` after the scalar load of offset 0x40. Read from
/// the kernel so this crate does not depend on convgrad-types.
fn abi_of(arch: Arch, co: &CodeObject, kernel: &str) -> u32 {
    let k = co.kernel(kernel).unwrap();
    let insts = decode_all(arch, &k.code, k.entry).unwrap();
    let p = insts
        .iter()
        .position(|i| i.name.starts_with("s_load") && i.imm == 0x40)
        .expect("load of ConvArgs::abi");
    insts[p..]
        .iter()
        .find_map(|i| match (i.name.starts_with("s_cmp"), i.src) {
            (true, [_, Operand::Literal(v), _]) | (true, [Operand::Literal(v), _, _]) => Some(v),
            _ => None,
        })
        .expect("compare with the ABI signature")
}

struct Case {
    arch: Arch,
    kernel: &'static str,
    m: usize,
    n: usize,
    k: usize,
    block: u32,
}

fn case(arch: Arch) -> Case {
    match arch {
        Arch::Gfx1200 | Arch::Gfx1201 => Case {
            arch,
            kernel: "smoke_wmma12",
            m: 16,
            n: 16,
            k: 16,
            block: 32,
        },
        Arch::Gfx1100 => Case {
            arch,
            kernel: "smoke_wmma",
            m: 16,
            n: 16,
            k: 16,
            block: 32,
        },
        _ => Case {
            arch,
            kernel: "smoke_mfma",
            m: 32,
            n: 32,
            k: 8,
            block: 64,
        },
    }
}

fn inputs(c: &Case) -> (Vec<f16>, Vec<f16>) {
    let mut s = 0x2545_f491u32;
    let mut next = || {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        f16::from_f32(((s >> 9) % 2001) as f32 / 1000.0 - 1.0)
    };
    let a = (0..c.m * c.k).map(|_| next()).collect();
    let b = (0..c.k * c.n).map(|_| next()).collect();
    (a, b)
}

fn bytes<T: Copy>(v: &[T]) -> Vec<u8> {
    let n = std::mem::size_of_val(v);
    // SAFETY: plain-old-data slices (f16, f32, u8) viewed as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, n) }.to_vec()
}

/// Sets up memory and runs the smoke kernel; `tweak` may alter the setup.
fn launch(
    c: &Case,
    tweak: impl Fn(&mut Setup),
) -> (
    Result<Counters, convgrad_isa::exec::ExecError>,
    Memory,
    u64,
    Vec<f16>,
    Vec<f16>,
) {
    launch_patched(c, tweak, |_| {})
}

/// [`launch`] with the kernel's code bytes edited by `patch` first.
fn launch_patched(
    c: &Case,
    tweak: impl Fn(&mut Setup),
    patch: impl Fn(&mut convgrad_isa::Kernel),
) -> (
    Result<Counters, convgrad_isa::exec::ExecError>,
    Memory,
    u64,
    Vec<f16>,
    Vec<f16>,
) {
    let co = common::load(c.arch);
    let mut kernel = co.kernel(c.kernel).expect("smoke kernel").clone();
    patch(&mut kernel);
    let prog = Program::new(c.arch, &kernel).unwrap();
    let (a, b) = inputs(c);
    let mut s = Setup {
        abi: abi_of(c.arch, &co, c.kernel),
        d_bytes: c.m * c.n * 4,
        write_a: true,
        args_bytes: 1024,
    };
    tweak(&mut s);
    let mut mem = Memory::new();
    let pa = if s.write_a {
        mem.upload("A", &bytes(&a))
    } else {
        mem.alloc("A", a.len() * 2)
    };
    let pb = mem.upload("B", &bytes(&b));
    let pd = mem.alloc("D", s.d_bytes);
    // ConvArgs: x (A) at 0, w (B) at 8, dy (D) at 16, abi at 0x40; the rest zero.
    let mut args = vec![0u8; s.args_bytes];
    args[0..8].copy_from_slice(&pa.to_le_bytes());
    args[8..16].copy_from_slice(&pb.to_le_bytes());
    args[16..24].copy_from_slice(&pd.to_le_bytes());
    if args.len() >= 0x44 {
        args[0x40..0x44].copy_from_slice(&s.abi.to_le_bytes());
    }
    let pargs = mem.upload("ConvArgs", &args);
    let mut l = Launch::new(1, c.block, pargs.to_le_bytes().to_vec());
    l.dynamic_lds = ((c.m + c.n) * c.k * 2) as u32;
    let r = run(&prog, &mut mem, &l);
    (r, mem, pd, a, b)
}

struct Setup {
    abi: u32,
    d_bytes: usize,
    write_a: bool,
    args_bytes: usize,
}

fn smoke(arch: Arch) {
    let c = case(arch);
    let (r, mem, pd, a, b) = launch(&c, |_| {});
    let counters = r.unwrap_or_else(|e| panic!("{e}"));
    let out = mem.download(pd, c.m * c.n * 4);
    let mut worst = 0f64;
    for i in 0..c.m {
        for j in 0..c.n {
            let want: f64 = (0..c.k)
                .map(|k| a[i * c.k + k].to_f64() * b[k * c.n + j].to_f64())
                .sum();
            let got = f32::from_le_bytes(out[4 * (i * c.n + j)..][..4].try_into().unwrap()) as f64;
            let err = (got - want).abs();
            worst = worst.max(err);
            assert!(
                err <= 1e-5 * (1.0 + want.abs()),
                "{arch} D[{i}][{j}] = {got}, expected {want}"
            );
        }
    }
    let matrix = counters
        .by_class
        .get("mfma")
        .or(counters.by_class.get("wmma"))
        .copied()
        .unwrap_or(0);
    assert_eq!(matrix, 1, "{arch}: one matrix instruction per smoke launch");
    assert!(
        counters.matrix_cycles > 0 && counters.global_bytes_written == (c.m * c.n * 4) as u64,
        "{counters:?}"
    );
    println!(
        "{arch} {}: {} instructions ({:?}), max |error| {worst:.2e}, matrix cycles {}, LDS bank conflicts {}, global bytes read {} written {}",
        c.kernel,
        counters.instructions(),
        counters.by_class,
        counters.matrix_cycles,
        counters.lds_bank_conflicts,
        counters.global_bytes_read,
        counters.global_bytes_written
    );
}

// smoke_mfma on gfx90a/gfx942, smoke_wmma on gfx1100.
common::per_arch!(smoke_matches_f64_product, smoke);
common::per_gfx12!(smoke_matches_f64_product_gfx12, smoke);

#[test]
fn checks_fire_on_gfx942() {
    let c = case(Arch::Gfx942);
    let err = |t: fn(&mut Setup)| {
        launch(&c, t)
            .0
            .expect_err("the launch must fail")
            .to_string()
    };
    let e = err(|s| s.d_bytes -= 4);
    assert!(e.contains("out-of-bounds") && e.contains("`D`"), "{e}");
    let e = err(|s| s.write_a = false);
    assert!(e.contains("never written") && e.contains("`A`"), "{e}");
    let e = err(|s| s.abi ^= 1);
    assert!(e.contains("s_trap"), "{e}");
    let e = err(|s| s.args_bytes = 0x40);
    assert!(e.contains("out-of-bounds") && e.contains("ConvArgs"), "{e}");
}

/// The result of the smoke kernel with the instruction at `addr` replaced by `word`.
fn mutated(c: &Case, addr: u64, word: u32) -> Result<(), String> {
    let (r, mem, pd, a, b) = launch_patched(
        c,
        |_| {},
        |k| {
            let o = (addr - k.entry) as usize;
            k.code[o..o + 4].copy_from_slice(&word.to_le_bytes());
        },
    );
    r.map_err(|e| e.to_string())?;
    let out = mem.download(pd, c.m * c.n * 4);
    for i in 0..c.m {
        for j in 0..c.n {
            let want: f64 = (0..c.k)
                .map(|k| a[i * c.k + k].to_f64() * b[k * c.n + j].to_f64())
                .sum();
            let got = f32::from_le_bytes(out[4 * (i * c.n + j)..][..4].try_into().unwrap()) as f64;
            if (got - want).abs() > 1e-5 * (1.0 + want.abs()) {
                return Err(format!("D[{i}][{j}] = {got}, expected {want}"));
            }
        }
    }
    Ok(())
}

/// Issue #42's first mutation: an executed `s_waitcnt` replaced by `s_nop 0`.
/// With late results, removing a wait that lands a load result the wave reads
/// before its next wait (the unmutated run's `Counters::waits_needed`) must fail
/// the launch; removing another one (here: one that only orders the wave's own LDS
/// stores before its own loads, which one wave's LDS accesses are anyway) must
/// still give the right product. Which
/// waits execute is found by replacing each with `s_trap` first.
fn waitcnt_mutations(arch: Arch) {
    let c = case(arch);
    let co = common::load(arch);
    let k = co.kernel(c.kernel).unwrap();
    let insts = decode_all(arch, &k.code, k.entry).unwrap();
    let (r, ..) = launch(&c, |_| {});
    let landing = r.unwrap().waits_needed;
    let trap = if arch.family().rdna() {
        0xBF90_0002
    } else {
        0xBF92_0002
    };
    let nop = 0xBF80_0000u32;
    let (mut executed, mut caught, mut harmless) = (0, Vec::new(), Vec::new());
    for i in insts.iter().filter(|i| {
        // GFX12: the split s_wait_* forms (s_wait_alu is GFX11's s_waitcnt_depctr).
        (i.name.starts_with("s_waitcnt") || i.name.starts_with("s_wait_"))
            && !matches!(
                i.name,
                "s_waitcnt_depctr" | "s_waitcnt_expcnt" | "s_wait_alu" | "s_wait_expcnt"
            )
    }) {
        // Not executed: the launch passes, or fails elsewhere.
        let Err(e) = mutated(&c, i.addr, trap) else {
            continue;
        };
        if !(e.contains("s_trap") && e.contains(&format!("0x{:x}", i.addr))) {
            continue;
        }
        executed += 1;
        let r = mutated(&c, i.addr, nop);
        if landing.contains(&i.addr) {
            let e = r.expect_err(&format!(
                "{arch} {}: `{i}` at 0x{:x} is needed, yet replaced by s_nop it passes",
                c.kernel, i.addr
            ));
            assert!(
                e.contains("before its load completes"),
                "{arch} 0x{:x}: {e}",
                i.addr
            );
            caught.push(format!("0x{:x}: {e}", i.addr));
        } else {
            r.unwrap_or_else(|e| panic!("{arch} 0x{:x} `{i}` is not needed, yet: {e}", i.addr));
            harmless.push(format!("0x{:x}", i.addr));
        }
    }
    assert!(
        !caught.is_empty(),
        "{arch}: no executed s_waitcnt lands a load"
    );
    println!(
        "{arch} {}: {executed} executed s_waitcnt; the {} needed ones (a landed value read before the next wait), replaced by s_nop, are all caught; {} are not (harmless): {harmless:?}\n{}",
        c.kernel,
        caught.len(),
        harmless.len(),
        caught.join("\n")
    );
}

common::per_arch!(waitcnt_replaced_by_nop_is_caught, waitcnt_mutations);
common::per_gfx12!(waitcnt_replaced_by_nop_is_caught_gfx12, waitcnt_mutations);

/// Issue #42's wait-state mutation: every executed `s_nop` that a wait-state rule
/// needed in the unmutated run (`Counters::nops_needed`; gfx90a's `s_nop 8` before
/// the MFMA accumulator store among them) cut to `s_nop 0` must stop the launch with
/// the hazard error naming the rule; the other executed `s_nop`s cut to 0 must pass.
fn nop_mutations(arch: Arch) {
    let c = case(arch);
    let co = common::load(arch);
    let k = co.kernel(c.kernel).unwrap();
    let insts = decode_all(arch, &k.code, k.entry).unwrap();
    let (r, ..) = launch(&c, |_| {});
    let needed = r.unwrap().nops_needed;
    let mut caught = Vec::new();
    for i in insts.iter().filter(|i| i.name == "s_nop" && i.imm & 0xf != 0) {
        let r = mutated(&c, i.addr, 0xBF80_0000);
        match needed.get(&i.addr) {
            Some(rule) => {
                let e = r.expect_err(&format!(
                    "{arch} {}: `{i}` at 0x{:x} is needed by `{rule}`, yet cut to s_nop 0 it passes",
                    c.kernel, i.addr
                ));
                assert!(
                    e.contains("wait-state hazard") && e.contains(rule),
                    "{arch} 0x{:x}: {e}",
                    i.addr
                );
                caught.push(format!("0x{:x} `{i}`: {e}", i.addr));
            }
            None => {
                r.unwrap_or_else(|e| panic!("{arch} 0x{:x} `{i}` is not needed, yet: {e}", i.addr))
            }
        }
    }
    if arch != Arch::Gfx1100 {
        assert!(!caught.is_empty(), "{arch}: no executed s_nop is needed");
    }
    println!(
        "{arch} {}: caught {} of {} needed s_nops cut to s_nop 0\n{}",
        c.kernel,
        caught.len(),
        needed.len(),
        caught.join("\n")
    );
}

common::per_arch!(needed_nop_cut_to_zero_is_caught, nop_mutations);
