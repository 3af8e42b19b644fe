//! VOP3P (packed math, mixed-precision FMA, and the matrix instructions), 64 bits.
//!
//! GFX9: `110100111 op[22:16] clamp[15] op_sel_hi2[14] op_sel[13:11] neg_hi[10:8]
//! vdst[7:0]`; GFX11: `11001100 ...` with the same fields. Second word `neg[31:29]
//! op_sel_hi[28:27] src2[26:18] src1[17:9] src0[8:0]`.
//! CDNA MFMA (VOP3P-MAI) reuses the bits: `acc_cd[15]` (C and D in AccVGPRs),
//! `abid[14:11]`, `cbsz[10:8]`; second word `blgp[31:29]`, `acc[28:27]` (A / B in
//! AccVGPRs).

use super::tables::Tables;
use super::{DecodeError, Enc, Inst, Operand, Words};

const VOP3P: Tables = Tables {
    both: &[
        (0x00, "v_pk_mad_i16"),
        (0x01, "v_pk_mul_lo_u16"),
        (0x02, "v_pk_add_i16"),
        (0x03, "v_pk_sub_i16"),
        (0x04, "v_pk_lshlrev_b16"),
        (0x05, "v_pk_lshrrev_b16"),
        (0x06, "v_pk_ashrrev_i16"),
        (0x07, "v_pk_max_i16"),
        (0x08, "v_pk_min_i16"),
        (0x09, "v_pk_mad_u16"),
        (0x0a, "v_pk_add_u16"),
        (0x0b, "v_pk_sub_u16"),
        (0x0c, "v_pk_max_u16"),
        (0x0d, "v_pk_min_u16"),
        (0x0e, "v_pk_fma_f16"),
        (0x0f, "v_pk_add_f16"),
        (0x10, "v_pk_mul_f16"),
        (0x11, "v_pk_min_f16"),
        (0x12, "v_pk_max_f16"),
        (0x20, "v_fma_mix_f32"),
        (0x21, "v_fma_mixlo_f16"),
        (0x22, "v_fma_mixhi_f16"),
    ],
    gfx9: &[
        (0x23, "v_dot2_f32_f16"),
        (0x26, "v_dot2_i32_i16"),
        (0x27, "v_dot2_u32_u16"),
        (0x28, "v_dot4_i32_i8"),
        (0x29, "v_dot4_u32_u8"),
        (0x2a, "v_dot8_i32_i4"),
        (0x2b, "v_dot8_u32_u4"),
        (0x30, "v_pk_fma_f32"),
        (0x31, "v_pk_mul_f32"),
        (0x32, "v_pk_add_f32"),
        (0x33, "v_pk_mov_b32"),
        (0x58, "v_accvgpr_read_b32"),
        (0x59, "v_accvgpr_write_b32"),
    ],
    gfx90a: &[
        (0x40, "v_mfma_f32_32x32x1f32"),
        (0x41, "v_mfma_f32_16x16x1f32"),
        (0x42, "v_mfma_f32_4x4x1f32"),
        (0x44, "v_mfma_f32_32x32x2f32"),
        (0x45, "v_mfma_f32_16x16x4f32"),
        (0x48, "v_mfma_f32_32x32x4f16"),
        (0x49, "v_mfma_f32_16x16x4f16"),
        (0x4a, "v_mfma_f32_4x4x4f16"),
        (0x4c, "v_mfma_f32_32x32x8f16"),
        (0x4d, "v_mfma_f32_16x16x16f16"),
        (0x50, "v_mfma_i32_32x32x4i8"),
        (0x51, "v_mfma_i32_16x16x4i8"),
        (0x52, "v_mfma_i32_4x4x4i8"),
        (0x54, "v_mfma_i32_32x32x8i8"),
        (0x55, "v_mfma_i32_16x16x16i8"),
        (0x63, "v_mfma_f32_32x32x4bf16_1k"),
        (0x64, "v_mfma_f32_16x16x4bf16_1k"),
        (0x65, "v_mfma_f32_4x4x4bf16_1k"),
        (0x66, "v_mfma_f32_32x32x8bf16_1k"),
        (0x67, "v_mfma_f32_16x16x16bf16_1k"),
        (0x68, "v_mfma_f32_32x32x2bf16"),
        (0x69, "v_mfma_f32_16x16x2bf16"),
        (0x6b, "v_mfma_f32_4x4x2bf16"),
        (0x6c, "v_mfma_f32_32x32x4bf16"),
        (0x6d, "v_mfma_f32_16x16x8bf16"),
        (0x6e, "v_mfma_f64_16x16x4f64"),
        (0x6f, "v_mfma_f64_4x4x4f64"),
    ],
    gfx942: &[
        (0x40, "v_mfma_f32_32x32x1_2b_f32"),
        (0x41, "v_mfma_f32_16x16x1_4b_f32"),
        (0x42, "v_mfma_f32_4x4x1_16b_f32"),
        (0x44, "v_mfma_f32_32x32x2_f32"),
        (0x45, "v_mfma_f32_16x16x4_f32"),
        (0x48, "v_mfma_f32_32x32x4_2b_f16"),
        (0x49, "v_mfma_f32_16x16x4_4b_f16"),
        (0x4a, "v_mfma_f32_4x4x4_16b_f16"),
        (0x4c, "v_mfma_f32_32x32x8_f16"),
        (0x4d, "v_mfma_f32_16x16x16_f16"),
        (0x50, "v_mfma_i32_32x32x4_2b_i8"),
        (0x51, "v_mfma_i32_16x16x4_4b_i8"),
        (0x52, "v_mfma_i32_4x4x4_16b_i8"),
        (0x56, "v_mfma_i32_32x32x16_i8"),
        (0x57, "v_mfma_i32_16x16x32_i8"),
        (0x5d, "v_mfma_f32_32x32x4_2b_bf16"),
        (0x5e, "v_mfma_f32_16x16x4_4b_bf16"),
        (0x5f, "v_mfma_f32_4x4x4_16b_bf16"),
        (0x60, "v_mfma_f32_32x32x8_bf16"),
        (0x61, "v_mfma_f32_16x16x16_bf16"),
        (0x6e, "v_mfma_f64_16x16x4_f64"),
        (0x6f, "v_mfma_f64_4x4x4_4b_f64"),
    ],
    // gfx950's double-k MFMAs (opcodes as LLVM's gfx950 disassembler decodes
    // our code objects: `D3D4...` etc.).
    gfx950: &[
        (0x35, "v_mfma_f32_16x16x32_bf16"),
        (0x37, "v_mfma_f32_32x32x16_bf16"),
        (0x54, "v_mfma_f32_16x16x32_f16"),
        (0x55, "v_mfma_f32_32x32x16_f16"),
    ],
    gfx11: &[
        (0x13, "v_dot2_f32_f16"),
        (0x40, "v_wmma_f32_16x16x16_f16"),
        (0x41, "v_wmma_f32_16x16x16_bf16"),
        (0x42, "v_wmma_f16_16x16x16_f16"),
        (0x43, "v_wmma_bf16_16x16x16_bf16"),
        (0x44, "v_wmma_i32_16x16x16_iu8"),
        (0x45, "v_wmma_i32_16x16x16_iu4"),
    ],
    gfx12: &[],
    gfx11_only: &[],
};

