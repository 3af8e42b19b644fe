//! Backward-data's direct kernel ([`Op::BwdDataDirect`], the device crate's
//! `conv::bwd_data::direct`) for tiny per-group GEMMs. Any problem fits.
//! Where the layout has channel vectors, threads run `(n, iz, iy, residue
//! x, run of RUN slice positions, channel vector)`; else one thread per
//! element of dx.
//!
//! [`Op::BwdDataDirect`]: convgrad_types::instance::Op::BwdDataDirect

use super::{DataCtx, LIMIT};
use crate::ops::lanes::{direct_vec_mode, lane_axis};
use convgrad_types::contract::bwd_data_direct::{KV, RUN};
use convgrad_types::params::{ConvArgs, FastDiv, vec_mode};

/// What the family needs of a problem, in a few words.
pub const NEEDS: &str = "any problem (channel vectors where channels-last)";

/// The grid, the channel-vector mode written where it runs.
pub(crate) fn plan(c: &DataCtx<'_>, args: &mut ConvArgs) -> [u32; 3] {
    let threads = c.inst.threads(c.family);
    match vectors(c) {
        Some((mode, vectors, runs, n)) => {
            set_vectors(args, mode, vectors, runs);
            [(n as u32).div_ceil(threads), 1, 1]
        }
        None => [(c.total as u32).div_ceil(threads), 1, 1],
    }
}

/// `(mode, channel vectors, runs per slice row, threads)` of the vector
/// path. Channel lanes read their weights as one vector too (else the
/// scalar path runs: a gather beside the vector load in the kernel made
/// LLVM merge both into 2-byte loads).
fn vectors(c: &DataCtx<'_>) -> Option<(u32, u64, u64, u64)> {
    let p = c.p;
    let (mode, vw) = direct_vec_mode(p, c.types.act().bytes(), c.dx, c.dy)?;
    if mode & vec_mode::DEPTHWISE == 0 && !lane_axis(c.w, 2, vw) {
        return None;
    }
    let lanes = mode & vec_mode::DEPTHWISE == 0;
    let kvec = if lanes && lane_axis(c.dy, 2, KV) { vec_mode::DY_KVEC } else { 0 };
    let vectors = (p.g * p.c / vw) as u64;
    let runs = c.slice_rows[2].div_ceil(RUN) as u64;
    let threads = vectors * runs * p.strides[2] as u64 * (p.n * p.input[0] * p.input[1]) as u64;
    (threads <= LIMIT).then_some((mode | kvec, vectors, runs, threads))
}

/// Writes the direct kernels' vector part (shared with the depthwise strips).
pub(crate) fn set_vectors(args: &mut ConvArgs, mode: u32, vectors: u64, runs: u64) {
    args.direct.vec_mode = mode;
    args.direct.div_vec = FastDiv::new(vectors as u32);
    args.direct.div_runs = FastDiv::new(runs as u32);
}
