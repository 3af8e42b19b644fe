//! VOP3-only operations (three sources, 64-bit results, lane access).

use super::mods;
use super::valu::{R, f3, op2, op3, op3_16, src, src16, write};
use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::decode::Inst;

fn mad_u64_u32(c: &mut Ctx, i: &Inst, signed: bool) -> R {
    let mut carry = 0u64;
    for l in c.active() {
        let a = c.v32(i.src[0], l, Ty::B32)?;
        let b = c.v32(i.src[1], l, Ty::B32)?;
        let d = c.v64(i.src[2], l, if signed { Ty::I64 } else { Ty::U64 })?;
        let (r, co) = if signed {
            let p = a as i32 as i128 * b as i32 as i128 + d as i64 as i128;
            (p as u64, p > i64::MAX as i128 || p < i64::MIN as i128)
        } else {
            let p = a as u128 * b as u128 + d as u128;
            (p as u64, p >> 64 != 0)
        };
        c.set_v64(i.dst, l, r)?;
        carry |= (co as u64) << l;
    }
    c.set_mask(i.sdst, carry)?;
    Ok(Flow::Next)
}

/// 64-bit shifts: `D = S1 (64-bit) shifted by S0[5:0]`.
fn shift64(c: &mut Ctx, i: &Inst, f: fn(u64, u32) -> u64) -> R {
    for l in c.active() {
        let s = c.v32(i.src[0], l, Ty::B32)? & 63;
        let v = c.v64(i.src[1], l, Ty::U64)?;
        c.set_v64(i.dst, l, f(v, s))?;
    }
    Ok(Flow::Next)
}

/// `v_fma_f64`: `D = S0 * S1 + S2` fused, in f64 (no modifiers: a set one is rejected
/// by the modifier check). No shipped kernel uses it; the DGEMM wait-state rows do.
fn fma_f64(c: &mut Ctx, i: &Inst) -> R {
    for l in c.active() {
        let a = f64::from_bits(c.v64(i.src[0], l, Ty::F64)?);
        let b = f64::from_bits(c.v64(i.src[1], l, Ty::F64)?);
        let d = f64::from_bits(c.v64(i.src[2], l, Ty::F64)?);
        c.set_v64(i.dst, l, a.mul_add(b, d).to_bits())?;
    }
    Ok(Flow::Next)
}

/// gfx942 `v_lshl_add_u64`: `D = (S0 << S1[2:0]) + S2`, 64-bit.
fn lshl_add_u64(c: &mut Ctx, i: &Inst) -> R {
    for l in c.active() {
        let a = c.v64(i.src[0], l, Ty::U64)?;
        let s = c.v32(i.src[1], l, Ty::B32)? & 7;
        let b = c.v64(i.src[2], l, Ty::U64)?;
        c.set_v64(i.dst, l, (a << s).wrapping_add(b))?;
    }
    Ok(Flow::Next)
}

/// `v_perm_b32`: each result byte picks a byte of {S0, S1} (S1 = bytes 0-3) by the
/// selector byte of S2; 8-11 replicate a sign bit, 12 gives 0x00, 13-15 0xff.
fn perm(a: u32, b: u32, s: u32) -> u32 {
    let v = (a as u64) << 32 | b as u64;
    let sign = |x: u32, bit: u32| if x >> bit & 1 != 0 { 0xff } else { 0 };
    let mut d = 0u32;
    for k in 0..4 {
        let sel = (s >> (8 * k)) & 0xff;
        let byte = match sel {
            0..=7 => (v >> (8 * sel)) as u8,
            8 => sign(b, 15),
            9 => sign(b, 31),
            10 => sign(a, 15),
            11 => sign(a, 31),
            12 => 0,
            _ => 0xff,
        };
        d |= (byte as u32) << (8 * k);
    }
    d
}

fn bfe(v: u32, off: u32, width: u32, signed: bool) -> u32 {
    let (off, width) = (off & 31, width & 31);
    if width == 0 {
        return 0;
    }
    let x = (v >> off) & ((1u32 << width) - 1);
    if signed && x >> (width - 1) & 1 != 0 {
        x | !((1u32 << width) - 1)
    } else {
        x
    }
}

