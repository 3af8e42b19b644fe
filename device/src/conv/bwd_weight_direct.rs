//! Direct backward-weight for tiny per-group GEMMs (depthwise, small C and
//! K), where matrix tiles would be almost all padding.
//!
//! One thread per weight element `(g, k, c, tap)`, groups fastest, so that in
//! channels-last layouts consecutive threads read consecutive channels. Each
//! thread sums `dy * x` over its k-batch's slice of the reduction
//! `(n, do, ho, wo)`, walking output pixels with carries instead of divisions.
//! Partials go through the same split-K workspace and finishing kernel as the
//! GEMM path (`[k_batch][G][K][C*taps]`, f32).
//!
//! [`kernel_taps`] is the same with one thread per `(g, k, c)` holding all
//! taps of a filter of at most [`MAX_TAPS`] taps: `dy` is read once per output
//! pixel and the pixel walk is shared by the taps. Its per-tap loops are
//! expanded by a macro with literal indices, so the per-tap values live in
//! registers on every target (LLVM's unroller alone leaves them in scratch).

use super::bwd_weight::{split_filter_col, write_dw};
use super::{load_args, split_out_pixel};
use crate::arch;
use crate::elem::Elem;
use crate::gemm::splitk::{self, PartialMode};
use convgrad_types::params::ConvArgs;

/// Threads per workgroup.
pub const THREADS: u32 = 256;

/// Most taps [`kernel_taps`] holds per thread (3x3 filters).
pub const MAX_TAPS: usize = 9;

/// Runs `$m!(i)` for every tap index `i` in `0..MAX_TAPS`, as literal code.
macro_rules! each_tap {
    ($m:ident) => {
        $m!(0);
        $m!(1);
        $m!(2);
        $m!(3);
        $m!(4);
        $m!(5);
        $m!(6);
        $m!(7);
        $m!(8);
    };
}

/// Kernel body. Grid: `x = ceil(G*K*C*taps / 256)`, `z = k_batch`.
///
/// # Safety
/// Launch contract above and a valid argument block.
#[inline(always)]
pub unsafe fn kernel<In: Elem, Out: Elem>(args: *const ConvArgs) {
    let a = unsafe { load_args(args) };
    let idx = arch::block_id()[0] * THREADS + arch::thread_id();
    let total = a.g * a.gemm_m * a.gemm_n;
    if idx >= total {
        return;
    }
    let (t, g) = a.div_g.divmod(idx);
    let (m, col) = a.div_gemm_n.divmod(t);
    let (c, f) = split_filter_col(a, col);
    let kb = arch::block_id()[2];
    let k_begin = kb * a.k_per_batch;
    let k_end = if a.k_batch == 1 { a.gemm_k } else { (k_begin + a.k_per_batch).min(a.gemm_k) };

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
                acc = core::intrinsics::fmaf32(yv.to_f32(), xv.to_f32(), acc);
            }
            next_pixel(a, &mut n, &mut o);
        }
    }
    unsafe { finish_one::<Out>(a, kb, g, m, col, acc) }
}

/// Writes one weight element's sum, or its split-K partial.
#[inline(always)]
unsafe fn finish_one<Out: Elem>(a: &ConvArgs, kb: u32, g: u32, m: u32, col: u32, v: f32) {
    let mode = splitk::mode(a);
    let ws = a.ws as *mut f32;
    match mode {
        PartialMode::Direct => unsafe { write_dw::<Out>(a, g, m, col, v) },
        PartialMode::Atomic => unsafe { arch::atomic_add_f32(ws, splitk::ws_index(a, mode, kb, g, m, col), v) },
        PartialMode::Store => unsafe { arch::st(ws, splitk::ws_index(a, mode, kb, g, m, col), v) },
    }
}

