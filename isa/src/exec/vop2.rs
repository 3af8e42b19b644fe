//! VOP2-type operations (two sources; carries, selects, multiply-accumulates), in
//! their 32-bit, SDWA and VOP3 encodings, and the RDNA3 VOPD dual-issue pairs.

use super::valu::{R, f2, mask_in, mods, op2, op2_16, set_mask_out, src, srcf, write, writef};
use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::decode::{Inst, Operand};

/// `D = VCC[lane] ? S1 : S0` (VOP3: the mask in src2). The guides allow the float
/// input modifiers on both sources; they act on the sign bit (abs clears it, neg
/// then flips it), without any other float semantics.
fn cndmask(c: &mut Ctx, i: &Inst) -> R {
    let m = mask_in(c, i)?;
    for l in c.active() {
        let k = (m >> l & 1) as usize;
        let mut v = src(c, i, k, l, Ty::B32)?;
        let (abs, neg) = mods(c, i, k);
        if abs {
            v &= 0x7fff_ffff;
        }
        if neg {
            v ^= 0x8000_0000;
        }
        write(c, i, l, v)?;
    }
    // Both sources' modifiers are implemented, whichever lanes took them.
    mods(c, i, 0);
    mods(c, i, 1);
    c.uses(super::mods::sdwa_src(0) | super::mods::sdwa_src(1));
    Ok(Flow::Next)
}

/// Add/sub with carry-out (and optional carry-in): `f(a, b, cin) -> (d, cout)`.
fn carry(c: &mut Ctx, i: &Inst, cin: bool, f: fn(u32, u32, u32) -> (u32, bool)) -> R {
    let m = if cin { mask_in(c, i)? } else { 0 };
    let mut out = 0u64;
    for l in c.active() {
        let (a, b) = (src(c, i, 0, l, Ty::B32)?, src(c, i, 1, l, Ty::B32)?);
        let (d, co) = f(a, b, (m >> l & 1) as u32);
        write(c, i, l, d)?;
        out |= (co as u64) << l;
    }
    set_mask_out(c, i, out)?;
    Ok(Flow::Next)
}

/// `a + b`, saturating where the instruction's clamp bit is set.
fn add_u32(c: &Ctx, i: &Inst) -> fn(u32, u32) -> u32 {
    c.uses(super::mods::CLAMP);
    if i.mods.clamp {
        u32::saturating_add
    } else {
        u32::wrapping_add
    }
}

/// `a - b`, saturating at 0 where the clamp bit is set.
fn sub_u32(c: &Ctx, i: &Inst) -> fn(u32, u32) -> u32 {
    c.uses(super::mods::CLAMP);
    if i.mods.clamp {
        u32::saturating_sub
    } else {
        u32::wrapping_sub
    }
}

/// `b - a`, saturating at 0 where the clamp bit is set.
fn subrev_u32(c: &Ctx, i: &Inst) -> fn(u32, u32) -> u32 {
    c.uses(super::mods::CLAMP);
    if i.mods.clamp {
        |a: u32, b: u32| b.saturating_sub(a)
    } else {
        |a: u32, b: u32| b.wrapping_sub(a)
    }
}

fn add_c(a: u32, b: u32, ci: u32) -> (u32, bool) {
    let t = a as u64 + b as u64 + ci as u64;
    (t as u32, t >> 32 != 0)
}
fn sub_c(a: u32, b: u32, ci: u32) -> (u32, bool) {
    let t = (a as u64).wrapping_sub(b as u64).wrapping_sub(ci as u64);
    (t as u32, b as u64 + ci as u64 > a as u64)
}

/// `D = S0 * S1 + D` (mac/fmac) in f32.
fn fmac(c: &mut Ctx, i: &Inst) -> R {
    for l in c.active() {
        let (a, b) = (srcf(c, i, 0, l)?, srcf(c, i, 1, l)?);
        let d = f32::from_bits(c.v32(i.dst, l, Ty::F32)?);
        writef(c, i, l, a.mul_add(b, d))?;
    }
    Ok(Flow::Next)
}

/// `D = S0 * K + S1` (madmk/fmamk) and `D = S0 * S1 + K` (madak/fmaak).
fn fma_k(c: &mut Ctx, i: &Inst, k_mul: bool) -> R {
    let k = f32::from_bits(i.imm as u32);
    for l in c.active() {
        let (a, b) = (srcf(c, i, 0, l)?, srcf(c, i, 1, l)?);
        writef(
            c,
            i,
            l,
            if k_mul {
                a.mul_add(k, b)
            } else {
                a.mul_add(b, k)
            },
        )?;
    }
    Ok(Flow::Next)
}

