//! Depthwise backward-data by column strips ([`Op::BwdDataDepthwise`], the
//! device crate's `conv::bwd_data::depthwise`): threads run `(n, iz,
//! residue y, strip, residue x, run, vector)`, each keeping three rows of
//! accumulators and reading every `dy` row of its strip once.
//!
//! [`Op::BwdDataDepthwise`]: convgrad_types::instance::Op::BwdDataDepthwise

use super::direct::set_vectors;
use super::{DataCtx, LIMIT};
use crate::ops::classes::{tap_step, tilde};
use crate::ops::error::{OpError, Reason};
use crate::ops::lanes::lane_axis;
use crate::ops::request::Request;
use convgrad_types::DescError;
use convgrad_types::contract::bwd_data_direct::{HALO, RUN};
use convgrad_types::contract::depthwise_strips::{DEPTH, VW};
use convgrad_types::params::{ConvArgs, FastDiv, vec_mode};

/// What the family needs of a problem, in a few words.
pub const NEEDS: &str = "C = K = 1, channels-last, <= 3 taps per stride class along y";

/// Whether the strips take the request's problem, else the first need it
/// does not meet (one text for all of them).
pub fn fits(r: &Request<'_>) -> Result<(), Reason> {
    let p = r.p;
    let taps = |d: usize| p.filter[d].div_ceil(tilde(p, d));
    let span = (taps(2) - 1) * tap_step(p, 2);
    let checks = [
        (p.c == 1 && p.k == 1, "C", p.c.max(p.k)),
        (lane_axis(r.x, 0, VW) && lane_axis(r.dy, 0, VW), "G", p.g),
        (taps(0) == 1, "taps per stride class along z", taps(0)),
        (taps(1) <= DEPTH, "taps per stride class along y", taps(1)),
        (tap_step(p, 1) == 1, "tap step along y", tap_step(p, 1)),
        (span <= HALO, "x span", span),
    ];
    let Some(&(_, field, value)) = checks.iter().find(|c| !c.0) else { return Ok(()) };
    let allowed = format!(
        "C = K = 1, the groups innermost in dx and dy in runs of {VW} (a channels-last layout), at most 3 taps per \
         stride class along y one dy row apart, one along z, and an x span of at most {HALO} (use bwdd_direct_{})",
        r.types.name()
    );
    Err(Reason::Needs { kernel: "depthwise column strips", field, value: value as u64, allowed: allowed.into() })
}

/// The grid and the strips' argument part: the strips asked for, else
/// [`strip_count`]'s.
pub(crate) fn plan(c: &DataCtx<'_>, args: &mut ConvArgs) -> Result<[u32; 3], OpError> {
    let p = c.p;
    let vectors = (p.g / VW) as u64;
    let runs = c.slice_rows[2].div_ceil(RUN) as u64;
    let per_strip = vectors * runs * (p.strides[2] * p.strides[1] * p.n * p.input[0]) as u64;
    let round = c.inst.min_blocks() as u64 * c.compute_units.max(1) as u64;
    let (strips, rows) = match c.strip_rows {
        Some(r) => (c.slice_rows[1].div_ceil(r), r),
        None => strip_count(c.slice_rows[1], per_strip, c.inst.threads(c.family) as u64, round),
    };
    let threads = per_strip * strips as u64;
    args.strips.div_strips = FastDiv::new(strips as u32);
    args.strips.rows = rows as u32;
    if threads > LIMIT {
        return Err(OpError::Desc(DescError::TooLarge {
            field: "depthwise strip threads (G / 2 * runs * strips * N * D)",
            value: threads,
            max: LIMIT,
        }));
    }
    set_vectors(args, vec_mode::ON | vec_mode::DEPTHWISE | vec_mode::HALF, vectors, runs);
    Ok([(threads as u32).div_ceil(c.inst.threads(c.family)), 1, 1])
}

/// `(strips, rows per strip)` for `rows` slice rows, `per_strip` threads per
/// strip in workgroups of `block`, `round` workgroups resident at once: the
/// fewest strips that minimise rounds times steps per thread (rows + 2).
/// Long strips read fewer halo rows and fill fewer dropped slots; the
/// rounds count the tail (timings: docs/tuning-log.md, "kernel choice").
fn strip_count(rows: usize, per_strip: u64, block: u64, round: u64) -> (usize, usize) {
    let cost = |strips: usize| {
        let blocks = (per_strip * strips as u64).div_ceil(block);
        blocks.div_ceil(round) * (rows.div_ceil(strips) as u64 + 2)
    };
    let strips = (1..=rows.max(1)).min_by_key(|&s| cost(s)).unwrap_or(1);
    (strips, rows.div_ceil(strips).max(1))
}
