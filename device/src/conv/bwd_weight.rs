//! Grouped backward-weight as an implicit GEMM, per group `g`:
//! `dW[g] (M = K) x (N = C*Z*Y*X) = dY[g] (K x R) * im2col(X[g]) (R x N)`,
//! with the reduction `R = N_batch * Do*Ho*Wo`.
//!
//! The GEMM's N index orders the filter columns like the weight tensor in
//! memory: `(z, y, x, c)` with c fastest when C is the weight's innermost axis
//! (GKZYXC), else `(c, z, y, x)` (GKCZYX), so the epilogue's stores coalesce.

use super::{load_args, offset, split_out_pixel};
use crate::arch;
use crate::atom::MmaAtom;
use crate::elem::Elem;
use crate::gemm::splitk::{self, PartialMode};
use crate::gemm::{Operand, block};
use convgrad_types::params::ConvArgs;

/// Filter column `n` -> `(c, [z, y, x])`.
#[inline(always)]
pub fn split_filter_col(a: &ConvArgs, n: u32) -> (u32, [u32; 3]) {
    let [fz, fy, fx] = a.filter;
    if a.w_strides[2] == 1 && a.c > 1 {
        let c = n % a.c;
        let t = n / a.c;
        (c, [t / (fy * fx), (t / fx) % fy, t % fx])
    } else {
        let t = n % (fz * fy * fx);
        (n / (fz * fy * fx), [t / (fy * fx), (t / fx) % fy, t % fx])
    }
}

/// A operand: `dY[g]` as `K x R` (rows = output channels).
pub struct DyRows<'a, T> {
    a: &'a ConvArgs,
    g: u32,
    p: *const T,
}

impl<T: Elem> Operand for DyRows<'_, T> {
    type T = T;
    #[inline(always)]
    fn rows_fast(&self) -> bool {
        self.a.dy_strides[2] == 1
    }
    #[inline(always)]
    unsafe fn load(&self, row: u32, k: u32) -> T {
        if row >= self.a.k {
            return T::default();
        }
        let (n, [od, oh, ow]) = split_out_pixel(self.a, k);
        unsafe { arch::ld(self.p, offset(&self.a.dy_strides, [self.g, n, row, od, oh, ow])) }
    }
}

/// B operand: `im2col(X[g])` transposed, `N x R` (rows = filter columns).
pub struct XCols<'a, T> {
    a: &'a ConvArgs,
    g: u32,
    p: *const T,
}

impl<T: Elem> Operand for XCols<'_, T> {
    type T = T;
    #[inline(always)]
    fn rows_fast(&self) -> bool {
        self.a.x_strides[2] == 1 && self.a.w_strides[2] == 1
    }
    #[inline(always)]
    unsafe fn load(&self, row: u32, k: u32) -> T {
        if row >= self.a.gemm_n {
            return T::default();
        }
        let (c, f) = split_filter_col(self.a, row);
        let (n, o) = split_out_pixel(self.a, k);
        let mut i = [0u32; 3];
        for d in 0..3 {
            // Input coordinate; wraps to a huge value when it falls into the left pad.
            let v = (o[d] * self.a.stride[d] + f[d] * self.a.dilation[d]).wrapping_sub(self.a.lpad[d]);
            if v >= self.a.input[d] {
                return T::default();
            }
            i[d] = v;
        }
        unsafe { arch::ld(self.p, offset(&self.a.x_strides, [self.g, n, c, i[0], i[1], i[2]])) }
    }
}

/// Writes `v` (the full reduction) through the epilogue into `dW`.
#[inline(always)]
unsafe fn write_dw<Out: Elem>(a: &ConvArgs, g: u32, m: u32, n: u32, v: f32) {
    let (c, [z, y, x]) = split_filter_col(a, n);
    let idx = [g, m, c, z, y, x];
    let v = a.epi.apply(v, |d| unsafe { arch::ld(a.d[d] as *const Out, offset(&a.d_strides[d], idx)).to_f32() });
    unsafe { arch::st(a.w as *mut Out, offset(&a.w_strides, idx), Out::from_f32(v)) }
}

/// The backward-weight GEMM kernel body. Grid: `x = tiles_m * tiles_n`,
/// `z = G * k_batch`; one workgroup of `WM * WN` waves per tile.
///
/// # Safety
/// Launch contract of the instance (grid, block, LDS) and a valid argument block.
#[inline(always)]
pub unsafe fn kernel<
    At: MmaAtom,
    Out: Elem,
    const BM: usize,
    const BN: usize,
    const BK: usize,
    const WM: usize,
    const WN: usize,
    const FR: usize,
    const FC: usize,
    const LA: usize,
    const LB: usize,
>(
    args: *const ConvArgs,
) {
    let a = unsafe { load_args(args) };
    let at = splitk::coord(a, arch::block_id(), BM as u32, BN as u32);
    let g = at.g;
    let dy = DyRows { a, g, p: a.dy as *const At::In };
    let x = XCols { a, g, p: a.x as *const At::In };
    let acc = unsafe {
        block::run::<At, _, _, BM, BN, BK, WM, WN, FR, FC, LA, LB>(&dy, &x, at.range)
    };
    block::for_each_acc::<At, BM, BN, WM, WN, FR, FC>(&acc, |i, j, v| {
        let (m, n) = (at.range.m0 + i as u32, at.range.n0 + j as u32);
        if m >= a.gemm_m || n >= a.gemm_n {
            return;
        }
        let ws = a.ws as *mut f32;
        match at.mode {
            PartialMode::Direct => unsafe { write_dw::<Out>(a, g, m, n, v) },
            PartialMode::Atomic => unsafe {
                arch::atomic_add_f32(ws, splitk::ws_index(a, at.mode, at.kb, g, m, n), v)
            },
            PartialMode::Store => unsafe { arch::st(ws, splitk::ws_index(a, at.mode, at.kb, g, m, n), v) },
        }
    });
}

/// Split-K finishing kernel body: one thread per weight element; sums the
/// partials in batch order, applies the epilogue and casts. Grid x covers
/// `G * M * N` with 256-thread workgroups.
///
/// # Safety
/// As [`kernel`].
#[inline(always)]
pub unsafe fn finish<Out: Elem>(args: *const ConvArgs) {
    let a = unsafe { load_args(args) };
    let idx = arch::block_id()[0] as usize * 256 + arch::thread_id() as usize;
    if idx >= a.partial_elems as usize {
        return;
    }
    let v = unsafe { splitk::reduce(a, idx) };
    let mn = (a.gemm_m * a.gemm_n) as usize;
    let g = (idx / mn) as u32;
    let m = ((idx % mn) / a.gemm_n as usize) as u32;
    let n = (idx % a.gemm_n as usize) as u32;
    unsafe { write_dw::<Out>(a, g, m, n, v) }
}
