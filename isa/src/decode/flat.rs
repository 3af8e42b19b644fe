//! FLAT / GLOBAL / SCRATCH, 64 bits. GFX9: `110111 sc1[25] op[24:18] slc/nt[17]
//! glc/sc0[16] seg[15:14] lds[13] offset[12:0]` (sc1: gfx942); GFX11: `110111 op[24:18]
//! seg[17:16] slc[15] glc[14] dlc[13] offset[12:0]`. Second word `vdst[31:24]
//! acc/sve[23] saddr[22:16] data[15:8] addr[7:0]`; saddr 0x7f (GFX9) / 0x7c (GFX11,
//! NULL) = no scalar base. Offsets are signed 13-bit for global/scratch and unsigned
//! 12-bit for flat.

use super::tables::{Tables, intern};
use super::{DecodeError, Enc, Inst, Operand, Words};
use crate::arch::Family;

const FLAT: Tables = Tables {
    gfx9: &[
        (0x10, "load_ubyte"),
        (0x11, "load_sbyte"),
        (0x12, "load_ushort"),
        (0x13, "load_sshort"),
        (0x14, "load_dword"),
        (0x15, "load_dwordx2"),
        (0x16, "load_dwordx3"),
        (0x17, "load_dwordx4"),
        (0x18, "store_byte"),
        (0x19, "store_byte_d16_hi"),
        (0x1a, "store_short"),
        (0x1b, "store_short_d16_hi"),
        (0x1c, "store_dword"),
        (0x1d, "store_dwordx2"),
        (0x1e, "store_dwordx3"),
        (0x1f, "store_dwordx4"),
        (0x20, "load_ubyte_d16"),
        (0x21, "load_ubyte_d16_hi"),
        (0x22, "load_sbyte_d16"),
        (0x23, "load_sbyte_d16_hi"),
        (0x24, "load_short_d16"),
        (0x25, "load_short_d16_hi"),
        (0x40, "atomic_swap"),
        (0x41, "atomic_cmpswap"),
        (0x42, "atomic_add"),
        (0x43, "atomic_sub"),
        (0x44, "atomic_smin"),
        (0x45, "atomic_umin"),
        (0x46, "atomic_smax"),
        (0x47, "atomic_umax"),
        (0x48, "atomic_and"),
        (0x49, "atomic_or"),
        (0x4a, "atomic_xor"),
        (0x4b, "atomic_inc"),
        (0x4c, "atomic_dec"),
        (0x4d, "atomic_add_f32"),
        (0x4e, "atomic_pk_add_f16"),
        (0x4f, "atomic_add_f64"),
        (0x50, "atomic_min_f64"),
        (0x51, "atomic_max_f64"),
        (0x52, "atomic_pk_add_bf16"),
        (0x60, "atomic_swap_x2"),
        (0x61, "atomic_cmpswap_x2"),
        (0x62, "atomic_add_x2"),
        (0x63, "atomic_sub_x2"),
        (0x64, "atomic_smin_x2"),
        (0x65, "atomic_umin_x2"),
        (0x66, "atomic_smax_x2"),
        (0x67, "atomic_umax_x2"),
        (0x68, "atomic_and_x2"),
        (0x69, "atomic_or_x2"),
        (0x6a, "atomic_xor_x2"),
        (0x6b, "atomic_inc_x2"),
        (0x6c, "atomic_dec_x2"),
    ],
    gfx950: &[],
    gfx11: &[
        (0x10, "load_u8"),
        (0x11, "load_i8"),
        (0x12, "load_u16"),
        (0x13, "load_i16"),
        (0x14, "load_b32"),
        (0x15, "load_b64"),
        (0x16, "load_b96"),
        (0x17, "load_b128"),
        (0x18, "store_b8"),
        (0x19, "store_b16"),
        (0x1a, "store_b32"),
        (0x1b, "store_b64"),
        (0x1c, "store_b96"),
        (0x1d, "store_b128"),
        (0x1e, "load_d16_u8"),
        (0x1f, "load_d16_i8"),
        (0x20, "load_d16_b16"),
        (0x21, "load_d16_hi_u8"),
        (0x22, "load_d16_hi_i8"),
        (0x23, "load_d16_hi_b16"),
        (0x24, "store_d16_hi_b8"),
        (0x25, "store_d16_hi_b16"),
        (0x33, "atomic_swap_b32"),
        (0x34, "atomic_cmpswap_b32"),
        (0x35, "atomic_add_u32"),
        (0x36, "atomic_sub_u32"),
        (0x37, "atomic_csub_u32"),
        (0x38, "atomic_min_i32"),
        (0x39, "atomic_min_u32"),
        (0x3a, "atomic_max_i32"),
        (0x3b, "atomic_max_u32"),
        (0x3c, "atomic_and_b32"),
        (0x3d, "atomic_or_b32"),
        (0x3e, "atomic_xor_b32"),
        (0x3f, "atomic_inc_u32"),
        (0x40, "atomic_dec_u32"),
        (0x41, "atomic_swap_b64"),
        (0x42, "atomic_cmpswap_b64"),
        (0x43, "atomic_add_u64"),
        (0x44, "atomic_sub_u64"),
        (0x50, "atomic_cmpswap_f32"),
        (0x51, "atomic_min_f32"),
        (0x52, "atomic_max_f32"),
        (0x56, "atomic_add_f32"),
    ],
    ..Tables::NONE
};

pub(super) fn decode(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let w1 = w.word(1)?;
    let gfx9 = w.arch.family() == Family::Gfx9;
    let op = (w0 >> 18) & 0x7f;
    let seg = if gfx9 { (w0 >> 14) & 3 } else { (w0 >> 16) & 3 };
    let base = FLAT.find(w.arch, op).ok_or_else(|| w.unknown("FLAT", op))?;
    let prefix = match seg {
        0 => "flat",
        1 => "scratch",
        2 => "global",
        _ => return Err(w.err("FLAT segment 3")),
    };
    let mut i = Inst::new(
        w.addr(),
        Enc::Flat,
        op as u16,
        intern(format!("{prefix}_{base}")),
    );
    i.len = 8;
    i.mods.seg = seg as u8;
    let off = w0 & 0x1fff;
    i.imm = if seg == 0 {
        (off & 0xfff) as i64
    } else {
        ((off << 19) as i32 >> 19) as i64
    };
    if gfx9 {
        i.mods.glc = w0 >> 16 & 1 != 0;
        i.mods.slc = w0 >> 17 & 1 != 0;
        i.mods.dlc = w0 >> 25 & 1 != 0;
        i.mods.acc = (w1 >> 23 & 1) as u8;
    } else {
        i.mods.dlc = w0 >> 13 & 1 != 0;
        i.mods.glc = w0 >> 14 & 1 != 0;
        i.mods.slc = w0 >> 15 & 1 != 0;
    }
    let saddr = (w1 >> 16) & 0x7f;
    let off_code = if gfx9 { 0x7f } else { 0x7c };
    if seg != 0 && saddr != off_code {
        i.saddr = Operand::Sgpr(saddr as u8);
    }
    let reg = |r: u32| Operand::data(i.mods.acc, r);
    i.dst = reg(w1 >> 24);
    i.src = [
        Operand::Vgpr((w1 & 0xff) as u16),
        reg((w1 >> 8) & 0xff),
        Operand::None,
    ];
    Ok(i)
}
