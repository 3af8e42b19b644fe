//! VOP1: `0111111 vdst[24:17] op[16:9] src0[8:0]` on GFX9 and GFX11. On GFX9 a src0
//! of 249 selects SDWA (second word), 250 DPP.

use super::tables::{Table, find};
use super::{DecodeError, Enc, Inst, Operand, Variant, Words};
use crate::arch::Arch;

pub(super) const GFX9_VOP1: Table = &[
    (0, "v_nop"), (1, "v_mov_b32"), (2, "v_readfirstlane_b32"), (3, "v_cvt_i32_f64"),
    (4, "v_cvt_f64_i32"), (5, "v_cvt_f32_i32"), (6, "v_cvt_f32_u32"), (7, "v_cvt_u32_f32"),
    (8, "v_cvt_i32_f32"), (10, "v_cvt_f16_f32"), (11, "v_cvt_f32_f16"),
    (12, "v_cvt_rpi_i32_f32"), (13, "v_cvt_flr_i32_f32"), (14, "v_cvt_off_f32_i4"),
    (15, "v_cvt_f32_f64"), (16, "v_cvt_f64_f32"), (17, "v_cvt_f32_ubyte0"),
    (18, "v_cvt_f32_ubyte1"), (19, "v_cvt_f32_ubyte2"), (20, "v_cvt_f32_ubyte3"),
    (21, "v_cvt_u32_f64"), (22, "v_cvt_f64_u32"), (23, "v_trunc_f64"), (24, "v_ceil_f64"),
    (25, "v_rndne_f64"), (26, "v_floor_f64"), (27, "v_fract_f32"), (28, "v_trunc_f32"),
    (29, "v_ceil_f32"), (30, "v_rndne_f32"), (31, "v_floor_f32"), (32, "v_exp_f32"),
    (33, "v_log_f32"), (34, "v_rcp_f32"), (35, "v_rcp_iflag_f32"), (36, "v_rsq_f32"),
    (37, "v_rcp_f64"), (38, "v_rsq_f64"), (39, "v_sqrt_f32"), (40, "v_sqrt_f64"),
    (41, "v_sin_f32"), (42, "v_cos_f32"), (43, "v_not_b32"), (44, "v_bfrev_b32"),
    (45, "v_ffbh_u32"), (46, "v_ffbl_b32"), (47, "v_ffbh_i32"), (48, "v_frexp_exp_i32_f64"),
    (49, "v_frexp_mant_f64"), (50, "v_fract_f64"), (51, "v_frexp_exp_i32_f32"),
    (52, "v_frexp_mant_f32"), (53, "v_clrexcp"), (55, "v_screen_partition_4se_b32"),
    (57, "v_cvt_f16_u16"), (58, "v_cvt_f16_i16"), (59, "v_cvt_u16_f16"), (60, "v_cvt_i16_f16"),
    (61, "v_rcp_f16"), (62, "v_sqrt_f16"), (63, "v_rsq_f16"), (64, "v_log_f16"), (65, "v_exp_f16"),
    (66, "v_frexp_mant_f16"), (67, "v_frexp_exp_i16_f16"), (68, "v_floor_f16"), (69, "v_ceil_f16"),
    (70, "v_trunc_f16"), (71, "v_rndne_f16"), (72, "v_fract_f16"), (73, "v_sin_f16"),
    (74, "v_cos_f16"), (75, "v_exp_legacy_f32"), (76, "v_log_legacy_f32"),
    (77, "v_cvt_norm_i16_f16"), (78, "v_cvt_norm_u16_f16"), (79, "v_sat_pk_u8_i16"),
    (81, "v_swap_b32"),
];

/// gfx942 additions: `v_mov_b64` took opcode 56.
const GFX942_VOP1: Table = &[(56, "v_mov_b64")];

