//! Backward-weight by tap shifts ([`Op::BwdWeightTapShift`]): few channels per
//! group (ResNeXt's 8 and 16), any stride along y and x.
//!
//! The backward-weight GEMM gathers `im2col(X)` once per tap: at C = K = 16
//! its 16x48 tiles read every `X` pixel nine times. Here a workgroup stages,
//! per tile of the padded grid ([`crate::conv::tap_grid`]), the `dY` pixels of
//! `halo_rows` image rows (zeros at grid positions past the image) and the
//! halo of `X` they reach, for [`TileConfig::waves_n`] groups, once. Filter
//! tap `(y, x)` then reads the `X` halo `y*d*Wp + x*d` rows further on:
//! `dW[tap] += dY^T X[shift(tap)..]`, `M = K`, `N = C`, the reduction over
//! the tile's grid rows. Wave `wn` owns group `g0 + wn` and keeps every
//! tap's accumulators; taps are spelled out (`unroll!`) so that they stay in
//! registers (a tap loop put them in local memory: 504 B on sm_90).
//!
//! At a stride ([`Op::BwdWeightTapShiftPhased`], `PHASED`) the `X` halo is one
//! phase grid at a time ([`crate::conv::tap_grid`]): the taps of a phase
//! multiply while dY stays staged, then the next phase's halo replaces it (a
//! 3x3 filter at stride 2: four halos of a quarter of the pixels each, so `X`
//! is read about once per group set, where the GEMM gathers a 16-byte run per
//! pixel and tap). Stride 1 is its own kernel without the per-tap phase
//! tests: with them, its bf16 build ran 19-27% slower on the H100, and one
//! kernel holding both loops spilled SGPRs on gfx90a (tuning-log 2026-11-26e).
//!
//! Grid: `x` = group sets, `z` = k-batches (runs of
//! [`TapShiftPart::tiles_per_batch`] of the [`TapShiftPart::tiles`] row
//! tiles). Each workgroup's sums leave as split-K partials, and the last
//! workgroup of a group set sums them and writes the set's weights (or its
//! sums go straight through the epilogue without split-K), as the direct
//! kernel's do.
//!
//! [`Op::BwdWeightTapShift`]: convgrad_types::instance::Op::BwdWeightTapShift
//! [`Op::BwdWeightTapShiftPhased`]: convgrad_types::instance::Op::BwdWeightTapShiftPhased
//! [`TapShiftPart::tiles_per_batch`]: convgrad_types::params::TapShiftPart::tiles_per_batch
//! [`TapShiftPart::tiles`]: convgrad_types::params::TapShiftPart::tiles

use crate::conv::filter_cols::{finish_tile, put_dw};
use crate::conv::tap_grid::{Grid, Staged, Window};
use crate::conv::load_args;
use crate::arch;
use crate::atom::{LdsTile, MmaAtom};
use crate::elem::Elem;
use crate::gemm::{RUN, Tile};
use crate::gemm::splitk::{self, PartialMode};
use crate::unroll::unroll;
use convgrad_types::instance::TileConfig;
use convgrad_types::params::ConvArgs;

const TAPS: usize = TileConfig::HALO_TAPS as usize;
// The tap blocks are spelled out (`unroll!` below).
const _: () = assert!(TAPS == 9);

