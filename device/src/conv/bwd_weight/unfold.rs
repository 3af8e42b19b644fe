//! Small-C inputs unfolded into channels ahead of backward-weight
//! ([`Op::BwdWeightUnfold`]): the pre-pass of a 3-channel stem.
//!
//! With 3 channels of 2 bytes no 16-byte vector holds whole channels, so the
//! GEMM's `im2col(x)` would be gathered element by element. For one output
//! pixel, the taps of the trailing `dims` spatial axes (x; or y and x; or all
//! three) and the channels form one run of the filter in memory, `(taps, c)`
//! with c fastest. This kernel writes that run for every output position of
//! the unfolded axes into `x'`, `[N][D'][H'][W'][C']` packed, `C'` the run
//! padded to whole vectors with zeros (zeros too for taps in the padding).
//! The GEMM then runs a problem with `C'` channels and a filter of 1 along
//! the unfolded axes on `x'`: 16-byte loads, the same sums. Its stores skip
//! the padding columns (`UnfoldPart::valid`, `filter_cols`).
//!
//! One thread per 16-byte vector of `x'`, pixels in order: stores coalesce;
//! the loads of neighbouring threads hit neighbouring input pixels.
//!
//! [`Op::BwdWeightUnfold`]: convgrad_types::instance::Op::BwdWeightUnfold

use crate::arch;
use crate::conv::load_args;
use crate::elem::Elem;
use convgrad_types::params::ConvArgs;

/// Threads per workgroup.
pub const THREADS: u32 = 256;

/// Kernel body. Grid: `x` = `x'` vectors / [`THREADS`] (rounded up); reads
/// the caller's problem and `x`, writes `x'` at `a.w`.
///
/// # Safety
/// A valid argument block with `a.unfold` set; `a.w` holds `a.unfold.elems`
/// elements of `In`, 16-byte aligned.
#[inline(always)]
pub unsafe fn kernel<In: Elem>(args: *const ConvArgs) {
    let a = unsafe { load_args(args) };
    let u = &a.unfold;
    let lanes = In::LANES as u32;
    let v = arch::block_id()[0] * THREADS + arch::thread_id();
    if v >= u.elems / lanes {
        return;
    }
    // Vector -> (pixel of x', first channel); pixel -> (n, [d', h', w']).
    let (pix, cv) = u.div_vecs.divmod(v);
    let (t, w) = u.div_pix[2].divmod(pix);
    let (t, h) = u.div_pix[1].divmod(t);
    let (n, d) = u.div_pix[0].divmod(t);
    let o = [d, h, w];
    let first = 3 - u.dims as usize;
    let xs = &a.x_strides;
    let mut out = In::V16::default();
    for (l, e) in out.as_mut().iter_mut().enumerate() {
        let j = cv * lanes + l as u32;
        if j >= u.valid {
            continue;
        }
        // Channel j of x' -> (tap of the unfolded axes, c) -> input pixel.
        let (tap, c) = a.div_c.divmod(j);
        let (t, tx) = a.div_x.divmod(tap);
        let (tz, ty) = a.div_y.divmod(t);
        let taps = [tz, ty, tx];
        let mut off = n * xs[1] + c * xs[2];
        let mut inside = true;
        for i in 0..3 {
            // Kept axes: x' runs over the input itself.
            let at = if i < first {
                o[i]
            } else {
                (o[i] * a.stride[i] + taps[i] * a.dilation[i]).wrapping_sub(a.lpad[i])
            };
            // Wraps to a huge value in the left pad: one compare for both sides.
            inside &= at < a.input[i];
            off = off.wrapping_add(at.wrapping_mul(xs[3 + i]));
        }
        if inside {
            *e = unsafe { arch::ld(a.x as *const In, off as usize) };
        }
    }
    unsafe { arch::st(a.w as *mut In::V16, v as usize, out) };
}
