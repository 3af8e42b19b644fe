//! Depthwise backward-weight by filter rows with a sliding window
//! ([`Op::BwdWeightDepthwise`]): `C = K = 1` per group, groups innermost in
//! `x` and `dy` (channels-last), filter rows up to [`MAX_F`] taps.
//!
//! A thread *column* is `(filter row, channel vector)`: `VW` consecutive
//! groups ([`LANES`] or half as many) times one filter row `(z, y)`, whose
//! taps along x it accumulates in registers (f32). Vectors are fastest, so
//! a wave reads contiguous channel runs. A workgroup holds `block_cols`
//! columns times `256 / block_cols` *streams*; a stream walks its run of
//! `stream_len` *chunks*, numbered `(n, d, h, chunk)` with the chunk
//! fastest: [`CHUNK`] consecutive output pixels of one row (stride 1 or 2
//! and dilation 1 along x), else one pixel (any stride, dilation).
//!
//! Per chunk a thread loads the chunk's `dy` vectors and the `x` vectors its
//! filter row's window spans, and applies every tap to them. Along a row the
//! window slides: the part of it the next chunk shares stays in registers,
//! so a step of one output pixel loads one `dy` vector and `stride` `x`
//! vectors for `F * VW` multiply-adds, where the direct kernel loads a `dy`
//! vector per tap block and an `x` vector per tap. Loads past the row, the
//! input or the padding read an in-bounds stand-in whose value is replaced
//! by zero, so they issue back to back.
//!
//! The streams are then summed in LDS in a fixed order, one tap at a time,
//! and partials go through the split-K workspace (`[k_batch][G][1][taps]`)
//! exactly as the direct kernel's: the last workgroup of a column block over
//! the k-batches sums them in batch order (or takes the atomic sums) and
//! writes the weights through the epilogue. No float atomics in
//! deterministic mode.
//!
//! [`Op::BwdWeightDepthwise`]: convgrad_types::instance::Op::BwdWeightDepthwise

// Lane loops index several same-length arrays by one index, as the GPU code wants.
#![allow(clippy::needless_range_loop)]

use crate::arch;
use crate::conv::filter_cols::{filter_col, put_dw, write_dw};
use crate::conv::lanes::{THREADS, ld_lanes};
use crate::conv::row_run::RowRun;
use crate::conv::{load_args, next_out_depth, window_origin};
use crate::elem::Elem;
use crate::gemm::splitk;
use crate::unroll::unroll;
use convgrad_types::contract::bwd_weight_depthwise::{CHUNK, LANES, MAX_F, chunk_pixels};
use convgrad_types::params::{ConvArgs, vec_mode};

// The loops are spelled out for these values (`unroll!`).
const _: () = assert!(MAX_F == 7 && CHUNK == 4 && LANES == 4);
/// Window entries of one chunk at most: `(CHUNK - 1) * 2 + MAX_F`.
const MAX_W: usize = (CHUNK - 1) * 2 + MAX_F;
const _: () = assert!(MAX_W == 13);

/// Kernel body. Grid: `x` = column blocks, `z` = k-batches; 256 threads.
///
/// # Safety
/// Launch contract above and a valid argument block.
#[inline(always)]
pub unsafe fn kernel<In: Elem, Out: Elem>(args: *const ConvArgs) {
    let a = unsafe { load_args(args) };
    if a.direct.vec_mode & vec_mode::HALF != 0 {
        unsafe { by_filter::<In, Out, { LANES / 2 }>(a) }
    } else {
        unsafe { by_filter::<In, Out, LANES>(a) }
    }
}

/// Runs the body for the filter width (3, 5 or 7 taps, the next at least
/// the filter's) and the step along x (a uniform branch).
#[inline(always)]
unsafe fn by_filter<In: Elem, Out: Elem, const VW: usize>(a: &ConvArgs) {
    let (fx, s) = (a.filter[2], a.stride[2]);
    let sliding = chunk_pixels(s, a.dilation[2]) == CHUNK as u32;
    unsafe {
        match (sliding, s, fx) {
            (true, 1, ..=3) => rows::<In, Out, VW, 3, CHUNK, 1>(a),
            (true, 1, 4..=5) => rows::<In, Out, VW, 5, CHUNK, 1>(a),
            (true, 1, _) => rows::<In, Out, VW, 7, CHUNK, 1>(a),
            (true, _, ..=3) => rows::<In, Out, VW, 3, CHUNK, 2>(a),
            (true, _, 4..=5) => rows::<In, Out, VW, 5, CHUNK, 2>(a),
            (true, _, _) => rows::<In, Out, VW, 7, CHUNK, 2>(a),
            // One pixel per chunk, taps `dilation` apart: any stride.
            (false, _, _) => rows::<In, Out, VW, 7, 1, 0>(a),
        }
    }
}

