//! Depthwise backward-data by column strips ([`Op::BwdDataDepthwise`]).
//!
//! The direct kernel's depthwise path ([`bwd_data_direct`]) gives each thread
//! one run of pixels and re-reads, per input row, every `dy` row its filter
//! reaches and every weight: three `dy` windows and nine weight gathers per
//! 32 outputs at 3x3, so multiply-adds are a small part of its instructions.
//! Here a thread owns a strip of
//! [`StripPart::rows`] consecutive rows of one stride slice (the same
//! run of [`RUN`] pixels and [`VW`] groups in each): its weights are read once,
//! and it walks down the `dy` rows the strip reaches, reading each once and
//! adding it to the (at most [`DEPTH`]) rows in flight through their taps.
//! A row is written through the epilogue as soon as its last tap is in.
//!
//! The host picks it where every tap class along y has at most [`DEPTH`]
//! taps one `dy` row apart (`tap_step[1] == 1`), along x at most one window
//! of [`tap_window`]'s (span at most [`HALO`]), along z one tap, and
//! `dx`, `dy` hold the groups as vectors of `VW`.
//!
//! Threads run `(n, iz, residue y, strip, residue x, run, vector)` with the
//! vector fastest (a warp reads and writes contiguous group runs). Every
//! input-gradient element is written once, reached by a tap or not.
//!
//! [`Op::BwdDataDepthwise`]: convgrad_types::instance::Op::BwdDataDepthwise
//! [`bwd_data_direct`]: super::direct
//! [`tap_window`]: crate::conv::tap_window
//! [`StripPart::rows`]: convgrad_types::params::StripPart::rows

// Lane loops index several same-length arrays by one index, as the GPU code wants.
#![allow(clippy::needless_range_loop)]

use crate::conv::lanes::{THREADS, ld_lanes};
use crate::conv::load_args;
use crate::conv::residues::class_of;
use crate::conv::tap_window::{HALO, RUN, Window, store_dx_run, tap_mask, window_fma, window_weights};
use crate::arch;
use crate::elem::Elem;
use crate::unroll::unroll;
use convgrad_types::contract::bwd_data_direct::LANES;
use convgrad_types::params::ConvArgs;

// Groups per thread (half the direct kernel's lanes, so that three rows of
// accumulators (48 f32), the weights (18) and a window (20) stay in
// registers) and rows in flight: the host-device contract.
pub use convgrad_types::contract::depthwise_strips::{DEPTH, VW};
const _: () = assert!(VW == LANES / 2);
// The tap and slot loops are spelled out for 3 (`unroll!`).
const _: () = assert!(DEPTH == 3 && HALO == 2);

/// Kernel body. Grid: `x = ceil(threads / 256)`, threads as in the module docs.
///
/// # Safety
/// Launch contract above and a valid argument block.
#[inline(always)]
pub unsafe fn kernel<In: Elem, Out: Elem>(args: *const ConvArgs) {
    let a = unsafe { load_args(args) };
    unsafe { columns::<In, Out>(a) }
}

#[inline(always)]
unsafe fn columns<In: Elem, Out: Elem>(a: &ConvArgs) {
    let idx = arch::block_id()[0] * THREADS + arch::thread_id();
    let (t, v) = a.direct.div_vec.divmod(idx);
    let (t, run) = a.direct.div_runs.divmod(t);
    let (t, rx) = a.slices.div_stride[2].divmod(t);
    let (t, strip) = a.strips.div_strips.divmod(t);
    let (t, ry) = a.slices.div_stride[1].divmod(t);
    let (n, iz) = a.div_in[0].divmod(t);
    if n >= a.n {
        return;
    }
    let (qz, rz) = a.slices.div_stride[0].divmod(iz);
    let (cz, cy, cx) = (class_of(a, 0, rz), class_of(a, 1, ry), class_of(a, 2, rx));
    let g = v * VW as u32;
    let (ys, ws, out) = (&a.dy_strides, &a.w_strides, &a.output);
    // z: one tap at most (host), x: one window of the class's taps.
    let oz = qz.wrapping_add(cz.base);
    let live = cz.dot != 0 && oz < out[0] && cx.dot != 0;
    let ts = a.slices.tap_step[2];
    let last = cx.dot.max(1) - 1;
    let qx0 = run * RUN as u32;
    let origin = qx0.wrapping_add(cx.base).wrapping_sub(last * ts);
    let mask = tap_mask(last * ts, ts);
    let used = RUN as u32 + last * ts;
    // Weights of tap row jy (zero for absent rows: never applied).
    let mut wt = [[[0.0f32; VW]; HALO + 1]; DEPTH];
    let w_g = g * ws[0] + cz.t * ws[3];
    unroll!(jy in [0, 1, 2] => {
        if live && (jy as u32) < cy.dot {
            let fy = cy.t + a.slices.tilde[1] * jy as u32;
            let win = Window { y_row: 0, w_row: w_g + fy * ws[4], origin, last, tx: cx.t, mask, used };
            wt[jy] = unsafe { window_weights::<In, VW, true>(a, &win, 0) };
        }
    });
    // Window elements inside dY, and their offsets along x (0 outside).
    let mut inside = [false; RUN + HALO];
    let mut x_off = [0u32; RUN + HALO];
    unroll!(e in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] => {
        let ox = origin.wrapping_add(e as u32);
        inside[e] = (e as u32) < used && ox < out[2];
        x_off[e] = if inside[e] { ox * ys[5] } else { 0 };
    });
    let st = Strip {
        g,
        n,
        iz,
        ry,
        ix0: rx + a.stride[2] * qx0,
        qy0: strip * a.strips.rows,
        vy0: (strip * a.strips.rows).wrapping_add(cy.base),
        y_plane: g * ys[0] + n * ys[1] + oz * ys[3],
        taps: if live { cy.dot } else { 0 },
        mask,
        inside,
        x_off,
    };
    // 3x3 classes (stride 1): constant masks, every slot fed at every step.
    if live && mask == 0b111 && cy.dot == DEPTH as u32 {
        unsafe { walk::<In, Out, true>(a, &st, &wt) }
    } else {
        unsafe { walk::<In, Out, false>(a, &st, &wt) }
    }
}

