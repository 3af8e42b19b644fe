//! Per-lane helpers shared by the vector ALU families: source reads with SDWA
//! selects, VOP3 abs/neg, 16-bit halves (op_sel / GFX11 true16), destination writes
//! with SDWA dst_sel, omod and clamp.

use super::mods;
use super::wave::Ty;
use super::{Ctx, Flow};
use crate::arch::Family;
use crate::decode::{Enc, Inst, Variant};

pub(super) type R = Result<Flow, String>;

fn sel(v: u32, sel: u8, sext: bool) -> u32 {
    let (sh, bits) = match sel {
        0..=3 => (8 * sel as u32, 8),
        4 => (0, 16),
        5 => (16, 16),
        _ => return v,
    };
    let x = (v >> sh) & ((1 << bits) - 1);
    if sext && x >> (bits - 1) & 1 != 0 {
        x | !((1 << bits) - 1)
    } else {
        x
    }
}

/// Source `k` of lane `lane` as 32 bits (SDWA select applied).
pub(super) fn src(c: &Ctx, i: &Inst, k: usize, lane: usize, ty: Ty) -> Result<u32, String> {
    let v = c.v32(i.src[k], lane, ty)?;
    if k < 2 {
        c.uses(mods::sdwa_src(k));
    }
    Ok(match (i.mods.sdwa, k) {
        (Some(s), 0) => sel(v, s.src0_sel, s.src0_sext),
        (Some(s), 1) => sel(v, s.src1_sel, s.src1_sext),
        _ => v,
    })
}

/// Float source `k` with abs/neg modifiers.
pub(super) fn srcf(c: &Ctx, i: &Inst, k: usize, lane: usize) -> Result<f32, String> {
    let x = f32::from_bits(src(c, i, k, lane, Ty::F32)?);
    Ok(abs_neg(c, i, k, x))
}

/// `x` with source `k`'s abs and neg applied.
fn abs_neg(c: &Ctx, i: &Inst, k: usize, x: f32) -> f32 {
    let (abs, neg) = mods(c, i, k);
    let x = if abs { x.abs() } else { x };
    if neg { -x } else { x }
}

/// (abs, neg) of source `k` (VOP3 or SDWA), marked as implemented.
pub(super) fn mods(c: &Ctx, i: &Inst, k: usize) -> (bool, bool) {
    c.uses(mods::abs(k) | mods::neg(k));
    match (i.mods.sdwa, k) {
        (Some(s), 0) => (s.src0_abs, s.src0_neg),
        (Some(s), 1) => (s.src1_abs, s.src1_neg),
        _ if matches!(i.enc, Enc::Vop3) => (i.mods.abs >> k & 1 != 0, i.mods.neg >> k & 1 != 0),
        _ => (false, false),
    }
}

/// 16-bit source `k`: the high half when op_sel (VOP3, GFX11 true16) says so, else
/// the low half (after an SDWA select).
pub(super) fn src16(c: &Ctx, i: &Inst, k: usize, lane: usize, ty: Ty) -> Result<u16, String> {
    let v = src(c, i, k, lane, ty)?;
    c.uses(mods::opsel(k));
    let hi =
        i.mods.sdwa.is_none() && i.enc != crate::decode::Enc::Vop3p && i.mods.opsel >> k & 1 != 0;
    Ok(if hi { (v >> 16) as u16 } else { v as u16 })
}

/// f16 source `k` as f32 with abs/neg.
pub(super) fn srch(c: &Ctx, i: &Inst, k: usize, lane: usize) -> Result<f32, String> {
    let x = half::f16::from_bits(src16(c, i, k, lane, Ty::F16)?).to_f32();
    Ok(abs_neg(c, i, k, x))
}

/// Writes a 32-bit result (SDWA dst_sel / dst_unused honoured).
pub(super) fn write(c: &mut Ctx, i: &Inst, lane: usize, v: u32) -> Result<(), String> {
    c.uses(mods::SDWA_DST);
    let v = match i.mods.sdwa {
        Some(s) if i.variant == Variant::Sdwa && s.dst_sel != 6 => {
            let (sh, bits) = match s.dst_sel {
                0..=3 => (8 * s.dst_sel as u32, 8u32),
                4 => (0, 16),
                _ => (16, 16),
            };
            let mask = ((1u64 << bits) - 1) as u32;
            let part = (v & mask) << sh;
            match s.dst_unused {
                2 => (c.v32(i.dst, lane, Ty::B32)? & !(mask << sh)) | part,
                1 if v >> (bits - 1) & 1 != 0 && sh + bits < 32 => part | (u32::MAX << (sh + bits)),
                _ => part,
            }
        }
        _ => v,
    };
    c.set_v32(i.dst, lane, v)
}

/// Writes a float result with omod and clamp.
pub(super) fn writef(c: &mut Ctx, i: &Inst, lane: usize, mut x: f32) -> Result<(), String> {
    c.uses(mods::OMOD | mods::CLAMP);
    x = match i.mods.omod {
        1 => x * 2.0,
        2 => x * 4.0,
        3 => x * 0.5,
        _ => x,
    };
    if i.mods.clamp {
        x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
    }
    write(c, i, lane, x.to_bits())
}

