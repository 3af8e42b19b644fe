//! GFX12 (RDNA4: gfx1200, gfx1201) memory encodings that differ from GFX11.
//!
//! Field positions from LLVM's AMDGPU target (`SMInstructions.td`
//! `SMEM_Real_gfx12Plus` / `SMEM_Real_Load_gfx12`, `FLATInstructions.td` `VFLAT_Real`
//! and the `VFLAT/VGLOBAL/VSCRATCH_Real_*_gfx12` opcode lists), checked against the
//! words of the shipped gfx1200 object as `llvm-objdump --mcpu=gfx1200` prints them
//! (`tests/decoder.rs`) and against LLVM's gfx12 MC encodings (unit tests below).
//!
//! - SMEM, 64 bits: `111101 [31:26]`, `th[24:23] scope[22:21] nv[20] op[18:13]
//!   sdata[12:6] sbase[5:0]` (SGPR pairs); second word `soffset[31:25]`
//!   (124 = NULL: none), `offset[23:0]` signed.
//! - VFLAT / VGLOBAL / VSCRATCH, 96 bits: `111011 [31:26] seg[25:24] op[21:14]
//!   saddr[6:0]` (124 = NULL: no scalar base); second word `vsrc[30:23] th[22:20]
//!   scope[19:18] sve[17] vdst[7:0]`; third word `offset[31:8]` (signed 24-bit)
//!   `vaddr[7:0]`. `th` bit 0 is set on every atomic that returns its old value
//!   (TH_ATOMIC_RETURN).
//!
//! VBUFFER (`110001`) is not decoded: our kernels use none.

use super::tables::{Table, find, intern};
use super::{DecodeError, Enc, Inst, Operand, Words};

/// GFX12 SMEM opcodes (LLVM `SM_Real_Loads_gfx12`, `S_DCACHE_INV_gfx12`).
const SMEM: Table = &[
    (0x00, "s_load_b32"),
    (0x01, "s_load_b64"),
    (0x02, "s_load_b128"),
    (0x03, "s_load_b256"),
    (0x04, "s_load_b512"),
    (0x05, "s_load_b96"),
    (0x10, "s_buffer_load_b32"),
    (0x11, "s_buffer_load_b64"),
    (0x12, "s_buffer_load_b128"),
    (0x13, "s_buffer_load_b256"),
    (0x14, "s_buffer_load_b512"),
    (0x15, "s_buffer_load_b96"),
    (0x21, "s_dcache_inv"),
];

pub(super) fn smem(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let w1 = w.word(1)?;
    let op = (w0 >> 13) & 0x3f;
    let mut i = w.inst(Enc::Smem, "GFX12 SMEM", op, find(SMEM, op))?;
    i.len = 8;
    i.dst = Operand::Sgpr(((w0 >> 6) & 0x7f) as u8);
    i.src[0] = Operand::Sgpr(((w0 & 0x3f) * 2) as u8);
    i.mods.scope = ((w0 >> 21) & 3) as u8;
    i.mods.th = ((w0 >> 23) & 3) as u8;
    if w0 >> 20 & 1 != 0 {
        return Err(w.err("a GFX12 SMEM load with nv set (not modelled)"));
    }
    if w1 >> 24 & 1 != 0 {
        return Err(w.err("a GFX12 SMEM load with a scaled offset (not modelled)"));
    }
    i.imm = (((w1 & 0xff_ffff) << 8) as i32 >> 8) as i64;
    // soffset 124 is NULL (reads as 0).
    i.src[1] = Operand::Sgpr((w1 >> 25) as u8);
    Ok(i)
}

/// VFLAT / VGLOBAL / VSCRATCH opcodes (LLVM `VFLAT_Real_*_gfx12`, `VGLOBAL_*`):
/// the names after the segment prefix. The three segments share these numbers;
/// `inv`, `wb`, `wbinv` exist only as `global_`.
const VFLAT: Table = &[
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
    (0x2b, "inv"),
    (0x2c, "wb"),
    (0x33, "atomic_swap_b32"),
    (0x34, "atomic_cmpswap_b32"),
    (0x35, "atomic_add_u32"),
    (0x36, "atomic_sub_u32"),
    (0x37, "atomic_sub_clamp_u32"),
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
    (0x4f, "wbinv"),
    (0x50, "atomic_cond_sub_u32"),
    (0x51, "atomic_min_num_f32"),
    (0x52, "atomic_max_num_f32"),
    (0x56, "atomic_add_f32"),
    (0x59, "atomic_pk_add_f16"),
    (0x5a, "atomic_pk_add_bf16"),
];

