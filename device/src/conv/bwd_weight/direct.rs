//! Direct backward-weight for tiny per-group GEMMs (depthwise, small C and
//! K), where matrix tiles would be almost all padding.
//!
//! Two paths, chosen by the host through [`DirectPart::vec_mode`]:
//!
//! - **Channel vectors** (channels-last `x`, vector-aligned channel runs): a
//!   thread *column* is `(channel vector, k, tap block)`: `VW` consecutive
//!   channels (groups for depthwise `C = K = 1`, else channels of one group)
//!   times up to [`TAP_BLOCK`] filter taps, accumulated in registers. A
//!   workgroup holds `block_cols` columns (tap block fastest, then
//!   vector: the blocks of one vector read the same `dy` in one wave
//!   instruction, and a wave reads contiguous channel runs) times
//!   `256 / block_cols` *streams*; each stream walks its own run of
//!   `stream_len` output pixels `(n, o)` (with carries, no divisions),
//!   loading `dy` once per pixel (a vector for depthwise, else one scalar)
//!   and one `x` vector per tap, or, for 3-wide filters at unit stride and
//!   dilation along x, row segments down the output's columns that read each
//!   filter row's `x` window once (`row_segments`). The streams are then
//!   summed in LDS in a fixed order, one tap at a time, and the sum is this
//!   workgroup's partial (grid z = k-batch).
//! - **Scalar** (any layout): one thread per weight element `(g, k, c, tap)`,
//!   groups fastest, summing over its k-batch's slice of the reduction.
//!
//! Partials go through the same split-K workspace as the GEMM path
//! (`[k_batch][G][K][C*taps]`, f32), and the last workgroup of a column block
//! (grid x) over the k-batches sums them and writes the block's weights; or
//! they go straight through the epilogue without split-K. No float atomics
//! in deterministic mode.
//!
//! [`DirectPart::vec_mode`]: convgrad_types::params::DirectPart::vec_mode

// Lane loops index several same-length arrays by one index, as the GPU code wants.
#![allow(clippy::needless_range_loop)]

use crate::conv::filter_cols::{filter_col, put_dw, split_filter_col, write_dw, write_dw_or_partial};
use crate::conv::lanes::{THREADS, dispatch_lanes, ld_lanes};
use crate::conv::row_run::RowRun;
use crate::conv::{load_args, next_out_depth, next_out_pixel, spatial_off, split_out_pixel, window_origin};
use crate::arch;
use crate::elem::Elem;
use crate::gemm::splitk;
use crate::unroll::unroll;
use convgrad_types::params::{ConvArgs, vec_mode};

// Filter taps one thread accumulates on the channel-vector path (one row of
// a 3-wide filter: few accumulators keep a thread near 64 registers, so four
// workgroups fit on an SM and hide the loads' latency) and output pixels per
// segment on the row path: the host-device contract.
pub use convgrad_types::contract::bwd_weight_direct::{SEG, TAP_BLOCK};
// The tap loops are spelled out for 3 taps (`unroll!`).
const _: () = assert!(TAP_BLOCK == 3);

/// Kernel body. Grid: `x = ceil(G*K*C*taps / 256)` (scalar path) or the
/// column blocks (channel-vector path), `z = k_batch`.
///
/// # Safety
/// Launch contract above and a valid argument block.
#[inline(always)]
pub unsafe fn kernel<In: Elem, Out: Elem>(args: *const ConvArgs) {
    let a = unsafe { load_args(args) };
    unsafe { dispatch_lanes!(a, In, Out, vectors, scalar::<In, Out>(a), [4, 2]) }
}

/// Whether this is the last workgroup of its tile (grid x) over the
/// k-batches ([`splitk::last_arrival`]); every thread calls it, with LDS free.
///
/// # Safety
/// As the kernel.
#[inline(always)]
unsafe fn finisher(a: &ConvArgs) -> bool {
    unsafe { splitk::last_arrival(a, arch::block_id()[0]) }
}

/// Column `col` -> `(g, c, k, first tap)` of its lane 0: tap blocks
/// fastest, then channel vectors, then `k`.
#[inline(always)]
fn column<const VW: usize, const DEPTHWISE: bool>(a: &ConvArgs, col: u32) -> (u32, u32, u32, u32) {
    let (t, tb) = a.direct.div_tap_blocks.divmod(col);
    let (k, v) = a.direct.div_vec.divmod(t);
    let (g, c) = if DEPTHWISE { (v * VW as u32, 0) } else { a.div_c.divmod(v * VW as u32) };
    (g, c, k, tb * TAP_BLOCK as u32)
}

