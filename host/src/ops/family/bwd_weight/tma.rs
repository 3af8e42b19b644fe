//! Backward-weight on TMA loads ([`Op::BwdWeightTma`],
//! the device crate's `conv::bwd_weight::tma`, Hopper). Both operands are
//! read as MN-major boxes of 64 channels by the tile's `bk` pixels:
//! - 1x1 filters without padding: `dY` and `X` as `(channels, G, M)`
//!   tensors (M the pixels of all images, evenly spaced, in order);
//! - 2-D filters with taps or strides: the reduction runs over blocks of
//!   `bk` output pixels ([`reduction`]), `dY` read as `(K, G, Wo, Ho, N)` at
//!   a block's corner and `X` as `(C, G, W, H, N)` at the corner times the
//!   stride shifted by the tap, its box reading every `stride`-th pixel
//!   (the map's element strides).
//!
//! The maps are encoded per call from the tensors' addresses ([`maps`]).
//! The grid, the split-K and the epilogue are the implicit GEMM's
//! ([`super::gemm`]).
//!
//! [`Op::BwdWeightTma`]: convgrad_types::instance::Op::BwdWeightTma

use crate::ops::error::Reason;
use crate::ops::family::tma::{aligned16, blocks_part, channels_map, channels_plain, check_base, map, plain_gemm, padded, pixel_block};
use crate::ops::request::Request;
use convgrad_types::instance::TileConfig;
use convgrad_types::params::{TmaMap, TmaPart};
use convgrad_types::{ConvProblem, TensorDesc};

/// What the family needs of a problem, in a few words.
pub const NEEDS: &str = "f16/bf16, K and C at least 64 and contiguous in dy and x with 16-byte strides; a 1x1 stride-1 filter without padding (pixels evenly spaced), or a 2-D problem with strides up to 8, C a multiple of 64 and C fastest in dw";

/// The family in words (the subject of "needs").
const KERNEL: &str = "TMA GEMM";

/// `Ok` where the tile runs the problem, else the first need not met.
pub fn fits(r: &Request<'_>, t: &TileConfig) -> Result<(), Reason> {
    let p = r.p;
    // The map reads a strided input with element strides of at most 8.
    let strides_ok = p.strides.iter().all(|&s| s <= 8);
    let plain = in_order(p);
    let flat = plain || (p.input[0] == 1 && p.filter[0] == 1);
    // Blocks of pixels: channels contiguous, 16-byte group, image, row and pixel strides.
    let blocks_ok = |d: &TensorDesc| d.strides[2] == 1 && aligned16(&[d.strides[0], d.strides[1], d.strides[4], d.strides[5]]);
    let (dy_ok, x_ok) = if plain { (channels_plain(r.dy), channels_plain(r.x)) } else { (blocks_ok(r.dy), blocks_ok(r.x)) };
    // Taps: a box of 64 columns lies in one tap, and dW's columns are (tap, channel).
    let taps_ok = plain || (p.c.is_multiple_of(64) && r.w.strides[2] == 1);
    let m = reduction(p, t);
    Reason::first_unmet(KERNEL, &[
        (strides_ok, "stride", p.strides.iter().copied().max().unwrap_or(1) as u64, "at most 8"),
        (flat, "filter", p.filter[0] as u64, "a 2-D problem (depth 1), or a 1x1 stride-1 filter without padding"),
        (r.types.act().bytes() == 2, "data type", r.types.act().bytes() as u64, "f16 or bf16 (2-byte) activations"),
        (dy_ok, "dy layout", 0, "K contiguous in dy, 16-byte pixel, image and group strides (1x1: pixels evenly spaced)"),
        (x_ok, "x layout", 0, "C contiguous in x, 16-byte pixel, image and group strides (1x1: pixels evenly spaced)"),
        // Each box holds 64 channels: fewer leave most of the tile idle.
        (p.k >= t.bm as usize / 2, "K", p.k as u64, "at least half the tile's rows (64)"),
        (p.c >= t.bn as usize / 2, "C", p.c as u64, "at least half the tile's columns (64)"),
        (taps_ok, "C", p.c as u64, "a multiple of 64 with C fastest in dw (filters with taps)"),
        (m < 1 << 31 && r.x.span() < 1 << 31 && r.dy.span() < 1 << 31, "GEMM reduction", m, "fewer than 2^31 pixels"),
    ])
}

