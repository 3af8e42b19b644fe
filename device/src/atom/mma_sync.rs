//! NVIDIA sm_80+ `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}` atom, warp32.
//!
//! Layout (PTX ISA, "Matrix fragments for mma.m16n8k16"): with `gid = lane/4`,
//! `t = lane%4`: A slot `e` holds row `gid + 8*((e/2)%2)`, column
//! `2t + e%2 + 8*(e/4)`; B slot `e` holds k `2t + e%2 + 8*(e/2)`, column `gid`;
//! C slot `e` holds row `gid + 8*(e/2)`, column `2t + e%2`.

use super::{LdsTile, input_trait, mma_atom};
use crate::arch;
use crate::elem::Elem;

mma_atom! {
    /// `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32`.
    pub struct Mma16x8x16<T: MmaSyncInput>: 16 x 8 x 16, wave 32;
    In = T, A = [T; 8], B = [T; 4], C = [f32; 4], Run = crate::elem::Al4<[T; 2]>;
    fn a_elem(lane, e) = (lane / 4 + 8 * ((e / 2) % 2), 2 * (lane % 4) + e % 2 + 8 * (e / 4));
    fn b_elem(lane, e) = (2 * (lane % 4) + e % 2 + 8 * (e / 2), lane / 4);
    fn c_elem(lane, e) = (lane / 4 + 8 * (e / 2), 2 * (lane % 4) + e % 2);
    fn c_slot(i, j) = (4 * (i % 8) + j / 2, 2 * (i / 8) + j % 2);
    unsafe fn mma(a, b, c) = unsafe { T::mma_sync(a, b, c) };

    /// One `ldmatrix.x4`: matrices (rows +0/+8) x (k +0/+8) are registers 0..3
    /// of the A layout above; `.trans` when the tile is row-contiguous.
    #[inline(always)]
    unsafe fn load_a(t: LdsTile, i0: usize, k0: usize, _lane: usize) -> [T; 8] {
        let row = move |m: usize, r: usize| {
            let (i, k) = (i0 + 8 * (m % 2), k0 + 8 * (m / 2));
            if t.mn_major { t.at::<T>(i, k + r) } else { t.at::<T>(i + r, k) }
        };
        let v = unsafe { if t.mn_major { arch::ldmatrix_x4::<true>(row) } else { arch::ldmatrix_x4::<false>(row) } };
        halves(v)
    }
    /// One `ldmatrix.x4` for two n8 fragments: matrices (cols +0/+8) x (k +0/+8).
    #[inline(always)]
    unsafe fn load_b2(t: LdsTile, j0: usize, k0: usize, _lane: usize) -> [[T; 4]; 2] {
        let row = move |m: usize, r: usize| {
            let (j, k) = (j0 + 8 * (m / 2), k0 + 8 * (m % 2));
            if t.mn_major { t.at::<T>(j, k + r) } else { t.at::<T>(j + r, k) }
        };
        let v = unsafe { if t.mn_major { arch::ldmatrix_x4::<true>(row) } else { arch::ldmatrix_x4::<false>(row) } };
        let h: [T; 8] = halves(v);
        [[h[0], h[1], h[2], h[3]], [h[4], h[5], h[6], h[7]]]
    }
}

mma_atom! {
    /// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32` on f32 data: each
    /// operand is rounded to TF32 first with `cvt.rna.tf32.f32` (round to
    /// nearest, ties away from zero: what CUTLASS and cuBLAS do before a TF32
    /// mma), then the tensor core multiplies exactly and sums in f32.
    ///
    /// Layout (PTX ISA, "Matrix fragments for mma.m16n8k8", `.tf32`): with
    /// `gid = lane/4`, `t = lane%4`: A slot `e` holds row `gid + 8*(e%2)`,
    /// column `t + 4*(e/2)`; B slot `e` holds k `t + 4*e`, column `gid`;
    /// C as m16n8k16's (row `gid + 8*(e/2)`, column `2t + e%2`).
    pub struct Mma16x8x8Tf32: 16 x 8 x 8, wave 32;
    In = f32, A = [f32; 4], B = [f32; 2], C = [f32; 4], Run = [f32; 1];
    fn a_elem(lane, e) = (lane / 4 + 8 * (e % 2), lane % 4 + 4 * (e / 2));
    fn b_elem(lane, e) = (lane % 4 + 4 * e, lane / 4);
    fn c_elem(lane, e) = (lane / 4 + 8 * (e / 2), 2 * (lane % 4) + e % 2);
    fn c_slot(i, j) = (4 * (i % 8) + j / 2, 2 * (i / 8) + j % 2);
    unsafe fn mma(a, b, c) = unsafe { tf32::mma(&a.map(tf32::round), &b.map(tf32::round), c) };
}