/// The channel-vector path (module docs).
#[inline(always)]
unsafe fn vectors<In: Elem, Out: Elem, const VW: usize, const DEPTHWISE: bool>(a: &ConvArgs) {
    let tid = arch::thread_id();
    let [bx, _, kb] = arch::block_id();
    let cb = a.direct.block_cols;
    let streams = a.direct.div_block_cols.div(THREADS);
    let (s, cl) = a.direct.div_block_cols.divmod(tid);
    let col = bx * cb + cl;
    let (g, c, k, tap0) = column::<VW, DEPTHWISE>(a, col);
    let taps = a.div_zyx.div;
    let (xs, ys) = (&a.x_strides, &a.dy_strides);
    let dil = &a.dilation;
    // Dilated offsets of the block's taps, per dim (past the filter: never read).
    let mut tap = [[0u32; 3]; TAP_BLOCK];
    // Element offset of each tap from the window origin.
    let mut tap_off = [0u32; TAP_BLOCK];
    unroll!(j in [0, 1, 2] => {
        let (r, fx) = a.div_x.divmod(tap0 + j as u32);
        let (fz, fy) = a.div_y.divmod(r);
        tap[j] = [fz * dil[0], fy * dil[1], fx * dil[2]];
        tap_off[j] = tap[j][0] * xs[3] + tap[j][1] * xs[4] + tap[j][2] * xs[5];
    });
    let nt = taps.saturating_sub(tap0);
    let mut acc = [[0.0f32; VW]; TAP_BLOCK];
    let stream = kb * streams + s;
    let rows = a.direct.vec_mode & vec_mode::ROWS != 0;
    // The reduction's units: row segments or pixels.
    let units = if rows { a.n * a.output[0] * a.direct.div_segs.div * a.output[1] } else { a.gemm.k };
    let r0 = stream * a.direct.stream_len;
    let r1 = (r0 + a.direct.stream_len).min(units);
    if col < a.direct.cols && s < streams && r0 < r1 {
        let x_g = g * xs[0] + c * xs[2];
        let y_g = g * ys[0] + k * ys[2];
        let st = Stream { r0, r1, x_g, y_g, tap, tap_off, nt };
        if rows {
            unsafe { row_segments::<In, VW, DEPTHWISE>(a, &st, &mut acc) };
        } else {
            unsafe { pixels::<In, VW, DEPTHWISE>(a, &st, &mut acc) };
        }
    }
    unsafe { sum_streams::<Out, VW, DEPTHWISE>(a, &acc) };
    if unsafe { finisher(a) } {
        unsafe { finish_columns::<Out, VW, DEPTHWISE>(a) }
    }
}

/// The last workgroup of a column block, over the k-batches, sums the
/// block's weights and writes them through the epilogue.
///
/// # Safety
/// As the kernel, after [`finisher`] returned true.
#[inline(always)]
unsafe fn finish_columns<Out: Elem, const VW: usize, const DEPTHWISE: bool>(a: &ConvArgs) {
    let cb = a.direct.block_cols;
    let lanes = cb * VW as u32;
    let mut e = arch::thread_id();
    while e < lanes * TAP_BLOCK as u32 {
        let (j, r) = (e / lanes, e % lanes);
        let (cl, l) = (r / VW as u32, r % VW as u32);
        let col = arch::block_id()[0] * cb + cl;
        let (g, c, k, tap0) = column::<VW, DEPTHWISE>(a, col);
        let t = tap0 + j;
        if col < a.direct.cols && t < a.div_zyx.div {
            let (g, c) = if DEPTHWISE { (g + l, c) } else { (g, c + l) };
            let n = filter_col(a, c, t);
            unsafe { write_dw::<Out>(a, g, k, n, splitk::take(a, g, k, n)) };
        }
        e += THREADS;
    }
}

/// One thread's share of the reduction and its column's context.
struct Stream {
    /// Output pixels `r0..r1` (batch-major), or row segments on the row path.
    r0: u32,
    r1: u32,
    /// Offsets of the column's group and channel in `x` and `dY`.
    x_g: u32,
    y_g: u32,
    /// Dilated offsets of the block's taps, per dim.
    tap: [[u32; 3]; TAP_BLOCK],
    /// Element offset of each tap from the window origin.
    tap_off: [u32; TAP_BLOCK],
    /// Taps of the block inside the filter.
    nt: u32,
}

