//! What the TMA families share ([`Op::BwdDataTma`], [`Op::BwdWeightTma`]):
//! the layout tests of their plain GEMM operands and the map of a
//! channels-last tensor as `(channels, G, pixels)`.
//!
//! [`Op::BwdDataTma`]: convgrad_types::instance::Op::BwdDataTma
//! [`Op::BwdWeightTma`]: convgrad_types::instance::Op::BwdWeightTma

use convgrad_types::TensorDesc;
use convgrad_types::params::TmaMap;

/// Whether `d`'s pixels (`N` and the spatial axes) are one evenly spaced
/// run: each axis's stride is the next inner one's times its length.
pub(crate) fn pixels_even(d: &TensorDesc) -> bool {
    let (l, s) = (&d.lengths, &d.strides);
    // Inner to outer: W, H, D, then N.
    let mut want = s[5];
    for ax in [5, 4, 3, 1] {
        if l[ax] > 1 && s[ax] != want {
            return false;
        }
        want = want.saturating_mul(l[ax]);
    }
    true
}

/// Whether strides `s` of 2-byte elements are 16-byte multiples (TMA).
pub(crate) fn aligned16(s: &[usize]) -> bool {
    s.iter().all(|&v| (v * 2).is_multiple_of(16))
}

/// Whether `d` is a plain `(channels, G, pixels)` tensor of 2-byte
/// elements as [`channels_map`] reads it: channels contiguous, 16-byte
/// group and pixel strides, pixels evenly spaced.
pub(crate) fn channels_plain(d: &TensorDesc) -> bool {
    d.strides[2] == 1 && aligned16(&[d.strides[0], d.strides[5]]) && pixels_even(d)
}

/// `Err` naming `name` where `addr` is not 16-byte aligned (TMA reads from
/// 16-byte aligned bases).
pub(crate) fn check_base(name: &str, addr: u64) -> Result<(), String> {
    if addr.is_multiple_of(16) {
        Ok(())
    } else {
        Err(format!("{name} at {addr:#x}: the TMA kernel reads from 16-byte aligned addresses"))
    }
}

/// A map of 2-byte elements at `addr`, 128-byte swizzle, of rank
/// `dims.len()` (3 or 5: the kernels' copy instructions name it): per
/// dimension `(elements, byte stride, box)`, dimension 0 contiguous (its
/// stride unused).
pub(crate) fn map(addr: u64, dims: &[(u64, u64, u32)]) -> TmaMap {
    let mut m = TmaMap { magic: TmaMap::MAGIC, rank: dims.len() as u32, base: addr, elem_bytes: 2, swizzle: 128, ..Default::default() };
    for (d, &(len, stride, boxed)) in dims.iter().enumerate() {
        m.dims[d] = len as u32;
        m.boxes[d] = boxed;
        if d > 0 {
            m.strides[d - 1] = stride;
        }
    }
    for d in dims.len()..5 {
        (m.dims[d], m.boxes[d]) = (1, 1);
    }
    m
}

/// The map of channels-last `d` at `addr` as `(channels, G, pixels)` (`m`
/// pixels, 2-byte elements), boxes of `boxes`, 128-byte swizzle; `d` as
/// [`channels_plain`] accepts.
pub(crate) fn channels_map(d: &TensorDesc, addr: u64, m: u64, boxes: [u32; 3]) -> TmaMap {
    let (l, s) = (&d.lengths, &d.strides);
    map(addr, &[(l[2] as u64, 2, boxes[0]), (l[0] as u64, 2 * s[0] as u64, boxes[1]), (m, 2 * s[5] as u64, boxes[2])])
}