fn mul_u24(a: u32, b: u32) -> u32 {
    (a & 0xff_ffff).wrapping_mul(b & 0xff_ffff)
}

/// One half of a VOPD pair: its result for one lane.
fn vopd_half(
    c: &Ctx,
    name: &str,
    dst: Operand,
    s0: Operand,
    s1: Operand,
    k: u32,
    l: usize,
) -> Result<u32, String> {
    let f = |o: Operand| c.v32(o, l, Ty::F32).map(f32::from_bits);
    let u = |o: Operand| c.v32(o, l, Ty::B32);
    Ok(match name {
        "v_dual_mov_b32" => u(s0)?,
        "v_dual_add_f32" => (f(s0)? + f(s1)?).to_bits(),
        "v_dual_sub_f32" => (f(s0)? - f(s1)?).to_bits(),
        "v_dual_subrev_f32" => (f(s1)? - f(s0)?).to_bits(),
        "v_dual_mul_f32" => (f(s0)? * f(s1)?).to_bits(),
        "v_dual_fmac_f32" => f(s0)?.mul_add(f(s1)?, f(dst)?).to_bits(),
        "v_dual_fmaak_f32" => f(s0)?.mul_add(f(s1)?, f32::from_bits(k)).to_bits(),
        "v_dual_fmamk_f32" => f(s0)?.mul_add(f32::from_bits(k), f(s1)?).to_bits(),
        // GFX12 names the same operations v_dual_{max,min}_num_f32.
        "v_dual_max_f32" | "v_dual_max_num_f32" => f(s0)?.max(f(s1)?).to_bits(),
        "v_dual_min_f32" | "v_dual_min_num_f32" => f(s0)?.min(f(s1)?).to_bits(),
        "v_dual_cndmask_b32" => {
            if c.wave.vcc() >> l & 1 != 0 {
                u(s1)?
            } else {
                u(s0)?
            }
        }
        "v_dual_add_nc_u32" => u(s0)?.wrapping_add(u(s1)?),
        "v_dual_lshlrev_b32" => u(s1)? << (u(s0)? & 31),
        "v_dual_and_b32" => u(s0)? & u(s1)?,
        n => return Err(format!("unimplemented VOPD operation {n}")),
    })
}

/// VOPD: both halves read their sources before either writes.
fn vopd(c: &mut Ctx, i: &Inst) -> R {
    let y = i.vopd_y.as_ref().ok_or("VOPD without a Y half")?;
    let k = i.imm as u32;
    for l in c.active() {
        let x = vopd_half(c, i.name, i.dst, i.src[0], i.src[1], k, l)?;
        let yv = vopd_half(c, y.name, y.dst, y.src[0], y.src[1], k, l)?;
        c.set_v32(i.dst, l, x)?;
        c.set_v32(y.dst, l, yv)?;
    }
    Ok(Flow::Next)
}

