//! Backward-data by tap shifts over row segments ([`Op::BwdDataRows`], the
//! device crate's `conv::bwd_data::rows`): tiles of `bm / 64` image rows by
//! 64 pixels, walked by persistent workgroups that keep one group's filter
//! for `bn` input channels in LDS.
//!
//! [`Op::BwdDataRows`]: convgrad_types::instance::Op::BwdDataRows

use super::DataCtx;
use crate::ops::error::{Check, Reason};
use crate::ops::lanes::lane_axis;
use crate::ops::request::Request;
use convgrad_types::ConvProblem;
use convgrad_types::contract::bwd_data_rows::SEG as ROW_SEGMENT;
use convgrad_types::instance::TileConfig;
use convgrad_types::params::{ConvArgs, FastDiv};

/// What the family needs of a problem, in a few words.
pub const NEEDS: &str = "stride 1, 1-tall z filter, <= 9 taps, K mult. of 8 <= 64 contiguous in dy, halo of <= 288 pixels";

/// How a problem falls into row-segment tiles.
#[derive(Clone, Copy, Debug)]
pub struct RowFit {
    /// Image rows per tile.
    pub rows: usize,
    /// 64-pixel segments per image row.
    pub segs: usize,
    /// Bands of `rows` image rows per image.
    pub bands: usize,
    /// Tiles over all images.
    pub tiles: usize,
}

/// The tiling for tile `t`, or the first need the problem does not meet.
pub fn fits(r: &Request<'_>, t: &TileConfig) -> Result<RowFit, Reason> {
    let p = r.p;
    let pad = |d: usize| (p.filter[d] - 1) * p.dilations[d];
    let rows = t.bm as usize / ROW_SEGMENT;
    let lines = (rows + pad(1)) * (ROW_SEGMENT + pad(2));
    let segs = p.input[2].div_ceil(ROW_SEGMENT);
    let bands = p.input[1].div_ceil(rows);
    let tiles = (p.n * p.input[0]) as u64 * bands as u64 * segs as u64;
    let largest = *p.strides.iter().max().unwrap_or(&1) as u64;
    let taps = p.filter[1] * p.filter[2];
    let checks: [Check; 7] = [
        (p.strides.iter().all(|&s| s == 1), "stride", largest, "stride 1 in every dim"),
        (p.filter[0] == 1 && p.lpads[0] == 0 && p.rpads[0] == 0, "z filter", p.filter[0] as u64, "a 1-tall, unpadded z filter"),
        (taps <= TileConfig::HALO_TAPS as usize, "filter taps", taps as u64, "at most 9 filter taps"),
        (
            lines <= TileConfig::ROW_HALO_LINES as usize,
            "halo pixels",
            lines as u64,
            "a halo ((rows + (Y-1) * dil) x (64 + (X-1) * dil)) of at most 288 pixels",
        ),
        (p.k <= t.bk as usize && lane_axis(r.dy, 2, 8), "K", p.k as u64, "K a multiple of 8 up to 64, contiguous in dy"),
        (r.dy.span() < 1 << 31, "tensor elements", r.dy.span(), "dy of fewer than 2^31 elements"),
        (tiles < 1 << 31, "tiles", tiles, "fewer than 2^31 tiles"),
    ];
    Reason::first_unmet("row segments", &checks)?;
    Ok(RowFit { rows, segs, bands, tiles: tiles as usize })
}

impl RowFit {
    /// Stores the tiling in the argument block, `workgroups` walking it.
    pub fn set(&self, args: &mut ConvArgs, workgroups: u32) {
        args.tap_shift.halo_rows = self.rows as u32;
        args.tap_shift.tiles = self.tiles as u32;
        args.tap_shift.tiles_per_batch = workgroups;
        args.tap_shift.div_halo = [FastDiv::new(self.segs as u32), FastDiv::new(self.bands as u32)];
    }
    /// Whether the hand rules take it over the slice GEMM, as measured on
    /// the H200 (docs/tuning-log.md, 2026-11-26c): at least 48 output
    /// channels (the halo stages 64; at 16-32 the GEMM was 1.2-2x faster),
    /// at most two 64-channel column tiles (each stages the halo again: at
    /// 256 channels the GEMM was 1.3x faster), at most 1/5 of the computed
    /// pixels past the image (ResNet-50's 56-pixel rows compute 64: 1.4x
    /// faster still), and tiles for two rounds of the GPU's resident
    /// workgroups.
    pub fn rows_worth(&self, p: &ConvProblem, compute_units: u32) -> bool {
        let computed = (self.segs * ROW_SEGMENT * self.bands * self.rows) as u64;
        let real = (p.input[1] * p.input[2]) as u64;
        computed * 5 <= real * 6 && p.k >= 48 && p.c <= 128 && self.tiles as u64 >= 4 * compute_units as u64
    }
}

/// The grid: persistent workgroups (as many as stay resident, each walking
/// tiles), column tiles of `bn` channels, groups; the tiling written.
pub(crate) fn plan(c: &DataCtx<'_>, f: &RowFit, args: &mut ConvArgs) -> [u32; 3] {
    let resident = c.inst.resident_per_cu(c.family) as usize * c.compute_units.max(1) as usize;
    let workgroups = f.tiles.min(resident) as u32;
    f.set(args, workgroups);
    [workgroups, c.p.c.div_ceil(c.inst.tile.bn as usize) as u32, c.p.g as u32]
}