/// One thread's column and streams (module docs): `F` taps per filter row
/// (those past the filter are never written), `P` pixels per chunk, `S` the
/// stride along x (0: runtime stride and dilation, `P = 1`).
#[inline(always)]
unsafe fn rows<
    In: Elem,
    Out: Elem,
    const VW: usize,
    const F: usize,
    const P: usize,
    const S: usize,
>(
    a: &ConvArgs,
) {
    let tid = arch::thread_id();
    let [bx, _, kb] = arch::block_id();
    let cb = a.direct.block_cols;
    let streams = a.direct.div_block_cols.div(THREADS);
    let (s, cl) = a.direct.div_block_cols.divmod(tid);
    let col = bx * cb + cl;
    let (row, v) = a.direct.div_vec.divmod(col);
    let (fz, fy) = a.div_y.divmod(row);
    let units = a.n * a.output[0] * a.output[1] * a.direct.div_segs.div;
    let r0 = (kb * streams + s) * a.direct.stream_len;
    let r1 = (r0 + a.direct.stream_len).min(units);
    let mut acc = [[0.0f32; VW]; MAX_F];
    if col < a.direct.cols && s < streams && r0 < r1 {
        let tap = [fz * a.dilation[0], fy * a.dilation[1]];
        unsafe { walk::<In, VW, F, P, S>(a, v * VW as u32, tap, r0, r1, &mut acc) };
    }
    unsafe { sum_streams::<Out, VW, F>(a, &acc) };
    if unsafe { splitk::last_arrival(a, bx) } {
        unsafe { finish::<Out, VW, F>(a) }
    }
}

/// Chunks `r0..r1` of the stream of group `g`'s filter row at dilated
/// offsets `tap` (z, y): a row whose filter row falls in the padding adds
/// nothing and is skipped; the window is carried from chunk to chunk of a
/// row and loaded whole at a row's (or the stream's) first chunk.
///
/// # Safety
/// As the kernel.
#[inline(always)]
unsafe fn walk<In: Elem, const VW: usize, const F: usize, const P: usize, const S: usize>(
    a: &ConvArgs,
    g: u32,
    tap: [u32; 2],
    r0: u32,
    r1: u32,
    acc: &mut [[f32; VW]; MAX_F],
) {
    let (xs, ys) = (&a.x_strides, &a.dy_strides);
    let (x_g, y_g) = (g * xs[0], g * ys[0]);
    let chunks = a.direct.div_segs.div;
    let (t, mut ch) = a.direct.div_segs.divmod(r0);
    let (t, mut oy) = a.div_out[1].divmod(t);
    let (mut n, mut oz) = a.div_out[0].divmod(t);
    let mut xw = [[0.0f32; VW]; MAX_W];
    let mut primed = false;
    for _ in r0..r1 {
        let o = [oz, oy, ch * P as u32];
        let org = window_origin(a, o);
        let (iz, iy) = (org[0].wrapping_add(tap[0]), org[1].wrapping_add(tap[1]));
        if iz < a.input[0] && iy < a.input[1] {
            let c = Chunk {
                y_px: y_g + n * ys[1] + o[0] * ys[3] + o[1] * ys[4] + o[2] * ys[5],
                x_row: x_g + n * xs[1] + iz * xs[3] + iy * xs[4],
                ix0: org[2],
                len: (a.output[2] - o[2]).min(P as u32),
            };
            unsafe { chunk::<In, VW, F, P, S>(a, &c, primed, &mut xw, acc) };
            primed = S != 0;
        }
        // Along the row, then down, with carries to the next depth and image.
        ch += 1;
        if ch == chunks {
            ch = 0;
            primed = false;
            oy += 1;
            if oy == a.output[1] {
                oy = 0;
                next_out_depth(a, &mut n, &mut oz);
            }
        }
    }
}

/// One chunk of [`walk`] (1 to `P` pixels).
type Chunk = RowRun;

