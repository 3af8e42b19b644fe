//! Backward-weight by tap shifts ([`Op::BwdWeightTapShift`], and
//! [`Op::BwdWeightTapShiftPhased`] at strides; the device crate's
//! `conv::bwd_weight::tap_shift`): few channels per group, the result
//! pixels are dy's on the padded grid of [`tap_grid`](crate::ops::family::tap_grid),
//! `waves_n` groups per workgroup, split-K over the row tiles.
//!
//! [`Op::BwdWeightTapShiftPhased`]: convgrad_types::instance::Op::BwdWeightTapShiftPhased
//! [`Op::BwdWeightTapShift`]: convgrad_types::instance::Op::BwdWeightTapShift

use super::{WeightCtx, WeightLaunch, check_partials};
use crate::ops::error::{OpError, Reason};
use crate::ops::family::tap_grid::{self, TapShiftFit};
use crate::ops::lanes::lane_axis;
use crate::ops::request::Request;
use crate::ops::split::tap_shift_split;
use convgrad_types::instance::TileConfig;
use convgrad_types::params::{ConvArgs, FastDiv};

/// What [`Op::BwdWeightTapShift`] needs of a problem, in a few words.
pub const NEEDS: &str =
    "stride 1, 1-tall z filter, <= 9 taps, C, K mult. of 8 <= 16, channels-last, tap shift <= 64 rows";
/// What [`Op::BwdWeightTapShiftPhased`] needs of a problem, in a few words.
pub const NEEDS_PHASED: &str = "a stride of 2-4 along y or x (1 along z), 1-tall z filter, <= 9 taps, C, K mult. of 8 <= 16, channels-last, tap shift <= 64 rows";

/// The grid for tile `t` (`phased`: the strided kernel), or the first need
/// the problem does not meet.
pub fn fits(r: &Request<'_>, t: &TileConfig, phased: bool) -> Result<TapShiftFit, Reason> {
    let p = r.p;
    let (y, x) = (p.strides[1], p.strides[2]);
    let largest = *p.strides.iter().max().unwrap_or(&1) as u64;
    let stride = if phased {
        (
            p.strides[0] == 1 && y <= 4 && x <= 4 && y * x > 1,
            "stride",
            largest,
            "stride 1 along z, at most 4 along y and x and above 1 along one (stride 1 takes bwdw_halo_*)",
        )
    } else {
        (p.strides.iter().all(|&s| s == 1), "stride", largest, "stride 1 in every dim (strides take bwdw_halo_phased_*)")
    };
    let channels = (t.bn / t.waves_n) as usize;
    let span = r.x.span().max(r.dy.span());
    tap_grid::fit(p, t, p.output(), &[
        stride,
        (p.k <= t.bk as usize && lane_axis(r.dy, 2, 8), "K", p.k as u64, "K a multiple of 8 up to the tile's, contiguous in dy"),
        (
            p.c <= channels && lane_axis(r.x, 2, 8),
            "C",
            p.c as u64,
            "C a multiple of 8 up to the tile's channels per group, contiguous in x",
        ),
        (r.x.span() < 1 << 31 && r.dy.span() < 1 << 31, "tensor elements", span, "x and dy of fewer than 2^31 elements"),
    ])
}

/// The launch: `waves_n` groups per workgroup along grid x, k-batches of
/// row tiles along grid z ([`tap_shift_split`]), one arrival counter per
/// workgroup along x.
pub(crate) fn plan(c: &WeightCtx<'_>, f: &TapShiftFit, args: &mut ConvArgs) -> Result<WeightLaunch, OpError> {
    let (p, t) = (c.p, c.inst.tile);
    let sets = p.g.div_ceil(t.waves_n as usize);
    let (k_batch, per_batch) = tap_shift_split(f.tiles, sets, c.split_k, c.inst.min_blocks(), c.compute_units);
    check_partials(c.weights(), k_batch)?;
    args.gemm.k_batch = k_batch;
    args.gemm.k_per_batch = 0;
    f.set(args);
    args.tap_shift.tiles = f.tiles as u32;
    args.tap_shift.tiles_per_batch = per_batch;
    args.div_in[0] = FastDiv::new(p.input[0] as u32);
    let grid = [sets as u32, 1, k_batch];
    Ok(WeightLaunch { k_batch, grid, counters: grid[0] as usize })
}

/// Whether the automatic split leaves every workgroup at least two row
/// tiles of `f` on tile `t` (the hand rules prefer tap shifts then).
pub(crate) fn two_tiles_per_split(f: &TapShiftFit, t: &TileConfig, g: usize, per_cu: u32, compute_units: u32) -> bool {
    let sets = g.div_ceil(t.waves_n as usize);
    tap_shift_split(f.tiles, sets, crate::ops::split::SplitK::Auto, per_cu, compute_units).1 >= 2
}
