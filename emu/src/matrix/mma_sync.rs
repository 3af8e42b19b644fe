//! NVIDIA `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}` lane tables (warp32),
//! from matrix-layouts.md ("NVIDIA", PTX ISA). groupID = lane >> 2, t = lane mod 4.
//! The note gives lane -> element; these are its inverses (element -> lane).

use super::Slot;

/// `A[i][k]` (16x16): a0,a1,a4,a5 hold row groupID, a2,a3,a6,a7 row groupID+8;
/// a0..a3 hold columns 2t + (index mod 2), a4..a7 those + 8.
pub(super) const fn a(i: u32, k: u32) -> Slot {
    Slot { lane: 4 * (i % 8) + (k % 8) / 2, elem: k % 2 + 2 * (i / 8) + 4 * (k / 8) }
}
/// `B[k][j]` (16x8): b0,b1 hold k = 2t + (index mod 2), b2,b3 those + 8; n = groupID.
pub(super) const fn b(k: u32, j: u32) -> Slot {
    Slot { lane: 4 * j + (k % 8) / 2, elem: k % 2 + 2 * (k / 8) }
}
/// C/`D[i][j]` (16x8): c0,c1 row groupID, c2,c3 row groupID+8; column 2t + (index mod 2).
pub(super) const fn d(i: u32, j: u32) -> Slot {
    Slot { lane: 4 * (i % 8) + j / 2, elem: j % 2 + 2 * (i / 8) }
}

/// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32` (PTX ISA, "Matrix
/// fragments for mma.m16n8k8", `.tf32`): `A[i][k]` (16x8), 4 registers a lane:
/// a0, a2 hold row groupID, a1, a3 row groupID+8; a0, a1 column t, a2, a3
/// column t+4.
pub(super) const fn a_tf32(i: u32, k: u32) -> Slot {
    Slot { lane: 4 * (i % 8) + k % 4, elem: i / 8 + 2 * (k / 4) }
}
/// m16n8k8 `.tf32`: `B[k][j]` (8x8), 2 registers: b0 holds k = t, b1 k = t+4; n = groupID.
pub(super) const fn b_tf32(k: u32, j: u32) -> Slot {
    Slot { lane: 4 * j + k % 4, elem: k / 4 }
}
