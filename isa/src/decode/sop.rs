//! Scalar ALU encodings: SOP1, SOP2, SOPK, SOPC, SOPP.
//!
//! GFX9 (CDNA2/CDNA3 guides): SOP2 `10 op[29:23] sdst[22:16] ssrc1[15:8] ssrc0[7:0]`,
//! SOPK `1011 op[27:23] sdst[22:16] simm16`, SOP1 `101111101 sdst op[15:8] ssrc0`,
//! SOPC `101111110 op[22:16] ssrc1 ssrc0`, SOPP `101111111 op[22:16] simm16`.
//! GFX11 (RDNA3 guide) keeps the field layout with renumbered opcodes.

use super::tables::{Table, find};
use super::{DecodeError, Enc, Inst, Operand, Words};
use crate::arch::Family;

const GFX9_SOP2: Table = &[
    (0, "s_add_u32"), (1, "s_sub_u32"), (2, "s_add_i32"), (3, "s_sub_i32"), (4, "s_addc_u32"),
    (5, "s_subb_u32"), (6, "s_min_i32"), (7, "s_min_u32"), (8, "s_max_i32"), (9, "s_max_u32"),
    (10, "s_cselect_b32"), (11, "s_cselect_b64"), (12, "s_and_b32"), (13, "s_and_b64"),
    (14, "s_or_b32"), (15, "s_or_b64"), (16, "s_xor_b32"), (17, "s_xor_b64"), (18, "s_andn2_b32"),
    (19, "s_andn2_b64"), (20, "s_orn2_b32"), (21, "s_orn2_b64"), (22, "s_nand_b32"),
    (23, "s_nand_b64"), (24, "s_nor_b32"), (25, "s_nor_b64"), (26, "s_xnor_b32"),
    (27, "s_xnor_b64"), (28, "s_lshl_b32"), (29, "s_lshl_b64"), (30, "s_lshr_b32"),
    (31, "s_lshr_b64"), (32, "s_ashr_i32"), (33, "s_ashr_i64"), (34, "s_bfm_b32"),
    (35, "s_bfm_b64"), (36, "s_mul_i32"), (37, "s_bfe_u32"), (38, "s_bfe_i32"), (39, "s_bfe_u64"),
    (40, "s_bfe_i64"), (42, "s_absdiff_i32"), (44, "s_mul_hi_u32"), (45, "s_mul_hi_i32"),
    (46, "s_lshl1_add_u32"), (47, "s_lshl2_add_u32"), (48, "s_lshl3_add_u32"),
    (49, "s_lshl4_add_u32"), (50, "s_pack_ll_b32_b16"), (51, "s_pack_lh_b32_b16"),
    (52, "s_pack_hh_b32_b16"),
];

const GFX11_SOP2: Table = &[
    (0, "s_add_u32"), (1, "s_sub_u32"), (2, "s_add_i32"), (3, "s_sub_i32"), (4, "s_addc_u32"),
    (5, "s_subb_u32"), (6, "s_absdiff_i32"), (8, "s_lshl_b32"), (9, "s_lshl_b64"),
    (10, "s_lshr_b32"), (11, "s_lshr_b64"), (12, "s_ashr_i32"), (13, "s_ashr_i64"),
    (14, "s_lshl1_add_u32"), (15, "s_lshl2_add_u32"), (16, "s_lshl3_add_u32"),
    (17, "s_lshl4_add_u32"), (18, "s_min_i32"), (19, "s_min_u32"), (20, "s_max_i32"),
    (21, "s_max_u32"), (22, "s_and_b32"), (23, "s_and_b64"), (24, "s_or_b32"), (25, "s_or_b64"),
    (26, "s_xor_b32"), (27, "s_xor_b64"), (28, "s_nand_b32"), (29, "s_nand_b64"),
    (30, "s_nor_b32"), (31, "s_nor_b64"), (32, "s_xnor_b32"), (33, "s_xnor_b64"),
    (34, "s_and_not1_b32"), (35, "s_and_not1_b64"), (36, "s_or_not1_b32"), (37, "s_or_not1_b64"),
    (38, "s_bfe_u32"), (39, "s_bfe_i32"), (40, "s_bfe_u64"), (41, "s_bfe_i64"), (42, "s_bfm_b32"),
    (43, "s_bfm_b64"), (44, "s_mul_i32"), (45, "s_mul_hi_u32"), (46, "s_mul_hi_i32"),
    (48, "s_cselect_b32"), (49, "s_cselect_b64"), (50, "s_pack_ll_b32_b16"),
    (51, "s_pack_lh_b32_b16"), (52, "s_pack_hh_b32_b16"), (53, "s_pack_hl_b32_b16"),
];