/// The stream's pixels one at a time: per pixel one `dY` load and one `x`
/// load per tap (any filter, stride, dilation).
///
/// # Safety
/// As the kernel.
#[inline(always)]
unsafe fn pixels<In: Elem, const VW: usize, const DEPTHWISE: bool>(a: &ConvArgs, st: &Stream, acc: &mut [[f32; VW]; TAP_BLOCK]) {
    let Stream { r0, r1, x_g, y_g, ref tap, ref tap_off, nt } = *st;
    let (xs, ys) = (&a.x_strides, &a.dy_strides);
    let (dy, x) = (a.dy as *const In, a.x as *const In);
    let (mut n, mut o) = split_out_pixel(a, r0);
    for _ in r0..r1 {
        let y_off = (y_g + n * ys[1] + o[0] * ys[3] + o[1] * ys[4] + o[2] * ys[5]) as usize;
        let yv: [f32; VW] = if DEPTHWISE {
            unsafe { ld_lanes::<In, VW>(dy, y_off) }
        } else {
            [unsafe { arch::ld(dy, y_off) }.to_f32(); VW]
        };
        let org = window_origin(a, o);
        // Offset of the window origin (wrapping: only in-bounds taps are used).
        let x_o = (x_g + n * xs[1]).wrapping_add(spatial_off(org, xs));
        // The taps' loads are unconditional (a tap in the padding reads
        // the group's first pixel instead) so that they issue back to
        // back; only the multiply-adds are guarded.
        let mut inside = [false; TAP_BLOCK];
        let mut xv = [[0.0f32; VW]; TAP_BLOCK];
        unroll!(j in [0, 1, 2] => {
            let i = [org[0].wrapping_add(tap[j][0]), org[1].wrapping_add(tap[j][1]), org[2].wrapping_add(tap[j][2])];
            inside[j] = (j as u32) < nt && i[0] < a.input[0] && i[1] < a.input[1] && i[2] < a.input[2];
            let off = if inside[j] { x_o.wrapping_add(tap_off[j]) } else { x_g };
            xv[j] = unsafe { ld_lanes::<In, VW>(x, off as usize) };
        });
        unroll!(j in [0, 1, 2] => {
            if inside[j] {
                for l in 0..VW {
                    acc[j][l] = arch::fma(yv[l], xv[j][l], acc[j][l]);
                }
            }
        });
        next_out_pixel(a, &mut n, &mut o);
    }
}

// The segment loops are spelled out for 8 pixels and a 3-wide filter row.
const _: () = assert!(SEG == 8 && TAP_BLOCK == 3);

/// The stream's row segments `r0..r1` ([`vec_mode::ROWS`]: filter width
/// 3, stride and dilation 1 along x, so the block is one filter row of 3
/// taps). A segment is up to [`SEG`] consecutive pixels of one output row;
/// segments are numbered `(n, d, segment, h)`, `h` fastest, so a stream
/// walks down the output's columns. Per segment it reads `SEG + 2` `x`
/// vectors once and applies the row's three taps to them: 18 loads per 8
/// pixels instead of 32. Walking down, the `x` row a block reads was read
/// by the next filter row's block (its neighbour in the wave) one step
/// before, so it comes from L1, and the blocks' `dy` loads are one request:
/// each tensor leaves L2 about once, not once per filter row.
///
/// A segment's loads are unconditional (positions past the segment, the
/// input or the filter read an in-bounds stand-in) and the stand-ins'
/// values are replaced by zeros, so all 18 loads can be in flight at once
/// and the multiply-adds need no guards (ncu: with guarded loads the loop
/// waited on memory once per window element). A filter row in the padding
/// adds nothing and is skipped. A *whole* segment (all `SEG` pixels, window
/// columns 1 to `SEG` inside the input: every segment of a 56-wide row
/// under padding 1) masks only the window's two end columns (its PTX body
/// is about 60% of the masked one's, and it is faster on depthwise and
/// ResNeXt shapes); the rest take the masked body.
///
/// # Safety
/// As [`pixels`].
#[inline(always)]
unsafe fn row_segments<In: Elem, const VW: usize, const DEPTHWISE: bool>(a: &ConvArgs, st: &Stream, acc: &mut [[f32; VW]; TAP_BLOCK]) {
    let Stream { r0, r1, x_g, y_g, ref tap, nt, .. } = *st;
    let (xs, ys) = (&a.x_strides, &a.dy_strides);
    let (t, mut oy) = a.div_out[1].divmod(r0);
    let (t, mut seg) = a.direct.div_segs.divmod(t);
    let (mut n, mut oz) = a.div_out[0].divmod(t);
    for _ in r0..r1 {
        let o = [oz, oy, seg * SEG as u32];
        let org = window_origin(a, o);
        let iz = org[0].wrapping_add(tap[0][0]);
        let iy = org[1].wrapping_add(tap[0][1]);
        if nt > 0 && iz < a.input[0] && iy < a.input[1] {
            let len = (a.output[2] - o[2]).min(SEG as u32);
            let sg = Segment {
                y_px: y_g + n * ys[1] + o[0] * ys[3] + o[1] * ys[4] + o[2] * ys[5],
                x_row: x_g + n * xs[1] + iz * xs[3] + iy * xs[4],
                ix0: org[2],
                len,
            };
            let w = a.input[2];
            if len == SEG as u32 && org[2].wrapping_add(1) < w && org[2].wrapping_add(SEG as u32) < w {
                unsafe { segment::<In, VW, DEPTHWISE, true>(a, &sg, acc) };
            } else {
                unsafe { segment::<In, VW, DEPTHWISE, false>(a, &sg, acc) };
            }
        }
        // Down one row, with carries to the next segment, depth and image.
        oy += 1;
        if oy == a.output[1] {
            oy = 0;
            seg += 1;
            if seg == a.direct.div_segs.div {
                seg = 0;
                next_out_depth(a, &mut n, &mut oz);
            }
        }
    }
}

