//! The multistage main loop (NVIDIA sm_80+; CUTLASS calls it "multistage").
//!
//! `STAGES` K-slabs are in flight. Right after the barrier that opens step
//! `s`, each thread issues the asynchronous copies (`cp.async`) of step
//! `s + STAGES - 1` into the slab that step `s - 1` has just finished
//! reading, then multiplies slab `s`: global latency hides behind
//! `STAGES - 1` multiplies and nothing waits in registers (holding loads in
//! registers across the multiply spilled, see the README).
//!
//! Each operand keeps its global layout in LDS, so every copy is a straight
//! 16-byte move:
//! - vectors along rows (`vec_ok`, e.g. channels): a row-contiguous slab
//!   `[BK][ROWS + PAD]`, read by the atom with `ldmatrix.trans`;
//! - vectors along k (`k_vec_ok`, e.g. `dY` in backward-data): a
//!   K-contiguous slab `[ROWS][BK + PAD]`, read with plain `ldmatrix`;
//! - neither: element copies (synchronous) into a K-contiguous slab.
//!
//! The padding puts the eight 16-byte rows of every `ldmatrix` matrix in
//! different banks in both layouts.

use super::block::{ElementSlab, KROWS, KRows};
use super::warp::{self, Acc};
use super::{BlockRange, Operand};
use crate::arch;
use crate::atom::{LdsTile, MmaAtom};
use crate::elem::Elem;
use convgrad_types::instance::TileConfig;

const PAD: usize = TileConfig::LDS_PAD as usize;

/// Runs the main loop for `range` and returns this lane's accumulators.
///
/// # Safety
/// All threads of the workgroup must call it (barriers); the launch must
/// provide `stages * stage_bytes` of LDS ([`TileConfig::stage_bytes`]).
#[inline(always)]
pub unsafe fn run<
    At: MmaAtom,
    A: Operand<T = At::In>,
    B: Operand<T = At::In>,
    const BM: usize,
    const BN: usize,
    const BK: usize,
    const WM: usize,
    const WN: usize,
    const FR: usize,
    const FC: usize,
>(
    a: &A,
    b: &B,
    r: BlockRange,
) -> Acc<At, FR, FC> {
    let threads = WM * WN * At::WAVE;
    let amn = a.rows_fast() && a.vec_ok() && mn_fits::<At::In, BM, BK>(threads);
    let bmn = b.rows_fast() && b.vec_ok() && mn_fits::<At::In, BN, BK>(threads);
    // The slab layouts are compile-time: fragment loads take no branches.
    unsafe {
        match (amn, bmn) {
            (true, true) => main::<At, A, B, BM, BN, BK, WM, WN, FR, FC, true, true>(a, b, r),
            (true, false) => main::<At, A, B, BM, BN, BK, WM, WN, FR, FC, true, false>(a, b, r),
            (false, true) => main::<At, A, B, BM, BN, BK, WM, WN, FR, FC, false, true>(a, b, r),
            (false, false) => main::<At, A, B, BM, BN, BK, WM, WN, FR, FC, false, false>(a, b, r),
        }
    }
}

/// Whether a `ROWS x BK` slab moves as 16-byte row vectors in whole passes:
/// `threads / BK` threads share each reduction index (one column context per
/// thread and step), each keeping up to `KROWS` vector slots (row contexts
/// computed once).
const fn mn_fits<T: Elem, const ROWS: usize, const BK: usize>(threads: usize) -> bool {
    let slots = ROWS / T::LANES;
    let per_k = threads / BK;
    ROWS.is_multiple_of(T::LANES)
        && threads.is_multiple_of(BK)
        && per_k > 0
        && slots.is_multiple_of(per_k)
        && slots / per_k <= KROWS
}

#[inline(always)]
unsafe fn main<
    At: MmaAtom,
    A: Operand<T = At::In>,
    B: Operand<T = At::In>,
    const BM: usize,
    const BN: usize,
    const BK: usize,
    const WM: usize,
    const WN: usize,
    const FR: usize,
    const FC: usize,
    const AMN: bool,
    const BMN: bool,
>(
    a: &A,
    b: &B,
    r: BlockRange,
) -> Acc<At, FR, FC> {
    let tile = TileConfig::of(BM, BN, BK, WM, WN);
    let stages = tile.stages(At::KIND) as usize;
    let e = <At::In as Elem>::BYTES;
    let stage = tile.stage_bytes(e as u32, At::KIND) as usize;
    let b_off = TileConfig::slab_bytes(BM as u32, BK as u32, e as u32, At::KIND) as usize;
    let threads = WM * WN * At::WAVE;
    let tid = arch::thread_id() as usize;
    let lane = tid % At::WAVE;
    let wave = tid / At::WAVE;
    let (wm, wn) = (wave % WM, wave / WM);

    // Copies are issued step after step: each loader walks its reduction
    // indices up by BK per copy.
    let mut la = Loader::<A, AMN>::new::<BM, BK>(a, r.m0, r.k_begin, r.k_end, tid, threads);
    let mut lb = Loader::<B, BMN>::new::<BN, BK>(b, r.n0, r.k_begin, r.k_end, tid, threads);
    let mut copy = |slab: usize| unsafe {
        la.copy::<BM, BK>(a, slab * stage);
        lb.copy::<BN, BK>(b, slab * stage + b_off);
    };
    let ta = |slab: usize| LdsTile { base: slab * stage, ld: if AMN { BM + PAD } else { BK + PAD }, mn_major: AMN };
    let tb = |slab: usize| LdsTile { base: slab * stage + b_off, ld: if BMN { BN + PAD } else { BK + PAD }, mn_major: BMN };

    let mut acc: Acc<At, FR, FC> = [[Default::default(); FC]; FR];
    let steps = r.k_end.saturating_sub(r.k_begin).div_ceil(BK as u32);
    for s in 0..stages - 1 {
        if (s as u32) < steps {
            copy(s);
        }
        arch::cp_async_commit();
    }
    let (mut rd, mut wr) = (0, stages - 1);
    for step in 0..steps {
        // This thread's copies of `step` have landed; after the barrier
        // everyone's have, and everyone is done reading slab `wr`.
        arch::cp_async_wait(stages as u32 - 2);
        arch::barrier();
        let ahead = step + stages as u32 - 1;
        if ahead < steps {
            copy(wr);
        }
        arch::cp_async_commit();
        unsafe { multiply::<At, BM, BN, BK, WM, WN, FR, FC>(&mut acc, ta(rd), tb(rd), lane, wm, wn) };
        rd = if rd + 1 == stages { 0 } else { rd + 1 };
        wr = if wr + 1 == stages { 0 } else { wr + 1 };
    }
    // The epilogue reuses the LDS.
    arch::cp_async_wait(0);
    arch::barrier();
    acc
}