pub(super) fn vflat(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let (w1, w2) = (w.word(1)?, w.word(2)?);
    let op = (w0 >> 14) & 0xff;
    let seg = (w0 >> 24) & 3;
    let base = find(VFLAT, op).ok_or_else(|| w.unknown("GFX12 VFLAT/VGLOBAL/VSCRATCH", op))?;
    let prefix = match seg {
        0 => "flat",
        1 => "scratch",
        2 => "global",
        _ => return Err(w.err("VFLAT segment 3")),
    };
    if matches!(base, "inv" | "wb" | "wbinv") && seg != 2 {
        return Err(w.unknown("GFX12 VFLAT/VSCRATCH", op));
    }
    let mut i = Inst::new(
        w.addr(),
        Enc::Flat,
        op as u16,
        intern(format!("{prefix}_{base}")),
    );
    i.len = 12;
    i.mods.seg = seg as u8;
    i.mods.th = ((w1 >> 20) & 7) as u8;
    i.mods.scope = ((w1 >> 18) & 3) as u8;
    if w1 >> 17 & 1 != 0 {
        return Err(w.err("a GFX12 scratch instruction with sve (not modelled)"));
    }
    // An atomic returns the old value iff th bit 0 (TH_ATOMIC_RETURN) is set; the
    // executor's atomics read that from `glc`, as on GFX9/GFX11.
    i.mods.glc = base.starts_with("atomic") && i.mods.th & 1 != 0;
    i.imm = ((w2 as i32) >> 8) as i64;
    let saddr = w0 & 0x7f;
    if saddr != 0x7c {
        if seg == 0 {
            return Err(w.err("a FLAT instruction with saddr"));
        }
        i.saddr = Operand::Sgpr(saddr as u8);
    }
    if matches!(base, "inv" | "wb" | "wbinv") {
        return Ok(i);
    }
    let stores = base.starts_with("store");
    let atomic = base.starts_with("atomic");
    if !stores && (!atomic || i.mods.glc) {
        i.dst = Operand::Vgpr((w1 & 0xff) as u16);
    }
    let data = if stores || atomic {
        Operand::Vgpr(((w1 >> 23) & 0xff) as u16)
    } else {
        Operand::None
    };
    i.src = [Operand::Vgpr((w2 & 0xff) as u16), data, Operand::None];
    Ok(i)
}

#[cfg(test)]
mod tests {
    //! Encodings from LLVM's gfx12 MC tests (`llvm/test/MC/AMDGPU/gfx12_asm_*.s`,
    //! `gfx12_dasm_*.txt`) and from the shipped gfx1200 object as llvm-objdump
    //! prints it.
    use super::super::{Operand, decode_at};
    use crate::arch::Arch;

    fn dec(words: &[u32]) -> super::Inst {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        decode_at(Arch::Gfx1200, &bytes, 0, 0).unwrap()
    }

    #[test]
    fn smem_loads() {
        // s_load_b32 s0, s[28:29], 0x40
        let i = dec(&[0xF400000E, 0xF8000040]);
        assert_eq!(i.name, "s_load_b32");
        assert_eq!((i.dst, i.src[0], i.imm, i.len), (Operand::Sgpr(0), Operand::Sgpr(28), 0x40, 8));
        // s_load_b96 s[4:6], s[28:29], 0x318
        let i = dec(&[0xF400A10E, 0xF8000318]);
        assert_eq!((i.name, i.dst, i.imm), ("s_load_b96", Operand::Sgpr(4), 0x318));
        // gfx12_asm_smem.s: s_load_b32 s5, s[2:3], s0
        // -> [0x41,0x01,0x00,0xf4,0x00,0x00,0x00,0x00]
        let i = dec(&[0xF4000141, 0x00000000]);
        assert_eq!((i.name, i.dst, i.src[0], i.src[1], i.imm), ("s_load_b32", Operand::Sgpr(5), Operand::Sgpr(2), Operand::Sgpr(0), 0));
        // gfx12_asm_smem.s: s_load_b32 s5, s[2:3], s7 offset:0x12345
        // -> [0x41,0x01,0x00,0xf4,0x45,0x23,0x01,0x0e]
        let i = dec(&[0xF4000141, 0x0E012345]);
        assert_eq!((i.src[1], i.imm), (Operand::Sgpr(7), 0x12345));
        // gfx12_asm_smem.s: s_load_b32 s5, s[2:3], 0x0 -> [...,0x00,0x00,0x00,0xf8] (NULL)
        let i = dec(&[0xF4000141, 0xF8000000]);
        assert_eq!(i.src[1], Operand::Sgpr(124));
        // gfx12_asm_smem.s: s_load_b96 s[20:22], s[2:3], s0 -> [0x01,0xa5,0x00,0xf4,0,0,0,0]
        let i = dec(&[0xF400A501, 0x00000000]);
        assert_eq!((i.name, i.dst, i.src[0]), ("s_load_b96", Operand::Sgpr(20), Operand::Sgpr(2)));
        // gfx12_asm_smem.s: s_load_b64 s[10:11], s[2:3], s0 -> [0x81,0x22,0x00,0xf4,0,0,0,0]
        let i = dec(&[0xF4002281, 0x00000000]);
        assert_eq!((i.name, i.dst), ("s_load_b64", Operand::Sgpr(10)));
    }