fn med3<T: PartialOrd + Copy>(a: T, b: T, c: T) -> T {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    if c < lo {
        lo
    } else if c > hi {
        hi
    } else {
        c
    }
}

fn pack_b32_f16(c: &mut Ctx, i: &Inst) -> R {
    for l in c.active() {
        let lo = src16(c, i, 0, l, Ty::F16)?;
        let hi = src16(c, i, 1, l, Ty::F16)?;
        let (lo, hi) = (neg16(c, i, 0, lo), neg16(c, i, 1, hi));
        write(c, i, l, lo as u32 | (hi as u32) << 16)?;
    }
    Ok(Flow::Next)
}

fn neg16(c: &Ctx, i: &Inst, k: usize, v: u16) -> u16 {
    c.uses(mods::abs(k) | mods::neg(k));
    let mut v = v;
    if i.mods.abs >> k & 1 != 0 {
        v &= 0x7fff;
    }
    if i.mods.neg >> k & 1 != 0 {
        v ^= 0x8000;
    }
    v
}

fn readlane(c: &mut Ctx, i: &Inst) -> R {
    let lane = c.s32(i.src[1], Ty::B32)? as usize % c.wave.lanes;
    let v = c.v32(i.src[0], lane, Ty::B32)?;
    c.set_s32(i.dst, v)?;
    Ok(Flow::Next)
}

fn writelane(c: &mut Ctx, i: &Inst) -> R {
    let v = c.s32(i.src[0], Ty::B32)?;
    let lane = c.s32(i.src[1], Ty::B32)? as usize % c.wave.lanes;
    c.set_v32(i.dst, lane, v)?;
    Ok(Flow::Next)
}

fn mbcnt(c: &mut Ctx, i: &Inst, hi: bool) -> R {
    for l in c.active() {
        let m = c.v32(i.src[0], l, Ty::B32)?;
        let acc = c.v32(i.src[1], l, Ty::B32)?;
        let lanes_below = if hi { l.saturating_sub(32) } else { l.min(32) } as u32;
        let mask = if lanes_below >= 32 {
            u32::MAX
        } else {
            (1u32 << lanes_below) - 1
        };
        write(c, i, l, (m & mask).count_ones() + acc)?;
    }
    Ok(Flow::Next)
}