/// One thread's share of an operand's slab copies, and where it is in the reduction.
struct Loader<O: Operand, const MN: bool> {
    /// The thread's rows: row-contiguous slabs, its vector slots (first rows
    /// of `LANES`) at one k; K-contiguous slabs, its rows (vectors along k).
    krows: KRows<O::Row>,
    /// K-contiguous slabs: 16-byte k-vectors (else element copies).
    kvec: bool,
    /// First reduction index of the next slab.
    k0: u32,
    /// Context of the thread's reduction index `k0 + krows.kk` (vector paths).
    col: O::Col,
    row0: u32,
    k_end: u32,
    tid: usize,
    threads: usize,
}

impl<O: Operand, const MN: bool> Loader<O, MN> {
    #[inline(always)]
    fn new<const ROWS: usize, const BK: usize>(
        o: &O,
        row0: u32,
        k0: u32,
        k_end: u32,
        tid: usize,
        threads: usize,
    ) -> Self {
        let lanes = O::T::LANES;
        let krows = if MN {
            // Slot p of the thread: vector `tid % per_k + p * per_k` of k-row `tid / per_k`.
            let per_k = (threads / BK).max(1);
            let passes = ROWS / lanes / per_k;
            let first = row0 + ((tid % per_k) * lanes) as u32;
            KRows::with(o, first, (per_k * lanes) as u32, passes, tid / per_k)
        } else {
            KRows::new::<O, ROWS, BK>(o, row0, tid, threads)
        };
        Loader {
            col: o.col(k0 + krows.kk as u32),
            krows,
            kvec: !MN && o.k_vec_ok() && KRows::<O::Row>::fits::<O::T, ROWS, BK>(threads),
            k0,
            row0,
            k_end,
            tid,
            threads,
        }
    }

    /// Global -> LDS: the next slab (`BK` reductions) to byte offset `base`.
    #[inline(always)]
    unsafe fn copy<const ROWS: usize, const BK: usize>(&mut self, o: &O, base: usize) {
        let (lanes, eb) = (O::T::LANES, <O::T as Elem>::BYTES);
        let (k0, kk) = (self.k0, self.krows.kk);
        let k = k0 + kk as u32;
        if MN {
            let per_k = self.threads / BK;
            for p in 0..ROWS / lanes / per_k {
                let row = (self.tid % per_k + p * per_k) * lanes;
                let src = if k < self.k_end { o.vec_src(self.krows.get(p), &self.col) } else { None };
                unsafe { arch::cp_async16(base + (kk * (ROWS + PAD) + row) * eb, src) };
            }
        } else if self.kvec {
            let per_row = BK / lanes;
            for p in 0..ROWS * per_row / self.threads {
                let row = self.tid / per_row + p * (self.threads / per_row);
                let src = if k < self.k_end { o.kvec_src(self.krows.get(p), &self.col) } else { None };
                unsafe { arch::cp_async16(base + (row * (BK + PAD) + kk) * eb, src) };
            }
        } else {
            let at = ElementSlab { row0: self.row0, k0, k_end: self.k_end, tid: self.tid, threads: self.threads };
            unsafe { at.copy::<O, ROWS, BK>(o, |r, kk| base + (r * (BK + PAD) + kk) * eb) };
        }
        self.k0 = k0 + BK as u32;
        if MN || self.kvec {
            self.col = o.col_next(&self.col, k + BK as u32, BK as u32);
        }
    }
}

/// Multiplies one stage into the accumulators ([`warp::multiply`]): the
/// wave's A fragments, its B fragments in pairs, then every atom.
#[inline(always)]
unsafe fn multiply<
    At: MmaAtom,
    const BM: usize,
    const BN: usize,
    const BK: usize,
    const WM: usize,
    const WN: usize,
    const FR: usize,
    const FC: usize,
>(
    acc: &mut Acc<At, FR, FC>,
    ta: LdsTile,
    tb: LdsTile,
    lane: usize,
    wm: usize,
    wn: usize,
) {
    let (i0, j0) = (wm * (BM / WM), wn * (BN / WN));
    let a = |fr: usize, ks: usize| unsafe { At::load_a(ta, i0 + fr * At::M, ks, lane) };
    let b = |ks: usize| unsafe { At::load_b_frags::<FC>(tb, j0, ks, lane) };
    unsafe { warp::multiply::<At, BK, FR, FC, false>(acc, a, b) }
}