/// Applies the `F` taps of a filter row to one chunk: its `P` `dY` vectors
/// and the window's `x` vectors (entry `e` at column `ix0 + e`, or `ix0 + e *
/// dilation` when `S = 0`). `primed`: entries `0..F - S` hold the previous
/// chunk's last ones; on return they hold this chunk's, for the next.
///
/// # Safety
/// As the kernel.
#[inline(always)]
unsafe fn chunk<In: Elem, const VW: usize, const F: usize, const P: usize, const S: usize>(
    a: &ConvArgs,
    c: &Chunk,
    primed: bool,
    xw: &mut [[f32; VW]; MAX_W],
    acc: &mut [[f32; VW]; MAX_F],
) {
    let (xs, ys) = (&a.x_strides, &a.dy_strides);
    let (dy, x) = (a.dy as *const In, a.x as *const In);
    // Window length and the entries the next chunk shares.
    let w = if S == 0 { F } else { (P - 1) * S + F };
    let carry = if S == 0 { 0 } else { F - S };
    let step = if S == 0 { a.dilation[2] } else { 1 };
    let load = |e: usize| -> [f32; VW] {
        let ix = c.ix0.wrapping_add(e as u32 * step);
        // With S = 0 the taps past the filter are not read.
        let on = ix < a.input[2] && (S != 0 || (e as u32) < a.filter[2]);
        let v =
            unsafe { ld_lanes::<In, VW>(x, (c.x_row + if on { ix * xs[5] } else { 0 }) as usize) };
        if on { v } else { [0.0; VW] }
    };
    if !primed {
        unroll!(e in [0, 1, 2, 3, 4, 5] => {
            if e < carry {
                xw[e] = load(e);
            }
        });
    }
    unroll!(e in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] => {
        if e >= carry && e < w {
            xw[e] = load(e);
        }
    });
    let mut yv = [[0.0f32; VW]; CHUNK];
    unroll!(p in [0, 1, 2, 3] => {
        if p < P {
            let on = (p as u32) < c.len;
            let v = unsafe { ld_lanes::<In, VW>(dy, (c.y_px + if on { p as u32 * ys[5] } else { 0 }) as usize) };
            yv[p] = if on { v } else { [0.0; VW] };
        }
    });
    unroll!(f in [0, 1, 2, 3, 4, 5, 6] => {
        if f < F {
            unroll!(p in [0, 1, 2, 3] => {
                if p < P {
                    let e = p * S + f;
                    for l in 0..VW {
                        acc[f][l] = arch::fma(yv[p][l], xw[e][l], acc[f][l]);
                    }
                }
            });
        }
    });
    // Slide: the next chunk starts `P * S` entries on.
    unroll!(e in [0, 1, 2, 3, 4, 5] => {
        if e < carry {
            xw[e] = xw[e + P * S];
        }
    });
}

/// Sums the streams of each column in LDS, one tap at a time, in stream
/// order, and puts the sums (this workgroup's partials or, unsplit, the
/// weights).
///
/// # Safety
/// As the kernel; every thread of the workgroup calls it.
#[inline(always)]
unsafe fn sum_streams<Out: Elem, const VW: usize, const F: usize>(
    a: &ConvArgs,
    acc: &[[f32; VW]; MAX_F],
) {
    let tid = arch::thread_id();
    let [bx, _, kb] = arch::block_id();
    let cb = a.direct.block_cols;
    let streams = a.direct.div_block_cols.div(THREADS);
    let lanes = cb * VW as u32;
    let fx = a.filter[2];
    unroll!(f in [0, 1, 2, 3, 4, 5, 6] => {
        if f < F {
            arch::barrier();
            unroll!(l in [0, 1, 2, 3] => {
                if l < VW {
                    unsafe { arch::lds_st((tid as usize * VW + l) * 4, acc[f][l]) };
                }
            });
            arch::barrier();
            // A trip count and exit the same for every thread (`lanes` is
            // uniform): no barrier on divergent paths (see the direct kernel).
            let mut base = 0;
            while base < lanes {
                let e = base + tid;
                let (cl, l) = (e / VW as u32, e % VW as u32);
                let col = bx * cb + cl;
                let (row, v) = a.direct.div_vec.divmod(col);
                if e < lanes && col < a.direct.cols && (f as u32) < fx {
                    let mut sum = 0.0f32;
                    for s in 0..streams {
                        sum += unsafe { arch::lds_ld::<f32>(((s * cb + cl) as usize * VW + l as usize) * 4) };
                    }
                    unsafe { put_dw::<Out>(a, kb, v * VW as u32 + l, 0, 0, row * fx + f as u32, sum) };
                }
                base += THREADS;
            }
        }
    });
}

/// The last workgroup of a column block, over the k-batches, sums the
/// block's weights and writes them through the epilogue.
///
/// # Safety
/// As the kernel, after [`splitk::last_arrival`] returned true.
#[inline(always)]
unsafe fn finish<Out: Elem, const VW: usize, const F: usize>(a: &ConvArgs) {
    let bx = arch::block_id()[0];
    let cb = a.direct.block_cols;
    let lanes = cb * VW as u32;
    let fx = a.filter[2];
    let mut e = arch::thread_id();
    while e < lanes * F as u32 {
        let (f, r) = (e / lanes, e % lanes);
        let (cl, l) = (r / VW as u32, r % VW as u32);
        let col = bx * cb + cl;
        let (row, v) = a.direct.div_vec.divmod(col);
        if col < a.direct.cols && f < fx {
            let (g, n) = (v * VW as u32 + l, filter_col(a, 0, row * fx + f));
            unsafe { write_dw::<Out>(a, g, 0, n, splitk::take(a, g, 0, n)) };
        }
        e += THREADS;
    }
}