/// Advances output pixel `(n, o)` by one in `(n, do, ho, wo)` order.
#[inline(always)]
fn next_pixel(a: &ConvArgs, n: &mut u32, o: &mut [u32; 3]) {
    o[2] += 1;
    if o[2] == a.output[2] {
        o[2] = 0;
        o[1] += 1;
        if o[1] == a.output[1] {
            o[1] = 0;
            o[0] += 1;
            if o[0] == a.output[0] {
                o[0] = 0;
                *n += 1;
            }
        }
    }
}

/// Tap-blocked kernel body for filters of at most [`MAX_TAPS`] taps.
/// Grid: `x = ceil(G*K*C / 256)`, `z = k_batch`.
///
/// # Safety
/// Launch contract above and a valid argument block.
#[inline(always)]
pub unsafe fn kernel_taps<In: Elem, Out: Elem>(args: *const ConvArgs) {
    let a = unsafe { load_args(args) };
    let idx = arch::block_id()[0] * THREADS + arch::thread_id();
    if idx >= a.g * a.gemm_m * a.c {
        return;
    }
    let (t, g) = a.div_g.divmod(idx);
    let (m, c) = a.div_c.divmod(t);
    let taps = a.div_zyx.div;
    // Dilated offsets of every tap, in the filter's (z, y, x) order.
    let mut off = [[0u32; 3]; MAX_TAPS];
    macro_rules! offsets {
        ($t:literal) => {
            let (zy, x) = a.div_x.divmod($t);
            let (z, y) = a.div_y.divmod(zy);
            off[$t] = [z * a.dilation[0], y * a.dilation[1], x * a.dilation[2]];
        };
    }
    each_tap!(offsets);
    let kb = arch::block_id()[2];
    let k_begin = kb * a.k_per_batch;
    let k_end = if a.k_batch == 1 { a.gemm_k } else { (k_begin + a.k_per_batch).min(a.gemm_k) };
    let (dy, x) = (a.dy as *const In, a.x as *const In);
    let (ys, xs) = (&a.dy_strides, &a.x_strides);
    let y_base = g * ys[0] + m * ys[2];
    let x_base = g * xs[0] + c * xs[2];
    let mut acc = [0.0f32; MAX_TAPS];
    if k_begin < k_end {
        let (mut n, mut o) = split_out_pixel(a, k_begin);
        for _ in k_begin..k_end {
            let yv = unsafe { arch::ld(dy, (y_base + n * ys[1] + o[0] * ys[3] + o[1] * ys[4] + o[2] * ys[5]) as usize) }.to_f32();
            let origin = [
                (o[0] * a.stride[0]).wrapping_sub(a.lpad[0]),
                (o[1] * a.stride[1]).wrapping_sub(a.lpad[1]),
                (o[2] * a.stride[2]).wrapping_sub(a.lpad[2]),
            ];
            let row = x_base + n * xs[1];
            macro_rules! accumulate {
                ($t:literal) => {
                    let f = off[$t];
                    let i = [origin[0].wrapping_add(f[0]), origin[1].wrapping_add(f[1]), origin[2].wrapping_add(f[2])];
                    // Wrapped (left-pad) and right-pad coordinates both fail the compare.
                    if $t < taps && i[0] < a.input[0] && i[1] < a.input[1] && i[2] < a.input[2] {
                        let xv = unsafe { arch::ld(x, (row + i[0] * xs[3] + i[1] * xs[4] + i[2] * xs[5]) as usize) };
                        acc[$t] = core::intrinsics::fmaf32(yv, xv.to_f32(), acc[$t]);
                    }
                };
            }
            each_tap!(accumulate);
            next_pixel(a, &mut n, &mut o);
        }
    }
    macro_rules! write {
        ($t:literal) => {
            if $t < taps {
                // GEMM column of (c, tap) in the weight's order.
                let col = if a.w_strides[2] == 1 && a.c > 1 { $t * a.c + c } else { c * taps + $t };
                unsafe { finish_one::<Out>(a, kb, g, m, col, acc[$t]) }
            }
        };
    }
    each_tap!(write);
}
