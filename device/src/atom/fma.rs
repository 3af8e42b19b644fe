//! The scalar atom: one thread, one f32 fused multiply-add. Used for f32 data
//! (the matrix units would round f32 inputs) and as a portable fallback.

use super::mma_atom;

mma_atom! {
    /// `c += a * b` in f32 on one thread.
    pub struct Fma: 1 x 1 x 1, wave 1;
    In = f32, A = [f32; 1], B = [f32; 1], C = [f32; 1], Run = [f32; 1];
    fn a_elem(_, _) = (0, 0);
    fn b_elem(_, _) = (0, 0);
    fn c_elem(_, _) = (0, 0);
    fn c_slot(_, _) = (0, 0);
    // A fused multiply-add, as the GPU's v_fma_f32 / fma.rn.f32.
    unsafe fn mma(a, b, c) = c[0] = crate::arch::fma(a[0], b[0], c[0]);
}