/// One row segment of [`row_segments`] (1 to `SEG` pixels).
type Segment = RowRun;

/// Applies a filter row's three taps to one segment: `SEG` `dY` vectors
/// and the `SEG + 2` `x` vectors of its window, masked where they fall past
/// the segment or the input; `WHOLE` (see [`row_segments`]) masks only the
/// window's end columns.
///
/// # Safety
/// As [`pixels`].
#[inline(always)]
unsafe fn segment<In: Elem, const VW: usize, const DEPTHWISE: bool, const WHOLE: bool>(a: &ConvArgs, sg: &Segment, acc: &mut [[f32; VW]; TAP_BLOCK]) {
    let (xs, ys) = (&a.x_strides, &a.dy_strides);
    let (dy, x) = (a.dy as *const In, a.x as *const In);
    let mut yv = [[0.0f32; VW]; SEG];
    unroll!(p in [0, 1, 2, 3, 4, 5, 6, 7] => {
        let on = WHOLE || (p as u32) < sg.len;
        let off = (sg.y_px + if on { p as u32 * ys[5] } else { 0 }) as usize;
        let v = if DEPTHWISE {
            unsafe { ld_lanes::<In, VW>(dy, off) }
        } else {
            [unsafe { arch::ld(dy, off) }.to_f32(); VW]
        };
        yv[p] = if on { v } else { [0.0; VW] };
    });
    let mut xw = [[0.0f32; VW]; SEG + 2];
    unroll!(e in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] => {
        let ix = sg.ix0.wrapping_add(e as u32);
        let on = (WHOLE && (1..=SEG).contains(&e)) || ix < a.input[2];
        let v = unsafe { ld_lanes::<In, VW>(x, (sg.x_row + if on { ix * xs[5] } else { 0 }) as usize) };
        xw[e] = if on { v } else { [0.0; VW] };
    });
    unroll!(f in [0, 1, 2] => {
        let acc = &mut acc[f];
        unroll!(p in [0, 1, 2, 3, 4, 5, 6, 7] => {
            for l in 0..VW {
                acc[l] = arch::fma(yv[p][l], xw[p + f][l], acc[l]);
            }
        });
    });
}

