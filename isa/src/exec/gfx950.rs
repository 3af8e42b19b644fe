//! The VALU instructions gfx950 adds that our gfx950 code objects use:
//! `v_bitop3_b32`, `v_bitop3_b16` and `v_cvt_pk_f16_f32`.
//!
//! `v_bitop3_*` computes any 3-input bitwise function: result bit = `table`
//! bit `(S0 << 2) | (S1 << 1) | S2` of the sources' bits. The 8-bit table
//! lies in the VOP3 modifier fields: bits 2:0 in `neg`, 5:3 in `abs`, 7:6 in
//! `omod` (read off LLVM's gfx950 disassembly of our objects: every
//! `bitop3:0x..` it prints matches this split).

use super::valu::{R, f16_bits, src, src16, srcf, write, write16};
use super::wave::Ty;
use super::{Ctx, Flow, Handler, mods};
use crate::decode::Inst;

/// The truth table of a `v_bitop3_*`.
fn table(c: &Ctx, i: &Inst) -> u8 {
    c.uses(mods::neg(0) | mods::neg(1) | mods::neg(2) | mods::abs(0) | mods::abs(1) | mods::abs(2) | mods::OMOD);
    (i.mods.neg & 7) | (i.mods.abs & 7) << 3 | (i.mods.omod & 3) << 6
}

/// Bitwise `table` of `a`, `b`, `d` (a minterm per set table bit).
fn bitop3(t: u8, a: u32, b: u32, d: u32) -> u32 {
    (0..8).filter(|k| t >> k & 1 != 0).fold(0, |r, k| {
        let pick = |bit: u32, v: u32| if k >> bit & 1 != 0 { v } else { !v };
        r | (pick(2, a) & pick(1, b) & pick(0, d))
    })
}

fn bitop3_b32(c: &mut Ctx, i: &Inst) -> R {
    let t = table(c, i);
    for l in c.active() {
        let (a, b, d) = (src(c, i, 0, l, Ty::B32)?, src(c, i, 1, l, Ty::B32)?, src(c, i, 2, l, Ty::B32)?);
        write(c, i, l, bitop3(t, a, b, d))?;
    }
    Ok(Flow::Next)
}

fn bitop3_b16(c: &mut Ctx, i: &Inst) -> R {
    let t = table(c, i);
    for l in c.active() {
        let s = |k| src16(c, i, k, l, Ty::B32).map(u32::from);
        let (a, b, d) = (s(0)?, s(1)?, s(2)?);
        write16(c, i, l, bitop3(t, a, b, d) as u16)?;
    }
    Ok(Flow::Next)
}

/// `D = {f16(S1), f16(S0)}`, rounded to nearest even (the default mode).
fn cvt_pk_f16_f32(c: &mut Ctx, i: &Inst) -> R {
    for l in c.active() {
        let (lo, hi) = (srcf(c, i, 0, l)?, srcf(c, i, 1, l)?);
        write(c, i, l, f16_bits(lo) as u32 | (f16_bits(hi) as u32) << 16)?;
    }
    Ok(Flow::Next)
}

pub(super) const HANDLERS: &[(&str, Handler)] = &[
    ("v_bitop3_b32", bitop3_b32),
    ("v_bitop3_b16", bitop3_b16),
    ("v_cvt_pk_f16_f32", cvt_pk_f16_f32),
];

#[cfg(test)]
mod tests {
    use super::bitop3;

    /// The tables LLVM printed for our kernels, on the canonical inputs
    /// (S0 = 0xf0, S1 = 0xcc, S2 = 0xaa), give back the table itself, and
    /// 0x6c is `S1 ^ (S0 & S2)`.
    #[test]
    fn bitop3_tables() {
        for t in [0x1e, 0x36, 0x4e, 0x6c, 0x72, 0x78, 0x80, 0xc8u8] {
            assert_eq!(bitop3(t, 0xf0, 0xcc, 0xaa), t as u32);
        }
        let (a, b, d) = (0x1234_5678, 0x9abc_def0, 7);
        assert_eq!(bitop3(0x6c, a, b, d), b ^ (a & d));
    }
}
