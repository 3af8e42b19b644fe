//! Tap windows along x of backward-data's channel-lane paths (the direct
//! kernel's and the depthwise strips'): a thread's run of [`RUN`] pixels of
//! one stride slice reads, for tap `jx` of a filter row, consecutive output
//! pixels `vx - jx*ts + p`, so neighbouring taps read the same pixels
//! shifted by `ts`. Taps are taken in groups whose shifts span at most
//! [`HALO`], and a group reads its window of `RUN + span` pixels once,
//! applying every tap of the group to each.

// Lane loops index several same-length arrays by one index, as the GPU code wants.
#![allow(clippy::needless_range_loop)]

use super::lanes::{ld_gather, ld_lanes, st_lanes};
use super::offset;
use crate::arch;
use crate::elem::Elem;
use crate::unroll::unroll;
use convgrad_types::params::ConvArgs;

pub use convgrad_types::contract::bwd_data_direct::{HALO, RUN};

/// Writes the `VW` lanes of pixel `p` of a run through the epilogue: lane
/// `l` is `[g + l, n, 0, i]` (`DEPTHWISE`) or `[g, n, c + l, i]`, with `i` the
/// run's first pixel `i0` moved `p` stride steps along x. The offsets of
/// `i0` are the same for every pixel of the run (computed once after
/// inlining); the chain's opcodes are matched once per pixel, not per lane,
/// and each `D` is read before the one vector store (a `D` may be `dx`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn write_lanes<Out: Elem, const VW: usize, const DEPTHWISE: bool>(
    a: &ConvArgs,
    g: u32,
    n: u32,
    c: u32,
    i0: [u32; 3],
    p: u32,
    acc: [f32; VW],
) {
    let idx = [g, n, c, i0[0], i0[1], i0[2]];
    let lane_axis = if DEPTHWISE { 0 } else { 2 };
    let along = (p * a.stride[2]) as usize;
    let at = |s: &[u32; 6]| offset(s, idx) + along * s[5] as usize;
    let v = a.epi.apply_run(acc, |d| {
        let s = &a.d_strides[d];
        let (ptr, off, ls) = (a.d[d] as *const Out, at(s), s[lane_axis] as usize);
        let mut dv = [0.0f32; VW];
        for l in 0..VW {
            dv[l] = unsafe { arch::ld(ptr, off + l * ls) }.to_f32();
        }
        dv
    });
    unsafe { st_lanes::<Out, VW>(a.x as *mut Out, at(&a.x_strides), v) }
}

/// Writes a run's pixels that lie inside `dx` (lanes as in [`write_lanes`];
/// `i0`: the run's first input pixel).
///
/// # Safety
/// As the kernel.
#[inline(always)]
pub(crate) unsafe fn store_dx_run<Out: Elem, const VW: usize, const DEPTHWISE: bool>(
    a: &ConvArgs,
    g: u32,
    n: u32,
    c: u32,
    i0: [u32; 3],
    acc: &[[f32; VW]; RUN],
) {
    // dx's offset, computed once here: left to `write_lanes`, the NVIDIA code
    // rebuilt the 64-bit offset from the argument block for each of the
    // eight pixels (slower on depthwise problems).
    let x_step = (a.stride[2] * a.x_strides[5]) as usize;
    let x0 = offset(&a.x_strides, [g, n, c, i0[0], i0[1], i0[2]]);
    let (bound, plain) = (a.input[2], a.epi.len == 0);
    unroll!(p in [0, 1, 2, 3, 4, 5, 6, 7] => {
        if i0[2] + a.stride[2] * (p as u32) < bound {
            if plain {
                unsafe { st_lanes::<Out, VW>(a.x as *mut Out, x0 + p * x_step, acc[p]) }
            } else {
                unsafe { write_lanes::<Out, VW, DEPTHWISE>(a, g, n, c, i0, p as u32, acc[p]) }
            }
        }
    });
}

/// Bit `s` set where a tap of a window sits at shift `s`: shifts `0, ts,
/// 2ts, ...` up to `span`.
#[inline(always)]
pub(crate) fn tap_mask(span: u32, ts: u32) -> u32 {
    let mut mask = 0u32;
    let mut sh = 0;
    while sh <= span {
        mask |= 1 << sh;
        sh += ts;
    }
    mask
}

/// One tap group's window of a filter row (module docs).
pub(crate) struct Window {
    /// Offsets of the row in `dy` (pixel 0, `k` 0) and in `w` (tap 0, `k` 0, lane 0).
    pub y_row: u32,
    pub w_row: u32,
    /// Output pixel of window element 0 (wrapping below zero).
    pub origin: u32,
    /// The group's last tap (at shift 0).
    pub last: u32,
    /// The class's first tap along x.
    pub tx: u32,
    /// Bit `s`: a tap sits at shift `s`.
    pub mask: u32,
    /// Window elements read (`RUN` plus the span of the shifts).
    pub used: u32,
}

/// The weights of one window's taps at `k`, by shift: the tap at shift `s`
/// is the window's `last` minus the taps below `s` (absent shifts read the
/// last tap's, unused). Channel lanes are one vector (the host requires
/// it); depthwise lanes, consecutive groups, are gathered.
///
/// # Safety
/// As the kernel.
#[inline(always)]
pub(crate) unsafe fn window_weights<In: Elem, const VW: usize, const DEPTHWISE: bool>(
    a: &ConvArgs,
    win: &Window,
    k: u32,
) -> [[f32; VW]; HALO + 1] {
    let (ws, mask) = (&a.w_strides, win.mask);
    let w = a.w as *const In;
    let mut wt = [[0.0f32; VW]; HALO + 1];
    unroll!(s in [0, 1, 2] => {
        let jx = if mask >> s & 1 != 0 { win.last - (mask & ((1 << s) - 1)).count_ones() } else { win.last };
        let wo = win.w_row + (win.tx + a.slices.tilde[2] * jx) * ws[5] + k * ws[1];
        wt[s] = if DEPTHWISE {
            unsafe { ld_gather::<In, VW>(w, wo, ws[0]) }
        } else {
            unsafe { ld_lanes::<In, VW>(w, wo as usize) }
        };
    });
    wt
}

/// The multiply-adds of one window at one `k`: element `e` feeds position
/// `p = e - s` through the tap at shift `s` (constant-folded per pair).
#[inline(always)]
pub(crate) fn window_fma<const VW: usize>(
    px: &[[f32; VW]; RUN + HALO],
    wt: &[[f32; VW]; HALO + 1],
    mask: u32,
    acc: &mut [[f32; VW]; RUN],
) {
    unroll!(e in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] => {
        unroll!(s in [0, 1, 2] => {
            if e >= s && e - s < RUN && mask >> s & 1 != 0 {
                let acc = &mut acc[e.wrapping_sub(s).min(RUN - 1)];
                for l in 0..VW {
                    acc[l] = arch::fma(px[e][l], wt[s][l], acc[l]);
                }
            }
        });
    });
}
