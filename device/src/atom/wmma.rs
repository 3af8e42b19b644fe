//! RDNA3 (gfx1100) WMMA atom, wave32.
//!
//! Layout (RDNA3 ISA, `v_wmma_f32_16x16x16_f16`): lane `l` holds all 16 k of
//! A row `l % 16` (lanes `i` and `i + 16` carry the same row: the hardware
//! reads both halves of the wave), and of B column `l % 16`; accumulator slot
//! `g` of lane `l` is D[2g + l/16][l % 16].

use super::{input_trait, mma_atom};

mma_atom! {
    /// `v_wmma_f32_16x16x16_{f16,bf16}`.
    pub struct Wmma16x16x16<T: WmmaInput>: 16 x 16 x 16, wave 32;
    In = T, A = [T; 16], B = [T; 16], C = [f32; 8], Run = crate::elem::Vec16<[T; 8]>;
    fn a_elem(lane, e) = (lane % 16, e);
    fn b_elem(lane, e) = (e, lane % 16);
    fn c_elem(lane, e) = (2 * e + lane / 16, lane % 16);
    fn c_slot(i, j) = (16 * (i % 2) + j, i / 2);
    unsafe fn mma(a, b, c) = unsafe { T::wmma(a, b, c) };
}

input_trait! {
    /// f16 or bf16 WMMA.
    pub trait WmmaInput {
        /// `c += a*b`.
        fn wmma[16, 16, 8] = Wmma16x16x16F16, Wmma16x16x16Bf16;
    }
}

#[cfg(target_arch = "amdgpu")]
mod hw {
    use super::WmmaInput;
    use crate::atom::bf16_lanes;
    use crate::elem::Bf16;
    crate::atom::simd_types! { F16x16 = [f16; 16], I16x16 = [i16; 16], F32x8 = [f32; 8] }
    #[allow(improper_ctypes)]
    unsafe extern "C" {
        #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.f16"]
        fn wmma_f16(a: F16x16, b: F16x16, c: F32x8) -> F32x8;
        #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.bf16"]
        fn wmma_bf16(a: I16x16, b: I16x16, c: F32x8) -> F32x8;
    }
    impl WmmaInput for f16 {
        #[inline(always)]
        unsafe fn wmma(a: &[f16; 16], b: &[f16; 16], c: &mut [f32; 8]) {
            *c = unsafe { core::mem::transmute(wmma_f16(F16x16(*a), F16x16(*b), F32x8(*c))) };
        }
    }
    impl WmmaInput for Bf16 {
        #[inline(always)]
        unsafe fn wmma(a: &[Bf16; 16], b: &[Bf16; 16], c: &mut [f32; 8]) {
            let (a, b) = (I16x16(bf16_lanes(a)), I16x16(bf16_lanes(b)));
            *c = unsafe { core::mem::transmute(wmma_bf16(a, b, F32x8(*c))) };
        }
    }
}
