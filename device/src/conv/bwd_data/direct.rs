//! Direct backward-data for tiny per-group GEMMs (depthwise, small C and K),
//! where matrix tiles would be almost all padding.
//!
//! Two paths, chosen by the host through [`DirectPart::vec_mode`]:
//!
//! - **Channel vectors** (channels-last `dx`, vector-aligned channel runs):
//!   one thread writes `VW` consecutive channels ([`LANES`] or half as many)
//!   of [`RUN`] pixels that lie on one row of a stride-residue slice, so they
//!   share their tap class. Lanes are consecutive groups for depthwise
//!   problems (`C = K = 1`: then `dy` is read as vectors too) or consecutive
//!   channels of one group (`dy` read as one scalar per `k`, broadcast to the
//!   lanes). The thread's pixel, class and lane context is computed once
//!   (multiply-high divisions); per filter row and `k` it reads a window of
//!   `dy` pixels once and applies every tap of the row to it (see `vectors`).
//!   Threads run `(n, iz, iy, residue x, run, vector)` with the vector
//!   fastest, so a wave reads and writes contiguous channel runs.
//! - **Scalar** (any layout): one thread per element. In channels-last
//!   layouts (C innermost) threads run `(n, d, h, w, g, c)` with c fastest,
//!   otherwise `(n, g, c, d, h, w)` with w fastest.
//!
//! Each thread visits only the taps of its pixel's stride class (the same
//! decomposition as the GEMM path) and writes every element once, through the
//! epilogue, reached by a tap or not.
//!
//! [`DirectPart::vec_mode`]: convgrad_types::params::DirectPart::vec_mode

// Lane loops index several same-length arrays by one index, as the GPU code wants.
#![allow(clippy::needless_range_loop)]

use crate::conv::lanes::{THREADS, dispatch_lanes, ld_lanes, ld_raw};
use crate::conv::residues::{Slice, class_of};
use crate::conv::tap_window::{Window, store_dx_run, tap_mask, window_fma, window_weights};
use crate::conv::epilogue::store_result;
use crate::conv::load_args;
use crate::arch;
use crate::elem::Elem;
use crate::unroll::unroll;
use convgrad_types::params::{ConvArgs, vec_mode};

// The host-device contract (`convgrad_types::contract`): lanes per thread,
// pixels per run, the window's halo (module docs of [`vectors`]) and `k`s per
// `dy` load on the channel-lane path where `dy`'s `k` run is contiguous
// ([`vec_mode::DY_KVEC`]: a ResNeXt 4->4 window row takes 10 loads per 4 `k`s
// instead of 40 scalars, which kept the L1 71% busy).
pub use convgrad_types::contract::bwd_data_direct::{HALO, KV, LANES, RUN};
// The kernels' `dispatch_lanes!(.., [4, 2])` literals.
const _: () = assert!(LANES == 4);
// The run and window loops are spelled out for 8 pixels and a halo of 2 (`unroll!`).
const _: () = assert!(RUN == 8 && HALO == 2);
// The k-vector loop is spelled out for 4 (`unroll!`).
const _: () = assert!(KV == 4);

/// Kernel body. Grid: `x = ceil(threads / 256)`, threads as in the module docs
/// (`G*N*C*pixels` on the scalar path).
///
/// # Safety
/// Launch contract above and a valid argument block.
#[inline(always)]
pub unsafe fn kernel<In: Elem, Out: Elem>(args: *const ConvArgs) {
    let a = unsafe { load_args(args) };
    unsafe { dispatch_lanes!(a, In, Out, vectors, scalar::<In, Out>(a), [4, 2]) }
}

