//! VOPC: `0111110 op[24:17] vsrc1[16:9] src0[8:0]`; the result goes to VCC (GFX9
//! `v_cmpx_*` also to EXEC; GFX11 `v_cmpx_*` only to EXEC).
//!
//! Opcode layout (ISA guides' VOPC tables): GFX9 class compares at 0x10..0x15, float
//! compares (16 conditions) f16/f32/f64 at 0x20/0x40/0x60 with the cmpx forms 0x10
//! above, integer compares (8 conditions) i16 0xa0, u16 0xa8, cmpx i16 0xb0, cmpx u16
//! 0xb8, i32 0xc0, u32 0xc8, cmpx 0xd0/0xd8, i64 0xe0, u64 0xe8, cmpx 0xf0/0xf8.
//! GFX11: f16/f32/f64 at 0x00/0x10/0x20, i16 0x30 and u16 0x38 (no f/t forms), i32
//! 0x40, u32 0x48, i64 0x50, u64 0x58, class f16/f32/f64 at 0x7d/0x7e/0x7f; every
//! cmpx form is its compare + 0x80.

use super::tables::intern;
use super::{DecodeError, Enc, Inst, Operand, Words};
use crate::arch::Family;

const F_CONDS9: [&str; 16] = [
    "f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq", "nlt",
    "tru",
];
const F_CONDS11: [&str; 16] = [
    "f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq", "nlt",
    "t",
];
const I_CONDS: [&str; 8] = ["f", "lt", "eq", "le", "gt", "ne", "ge", "t"];

/// The VOPC mnemonic for an opcode (also the VOP3 opcodes 0..=255).
pub(super) fn name(fam: Family, op: u32) -> Option<&'static str> {
    let mk = |x: bool, cond: &str, ty: &str| {
        intern(format!("v_cmp{}_{cond}_{ty}", if x { "x" } else { "" }))
    };
    match fam {
        Family::Gfx9 => match op {
            0x10..=0x15 => {
                let ty = ["f32", "f64", "f16"][((op - 0x10) / 2) as usize];
                Some(intern(format!(
                    "v_cmp{}_class_{ty}",
                    if op & 1 == 1 { "x" } else { "" }
                )))
            }
            0x20..=0x7f => {
                let ty = ["f16", "f32", "f64"][((op - 0x20) / 0x20) as usize];
                Some(mk(op & 0x10 != 0, F_CONDS9[(op & 0xf) as usize], ty))
            }
            0xa0..=0xff => {
                let blk = (op - 0xa0) / 8;
                let (x, ty) = [
                    (false, "i16"),
                    (false, "u16"),
                    (true, "i16"),
                    (true, "u16"),
                    (false, "i32"),
                    (false, "u32"),
                    (true, "i32"),
                    (true, "u32"),
                    (false, "i64"),
                    (false, "u64"),
                    (true, "i64"),
                    (true, "u64"),
                ][blk as usize];
                Some(mk(x, I_CONDS[(op & 7) as usize], ty))
            }
            _ => None,
        },
        Family::Gfx11 | Family::Gfx12 => {
            let x = op & 0x80 != 0;
            let o = op & 0x7f;
            match o {
                0x00..=0x2f => Some(mk(
                    x,
                    F_CONDS11[(o & 0xf) as usize],
                    ["f16", "f32", "f64"][(o >> 4) as usize],
                )),
                0x30..=0x3f => {
                    let c = o & 7;
                    if c == 0 || c == 7 {
                        return None;
                    }
                    Some(mk(
                        x,
                        I_CONDS[c as usize],
                        if o < 0x38 { "i16" } else { "u16" },
                    ))
                }
                0x40..=0x5f => {
                    let ty = ["i32", "u32", "i64", "u64"][((o - 0x40) / 8) as usize];
                    Some(mk(x, I_CONDS[(o & 7) as usize], ty))
                }
                0x7d..=0x7f => {
                    let ty = ["f16", "f32", "f64"][(o - 0x7d) as usize];
                    Some(intern(format!(
                        "v_cmp{}_class_{ty}",
                        if x { "x" } else { "" }
                    )))
                }
                _ => None,
            }
        }
    }
}

pub(super) fn decode(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let op = (w0 >> 17) & 0xff;
    let mut i = super::vop2::e32(w, w0, Enc::Vopc, "VOPC", op, name(w.arch.family(), op))?;
    i.dst = Operand::Sgpr(106);
    i.src[1] = Operand::Vgpr(((w0 >> 9) & 0xff) as u16);
    super::vop2::extensions(w, &mut i)?;
    Ok(i)
}
