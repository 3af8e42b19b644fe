//! RDNA4 (gfx1200, gfx1201) WMMA atom, wave32.
//!
//! Layout (AMD GPUOpen, "Using the Matrix Cores of AMD RDNA 4 architecture
//! GPUs"; 8 elements a lane, no replicas, unlike RDNA3): lane `l` holds k
//! `8*(l/16) ..` of A row `l % 16` and of B column `l % 16`; accumulator slot
//! `g` of lane `l` is D[8*(l/16) + g][l % 16].

use super::{input_trait, mma_atom};

mma_atom! {
    /// GFX12 `v_wmma_f32_16x16x16_{f16,bf16}`.
    pub struct Wmma16x16x16Gfx12<T: Wmma12Input>: 16 x 16 x 16, wave 32;
    In = T, A = [T; 8], B = [T; 8], C = [f32; 8], Run = crate::elem::Vec16<[T; 8]>;
    fn a_elem(lane, e) = (lane % 16, 8 * (lane / 16) + e);
    fn b_elem(lane, e) = (8 * (lane / 16) + e, lane % 16);
    fn c_elem(lane, e) = (8 * (lane / 16) + e, lane % 16);
    fn c_slot(i, j) = (16 * (i / 8) + j, i % 8);
    unsafe fn mma(a, b, c) = unsafe { T::wmma12(a, b, c) };
}

input_trait! {
    /// f16 or bf16 GFX12 WMMA.
    pub trait Wmma12Input {
        /// `c += a*b`.
        fn wmma12[8, 8, 8] = Wmma16x16x16Gfx12F16, Wmma16x16x16Gfx12Bf16;
    }
}

#[cfg(target_arch = "amdgpu")]
mod hw {
    use super::Wmma12Input;
    use crate::atom::bf16_lanes;
    use crate::elem::Bf16;
    crate::atom::simd_types! { F16x8 = [f16; 8], I16x8 = [i16; 8], F32x8 = [f32; 8] }
    // The gfx12 overloads of the RDNA3 intrinsics: <8 x half> / <8 x i16>
    // operands in wave32.
    #[allow(improper_ctypes)]
    unsafe extern "C" {
        #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v8f16"]
        fn wmma_f16(a: F16x8, b: F16x8, c: F32x8) -> F32x8;
        #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.bf16.v8f32.v8i16"]
        fn wmma_bf16(a: I16x8, b: I16x8, c: F32x8) -> F32x8;
    }
    impl Wmma12Input for f16 {
        #[inline(always)]
        unsafe fn wmma12(a: &[f16; 8], b: &[f16; 8], c: &mut [f32; 8]) {
            *c = unsafe { core::mem::transmute(wmma_f16(F16x8(*a), F16x8(*b), F32x8(*c))) };
        }
    }
    impl Wmma12Input for Bf16 {
        #[inline(always)]
        unsafe fn wmma12(a: &[Bf16; 8], b: &[Bf16; 8], c: &mut [f32; 8]) {
            let (a, b) = (I16x8(bf16_lanes(a)), I16x8(bf16_lanes(b)));
            *c = unsafe { core::mem::transmute(wmma_bf16(a, b, F32x8(*c))) };
        }
    }
}