    #[test]
    fn vglobal_vflat() {
        // global_load_b32 v4, v14, s[28:29] offset:80
        let i = dec(&[0xEE05001C, 0x00000004, 0x0000500E]);
        assert_eq!(i.name, "global_load_b32");
        assert_eq!((i.dst, i.src[0], i.saddr, i.imm, i.len), (Operand::Vgpr(4), Operand::Vgpr(14), Operand::Sgpr(28), 80, 12));
        // flat_store_b32 v[0:1], v6
        let i = dec(&[0xEC06807C, 0x03000000, 0x00000000]);
        assert_eq!((i.name, i.dst, i.src[0], i.src[1], i.saddr), ("flat_store_b32", Operand::None, Operand::Vgpr(0), Operand::Vgpr(6), Operand::None));
        // flat_atomic_add_u32 v1, v[3:4], v1 th:TH_ATOMIC_RETURN scope:SCOPE_DEV
        let i = dec(&[0xEC0D407C, 0x00980001, 0x00000003]);
        assert_eq!((i.name, i.dst, i.src[0], i.src[1]), ("flat_atomic_add_u32", Operand::Vgpr(1), Operand::Vgpr(3), Operand::Vgpr(1)));
        assert_eq!((i.mods.th, i.mods.scope, i.mods.glc), (1, 2, true));
        // flat_atomic_add_f32 v[18:19], v5 scope:SCOPE_DEV (no return)
        let i = dec(&[0xEC15807C, 0x02880000, 0x00000012]);
        assert_eq!((i.name, i.dst, i.src[1], i.mods.glc, i.mods.scope), ("flat_atomic_add_f32", Operand::None, Operand::Vgpr(5), false, 2));
        // global_inv scope:SCOPE_SE
        let i = dec(&[0xEE0AC07C, 0x00040000, 0x00000000]);
        assert_eq!((i.name, i.mods.scope), ("global_inv", 1));
        // gfx12_asm_vflat.s: flat_atomic_add_f32 v1, v[0:1], v2 offset:-8000000
        // th:TH_ATOMIC_RETURN -> [0x7c,0x80,0x15,0xec,0x01,0x00,0x10,0x01,0x00,0x00,0xee,0x85]
        let i = dec(&[0xEC15807C, 0x01100001, 0x85EE0000]);
        assert_eq!((i.name, i.dst, i.src[0], i.src[1], i.imm), ("flat_atomic_add_f32", Operand::Vgpr(1), Operand::Vgpr(0), Operand::Vgpr(2), -8000000));
        assert!(i.mods.glc);
        // gfx12_asm_vflat.s: flat_atomic_add_u32 v[3:4], v5
        // -> [0x7c,0x40,0x0d,0xec,0x00,0x00,0x80,0x02,0x03,0x00,0x00,0x00]
        let i = dec(&[0xEC0D407C, 0x02800000, 0x00000003]);
        assert_eq!((i.dst, i.src[0], i.src[1], i.mods.glc), (Operand::None, Operand::Vgpr(3), Operand::Vgpr(5), false));
        // gfx12_asm_vflat.s: flat_atomic_cmpswap_b32 v0, v[1:2], v[3:4] offset:2047
        // th:TH_ATOMIC_RETURN -> [0x7c,0x00,0x0d,0xec,0x00,0x00,0x90,0x01,0x01,0xff,0x07,0x00]
        let i = dec(&[0xEC0D007C, 0x01900000, 0x0007FF01]);
        assert_eq!((i.name, i.dst, i.src[0], i.src[1], i.imm), ("flat_atomic_cmpswap_b32", Operand::Vgpr(0), Operand::Vgpr(1), Operand::Vgpr(3), 2047));
    }

    #[test]
    fn waits_and_barriers() {
        let names = [
            (0xBFC00000u32, "s_wait_loadcnt"),
            (0xBFC10000, "s_wait_storecnt"),
            (0xBFC60003, "s_wait_dscnt"),
            (0xBFC70000, "s_wait_kmcnt"),
            (0xBFC80000, "s_wait_loadcnt_dscnt"),
            (0xBFC90000, "s_wait_storecnt_dscnt"),
            (0xBF88FF9E, "s_wait_alu"),
            (0xBF94FFFF, "s_barrier_wait"),
            (0xBE804EC1, "s_barrier_signal"),
            (0x81000003, "s_add_co_i32"),
            (0xA98C0C1C, "s_add_nc_u64"),
            (0xAA940008, "s_mul_u64"),
            (0xBE81650D, "s_cvt_f32_u32"),
            (0xB7AA0100, "s_addk_co_i32"),
        ];
        for (w, n) in names {
            assert_eq!(dec(&[w, 0, 0]).name, n, "{w:08x}");
        }
        assert_eq!(dec(&[0xBFC60003]).imm, 3);
        // GFX11's s_barrier (SOPP 61) and s_cmpk_eq_i32 (SOPK 3) are gone on GFX12.
        let bytes = 0xBFBD0000u32.to_le_bytes();
        assert!(decode_at(Arch::Gfx1200, &bytes, 0, 0).is_err());
        assert!(decode_at(Arch::Gfx1100, &bytes, 0, 0).is_ok());
        let bytes = 0xB1800000u32.to_le_bytes();
        assert!(decode_at(Arch::Gfx1200, &bytes, 0, 0).is_err());
    }
}