const GFX9_SOPK: Table = &[
    (0, "s_movk_i32"), (1, "s_cmovk_i32"), (2, "s_cmpk_eq_i32"), (3, "s_cmpk_lg_i32"),
    (4, "s_cmpk_gt_i32"), (5, "s_cmpk_ge_i32"), (6, "s_cmpk_lt_i32"), (7, "s_cmpk_le_i32"),
    (8, "s_cmpk_eq_u32"), (9, "s_cmpk_lg_u32"), (10, "s_cmpk_gt_u32"), (11, "s_cmpk_ge_u32"),
    (12, "s_cmpk_lt_u32"), (13, "s_cmpk_le_u32"), (14, "s_addk_i32"), (15, "s_mulk_i32"),
    (17, "s_getreg_b32"), (18, "s_setreg_b32"), (20, "s_setreg_imm32_b32"), (21, "s_call_b64"),
];

const GFX11_SOPK: Table = &[
    (0, "s_movk_i32"), (1, "s_version"), (2, "s_cmovk_i32"), (3, "s_cmpk_eq_i32"),
    (4, "s_cmpk_lg_i32"), (5, "s_cmpk_gt_i32"), (6, "s_cmpk_ge_i32"), (7, "s_cmpk_lt_i32"),
    (8, "s_cmpk_le_i32"), (9, "s_cmpk_eq_u32"), (10, "s_cmpk_lg_u32"), (11, "s_cmpk_gt_u32"),
    (12, "s_cmpk_ge_u32"), (13, "s_cmpk_lt_u32"), (14, "s_cmpk_le_u32"), (15, "s_addk_i32"),
    (16, "s_mulk_i32"), (17, "s_getreg_b32"), (18, "s_setreg_b32"), (19, "s_setreg_imm32_b32"),
    (20, "s_call_b64"), (24, "s_waitcnt_vscnt"), (25, "s_waitcnt_vmcnt"),
    (26, "s_waitcnt_expcnt"), (27, "s_waitcnt_lgkmcnt"),
];

const GFX9_SOP1: Table = &[
    (0, "s_mov_b32"), (1, "s_mov_b64"), (2, "s_cmov_b32"), (3, "s_cmov_b64"), (4, "s_not_b32"),
    (5, "s_not_b64"), (6, "s_wqm_b32"), (7, "s_wqm_b64"), (8, "s_brev_b32"), (9, "s_brev_b64"),
    (10, "s_bcnt0_i32_b32"), (11, "s_bcnt0_i32_b64"), (12, "s_bcnt1_i32_b32"),
    (13, "s_bcnt1_i32_b64"), (14, "s_ff0_i32_b32"), (15, "s_ff0_i32_b64"), (16, "s_ff1_i32_b32"),
    (17, "s_ff1_i32_b64"), (18, "s_flbit_i32_b32"), (19, "s_flbit_i32_b64"), (20, "s_flbit_i32"),
    (21, "s_flbit_i32_i64"), (22, "s_sext_i32_i8"), (23, "s_sext_i32_i16"), (24, "s_bitset0_b32"),
    (25, "s_bitset0_b64"), (26, "s_bitset1_b32"), (27, "s_bitset1_b64"), (28, "s_getpc_b64"),
    (29, "s_setpc_b64"), (30, "s_swappc_b64"), (31, "s_rfe_b64"), (32, "s_and_saveexec_b64"),
    (33, "s_or_saveexec_b64"), (34, "s_xor_saveexec_b64"), (35, "s_andn2_saveexec_b64"),
    (36, "s_orn2_saveexec_b64"), (37, "s_nand_saveexec_b64"), (38, "s_nor_saveexec_b64"),
    (39, "s_xnor_saveexec_b64"), (40, "s_quadmask_b32"), (41, "s_quadmask_b64"),
    (42, "s_movrels_b32"), (43, "s_movrels_b64"), (44, "s_movreld_b32"), (45, "s_movreld_b64"),
    (48, "s_abs_i32"), (51, "s_andn1_saveexec_b64"), (52, "s_orn1_saveexec_b64"),
    (53, "s_andn1_wrexec_b64"), (54, "s_andn2_wrexec_b64"), (55, "s_bitreplicate_b64_b32"),
];

