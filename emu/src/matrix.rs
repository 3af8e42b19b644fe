//! Matrix instructions and their lane layouts, from the vendors' documents.

/// The emulated matrix instructions. Operand element counts per lane (a, b, c):
/// MFMA 32x32x8: 4, 4, 16; MFMA 16x16x16: 4, 4, 4; WMMA 16x16x16: 16, 16, 8;
/// mma.sync m16n8k16: 8, 4, 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatrixOp {
    /// `v_mfma_f32_32x32x8f16`.
    Mfma32x32x8F16,
    /// `v_mfma_f32_32x32x8bf16_1k`.
    Mfma32x32x8Bf16,
    /// `v_mfma_f32_16x16x16f16`.
    Mfma16x16x16F16,
    /// `v_mfma_f32_16x16x16bf16_1k`.
    Mfma16x16x16Bf16,
    /// `v_wmma_f32_16x16x16_f16`.
    Wmma16x16x16F16,
    /// `v_wmma_f32_16x16x16_bf16`.
    Wmma16x16x16Bf16,
    /// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`.
    Mma16x8x16F16,
    /// `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`.
    Mma16x8x16Bf16,
}
