//! Matrix layouts against sources independent of the executor's lane tables (issue #42).
//!
//! The executor's MFMA/WMMA semantics place A, B and D elements with the emulator's
//! vendor tables (`convgrad_emu::matrix`, from `shared/notes/matrix-layouts.md`). This
//! test derives the lane -> element maps from two other sources, written here as data:
//!
//! - MFMA: Composable Kernel's `include/ck/tensor_operation/gpu/warp/xdlops_gemm.hpp`
//!   (ROCm/composable_kernel), the `mfma_type<MfmaInstr::...>` parameters
//!   (`group_size`, `num_groups_per_blk`, `num_regs_per_blk`, `num_threads_per_blk`,
//!   `num_input_blks`, `m_per_blk`, `n_per_blk`, `k_per_blk`, `is_k_reduction`) and its
//!   index functions: `GetBlkIdx` (blk_id = lane / num_threads_per_blk, blk_td = lane %
//!   num_threads_per_blk), `CalculateA/BThreadOriginDataIndex` (k-reduction: the lane
//!   holds K block blk_id, row/column blk_td, `k_per_blk` consecutive K values),
//!   `GetBeginOfThreadBlk` (C row = blk_id * group_size, column = blk_td) and the C
//!   thread lengths `(num_groups_per_blk, 1, group_size, 1)` with M split as
//!   (num_groups_per_blk, num_input_blks, group_size): register `g * group_size + w`
//!   holds row `g * num_input_blks * group_size + blk_id * group_size + w`.
//! - WMMA (gfx1100): GPUOpen's "How to accelerate AI applications on RDNA 3 using
//!   WMMA": lane `l % 16` holds A row `l % 16` (16 K values, 2 per VGPR) and B column
//!   `l % 16`, lanes 16..31 replicate lanes 0..15; f32 C/D VGPR `i` of lane `l` holds
//!   row `2 * i + l / 16`, column `l % 16`.
//!
//! For every MFMA/WMMA mnemonic the shipped code objects use, a real instance from
//! them runs on the executor with distinct integer values per element (exact in the
//! 16-bit types and in f32), and D must equal `C + A*B` computed from these maps,
//! element by element and bit for bit.

mod common;
use common::Machine;
use convgrad_isa::Arch;
use convgrad_isa::decode::{Inst, Operand, decode_all};
use std::collections::BTreeMap;

/// CK's `mfma_type` parameters of one instruction (plus the element width in bits).
#[derive(Clone, Copy, Debug)]
struct Ck {
    group_size: usize,
    num_groups_per_blk: usize,
    num_regs_per_blk: usize,
    num_threads_per_blk: usize,
    num_input_blks: usize,
    m_per_blk: usize,
    n_per_blk: usize,
    k_per_blk: usize,
    is_k_reduction: bool,
    bits: usize,
}

/// Transcribed from xdlops_gemm.hpp: `mfma_f32_32x32x8f16` / `_32x32x8bf16_1k`,
/// `mfma_f32_16x16x16f16` / `_16x16x16bf16_1k`, `mfma_f32_32x32x2xf32`,
/// `mfma_f32_16x16x4xf32` (gfx942 spells the same instructions with underscores).
fn ck(name: &str) -> Option<Ck> {
    let bits = if name.ends_with("f32") { 32 } else { 16 };
    let m32 = Ck {
        group_size: 4,
        num_groups_per_blk: 4,
        num_regs_per_blk: 16,
        num_threads_per_blk: 32,
        num_input_blks: 2,
        m_per_blk: 32,
        n_per_blk: 32,
        k_per_blk: 4,
        is_k_reduction: true,
        bits,
    };
    let m16 = Ck {
        group_size: 4,
        num_groups_per_blk: 1,
        num_regs_per_blk: 4,
        num_threads_per_blk: 16,
        num_input_blks: 4,
        m_per_blk: 16,
        n_per_blk: 16,
        k_per_blk: 4,
        is_k_reduction: true,
        bits,
    };
    let n = name.replace('_', "");
    Some(match n.as_str() {
        "vmfmaf3232x32x8f16" | "vmfmaf3232x32x8bf161k" | "vmfmaf3232x32x8bf16" => m32,
        "vmfmaf3216x16x16f16" | "vmfmaf3216x16x16bf161k" | "vmfmaf3216x16x16bf16" => m16,
        "vmfmaf3232x32x2f32" => Ck {
            k_per_blk: 1,
            ..m32
        },
        "vmfmaf3216x16x4f32" => Ck {
            k_per_blk: 1,
            ..m16
        },
        _ => return None,
    })
}