const GFX11_SOP1: Table = &[
    (0, "s_mov_b32"), (1, "s_mov_b64"), (2, "s_cmov_b32"), (3, "s_cmov_b64"), (4, "s_brev_b32"),
    (5, "s_brev_b64"), (8, "s_ctz_i32_b32"), (9, "s_ctz_i32_b64"), (10, "s_clz_i32_u32"),
    (11, "s_clz_i32_u64"), (12, "s_cls_i32"), (13, "s_cls_i32_i64"), (14, "s_sext_i32_i8"),
    (15, "s_sext_i32_i16"), (16, "s_bitset0_b32"), (17, "s_bitset0_b64"), (18, "s_bitset1_b32"),
    (19, "s_bitset1_b64"), (20, "s_bitreplicate_b64_b32"), (21, "s_abs_i32"),
    (22, "s_bcnt0_i32_b32"), (23, "s_bcnt0_i32_b64"), (24, "s_bcnt1_i32_b32"),
    (25, "s_bcnt1_i32_b64"), (26, "s_quadmask_b32"), (27, "s_quadmask_b64"), (28, "s_wqm_b32"),
    (29, "s_wqm_b64"), (30, "s_not_b32"), (31, "s_not_b64"), (32, "s_and_saveexec_b32"),
    (33, "s_and_saveexec_b64"), (34, "s_or_saveexec_b32"), (35, "s_or_saveexec_b64"),
    (36, "s_xor_saveexec_b32"), (37, "s_xor_saveexec_b64"), (38, "s_nand_saveexec_b32"),
    (39, "s_nand_saveexec_b64"), (40, "s_nor_saveexec_b32"), (41, "s_nor_saveexec_b64"),
    (42, "s_xnor_saveexec_b32"), (43, "s_xnor_saveexec_b64"), (44, "s_and_not0_saveexec_b32"),
    (45, "s_and_not0_saveexec_b64"), (46, "s_or_not0_saveexec_b32"),
    (47, "s_or_not0_saveexec_b64"), (48, "s_and_not1_saveexec_b32"),
    (49, "s_and_not1_saveexec_b64"), (50, "s_or_not1_saveexec_b32"),
    (51, "s_or_not1_saveexec_b64"), (52, "s_and_not0_wrexec_b32"), (53, "s_and_not0_wrexec_b64"),
    (54, "s_and_not1_wrexec_b32"), (55, "s_and_not1_wrexec_b64"), (64, "s_movrels_b32"),
    (65, "s_movrels_b64"), (66, "s_movreld_b32"), (67, "s_movreld_b64"), (68, "s_movrelsd_2_b32"),
    (71, "s_getpc_b64"), (72, "s_setpc_b64"), (73, "s_swappc_b64"), (74, "s_rfe_b64"),
    (76, "s_sendmsg_rtn_b32"), (77, "s_sendmsg_rtn_b64"),
];

const GFX9_SOPC: Table = &[
    (0, "s_cmp_eq_i32"), (1, "s_cmp_lg_i32"), (2, "s_cmp_gt_i32"), (3, "s_cmp_ge_i32"),
    (4, "s_cmp_lt_i32"), (5, "s_cmp_le_i32"), (6, "s_cmp_eq_u32"), (7, "s_cmp_lg_u32"),
    (8, "s_cmp_gt_u32"), (9, "s_cmp_ge_u32"), (10, "s_cmp_lt_u32"), (11, "s_cmp_le_u32"),
    (12, "s_bitcmp0_b32"), (13, "s_bitcmp1_b32"), (14, "s_bitcmp0_b64"), (15, "s_bitcmp1_b64"),
    (16, "s_setvskip"), (17, "s_set_gpr_idx_on"), (18, "s_cmp_eq_u64"), (19, "s_cmp_lg_u64"),
];

const GFX11_SOPC: Table = &[
    (0, "s_cmp_eq_i32"), (1, "s_cmp_lg_i32"), (2, "s_cmp_gt_i32"), (3, "s_cmp_ge_i32"),
    (4, "s_cmp_lt_i32"), (5, "s_cmp_le_i32"), (6, "s_cmp_eq_u32"), (7, "s_cmp_lg_u32"),
    (8, "s_cmp_gt_u32"), (9, "s_cmp_ge_u32"), (10, "s_cmp_lt_u32"), (11, "s_cmp_le_u32"),
    (12, "s_bitcmp0_b32"), (13, "s_bitcmp1_b32"), (14, "s_bitcmp0_b64"), (15, "s_bitcmp1_b64"),
    (16, "s_cmp_eq_u64"), (17, "s_cmp_lg_u64"),
];

