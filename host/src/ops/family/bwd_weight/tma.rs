//! Backward-weight of 1x1 stride-1 layers as one plain GEMM on TMA loads
//! ([`Op::BwdWeightTma`], the device crate's `conv::bwd_weight::tma`,
//! Hopper): `dY` and `X` are read as `(channels, G, M)` tensors (M the
//! pixels of all images, evenly spaced), both as MN-major boxes of 64
//! channels by the tile's `bk` pixels; the maps are encoded per call from
//! the tensors' addresses ([`maps`]). The grid, the split-K and the
//! epilogue are the implicit GEMM's ([`super::gemm`]).
//!
//! [`Op::BwdWeightTma`]: convgrad_types::instance::Op::BwdWeightTma

use crate::ops::error::Reason;
use crate::ops::family::tma::{channels_map, channels_plain, check_base};
use crate::ops::request::Request;
use convgrad_types::instance::TileConfig;
use convgrad_types::params::TmaMap;
use convgrad_types::{ConvProblem, TensorDesc};

/// What the family needs of a problem, in a few words.
pub const NEEDS: &str = "1x1 filter, stride 1, no padding, f16/bf16, K and C contiguous in dy and x with 16-byte strides, pixels evenly spaced, K and C at least 64";

/// The family in words (the subject of "needs").
const KERNEL: &str = "TMA GEMM";

/// `Ok` where the tile runs the problem, else the first need not met.
pub fn fits(r: &Request<'_>, t: &TileConfig) -> Result<(), Reason> {
    let p = r.p;
    let one = p.filter.iter().all(|&f| f == 1);
    let plain = p.strides.iter().all(|&s| s == 1) && p.lpads.iter().all(|&v| v == 0) && p.rpads.iter().all(|&v| v == 0);
    let m = p.n as u64 * p.output_pixels();
    Reason::first_unmet(KERNEL, &[
        (one, "filter", p.filter.iter().product::<usize>() as u64, "a 1x1 filter"),
        (plain, "stride", p.strides.iter().copied().max().unwrap_or(1) as u64, "stride 1, no padding"),
        (r.types.act().bytes() == 2, "data type", r.types.act().bytes() as u64, "f16 or bf16 (2-byte) activations"),
        (channels_plain(r.dy), "dy layout", 0, "K contiguous in dy, 16-byte pixel and group strides, pixels evenly spaced"),
        (channels_plain(r.x), "x layout", 0, "C contiguous in x, 16-byte pixel and group strides, pixels evenly spaced"),
        // Each box holds 64 channels: fewer leave most of the tile idle.
        (p.k >= t.bm as usize / 2, "K", p.k as u64, "at least half the tile's rows (64)"),
        (p.c >= t.bn as usize / 2, "C", p.c as u64, "at least half the tile's columns (64)"),
        (m < 1 << 31 && r.x.span() < 1 << 31 && r.dy.span() < 1 << 31, "GEMM reduction", m, "fewer than 2^31 pixels"),
    ])
}

/// The maps `[dY, X]` of a call with `dY` at `dy_addr` and `X` at `x_addr`
/// for tile `t`, or what is wrong with the addresses.
pub fn maps(p: &ConvProblem, dy: &TensorDesc, x: &TensorDesc, t: &TileConfig, dy_addr: u64, x_addr: u64) -> Result<[TmaMap; 2], String> {
    check_base("dy", dy_addr)?;
    check_base("x", x_addr)?;
    let m = p.n as u64 * p.output_pixels();
    Ok([channels_map(dy, dy_addr, m, [64, 1, t.bk]), channels_map(x, x_addr, m, [64, 1, t.bk])])
}