pub(super) const HANDLERS: &[(&str, Handler)] = &[
    ("v_mad_u64_u32", |c, i| mad_u64_u32(c, i, false)),
    ("v_mad_i64_i32", |c, i| mad_u64_u32(c, i, true)),
    // Two sources: the src2 field of these VOP3 forms is not an operand (reading
    // it would read whatever register its bits name).
    ("v_mul_lo_u32", |c, i| op2(c, i, |a, b| a.wrapping_mul(b))),
    ("v_mul_hi_u32", |c, i| {
        op2(c, i, |a, b| ((a as u64 * b as u64) >> 32) as u32)
    }),
    ("v_mul_hi_i32", |c, i| {
        op2(c, i, |a, b| {
            ((a as i32 as i64 * b as i32 as i64) >> 32) as u32
        })
    }),
    ("v_mad_u32_u24", |c, i| {
        op3(c, i, |a, b, d| {
            (a & 0xff_ffff).wrapping_mul(b & 0xff_ffff).wrapping_add(d)
        })
    }),
    ("v_mad_i32_i24", |c, i| {
        op3(c, i, |a, b, d| {
            (((a << 8) as i32 >> 8).wrapping_mul((b << 8) as i32 >> 8) as u32).wrapping_add(d)
        })
    }),
    ("v_lshl_add_u32", |c, i| {
        op3(c, i, |a, b, d| (a << (b & 31)).wrapping_add(d))
    }),
    ("v_add_lshl_u32", |c, i| {
        op3(c, i, |a, b, d| a.wrapping_add(b) << (d & 31))
    }),
    ("v_add3_u32", |c, i| {
        op3(c, i, |a, b, d| a.wrapping_add(b).wrapping_add(d))
    }),
    ("v_lshl_or_b32", |c, i| {
        op3(c, i, |a, b, d| (a << (b & 31)) | d)
    }),
    ("v_and_or_b32", |c, i| op3(c, i, |a, b, d| (a & b) | d)),
    ("v_or3_b32", |c, i| op3(c, i, |a, b, d| a | b | d)),
    ("v_xor3_b32", |c, i| op3(c, i, |a, b, d| a ^ b ^ d)),
    ("v_xad_u32", |c, i| {
        op3(c, i, |a, b, d| (a ^ b).wrapping_add(d))
    }),
    ("v_perm_b32", |c, i| op3(c, i, perm)),
    ("v_bfe_u32", |c, i| op3(c, i, |a, b, d| bfe(a, b, d, false))),
    ("v_bfe_i32", |c, i| op3(c, i, |a, b, d| bfe(a, b, d, true))),
    ("v_bfi_b32", |c, i| op3(c, i, |a, b, d| (a & b) | (!a & d))),
    ("v_alignbit_b32", |c, i| {
        op3(c, i, |a, b, d| {
            (((a as u64) << 32 | b as u64) >> (d & 31)) as u32
        })
    }),
    ("v_alignbyte_b32", |c, i| {
        op3(c, i, |a, b, d| {
            (((a as u64) << 32 | b as u64) >> (8 * (d & 3))) as u32
        })
    }),
    ("v_min3_u32", |c, i| op3(c, i, |a, b, d| a.min(b).min(d))),
    ("v_max3_u32", |c, i| op3(c, i, |a, b, d| a.max(b).max(d))),
    ("v_min3_i32", |c, i| {
        op3(c, i, |a, b, d| {
            (a as i32).min(b as i32).min(d as i32) as u32
        })
    }),
    ("v_max3_i32", |c, i| {
        op3(c, i, |a, b, d| {
            (a as i32).max(b as i32).max(d as i32) as u32
        })
    }),
    ("v_med3_u32", |c, i| op3(c, i, med3)),
    ("v_med3_i32", |c, i| {
        op3(c, i, |a, b, d| med3(a as i32, b as i32, d as i32) as u32)
    }),
    ("v_max3_u16", |c, i| op3_16(c, i, |a, b, d| a.max(b).max(d))),
    ("v_min3_u16", |c, i| op3_16(c, i, |a, b, d| a.min(b).min(d))),
    ("v_fma_f32", |c, i| f3(c, i, f32::mul_add)),
    ("v_mad_f32", |c, i| f3(c, i, |a, b, d| a * b + d)),
    ("v_min3_f32", |c, i| f3(c, i, |a, b, d| a.min(b).min(d))),
    ("v_max3_f32", |c, i| f3(c, i, |a, b, d| a.max(b).max(d))),
    ("v_fma_f64", fma_f64),
    ("v_lshlrev_b64", |c, i| shift64(c, i, |v, s| v << s)),
    ("v_lshrrev_b64", |c, i| shift64(c, i, |v, s| v >> s)),
    ("v_ashrrev_i64", |c, i| {
        shift64(c, i, |v, s| ((v as i64) >> s) as u64)
    }),
    ("v_lshl_add_u64", lshl_add_u64),
    ("v_bcnt_u32_b32", |c, i| {
        for l in c.active() {
            let (a, b) = (src(c, i, 0, l, Ty::B32)?, src(c, i, 1, l, Ty::B32)?);
            write(c, i, l, a.count_ones().wrapping_add(b))?;
        }
        Ok(Flow::Next)
    }),
    ("v_mbcnt_lo_u32_b32", |c, i| mbcnt(c, i, false)),
    ("v_mbcnt_hi_u32_b32", |c, i| mbcnt(c, i, true)),
    ("v_pack_b32_f16", pack_b32_f16),
    ("v_readlane_b32", readlane),
    ("v_writelane_b32", writelane),
];
