//! VOP3P packed math and mixed-precision FMA (the matrix instructions are in
//! `matrix.rs`). Source selection: the low result takes half/dword `op_sel[k]` of
//! source k, the high result half/dword `op_sel_hi[k]`; `neg` / `neg_hi` negate the
//! inputs of the low / high result.

use super::mods;
use super::valu::{R, f16_bits};
use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::decode::{Inst, Operand};

/// Dword of a 64-bit source for the low (`hi = false`) or high result.
fn dword(c: &Ctx, i: &Inst, k: usize, l: usize, hi: bool) -> Result<u32, String> {
    c.uses(if hi {
        mods::opsel_hi(k)
    } else {
        mods::opsel(k)
    });
    let sel = if hi {
        i.mods.opsel_hi >> k & 1
    } else {
        i.mods.opsel >> k & 1
    };
    let v = match i.src[k] {
        Operand::Inline(_) | Operand::Literal(_) => {
            let x = c.v32(i.src[k], l, Ty::F32)?;
            x as u64 | (x as u64) << 32
        }
        o => c.v64(o, l, Ty::U64)?,
    };
    Ok((v >> (32 * sel)) as u32)
}

fn f32_in(c: &Ctx, i: &Inst, k: usize, l: usize, hi: bool) -> Result<f32, String> {
    let x = f32::from_bits(dword(c, i, k, l, hi)?);
    c.uses(if hi { mods::neg_hi(k) } else { mods::neg(k) });
    let neg = if hi { i.mods.neg_hi } else { i.mods.neg } >> k & 1 != 0;
    Ok(if neg { -x } else { x })
}

/// Packed f32 ops (gfx90a/gfx942 `v_pk_*_f32`): two f32 results in a VGPR pair.
fn pk_f32(c: &mut Ctx, i: &Inst, n: usize, f: fn(f32, f32, f32) -> f32) -> R {
    for l in c.active() {
        let mut r = [0u32; 2];
        for (h, out) in r.iter_mut().enumerate() {
            let hi = h == 1;
            let a = f32_in(c, i, 0, l, hi)?;
            let b = f32_in(c, i, 1, l, hi)?;
            let d = if n == 3 { f32_in(c, i, 2, l, hi)? } else { 0.0 };
            *out = f(a, b, d).to_bits();
        }
        c.set_v64(i.dst, l, r[0] as u64 | (r[1] as u64) << 32)?;
    }
    Ok(Flow::Next)
}

/// `v_pk_mov_b32`: D.lo = dword op_sel[0] of S0, D.hi = dword op_sel[1] of S1.
fn pk_mov_b32(c: &mut Ctx, i: &Inst) -> R {
    // op_sel_hi is no field of this instruction (the guide selects with op_sel only).
    c.uses(mods::opsel(0) | mods::opsel(1) | mods::opsel_hi(0) | mods::opsel_hi(1));
    for l in c.active() {
        let lo = c.v64(i.src[0], l, Ty::U64)? >> (32 * (i.mods.opsel & 1));
        let hi = c.v64(i.src[1], l, Ty::U64)? >> (32 * (i.mods.opsel >> 1 & 1));
        c.set_v64(i.dst, l, (lo as u32) as u64 | (hi as u32 as u64) << 32)?;
    }
    Ok(Flow::Next)
}

/// 16-bit half of a source for the low or high result.
fn half(c: &Ctx, i: &Inst, k: usize, l: usize, hi: bool, ty: Ty) -> Result<u16, String> {
    c.uses(if hi {
        mods::opsel_hi(k)
    } else {
        mods::opsel(k)
    });
    let sel = if hi {
        i.mods.opsel_hi >> k & 1
    } else {
        i.mods.opsel >> k & 1
    };
    let v = c.v32(i.src[k], l, ty)?;
    let v = if matches!(i.src[k], Operand::Inline(_) | Operand::Literal(_)) {
        v & 0xffff | v << 16
    } else {
        v
    };
    Ok((v >> (16 * sel)) as u16)
}

fn pk_u16(c: &mut Ctx, i: &Inst, f: fn(u16, u16) -> u16) -> R {
    for l in c.active() {
        let lo = f(
            half(c, i, 0, l, false, Ty::B32)?,
            half(c, i, 1, l, false, Ty::B32)?,
        );
        let hi = f(
            half(c, i, 0, l, true, Ty::B32)?,
            half(c, i, 1, l, true, Ty::B32)?,
        );
        c.set_v32(i.dst, l, lo as u32 | (hi as u32) << 16)?;
    }
    Ok(Flow::Next)
}

