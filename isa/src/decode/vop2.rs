//! VOP2: `0 op[30:25] vdst[24:17] vsrc1[16:9] src0[8:0]`, GFX9 and GFX11 (renumbered).
//! Also the GFX9 SDWA extension word shared by VOP1/VOP2/VOPC.

use super::tables::Tables;
use super::{DecodeError, Enc, Inst, Operand, Sdwa, Variant, Words};
use crate::arch::Family;

/// The VOP2 opcodes (also those of VOP2 ops in the VOP3 encoding).
pub(super) const VOP2: Tables = Tables {
    both: &[(60, "v_pk_fmac_f16")],
    gfx9: &[
        (0, "v_cndmask_b32"),
        (1, "v_add_f32"),
        (2, "v_sub_f32"),
        (3, "v_subrev_f32"),
        (4, "v_fmac_f64"),
        (5, "v_mul_f32"),
        (6, "v_mul_i32_i24"),
        (7, "v_mul_hi_i32_i24"),
        (8, "v_mul_u32_u24"),
        (9, "v_mul_hi_u32_u24"),
        (10, "v_min_f32"),
        (11, "v_max_f32"),
        (12, "v_min_i32"),
        (13, "v_max_i32"),
        (14, "v_min_u32"),
        (15, "v_max_u32"),
        (16, "v_lshrrev_b32"),
        (17, "v_ashrrev_i32"),
        (18, "v_lshlrev_b32"),
        (19, "v_and_b32"),
        (20, "v_or_b32"),
        (21, "v_xor_b32"),
        (25, "v_add_co_u32"),
        (26, "v_sub_co_u32"),
        (27, "v_subrev_co_u32"),
        (28, "v_addc_co_u32"),
        (29, "v_subb_co_u32"),
        (30, "v_subbrev_co_u32"),
        (31, "v_add_f16"),
        (32, "v_sub_f16"),
        (33, "v_subrev_f16"),
        (34, "v_mul_f16"),
        (35, "v_mac_f16"),
        (36, "v_madmk_f16"),
        (37, "v_madak_f16"),
        (38, "v_add_u16"),
        (39, "v_sub_u16"),
        (40, "v_subrev_u16"),
        (41, "v_mul_lo_u16"),
        (42, "v_lshlrev_b16"),
        (43, "v_lshrrev_b16"),
        (44, "v_ashrrev_i16"),
        (45, "v_max_f16"),
        (46, "v_min_f16"),
        (47, "v_max_u16"),
        (48, "v_max_i16"),
        (49, "v_min_u16"),
        (50, "v_min_i16"),
        (51, "v_ldexp_f16"),
        (52, "v_add_u32"),
        (53, "v_sub_u32"),
        (54, "v_subrev_u32"),
        (55, "v_dot2c_f32_f16"),
        (56, "v_dot2c_i32_i16"),
        (57, "v_dot4c_i32_i8"),
        (58, "v_dot8c_i32_i4"),
        (59, "v_fmac_f32"),
        (61, "v_xnor_b32"),
    ],
    gfx950: &[],
    gfx11: &[
        (1, "v_cndmask_b32"),
        (2, "v_dot2acc_f32_f16"),
        (3, "v_add_f32"),
        (4, "v_sub_f32"),
        (5, "v_subrev_f32"),
        (6, "v_fmac_dx9_zero_f32"),
        (7, "v_mul_dx9_zero_f32"),
        (8, "v_mul_f32"),
        (9, "v_mul_i32_i24"),
        (10, "v_mul_hi_i32_i24"),
        (11, "v_mul_u32_u24"),
        (12, "v_mul_hi_u32_u24"),
        (15, "v_min_f32"),
        (16, "v_max_f32"),
        (17, "v_min_i32"),
        (18, "v_max_i32"),
        (19, "v_min_u32"),
        (20, "v_max_u32"),
        (24, "v_lshlrev_b32"),
        (25, "v_lshrrev_b32"),
        (26, "v_ashrrev_i32"),
        (27, "v_and_b32"),
        (28, "v_or_b32"),
        (29, "v_xor_b32"),
        (30, "v_xnor_b32"),
        (32, "v_add_co_ci_u32"),
        (33, "v_sub_co_ci_u32"),
        (34, "v_subrev_co_ci_u32"),
        (37, "v_add_nc_u32"),
        (38, "v_sub_nc_u32"),
        (39, "v_subrev_nc_u32"),
        (43, "v_fmac_f32"),
        (44, "v_fmamk_f32"),
        (45, "v_fmaak_f32"),
        (47, "v_cvt_pk_rtz_f16_f32"),
        (50, "v_add_f16"),
        (51, "v_sub_f16"),
        (52, "v_subrev_f16"),
        (53, "v_mul_f16"),
        (54, "v_fmac_f16"),
        (55, "v_fmamk_f16"),
        (56, "v_fmaak_f16"),
        (57, "v_max_f16"),
        (58, "v_min_f16"),
        (59, "v_ldexp_f16"),
    ],
    // MI300 dropped the unfused f32 multiply-adds; 23/24 are the fused
    // forms there (CDNA3 guide; llvm-project's gfx940_asm_features.s).
    gfx90a: &[(22, "v_mac_f32"), (23, "v_madmk_f32"), (24, "v_madak_f32")],
    gfx942: &[(23, "v_fmamk_f32"), (24, "v_fmaak_f32")],
    // GFX12 (LLVM VOP2Instructions.td, gfx12 reals): the IEEE min/max became the
    // `_num` forms at new opcodes, v_lshlrev_b64 moved into VOP2.
    gfx12: &[
        (0x15, "v_min_num_f32"),
        (0x16, "v_max_num_f32"),
        (0x1f, "v_lshlrev_b64"),
    ],
    gfx11_only: &[15, 16],
};

