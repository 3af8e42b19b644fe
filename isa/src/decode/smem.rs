//! Scalar memory (SMEM), 64 bits.
//!
//! GFX9: `110000 op[25:18] imm[17] glc[16] nv[15] soe[14] sdata[12:6] sbase[5:0]`,
//! second word `soffset[31:25] offset[20:0]`. GFX11: `111101 op[25:18] glc[14] dlc[13]
//! sdata[12:6] sbase[5:0]`, second word `soffset[31:25] offset[20:0]` (signed).
//! `sbase` counts SGPR pairs.

use super::tables::Tables;
use super::{DecodeError, Enc, Inst, Operand, Words};
use crate::arch::Family;

const SMEM: Tables = Tables {
    gfx9: &[
        (0, "s_load_dword"),
        (1, "s_load_dwordx2"),
        (2, "s_load_dwordx4"),
        (3, "s_load_dwordx8"),
        (4, "s_load_dwordx16"),
        (8, "s_buffer_load_dword"),
        (9, "s_buffer_load_dwordx2"),
        (10, "s_buffer_load_dwordx4"),
        (11, "s_buffer_load_dwordx8"),
        (12, "s_buffer_load_dwordx16"),
        (16, "s_store_dword"),
        (17, "s_store_dwordx2"),
        (18, "s_store_dwordx4"),
        (32, "s_dcache_inv"),
        (33, "s_dcache_wb"),
        (34, "s_dcache_inv_vol"),
        (35, "s_dcache_wb_vol"),
        (36, "s_memtime"),
        (37, "s_memrealtime"),
    ],
    gfx950: &[],
    gfx11: &[
        (0, "s_load_b32"),
        (1, "s_load_b64"),
        (2, "s_load_b128"),
        (3, "s_load_b256"),
        (4, "s_load_b512"),
        (8, "s_buffer_load_b32"),
        (9, "s_buffer_load_b64"),
        (10, "s_buffer_load_b128"),
        (11, "s_buffer_load_b256"),
        (12, "s_buffer_load_b512"),
        (32, "s_gl1_inv"),
        (33, "s_dcache_inv"),
    ],
    ..Tables::NONE
};

pub(super) fn decode(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let w1 = w.word(1)?;
    let op = (w0 >> 18) & 0xff;
    let gfx9 = w.arch.family() == Family::Gfx9;
    let mut i = w.inst(Enc::Smem, "SMEM", op, SMEM.find(w.arch, op))?;
    i.len = 8;
    i.dst = Operand::Sgpr(((w0 >> 6) & 0x7f) as u8);
    i.src[0] = Operand::Sgpr(((w0 & 0x3f) * 2) as u8);
    let off21 = ((w1 & 0x1f_ffff) << 11) as i32 >> 11;
    if gfx9 {
        let imm = w0 >> 17 & 1 != 0;
        let soe = w0 >> 14 & 1 != 0;
        i.mods.glc = w0 >> 16 & 1 != 0;
        if imm {
            i.imm = off21 as i64;
            if soe {
                i.src[1] = Operand::Sgpr((w1 >> 25) as u8);
            }
        } else {
            // imm = 0: the offset field names an SGPR.
            i.src[1] = Operand::Sgpr((w1 & 0x7f) as u8);
        }
    } else {
        i.mods.glc = w0 >> 14 & 1 != 0;
        i.mods.dlc = w0 >> 13 & 1 != 0;
        i.imm = off21 as i64;
        // soffset 124 is NULL (reads as 0).
        i.src[1] = Operand::Sgpr((w1 >> 25) as u8);
    }
    Ok(i)
}
