//! Grouped backward-weight as an implicit GEMM, per group `g`:
//! `dW[g] (M = K) x (N = C*Z*Y*X) = dY[g] (K x R) * im2col(X[g]) (R x N)`,
//! with the reduction `R = N_batch * Do*Ho*Wo`.
//!
//! The GEMM's N index orders the filter columns like the weight tensor in
//! memory: `(z, y, x, c)` with c fastest when C is the weight's innermost axis
//! (GKZYXC), else `(c, z, y, x)` (GKCZYX), so the epilogue's stores coalesce.

use crate::conv::filter_cols::{c_fastest, finish_tile, split_filter_col, write_dw_run};
use crate::conv::epilogue::{self, RUN, for_each_in_run};
use crate::conv::{ChannelRows, load_args, pixels_flat, spatial_off, split_out_pixel, vector_axis, window_origin};
use crate::arch;
use crate::elem::Elem;
use crate::gemm::splitk::{self, PartialMode};
use crate::gemm::{self, Operand, Tile};
use convgrad_types::params::ConvArgs;

/// B operand: `im2col(X[g])` transposed, `N x R` (rows = filter columns).
pub struct XCols<'a, T> {
    a: &'a ConvArgs,
    p: *const T,
    g_off: u32,
    /// A 1x1 filter, unit stride, no padding, and `X`'s pixels back to back:
    /// reduction index `k` is input pixel `k`, always inside.
    flat: bool,
}

/// Row context of [`XCols`]: the offset of the channel at the dilated tap
/// (relative to the window origin), the tap per dim, and whether the row is
/// a filter column at all.
#[derive(Clone, Copy)]
pub struct XRow {
    off: u32,
    tap: [u32; 3],
    valid: bool,
}

/// Column context of [`XCols`]: offset of the window's origin
/// (`o * stride - lpad` per dim, wrapping below zero) and the origin itself.
#[derive(Clone, Copy)]
pub struct XCol {
    off: u32,
    origin: [u32; 3],
}

impl<T: Elem> XCols<'_, T> {
    /// Element offset, or none in the padding. Branch free: one add for the
    /// offset, one compare per dim for the bounds.
    #[inline(always)]
    fn offset(&self, r: &XRow, c: &XCol) -> Option<u32> {
        let n = &self.a.input;
        // Wraps to a huge value in the left pad, so one compare checks both sides.
        let i = [c.origin[0].wrapping_add(r.tap[0]), c.origin[1].wrapping_add(r.tap[1]), c.origin[2].wrapping_add(r.tap[2])];
        let inside = (i[0] < n[0]) & (i[1] < n[1]) & (i[2] < n[2]) & r.valid;
        inside.then_some(r.off.wrapping_add(c.off))
    }
}

impl<T: Elem> Operand for XCols<'_, T> {
    type T = T;
    type Row = XRow;
    type Col = XCol;
    const BATCHED: bool = true;
    #[inline(always)]
    fn rows_fast(&self) -> bool {
        self.a.x_strides[2] == 1 && c_fastest(self.a)
    }
    #[inline(always)]
    fn vec_ok(&self) -> bool {
        c_fastest(self.a) && vector_axis(&self.a.x_strides, 2, self.a.c, T::LANES as u32)
    }
    #[inline(always)]
    fn row(&self, row: u32) -> XRow {
        let (c, f) = split_filter_col(self.a, row);
        let (d, xs) = (&self.a.dilation, &self.a.x_strides);
        let tap = [f[0] * d[0], f[1] * d[1], f[2] * d[2]];
        XRow {
            off: (self.g_off + c * xs[2]).wrapping_add(spatial_off(tap, xs)),
            tap,
            valid: row < self.a.gemm.n,
        }
    }
    #[inline(always)]
    fn col(&self, k: u32) -> XCol {
        if self.flat {
            return XCol { off: k * self.a.x_strides[5], origin: [0; 3] };
        }
        let (n, o) = split_out_pixel(self.a, k);
        let (origin, xs) = (window_origin(self.a, o), &self.a.x_strides);
        XCol { off: (n * xs[1]).wrapping_add(spatial_off(origin, xs)), origin }
    }
    #[inline(always)]
    unsafe fn load(&self, r: &XRow, c: &XCol) -> T {
        match self.offset(r, c) {
            Some(o) => unsafe { arch::ld(self.p, o as usize) },
            None => T::default(),
        }
    }
    #[inline(always)]
    fn vec_src(&self, r: &XRow, c: &XCol) -> Option<*const T::V16> {
        self.offset(r, c).map(|o| self.p.wrapping_add(o as usize) as *const T::V16)
    }
}