/// Whether a VOP3P mnemonic is a CDNA matrix instruction.
pub(crate) fn is_mfma(name: &str) -> bool {
    name.starts_with("v_mfma_")
}

pub(super) fn decode(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let w1 = w.word(1)?;
    let op = (w0 >> 16) & 0x7f;
    let mut i = w.inst(Enc::Vop3p, "VOP3P", op, VOP3P.find(w.arch, op))?;
    i.len = 8;
    i.dst = Operand::Vgpr((w0 & 0xff) as u16);
    i.src = Operand::src9x3(w1);
    i.mods.neg_hi = ((w0 >> 8) & 7) as u8;
    i.mods.opsel = ((w0 >> 11) & 7) as u8;
    i.mods.opsel_hi = (((w1 >> 27) & 3) | ((w0 >> 14 & 1) << 2)) as u8;
    i.mods.clamp = w0 >> 15 & 1 != 0;
    i.mods.neg = ((w1 >> 29) & 7) as u8;
    if is_mfma(i.name) {
        // cbsz in neg_hi, abid in opsel (4 bits), blgp in neg; acc bits for A/B.
        i.mods.opsel = ((w0 >> 11) & 0xf) as u8;
        i.mods.acc = ((w1 >> 27) & 3) as u8;
        i.mods.opsel_hi = 0;
        let acc_cd = i.mods.clamp;
        if acc_cd {
            i.dst = Operand::Agpr((w0 & 0xff) as u16);
            if let Operand::Vgpr(r) = i.src[2] {
                i.src[2] = Operand::Agpr(r);
            }
        }
        for s in 0..2 {
            if let (1, Operand::Vgpr(r)) = (i.mods.acc >> s & 1, i.src[s]) {
                i.src[s] = Operand::Agpr(r);
            }
        }
    }
    Ok(i)
}