/// Kernel body (module docs): `BM` grid rows per tile, `BK` the channels
/// `K` padded (`FR` atoms), `CP = BN / WN` ([`Tile::TN`]) the channels `C`
/// padded (`FC` atoms), one row of `WN` waves; `PHASED`: strides along y
/// and x (else stride 1 only).
///
/// # Safety
/// Launch contract of the instance (grid above, block, LDS) and a valid argument block.
#[inline(always)]
pub unsafe fn kernel<Tl: Tile, Out: Elem, const FR: usize, const FC: usize, const PHASED: bool>(args: *const ConvArgs) {
    // One row of waves; `FR` atoms span `K` (`Tl::BK`), `FC` atoms `C` (`Tl::TN`).
    const { assert!(Tl::WM == 1 && FC * Tl::At::N == Tl::TN && FR * Tl::At::M == Tl::BK) };
    const { assert!(Tl::BM.is_multiple_of(Tl::At::K)) };
    const { assert!(Tl::THREADS.is_multiple_of(Tl::BN / <Tl::In as Elem>::LANES) && Tl::TN.is_multiple_of(4)) };
    let a = unsafe { load_args(args) };
    let tile = Tl::CONFIG;
    let e = <Tl::In as Elem>::BYTES;
    let (lda, ldx) = (tile.halo_a_ld() as usize, tile.halo_x_ld() as usize);
    let x_base = Tl::BM * lda * e;
    let [gs, _, kb] = arch::block_id();
    let g0 = gs * Tl::WN as u32;
    let threads = Tl::THREADS;
    let tid = arch::thread_id() as usize;
    let (lane, wn) = (tid % Tl::At::WAVE, tid / Tl::At::WAVE);
    // Tap t is filter tap (t / X, t % X), read from its phase grid at its
    // shift; taps past the filter are in no phase (never stored; multiplied
    // at shift 0 by the stride-1 kernel, which has no phase tests).
    let taps = (a.filter[1] * a.filter[2]) as usize;
    let place = |t: usize| {
        let (y, x) = a.div_x.divmod(t as u32);
        if t < taps { (Grid::shift(a, y as usize, x as usize), Grid::phase(a, y as usize, x as usize)) } else { (0, u32::MAX) }
    };
    let places: [(usize, u32); TAPS] = core::array::from_fn(place);
    let (shifts, phase_of) = (places.map(|p| p.0), places.map(|p| p.1));
    // The phases some tap reads (one at stride 1), as a bit set.
    let used = phase_of.iter().fold(0u32, |m, &p| if p < 32 { m | 1 << p } else { m });
    let ta = LdsTile { base: wn * Tl::BK * e, ld: lda, mn_major: true };
    let tx = |t: usize| LdsTile { base: x_base + (shifts[t] * ldx + wn * Tl::TN) * e, ld: ldx, mn_major: true };
    let dy = Staged { p: a.dy as *const Tl::In, s: a.dy_strides, chans: a.k, g0, groups: a.g };
    let x = Staged { p: a.x as *const Tl::In, s: a.x_strides, chans: a.c, g0, groups: a.g };
    // dY at the grid positions of the tile's image rows; the X halo they
    // reach, from the top-left corner of the padding.
    let rows = a.tap_shift.halo_rows * a.tap_shift.div_halo[1].div;
    let dy_win = Window { step: [1, 1], add: [0, 0], hw: [a.output[1], a.output[2]], limit: rows };
    let x_limit = rows + Grid::max_shift(a);
    let mut acc = [[[<<Tl::At as MmaAtom>::C>::default(); FC]; FR]; TAPS];
    let first = kb * a.tap_shift.tiles_per_batch;
    let last = (first + a.tap_shift.tiles_per_batch).min(a.tap_shift.tiles);
    // (The host keeps strides to at most 4: 16 phases.)
    let phases = if PHASED { (a.stride[1] * a.stride[2]).min(32) } else { 1 };
    for t in first..last {
        let grid = Grid::tile(a, t);
        unsafe { dy.copy::<Tl>(a, &grid, dy_win, Tl::BK, Tl::BM, lda, 0, threads) };
        let mut ph = 0;
        while ph < phases {
            if !PHASED || used & (1 << ph) != 0 {
                let x_win = Grid::x_window(a, ph, x_limit);
                unsafe { x.copy::<Tl>(a, &grid, x_win, Tl::TN, Tl::BM + TileConfig::HALO_SLACK as usize, ldx, x_base, threads) };
                arch::cp_async_commit();
                arch::cp_async_wait(0);
                arch::barrier();
                let mut ks = 0;
                while ks < Tl::BM {
                    let af: [<Tl::At as MmaAtom>::A; FR] =
                        core::array::from_fn(|fr| unsafe { Tl::At::load_a(ta, fr * Tl::At::M, ks, lane) });
                    unroll!(tap in [0, 1, 2, 3, 4, 5, 6, 7, 8] => {
                        if !PHASED || phase_of[tap] == ph {
                            let bf: [<Tl::At as MmaAtom>::B; FC] = unsafe { Tl::At::load_b_frags(tx(tap), 0, ks, lane) };
                            for (fr, row) in acc[tap].iter_mut().enumerate() {
                                for (fc, c) in row.iter_mut().enumerate() {
                                    unsafe { Tl::At::mma(&af[fr], &bf[fc], c) };
                                }
                            }
                        }
                    });
                    ks += Tl::At::K;
                }
                // The next phase's or tile's copies overwrite what the waves read.
                arch::barrier();
            }
            ph += 1;
        }
    }
    // The sums leave through LDS (free after the last barrier): each lane
    // stores its fragments whole, in the order of `acc` (element-wise stores
    // got merged across fragments and kept the accumulators in scratch on
    // gfx942). Threads then take weights `(group, k, tap, c)` with `c`
    // fastest, finding each through the atom's `c_slot`: consecutive threads
    // put consecutive filter columns (a put per element was half of the
    // kernel's instructions on the H200).
    let frag = core::mem::size_of::<<Tl::At as MmaAtom>::C>();
    let frag_at = |gl: usize, tap: usize, fr: usize, fc: usize| (((gl * TAPS + tap) * FR + fr) * FC + fc) * Tl::At::WAVE * frag;
    unroll!(tap in [0, 1, 2, 3, 4, 5, 6, 7, 8] => {
        for (fr, row) in acc[tap].iter().enumerate() {
            for (fc, f) in row.iter().enumerate() {
                unsafe { arch::lds_st(frag_at(wn, tap, fr, fc) + lane * frag, *f) };
            }
        }
    });
    arch::barrier();
    // Runs of 4 channels of one tap: one 16-byte partial (the filter columns
    // are consecutive when C is the weights' innermost axis; C is a multiple
    // of 8), else element by element.
    let mode = splitk::mode(a);
    let quads = mode != PartialMode::Direct && a.w_strides[2] == 1;
    let mut idx = tid;
    while idx < Tl::WN * Tl::BK * TAPS * Tl::TN / 4 {
        let (r, c0) = (idx / (Tl::TN / 4), idx % (Tl::TN / 4) * 4);
        let (r, tap) = (r / TAPS, r % TAPS);
        let (gl, k) = (r / Tl::BK, r % Tl::BK);
        // Element c0 + l of the run, from LDS.
        let ld = |l: usize| -> f32 {
            let (ln, s) = Tl::At::c_slot(k % Tl::At::M, (c0 + l) % Tl::At::N);
            unsafe { arch::lds_ld(frag_at(gl, tap, k / Tl::At::M, (c0 + l) / Tl::At::N) + ln * frag + s * 4) }
        };
        let (g, k, c) = (g0 + gl as u32, k as u32, c0 as u32);
        if tap < taps && k < a.k && c < a.c && g < a.g {
            if quads {
                unsafe { splitk::put4(a, mode, kb, g, k, tap as u32 * a.c + c, [ld(0), ld(1), ld(2), ld(3)]) };
            } else {
                // Spelled out: a loop indexed the four loads in scratch.
                unroll!(l in [0, 1, 2, 3] => {
                    unsafe { put_dw::<Out>(a, kb, g, k, c + l as u32, tap as u32, ld(l)) };
                });
            }
        }
        idx += threads;
    }
    if unsafe { splitk::last_arrival(a, gs) } {
        unsafe { finish_set::<Tl, Out>(a, g0, threads as u32) }
    }
}

/// The last workgroup of group set `g0 ..` over the k-batches sums the
/// set's weights and writes them through the epilogue, a run of
/// [`RUN`] filter columns per thread and pass (element by element,
/// the finish's dependent loads made it the kernel's long pole).
///
/// # Safety
/// As the kernel, after [`splitk::last_arrival`] returned true for the set.
#[inline(always)]
unsafe fn finish_set<Tl: Tile, Out: Elem>(a: &ConvArgs, g0: u32, threads: u32) {
    let cols = a.gemm.n.next_multiple_of(RUN as u32);
    for g in g0..(g0 + Tl::WN as u32).min(a.g) {
        unsafe { finish_tile::<Out>(a, g, [0, 0], [a.k, cols], threads) };
    }
}
