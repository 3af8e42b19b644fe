//! Filter columns of backward-weight and the writes of `dW`: the GEMM's N
//! index orders the filter columns like the weight tensor in memory, `(z, y,
//! x, c)` with c fastest when C is the weight's innermost axis (GKZYXC),
//! else `(c, z, y, x)` (GKCZYX), so that stores coalesce. Every
//! backward-weight kernel writes its results or split-K partials here.

use super::epilogue::{BiasRun, RUN, for_each_in_run, store_result, store_run};
use crate::arch;
use crate::elem::Elem;
use crate::gemm::splitk::{self, PartialMode};
use convgrad_types::params::ConvArgs;

/// Whether the GEMM's N index runs `(z, y, x, c)` with c fastest (GKZYXC weights).
#[inline(always)]
pub fn c_fastest(a: &ConvArgs) -> bool {
    a.w_strides[2] == 1 && a.c > 1
}

/// Filter column `n` -> `(c, [z, y, x])`.
#[inline(always)]
pub fn split_filter_col(a: &ConvArgs, n: u32) -> (u32, [u32; 3]) {
    let (c, t) = if c_fastest(a) {
        let (t, c) = a.div_c.divmod(n);
        (c, t)
    } else {
        a.div_zyx.divmod(n)
    };
    let (t, x) = a.div_x.divmod(t);
    let (z, y) = a.div_y.divmod(t);
    (c, [z, y, x])
}

/// Whether `dW` has row `m`: not one that pads a packed `dy`'s channels
/// (`UnfoldPart::rows`).
#[inline(always)]
fn dw_row(a: &ConvArgs, m: u32) -> bool {
    a.unfold.rows == 0 || m < a.unfold.rows
}

/// Writes `v` (the full reduction) through the epilogue into `dW`; not the
/// rows and columns that pad an unfolded or packed problem's channels
/// (`UnfoldPart::{rows, valid}`).
#[inline(always)]
pub(crate) unsafe fn write_dw<Out: Elem>(a: &ConvArgs, g: u32, m: u32, n: u32, v: f32) {
    let (c, [z, y, x]) = split_filter_col(a, n);
    if (a.unfold.valid != 0 && c >= a.unfold.valid) || !dw_row(a, m) {
        return;
    }
    unsafe { store_result::<Out>(a, a.w, &a.w_strides, [g, m, c, z, y, x], v) }
}

/// Writes weights `(g, m, n0 .. n0 + len)` (`n0` a multiple of [`RUN`])
/// through the epilogue: in GKZYXC with whole channel runs they are channels
/// of one tap, one vector store (not where padding columns make the
/// channels of an unfolded problem a run of another length in `dW`).
#[inline(always)]
pub(crate) unsafe fn write_dw_run<Out: Elem>(a: &ConvArgs, g: u32, m: u32, n0: u32, len: u32, v: [f32; RUN]) {
    if !dw_row(a, m) {
        return;
    }
    if c_fastest(a) && a.c.is_multiple_of(RUN as u32) && a.unfold.valid == 0 {
        let (c, [z, y, x]) = split_filter_col(a, n0);
        unsafe { store_run::<Out, 2>(a, a.w, &a.w_strides, [g, m, c, z, y, x], len, v, &mut BiasRun::new()) }
    } else {
        for_each_in_run(v, len, |e, x| unsafe { write_dw::<Out>(a, g, m, n0 + e, x) })
    }
}

/// Writes `v` of weight `(g, m, n)`: the result through the epilogue when
/// the reduction is whole (`Direct`), else this batch's partial.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn write_dw_or_partial<Out: Elem>(a: &ConvArgs, mode: PartialMode, kb: u32, g: u32, m: u32, n: u32, v: f32) {
    match mode {
        PartialMode::Direct => unsafe { write_dw::<Out>(a, g, m, n, v) },
        _ => unsafe { splitk::put(a, mode, kb, g, m, n, v) },
    }
}

/// The filter column of channel `c` and tap `tap` (the inverse of
/// [`split_filter_col`]).
#[inline(always)]
pub fn filter_col(a: &ConvArgs, c: u32, tap: u32) -> u32 {
    if a.w_strides[2] == 1 && a.c > 1 { tap * a.c + c } else { c * a.div_zyx.div + tap }
}

/// Writes one reduced partial `v` of weight `(g, k, c, tap)` per the split-K mode.
#[inline(always)]
pub(crate) unsafe fn put_dw<Out: Elem>(a: &ConvArgs, kb: u32, g: u32, k: u32, c: u32, tap: u32, v: f32) {
    unsafe { write_dw_or_partial::<Out>(a, splitk::mode(a), kb, g, k, filter_col(a, c, tap), v) }
}

/// The last split-K workgroup of a tile sums the `bm x bn` tile at `(m0,
/// n0)` of group `g`, one run of [`RUN`] columns per thread and pass,
/// and writes it through the epilogue.
///
/// # Safety
/// As the kernel, after [`splitk::last_arrival`] returned true for the tile.
#[inline(always)]
pub(crate) unsafe fn finish_tile<Out: Elem>(a: &ConvArgs, g: u32, [m0, n0]: [u32; 2], [bm, bn]: [u32; 2], threads: u32) {
    let per_row = bn / RUN as u32;
    let mut idx = arch::thread_id();
    while idx < bm * per_row {
        let (m, n) = (m0 + idx / per_row, n0 + idx % per_row * RUN as u32);
        if m < a.gemm.m && n < a.gemm.n {
            let len = (a.gemm.n - n).min(RUN as u32);
            let v = unsafe { splitk::take_run(a, ((g * a.gemm.m + m) * a.gemm.n + n) as usize, len) };
            unsafe { write_dw_run::<Out>(a, g, m, n, len, v) }
        }
        idx += threads;
    }
}
