//! RDNA3 (gfx1100) `v_wmma_f32_16x16x16_{f16,bf16}` lane tables (wave32), from
//! matrix-layouts.md ("RDNA3"). Not valid for RDNA4.

use super::Slot;

/// `A[i][k]`: the whole row i sits in lane i (element k); lane i+16 holds a replica.
pub(super) const fn a(i: u32, k: u32) -> Slot {
    Slot { lane: i, elem: k }
}
/// `B[k][j]`: column j sits in lane j (element k); lane j+16 holds a replica.
pub(super) const fn b(k: u32, j: u32) -> Slot {
    Slot { lane: j, elem: k }
}
/// The replica of A row i / B column j (lane + 16, same element).
pub(super) const fn replica(s: Slot) -> Slot {
    Slot { lane: s.lane + 16, elem: s.elem }
}
/// `D[i][j]`: g = floor(i/2), lane = 16*(i mod 2) + j.
pub(super) const fn d(i: u32, j: u32) -> Slot {
    Slot { lane: 16 * (i % 2) + j, elem: i / 2 }
}
