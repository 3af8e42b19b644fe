//! Backward-data by tap shifts ([`Op::BwdDataTapShift`], the device crate's
//! `conv::bwd_data::tap_shift`): stride 1, few channels per group; the
//! result pixels are dx's on the padded grid of
//! [`tap_grid`](crate::ops::family::tap_grid), `waves_n` groups per workgroup.
//!
//! [`Op::BwdDataTapShift`]: convgrad_types::instance::Op::BwdDataTapShift

use super::DataCtx;
use crate::ops::error::Reason;
use crate::ops::family::tap_grid::{self, TapShiftFit};
use crate::ops::lanes::lane_axis;
use crate::ops::request::Request;
use convgrad_types::instance::TileConfig;
use convgrad_types::params::ConvArgs;

/// What the family needs of a problem, in a few words.
pub const NEEDS: &str = "stride 1, 1-tall z filter, <= 9 taps, K mult. of 8 <= 16, C <= 16, tap shift <= 64 rows";

/// The grid for tile `t`, or the first need the problem does not meet.
pub fn fits(r: &Request<'_>, t: &TileConfig) -> Result<TapShiftFit, Reason> {
    let p = r.p;
    let largest = *p.strides.iter().max().unwrap_or(&1) as u64;
    tap_grid::fit(p, t, p.input, &[
        (p.strides.iter().all(|&s| s == 1), "stride", largest, "stride 1 in every dim"),
        (p.k <= t.bk as usize && lane_axis(r.dy, 2, 8), "K", p.k as u64, "K a multiple of 8 up to the tile's, contiguous in dy"),
        (p.c <= (t.bn / t.waves_n) as usize, "C", p.c as u64, "C up to the tile's channels per group"),
        (r.dy.span() < 1 << 31, "tensor elements", r.dy.span(), "dy of fewer than 2^31 elements"),
    ])
}

/// The grid (row tiles, group sets), the tap-shift grid written.
pub(crate) fn plan(c: &DataCtx<'_>, f: &TapShiftFit, args: &mut ConvArgs) -> [u32; 3] {
    f.set(args);
    [f.tiles as u32, c.p.g.div_ceil(c.inst.tile.waves_n as usize) as u32, 1]
}