pub(super) const GFX11_VOP1: Table = &[
    (0, "v_nop"), (1, "v_mov_b32"), (2, "v_readfirstlane_b32"), (3, "v_cvt_i32_f64"),
    (4, "v_cvt_f64_i32"), (5, "v_cvt_f32_i32"), (6, "v_cvt_f32_u32"), (7, "v_cvt_u32_f32"),
    (8, "v_cvt_i32_f32"), (10, "v_cvt_f16_f32"), (11, "v_cvt_f32_f16"),
    (12, "v_cvt_nearest_i32_f32"), (13, "v_cvt_floor_i32_f32"), (14, "v_cvt_off_f32_i4"),
    (15, "v_cvt_f32_f64"), (16, "v_cvt_f64_f32"), (17, "v_cvt_f32_ubyte0"),
    (18, "v_cvt_f32_ubyte1"), (19, "v_cvt_f32_ubyte2"), (20, "v_cvt_f32_ubyte3"),
    (21, "v_cvt_u32_f64"), (22, "v_cvt_f64_u32"), (23, "v_trunc_f64"), (24, "v_ceil_f64"),
    (25, "v_rndne_f64"), (26, "v_floor_f64"), (27, "v_pipeflush"), (28, "v_mov_b16"),
    (32, "v_fract_f32"), (33, "v_trunc_f32"), (34, "v_ceil_f32"), (35, "v_rndne_f32"),
    (36, "v_floor_f32"), (37, "v_exp_f32"), (39, "v_log_f32"), (42, "v_rcp_f32"),
    (43, "v_rcp_iflag_f32"), (46, "v_rsq_f32"), (47, "v_rcp_f64"), (49, "v_rsq_f64"),
    (51, "v_sqrt_f32"), (52, "v_sqrt_f64"), (53, "v_sin_f32"), (54, "v_cos_f32"),
    (55, "v_not_b32"), (56, "v_bfrev_b32"), (57, "v_clz_i32_u32"), (58, "v_ctz_i32_b32"),
    (59, "v_cls_i32"), (60, "v_frexp_exp_i32_f64"), (61, "v_frexp_mant_f64"), (62, "v_fract_f64"),
    (63, "v_frexp_exp_i32_f32"), (64, "v_frexp_mant_f32"), (66, "v_movreld_b32"),
    (67, "v_movrels_b32"), (68, "v_movrelsd_b32"), (72, "v_movrelsd_2_b32"),
    (80, "v_cvt_f16_u16"), (81, "v_cvt_f16_i16"), (82, "v_cvt_u16_f16"), (83, "v_cvt_i16_f16"),
    (84, "v_rcp_f16"), (85, "v_sqrt_f16"), (86, "v_rsq_f16"), (87, "v_log_f16"), (88, "v_exp_f16"),
    (89, "v_frexp_mant_f16"), (90, "v_frexp_exp_i16_f16"), (91, "v_floor_f16"), (92, "v_ceil_f16"),
    (93, "v_trunc_f16"), (94, "v_rndne_f16"), (95, "v_fract_f16"), (96, "v_sin_f16"),
    (97, "v_cos_f16"), (98, "v_sat_pk_u8_i16"), (99, "v_cvt_norm_i16_f16"),
    (100, "v_cvt_norm_u16_f16"), (101, "v_swap_b32"), (102, "v_swap_b16"), (103, "v_permlane64_b32"),
    (104, "v_swaprel_b32"), (105, "v_not_b16"), (106, "v_cvt_i32_i16"), (107, "v_cvt_u32_u16"),
];

/// The VOP1 mnemonic for an opcode (also used for VOP1 ops in VOP3 encoding).
pub(super) fn name(arch: Arch, op: u32) -> Option<&'static str> {
    match arch {
        Arch::Gfx942 => find(GFX942_VOP1, op).or_else(|| find(GFX9_VOP1, op)),
        Arch::Gfx90a => find(GFX9_VOP1, op),
        Arch::Gfx1100 => find(GFX11_VOP1, op),
    }
}

pub(super) fn decode(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let op = (w0 >> 9) & 0xff;
    let name = name(w.arch, op).ok_or_else(|| w.unknown("VOP1", op))?;
    let mut i = Inst::new(w.addr(), Enc::Vop1, op as u16, name);
    i.variant = Variant::E32;
    i.dst = Operand::Vgpr(((w0 >> 17) & 0xff) as u16);
    i.src[0] = Operand::src9(w0 & 0x1ff);
    if name == "v_readfirstlane_b32" {
        i.dst = Operand::Sgpr(((w0 >> 17) & 0x7f) as u8);
        i.variant = Variant::Plain;
    }
    super::vop2::sdwa_dpp(w, &mut i)?;
    super::vop2::gfx11_t16(w, &mut i);
    Ok(i)
}