/// The channel-vector path (module docs).
///
/// The run's `RUN` slice positions read, for tap `jx` of a filter row,
/// consecutive output pixels `vx - jx*ts + p`: neighbouring taps read the
/// same pixels shifted by `ts`. So the taps are taken in groups whose shifts
/// span at most [`HALO`], and each group reads its `RUN + span` pixels once
/// (per `k`), applying every tap of the group to each: a 3x3 filter reads 10
/// `dy` vectors per row instead of 24.
#[inline(always)]
unsafe fn vectors<In: Elem, Out: Elem, const VW: usize, const DEPTHWISE: bool>(a: &ConvArgs) {
    let idx = arch::block_id()[0] * THREADS + arch::thread_id();
    let (t, v) = a.direct.div_vec.divmod(idx);
    let (t, run) = a.direct.div_runs.divmod(t);
    let (t, rx) = a.slices.div_stride[2].divmod(t);
    let (t, iy) = a.div_in[1].divmod(t);
    let (n, iz) = a.div_in[0].divmod(t);
    if n >= a.n {
        return;
    }
    let (qz, rz) = a.slices.div_stride[0].divmod(iz);
    let (qy, ry) = a.slices.div_stride[1].divmod(iy);
    let (cz, cy, cx) = (class_of(a, 0, rz), class_of(a, 1, ry), class_of(a, 2, rx));
    let qx0 = run * RUN as u32;
    let (vz, vy, vx) = (qz.wrapping_add(cz.base), qy.wrapping_add(cy.base), qx0.wrapping_add(cx.base));
    // Lane 0: group g, channel c; lanes step along G (DEPTHWISE) or C.
    let (g, c) = if DEPTHWISE { (v * VW as u32, 0) } else { a.div_c.divmod(v * VW as u32) };
    let (ys, ws) = (&a.dy_strides, &a.w_strides);
    let y_n = g * ys[0] + n * ys[1];
    let w_g = g * ws[0] + c * ws[2];
    let (out, st, tl) = (&a.output, &a.slices.tap_step, &a.slices.tilde);
    // Taps per group: shifts 0, ts, 2ts, ... up to HALO.
    let ts = st[2];
    // (HALO / ts + 1 without a division: HALO is 2.)
    let per_group = match ts {
        1 => 3,
        2 => 2,
        _ => 1,
    };
    let mut acc = [[0.0f32; VW]; RUN];
    for jz in 0..cz.dot {
        let oz = vz.wrapping_sub(jz * st[0]);
        if oz >= out[0] {
            continue;
        }
        let fz = cz.t + tl[0] * jz;
        for jy in 0..cy.dot {
            let oy = vy.wrapping_sub(jy * st[1]);
            if oy >= out[1] {
                continue;
            }
            let fy = cy.t + tl[1] * jy;
            let y_row = y_n + oz * ys[3] + oy * ys[4];
            let w_row = w_g + fz * ws[3] + fy * ws[4];
            let mut j0 = 0;
            while j0 < cx.dot {
                let last = (j0 + per_group).min(cx.dot) - 1;
                let span = (last - j0) * ts;
                // Pixel of window element 0; element e + s feeds position p = e
                // through the tap at shift s (tap `last - s / ts`).
                let origin = vx.wrapping_sub(last * ts);
                if ts == 1 && span == HALO as u32 {
                    // Three taps at shifts 0, 1, 2 (a 3-wide row at unit
                    // stride and dilation): constant masks, no per-row setup,
                    // unguarded multiply-adds.
                    let (mask, used) = (0b111, (RUN + HALO) as u32);
                    let win = Window { y_row, w_row, origin, last, tx: cx.t, mask, used };
                    unsafe { window_taps::<In, VW, DEPTHWISE, true>(a, &win, &mut acc) };
                } else {
                    let mask = tap_mask(span, ts);
                    let win = Window { y_row, w_row, origin, last, tx: cx.t, mask, used: RUN as u32 + span };
                    unsafe { window_taps::<In, VW, DEPTHWISE, false>(a, &win, &mut acc) };
                }
                j0 = last + 1;
            }
        }
    }
    unsafe { store_dx_run::<Out, VW, DEPTHWISE>(a, g, n, c, [iz, iy, rx + a.stride[2] * qx0], &acc) }
}