/// Where an element lives: (lane, element index within the operand's registers).
type At = (usize, usize);

/// The lane maps of one instruction, from the independent sources.
struct Maps {
    m: usize,
    n: usize,
    k: usize,
    /// 16 or 32 bits per A/B element.
    bits: usize,
    a: Box<dyn Fn(usize, usize) -> Vec<At>>,
    b: Box<dyn Fn(usize, usize) -> Vec<At>>,
    /// D[i][j] -> (lane, register).
    d: Box<dyn Fn(usize, usize) -> At>,
    d_regs: usize,
}

fn maps(name: &str) -> Option<Maps> {
    if name.starts_with("v_wmma_f32_16x16x16") {
        // GPUOpen RDNA3 WMMA: a_frag[e] = A[lane][e], b_frag[e] = B[e][lane],
        // c_frag[i] = C[2i + lane/16][lane % 16]; lanes 16..31 replicate A and B.
        return Some(Maps {
            m: 16,
            n: 16,
            k: 16,
            bits: 16,
            a: Box::new(|i, k| vec![(i, k), (i + 16, k)]),
            b: Box::new(|k, j| vec![(j, k), (j + 16, k)]),
            d: Box::new(|i, j| (j + 16 * (i % 2), i / 2)),
            d_regs: 8,
        });
    }
    let c = ck(name)?;
    assert!(c.is_k_reduction);
    // One xdlops block of the instruction: M x N x (k_per_blk * num_input_blks).
    assert_eq!(c.num_regs_per_blk, c.num_groups_per_blk * c.group_size);
    let k = c.k_per_blk * c.num_input_blks;
    // A[i][kk]: K block blk_id = kk / k_per_blk in lanes blk_id * threads + i.
    let a = move |i: usize, kk: usize| {
        vec![(
            (kk / c.k_per_blk) * c.num_threads_per_blk + i,
            kk % c.k_per_blk,
        )]
    };
    let d = move |i: usize, j: usize| {
        let g = i / (c.num_input_blks * c.group_size);
        let blk_id = (i / c.group_size) % c.num_input_blks;
        let w = i % c.group_size;
        (blk_id * c.num_threads_per_blk + j, g * c.group_size + w)
    };
    Some(Maps {
        m: c.m_per_blk,
        n: c.n_per_blk,
        k,
        bits: c.bits,
        a: Box::new(a),
        // B[kk][j]: the same with column j in place of row i.
        b: Box::new(move |kk, j| a(j, kk)),
        d: Box::new(d),
        d_regs: c.num_regs_per_blk,
    })
}

fn reg(m: &Machine, o: Operand, g: usize, lane: usize) -> u32 {
    let w = &m.wave;
    match o {
        Operand::Vgpr(r) => w.vgpr[(r as usize + g) * w.lanes + lane],
        Operand::Agpr(r) => w.agpr[(r as usize + g) * w.lanes + lane],
        o => panic!("matrix operand {o}"),
    }
}
fn set_reg(m: &mut Machine, o: Operand, g: usize, lane: usize, x: u32) {
    let lanes = m.wave.lanes;
    match o {
        Operand::Vgpr(r) => m.wave.vgpr[(r as usize + g) * lanes + lane] = x,
        Operand::Agpr(r) => m.wave.agpr[(r as usize + g) * lanes + lane] = x,
        o => panic!("matrix operand {o}"),
    }
}

/// Writes element `e` (16 or 32 bits) of operand `o` in `lane`.
fn put(m: &mut Machine, o: Operand, bits: usize, lane: usize, e: usize, x: u32) {
    if bits == 32 {
        set_reg(m, o, e, lane, x);
    } else {
        let (g, sh) = (e / 2, 16 * (e % 2));
        let old = reg(m, o, g, lane);
        set_reg(m, o, g, lane, old & !(0xffff << sh) | (x & 0xffff) << sh);
    }
}