pub(super) const HANDLERS: &[(&str, Handler)] = &[
    ("v_cndmask_b32", cndmask),
    ("v_add_f32", |c, i| f2(c, i, |a, b| a + b)),
    ("v_sub_f32", |c, i| f2(c, i, |a, b| a - b)),
    ("v_subrev_f32", |c, i| f2(c, i, |a, b| b - a)),
    ("v_mul_f32", |c, i| f2(c, i, |a, b| a * b)),
    ("v_min_f32", |c, i| f2(c, i, f32::min)),
    ("v_max_f32", |c, i| f2(c, i, f32::max)),
    ("v_mul_i32_i24", |c, i| {
        op2(c, i, |a, b| {
            (((a << 8) as i32 >> 8) as i64 * ((b << 8) as i32 >> 8) as i64) as u32
        })
    }),
    ("v_mul_u32_u24", |c, i| op2(c, i, mul_u24)),
    ("v_mul_hi_u32_u24", |c, i| {
        op2(c, i, |a, b| {
            (((a & 0xff_ffff) as u64 * (b & 0xff_ffff) as u64) >> 32) as u32
        })
    }),
    ("v_min_i32", |c, i| {
        op2(c, i, |a, b| (a as i32).min(b as i32) as u32)
    }),
    ("v_max_i32", |c, i| {
        op2(c, i, |a, b| (a as i32).max(b as i32) as u32)
    }),
    ("v_min_u32", |c, i| op2(c, i, u32::min)),
    ("v_max_u32", |c, i| op2(c, i, u32::max)),
    ("v_lshrrev_b32", |c, i| op2(c, i, |a, b| b >> (a & 31))),
    ("v_ashrrev_i32", |c, i| {
        op2(c, i, |a, b| ((b as i32) >> (a & 31)) as u32)
    }),
    ("v_lshlrev_b32", |c, i| op2(c, i, |a, b| b << (a & 31))),
    ("v_and_b32", |c, i| op2(c, i, |a, b| a & b)),
    ("v_or_b32", |c, i| op2(c, i, |a, b| a | b)),
    ("v_xor_b32", |c, i| op2(c, i, |a, b| a ^ b)),
    ("v_xnor_b32", |c, i| op2(c, i, |a, b| !(a ^ b))),
    // VOP3's clamp bit saturates unsigned integer adds and subtracts (LLVM
    // lowers `usub.sat`, Rust's `saturating_sub`/`max(1) - 1`, to it).
    ("v_add_u32", |c, i| op2(c, i, add_u32(c, i))),
    ("v_sub_u32", |c, i| op2(c, i, sub_u32(c, i))),
    ("v_subrev_u32", |c, i| op2(c, i, subrev_u32(c, i))),
    ("v_add_nc_u32", |c, i| op2(c, i, add_u32(c, i))),
    ("v_sub_nc_u32", |c, i| op2(c, i, sub_u32(c, i))),
    ("v_subrev_nc_u32", |c, i| op2(c, i, subrev_u32(c, i))),
    ("v_add_co_u32", |c, i| carry(c, i, false, add_c)),
    ("v_sub_co_u32", |c, i| carry(c, i, false, sub_c)),
    ("v_subrev_co_u32", |c, i| {
        carry(c, i, false, |a, b, ci| sub_c(b, a, ci))
    }),
    ("v_addc_co_u32", |c, i| carry(c, i, true, add_c)),
    ("v_subb_co_u32", |c, i| carry(c, i, true, sub_c)),
    ("v_subbrev_co_u32", |c, i| {
        carry(c, i, true, |a, b, ci| sub_c(b, a, ci))
    }),
    ("v_add_co_ci_u32", |c, i| carry(c, i, true, add_c)),
    ("v_sub_co_ci_u32", |c, i| carry(c, i, true, sub_c)),
    ("v_subrev_co_ci_u32", |c, i| {
        carry(c, i, true, |a, b, ci| sub_c(b, a, ci))
    }),
    ("v_mac_f32", fmac),
    ("v_fmac_f32", fmac),
    ("v_madmk_f32", |c, i| fma_k(c, i, true)),
    ("v_fmamk_f32", |c, i| fma_k(c, i, true)),
    ("v_madak_f32", |c, i| fma_k(c, i, false)),
    ("v_fmaak_f32", |c, i| fma_k(c, i, false)),
    ("v_add_u16", |c, i| op2_16(c, i, u16::wrapping_add)),
    ("v_sub_u16", |c, i| op2_16(c, i, u16::wrapping_sub)),
    ("v_subrev_u16", |c, i| {
        op2_16(c, i, |a, b| b.wrapping_sub(a))
    }),
    ("v_add_nc_u16", |c, i| op2_16(c, i, u16::wrapping_add)),
    ("v_sub_nc_u16", |c, i| op2_16(c, i, u16::wrapping_sub)),
    ("v_mul_lo_u16", |c, i| op2_16(c, i, u16::wrapping_mul)),
    ("v_lshlrev_b16", |c, i| op2_16(c, i, |a, b| b << (a & 15))),
    ("v_lshrrev_b16", |c, i| op2_16(c, i, |a, b| b >> (a & 15))),
    ("v_max_u16", |c, i| op2_16(c, i, u16::max)),
    ("v_min_u16", |c, i| op2_16(c, i, u16::min)),
    ("v_max_i16", |c, i| {
        op2_16(c, i, |a, b| (a as i16).max(b as i16) as u16)
    }),
    ("v_min_i16", |c, i| {
        op2_16(c, i, |a, b| (a as i16).min(b as i16) as u16)
    }),
    ("v_and_b16", |c, i| op2_16(c, i, |a, b| a & b)),
    ("v_or_b16", |c, i| op2_16(c, i, |a, b| a | b)),
    ("v_xor_b16", |c, i| op2_16(c, i, |a, b| a ^ b)),
    ("v_dual_fmac_f32", vopd),
    ("v_dual_fmaak_f32", vopd),
    ("v_dual_fmamk_f32", vopd),
    ("v_dual_mul_f32", vopd),
    ("v_dual_add_f32", vopd),
    ("v_dual_sub_f32", vopd),
    ("v_dual_subrev_f32", vopd),
    ("v_dual_mov_b32", vopd),
    ("v_dual_cndmask_b32", vopd),
    ("v_dual_max_f32", vopd),
    ("v_dual_min_f32", vopd),
    // Y-only operations (listed so that coverage reports them as implemented).
    ("v_dual_add_nc_u32", vopd),
    ("v_dual_lshlrev_b32", vopd),
    ("v_dual_and_b32", vopd),
];