/// Applies the taps of one window to the run, for every `k`.
/// Loads are unconditional (absent taps and pixels outside `dy` read an
/// in-bounds stand-in) so that they issue back to back. Pixels outside `dY`
/// count as zeros; only absent taps are branched around (per-pixel branches
/// kept ten 64-bit lane masks live on AMD, and the scalar registers
/// spilled). Given a window of constant `mask` and `used` (3-tap rows), the
/// inlined copy has no mask arithmetic and unguarded multiply-adds.
///
/// With [`vec_mode::DY_KVEC`] the window is read once per [`KV`] `k`s and
/// kept as stored (half the registers of f32 for 16-bit types), each `k`
/// converting its column: holding it as f32 (and the `k`s' weights) spilled.
///
/// # Safety
/// As the kernel.
#[inline(always)]
unsafe fn window_taps<In: Elem, const VW: usize, const DEPTHWISE: bool, const FULL: bool>(
    a: &ConvArgs,
    win: &Window,
    acc: &mut [[f32; VW]; RUN],
) {
    let (ys, dy) = (&a.dy_strides, a.dy as *const In);
    // 3-tap channel-lane windows wholly inside dY need no zeroing selects
    // (whose ten lane masks stay live across the k loop on AMD). Depthwise
    // lanes keep one copy: a second one made depthwise problems slower.
    let whole = FULL && !DEPTHWISE && win.origin < a.output[2] && win.origin + ((RUN + HALO - 1) as u32) < a.output[2];
    if whole && a.direct.vec_mode & vec_mode::DY_KVEC != 0 {
        let mut kb = 0;
        while kb < a.k {
            let mut raw = [[In::default(); KV]; RUN + HALO];
            unroll!(e in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] => {
                let off = win.y_row + win.origin.wrapping_add(e as u32) * ys[5] + kb;
                raw[e] = unsafe { ld_raw::<In, KV>(dy, off as usize) };
            });
            unroll!(kk in [0, 1, 2, 3] => {
                let mut px = [[0.0f32; VW]; RUN + HALO];
                for e in 0..RUN + HALO {
                    px[e] = [raw[e][kk].to_f32(); VW];
                }
                let wt = unsafe { window_weights::<In, VW, DEPTHWISE>(a, win, kb + kk as u32) };
                window_fma(&px, &wt, win.mask, acc);
            });
            kb += KV as u32;
        }
        return;
    }
    if whole {
        unsafe { k_loop::<In, VW, DEPTHWISE, false>(a, win, acc) }
    } else {
        unsafe { k_loop::<In, VW, DEPTHWISE, true>(a, win, acc) }
    }
}

/// The window at every `k`, one `dy` read per element and `k`; `EDGE`:
/// elements outside `dY` read a stand-in and count as zeros.
///
/// # Safety
/// As the kernel.
#[inline(always)]
unsafe fn k_loop<In: Elem, const VW: usize, const DEPTHWISE: bool, const EDGE: bool>(
    a: &ConvArgs,
    win: &Window,
    acc: &mut [[f32; VW]; RUN],
) {
    let (ys, dy) = (&a.dy_strides, a.dy as *const In);
    let inside = |e: u32| !EDGE || (e < win.used && win.origin.wrapping_add(e) < a.output[2]);
    for k in 0..a.k {
        let wt = unsafe { window_weights::<In, VW, DEPTHWISE>(a, win, k) };
        let y_k = win.y_row + k * ys[2];
        let mut px = [[0.0f32; VW]; RUN + HALO];
        unroll!(e in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] => {
            let ox = win.origin.wrapping_add(e as u32);
            let off = (y_k + if inside(e as u32) { ox } else { 0 } * ys[5]) as usize;
            let v = if DEPTHWISE {
                unsafe { ld_lanes::<In, VW>(dy, off) }
            } else {
                [unsafe { arch::ld(dy, off) }.to_f32(); VW]
            };
            // Zero outside dY, as the GEMM path's gather (a select, no branch).
            for l in 0..VW {
                px[e][l] = if inside(e as u32) { v[l] } else { 0.0 };
            }
        });
        window_fma(&px, &wt, win.mask, acc);
    }
}