/// Writes a 16-bit result: the high half when op_sel[3] (VOP3, GFX11 true16) is set;
/// GFX11 keeps the other half, GFX9 zeroes the high half of a low-half write.
pub(super) fn write16(c: &mut Ctx, i: &Inst, lane: usize, v: u16) -> Result<(), String> {
    if i.mods.sdwa.is_some() {
        return write(c, i, lane, v as u32);
    }
    let old = c.v32(i.dst, lane, Ty::B32)?;
    c.uses(mods::opsel(3));
    let hi = i.mods.opsel >> 3 & 1 != 0;
    let w = match (hi, c.family) {
        (true, _) => (old & 0xffff) | (v as u32) << 16,
        (false, Family::Gfx11 | Family::Gfx12) => (old & 0xffff_0000) | v as u32,
        (false, Family::Gfx9) => v as u32,
    };
    c.set_v32(i.dst, lane, w)
}

/// f32 -> f16 bits (round to nearest even).
pub(super) fn f16_bits(x: f32) -> u16 {
    half::f16::from_f32(x).to_bits()
}

/// A lane value type of the element-wise ops: how a source is read and the result
/// written.
pub(super) trait Lane: Copy {
    fn read(c: &Ctx, i: &Inst, k: usize, lane: usize) -> Result<Self, String>;
    fn put(c: &mut Ctx, i: &Inst, lane: usize, v: Self) -> Result<(), String>;
}

/// 32-bit integers (SDWA selects and dst_sel).
impl Lane for u32 {
    fn read(c: &Ctx, i: &Inst, k: usize, lane: usize) -> Result<u32, String> {
        src(c, i, k, lane, Ty::B32)
    }
    fn put(c: &mut Ctx, i: &Inst, lane: usize, v: u32) -> Result<(), String> {
        write(c, i, lane, v)
    }
}

/// 16-bit integers (op_sel / true16 halves).
impl Lane for u16 {
    fn read(c: &Ctx, i: &Inst, k: usize, lane: usize) -> Result<u16, String> {
        src16(c, i, k, lane, Ty::B32)
    }
    fn put(c: &mut Ctx, i: &Inst, lane: usize, v: u16) -> Result<(), String> {
        write16(c, i, lane, v)
    }
}

/// f32 (abs/neg on the sources, omod and clamp on the result).
impl Lane for f32 {
    fn read(c: &Ctx, i: &Inst, k: usize, lane: usize) -> Result<f32, String> {
        srcf(c, i, k, lane)
    }
    fn put(c: &mut Ctx, i: &Inst, lane: usize, v: f32) -> Result<(), String> {
        writef(c, i, lane, v)
    }
}

/// `D = f([S0, .., S(N-1)])` in every active lane.
fn map<T: Lane, const N: usize>(c: &mut Ctx, i: &Inst, f: impl Fn([T; N]) -> T) -> R {
    for l in c.active() {
        let mut s = [T::read(c, i, 0, l)?; N];
        for (k, v) in s.iter_mut().enumerate().skip(1) {
            *v = T::read(c, i, k, l)?;
        }
        T::put(c, i, l, f(s))?;
    }
    Ok(Flow::Next)
}

/// The element-wise ops the handlers call, by arity and [`Lane`] type.
macro_rules! typed {
    ($($name:ident: fn($($a:ident),+) -> $t:ty;)*) => {$(
        pub(super) fn $name(c: &mut Ctx, i: &Inst, f: fn($(typed!(@ $a $t)),+) -> $t) -> R {
            map(c, i, |[$($a),+]| f($($a),+))
        }
    )*};
    (@ $a:ident $t:ty) => { $t };
}

typed! {
    op1: fn(a) -> u32;
    op2: fn(a, b) -> u32;
    op3: fn(a, b, d) -> u32;
    op2_16: fn(a, b) -> u16;
    op3_16: fn(a, b, d) -> u16;
    f1: fn(a) -> f32;
    f2: fn(a, b) -> f32;
    f3: fn(a, b, d) -> f32;
}

/// The lane mask an instruction reads as its carry-in / select: VCC in the 32-bit and
/// SDWA forms, the SGPR(s) in src2 in VOP3.
pub(super) fn mask_in(c: &Ctx, i: &Inst) -> Result<u64, String> {
    if i.enc == Enc::Vop3 {
        c.mask(i.src[2])
    } else {
        c.wave.hazard.note_read(super::hazard::VCC);
        if c.wave.lanes == 64 {
            c.wave.hazard.note_read(super::hazard::VCC + 1);
        }
        Ok(c.wave.vcc())
    }
}

/// Where a carry-out / compare mask goes: VCC in the 32-bit forms, sdst in VOP3B.
pub(super) fn set_mask_out(c: &mut Ctx, i: &Inst, m: u64) -> Result<(), String> {
    let o = if i.enc == Enc::Vop3 {
        i.sdst
    } else {
        crate::decode::Operand::Sgpr(106)
    };
    // Lanes outside EXEC read as 0 in the written mask.
    c.set_mask(o, m)
}
