//! RDNA3 (gfx1100) WMMA atom, wave32.
//!
//! Layout (RDNA3 ISA, `v_wmma_f32_16x16x16_f16`): lane `l` holds all 16 k of
//! A row `l % 16` (lanes `i` and `i + 16` carry the same row: the hardware
//! reads both halves of the wave), and of B column `l % 16`; accumulator slot
//! `g` of lane `l` is D[2g + l/16][l % 16].

use super::MmaAtom;
use crate::elem::Elem;
use convgrad_types::instance::AtomKind;
use core::marker::PhantomData;

/// `v_wmma_f32_16x16x16_{f16,bf16}`.
pub struct Wmma16x16x16<T>(PhantomData<T>);

/// f16 or bf16 WMMA.
pub trait WmmaInput: Elem {
    /// `c += a*b`.
    ///
    /// # Safety
    /// Every lane of the wave must call it together (convergent).
    unsafe fn wmma(a: &[Self; 16], b: &[Self; 16], c: &mut [f32; 8]);
}

impl<T: WmmaInput> MmaAtom for Wmma16x16x16<T> {
    const KIND: AtomKind = AtomKind::Wmma16x16x16;
    const M: usize = 16;
    const N: usize = 16;
    const K: usize = 16;
    const WAVE: usize = 32;
    type In = T;
    type A = [T; 16];
    type B = [T; 16];
    type C = [f32; 8];
    type ARun = crate::elem::Vec16<[T; 8]>;
    type BRun = crate::elem::Vec16<[T; 8]>;
    #[inline(always)]
    fn a_elem(lane: usize, e: usize) -> (usize, usize) {
        (lane % 16, e)
    }
    #[inline(always)]
    fn b_elem(lane: usize, e: usize) -> (usize, usize) {
        (e, lane % 16)
    }
    #[inline(always)]
    fn c_elem(lane: usize, e: usize) -> (usize, usize) {
        (2 * e + lane / 16, lane % 16)
    }
    #[inline(always)]
    fn c_slot(i: usize, j: usize) -> (usize, usize) {
        (16 * (i % 2) + j, i / 2)
    }
    #[inline(always)]
    unsafe fn mma(a: &[T; 16], b: &[T; 16], c: &mut [f32; 8]) {
        unsafe { T::wmma(a, b, c) }
    }
}

#[cfg(target_arch = "amdgpu")]
mod hw {
    use super::*;
    use crate::elem::Bf16;
    #[repr(simd)]
    #[derive(Clone, Copy)]
    pub struct F16x16(pub [f16; 16]);
    #[repr(simd)]
    #[derive(Clone, Copy)]
    pub struct I16x16(pub [i16; 16]);
    #[repr(simd)]
    #[derive(Clone, Copy)]
    pub struct F32x8(pub [f32; 8]);
    #[allow(improper_ctypes)]
    unsafe extern "C" {
        #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.f16"]
        pub fn wmma_f16(a: F16x16, b: F16x16, c: F32x8) -> F32x8;
        #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.bf16"]
        pub fn wmma_bf16(a: I16x16, b: I16x16, c: F32x8) -> F32x8;
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
            // Bf16 is a transparent u16: the bits reinterpret as-is.
            let a = I16x16(unsafe { core::mem::transmute::<[Bf16; 16], [i16; 16]>(*a) });
            let b = I16x16(unsafe { core::mem::transmute::<[Bf16; 16], [i16; 16]>(*b) });
            *c = unsafe { core::mem::transmute(wmma_bf16(a, b, F32x8(*c))) };
        }
    }
}

#[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
mod emu {
    use super::*;
    use crate::elem::Bf16;
    use convgrad_emu::{lane, matrix::MatrixOp};
    macro_rules! emu_wmma {
        ($t:ty, $op:ident) => {
            impl WmmaInput for $t {
                #[inline(always)]
                unsafe fn wmma(a: &[$t; 16], b: &[$t; 16], c: &mut [f32; 8]) {
                    let cin = *c;
                    lane::mma(MatrixOp::$op, &crate::atom::bits(a), &crate::atom::bits(b), &cin, c);
                }
            }
        };
    }
    emu_wmma!(f16, Wmma16x16x16F16);
    emu_wmma!(Bf16, Wmma16x16x16Bf16);
}