/// The encoding of integer `v` (|v| <= 256) in the instruction's input type.
fn enc(name: &str, bits: usize, v: i32) -> u32 {
    let f = v as f32;
    if bits == 32 {
        f.to_bits()
    } else if name.contains("bf16") {
        f.to_bits() >> 16
    } else {
        half::f16::from_f32(f).to_bits() as u32
    }
}

/// Distinct integers per element, alternating in sign: exact in f16, bf16 and f32.
fn a_val(i: usize, k: usize, kk: usize) -> i32 {
    let v = (i * kk + k + 1) as i32;
    if v % 2 == 0 { -v } else { v }
}
fn b_val(k: usize, j: usize, n: usize) -> i32 {
    let v = (k * n + j + 1) as i32;
    if v % 3 == 0 { -v } else { v }
}

/// Runs `inst` with values placed by `maps`; returns the mismatches of D.
fn check(arch: Arch, inst: &Inst, mp: &Maps) -> Vec<String> {
    let mut m = Machine::new(arch);
    let (a, b, c, d) = (inst.src[0], inst.src[1], inst.src[2], inst.dst);
    let c_reg = matches!(c, Operand::Vgpr(_) | Operand::Agpr(_));
    for i in 0..mp.m {
        for k in 0..mp.k {
            for (lane, e) in (mp.a)(i, k) {
                put(
                    &mut m,
                    a,
                    mp.bits,
                    lane,
                    e,
                    enc(inst.name, mp.bits, a_val(i, k, mp.k)),
                );
            }
        }
    }
    for k in 0..mp.k {
        for j in 0..mp.n {
            for (lane, e) in (mp.b)(k, j) {
                put(
                    &mut m,
                    b,
                    mp.bits,
                    lane,
                    e,
                    enc(inst.name, mp.bits, b_val(k, j, mp.n)),
                );
            }
        }
    }
    // C: distinct values (when a register), D's registers poisoned first if apart.
    let c_of = |i: usize, j: usize| (i * mp.n + j) as f32 * 0.5;
    if d != c {
        for g in 0..mp.d_regs {
            for lane in 0..m.wave.lanes {
                set_reg(&mut m, d, g, lane, f32::NAN.to_bits());
            }
        }
    }
    if c_reg {
        for i in 0..mp.m {
            for j in 0..mp.n {
                let (lane, g) = (mp.d)(i, j);
                set_reg(&mut m, c, g, lane, c_of(i, j).to_bits());
            }
        }
    }
    let c_const = if c_reg {
        None
    } else {
        // An inline constant C: the shipped objects use 0 (code 128).
        assert_eq!(c, Operand::Inline(128), "{inst}: C operand");
        Some(0.0f32)
    };
    // A and B values as the instruction must see them, before the run.
    let mut want = vec![0f64; mp.m * mp.n];
    for i in 0..mp.m {
        for j in 0..mp.n {
            let mut s = c_const.unwrap_or_else(|| c_of(i, j)) as f64;
            for k in 0..mp.k {
                s += a_val(i, k, mp.k) as f64 * b_val(k, j, mp.n) as f64;
            }
            want[i * mp.n + j] = s;
        }
    }
    m.try_exec(inst)
        .unwrap_or_else(|e| panic!("{arch} {inst}: {e}"));
    let mut bad = Vec::new();
    for i in 0..mp.m {
        for j in 0..mp.n {
            let (lane, g) = (mp.d)(i, j);
            let got = f32::from_bits(reg(&m, d, g, lane)) as f64;
            if got != want[i * mp.n + j] {
                bad.push(format!(
                    "D[{i}][{j}] (lane {lane}, register +{g}) = {got}, want {}",
                    want[i * mp.n + j]
                ));
            }
        }
    }
    bad
}

