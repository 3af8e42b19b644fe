//! VOP3 (VOP3A/VOP3B), 64 bits: GFX9 `110100 op[25:16] clamp[15] op_sel[14:11] abs[10:8]
//! vdst[7:0]` (VOP3B: `sdst[14:8]`), GFX11 `110101` with the same fields; second word
//! `neg[31:29] omod[28:27] src2[26:18] src1[17:9] src0[8:0]`.
//!
//! Opcode space: GFX9 VOPC 0x000-0x0ff, VOP2 0x100+op, VOP1 0x140+op, VOP3-only from
//! 0x1c0; GFX11 VOPC 0x000-0x0ff, VOP2 0x100+op, VOP1 0x180+op, VOP3-only from 0x200.

use super::tables::Tables;
use super::{DecodeError, Enc, Inst, Operand, Variant, Words, vop1, vop2, vopc};
use crate::arch::{Arch, Family};

const VOP3: Tables = Tables {
    gfx9: &[
        (0x1c2, "v_mad_i32_i24"),
        (0x1c3, "v_mad_u32_u24"),
        (0x1c4, "v_cubeid_f32"),
        (0x1c5, "v_cubesc_f32"),
        (0x1c6, "v_cubetc_f32"),
        (0x1c7, "v_cubema_f32"),
        (0x1c8, "v_bfe_u32"),
        (0x1c9, "v_bfe_i32"),
        (0x1ca, "v_bfi_b32"),
        (0x1cb, "v_fma_f32"),
        (0x1cc, "v_fma_f64"),
        (0x1cd, "v_lerp_u8"),
        (0x1ce, "v_alignbit_b32"),
        (0x1cf, "v_alignbyte_b32"),
        (0x1d0, "v_min3_f32"),
        (0x1d1, "v_min3_i32"),
        (0x1d2, "v_min3_u32"),
        (0x1d3, "v_max3_f32"),
        (0x1d4, "v_max3_i32"),
        (0x1d5, "v_max3_u32"),
        (0x1d6, "v_med3_f32"),
        (0x1d7, "v_med3_i32"),
        (0x1d8, "v_med3_u32"),
        (0x1d9, "v_sad_u8"),
        (0x1da, "v_sad_hi_u8"),
        (0x1db, "v_sad_u16"),
        (0x1dc, "v_sad_u32"),
        (0x1dd, "v_cvt_pk_u8_f32"),
        (0x1de, "v_div_fixup_f32"),
        (0x1df, "v_div_fixup_f64"),
        (0x1e0, "v_div_scale_f32"),
        (0x1e1, "v_div_scale_f64"),
        (0x1e2, "v_div_fmas_f32"),
        (0x1e3, "v_div_fmas_f64"),
        (0x1e4, "v_msad_u8"),
        (0x1e5, "v_qsad_pk_u16_u8"),
        (0x1e6, "v_mqsad_pk_u16_u8"),
        (0x1e7, "v_mqsad_u32_u8"),
        (0x1e8, "v_mad_u64_u32"),
        (0x1e9, "v_mad_i64_i32"),
        (0x1ea, "v_mad_legacy_f16"),
        (0x1eb, "v_mad_legacy_u16"),
        (0x1ec, "v_mad_legacy_i16"),
        (0x1ed, "v_perm_b32"),
        (0x1ee, "v_fma_legacy_f16"),
        (0x1ef, "v_div_fixup_legacy_f16"),
        (0x1f0, "v_cvt_pkaccum_u8_f32"),
        (0x1f1, "v_mad_u32_u16"),
        (0x1f2, "v_mad_i32_i16"),
        (0x1f3, "v_xad_u32"),
        (0x1f4, "v_min3_f16"),
        (0x1f5, "v_min3_i16"),
        (0x1f6, "v_min3_u16"),
        (0x1f7, "v_max3_f16"),
        (0x1f8, "v_max3_i16"),
        (0x1f9, "v_max3_u16"),
        (0x1fa, "v_med3_f16"),
        (0x1fb, "v_med3_i16"),
        (0x1fc, "v_med3_u16"),
        (0x1fd, "v_lshl_add_u32"),
        (0x1fe, "v_add_lshl_u32"),
        (0x1ff, "v_add3_u32"),
        (0x200, "v_lshl_or_b32"),
        (0x201, "v_and_or_b32"),
        (0x202, "v_or3_b32"),
        (0x203, "v_mad_f16"),
        (0x204, "v_mad_u16"),
        (0x205, "v_mad_i16"),
        (0x206, "v_fma_f16"),
        (0x207, "v_div_fixup_f16"),
        (0x280, "v_add_f64"),
        (0x281, "v_mul_f64"),
        (0x282, "v_min_f64"),
        (0x283, "v_max_f64"),
        (0x284, "v_ldexp_f64"),
        (0x285, "v_mul_lo_u32"),
        (0x286, "v_mul_hi_u32"),
        (0x287, "v_mul_hi_i32"),
        (0x288, "v_ldexp_f32"),
        (0x289, "v_readlane_b32"),
        (0x28a, "v_writelane_b32"),
        (0x28b, "v_bcnt_u32_b32"),
        (0x28c, "v_mbcnt_lo_u32_b32"),
        (0x28d, "v_mbcnt_hi_u32_b32"),
        (0x28f, "v_lshlrev_b64"),
        (0x290, "v_lshrrev_b64"),
        (0x291, "v_ashrrev_i64"),
        (0x292, "v_trig_preop_f64"),
        (0x293, "v_bfm_b32"),
        (0x294, "v_cvt_pknorm_i16_f32"),
        (0x295, "v_cvt_pknorm_u16_f32"),
        (0x296, "v_cvt_pkrtz_f16_f32"),
        (0x297, "v_cvt_pk_u16_u32"),
        (0x298, "v_cvt_pk_i16_i32"),
        (0x299, "v_cvt_pknorm_i16_f16"),
        (0x29a, "v_cvt_pknorm_u16_f16"),
        (0x29c, "v_add_i32"),
        (0x29d, "v_sub_i32"),
        (0x29e, "v_add_i16"),
        (0x29f, "v_sub_i16"),
        (0x2a0, "v_pack_b32_f16"),
    ],
    // gfx942 additions.
    // Not on MI300 (CDNA3 guide), as VOP2's v_mac_f32.
    gfx90a: &[(0x1c0, "v_mad_legacy_f32"), (0x1c1, "v_mad_f32")],
    gfx942: &[(0x208, "v_lshl_add_u64")],
    // gfx950 only (LLVM's gfx950 disassembly of our objects: `D234...`).
    gfx950: &[(0x233, "v_bitop3_b16"), (0x234, "v_bitop3_b32"), (0x267, "v_cvt_pk_f16_f32")],
    gfx11: &[
        (0x209, "v_fma_dx9_zero_f32"),
        (0x20a, "v_mad_i32_i24"),
        (0x20b, "v_mad_u32_u24"),
        (0x20c, "v_cubeid_f32"),
        (0x20d, "v_cubesc_f32"),
        (0x20e, "v_cubetc_f32"),
        (0x20f, "v_cubema_f32"),
        (0x210, "v_bfe_u32"),
        (0x211, "v_bfe_i32"),
        (0x212, "v_bfi_b32"),
        (0x213, "v_fma_f32"),
        (0x214, "v_fma_f64"),
        (0x215, "v_lerp_u8"),
        (0x216, "v_alignbit_b32"),
        (0x217, "v_alignbyte_b32"),
        (0x218, "v_mullit_f32"),
        (0x219, "v_min3_f32"),
        (0x21a, "v_min3_i32"),
        (0x21b, "v_min3_u32"),
        (0x21c, "v_max3_f32"),
        (0x21d, "v_max3_i32"),
        (0x21e, "v_max3_u32"),
        (0x21f, "v_med3_f32"),
        (0x220, "v_med3_i32"),
        (0x221, "v_med3_u32"),
        (0x222, "v_sad_u8"),
        (0x223, "v_sad_hi_u8"),
        (0x224, "v_sad_u16"),
        (0x225, "v_sad_u32"),
        (0x226, "v_cvt_pk_u8_f32"),
        (0x227, "v_div_fixup_f32"),
        (0x228, "v_div_fixup_f64"),
        (0x237, "v_div_fmas_f32"),
        (0x238, "v_div_fmas_f64"),
        (0x239, "v_msad_u8"),
        (0x23a, "v_qsad_pk_u16_u8"),
        (0x23b, "v_mqsad_pk_u16_u8"),
        (0x23d, "v_mqsad_u32_u8"),
        (0x240, "v_xor3_b32"),
        (0x241, "v_mad_u16"),
        (0x244, "v_perm_b32"),
        (0x245, "v_xad_u32"),
        (0x246, "v_lshl_add_u32"),
        (0x247, "v_add_lshl_u32"),
        (0x248, "v_fma_f16"),
        (0x249, "v_min3_f16"),
        (0x24a, "v_min3_i16"),
        (0x24b, "v_min3_u16"),
        (0x24c, "v_max3_f16"),
        (0x24d, "v_max3_i16"),
        (0x24e, "v_max3_u16"),
        (0x24f, "v_med3_f16"),
        (0x250, "v_med3_i16"),
        (0x251, "v_med3_u16"),
        (0x253, "v_mad_i16"),
        (0x254, "v_div_fixup_f16"),
        (0x255, "v_add3_u32"),
        (0x256, "v_lshl_or_b32"),
        (0x257, "v_and_or_b32"),
        (0x258, "v_or3_b32"),
        (0x259, "v_mad_u32_u16"),
        (0x25a, "v_mad_i32_i16"),
        (0x25b, "v_permlane16_b32"),
        (0x25c, "v_permlanex16_b32"),
        (0x25d, "v_cndmask_b16"),
        (0x25e, "v_maxmin_f32"),
        (0x25f, "v_minmax_f32"),
        (0x260, "v_maxmin_f16"),
        (0x261, "v_minmax_f16"),
        (0x262, "v_maxmin_u32"),
        (0x263, "v_minmax_u32"),
        (0x264, "v_maxmin_i32"),
        (0x265, "v_minmax_i32"),
        (0x266, "v_dot2_f16_f16"),
        (0x267, "v_dot2_bf16_bf16"),
        (0x2fc, "v_div_scale_f32"),
        (0x2fd, "v_div_scale_f64"),
        (0x2fe, "v_mad_u64_u32"),
        (0x2ff, "v_mad_i64_i32"),
        (0x300, "v_add_co_u32"),
        (0x301, "v_sub_co_u32"),
        (0x302, "v_subrev_co_u32"),
        (0x303, "v_add_nc_u16"),
        (0x304, "v_sub_nc_u16"),
        (0x305, "v_mul_lo_u16"),
        (0x306, "v_cvt_pk_i16_f32"),
        (0x307, "v_cvt_pk_u16_f32"),
        (0x309, "v_max_u16"),
        (0x30a, "v_max_i16"),
        (0x30b, "v_min_u16"),
        (0x30c, "v_min_i16"),
        (0x30d, "v_add_nc_i16"),
        (0x30e, "v_sub_nc_i16"),
        (0x311, "v_pack_b32_f16"),
        (0x312, "v_cvt_pk_norm_i16_f16"),
        (0x313, "v_cvt_pk_norm_u16_f16"),
        (0x31c, "v_ldexp_f32"),
        (0x31d, "v_bfm_b32"),
        (0x31e, "v_bcnt_u32_b32"),
        (0x31f, "v_mbcnt_lo_u32_b32"),
        (0x320, "v_mbcnt_hi_u32_b32"),
        (0x321, "v_cvt_pk_norm_i16_f32"),
        (0x322, "v_cvt_pk_norm_u16_f32"),
        (0x323, "v_cvt_pk_u16_u32"),
        (0x324, "v_cvt_pk_i16_i32"),
        (0x325, "v_sub_nc_i32"),
        (0x326, "v_add_nc_i32"),
        (0x327, "v_add_f64"),
        (0x328, "v_mul_f64"),
        (0x329, "v_min_f64"),
        (0x32a, "v_max_f64"),
        (0x32b, "v_ldexp_f64"),
        (0x32c, "v_mul_lo_u32"),
        (0x32d, "v_mul_hi_u32"),
        (0x32e, "v_mul_hi_i32"),
        (0x32f, "v_trig_preop_f64"),
        (0x338, "v_lshlrev_b16"),
        (0x339, "v_lshrrev_b16"),
        (0x33a, "v_ashrrev_i16"),
        (0x33c, "v_lshlrev_b64"),
        (0x33d, "v_lshrrev_b64"),
        (0x33e, "v_ashrrev_i64"),
        (0x360, "v_readlane_b32"),
        (0x361, "v_writelane_b32"),
        (0x362, "v_and_b16"),
        (0x363, "v_or_b16"),
        (0x364, "v_xor_b16"),
    ],
    // GFX12 renames (LLVM VOP3Instructions.td `_Renamed_gfx12`); v_lshlrev_b64 is a
    // VOP2 opcode on GFX12 (its VOP3 form is 0x11f).
    gfx12: &[
        (0x2fe, "v_mad_co_u64_u32"),
        (0x2ff, "v_mad_co_i64_i32"),
    ],
    gfx11_only: &[0x33c, 0x25e, 0x25f, 0x510, 0x50f],
    ..Tables::NONE
};