pub(super) fn decode(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let op = (w0 >> 25) & 0x3f;
    let mut i = e32(w, w0, Enc::Vop2, "VOP2", op, VOP2.find(w.arch, op))?;
    i.src[1] = Operand::Vgpr(((w0 >> 9) & 0xff) as u16);
    // VOP2 forms with an implicit VCC: carry-in/out and v_cndmask read or write VCC.
    extensions(w, &mut i)?;
    Ok(i)
}

/// The fields the 32-bit VOP1/VOP2/VOPC forms share: `vdst[24:17]`, `src0[8:0]`.
pub(super) fn e32(
    w: &Words,
    w0: u32,
    enc: Enc,
    what: &str,
    op: u32,
    name: Option<&'static str>,
) -> Result<Inst, DecodeError> {
    let mut i = w.inst(enc, what, op, name)?;
    i.variant = Variant::E32;
    i.dst = Operand::Vgpr(((w0 >> 17) & 0xff) as u16);
    i.src[0] = Operand::src9(w0 & 0x1ff);
    Ok(i)
}

/// The SDWA/DPP extension word and the GFX11 true16 halves of a 32-bit form.
pub(super) fn extensions(w: &Words, i: &mut Inst) -> Result<(), DecodeError> {
    sdwa_dpp(w, i)?;
    gfx11_t16(w, i);
    Ok(())
}

/// Handles src0 = SDWA (249) / DPP (250, GFX11 also 233/234): reads the extension word.
fn sdwa_dpp(w: &Words, i: &mut Inst) -> Result<(), DecodeError> {
    match i.src[0] {
        Operand::Special(249) if w.arch.family() == Family::Gfx9 => {
            let w1 = w.word(1)?;
            let s0 = w1 >> 23 & 1 != 0;
            let s1 = w1 >> 31 & 1 != 0;
            let r0 = w1 & 0xff;
            i.src[0] = if s0 {
                Operand::Sgpr(r0 as u8)
            } else {
                Operand::Vgpr(r0 as u16)
            };
            if let (true, Operand::Vgpr(r)) = (s1, i.src[1]) {
                i.src[1] = Operand::Sgpr(r as u8);
            }
            let sd = Sdwa {
                dst_sel: ((w1 >> 8) & 7) as u8,
                dst_unused: ((w1 >> 11) & 3) as u8,
                src0_sel: ((w1 >> 16) & 7) as u8,
                src0_sext: w1 >> 19 & 1 != 0,
                src0_neg: w1 >> 20 & 1 != 0,
                src0_abs: w1 >> 21 & 1 != 0,
                src1_sel: ((w1 >> 24) & 7) as u8,
                src1_sext: w1 >> 27 & 1 != 0,
                src1_neg: w1 >> 28 & 1 != 0,
                src1_abs: w1 >> 29 & 1 != 0,
            };
            i.mods.clamp = w1 >> 13 & 1 != 0;
            i.mods.omod = ((w1 >> 14) & 3) as u8;
            if i.enc == Enc::Vopc {
                // VOPC SDWA: sdst in [14:8] when bit 15 is set, else VCC.
                i.dst = if w1 >> 15 & 1 != 0 {
                    Operand::Sgpr(((w1 >> 8) & 0x7f) as u8)
                } else {
                    Operand::Sgpr(106)
                };
                i.mods.sdwa = Some(Sdwa {
                    dst_sel: 6,
                    dst_unused: 0,
                    ..sd
                });
            } else {
                i.mods.sdwa = Some(sd);
            }
            i.variant = Variant::Sdwa;
            i.len = 8;
            Ok(())
        }
        Operand::Special(250) | Operand::Special(233) | Operand::Special(234) => {
            Err(w.err("a DPP instruction (not decoded yet)"))
        }
        _ => Ok(()),
    }
}

/// GFX11 true16 operands of the 32-bit encodings: a 16-bit VGPR operand uses bit 7 of
/// its 8-bit register number to select the high half (`v6.h` = 134). Moves that bit
/// into `mods.opsel` (bit 0 src0, bit 1 src1, bit 3 dst, as VOP3's op_sel) and keeps
/// the register number.
fn gfx11_t16(w: &Words, i: &mut Inst) {
    if !w.arch.family().rdna() {
        return;
    }
    let (d16, s16) = t16_types(i.name);
    let mut fix = |o: &mut Operand, bit: u8| {
        if let Operand::Vgpr(r @ 128..) = *o {
            *o = Operand::Vgpr(r - 128);
            i.mods.opsel |= 1 << bit;
        }
    };
    if d16 {
        fix(&mut i.dst, 3);
    }
    if s16 {
        fix(&mut i.src[0], 0);
        if i.enc != Enc::Vop1 {
            fix(&mut i.src[1], 1);
        }
    }
}

/// (destination is 16-bit, sources are 16-bit) for a mnemonic, from its type suffixes.
pub(crate) fn t16_types(name: &str) -> (bool, bool) {
    let is16 = |t: &str| matches!(t, "f16" | "b16" | "u16" | "i16" | "bf16");
    let parts: Vec<&str> = name.split('_').collect();
    let last = parts.last().copied().unwrap_or("");
    if name.starts_with("v_cvt_") && parts.len() >= 4 {
        let dst = parts[parts.len() - 2];
        return (is16(dst), is16(last));
    }
    if name.starts_with("v_cmp") {
        return (false, is16(last));
    }
    (is16(last), is16(last))
}
