//! Untyped buffer (MUBUF), 64 bits. GFX9: `111000 op[24:18] slc/nt[17] lds[16]
//! sc1[15] glc/sc0[14] idxen[13] offen[12] offset[11:0]`; GFX11: `111000 op[25:18]
//! ... offset[11:0]`. Second word `soffset[31:24] acc/tfe[23] srsrc[20:16] (x4)
//! vdata[15:8] vaddr[7:0]`. Our kernels use only the cache-maintenance forms.

use super::tables::Tables;
use super::{DecodeError, Enc, Inst, Operand, Words};
use crate::arch::Family;

const MUBUF: Tables = Tables {
    gfx9: &[
        (0x10, "buffer_load_ubyte"),
        (0x11, "buffer_load_sbyte"),
        (0x12, "buffer_load_ushort"),
        (0x13, "buffer_load_sshort"),
        (0x14, "buffer_load_dword"),
        (0x15, "buffer_load_dwordx2"),
        (0x16, "buffer_load_dwordx3"),
        (0x17, "buffer_load_dwordx4"),
        (0x18, "buffer_store_byte"),
        (0x1a, "buffer_store_short"),
        (0x1c, "buffer_store_dword"),
        (0x1d, "buffer_store_dwordx2"),
        (0x1e, "buffer_store_dwordx3"),
        (0x1f, "buffer_store_dwordx4"),
        (0x28, "buffer_wbl2"),
    ],
    gfx90a: &[
        (0x29, "buffer_invl2"),
        (0x3e, "buffer_wbinvl1"),
        (0x3f, "buffer_wbinvl1_vol"),
    ],
    gfx942: &[(0x29, "buffer_inv")],
    gfx950: &[],
    gfx11: &[
        (0x10, "buffer_load_u8"),
        (0x11, "buffer_load_i8"),
        (0x12, "buffer_load_u16"),
        (0x13, "buffer_load_i16"),
        (0x14, "buffer_load_b32"),
        (0x15, "buffer_load_b64"),
        (0x16, "buffer_load_b96"),
        (0x17, "buffer_load_b128"),
        (0x2b, "buffer_gl0_inv"),
        (0x2c, "buffer_gl1_inv"),
    ],
    ..Tables::NONE
};

pub(super) fn decode(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let w1 = w.word(1)?;
    let op = match w.arch.family() {
        Family::Gfx9 => (w0 >> 18) & 0x7f,
        Family::Gfx11 => (w0 >> 18) & 0xff,
        Family::Gfx12 => return Err(w.err("MUBUF is not a GFX12 encoding")),
    };
    let mut i = w.inst(Enc::Mubuf, "MUBUF", op, MUBUF.find(w.arch, op))?;
    i.len = 8;
    i.imm = (w0 & 0xfff) as i64;
    i.mods.glc = w0 >> 14 & 1 != 0;
    i.mods.dlc = w0 >> 15 & 1 != 0;
    i.mods.slc = w0 >> 17 & 1 != 0;
    i.src = [
        Operand::Vgpr((w1 & 0xff) as u16),
        Operand::Vgpr(((w1 >> 8) & 0xff) as u16),
        Operand::Sgpr((((w1 >> 16) & 0x1f) * 4) as u8),
    ];
    i.saddr = Operand::src9((w1 >> 24) & 0xff);
    Ok(i)
}
