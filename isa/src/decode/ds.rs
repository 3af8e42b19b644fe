//! LDS/GDS (DS), 64 bits. GFX9: `110110 acc[25] op[24:17] gds[16] offset1[15:8]
//! offset0[7:0]` (acc: gfx90a/gfx942 data in AccVGPRs); GFX11: `110110 op[25:18]
//! gds[17] offset1 offset0`. Second word `vdst[31:24] data1[23:16] data0[15:8]
//! addr[7:0]`.

use super::tables::Tables;
use super::{DecodeError, Enc, Inst, Operand, Words};
use crate::arch::Family;

const DS: Tables = Tables {
    both: &[
        (0, "ds_add_u32"),
        (1, "ds_sub_u32"),
        (2, "ds_rsub_u32"),
        (3, "ds_inc_u32"),
        (4, "ds_dec_u32"),
        (5, "ds_min_i32"),
        (6, "ds_max_i32"),
        (7, "ds_min_u32"),
        (8, "ds_max_u32"),
        (9, "ds_and_b32"),
        (10, "ds_or_b32"),
        (11, "ds_xor_b32"),
        (12, "ds_mskor_b32"),
        (18, "ds_min_f32"),
        (19, "ds_max_f32"),
        (20, "ds_nop"),
        (21, "ds_add_f32"),
        (32, "ds_add_rtn_u32"),
    ],
    gfx9: &[
        (13, "ds_write_b32"),
        (14, "ds_write2_b32"),
        (15, "ds_write2st64_b32"),
        (16, "ds_cmpst_b32"),
        (17, "ds_cmpst_f32"),
        (29, "ds_write_addtid_b32"),
        (30, "ds_write_b8"),
        (31, "ds_write_b16"),
        (33, "ds_sub_rtn_u32"),
        (45, "ds_wrxchg_rtn_b32"),
        (53, "ds_add_rtn_f32"),
        (54, "ds_read_b32"),
        (55, "ds_read2_b32"),
        (56, "ds_read2st64_b32"),
        (57, "ds_read_i8"),
        (58, "ds_read_u8"),
        (59, "ds_read_i16"),
        (60, "ds_read_u16"),
        (61, "ds_swizzle_b32"),
        (62, "ds_permute_b32"),
        (63, "ds_bpermute_b32"),
        (64, "ds_add_u64"),
        (77, "ds_write_b64"),
        (78, "ds_write2_b64"),
        (79, "ds_write2st64_b64"),
        (84, "ds_write_b8_d16_hi"),
        (85, "ds_write_b16_d16_hi"),
        (86, "ds_read_u8_d16"),
        (87, "ds_read_u8_d16_hi"),
        (88, "ds_read_i8_d16"),
        (89, "ds_read_i8_d16_hi"),
        (90, "ds_read_u16_d16"),
        (91, "ds_read_u16_d16_hi"),
        (118, "ds_read_b64"),
        (119, "ds_read2_b64"),
        (120, "ds_read2st64_b64"),
        (182, "ds_read_addtid_b32"),
        (189, "ds_consume"),
        (190, "ds_append"),
        (222, "ds_write_b96"),
        (223, "ds_write_b128"),
        (254, "ds_read_b96"),
        (255, "ds_read_b128"),
    ],
    gfx950: &[],
    gfx11: &[
        (13, "ds_store_b32"),
        (14, "ds_store_2addr_b32"),
        (15, "ds_store_2addr_stride64_b32"),
        (16, "ds_cmpstore_b32"),
        (17, "ds_cmpstore_f32"),
        (30, "ds_store_b8"),
        (31, "ds_store_b16"),
        (54, "ds_load_b32"),
        (55, "ds_load_2addr_b32"),
        (56, "ds_load_2addr_stride64_b32"),
        (57, "ds_load_i8"),
        (58, "ds_load_u8"),
        (59, "ds_load_i16"),
        (60, "ds_load_u16"),
        // GFX10 moved the swizzle and permutes (RDNA3 guide; llvm-mc's GFX10
        // encodings agree) and put consume/append/ordered_count at 61-63.
        (53, "ds_swizzle_b32"),
        (61, "ds_consume"),
        (62, "ds_append"),
        (63, "ds_ordered_count"),
        (77, "ds_store_b64"),
        (78, "ds_store_2addr_b64"),
        (79, "ds_store_2addr_stride64_b64"),
        (118, "ds_load_b64"),
        (119, "ds_load_2addr_b64"),
        (120, "ds_load_2addr_stride64_b64"),
        (160, "ds_store_b8_d16_hi"),
        (161, "ds_store_b16_d16_hi"),
        (162, "ds_load_u8_d16"),
        (163, "ds_load_u8_d16_hi"),
        (164, "ds_load_i8_d16"),
        (165, "ds_load_i8_d16_hi"),
        (166, "ds_load_u16_d16"),
        (167, "ds_load_u16_d16_hi"),
        (178, "ds_permute_b32"),
        (179, "ds_bpermute_b32"),
        (222, "ds_store_b96"),
        (223, "ds_store_b128"),
        (254, "ds_load_b96"),
        (255, "ds_load_b128"),
    ],
    ..Tables::NONE
};

pub(super) fn decode(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let w1 = w.word(1)?;
    // (op, gds, acc) of the first word.
    let (op, gds, acc) = match w.arch.family() {
        Family::Gfx9 => ((w0 >> 17) & 0xff, w0 >> 16 & 1, w0 >> 25 & 1),
        Family::Gfx11 | Family::Gfx12 => ((w0 >> 18) & 0xff, w0 >> 17 & 1, 0),
    };
    let mut i = w.inst(Enc::Ds, "DS", op, DS.find(w.arch, op))?;
    i.len = 8;
    i.imm = (w0 & 0xffff) as i64;
    i.mods.gds = gds != 0;
    i.mods.acc = acc as u8;
    let reg = |r: u32| Operand::data(i.mods.acc, r);
    let (dst, d0, d1) = (reg(w1 >> 24), reg((w1 >> 8) & 0xff), reg((w1 >> 16) & 0xff));
    i.dst = dst;
    i.src = [Operand::Vgpr((w1 & 0xff) as u16), d0, d1];
    Ok(i)
}