/// `[Wo, Ho, N]` of `p`'s output.
fn output_grid(p: &ConvProblem) -> [usize; 3] {
    let o = p.output();
    [o[2], o[1], p.n]
}

/// Whether the reduction runs over the pixels in order: a 1x1 stride-1
/// filter without padding (else over blocks of output pixels).
pub(crate) fn in_order(p: &ConvProblem) -> bool {
    plain_gemm(p) && p.strides.iter().all(|&s| s == 1)
}

/// The block of `bk` output pixels of tile `t` on `p`: `x`'s box spans
/// `stride` input pixels per output pixel, at most 256.
fn block(p: &ConvProblem, t: &TileConfig) -> [u32; 3] {
    let cap = |s: usize| (256 / s.max(1)).ilog2();
    pixel_block(output_grid(p), t.bk.trailing_zeros(), [cap(p.strides[2]), cap(p.strides[1]), 8])
}

/// The reduction the kernel runs on tile `t`: the output pixels (1x1), or
/// them padded to whole blocks of `bk` ([`rows`]).
pub fn reduction(p: &ConvProblem, t: &TileConfig) -> u64 {
    if in_order(p) { p.n as u64 * p.output_pixels() } else { padded(output_grid(p), block(p, t)) }
}

/// The argument part of tile `t` on `p`: the blocks of output pixels (all
/// zero for the pixels in order).
pub fn rows(p: &ConvProblem, t: &TileConfig) -> TmaPart {
    if in_order(p) {
        return TmaPart::default();
    }
    blocks_part(output_grid(p), block(p, t)).0
}

/// The maps `[dY, X]` of a call with `dY` at `dy_addr` and `X` at `x_addr`
/// for tile `t` and the plan's blocks `rows`, or what is wrong with the
/// addresses.
pub fn maps(
    p: &ConvProblem,
    dy: &TensorDesc,
    x: &TensorDesc,
    t: &TileConfig,
    rows: &TmaPart,
    dy_addr: u64,
    x_addr: u64,
) -> Result<[TmaMap; 2], String> {
    check_base("dy", dy_addr)?;
    check_base("x", x_addr)?;
    if rows.lg_block == [0; 3] {
        let m = p.n as u64 * p.output_pixels();
        return Ok([channels_map(dy, dy_addr, m, [64, 1, t.bk]), channels_map(x, x_addr, m, [64, 1, t.bk])]);
    }
    let lg = rows.lg_block;
    // `steps`: input pixels per output pixel along W and H (x's element strides).
    let blocks = |d: &TensorDesc, addr: u64, ch: usize, steps: [usize; 2]| {
        let (s, l) = (&d.strides, &d.lengths);
        let b = |v: usize| 2 * v as u64;
        let mut m = map(addr, &[
            (ch as u64, 2, 64),
            (p.g as u64, b(s[0]), 1),
            (l[5] as u64, b(s[5]), (1 << lg[0]) * steps[0] as u32),
            (l[4] as u64, b(s[4]), (1 << lg[1]) * steps[1] as u32),
            (p.n as u64, b(s[1]), 1 << lg[2]),
        ]);
        m.elem_strides = [1, 1, steps[0] as u32, steps[1] as u32, 1];
        m
    };
    Ok([blocks(dy, dy_addr, p.k, [1, 1]), blocks(x, x_addr, p.c, [p.strides[2], p.strides[1]])])
}
