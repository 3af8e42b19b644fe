//! Channel lanes of the direct kernels: a thread's `VW` consecutive channels
//! (or groups) loaded and stored as one aligned vector, and the dispatch on
//! the argument block's lane mode.

// Lane loops index several same-length arrays by one index, as the GPU code wants.
#![allow(clippy::needless_range_loop)]

use crate::arch;
use crate::elem::{Al4, Al8, Elem, Vec16};

/// Threads per workgroup of the direct kernels.
pub const THREADS: u32 = 256;

/// `VW` lanes of `p` from element `off` (a multiple of `VW`), as stored:
/// one aligned vector load of `VW * size_of::<T>()` bytes.
///
/// # Safety
/// The lanes must lie in an allocation the kernel was given, `off` aligned.
#[inline(always)]
pub(crate) unsafe fn ld_raw<T: Elem, const VW: usize>(p: *const T, off: usize) -> [T; VW] {
    // The lanes' address as `p + off` elements (indexing by `off / VW` cost
    // a shift per load on the H200).
    let q = p.wrapping_add(off);
    match VW * T::BYTES {
        16 => unsafe { arch::ld(q as *const Vec16<[T; VW]>, 0) }.0,
        8 => unsafe { arch::ld(q as *const Al8<[T; VW]>, 0) }.0,
        4 => unsafe { arch::ld(q as *const Al4<[T; VW]>, 0) }.0,
        _ => {
            let mut out = [T::default(); VW];
            for l in 0..VW {
                out[l] = unsafe { arch::ld(p, off + l) };
            }
            out
        }
    }
}

/// [`ld_raw`], as f32.
///
/// # Safety
/// As [`ld_raw`].
#[inline(always)]
pub(crate) unsafe fn ld_lanes<T: Elem, const VW: usize>(p: *const T, off: usize) -> [f32; VW] {
    let v = unsafe { ld_raw::<T, VW>(p, off) };
    let mut out = [0.0f32; VW];
    for l in 0..VW {
        out[l] = v[l].to_f32();
    }
    out
}

/// `VW` elements of `p` at `off + l * stride`, as f32.
///
/// # Safety
/// As [`ld_lanes`].
#[inline(always)]
pub(crate) unsafe fn ld_gather<T: Elem, const VW: usize>(p: *const T, off: u32, stride: u32) -> [f32; VW] {
    let mut out = [0.0f32; VW];
    for l in 0..VW {
        out[l] = unsafe { arch::ld(p, (off + l as u32 * stride) as usize) }.to_f32();
    }
    out
}

/// Stores `VW` f32 lanes as `T` at element `off` (a multiple of `VW`): one
/// aligned vector store.
///
/// # Safety
/// As [`ld_lanes`].
#[inline(always)]
pub(crate) unsafe fn st_lanes<T: Elem, const VW: usize>(p: *mut T, off: usize, f: [f32; VW]) {
    let mut v = [T::default(); VW];
    for l in 0..VW {
        v[l] = T::from_f32(f[l]);
    }
    let q = p.wrapping_add(off);
    match VW * T::BYTES {
        16 => unsafe { arch::st(q as *mut Vec16<[T; VW]>, 0, Vec16(v)) },
        8 => unsafe { arch::st(q as *mut Al8<[T; VW]>, 0, Al8(v)) },
        4 => unsafe { arch::st(q as *mut Al4<[T; VW]>, 0, Al4(v)) },
        _ => {
            for l in 0..VW {
                unsafe { arch::st(p, off + l, v[l]) }
            }
        }
    }
}

/// Runs `$f::<In, Out, VW, DEPTHWISE>(a)` with the lane count (`$full`, or `$half`
/// with `vec_mode::HALF`) and lane kind of the argument block's [`vec_mode`]
/// (a uniform branch), or `$scalar` when off.
///
/// [`vec_mode`]: convgrad_types::params::vec_mode
macro_rules! dispatch_lanes {
    ($a:ident, $in:ty, $out:ty, $f:ident, $scalar:expr, [$full:literal, $half:literal]) => {{
        use convgrad_types::params::vec_mode;
        let m = $a.direct.vec_mode;
        let depthwise = m & vec_mode::DEPTHWISE != 0;
        let half = m & vec_mode::HALF != 0;
        if m & vec_mode::ON == 0 {
            $scalar
        } else {
            match (half, depthwise) {
                (false, true) => $f::<$in, $out, $full, true>($a),
                (false, false) => $f::<$in, $out, $full, false>($a),
                (true, true) => $f::<$in, $out, $half, true>($a),
                (true, false) => $f::<$in, $out, $half, false>($a),
            }
        }
    }};
}
pub(crate) use dispatch_lanes;