/// Sums the streams of each column in LDS, one tap at a time, in stream
/// order, and puts the sums (this workgroup's partials).
///
/// # Safety
/// As the kernel; every thread of the workgroup calls it.
#[inline(always)]
unsafe fn sum_streams<Out: Elem, const VW: usize, const DEPTHWISE: bool>(a: &ConvArgs, acc: &[[f32; VW]; TAP_BLOCK]) {
    let tid = arch::thread_id();
    let [bx, _, kb] = arch::block_id();
    let cb = a.direct.block_cols;
    let streams = a.direct.div_block_cols.div(THREADS);
    let taps = a.div_zyx.div;
    // Sum the streams of each column, one tap at a time, in stream order.
    let lanes = cb * VW as u32;
    unroll!(j in [0, 1, 2] => {
        let acc = &acc[j];
        arch::barrier();
        unroll!(l in [0, 1, 2, 3, 4, 5, 6, 7] => {
            if l < VW {
                unsafe { arch::lds_st((tid as usize * VW + l) * 4, acc[l]) };
            }
        });
        arch::barrier();
        // The loop's trip count is the same for every thread (`lanes` is
        // uniform), its exit too: with an exit that differed between lanes
        // LLVM placed the next tap's barrier on both paths on gfx1100, and a
        // wave32 with lanes on both reached it twice (the isa executor's
        // barrier check, `isa/`).
        let mut base = 0;
        while base < lanes {
            let e = base + tid;
            let (cl, l) = (e / VW as u32, e % VW as u32);
            let col = bx * cb + cl;
            let (g, c, k, tap0) = column::<VW, DEPTHWISE>(a, col);
            let t = tap0 + j as u32;
            if e < lanes && col < a.direct.cols && t < taps {
                let mut v = 0.0f32;
                for s in 0..streams {
                    v += unsafe { arch::lds_ld::<f32>(((s * cb + cl) as usize * VW + l as usize) * 4) };
                }
                let (g, c) = if DEPTHWISE { (g + l, c) } else { (g, c + l) };
                unsafe { put_dw::<Out>(a, kb, g, k, c, t, v) };
            }
            base += THREADS;
        }
    });
}

/// The scalar path: one thread per weight element.
#[inline(always)]
unsafe fn scalar<In: Elem, Out: Elem>(a: &ConvArgs) {
    let idx = arch::block_id()[0] * THREADS + arch::thread_id();
    // Threads past the weights still take part in the split-K arrival.
    let elem = (idx < a.g * a.gemm.m * a.gemm.n).then(|| {
        let (t, g) = a.div_g.divmod(idx);
        let (m, col) = a.gemm.div_n.divmod(t);
        (g, m, col)
    });
    let kb = arch::block_id()[2];
    if let Some((g, m, col)) = elem {
        let v = unsafe { scalar_sum::<In>(a, kb, g, m, col) };
        unsafe { write_dw_or_partial::<Out>(a, splitk::mode(a), kb, g, m, col, v) }
    }
    // Every thread takes part in the arrival, whether it has an element or not.
    if unsafe { finisher(a) }
        && let Some((g, m, col)) = elem
    {
        unsafe { write_dw::<Out>(a, g, m, col, splitk::take(a, g, m, col)) };
    }
}

/// Weight `(g, m, col)`'s sum over k-batch `kb`'s slice of the reduction.
#[inline(always)]
unsafe fn scalar_sum<In: Elem>(a: &ConvArgs, kb: u32, g: u32, m: u32, col: u32) -> f32 {
    let (c, f) = split_filter_col(a, col);
    let k_begin = kb * a.gemm.k_per_batch;
    let k_end = if a.gemm.k_batch == 1 { a.gemm.k } else { (k_begin + a.gemm.k_per_batch).min(a.gemm.k) };

    let (dy, x) = (a.dy as *const In, a.x as *const In);
    let (ys, xs) = (&a.dy_strides, &a.x_strides);
    let y_base = g * ys[0] + m * ys[2];
    let x_base = g * xs[0] + c * xs[2];
    let tap = [f[0] * a.dilation[0], f[1] * a.dilation[1], f[2] * a.dilation[2]];
    let mut acc = 0.0f32;
    if k_begin < k_end {
        let (mut n, mut o) = split_out_pixel(a, k_begin);
        for _ in k_begin..k_end {
            let mut off = x_base + n * xs[1];
            let mut inside = true;
            for d in 0..3 {
                // Wraps below zero, so one compare checks both pads.
                let i = (o[d] * a.stride[d] + tap[d]).wrapping_sub(a.lpad[d]);
                inside &= i < a.input[d];
                off = off.wrapping_add(i.wrapping_mul(xs[3 + d]));
            }
            if inside {
                let yv = unsafe { arch::ld(dy, (y_base + n * ys[1] + o[0] * ys[3] + o[1] * ys[4] + o[2] * ys[5]) as usize) };
                let xv = unsafe { arch::ld(x, off as usize) };
                acc = arch::fma(yv.to_f32(), xv.to_f32(), acc);
            }
            next_out_pixel(a, &mut n, &mut o);
        }
    }
    acc
}