/// The scalar path: one thread per element.
#[inline(always)]
unsafe fn scalar<In: Elem, Out: Elem>(a: &ConvArgs) {
    let idx = arch::block_id()[0] * THREADS + arch::thread_id();
    if idx >= a.direct.dx_elems {
        return;
    }
    let (g, n, c, i) = if a.x_strides[2] == 1 {
        let (t, c) = a.div_c.divmod(idx);
        let (t, g) = a.div_g.divmod(t);
        let (t, ix) = a.div_in[2].divmod(t);
        let (t, iy) = a.div_in[1].divmod(t);
        let (n, iz) = a.div_in[0].divmod(t);
        (g, n, c, [iz, iy, ix])
    } else {
        let (t, ix) = a.div_in[2].divmod(idx);
        let (t, iy) = a.div_in[1].divmod(t);
        let (t, iz) = a.div_in[0].divmod(t);
        let (t, c) = a.div_c.divmod(t);
        let (n, g) = a.div_g.divmod(t);
        (g, n, c, [iz, iy, ix])
    };
    let (q0, r0) = a.slices.div_stride[0].divmod(i[0]);
    let (q1, r1) = a.slices.div_stride[1].divmod(i[1]);
    let (q2, r2) = a.slices.div_stride[2].divmod(i[2]);
    let s = Slice::new(a, [r0, r1, r2]);
    // Output pixel of tap j = 0, per dim (wrapping below zero).
    let v = [q0.wrapping_add(s.base[0]), q1.wrapping_add(s.base[1]), q2.wrapping_add(s.base[2])];
    let (ys, ws) = (&a.dy_strides, &a.w_strides);
    let (dy, w) = (a.dy as *const In, a.w as *const In);
    let mut acc = 0.0f32;
    for jz in 0..s.dot[0] {
        let oz = v[0].wrapping_sub(jz * a.slices.tap_step[0]);
        if oz >= a.output[0] {
            continue;
        }
        let fz = s.t[0] + a.slices.tilde[0] * jz;
        for jy in 0..s.dot[1] {
            let oy = v[1].wrapping_sub(jy * a.slices.tap_step[1]);
            if oy >= a.output[1] {
                continue;
            }
            let fy = s.t[1] + a.slices.tilde[1] * jy;
            for jx in 0..s.dot[2] {
                let ox = v[2].wrapping_sub(jx * a.slices.tap_step[2]);
                if ox >= a.output[2] {
                    continue;
                }
                let fx = s.t[2] + a.slices.tilde[2] * jx;
                let y_off = g * ys[0] + n * ys[1] + oz * ys[3] + oy * ys[4] + ox * ys[5];
                let w_off = g * ws[0] + c * ws[2] + fz * ws[3] + fy * ws[4] + fx * ws[5];
                for k in 0..a.k {
                    let yv = unsafe { arch::ld(dy, (y_off + k * ys[2]) as usize) };
                    let wv = unsafe { arch::ld(w, (w_off + k * ws[1]) as usize) };
                    acc = arch::fma(yv.to_f32(), wv.to_f32(), acc);
                }
            }
        }
    }
    unsafe { write_dx::<Out>(a, g, n, c, i, acc) }
}

/// Writes `v` (the full reduction) through the epilogue into `dX[g, n, c, i]`.
#[inline(always)]
unsafe fn write_dx<Out: Elem>(a: &ConvArgs, g: u32, n: u32, c: u32, i: [u32; 3], v: f32) {
    unsafe { store_result::<Out>(a, a.x, &a.x_strides, [g, n, c, i[0], i[1], i[2]], v) }
}

