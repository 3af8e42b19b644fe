//! VOP1-type operations (one source), in their 32-bit, SDWA and VOP3 encodings.

use super::valu::{self, R, f1, op1, src, src16, srch, write, write16, writef};
use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::decode::Inst;

fn readfirstlane(c: &mut Ctx, i: &Inst) -> R {
    let exec = c.wave.exec();
    let lane = if exec == 0 {
        0
    } else {
        exec.trailing_zeros() as usize
    };
    let v = c.v32(i.src[0], lane, Ty::B32)?;
    c.set_s32(i.dst, v)?;
    Ok(Flow::Next)
}

fn mov_b64(c: &mut Ctx, i: &Inst) -> R {
    for l in c.active() {
        let v = c.v64(i.src[0], l, Ty::U64)?;
        c.set_v64(i.dst, l, v)?;
    }
    Ok(Flow::Next)
}

fn cvt_f32_f16(c: &mut Ctx, i: &Inst) -> R {
    for l in c.active() {
        let x = srch(c, i, 0, l)?;
        writef(c, i, l, x)?;
    }
    Ok(Flow::Next)
}

fn cvt_f16_f32(c: &mut Ctx, i: &Inst) -> R {
    for l in c.active() {
        let mut x = valu::srcf(c, i, 0, l)?;
        c.uses(super::mods::CLAMP);
        if i.mods.clamp {
            x = x.clamp(0.0, 1.0);
        }
        write16(c, i, l, valu::f16_bits(x))?;
    }
    Ok(Flow::Next)
}

fn mov_b16(c: &mut Ctx, i: &Inst) -> R {
    for l in c.active() {
        let v = src16(c, i, 0, l, Ty::F16)?;
        write16(c, i, l, v)?;
    }
    Ok(Flow::Next)
}

fn cvt_u32_f32(x: f32) -> u32 {
    if x.is_nan() { 0 } else { x as u32 }
}

fn cvt_i32_f32(x: f32) -> u32 {
    if x.is_nan() { 0 } else { x as i32 as u32 }
}

pub(super) const HANDLERS: &[(&str, Handler)] = &[
    ("v_nop", |_, _| Ok(Flow::Next)),
    ("v_mov_b32", |c, i| op1(c, i, |a| a)),
    ("v_mov_b64", mov_b64),
    ("v_mov_b16", mov_b16),
    ("v_readfirstlane_b32", readfirstlane),
    ("v_not_b32", |c, i| op1(c, i, |a| !a)),
    ("v_bfrev_b32", |c, i| op1(c, i, |a| a.reverse_bits())),
    ("v_ffbh_u32", |c, i| {
        op1(c, i, |a| if a == 0 { u32::MAX } else { a.leading_zeros() })
    }),
    ("v_clz_i32_u32", |c, i| {
        op1(c, i, |a| if a == 0 { u32::MAX } else { a.leading_zeros() })
    }),
    ("v_ffbl_b32", |c, i| {
        op1(c, i, |a| if a == 0 { u32::MAX } else { a.trailing_zeros() })
    }),
    ("v_ctz_i32_b32", |c, i| {
        op1(c, i, |a| if a == 0 { u32::MAX } else { a.trailing_zeros() })
    }),
    ("v_cvt_f32_u32", |c, i| {
        for l in c.active() {
            let a = src(c, i, 0, l, Ty::B32)?;
            writef(c, i, l, a as f32)?;
        }
        Ok(Flow::Next)
    }),
    ("v_cvt_f32_i32", |c, i| {
        for l in c.active() {
            let a = src(c, i, 0, l, Ty::B32)?;
            writef(c, i, l, a as i32 as f32)?;
        }
        Ok(Flow::Next)
    }),
    ("v_cvt_u32_f32", |c, i| {
        for l in c.active() {
            let x = valu::srcf(c, i, 0, l)?;
            write(c, i, l, cvt_u32_f32(x))?;
        }
        Ok(Flow::Next)
    }),
    ("v_cvt_i32_f32", |c, i| {
        for l in c.active() {
            let x = valu::srcf(c, i, 0, l)?;
            write(c, i, l, cvt_i32_f32(x))?;
        }
        Ok(Flow::Next)
    }),
    ("v_cvt_f32_f16", cvt_f32_f16),
    ("v_cvt_f16_f32", cvt_f16_f32),
    ("v_cvt_f32_ubyte0", |c, i| {
        f1_int(c, i, |a| (a & 0xff) as f32)
    }),
    ("v_cvt_f32_ubyte1", |c, i| {
        f1_int(c, i, |a| ((a >> 8) & 0xff) as f32)
    }),
    ("v_cvt_f32_ubyte2", |c, i| {
        f1_int(c, i, |a| ((a >> 16) & 0xff) as f32)
    }),
    ("v_cvt_f32_ubyte3", |c, i| {
        f1_int(c, i, |a| (a >> 24) as f32)
    }),
    ("v_rcp_f32", |c, i| f1(c, i, |a| 1.0 / a)),
    ("v_rcp_iflag_f32", |c, i| f1(c, i, |a| 1.0 / a)),
    ("v_rsq_f32", |c, i| f1(c, i, |a| 1.0 / a.sqrt())),
    ("v_sqrt_f32", |c, i| f1(c, i, |a| a.sqrt())),
    ("v_exp_f32", |c, i| f1(c, i, |a| a.exp2())),
    ("v_log_f32", |c, i| f1(c, i, |a| a.log2())),
    ("v_fract_f32", |c, i| f1(c, i, |a| a - a.floor())),
    ("v_trunc_f32", |c, i| f1(c, i, |a| a.trunc())),
    ("v_ceil_f32", |c, i| f1(c, i, |a| a.ceil())),
    ("v_floor_f32", |c, i| f1(c, i, |a| a.floor())),
    ("v_rndne_f32", |c, i| f1(c, i, |a| a.round_ties_even())),
];

fn f1_int(c: &mut Ctx, i: &Inst, f: fn(u32) -> f32) -> R {
    for l in c.active() {
        let a = src(c, i, 0, l, Ty::B32)?;
        writef(c, i, l, f(a))?;
    }
    Ok(Flow::Next)
}
