//! CDNA2/CDNA3 (gfx90a, gfx942) MFMA atoms, wave64.
//!
//! Layouts (AMD matrix instruction calculator / CDNA3 ISA section 7):
//! - 32x32x8: A[i][k] in lane `i + 32*(k/4)`, slot `k%4`; B[k][j] in lane
//!   `j + 32*(k/4)`, slot `k%4`; D[i][j] in lane `j + 32*((i/4)%2)`, slot
//!   `4*(i/8) + i%4`.
//! - 16x16x16: A[i][k] in lane `i + 16*(k/4)`, slot `k%4`; B likewise with j;
//!   D[i][j] in lane `j + 16*(i/4)`, slot `i%4`.

use super::{input_trait, mma_atom};

mma_atom! {
    /// `v_mfma_f32_32x32x8{f16,bf16_1k}`.
    pub struct Mfma32x32x8<T: MfmaInput>: 32 x 32 x 8, wave 64;
    In = T, A = [T; 4], B = [T; 4], C = [f32; 16], Run = crate::elem::Al8<[T; 4]>;
    fn a_elem(lane, e) = (lane % 32, 4 * (lane / 32) + e);
    fn b_elem(lane, e) = (4 * (lane / 32) + e, lane % 32);
    fn c_elem(lane, e) = (8 * (e / 4) + 4 * (lane / 32) + e % 4, lane % 32);
    fn c_slot(i, j) = (32 * ((i % 8) / 4) + j, 4 * (i / 8) + i % 4);
    unsafe fn mma(a, b, c) = unsafe { T::mfma32(a, b, c) };
}

mma_atom! {
    /// `v_mfma_f32_16x16x16{f16,bf16_1k}`.
    pub struct Mfma16x16x16<T: MfmaInput>: 16 x 16 x 16, wave 64;
    In = T, A = [T; 4], B = [T; 4], C = [f32; 4], Run = crate::elem::Al8<[T; 4]>;
    fn a_elem(lane, e) = (lane % 16, 4 * (lane / 16) + e);
    fn b_elem(lane, e) = (4 * (lane / 16) + e, lane % 16);
    fn c_elem(lane, e) = (4 * (lane / 16) + e, lane % 16);
    fn c_slot(i, j) = (16 * (i / 4) + j, i % 4);
    unsafe fn mma(a, b, c) = unsafe { T::mfma16(a, b, c) };
}

input_trait! {
    /// f16 or bf16: which intrinsic each shape uses.
    pub trait MfmaInput {
        /// `c += a*b` for 32x32x8.
        fn mfma32[4, 4, 16] = Mfma32x32x8F16, Mfma32x32x8Bf16;
        /// `c += a*b` for 16x16x16.
        fn mfma16[4, 4, 4] = Mfma16x16x16F16, Mfma16x16x16Bf16;
    }
}

#[cfg(target_arch = "amdgpu")]
mod hw {
    use super::MfmaInput;
    use crate::atom::bf16_lanes;
    use crate::elem::Bf16;
    crate::atom::simd_types! { F16x4 = [f16; 4], I16x4 = [i16; 4], F32x16 = [f32; 16], F32x4 = [f32; 4] }

    #[allow(improper_ctypes)]
    unsafe extern "C" {
        #[link_name = "llvm.amdgcn.mfma.f32.32x32x8f16"]
        fn mfma32_f16(a: F16x4, b: F16x4, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
        #[link_name = "llvm.amdgcn.mfma.f32.16x16x16f16"]
        fn mfma16_f16(a: F16x4, b: F16x4, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
        #[link_name = "llvm.amdgcn.mfma.f32.32x32x8bf16.1k"]
        fn mfma32_bf16(a: I16x4, b: I16x4, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
        #[link_name = "llvm.amdgcn.mfma.f32.16x16x16bf16.1k"]
        fn mfma16_bf16(a: I16x4, b: I16x4, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
    }

    /// `MfmaInput` for `$t` through the intrinsics `$i32`, `$i16`, its
    /// registers as vectors by `$v`.
    macro_rules! hw_mfma {
        ($t:ty, $v:ident, $i32:ident, $i16:ident) => {
            impl MfmaInput for $t {
                #[inline(always)]
                unsafe fn mfma32(a: &[$t; 4], b: &[$t; 4], c: &mut [f32; 16]) {
                    let d = unsafe { $i32($v(a), $v(b), F32x16(*c), 0, 0, 0) };
                    // SIMD types cannot be projected into: reinterpret as the array.
                    *c = unsafe { core::mem::transmute(d) };
                }
                #[inline(always)]
                unsafe fn mfma16(a: &[$t; 4], b: &[$t; 4], c: &mut [f32; 4]) {
                    let d = unsafe { $i16($v(a), $v(b), F32x4(*c), 0, 0, 0) };
                    // SIMD types cannot be projected into: reinterpret as the array.
                    *c = unsafe { core::mem::transmute(d) };
                }
            }
        };
    }
    #[inline(always)]
    fn f16x4(v: &[f16; 4]) -> F16x4 {
        F16x4(*v)
    }
    #[inline(always)]
    fn bf16x4(v: &[Bf16; 4]) -> I16x4 {
        I16x4(bf16_lanes(v))
    }
    hw_mfma!(f16, f16x4, mfma32_f16, mfma16_f16);
    hw_mfma!(Bf16, bf16x4, mfma32_bf16, mfma16_bf16);
}
