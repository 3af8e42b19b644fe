//! What the TMA families share ([`Op::BwdDataTma`], [`Op::BwdWeightTma`]):
//! the layout tests of their plain GEMM operands and the map of a
//! channels-last tensor as `(channels, G, pixels)`.
//!
//! [`Op::BwdDataTma`]: convgrad_types::instance::Op::BwdDataTma
//! [`Op::BwdWeightTma`]: convgrad_types::instance::Op::BwdWeightTma

use convgrad_types::{ConvProblem, TensorDesc};
use convgrad_types::params::{FastDiv, TmaMap, TmaPart};

/// Whether `p` runs as one plain GEMM over the pixels in order (a 1x1
/// filter without padding), not over blocks of pixels per tap.
pub(crate) fn plain_gemm(p: &ConvProblem) -> bool {
    p.filter.iter().all(|&f| f == 1) && p.lpads.iter().all(|&v| v == 0) && p.rpads.iter().all(|&v| v == 0)
}

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

/// The block of `2^bits` pixels for a grid of `[W, H, N]` pixels: log2 of
/// its pixels along each, at most `2^cap[d]` along `d` (a box spans at most
/// 256 elements: `stride` of them per pixel of a strided input), the one
/// that pads the grid least (wider blocks first among equals). The TMA
/// kernels on filters with taps read one map box per block
/// ([`convgrad_types::params::TmaPart`]).
pub(crate) fn pixel_block(grid: [usize; 3], bits: u32, cap: [u32; 3]) -> [u32; 3] {
    let mut best = ([0, 0, bits], u64::MAX);
    for lw in (0..=bits.min(cap[0])).rev() {
        for lh in (0..=(bits - lw).min(cap[1])).rev() {
            let b = [lw, lh, bits - lw - lh];
            if b[2] > cap[2] {
                continue;
            }
            let n = padded(grid, b);
            if n < best.1 {
                best = (b, n);
            }
        }
    }
    best.0
}

/// Pixels of `grid` (`[W, H, N]`) padded to whole blocks of `2^lg`.
pub(crate) fn padded(grid: [usize; 3], lg: [u32; 3]) -> u64 {
    (0..3).map(|d| (grid[d] as u64).div_ceil(1 << lg[d]) << lg[d]).product()
}

/// The `TmaPart` of blocks `lg` over `grid`: the block sizes and the
/// divisions by the blocks along W and H.
pub(crate) fn blocks_part(grid: [usize; 3], lg: [u32; 3]) -> (TmaPart, u64) {
    let blocks = |d: usize| (grid[d] as u64).div_ceil(1 << lg[d]);
    let part = TmaPart {
        lg_block: lg,
        div_blocks: [FastDiv::new(blocks(0) as u32), FastDiv::new(blocks(1) as u32)],
        ..Default::default()
    };
    (part, blocks(0) * blocks(1) * blocks(2))
}

/// A map of 2-byte elements at `addr`, 128-byte swizzle, of rank
/// `dims.len()` (3 or 5: the kernels' copy instructions name it): per
/// dimension `(elements, byte stride, box)`, dimension 0 contiguous (its
/// stride unused).
pub(crate) fn map(addr: u64, dims: &[(u64, u64, u32)]) -> TmaMap {
    let mut m = TmaMap {
        magic: TmaMap::MAGIC,
        rank: dims.len() as u32,
        base: addr,
        elem_bytes: 2,
        swizzle: 128,
        elem_strides: [1; 5],
        ..Default::default()
    };
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
