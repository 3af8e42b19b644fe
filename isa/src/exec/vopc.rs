//! Vector compares (`v_cmp_*`, `v_cmpx_*`) in the 32-bit, SDWA and VOP3 encodings.
//! Every condition/type combination goes through one handler that reads the
//! condition and type from the mnemonic.

use super::valu::{R, mods, src, src16};
use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::decode::Inst;

fn fcmp(cond: &str, a: f64, b: f64) -> Option<bool> {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let o = a.partial_cmp(&b);
    let is = |set: &[std::cmp::Ordering]| o.is_some_and(|o| set.contains(&o));
    Some(match cond {
        "f" => false,
        "lt" => is(&[Less]),
        "eq" => is(&[Equal]),
        "le" => is(&[Less, Equal]),
        "gt" => is(&[Greater]),
        "lg" => is(&[Less, Greater]),
        "ge" => is(&[Greater, Equal]),
        "o" => o.is_some(),
        "u" => o.is_none(),
        "nge" => !is(&[Greater, Equal]),
        "nlg" => !is(&[Less, Greater]),
        "ngt" => !is(&[Greater]),
        "nle" => !is(&[Less, Equal]),
        "neq" => !is(&[Equal]),
        "nlt" => !is(&[Less]),
        "t" | "tru" => true,
        _ => return None,
    })
}

fn icmp<T: Ord>(cond: &str, a: T, b: T) -> Option<bool> {
    Some(match cond {
        "f" => false,
        "lt" => a < b,
        "eq" => a == b,
        "le" => a <= b,
        "gt" => a > b,
        "ne" => a != b,
        "ge" => a >= b,
        "t" => true,
        _ => return None,
    })
}

fn parse(name: &str) -> Option<(bool, &str, &str)> {
    let rest = name.strip_prefix("v_cmp")?;
    let (x, rest) = match rest.strip_prefix('x') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let rest = rest.strip_prefix('_')?;
    let (cond, ty) = rest.rsplit_once('_')?;
    Some((x, cond, ty))
}

fn lane_result(c: &Ctx, i: &Inst, cond: &str, ty: &str, l: usize) -> Result<bool, String> {
    let fmod = |k: usize, x: f64| {
        let (abs, neg) = mods(c, i, k);
        let x = if abs { x.abs() } else { x };
        if neg { -x } else { x }
    };
    // Source k read as 32 bits, as a 16-bit half, as 64 bits.
    let s32 = |k: usize, ty: Ty| src(c, i, k, l, ty);
    let s16 = |k: usize, ty: Ty| src16(c, i, k, l, ty);
    let s64 = |k: usize, ty: Ty| c.v64(i.src[k], l, ty);
    let r = match ty {
        "f32" => {
            let a = fmod(0, f32::from_bits(s32(0, Ty::F32)?) as f64);
            fcmp(cond, a, fmod(1, f32::from_bits(s32(1, Ty::F32)?) as f64))
        }
        "f16" => {
            let a = fmod(0, half::f16::from_bits(s16(0, Ty::F16)?).to_f64());
            fcmp(
                cond,
                a,
                fmod(1, half::f16::from_bits(s16(1, Ty::F16)?).to_f64()),
            )
        }
        "f64" => {
            let a = fmod(0, f64::from_bits(s64(0, Ty::F64)?));
            fcmp(cond, a, fmod(1, f64::from_bits(s64(1, Ty::F64)?)))
        }
        "u32" => icmp(cond, s32(0, Ty::B32)?, s32(1, Ty::B32)?),
        "i32" => icmp(cond, s32(0, Ty::B32)? as i32, s32(1, Ty::B32)? as i32),
        "u16" => icmp(cond, s16(0, Ty::B32)?, s16(1, Ty::B32)?),
        "i16" => icmp(cond, s16(0, Ty::B32)? as i16, s16(1, Ty::B32)? as i16),
        "u64" => icmp(cond, s64(0, Ty::U64)?, s64(1, Ty::U64)?),
        "i64" => icmp(cond, s64(0, Ty::I64)? as i64, s64(1, Ty::I64)? as i64),
        _ => None,
    };
    r.ok_or_else(|| format!("unsupported compare {}", i.name))
}

fn compare(c: &mut Ctx, i: &Inst) -> R {
    let (x, cond, ty) = parse(i.name).ok_or("not a compare")?;
    let mut m = 0u64;
    for l in c.active() {
        if lane_result(c, i, cond, ty, l)? {
            m |= 1 << l;
        }
    }
    let gfx11 = c.family.rdna();
    if !(x && gfx11) {
        // VCC for the 32-bit form, the SGPR destination for VOP3 and SDWA.
        c.set_mask(i.dst, m)?;
    }
    if x {
        c.wave.set_exec(m);
    }
    Ok(Flow::Next)
}

/// The compare handler for any `v_cmp*_<cond>_<type>` mnemonic it supports.
pub(super) fn compare_handler(name: &str) -> Option<Handler> {
    let (_, cond, ty) = parse(name)?;
    let ok = match ty {
        "f16" | "f32" | "f64" => fcmp(cond, 0.0, 0.0).is_some(),
        "i16" | "u16" | "i32" | "u32" | "i64" | "u64" => icmp(cond, 0, 0).is_some(),
        _ => false,
    };
    ok.then_some(compare as Handler)
}

pub(super) const HANDLERS: &[(&str, Handler)] = &[];
