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
//! With no axis unfolded (`dims` 0) it is a channel pack of any tensor of
//! the canonical axes (`G` = 1): channels that fill no vector (`K` = 255 of
//! a detection head) padded with zeros to whole vectors, images (or filter
//! rows) past `UnfoldPart::rows` zeros, so that backward-data and
//! backward-weight run their vector paths on the copies (host:
//! `ops::pack`).
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
    if u.dims == 0
        && n < u.rows
        && let Some(out) = unsafe { packed_run::<In>(a, pix, cv) }
    {
        unsafe { arch::st(a.w as *mut In::V16, v as usize, out) };
        return;
    }
    let mut out = In::V16::default();
    for (l, e) in out.as_mut().iter_mut().enumerate() {
        let j = cv * lanes + l as u32;
        if j >= u.valid || n >= u.rows {
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

/// The channel pack's vector `cv` of pixel `pix` read as whole vectors,
/// where the source is channels-last with its pixels back to back (its
/// element `pix * C + c`) and 16-byte aligned: the 8 channels are 8
/// consecutive elements, inside at most two aligned 16-byte vectors (one
/// load each, shifted into place), the channels past `C` zeroed. `None`
/// where the source is laid out otherwise or the vectors would reach past
/// it (the caller reads element by element).
///
/// # Safety
/// As [`kernel`], for a pack (`dims` 0) and an image `n < rows`.
#[inline(always)]
unsafe fn packed_run<In: Elem>(a: &ConvArgs, pix: u32, cv: u32) -> Option<In::V16> {
    let (u, xs, lanes) = (&a.unfold, &a.x_strides, In::LANES as u32);
    let flat = xs[2] == 1 && xs[5] == u.valid && crate::conv::pixels_flat(xs, &a.input, u.rows);
    if !flat || !(a.x as usize).is_multiple_of(16) || In::BYTES != 2 {
        return None;
    }
    // Elements of the source; the run's first and how many are channels.
    let total = u.rows * a.input[0] * a.input[1] * a.input[2] * u.valid;
    let (e0, keep) = (pix * u.valid + cv * lanes, (u.valid - cv * lanes).min(lanes));
    let (q, sh) = (e0 / lanes, e0 % lanes);
    let two = sh + keep > lanes;
    if (q + 1 + two as u32) * lanes > total {
        return None;
    }
    let src = a.x as *const In::V16;
    let lo: u128 = unsafe { core::mem::transmute_copy(&arch::ld(src, q as usize)) };
    let hi: u128 = if two { unsafe { core::mem::transmute_copy(&arch::ld(src, q as usize + 1)) } } else { 0 };
    // Little-endian lanes: element i at bits 16 i.
    let bits = 16 * sh;
    let mut run = if bits == 0 { lo } else { (lo >> bits) | (hi << (128 - bits)) };
    if keep < lanes {
        run &= (1u128 << (16 * keep)) - 1;
    }
    Some(unsafe { core::mem::transmute_copy(&run) })
}