/// Packed f16 ops: `f` gives each half's f16 result from its inputs (as f32, which
/// holds every f16 exactly).
fn pk_f16(c: &mut Ctx, i: &Inst, n: usize, f: fn(f32, f32, f32) -> u16) -> R {
    for l in c.active() {
        let mut r = [0u16; 2];
        for (h, out) in r.iter_mut().enumerate() {
            let hi = h == 1;
            let neg = if hi { i.mods.neg_hi } else { i.mods.neg };
            let x = |k: usize| -> Result<f32, String> {
                c.uses(if hi { mods::neg_hi(k) } else { mods::neg(k) });
                let v = half::f16::from_bits(half(c, i, k, l, hi, Ty::F16)?).to_f32();
                Ok(if neg >> k & 1 != 0 { -v } else { v })
            };
            let d = if n == 3 { x(2)? } else { 0.0 };
            *out = f(x(0)?, x(1)?, d);
        }
        c.set_v32(i.dst, l, r[0] as u32 | (r[1] as u32) << 16)?;
    }
    Ok(Flow::Next)
}

/// Mixed-precision FMA input k: f16 (half op_sel[k]) when op_sel_hi[k], else f32;
/// `neg` negates, `neg_hi` takes the absolute value.
fn mix_in(c: &Ctx, i: &Inst, k: usize, l: usize) -> Result<f32, String> {
    c.uses(mods::opsel(k) | mods::opsel_hi(k) | mods::neg(k) | mods::neg_hi(k));
    let f16 = i.mods.opsel_hi >> k & 1 != 0;
    let mut x = if f16 {
        let v = c.v32(i.src[k], l, Ty::F16)?;
        half::f16::from_bits((v >> (16 * (i.mods.opsel >> k & 1))) as u16).to_f32()
    } else {
        f32::from_bits(c.v32(i.src[k], l, Ty::F32)?)
    };
    if i.mods.neg_hi >> k & 1 != 0 {
        x = x.abs();
    }
    if i.mods.neg >> k & 1 != 0 {
        x = -x;
    }
    Ok(x)
}

fn fma_mix(c: &mut Ctx, i: &Inst, out: u8) -> R {
    c.uses(mods::CLAMP);
    for l in c.active() {
        let (a, b, d) = (
            mix_in(c, i, 0, l)?,
            mix_in(c, i, 1, l)?,
            mix_in(c, i, 2, l)?,
        );
        let clamp = |r: f32| if i.mods.clamp { r.clamp(0.0, 1.0) } else { r };
        // The f16 forms round the exact a*b+d once, to f16 (no f32 step between).
        let h = || {
            let r = fma_to_f16(a, b, d);
            if i.mods.clamp {
                f16_bits(clamp(half::f16::from_bits(r).to_f32()))
            } else {
                r
            }
        };
        let v = match out {
            0 => clamp(a.mul_add(b, d)).to_bits(),
            1 => (c.v32(i.dst, l, Ty::B32)? & 0xffff_0000) | h() as u32,
            _ => (c.v32(i.dst, l, Ty::B32)? & 0xffff) | (h() as u32) << 16,
        };
        c.set_v32(i.dst, l, v)?;
    }
    Ok(Flow::Next)
}

/// `a * b + d` rounded once to f16 (round to nearest even), for f32 (or f16)
/// inputs: the product is exact in f64, the sum is rounded to odd in f64 (53 bits,
/// more than 2 * 11 + 2), and rounding that to f16 gives the correctly rounded
/// result of the exact value.
pub(super) fn fma_to_f16(a: f32, b: f32, d: f32) -> u16 {
    let p = a as f64 * b as f64;
    let d = d as f64;
    let s = p + d;
    if !s.is_finite() {
        return f64_to_f16(s);
    }
    // TwoSum: the exact error of the rounded sum.
    let bb = s - p;
    let err = (p - (s - bb)) + (d - bb);
    let bits = s.to_bits();
    let odd = if err != 0.0 && bits & 1 == 0 {
        // Step one ulp towards the exact value: the neighbour with an odd last bit.
        let up = (err > 0.0) == (s > 0.0) || s == 0.0;
        if s == 0.0 {
            err
        } else if up {
            f64::from_bits(bits + 1)
        } else {
            f64::from_bits(bits - 1)
        }
    } else {
        s
    };
    f64_to_f16(odd)
}