/// VOP3B opcodes (a scalar destination in [14:8] instead of abs/op_sel/clamp... bits).
fn is_vop3b(fam: Family, op: u32) -> bool {
    match fam {
        Family::Gfx9 => matches!(op, 0x119..=0x11e | 0x1e0 | 0x1e1 | 0x1e8 | 0x1e9),
        Family::Gfx11 | Family::Gfx12 => matches!(op, 0x120..=0x122 | 0x2fc..=0x2ff | 0x300..=0x302),
    }
}

/// Name and suffix of a VOP3 opcode.
fn name(arch: Arch, op: u32) -> Option<(&'static str, Variant)> {
    let fam = arch.family();
    let (vop2_base, vop1_base, own) = match fam {
        Family::Gfx9 => (0x100, 0x140, 0x1c0),
        Family::Gfx11 | Family::Gfx12 => (0x100, 0x180, 0x200),
    };
    if op < 0x100 {
        return vopc::name(fam, op).map(|n| (n, Variant::E64));
    }
    if op < vop1_base {
        return vop2::VOP2
            .find(arch, op - vop2_base)
            .map(|n| (n, Variant::E64));
    }
    if op < own {
        return vop1::VOP1
            .find(arch, op - vop1_base)
            .map(|n| (n, Variant::E64));
    }
    Some((VOP3.find(arch, op)?, Variant::Plain))
}

