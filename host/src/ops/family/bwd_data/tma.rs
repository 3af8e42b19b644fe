//! Backward-data of 1x1 stride-1 layers as one plain GEMM on TMA loads
//! ([`Op::BwdDataTma`], the device crate's `conv::bwd_data::tma`, Hopper):
//! `dY` is read as a `(K, G, M)` tensor (M the pixels of all images, evenly
//! spaced) and `W` as `(C, K, G)`; the maps are encoded per call from the
//! tensors' addresses ([`maps`]). The grid and the epilogue are the slice
//! GEMM's ([`super::gemm`]).
//!
//! [`Op::BwdDataTma`]: convgrad_types::instance::Op::BwdDataTma

use crate::ops::error::Reason;
use crate::ops::request::Request;
use convgrad_types::instance::TileConfig;
use convgrad_types::params::TmaMap;
use convgrad_types::{ConvProblem, TensorDesc};
use crate::ops::family::tma::{aligned16, channels_map, channels_plain, check_base};

/// What the family needs of a problem, in a few words.
pub const NEEDS: &str = "1x1 filter, stride 1, no padding, f16/bf16, K and C contiguous with 16-byte strides, dy's pixels evenly spaced";

/// The family in words (the subject of "needs").
const KERNEL: &str = "TMA GEMM";

/// `Ok` where the tile runs the problem, else the first need not met.
pub fn fits(r: &Request<'_>, w: &TensorDesc, t: &TileConfig) -> Result<(), Reason> {
    let p = r.p;
    let (dy, x) = (r.dy, r.x);
    let one = p.filter.iter().all(|&f| f == 1);
    let plain = p.strides.iter().all(|&s| s == 1) && p.lpads.iter().all(|&v| v == 0) && p.rpads.iter().all(|&v| v == 0);
    let dy_ok = channels_plain(dy);
    let w_ok = w.strides[2] == 1 && aligned16(&[w.strides[0], w.strides[1]]);
    let m = p.n as u64 * p.input_pixels();
    Reason::first_unmet(KERNEL, &[
        (one, "filter", p.filter.iter().product::<usize>() as u64, "a 1x1 filter"),
        (plain, "stride", p.strides.iter().copied().max().unwrap_or(1) as u64, "stride 1, no padding"),
        (r.types.act().bytes() == 2, "data type", r.types.act().bytes() as u64, "f16 or bf16 (2-byte) activations"),
        (dy_ok, "dy layout", 0, "K contiguous in dy, 16-byte pixel and group strides, pixels evenly spaced"),
        (w_ok, "w layout", 0, "C contiguous in w, 16-byte K and group strides"),
        (p.c >= t.bn as usize / 2, "C", p.c as u64, "at least half the tile's channels (64)"),
        (m < 1 << 31 && x.span() < 1 << 31, "GEMM M", m, "fewer than 2^31 pixels"),
    ])
}

/// The maps `[dY, W]` of a call with `dY` at `dy_addr` and `W` at `w_addr`
/// for tile `t`, or what is wrong with the addresses (TMA reads from
/// 16-byte aligned bases).
pub fn maps(p: &ConvProblem, dy: &TensorDesc, w: &TensorDesc, t: &TileConfig, dy_addr: u64, w_addr: u64) -> Result<[TmaMap; 2], String> {
    check_base("dy", dy_addr)?;
    check_base("w", w_addr)?;
    let m = p.n as u64 * p.input_pixels();
    let dy_map = channels_map(dy, dy_addr, m, [t.bk, 1, t.bm]);
    let ws = &w.strides;
    let w_map = TmaMap {
        magic: TmaMap::MAGIC,
        rank: 3,
        base: w_addr,
        dims: [p.c as u32, p.k as u32, p.g as u32, 1, 1],
        elem_bytes: 2,
        strides: [2 * ws[1] as u64, 2 * ws[0] as u64, 0, 0],
        boxes: [64, t.bk, 1, 1, 1],
        swizzle: 128,
    };
    Ok([dy_map, w_map])
}