/// A thread's strip (see [`columns`]).
struct Strip {
    g: u32,
    n: u32,
    iz: u32,
    /// Residue along y, first input pixel along x.
    ry: u32,
    ix0: u32,
    /// First slice row, and the `dy` row its tap 0 reads (wrapping below zero).
    qy0: u32,
    vy0: u32,
    /// Offset in `dy` of the thread's groups, `n` and `dy` plane.
    y_plane: u32,
    /// Taps of the class along y (0: the strip is written as zeros).
    taps: u32,
    /// Bit `s`: an x tap at shift `s`.
    mask: u32,
    /// Window elements inside `dY`, and their offsets along x (0 outside).
    inside: [bool; RUN + HALO],
    x_off: [u32; RUN + HALO],
}

/// Walks down the strip's `dy` rows. Step `s` reads row `vy0 - 2 + s`:
/// tap `jy` of slice row `s - 2 + jy`, whose accumulators live in slot
/// `(s - 2 + jy) % 3`; row `s - 2` is then complete. Steps go in threes so
/// that every slot index is a constant. `FULL`: three taps along y and x,
/// and every slot is fed (rows outside the strip are computed and dropped)
/// without branches or masks.
///
/// # Safety
/// As the kernel.
#[inline(always)]
unsafe fn walk<In: Elem, Out: Elem, const FULL: bool>(
    a: &ConvArgs,
    st: &Strip,
    wt: &[[[f32; VW]; HALO + 1]; DEPTH],
) {
    let (ys, rows) = (&a.dy_strides, a.strips.rows);
    let mask = if FULL { 0b111 } else { st.mask };
    let dy = a.dy as *const In;
    let mut acc = [[[0.0f32; VW]; RUN]; DEPTH];
    let steps = rows + DEPTH as u32 - 1;
    let mut s0 = 0;
    while s0 < steps {
        unroll!(p in [0, 1, 2] => {
            let s = s0 + p as u32;
            if s < steps {
                // Whether tap jy feeds a row of the strip at this step.
                let fed = |jy: u32| FULL || (jy < st.taps && (s + jy).wrapping_sub(2) < rows);
                let oy = st.vy0.wrapping_sub(2).wrapping_add(s);
                if oy < a.output[1] && (fed(0) || fed(1) || fed(2)) {
                    let row = dy.wrapping_add((st.y_plane + oy * ys[4]) as usize);
                    let mut px = [[0.0f32; VW]; RUN + HALO];
                    unroll!(e in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] => {
                        let v = unsafe { ld_lanes::<In, VW>(row, st.x_off[e] as usize) };
                        // Zero outside dY (a select, no branch).
                        for l in 0..VW {
                            px[e][l] = if st.inside[e] { v[l] } else { 0.0 };
                        }
                    });
                    unroll!(jy in [0, 1, 2] => {
                        if fed(jy as u32) {
                            window_fma(&px, &wt[jy], mask, &mut acc[(p + 1 + jy) % DEPTH]);
                        }
                    });
                }
                // Slice row s - 2 has all its taps: write it, free its slot.
                let done = &mut acc[(p + 1) % DEPTH];
                if s >= 2 {
                    let iy = st.ry + a.stride[1] * (st.qy0 + s - 2);
                    if iy < a.input[1] {
                        unsafe { store_dx_run::<Out, VW, true>(a, st.g, st.n, 0, [st.iz, iy, st.ix0], done) }
                    }
                }
                *done = [[0.0; VW]; RUN];
            }
        });
        s0 += DEPTH as u32;
    }
}
