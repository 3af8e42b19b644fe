//! Where a tap-shift kernel (the device crate's `conv::tap_grid`) puts a
//! problem: the result pixels on a grid padded by the dilated filter, tiles
//! of whole padded rows, each tap a row shift of the staged halo. Shared by
//! backward-weight's and backward-data's tap shifts.

use crate::ops::error::{Check, Reason};
use convgrad_types::ConvProblem;
use convgrad_types::instance::TileConfig;
use convgrad_types::params::{ConvArgs, FastDiv};

/// How a problem falls onto a tap-shift grid: `rows` image rows per tile.
#[derive(Clone, Copy, Debug)]
pub struct TapShiftFit {
    /// Image rows per tile.
    pub rows: usize,
    /// Grid rows per image.
    pub hp: usize,
    /// Grid row length.
    pub wp: usize,
    /// Tiles over all images.
    pub tiles: usize,
}

impl TapShiftFit {
    /// Stores the grid in the argument block.
    pub fn set(&self, args: &mut ConvArgs) {
        args.tap_shift.halo_rows = self.rows as u32;
        args.tap_shift.div_halo = [FastDiv::new(self.hp as u32), FastDiv::new(self.wp as u32)];
    }
}

/// The grid of `p` for tile `t`, `pixels` being the result pixels the tile
/// rows walk (dy's for backward-weight, dx's for backward-data), or the
/// first need it does not meet (the op's own `extra` needs first).
pub(crate) fn fit(p: &ConvProblem, t: &TileConfig, pixels: [usize; 3], extra: &[Check]) -> Result<TapShiftFit, Reason> {
    // Grid steps of the dilated filter: its extent at stride 1, phase grid
    // steps at a stride (backward-weight; the device's `conv::tap_grid`).
    let pad = |d: usize| (p.filter[d] - 1) * p.dilations[d] / p.strides[d];
    let (hp, wp) = (pixels[1] + pad(1), pixels[2] + pad(2));
    let shift = pad(1) * wp + pad(2);
    let images = p.n * pixels[0];
    let taps = p.filter[1] * p.filter[2];
    let common: [Check; 5] = [
        (p.filter[0] == 1 && p.lpads[0] == 0 && p.rpads[0] == 0, "z filter", p.filter[0] as u64, "a 1-tall, unpadded z filter"),
        (taps <= TileConfig::HALO_TAPS as usize, "filter taps", taps as u64, "at most 9 filter taps"),
        (wp <= t.bm as usize, "padded row", wp as u64, "a padded row (W + (X-1) * dilation) of at most the tile's rows"),
        (
            shift <= TileConfig::HALO_SLACK as usize,
            "tap shift",
            shift as u64,
            "a largest tap shift ((Y-1) * dil / stride * padded row + (X-1) * dil / stride) of at most 64 rows",
        ),
        ((images as u64 * hp as u64) < (1 << 31), "padded image rows", images as u64 * hp as u64, "fewer than 2^31 padded image rows"),
    ];
    Reason::first_unmet("tap shifts", extra)?;
    Reason::first_unmet("tap shifts", &common)?;
    // Tiles may straddle images: small images share one.
    let rows = t.bm as usize / wp;
    Ok(TapShiftFit { rows, hp, wp, tiles: (images * hp).div_ceil(rows) })
}
