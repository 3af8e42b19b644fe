//! VOP3P packed math and mixed-precision FMA (the matrix instructions are in
//! `matrix.rs`). Source selection: the low result takes half/dword `op_sel[k]` of
//! source k, the high result half/dword `op_sel_hi[k]`; `neg` / `neg_hi` negate the
//! inputs of the low / high result.

use super::valu::{R, f16_bits};
use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::decode::{Inst, Operand};

/// Dword of a 64-bit source for the low (`hi = false`) or high result.
fn dword(c: &Ctx, i: &Inst, k: usize, l: usize, hi: bool) -> Result<u32, String> {
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
    for l in c.active() {
        let lo = c.v64(i.src[0], l, Ty::U64)? >> (32 * (i.mods.opsel & 1));
        let hi = c.v64(i.src[1], l, Ty::U64)? >> (32 * (i.mods.opsel >> 1 & 1));
        c.set_v64(i.dst, l, (lo as u32) as u64 | (hi as u32 as u64) << 32)?;
    }
    Ok(Flow::Next)
}

/// 16-bit half of a source for the low or high result.
fn half(c: &Ctx, i: &Inst, k: usize, l: usize, hi: bool, ty: Ty) -> Result<u16, String> {
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

fn pk_f16(c: &mut Ctx, i: &Inst, n: usize, f: fn(f32, f32, f32) -> f32) -> R {
    for l in c.active() {
        let mut r = [0u16; 2];
        for (h, out) in r.iter_mut().enumerate() {
            let hi = h == 1;
            let neg = if hi { i.mods.neg_hi } else { i.mods.neg };
            let x = |k: usize| -> Result<f32, String> {
                let v = half::f16::from_bits(half(c, i, k, l, hi, Ty::F16)?).to_f32();
                Ok(if neg >> k & 1 != 0 { -v } else { v })
            };
            let d = if n == 3 { x(2)? } else { 0.0 };
            *out = f16_bits(f(x(0)?, x(1)?, d));
        }
        c.set_v32(i.dst, l, r[0] as u32 | (r[1] as u32) << 16)?;
    }
    Ok(Flow::Next)
}

/// Mixed-precision FMA input k: f16 (half op_sel[k]) when op_sel_hi[k], else f32;
/// `neg` negates, `neg_hi` takes the absolute value.
fn mix_in(c: &Ctx, i: &Inst, k: usize, l: usize) -> Result<f32, String> {
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
    for l in c.active() {
        let r = mix_in(c, i, 0, l)?.mul_add(mix_in(c, i, 1, l)?, mix_in(c, i, 2, l)?);
        let r = if i.mods.clamp { r.clamp(0.0, 1.0) } else { r };
        let v = match out {
            0 => r.to_bits(),
            1 => (c.v32(i.dst, l, Ty::B32)? & 0xffff_0000) | f16_bits(r) as u32,
            _ => (c.v32(i.dst, l, Ty::B32)? & 0xffff) | (f16_bits(r) as u32) << 16,
        };
        c.set_v32(i.dst, l, v)?;
    }
    Ok(Flow::Next)
}

pub(super) const HANDLERS: &[(&str, Handler)] = &[
    ("v_pk_fma_f32", |c, i| pk_f32(c, i, 3, f32::mul_add)),
    ("v_pk_mul_f32", |c, i| pk_f32(c, i, 2, |a, b, _| a * b)),
    ("v_pk_add_f32", |c, i| pk_f32(c, i, 2, |a, b, _| a + b)),
    ("v_pk_mov_b32", pk_mov_b32),
    ("v_pk_mul_lo_u16", |c, i| pk_u16(c, i, u16::wrapping_mul)),
    ("v_pk_add_u16", |c, i| pk_u16(c, i, u16::wrapping_add)),
    ("v_pk_sub_u16", |c, i| pk_u16(c, i, u16::wrapping_sub)),
    ("v_pk_max_u16", |c, i| pk_u16(c, i, u16::max)),
    ("v_pk_min_u16", |c, i| pk_u16(c, i, u16::min)),
    ("v_pk_fma_f16", |c, i| pk_f16(c, i, 3, f32::mul_add)),
    ("v_pk_add_f16", |c, i| pk_f16(c, i, 2, |a, b, _| a + b)),
    ("v_pk_mul_f16", |c, i| pk_f16(c, i, 2, |a, b, _| a * b)),
    ("v_fma_mix_f32", |c, i| fma_mix(c, i, 0)),
    ("v_fma_mixlo_f16", |c, i| fma_mix(c, i, 1)),
    ("v_fma_mixhi_f16", |c, i| fma_mix(c, i, 2)),
];
