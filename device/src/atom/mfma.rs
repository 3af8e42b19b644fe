//! CDNA2/CDNA3 (gfx90a, gfx942) MFMA atoms, wave64.
//!
//! Layouts (AMD matrix instruction calculator / CDNA3 ISA section 7):
//! - 32x32x8: A[i][k] in lane `i + 32*(k/4)`, slot `k%4`; B[k][j] in lane
//!   `j + 32*(k/4)`, slot `k%4`; D[i][j] in lane `j + 32*((i/4)%2)`, slot
//!   `4*(i/8) + i%4`.
//! - 16x16x16: A[i][k] in lane `i + 16*(k/4)`, slot `k%4`; B likewise with j;
//!   D[i][j] in lane `j + 16*(i/4)`, slot `i%4`.

use super::MmaAtom;
use crate::elem::Elem;
use convgrad_types::instance::AtomKind;
use core::marker::PhantomData;

/// `v_mfma_f32_32x32x8{f16,bf16_1k}`.
pub struct Mfma32x32x8<T>(PhantomData<T>);
/// `v_mfma_f32_16x16x16{f16,bf16_1k}`.
pub struct Mfma16x16x16<T>(PhantomData<T>);

/// f16 or bf16: which intrinsic each shape uses.
pub trait MfmaInput: Elem {
    /// `c += a*b` for 32x32x8.
    ///
    /// # Safety
    /// Every lane of the wave must call it together (convergent).
    unsafe fn mfma32(a: &[Self; 4], b: &[Self; 4], c: &mut [f32; 16]);
    /// `c += a*b` for 16x16x16.
    ///
    /// # Safety
    /// Every lane of the wave must call it together (convergent).
    unsafe fn mfma16(a: &[Self; 4], b: &[Self; 4], c: &mut [f32; 4]);
}

impl<T: MfmaInput> MmaAtom for Mfma32x32x8<T> {
    const KIND: AtomKind = AtomKind::Mfma32x32x8;
    const M: usize = 32;
    const N: usize = 32;
    const K: usize = 8;
    const WAVE: usize = 64;
    type In = T;
    type A = [T; 4];
    type B = [T; 4];
    type C = [f32; 16];
    type ARun = crate::elem::Al8<[T; 4]>;
    type BRun = crate::elem::Al8<[T; 4]>;
    #[inline(always)]
    fn a_elem(lane: usize, e: usize) -> (usize, usize) {
        (lane % 32, 4 * (lane / 32) + e)
    }
    #[inline(always)]
    fn b_elem(lane: usize, e: usize) -> (usize, usize) {
        (4 * (lane / 32) + e, lane % 32)
    }
    #[inline(always)]
    fn c_elem(lane: usize, e: usize) -> (usize, usize) {
        (8 * (e / 4) + 4 * (lane / 32) + e % 4, lane % 32)
    }
    #[inline(always)]
    fn c_slot(i: usize, j: usize) -> (usize, usize) {
        (32 * ((i % 8) / 4) + j, 4 * (i / 8) + i % 4)
    }
    #[inline(always)]
    unsafe fn mma(a: &[T; 4], b: &[T; 4], c: &mut [f32; 16]) {
        unsafe { T::mfma32(a, b, c) }
    }
}

impl<T: MfmaInput> MmaAtom for Mfma16x16x16<T> {
    const KIND: AtomKind = AtomKind::Mfma16x16x16;
    const M: usize = 16;
    const N: usize = 16;
    const K: usize = 16;
    const WAVE: usize = 64;
    type In = T;
    type A = [T; 4];
    type B = [T; 4];
    type C = [f32; 4];
    type ARun = crate::elem::Al8<[T; 4]>;
    type BRun = crate::elem::Al8<[T; 4]>;
    #[inline(always)]
    fn a_elem(lane: usize, e: usize) -> (usize, usize) {
        (lane % 16, 4 * (lane / 16) + e)
    }
    #[inline(always)]
    fn b_elem(lane: usize, e: usize) -> (usize, usize) {
        (4 * (lane / 16) + e, lane % 16)
    }
    #[inline(always)]
    fn c_elem(lane: usize, e: usize) -> (usize, usize) {
        (4 * (lane / 16) + e, lane % 16)
    }
    #[inline(always)]
    fn c_slot(i: usize, j: usize) -> (usize, usize) {
        (16 * (i / 4) + j, i % 4)
    }
    #[inline(always)]
    unsafe fn mma(a: &[T; 4], b: &[T; 4], c: &mut [f32; 4]) {
        unsafe { T::mfma16(a, b, c) }
    }
}

