//! Matrix instructions: CDNA MFMA (wave64) and RDNA3 WMMA (wave32).
//!
//! Lane layouts are those of `shared/notes/matrix-layouts.md` (AMD's matrix
//! instruction calculator and the CDNA3 ISA guide), also used by the
//! `convgrad-emu` tables, never the kernels' own fragment maps:
//! - MFMA 32x32xK: `A[i][k]` in lane `i + 32*floor(k/e)`, element `k mod e` (e = inputs
//!   per lane); `B[k][j]` likewise with j; `D[i][j]` in register
//!   `4*floor(i/8) + i mod 4`, lane `j + 32*(floor(i/4) mod 2)`.
//! - MFMA 16x16xK: `A[i][k]` in lane `i + 16*floor(k/e)`; `D[i][j]` in register
//!   `i mod 4`, lane `j + 16*floor(i/4)`.
//! - WMMA 16x16x16: row i of A in lanes i and i+16 (element k), column j of B in lanes
//!   j and j+16; `D[i][j]` in register `floor(i/2)`, lane `16*(i mod 2) + j`.
//!
//! Products are summed in f64 and rounded once to f32 (the hardware's internal order
//! and rounding are not documented; compare results with a tolerance).

use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::decode::{Inst, Operand};

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

fn mfma(c: &mut Ctx, i: &Inst) -> Result<Flow, String> {
    let n = i.name;
    let (mn, k, ty) = if n.contains("32x32x8") {
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
    if i.mods.neg_hi != 0 || i.mods.opsel != 0 || i.mods.neg != 0 {
        return Err(format!("{n} with cbsz/abid/blgp modifiers is not modelled"));
    }
    if c.wave.exec() != c.wave.lane_mask() {
        return Err(format!(
            "{n} with a partial EXEC mask 0x{:x}",
            c.wave.exec()
        ));
    }
    let e = if ty == In::F32 { 1 } else { 4 };
    let a_at = |r: usize, kk: usize| (r + mn * (kk / e), kk % e);
    let d_at = |r: usize, col: usize| {
        if mn == 32 {
            (4 * (r / 8) + r % 4, col + 32 * ((r / 4) % 2))
        } else {
            (r % 4, col + 16 * (r / 4))
        }
    };
    let mut d = vec![0f32; mn * mn];
    for r in 0..mn {
        for col in 0..mn {
            let (g, lane) = d_at(r, col);
            let mut s = acc_in(c, i.src[2], lane, g)? as f64;
            for kk in 0..k {
                let (la, ea) = a_at(r, kk);
                let (lb, eb) = a_at(col, kk);
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

fn wmma(c: &mut Ctx, i: &Inst) -> Result<Flow, String> {
    let n = i.name;
    let ty = match n {
        "v_wmma_f32_16x16x16_f16" => In::F16,
        "v_wmma_f32_16x16x16_bf16" => In::Bf16,
        _ => return Err(format!("unimplemented matrix instruction {n}")),
    };
    if i.mods.neg != 0 || i.mods.neg_hi != 0 {
        return Err(format!("{n} with neg modifiers is not modelled"));
    }
    if c.wave.lanes != 32 || c.wave.exec() != c.wave.lane_mask() {
        return Err(format!(
            "{n} needs a full wave32 (EXEC 0x{:x})",
            c.wave.exec()
        ));
    }
    // The replicas of A rows / B columns (lanes r and r+16) must agree.
    for r in 0..16 {
        for kk in 0..16 {
            for (s, what) in [(i.src[0], "A row"), (i.src[1], "B column")] {
                let (x, y) = (elem(c, s, r, kk, ty)?, elem(c, s, r + 16, kk, ty)?);
                if x.to_bits() != y.to_bits() && !(x.is_nan() && y.is_nan()) {
                    return Err(format!(
                        "{n}: {what} {r} element {kk} differs between lane {r} ({x}) and its replica lane {} ({y})",
                        r + 16
                    ));
                }
            }
        }
    }
    let mut d = [0f32; 256];
    for r in 0..16 {
        for col in 0..16 {
            let (g, lane) = (r / 2, 16 * (r % 2) + col);
            let mut s = acc_in(c, i.src[2], lane, g)? as f64;
            for kk in 0..16 {
                s += elem(c, i.src[0], r, kk, ty)? * elem(c, i.src[1], col, kk, ty)?;
            }
            d[r * 16 + col] = s as f32;
        }
    }
    for r in 0..16 {
        for col in 0..16 {
            c.set_v32k(i.dst, r / 2, 16 * (r % 2) + col, d[r * 16 + col].to_bits())?;
        }
    }
    // 16x16x16 on RDNA3: 32 cycles per wave32 instruction (estimate).
    c.counters.matrix_cycles += 32;
    Ok(Flow::Next)
}

pub(super) const HANDLERS: &[(&str, Handler)] = &[
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
    ("v_wmma_f32_16x16x16_f16", wmma),
    ("v_wmma_f32_16x16x16_bf16", wmma),
];