/// Every matrix mnemonic of the shipped object of `arch`, with one instance (C in
/// registers and A != B where the objects have one).
fn used(arch: Arch) -> BTreeMap<&'static str, Inst> {
    let co = common::load(arch);
    let mut out: BTreeMap<&'static str, Inst> = BTreeMap::new();
    for k in &co.kernels {
        for i in decode_all(arch, &k.code, k.entry).unwrap() {
            if !(i.name.starts_with("v_mfma") || i.name.starts_with("v_wmma")) {
                continue;
            }
            let good = |i: &Inst| {
                matches!(i.src[2], Operand::Vgpr(_) | Operand::Agpr(_)) && i.src[0] != i.src[1]
            };
            let better = out.get(i.name).is_none_or(|o| !good(o) && good(&i));
            if better {
                out.insert(i.name, i);
            }
        }
    }
    out
}

fn layouts_agree(arch: Arch) {
    let used = used(arch);
    assert!(
        !used.is_empty(),
        "{arch}: no matrix instruction in the shipped object"
    );
    let mut failures = Vec::new();
    for (name, inst) in &used {
        let Some(mp) = maps(name) else {
            failures.push(format!(
                "{arch} {name}: no independent layout table (add it from CK / GPUOpen)"
            ));
            continue;
        };
        let bad = check(arch, inst, &mp);
        if bad.is_empty() {
            println!(
                "{arch} {name}: {} elements agree with the independent table",
                mp.m * mp.n
            );
        } else {
            failures.push(format!(
                "{arch} `{inst}`: {} of {} elements differ, first: {}",
                bad.len(),
                mp.m * mp.n,
                bad[0]
            ));
        }
        // Not vacuous: the same run judged with D's registers rotated by one (or, for
        // WMMA, the lane halves swapped) must disagree.
        let wrong = Maps {
            d: {
                let d = maps(name).unwrap().d;
                let regs = mp.d_regs;
                let wmma = name.starts_with("v_wmma");
                Box::new(move |i, j| {
                    let (lane, g) = d(i, j);
                    if wmma {
                        (lane ^ 16, g)
                    } else {
                        (lane, (g + 1) % regs)
                    }
                })
            },
            ..maps(name).unwrap()
        };
        if check(arch, inst, &wrong).is_empty() {
            failures.push(format!(
                "{arch} {name}: a wrong D map also agrees (the check is vacuous)"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

common::per_arch!(matrix_layouts_agree_with_ck_and_gpuopen, layouts_agree);

#[test]
fn dgemm_layout_matches_ck() {
    // v_mfma_f64_16x16x4f64 (the DGEMM of the wait-state rows; no shipped use). CK's
    // entry (`mfma_f64_16x16x4f64`: group_size 1, num_groups_per_blk 4,
    // num_regs_per_blk 4, num_threads_per_blk 16, num_input_blks 4, m/n_per_blk 16,
    // k_per_blk 1) gives D row = g * 4 + blk_id: lane j + 16 (i % 4), f64 element i / 4.
    // (The executor first had the f32 16x16 order, lane j + 16 (i / 4): this caught it.)
    let ck = |i: usize, j: usize| (j + 16 * (i % 4), i / 4);
    let mut m = Machine::new(Arch::Gfx90a);
    // A[i][k] = i*4+k+1 in lane blk_id*16 + i, B[k][j] = k*16+j+1 in lane k*16 + j.
    for l in 0..64 {
        let (blk, td) = (l / 16, l % 16);
        let a = (td * 4 + blk + 1) as f64;
        let b = (blk * 16 + td + 1) as f64;
        for (r, x) in [(0usize, a), (2, b)] {
            m.set_v(r, l, x.to_bits() as u32);
            m.set_v(r + 1, l, (x.to_bits() >> 32) as u32);
        }
    }
    // v_mfma_f64_16x16x4f64 v[8:15], v[0:1], v[2:3], 0
    m.exec(&[0xD3EE_0008, 256 | 258 << 9 | 128 << 18]);
    for i in 0..16 {
        for j in 0..16 {
            let want: f64 = (0..4)
                .map(|k| ((i * 4 + k + 1) * (k * 16 + j + 1)) as f64)
                .sum();
            let (lane, g) = ck(i, j);
            let x = m.v(8 + 2 * g, lane) as u64 | (m.v(9 + 2 * g, lane) as u64) << 32;
            assert_eq!(
                f64::from_bits(x),
                want,
                "D[{i}][{j}] lane {lane} element {g}"
            );
        }
    }
}
