//! Matrix instructions: CDNA MFMA (wave64) and RDNA3 WMMA (wave32).
//!
//! Lane layouts of the 16-bit instructions come from the emulator's vendor tables
//! (`convgrad_emu::matrix::MatrixOp::{a,b,d}_slot`, from `shared/notes/matrix-layouts.md`:
//! AMD's matrix instruction calculator and the CDNA3 ISA guide), never from the
//! kernels' own fragment maps. The f32 MFMAs, which the emulator does not model, follow
//! the same documents: `A[i][k]` in lane `i + m*k`, `B[k][j]` in lane `j + m*k`, `D` as
//! for the 16-bit MFMA of the same m.
//!
//! Products are summed in f64 and rounded once to f32 (the hardware's internal order
//! and rounding are not documented; compare results with a tolerance).

use super::mods;
use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::decode::{Inst, Operand};
use convgrad_emu::matrix::{MatrixOp, Slot};

/// The emulator's instruction (and lane tables) for a 16-bit MFMA or WMMA mnemonic.
fn table(n: &str) -> Option<MatrixOp> {
    use MatrixOp::*;
    let bf = n.contains("bf16");
    Some(if n.starts_with("v_wmma_f32_16x16x16") {
        if bf {
            Wmma16x16x16Bf16
        } else {
            Wmma16x16x16F16
        }
    } else if n.contains("32x32x16_") {
        if bf { Mfma32x32x16Bf16 } else { Mfma32x32x16F16 }
    } else if n.contains("16x16x32_") {
        if bf { Mfma16x16x32Bf16 } else { Mfma16x16x32F16 }
    } else if n.contains("32x32x8") {
        if bf { Mfma32x32x8Bf16 } else { Mfma32x32x8F16 }
    } else if n.contains("16x16x16") {
        if bf {
            Mfma16x16x16Bf16
        } else {
            Mfma16x16x16F16
        }
    } else {
        return None;
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum In {
    F16,
    Bf16,
    F32,
}

fn elem(c: &Ctx, o: Operand, lane: usize, e: usize, ty: In) -> Result<f64, String> {
    Ok(match ty {
        In::F32 => f32::from_bits(c.v32k(o, e, lane, Ty::F32)?) as f64,
        In::F16 | In::Bf16 => {
            let w = c.v32k(o, e / 2, lane, Ty::B32)?;
            let h = (w >> (16 * (e % 2))) as u16;
            if ty == In::F16 {
                half::f16::from_bits(h).to_f64()
            } else {
                f32::from_bits((h as u32) << 16) as f64
            }
        }
    })
}

/// Accumulator input C: registers, or an inline constant (e.g. 0) for every element.
fn acc_in(c: &Ctx, o: Operand, lane: usize, g: usize) -> Result<f32, String> {
    match o {
        Operand::Vgpr(_) | Operand::Agpr(_) => Ok(f32::from_bits(c.v32k(o, g, lane, Ty::F32)?)),
        o => Ok(f32::from_bits(c.s32(o, Ty::F32)?)),
    }
}

/// Every neg / neg_hi bit.
const ALL_NEG: u32 = mods::neg(0)
    | mods::neg(1)
    | mods::neg(2)
    | mods::neg_hi(0)
    | mods::neg_hi(1)
    | mods::neg_hi(2);
/// Every op_sel bit.
const ALL_OPSEL: u32 = mods::opsel(0) | mods::opsel(1) | mods::opsel(2) | mods::opsel(3);

fn mfma(c: &mut Ctx, i: &Inst) -> Result<Flow, String> {
    let n = i.name;
    let bf = if n.contains("bf16") { In::Bf16 } else { In::F16 };
    let (mn, k, ty) = if n.contains("32x32x16_") {
        (32, 16, bf)
    } else if n.contains("16x16x32_") {
        (16, 32, bf)
    } else if n.contains("32x32x8") {
        (
            32,
            8,
            if n.contains("bf16") {
                In::Bf16
            } else {
                In::F16
            },
        )
    } else if n.contains("16x16x16") {
        (
            16,
            16,
            if n.contains("bf16") {
                In::Bf16
            } else {
                In::F16
            },
        )
    } else if n.contains("32x32x2") && n.ends_with("f32") {
        (32, 2, In::F32)
    } else if n.contains("16x16x4") && n.ends_with("f32") && !n.contains("4b") {
        (16, 4, In::F32)
    } else {
        return Err(format!("unimplemented matrix instruction {n}"));
    };
    // Consulted here: any of them set is an error below.
    c.uses(ALL_NEG | ALL_OPSEL);
    if i.mods.neg_hi != 0 || i.mods.opsel != 0 || i.mods.neg != 0 {
        return Err(format!("{n} with cbsz/abid/blgp modifiers is not modelled"));
    }
    if c.wave.exec() != c.wave.lane_mask() {
        return Err(format!(
            "{n} with a partial EXEC mask 0x{:x}",
            c.wave.exec()
        ));
    }
    // Where A[i][k], B[k][j] and D[i][j] live: (lane, element).
    let op = table(n);
    let at = |s: Slot| (s.lane as usize, s.elem as usize);
    let a_at = |r: usize, kk: usize| match op {
        Some(op) => at(op.a_slot(r as u32, kk as u32)),
        None => (r + mn * kk, 0),
    };
    let b_at = |kk: usize, col: usize| match op {
        Some(op) => at(op.b_slot(kk as u32, col as u32)),
        None => (col + mn * kk, 0),
    };
    let d_op = op.unwrap_or(if mn == 32 {
        MatrixOp::Mfma32x32x8F16
    } else {
        MatrixOp::Mfma16x16x16F16
    });
    let d_at = |r: usize, col: usize| {
        let (lane, g) = at(d_op.d_slot(r as u32, col as u32));
        (g, lane)
    };
    let mut d = vec![0f32; mn * mn];
    for r in 0..mn {
        for col in 0..mn {
            let (g, lane) = d_at(r, col);
            let mut s = acc_in(c, i.src[2], lane, g)? as f64;
            for kk in 0..k {
                let (la, ea) = a_at(r, kk);
                let (lb, eb) = b_at(kk, col);
                s += elem(c, i.src[0], la, ea, ty)? * elem(c, i.src[1], lb, eb, ty)?;
            }
            d[r * mn + col] = s as f32;
        }
    }
    for r in 0..mn {
        for col in 0..mn {
            let (g, lane) = d_at(r, col);
            c.set_v32k(i.dst, g, lane, d[r * mn + col].to_bits())?;
        }
    }
    // Busy cycles: 16 passes (64 cycles) for 32x32x8 and 32x32x2, 8 passes (32 cycles)
    // for 16x16x16 and 16x16x4 (CDNA2/CDNA3 guides' MFMA tables).
    c.counters.matrix_cycles += if mn == 32 { 64 } else { 32 };
    Ok(Flow::Next)
}

/// `v_mfma_f64_16x16x4f64` (DGEMM), on the layout of the CDNA2/CDNA3 guides' DGEMM
/// tables and AMD's matrix instruction calculator: `A[i][k]` in lane `i + 16k`,
/// `B[k][j]` in lane `j + 16k` (one f64 in a register pair each), `D[i][j]` in lane
/// `j + 16(i%4)`, f64 element `i / 4` (registers `2(i/4)`, `2(i/4)+1`): unlike the f32
/// 16x16 MFMAs, consecutive rows are in consecutive lane groups (CK's
/// `mfma_type<mfma_f64_16x16x4f64>`: group_size 1, num_groups_per_blk 4; checked in
/// `tests/layouts.rs`). Products summed in f64, written as f64.
fn dgemm(c: &mut Ctx, i: &Inst) -> Result<Flow, String> {
    let n = i.name;
    c.uses(ALL_NEG | ALL_OPSEL);
    if i.mods.neg_hi != 0 || i.mods.opsel != 0 || i.mods.neg != 0 {
        return Err(format!(
            "{n} with cbsz/abid/blgp/neg modifiers is not modelled"
        ));
    }
    if c.wave.exec() != c.wave.lane_mask() {
        return Err(format!(
            "{n} with a partial EXEC mask 0x{:x}",
            c.wave.exec()
        ));
    }
    let f64_at = |c: &Ctx, o: Operand, lane: usize, e: usize| -> Result<f64, String> {
        let lo = c.v32k(o, 2 * e, lane, Ty::B32)? as u64;
        let hi = c.v32k(o, 2 * e + 1, lane, Ty::B32)? as u64;
        Ok(f64::from_bits(hi << 32 | lo))
    };
    let mut d = [0f64; 256];
    for r in 0..16 {
        for col in 0..16 {
            let (lane, g) = (col + 16 * (r % 4), r / 4);
            let mut s = match i.src[2] {
                Operand::Vgpr(_) | Operand::Agpr(_) => f64_at(c, i.src[2], lane, g)?,
                o => c.s64(o, Ty::F64).map(f64::from_bits)?,
            };
            for kk in 0..4 {
                s += f64_at(c, i.src[0], r + 16 * kk, 0)? * f64_at(c, i.src[1], col + 16 * kk, 0)?;
            }
            d[r * 16 + col] = s;
        }
    }
    for r in 0..16 {
        for col in 0..16 {
            let (lane, g) = (col + 16 * (r % 4), r / 4);
            let b = d[r * 16 + col].to_bits();
            c.set_v32k(i.dst, 2 * g, lane, b as u32)?;
            c.set_v32k(i.dst, 2 * g + 1, lane, (b >> 32) as u32)?;
        }
    }
    // 8 passes (SISchedule.td Write8PassDGEMM): 32 cycles.
    c.counters.matrix_cycles += 32;
    Ok(Flow::Next)
}

fn wmma(c: &mut Ctx, i: &Inst) -> Result<Flow, String> {
    if c.arch.gfx12() {
        return super::gfx12::wmma(c, i);
    }
    let n = i.name;
    let ty = match n {
        "v_wmma_f32_16x16x16_f16" => In::F16,
        "v_wmma_f32_16x16x16_bf16" => In::Bf16,
        _ => return Err(format!("unimplemented matrix instruction {n}")),
    };
    c.uses(ALL_NEG);
    if i.mods.neg != 0 || i.mods.neg_hi != 0 {
        return Err(format!("{n} with neg modifiers is not modelled"));
    }
    if c.wave.lanes != 32 || c.wave.exec() != c.wave.lane_mask() {
        return Err(format!(
            "{n} needs a full wave32 (EXEC 0x{:x})",
            c.wave.exec()
        ));
    }
    let op = table(n).expect("a WMMA mnemonic");
    let at = |s: Slot| (s.lane as usize, s.elem as usize);
    // The replicas of A rows / B columns (lanes r and r+16) must agree.
    for r in 0..16u32 {
        for kk in 0..16u32 {
            let pairs = [
                (i.src[0], "A row", op.a_slot(r, kk), op.a_replica(r, kk)),
                (i.src[1], "B column", op.b_slot(kk, r), op.b_replica(kk, r)),
            ];
            for (s, what, first, second) in pairs {
                let Some(second) = second else { continue };
                let ((l0, e0), (l1, e1)) = (at(first), at(second));
                let (x, y) = (elem(c, s, l0, e0, ty)?, elem(c, s, l1, e1, ty)?);
                if x.to_bits() != y.to_bits() && !(x.is_nan() && y.is_nan()) {
                    return Err(format!(
                        "{n}: {what} {r} element {kk} differs between lane {l0} ({x}) and its replica lane {l1} ({y})"
                    ));
                }
            }
        }
    }
    let mut d = [0f32; 256];
    for r in 0..16u32 {
        for col in 0..16u32 {
            let (lane, g) = at(op.d_slot(r, col));
            let mut s = acc_in(c, i.src[2], lane, g)? as f64;
            for kk in 0..16u32 {
                let ((la, ea), (lb, eb)) = (at(op.a_slot(r, kk)), at(op.b_slot(kk, col)));
                s += elem(c, i.src[0], la, ea, ty)? * elem(c, i.src[1], lb, eb, ty)?;
            }
            d[(r * 16 + col) as usize] = s as f32;
        }
    }
    for r in 0..16u32 {
        for col in 0..16u32 {
            let (lane, g) = at(op.d_slot(r, col));
            c.set_v32k(i.dst, g, lane, d[(r * 16 + col) as usize].to_bits())?;
        }
    }
    // 16x16x16 on RDNA3: 32 cycles per wave32 instruction (estimate).
    c.counters.matrix_cycles += 32;
    Ok(Flow::Next)
}

pub(super) const HANDLERS: &[(&str, Handler)] = &[
    ("v_mfma_f32_32x32x16_f16", mfma),
    ("v_mfma_f32_32x32x16_bf16", mfma),
    ("v_mfma_f32_16x16x32_f16", mfma),
    ("v_mfma_f32_16x16x32_bf16", mfma),
    ("v_mfma_f32_32x32x8f16", mfma),
    ("v_mfma_f32_32x32x8_f16", mfma),
    ("v_mfma_f32_16x16x16f16", mfma),
    ("v_mfma_f32_16x16x16_f16", mfma),
    ("v_mfma_f32_32x32x8bf16_1k", mfma),
    ("v_mfma_f32_32x32x8_bf16", mfma),
    ("v_mfma_f32_16x16x16bf16_1k", mfma),
    ("v_mfma_f32_16x16x16_bf16", mfma),
    ("v_mfma_f32_32x32x2f32", mfma),
    ("v_mfma_f32_32x32x2_f32", mfma),
    ("v_mfma_f32_16x16x4f32", mfma),
    ("v_mfma_f32_16x16x4_f32", mfma),
    ("v_mfma_f64_16x16x4f64", dgemm),
    ("v_mfma_f64_16x16x4_f64", dgemm),
    ("v_wmma_f32_16x16x16_f16", wmma),
    ("v_wmma_f32_16x16x16_bf16", wmma),
];