const GFX9_SOPP: Table = &[
    (0, "s_nop"), (1, "s_endpgm"), (2, "s_branch"), (3, "s_wakeup"), (4, "s_cbranch_scc0"),
    (5, "s_cbranch_scc1"), (6, "s_cbranch_vccz"), (7, "s_cbranch_vccnz"), (8, "s_cbranch_execz"),
    (9, "s_cbranch_execnz"), (10, "s_barrier"), (11, "s_setkill"), (12, "s_waitcnt"),
    (13, "s_sethalt"), (14, "s_sleep"), (15, "s_setprio"), (16, "s_sendmsg"),
    (17, "s_sendmsghalt"), (18, "s_trap"), (19, "s_icache_inv"), (20, "s_incperflevel"),
    (21, "s_decperflevel"), (22, "s_ttracedata"), (23, "s_cbranch_cdbgsys"),
    (24, "s_cbranch_cdbguser"), (25, "s_cbranch_cdbgsys_or_user"),
    (26, "s_cbranch_cdbgsys_and_user"), (27, "s_endpgm_saved"), (28, "s_set_gpr_idx_off"),
    (29, "s_set_gpr_idx_mode"),
];

const GFX11_SOPP: Table = &[
    (0, "s_nop"), (1, "s_setkill"), (2, "s_sethalt"), (3, "s_sleep"),
    (4, "s_set_inst_prefetch_distance"), (5, "s_clause"), (7, "s_delay_alu"),
    (8, "s_waitcnt_depctr"), (9, "s_waitcnt"), (10, "s_wait_idle"), (11, "s_wait_event"),
    (16, "s_trap"), (17, "s_round_mode"), (18, "s_denorm_mode"), (31, "s_code_end"),
    (32, "s_branch"), (33, "s_cbranch_scc0"), (34, "s_cbranch_scc1"), (35, "s_cbranch_vccz"),
    (36, "s_cbranch_vccnz"), (37, "s_cbranch_execz"), (38, "s_cbranch_execnz"),
    (39, "s_cbranch_cdbgsys"), (40, "s_cbranch_cdbguser"), (41, "s_cbranch_cdbgsys_or_user"),
    (42, "s_cbranch_cdbgsys_and_user"), (48, "s_endpgm"), (49, "s_endpgm_saved"),
    (52, "s_wakeup"), (53, "s_setprio"), (54, "s_sendmsg"), (55, "s_sendmsghalt"),
    (56, "s_incperflevel"), (57, "s_decperflevel"), (58, "s_ttracedata"),
    (59, "s_ttracedata_imm"), (60, "s_icache_inv"), (61, "s_barrier"),
];

fn pick(w: &Words, g9: Table, g11: Table) -> Table {
    match w.arch.family() {
        Family::Gfx9 => g9,
        Family::Gfx11 => g11,
    }
}

pub(super) fn sop2(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let op = (w0 >> 23) & 0x7f;
    let name = find(pick(w, GFX9_SOP2, GFX11_SOP2), op).ok_or_else(|| w.unknown("SOP2", op))?;
    let mut i = Inst::new(w.addr(), Enc::Sop2, op as u16, name);
    i.dst = Operand::sdst7(w0 >> 16);
    i.src = [Operand::ssrc8(w0), Operand::ssrc8(w0 >> 8), Operand::None];
    Ok(i)
}

pub(super) fn sopk(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let op = (w0 >> 23) & 0x1f;
    let name = find(pick(w, GFX9_SOPK, GFX11_SOPK), op).ok_or_else(|| w.unknown("SOPK", op))?;
    let mut i = Inst::new(w.addr(), Enc::Sopk, op as u16, name);
    i.dst = Operand::sdst7(w0 >> 16);
    i.imm = (w0 & 0xffff) as u16 as i16 as i64;
    Ok(i)
}

pub(super) fn sop1(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let op = (w0 >> 8) & 0xff;
    let name = find(pick(w, GFX9_SOP1, GFX11_SOP1), op).ok_or_else(|| w.unknown("SOP1", op))?;
    let mut i = Inst::new(w.addr(), Enc::Sop1, op as u16, name);
    i.dst = Operand::sdst7(w0 >> 16);
    i.src[0] = Operand::ssrc8(w0);
    Ok(i)
}

pub(super) fn sopc(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let op = (w0 >> 16) & 0x7f;
    let name = find(pick(w, GFX9_SOPC, GFX11_SOPC), op).ok_or_else(|| w.unknown("SOPC", op))?;
    let mut i = Inst::new(w.addr(), Enc::Sopc, op as u16, name);
    i.src = [Operand::ssrc8(w0), Operand::ssrc8(w0 >> 8), Operand::None];
    Ok(i)
}

pub(super) fn sopp(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let op = (w0 >> 16) & 0x7f;
    let name = find(pick(w, GFX9_SOPP, GFX11_SOPP), op).ok_or_else(|| w.unknown("SOPP", op))?;
    let mut i = Inst::new(w.addr(), Enc::Sopp, op as u16, name);
    i.imm = (w0 & 0xffff) as u16 as i16 as i64;
    Ok(i)
}