#[cfg(target_arch = "amdgpu")]
mod hw {
    use crate::elem::Bf16;
    #[repr(simd)]
    #[derive(Clone, Copy)]
    pub struct F16x4(pub [f16; 4]);
    #[repr(simd)]
    #[derive(Clone, Copy)]
    pub struct I16x4(pub [i16; 4]);
    #[repr(simd)]
    #[derive(Clone, Copy)]
    pub struct F32x16(pub [f32; 16]);
    #[repr(simd)]
    #[derive(Clone, Copy)]
    pub struct F32x4(pub [f32; 4]);

    #[allow(improper_ctypes)]
    unsafe extern "C" {
        #[link_name = "llvm.amdgcn.mfma.f32.32x32x8f16"]
        pub fn mfma32_f16(a: F16x4, b: F16x4, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
        #[link_name = "llvm.amdgcn.mfma.f32.16x16x16f16"]
        pub fn mfma16_f16(a: F16x4, b: F16x4, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
        #[link_name = "llvm.amdgcn.mfma.f32.32x32x8bf16.1k"]
        pub fn mfma32_bf16(a: I16x4, b: I16x4, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
        #[link_name = "llvm.amdgcn.mfma.f32.16x16x16bf16.1k"]
        pub fn mfma16_bf16(a: I16x4, b: I16x4, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
    }
    #[inline(always)]
    pub fn bf(v: &[Bf16; 4]) -> I16x4 {
        // Bf16 is a transparent u16: the bits reinterpret as-is.
        I16x4(unsafe { core::mem::transmute::<[Bf16; 4], [i16; 4]>(*v) })
    }
}

#[cfg(target_arch = "amdgpu")]
impl MfmaInput for f16 {
    #[inline(always)]
    unsafe fn mfma32(a: &[f16; 4], b: &[f16; 4], c: &mut [f32; 16]) {
        let d = unsafe { hw::mfma32_f16(hw::F16x4(*a), hw::F16x4(*b), hw::F32x16(*c), 0, 0, 0) };
        // SIMD types cannot be projected into: reinterpret as the array.
        *c = unsafe { core::mem::transmute(d) };
    }
    #[inline(always)]
    unsafe fn mfma16(a: &[f16; 4], b: &[f16; 4], c: &mut [f32; 4]) {
        let d = unsafe { hw::mfma16_f16(hw::F16x4(*a), hw::F16x4(*b), hw::F32x4(*c), 0, 0, 0) };
        // SIMD types cannot be projected into: reinterpret as the array.
        *c = unsafe { core::mem::transmute(d) };
    }
}

#[cfg(target_arch = "amdgpu")]
impl MfmaInput for crate::elem::Bf16 {
    #[inline(always)]
    unsafe fn mfma32(a: &[crate::elem::Bf16; 4], b: &[crate::elem::Bf16; 4], c: &mut [f32; 16]) {
        let d = unsafe { hw::mfma32_bf16(hw::bf(a), hw::bf(b), hw::F32x16(*c), 0, 0, 0) };
        // SIMD types cannot be projected into: reinterpret as the array.
        *c = unsafe { core::mem::transmute(d) };
    }
    #[inline(always)]
    unsafe fn mfma16(a: &[crate::elem::Bf16; 4], b: &[crate::elem::Bf16; 4], c: &mut [f32; 4]) {
        let d = unsafe { hw::mfma16_bf16(hw::bf(a), hw::bf(b), hw::F32x4(*c), 0, 0, 0) };
        // SIMD types cannot be projected into: reinterpret as the array.
        *c = unsafe { core::mem::transmute(d) };
    }
}

#[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
mod emu {
    use super::*;
    use crate::elem::Bf16;
    use convgrad_emu::{lane, matrix::MatrixOp};
    macro_rules! emu_mfma {
        ($t:ty, $op32:ident, $op16:ident) => {
            impl MfmaInput for $t {
                #[inline(always)]
                unsafe fn mfma32(a: &[$t; 4], b: &[$t; 4], c: &mut [f32; 16]) {
                    let cin = *c;
                    lane::mma(MatrixOp::$op32, &crate::atom::bits(a), &crate::atom::bits(b), &cin, c);
                }
                #[inline(always)]
                unsafe fn mfma16(a: &[$t; 4], b: &[$t; 4], c: &mut [f32; 4]) {
                    let cin = *c;
                    lane::mma(MatrixOp::$op16, &crate::atom::bits(a), &crate::atom::bits(b), &cin, c);
                }
            }
        };
    }
    emu_mfma!(f16, Mfma32x32x8F16, Mfma16x16x16F16);
    emu_mfma!(Bf16, Mfma32x32x8Bf16, Mfma16x16x16Bf16);
}
