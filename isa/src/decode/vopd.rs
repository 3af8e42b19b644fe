//! RDNA3 VOPD (dual issue), 64 bits: `110010 opx[25:22] opy[21:17] vsrcx1[16:9]
//! srcx0[8:0]`, second word `vdstx[31:24] vdsty[23:17] vsrcy1[16:9] srcy0[8:0]`; the
//! Y destination VGPR is `vdsty << 1 | (vdstx & 1 ^ 1)`.

use super::tables::Table;
use super::tables::find;
use super::{DecodeError, Enc, Inst, Operand, VopdY, Words};

const OPX: Table = &[
    (0, "v_dual_fmac_f32"),
    (1, "v_dual_fmaak_f32"),
    (2, "v_dual_fmamk_f32"),
    (3, "v_dual_mul_f32"),
    (4, "v_dual_add_f32"),
    (5, "v_dual_sub_f32"),
    (6, "v_dual_subrev_f32"),
    (7, "v_dual_mul_dx9_zero_f32"),
    (8, "v_dual_mov_b32"),
    (9, "v_dual_cndmask_b32"),
    (10, "v_dual_max_f32"),
    (11, "v_dual_min_f32"),
    (12, "v_dual_dot2acc_f32_f16"),
    (13, "v_dual_dot2acc_f32_bf16"),
];
/// GFX12's names of the same opcodes (LLVM VOPInstructions: `v_dual_max_num_f32`,
/// `v_dual_min_num_f32`).
const OPX12: Table = &[(10, "v_dual_max_num_f32"), (11, "v_dual_min_num_f32")];
const OPY_EXTRA: Table = &[
    (16, "v_dual_add_nc_u32"),
    (17, "v_dual_lshlrev_b32"),
    (18, "v_dual_and_b32"),
];

pub(super) fn decode(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    let w1 = w.word(1)?;
    let opx = (w0 >> 22) & 0xf;
    let opy = (w0 >> 17) & 0x1f;
    let gfx12 = w.arch.gfx12();
    let name = |op: u32| if gfx12 { find(OPX12, op).or_else(|| find(OPX, op)) } else { find(OPX, op) };
    let xname = name(opx).ok_or_else(|| w.unknown("VOPD X", opx))?;
    let yname = name(opy)
        .or_else(|| find(OPY_EXTRA, opy))
        .ok_or_else(|| w.unknown("VOPD Y", opy))?;
    let mut i = Inst::new(w.addr(), Enc::Vopd, opx as u16, xname);
    i.len = 8;
    let vdstx = (w1 >> 24) & 0xff;
    i.dst = Operand::Vgpr(vdstx as u16);
    i.src = [
        Operand::src9(w0 & 0x1ff),
        Operand::Vgpr(((w0 >> 9) & 0xff) as u16),
        Operand::None,
    ];
    let vdsty = (((w1 >> 17) & 0x7f) << 1) | ((vdstx & 1) ^ 1);
    i.vopd_y = Some(VopdY {
        op: opy as u16,
        name: yname,
        dst: Operand::Vgpr(vdsty as u16),
        src: [
            Operand::src9(w1 & 0x1ff),
            Operand::Vgpr(((w1 >> 9) & 0xff) as u16),
            Operand::None,
        ],
    });
    Ok(i)
}