/// The backward-weight GEMM kernel body. Grid: `x = tiles_m * tiles_n`,
/// `z = G * k_batch`; one workgroup of `WM * WN` waves per tile.
///
/// # Safety
/// Launch contract of the instance (grid, block, LDS) and a valid argument block.
#[inline(always)]
pub unsafe fn kernel<Tl: Tile, Out: Elem, const FR: usize, const FC: usize>(args: *const ConvArgs) {
    unsafe { run::<Tl, Out, FR, FC, false>(args) }
}

/// The GEMM kernel with the implicit-GEMM main loop (`TMA = false`) or the
/// TMA main loop (`conv::bwd_weight::tma`); the epilogue and split-K
/// finish are the same.
///
/// # Safety
/// As [`kernel`]; with `TMA`, the argument block's maps filled for the tile.
#[inline(always)]
pub(crate) unsafe fn run<Tl: Tile, Out: Elem, const FR: usize, const FC: usize, const TMA: bool>(args: *const ConvArgs) {
    let a = unsafe { load_args(args) };
    let at = splitk::coord(a, arch::block_id(), Tl::BM as u32, Tl::BN as u32);
    let g = at.g;
    // A operand: `dY[g]` as `K x R` (rows = output channels). Reduction
    // indices are output pixels: with packed pixels (NHWGK, GNHWK) an offset
    // is one multiply, else three divisions.
    let s = &a.dy_strides;
    let dy_flat = pixels_flat(s, &a.output, a.n);
    let dy = ChannelRows {
        p: a.dy as *const Tl::In,
        g_off: g * s[0],
        strides: s,
        rows: a.k,
        vec_rows: a.k,
        col: move |k| {
            if dy_flat {
                return k * s[5];
            }
            let (n, [od, oh, ow]) = split_out_pixel(a, k);
            n * s[1] + od * s[3] + oh * s[4] + ow * s[5]
        },
    };
    let one = |v: [u32; 3]| v == [1, 1, 1];
    let x_flat = one(a.filter)
        && one(a.stride)
        && a.lpad == [0; 3]
        && a.input == a.output
        && pixels_flat(&a.x_strides, &a.input, a.n);
    let x = XCols { a, p: a.x as *const Tl::In, g_off: g * a.x_strides[0], flat: x_flat };
    let acc = if TMA {
        match unsafe { super::tma::mainloop::<Tl, FR, FC>(a, g, at.range) } {
            Some(acc) => acc,
            // The producer warp: its copies are done, the rest is the tile's.
            None => return,
        }
    } else {
        unsafe { gemm::mainloop::<Tl, _, _, FR, FC>(&dy, &x, at.range) }
    };
    let store = |i: usize, j0: usize, v: [f32; RUN]| {
        let (m, n0) = (at.range.m0 + i as u32, at.range.n0 + j0 as u32);
        if m >= a.gemm.m || n0 >= a.gemm.n {
            return;
        }
        let len = (a.gemm.n - n0).min(RUN as u32);
        match at.mode {
            PartialMode::Direct => unsafe { write_dw_run::<Out>(a, g, m, n0, len, v) },
            // Workspace rows of whole quads: the run (from a multiple of RUN) in 16-byte pieces.
            _ if a.gemm.n.is_multiple_of(4) => {
                for q in 0..RUN / 4 {
                    if ((4 * q) as u32) < len {
                        let v4 = [v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]];
                        unsafe { splitk::put4(a, at.mode, at.kb, g, m, n0 + 4 * q as u32, v4) }
                    }
                }
            }
            _ => for_each_in_run(v, len, |e, x| unsafe { splitk::put(a, at.mode, at.kb, g, m, n0 + e, x) }),
        }
    };
    unsafe { epilogue::store_tile_rows::<Tl, FR, FC, false, TMA>(&acc, |_| 0, |m, n0, _, v| store(m, n0, v)) };
    // The result tile in LDS has been read.
    let sync = || crate::gemm::tma::consumer_sync::<Tl>(TMA);
    if unsafe { splitk::last_arrival_synced(a, g * a.gemm.tiles_m * a.gemm.tiles_n + arch::block_id()[0], sync) } {
        let (r, threads) = (at.range, Tl::THREADS as u32);
        unsafe { finish_tile::<Out>(a, g, [r.m0, r.n0], [Tl::BM as u32, Tl::BN as u32], threads) };
    }
}