pub(super) fn decode(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let w1 = w.word(1)?;
    let op = (w0 >> 16) & 0x3ff;
    let fam = w.arch.family();
    let (name, variant) = name(w.arch, op).ok_or_else(|| w.unknown("VOP3", op))?;
    let mut i = Inst::new(w.addr(), Enc::Vop3, op as u16, name);
    i.len = 8;
    i.variant = variant;
    // VOP3-encoded readlane/readfirstlane/compares write SGPRs through vdst.
    let vdst = w0 & 0xff;
    i.dst = if op < 0x100 || matches!(name, "v_readlane_b32" | "v_readfirstlane_b32") {
        Operand::Sgpr(vdst as u8)
    } else {
        Operand::Vgpr(vdst as u16)
    };
    if is_vop3b(fam, op) {
        i.sdst = Operand::Sgpr(((w0 >> 8) & 0x7f) as u8);
        i.mods.clamp = w0 >> 15 & 1 != 0;
    } else {
        i.mods.abs = ((w0 >> 8) & 7) as u8;
        i.mods.opsel = ((w0 >> 11) & 0xf) as u8;
        i.mods.clamp = w0 >> 15 & 1 != 0;
    }
    i.src = Operand::src9x3(w1);
    i.mods.omod = ((w1 >> 27) & 3) as u8;
    i.mods.neg = ((w1 >> 29) & 7) as u8;
    Ok(i)
}
