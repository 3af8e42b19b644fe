//! CDNA4 (gfx950) double-k MFMA atoms, wave64: `v_mfma_f32_32x32x16_{f16,bf16}`
//! and `v_mfma_f32_16x16x32_{f16,bf16}`, gfx950 only (`Family::Cdna4`).
//!
//! Layouts (LLVM `IntrinsicsAMDGPU.td`: `<8 x half>` / `<8 x bfloat>` operands;
//! AMD matrix instruction calculator, CDNA4): 8 consecutive k a lane.
//! - 32x32x16: A[i][k] in lane `i + 32*(k/8)`, slot `k%8`; B[k][j] in lane
//!   `j + 32*(k/8)`, slot `k%8`; D as 32x32x8.
//! - 16x16x32: A[i][k] in lane `i + 16*(k/8)`, slot `k%8`; B likewise with j;
//!   D as 16x16x16.

use super::{input_trait, mma_atom};

mma_atom! {
    /// gfx950 `v_mfma_f32_32x32x16_{f16,bf16}`.
    pub struct Mfma32x32x16<T: Mfma950Input>: 32 x 32 x 16, wave 64;
    In = T, A = [T; 8], B = [T; 8], C = [f32; 16], Run = crate::elem::Vec16<[T; 8]>;
    fn a_elem(lane, e) = (lane % 32, 8 * (lane / 32) + e);
    fn b_elem(lane, e) = (8 * (lane / 32) + e, lane % 32);
    fn c_elem(lane, e) = (8 * (e / 4) + 4 * (lane / 32) + e % 4, lane % 32);
    fn c_slot(i, j) = (32 * ((i % 8) / 4) + j, 4 * (i / 8) + i % 4);
    unsafe fn mma(a, b, c) = unsafe { T::mfma32k16(a, b, c) };
}

mma_atom! {
    /// gfx950 `v_mfma_f32_16x16x32_{f16,bf16}`.
    pub struct Mfma16x16x32<T: Mfma950Input>: 16 x 16 x 32, wave 64;
    In = T, A = [T; 8], B = [T; 8], C = [f32; 4], Run = crate::elem::Vec16<[T; 8]>;
    fn a_elem(lane, e) = (lane % 16, 8 * (lane / 16) + e);
    fn b_elem(lane, e) = (8 * (lane / 16) + e, lane % 16);
    fn c_elem(lane, e) = (4 * (lane / 16) + e, lane % 16);
    fn c_slot(i, j) = (16 * (i / 4) + j, i % 4);
    unsafe fn mma(a, b, c) = unsafe { T::mfma16k32(a, b, c) };
}

input_trait! {
    /// f16 or bf16 on gfx950's double-k MFMAs.
    pub trait Mfma950Input {
        /// `c += a*b` for 32x32x16.
        fn mfma32k16[8, 8, 16] = Mfma32x32x16F16, Mfma32x32x16Bf16;
        /// `c += a*b` for 16x16x32.
        fn mfma16k32[8, 8, 4] = Mfma16x16x32F16, Mfma16x16x32Bf16;
    }
}

#[cfg(target_arch = "amdgpu")]
mod hw {
    use super::Mfma950Input;
    use crate::atom::bf16_lanes;
    use crate::elem::Bf16;
    crate::atom::simd_types! { F16x8 = [f16; 8], I16x8 = [i16; 8], F32x16 = [f32; 16], F32x4 = [f32; 4] }

    #[allow(improper_ctypes)]
    unsafe extern "C" {
        #[link_name = "llvm.amdgcn.mfma.f32.32x32x16.f16"]
        fn mfma32_f16(a: F16x8, b: F16x8, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
        #[link_name = "llvm.amdgcn.mfma.f32.16x16x32.f16"]
        fn mfma16_f16(a: F16x8, b: F16x8, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
        // LLVM takes `<8 x bfloat>`; Rust has no bf16 vector, so the bits go
        // as `<8 x i16>` and rustc casts them for the intrinsic.
        #[link_name = "llvm.amdgcn.mfma.f32.32x32x16.bf16"]
        fn mfma32_bf16(a: I16x8, b: I16x8, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
        #[link_name = "llvm.amdgcn.mfma.f32.16x16x32.bf16"]
        fn mfma16_bf16(a: I16x8, b: I16x8, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
    }

    impl Mfma950Input for f16 {
        #[inline(always)]
        unsafe fn mfma32k16(a: &[f16; 8], b: &[f16; 8], c: &mut [f32; 16]) {
            // SIMD types cannot be projected into: reinterpret as the array.
            *c = unsafe {
                core::mem::transmute(mfma32_f16(F16x8(*a), F16x8(*b), F32x16(*c), 0, 0, 0))
            };
        }
        #[inline(always)]
        unsafe fn mfma16k32(a: &[f16; 8], b: &[f16; 8], c: &mut [f32; 4]) {
            *c = unsafe {
                core::mem::transmute(mfma16_f16(F16x8(*a), F16x8(*b), F32x4(*c), 0, 0, 0))
            };
        }
    }
    impl Mfma950Input for Bf16 {
        #[inline(always)]
        unsafe fn mfma32k16(a: &[Bf16; 8], b: &[Bf16; 8], c: &mut [f32; 16]) {
            let (a, b) = (I16x8(bf16_lanes(a)), I16x8(bf16_lanes(b)));
            *c = unsafe { core::mem::transmute(mfma32_bf16(a, b, F32x16(*c), 0, 0, 0)) };
        }
        #[inline(always)]
        unsafe fn mfma16k32(a: &[Bf16; 8], b: &[Bf16; 8], c: &mut [f32; 4]) {
            let (a, b) = (I16x8(bf16_lanes(a)), I16x8(bf16_lanes(b)));
            *c = unsafe { core::mem::transmute(mfma16_bf16(a, b, F32x4(*c), 0, 0, 0)) };
        }
    }
}