/// The TF32 atom's two instructions: the operand rounding and the multiply
/// on operands that are TF32 values in f32 containers.
pub mod tf32 {
    /// `cvt.rna.tf32.f32`: `v` rounded to 10 mantissa bits, to nearest with
    /// ties away from zero, as an f32 bit pattern whose low 13 bits are 0.
    #[inline(always)]
    pub fn round(v: f32) -> f32 {
        #[cfg(target_arch = "nvptx64")]
        {
            unsafe extern "C" {
                #[link_name = "llvm.nvvm.f2tf32.rna"]
                fn f2tf32_rna(v: f32) -> i32;
            }
            f32::from_bits(unsafe { f2tf32_rna(v) } as u32)
        }
        #[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
        {
            f32::from_bits(convgrad_emu::lane::cvt_rna_tf32(v.to_bits()))
        }
        // No TF32 instances on AMD: the module only has to build.
        #[cfg(target_arch = "amdgpu")]
        {
            v
        }
    }

    /// `c += a * b` on one lane's registers.
    ///
    /// # Safety
    /// Every lane of the warp calls it together (convergent).
    #[inline(always)]
    pub unsafe fn mma(a: &[f32; 4], b: &[f32; 2], c: &mut [f32; 4]) {
        #[cfg(target_arch = "nvptx64")]
        {
            #[repr(C)]
            #[derive(Clone, Copy)]
            struct F32x4Ret(f32, f32, f32, f32);
            #[allow(improper_ctypes)]
            unsafe extern "unadjusted" {
                #[link_name = "llvm.nvvm.mma.m16n8k8.row.col.tf32"]
                fn mma_tf32(a0: i32, a1: i32, a2: i32, a3: i32, b0: i32, b1: i32, c0: f32, c1: f32, c2: f32, c3: f32) -> F32x4Ret;
            }
            let i = |x: f32| x.to_bits() as i32;
            let r = unsafe { mma_tf32(i(a[0]), i(a[1]), i(a[2]), i(a[3]), i(b[0]), i(b[1]), c[0], c[1], c[2], c[3]) };
            *c = [r.0, r.1, r.2, r.3];
        }
        #[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
        {
            crate::atom::emulate32(convgrad_emu::matrix::MatrixOp::Mma16x8x8Tf32, a, b, c);
        }
        #[cfg(target_arch = "amdgpu")]
        {
            let _ = (a, b, c);
            crate::arch::trap()
        }
    }
}

input_trait! {
    /// f16 or bf16 mma.sync.
    pub trait MmaSyncInput {
        /// `c += a*b`.
        fn mma_sync[8, 4, 4] = Mma16x8x16F16, Mma16x8x16Bf16;
    }
}

/// Registers of 16-bit pairs -> elements, low half first.
#[inline(always)]
fn halves<T: Elem>(v: [u32; 4]) -> [T; 8] {
    const { assert!(core::mem::size_of::<T>() == 2) };
    // SAFETY: eight 2-byte plain-data elements in sixteen bytes.
    unsafe { core::mem::transmute_copy::<[u32; 4], [T; 8]>(&v) }
}

#[cfg(target_arch = "nvptx64")]
mod hw {
    use super::*;
    use crate::elem::Bf16;
    crate::atom::simd_types! { F16x2 = [f16; 2] }
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct F32x4Ret(pub f32, pub f32, pub f32, pub f32);
    #[allow(improper_ctypes)]
    unsafe extern "unadjusted" {
        #[link_name = "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"]
        fn mma_f16(
            a0: F16x2, a1: F16x2, a2: F16x2, a3: F16x2, b0: F16x2, b1: F16x2,
            c0: f32, c1: f32, c2: f32, c3: f32,
        ) -> F32x4Ret;
        #[link_name = "llvm.nvvm.mma.m16n8k16.row.col.bf16"]
        fn mma_bf16(
            a0: i32, a1: i32, a2: i32, a3: i32, b0: i32, b1: i32,
            c0: f32, c1: f32, c2: f32, c3: f32,
        ) -> F32x4Ret;
    }
    impl MmaSyncInput for f16 {
        #[inline(always)]
        unsafe fn mma_sync(a: &[f16; 8], b: &[f16; 4], c: &mut [f32; 4]) {
            let p = |x: &[f16], i: usize| F16x2([x[2 * i], x[2 * i + 1]]);
            let r = unsafe {
                mma_f16(p(a, 0), p(a, 1), p(a, 2), p(a, 3), p(b, 0), p(b, 1), c[0], c[1], c[2], c[3])
            };
            *c = [r.0, r.1, r.2, r.3];
        }
    }
    impl MmaSyncInput for Bf16 {
        #[inline(always)]
        unsafe fn mma_sync(a: &[Bf16; 8], b: &[Bf16; 4], c: &mut [f32; 4]) {
            // Element 2i in the low half of 32-bit register i.
            let p = |x: &[Bf16], i: usize| (x[2 * i].0 as u32 | ((x[2 * i + 1].0 as u32) << 16)) as i32;
            let r = unsafe {
                mma_bf16(p(a, 0), p(a, 1), p(a, 2), p(a, 3), p(b, 0), p(b, 1), c[0], c[1], c[2], c[3])
            };
            *c = [r.0, r.1, r.2, r.3];
        }
    }
}
