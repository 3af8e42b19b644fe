//! Direct backward-data for tiny per-group GEMMs (depthwise, small C and K),
//! where matrix tiles would be almost all padding.
//!
//! One thread per input-gradient element. In channels-last layouts
//! (C innermost) threads run `(n, d, h, w, g, c)` with c fastest, otherwise
//! `(n, g, c, d, h, w)` with w fastest, so neighbouring threads touch
//! neighbouring addresses. Each thread visits only the taps of its pixel's
//! stride class (the same [`Slice`] decomposition as the GEMM path) and
//! writes its element once, through the epilogue, reached by a tap or not.

use super::bwd_data::{Slice, write_dx};
use super::load_args;
use crate::arch;
use crate::elem::Elem;
use convgrad_types::params::ConvArgs;

/// Threads per workgroup.
pub const THREADS: u32 = 256;

/// Kernel body. Grid: `x = ceil(G*N*C*pixels / 256)`.
///
/// # Safety
/// Launch contract above and a valid argument block.
#[inline(always)]
pub unsafe fn kernel<In: Elem, Out: Elem>(args: *const ConvArgs) {
    let a = unsafe { load_args(args) };
    let idx = arch::block_id()[0] * THREADS + arch::thread_id();
    if idx >= a.partial_elems {
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
    let (q0, r0) = a.div_stride[0].divmod(i[0]);
    let (q1, r1) = a.div_stride[1].divmod(i[1]);
    let (q2, r2) = a.div_stride[2].divmod(i[2]);
    let s = Slice::new(a, [r0, r1, r2]);
    // Output pixel of tap j = 0, per dim (wrapping below zero).
    let v = [q0.wrapping_add(s.base[0]), q1.wrapping_add(s.base[1]), q2.wrapping_add(s.base[2])];
    let (ys, ws) = (&a.dy_strides, &a.w_strides);
    let (dy, w) = (a.dy as *const In, a.w as *const In);
    let mut acc = 0.0f32;
    for jz in 0..s.dot[0] {
        let oz = v[0].wrapping_sub(jz * a.tap_step[0]);
        if oz >= a.output[0] {
            continue;
        }
        let fz = s.t[0] + a.tilde[0] * jz;
        for jy in 0..s.dot[1] {
            let oy = v[1].wrapping_sub(jy * a.tap_step[1]);
            if oy >= a.output[1] {
                continue;
            }
            let fy = s.t[1] + a.tilde[1] * jy;
            for jx in 0..s.dot[2] {
                let ox = v[2].wrapping_sub(jx * a.tap_step[2]);
                if ox >= a.output[2] {
                    continue;
                }
                let fx = s.t[2] + a.tilde[2] * jx;
                let y_off = g * ys[0] + n * ys[1] + oz * ys[3] + oy * ys[4] + ox * ys[5];
                let w_off = g * ws[0] + c * ws[2] + fz * ws[3] + fy * ws[4] + fx * ws[5];
                for k in 0..a.k {
                    let yv = unsafe { arch::ld(dy, (y_off + k * ys[2]) as usize) };
                    let wv = unsafe { arch::ld(w, (w_off + k * ws[1]) as usize) };
                    acc = core::intrinsics::fmaf32(yv.to_f32(), wv.to_f32(), acc);
                }
            }
        }
    }
    unsafe { write_dx::<Out>(a, g, n, c, i, acc) }
}
