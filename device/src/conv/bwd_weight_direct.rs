//! Direct backward-weight for tiny per-group GEMMs (depthwise, small C and
//! K), where matrix tiles would be almost all padding.
//!
//! One thread per weight element `(g, k, c, tap)`, groups fastest, so that in
//! channels-last layouts consecutive threads read consecutive channels. Each
//! thread sums `dy * x` over its k-batch's slice of the reduction
//! `(n, do, ho, wo)`, walking output pixels with carries instead of divisions.
//! Partials go through the same split-K workspace and finishing kernel as the
//! GEMM path (`[k_batch][G][K][C*taps]`, f32).

use super::bwd_weight::{split_filter_col, write_dw};
use super::{load_args, split_out_pixel};
use crate::arch;
use crate::elem::Elem;
use crate::gemm::splitk::{self, PartialMode};
use convgrad_types::params::ConvArgs;

/// Threads per workgroup.
pub const THREADS: u32 = 256;

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
            // Next output pixel: carry through wo, ho, do, n.
            o[2] += 1;
            if o[2] == a.output[2] {
                o[2] = 0;
                o[1] += 1;
                if o[1] == a.output[1] {
                    o[1] = 0;
                    o[0] += 1;
                    if o[0] == a.output[0] {
                        o[0] = 0;
                        n += 1;
                    }
                }
            }
        }
    }
    let mode = splitk::mode(a);
    let ws = a.ws as *mut f32;
    match mode {
        PartialMode::Direct => unsafe { write_dw::<Out>(a, g, m, col, acc) },
        PartialMode::Atomic => unsafe { arch::atomic_add_f32(ws, splitk::ws_index(a, mode, kb, g, m, col), acc) },
        PartialMode::Store => unsafe { arch::st(ws, splitk::ws_index(a, mode, kb, g, m, col), acc) },
    }
}
