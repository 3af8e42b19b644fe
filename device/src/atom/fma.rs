//! The scalar atom: one thread, one f32 fused multiply-add. Used for f32 data
//! (the matrix units would round f32 inputs) and as a portable fallback.

use super::MmaAtom;
use convgrad_types::instance::AtomKind;

/// `c += a * b` in f32 on one thread.
pub struct Fma;

impl MmaAtom for Fma {
    const KIND: AtomKind = AtomKind::Fma;
    const M: usize = 1;
    const N: usize = 1;
    const K: usize = 1;
    const WAVE: usize = 1;
    type In = f32;
    type A = [f32; 1];
    type B = [f32; 1];
    type C = [f32; 1];
    type ARun = [f32; 1];
    type BRun = [f32; 1];
    #[inline(always)]
    fn a_elem(_: usize, _: usize) -> (usize, usize) {
        (0, 0)
    }
    #[inline(always)]
    fn b_elem(_: usize, _: usize) -> (usize, usize) {
        (0, 0)
    }
    #[inline(always)]
    fn c_elem(_: usize, _: usize) -> (usize, usize) {
        (0, 0)
    }
    #[inline(always)]
    fn c_slot(_: usize, _: usize) -> (usize, usize) {
        (0, 0)
    }
    #[inline(always)]
    unsafe fn mma(a: &[f32; 1], b: &[f32; 1], c: &mut [f32; 1]) {
        // A fused multiply-add, as the GPU's v_fma_f32 / fma.rn.f32.
        c[0] = core::intrinsics::fmaf32(a[0], b[0], c[0]);
    }
}
