//! CDNA2/CDNA3 MFMA lane tables (wave64), from matrix-layouts.md ("CDNA2/CDNA3").
//! The bf16 `_1k` forms use the same layouts as f16.

use super::Slot;

/// `v_mfma_f32_32x32x8{f16,bf16_1k}`: `A[i][k]` (32x8): lane = i + 32*floor(k/4), element = k mod 4.
pub(super) const fn a32(i: u32, k: u32) -> Slot {
    Slot { lane: i + 32 * (k / 4), elem: k % 4 }
}
/// 32x32x8: `B[k][j]` (8x32): lane = j + 32*floor(k/4), element = k mod 4.
pub(super) const fn b32(k: u32, j: u32) -> Slot {
    Slot { lane: j + 32 * (k / 4), elem: k % 4 }
}
/// 32x32x8: `D[i][j]`: register g = 4*floor(i/8) + (i mod 4), lane = j + 32*(floor(i/4) mod 2).
pub(super) const fn d32(i: u32, j: u32) -> Slot {
    Slot { lane: j + 32 * ((i / 4) % 2), elem: 4 * (i / 8) + i % 4 }
}
/// `v_mfma_f32_16x16x16{f16,bf16_1k}`: `A[i][k]`: lane = i + 16*floor(k/4), element = k mod 4.
pub(super) const fn a16(i: u32, k: u32) -> Slot {
    Slot { lane: i + 16 * (k / 4), elem: k % 4 }
}
/// 16x16x16: `B[k][j]`: lane = j + 16*floor(k/4), element = k mod 4.
pub(super) const fn b16(k: u32, j: u32) -> Slot {
    Slot { lane: j + 16 * (k / 4), elem: k % 4 }
}
/// 16x16x16: `D[i][j]`: g = i mod 4, lane = j + 16*floor(i/4).
pub(super) const fn d16(i: u32, j: u32) -> Slot {
    Slot { lane: j + 16 * (i / 4), elem: i % 4 }
}
