//! Backward-data of stride-1 2-D layers on TMA loads ([`Op::BwdDataTma`],
//! the device crate's `conv::bwd_data::tma`, Hopper). Two row orders:
//! - 1x1 filters without padding (any spatial rank): one plain GEMM over
//!   the pixels in order; `dY` read as a `(K, G, M)` tensor (M the pixels
//!   of all images, evenly spaced) and `W` as `(C, K, G)`;
//! - any other 2-D filter, padding and dilation: each tile's rows are a
//!   block of pixels ([`block`]), its A slab for a tap one box of `dY` as
//!   `(K, G, Wo, Ho, N)`; `W` is read as `(C, X, Y, K, G)`.
//!
//! The maps are encoded per call from the tensors' addresses ([`maps`]);
//! the epilogue is the slice GEMM's ([`super::gemm`]).
//!
//! [`Op::BwdDataTma`]: convgrad_types::instance::Op::BwdDataTma

use super::{DataCtx, LIMIT};
use crate::ops::error::{OpError, Reason};
use crate::ops::family::tma::{aligned16, blocks_part, channels_map, channels_plain, check_base, map, padded, pixel_block, plain_gemm};
use crate::ops::request::Request;
use convgrad_types::DescError;
use convgrad_types::instance::TileConfig;
use convgrad_types::params::{ConvArgs, TmaMap, TmaPart};
use convgrad_types::{ConvProblem, TensorDesc};

/// What the family needs of a problem, in a few words.
pub const NEEDS: &str = "stride 1, f16/bf16, C at least 64, K and C contiguous with 16-byte strides; a 1x1 filter without padding, or a 2-D problem";

/// The family in words (the subject of "needs").
const KERNEL: &str = "TMA GEMM";

/// `Ok` where the tile runs the problem, else the first need not met.
pub fn fits(r: &Request<'_>, w: &TensorDesc, t: &TileConfig) -> Result<(), Reason> {
    let p = r.p;
    let (dy, x) = (r.dy, r.x);
    let unit = p.strides.iter().all(|&s| s == 1);
    let plain = plain_gemm(p);
    // The pixel blocks: depth 1 (a map has five dimensions: K, G, W, H, N).
    let flat = plain || (p.input[0] == 1 && p.filter[0] == 1);
    let dy_ok = if plain {
        channels_plain(dy)
    } else {
        dy.strides[2] == 1 && aligned16(&[dy.strides[0], dy.strides[1], dy.strides[4], dy.strides[5]])
    };
    let w_ok = w.strides[2] == 1 && aligned16(&[w.strides[0], w.strides[1], w.strides[4], w.strides[5]]);
    let m = if plain { p.n as u64 * p.input_pixels() } else { padded_pixels(p, block(p, t.bm)) };
    Reason::first_unmet(KERNEL, &[
        (unit, "stride", p.strides.iter().copied().max().unwrap_or(1) as u64, "stride 1"),
        (flat, "filter", p.filter[0] as u64, "a 2-D problem (depth 1), or a 1x1 filter without padding"),
        (r.types.act().bytes() == 2, "data type", r.types.act().bytes() as u64, "f16 or bf16 (2-byte) activations"),
        (dy_ok, "dy layout", 0, "K contiguous in dy, 16-byte pixel, image and group strides (1x1: pixels evenly spaced)"),
        (w_ok, "w layout", 0, "C contiguous in w, 16-byte tap, K and group strides"),
        (p.c >= t.bn as usize / 2, "C", p.c as u64, "at least half the tile's channels (64)"),
        (m < 1 << 31 && x.span() < 1 << 31 && dy.span() < 1 << 31, "GEMM M", m, "fewer than 2^31 pixels"),
    ])
}

/// The pixel block of a tile of `bm` rows for `p`'s input ([`pixel_block`]).
/// ResNet-50's 56, 28, 14 and 7 pixel layers at batch 64: `8x8x2`,
/// `4x4x8`, `2x2x32`, `8x1x16` (the last pads 7 columns to 8 only).
pub fn block(p: &ConvProblem, bm: u32) -> [u32; 3] {
    pixel_block(input_grid(p), bm.trailing_zeros(), [8; 3])
}

/// `[W, H, N]` of `p`'s input.
fn input_grid(p: &ConvProblem) -> [usize; 3] {
    [p.input[2], p.input[1], p.n]
}

fn padded_pixels(p: &ConvProblem, lg: [u32; 3]) -> u64 {
    padded(input_grid(p), lg)
}

/// The argument part and the grid of `c` (the common block's GEMM rows and
/// tiles replaced by the pixel blocks' where the filter has taps).
pub(crate) fn plan(c: &DataCtx<'_>, args: &mut ConvArgs) -> Result<[u32; 3], OpError> {
    let (p, t) = (c.p, &c.inst.tile);
    if !plain_gemm(p) {
        let (part, tiles_m) = blocks_part(input_grid(p), block(p, t.bm));
        let tiles = tiles_m * c.tiles_n as u64;
        if tiles > LIMIT {
            return Err(OpError::Desc(DescError::TooLarge { field: "GEMM tiles (grid x)", value: tiles, max: LIMIT }));
        }
        args.gemm.m = (tiles_m * t.bm as u64) as u32;
        args.gemm.tiles_m = tiles_m as u32;
        args.tma_rows = TmaPart { k_pad: (p.k as u32).div_ceil(t.bk) * t.bk, ..part };
    }
    Ok([args.gemm.tiles_m * c.tiles_n, 1, p.g as u32])
}

/// The maps `[dY, W]` of a call with `dY` at `dy_addr` and `W` at `w_addr`
/// for tile `t` and the plan's part `rows`, or what is wrong with the
/// addresses (TMA reads from 16-byte aligned bases).
pub fn maps(
    p: &ConvProblem,
    dy: &TensorDesc,
    w: &TensorDesc,
    t: &TileConfig,
    rows: &TmaPart,
    dy_addr: u64,
    w_addr: u64,
) -> Result<[TmaMap; 2], String> {
    check_base("dy", dy_addr)?;
    check_base("w", w_addr)?;
    let (ws, wl) = (&w.strides, &w.lengths);
    let b = |s: usize| 2 * s as u64;
    if rows.k_pad == 0 {
        let m = p.n as u64 * p.input_pixels();
        let dy_map = channels_map(dy, dy_addr, m, [t.bk, 1, t.bm]);
        let w_map = map(w_addr, &[(p.c as u64, 2, 64), (p.k as u64, b(ws[1]), t.bk), (p.g as u64, b(ws[0]), 1)]);
        return Ok([dy_map, w_map]);
    }
    let (ds, dl, lg) = (&dy.strides, &dy.lengths, &rows.lg_block);
    let dy_map = map(dy_addr, &[
        (p.k as u64, 2, t.bk),
        (p.g as u64, b(ds[0]), 1),
        (dl[5] as u64, b(ds[5]), 1 << lg[0]),
        (dl[4] as u64, b(ds[4]), 1 << lg[1]),
        (p.n as u64, b(ds[1]), 1 << lg[2]),
    ]);
    let w_map = map(w_addr, &[
        (p.c as u64, 2, 64),
        (wl[5] as u64, b(ws[5]), 1),
        (wl[4] as u64, b(ws[4]), 1),
        (p.k as u64, b(ws[1]), t.bk),
        (p.g as u64, b(ws[0]), 1),
    ]);
    Ok([dy_map, w_map])
}