/// f64 -> f16 bits, rounded to nearest even in one step (a conversion through f32
/// would round twice).
fn f64_to_f16(x: f64) -> u16 {
    if x.is_nan() {
        return 0x7e00;
    }
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let ax = x.abs();
    if ax >= 65520.0 {
        return sign | 0x7c00;
    }
    if ax == 0.0 {
        return sign;
    }
    // The f16 quantum at this magnitude (2^-24 for subnormals); scaling by powers
    // of two is exact.
    let e = ((ax.to_bits() >> 52) as i32 - 1023).max(-14);
    let q = e - 10;
    let r = (ax * 2f64.powi(-q)).round_ties_even() * 2f64.powi(q);
    // `r` is an f16 value: any conversion of it is exact.
    sign | half::f16::from_f64(r).to_bits()
}

/// V_DOT2_F32_F16 (CDNA3 guide, "VOP3P Instructions"):
/// `D.f32 = S0.f16[0] * S1.f16[0] + S0.f16[1] * S1.f16[1] + S2.f32`. The f16 products are exact in f64; the sum is
/// formed in f64 and rounded once to f32 (the hardware's internal rounding is not
/// documented). Only the default source selection (op_sel 0, op_sel_hi 1 on S0/S1),
/// no neg and no clamp: anything else is an error naming the instruction.
fn dot2_f32_f16(c: &mut Ctx, i: &Inst) -> R {
    let m = &i.mods;
    if m.opsel != 0 || m.opsel_hi & 3 != 3 || m.neg != 0 || m.neg_hi != 0 || m.clamp {
        return Err(format!(
            "{}: op_sel/op_sel_hi other than the default, neg or clamp is not implemented",
            i.mnemonic()
        ));
    }
    c.uses((0..3).fold(mods::CLAMP, |a, k| {
        a | mods::opsel(k) | mods::opsel_hi(k) | mods::neg(k) | mods::neg_hi(k)
    }));
    for l in c.active() {
        let (a, b) = (c.v32(i.src[0], l, Ty::F16)?, c.v32(i.src[1], l, Ty::F16)?);
        let d = f32::from_bits(c.v32(i.src[2], l, Ty::F32)?) as f64;
        let h = |x: u32, k: u32| half::f16::from_bits((x >> (16 * k)) as u16).to_f64();
        let s = h(a, 0) * h(b, 0) + h(a, 1) * h(b, 1) + d;
        c.set_v32(i.dst, l, (s as f32).to_bits())?;
    }
    Ok(Flow::Next)
}

pub(super) const HANDLERS: &[(&str, Handler)] = &[
    ("v_dot2_f32_f16", dot2_f32_f16),
    ("v_pk_fma_f32", |c, i| pk_f32(c, i, 3, f32::mul_add)),
    ("v_pk_mul_f32", |c, i| pk_f32(c, i, 2, |a, b, _| a * b)),
    ("v_pk_add_f32", |c, i| pk_f32(c, i, 2, |a, b, _| a + b)),
    ("v_pk_mov_b32", pk_mov_b32),
    ("v_pk_mul_lo_u16", |c, i| pk_u16(c, i, u16::wrapping_mul)),
    ("v_pk_add_u16", |c, i| pk_u16(c, i, u16::wrapping_add)),
    ("v_pk_sub_u16", |c, i| pk_u16(c, i, u16::wrapping_sub)),
    ("v_pk_max_u16", |c, i| pk_u16(c, i, u16::max)),
    ("v_pk_min_u16", |c, i| pk_u16(c, i, u16::min)),
    // Fused: one rounding of the exact a*b+c (CDNA3/RDNA3 guides, V_PK_FMA_F16).
    ("v_pk_fma_f16", |c, i| pk_f16(c, i, 3, fma_to_f16)),
    // f32 holds the exact sum/product's leading 24 bits >= 2*11+2: rounding it to
    // f16 gives the correctly rounded result.
    ("v_pk_add_f16", |c, i| {
        pk_f16(c, i, 2, |a, b, _| f16_bits(a + b))
    }),
    ("v_pk_mul_f16", |c, i| {
        pk_f16(c, i, 2, |a, b, _| f16_bits(a * b))
    }),
    ("v_fma_mix_f32", |c, i| fma_mix(c, i, 0)),
    ("v_fma_mixlo_f16", |c, i| fma_mix(c, i, 1)),
    ("v_fma_mixhi_f16", |c, i| fma_mix(c, i, 2)),
];
