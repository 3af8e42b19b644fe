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
use super::{BlockRange, Operand, Place, SlabShape, Tile, by_layouts};
use crate::arch;
use crate::atom::{LdsTile, MmaAtom};
use crate::elem::Elem;
use convgrad_types::instance::TileConfig;

const PAD: usize = TileConfig::LDS_PAD as usize;

/// Runs the main loop for `range` and returns this lane's accumulators.
///
/// # Safety
/// All threads of the workgroup must call it (barriers); the launch must
/// provide `STAGES * STAGE_BYTES` of LDS ([`Tile::STAGE_BYTES`]).
#[inline(always)]
pub unsafe fn run<Tl: Tile, A: Operand<T = Tl::In>, B: Operand<T = Tl::In>, const FR: usize, const FC: usize>(
    a: &A, b: &B, r: BlockRange,
) -> Acc<Tl::At, FR, FC> {
    let threads = Tl::THREADS;
    let amn = a.rows_fast() && a.vec_ok() && mn_fits::<Tl::In, Tl::SlabA>(threads);
    let bmn = b.rows_fast() && b.vec_ok() && mn_fits::<Tl::In, Tl::SlabB>(threads);
    // The slab layouts are compile-time: fragment loads take no branches.
    unsafe { by_layouts!(amn, bmn, main::<Tl, A, B, FR, FC>(a, b, r)) }
}

/// Whether a `ROWS x BK` slab moves as 16-byte row vectors in whole passes:
/// `threads / BK` threads share each reduction index (one column context per
/// thread and step), each keeping up to `KROWS` vector slots (row contexts
/// computed once).
const fn mn_fits<T: Elem, S: SlabShape>(threads: usize) -> bool {
    let slots = S::ROWS / T::LANES;
    let per_k = threads / S::BK;
    S::ROWS.is_multiple_of(T::LANES)
        && threads.is_multiple_of(S::BK)
        && per_k > 0
        && slots.is_multiple_of(per_k)
        && slots / per_k <= KROWS
}

/// The main loop with the slab layouts `AMN`, `BMN` (row-contiguous, else K-contiguous).
#[inline(always)]
unsafe fn main<Tl: Tile, A, B, const FR: usize, const FC: usize, const AMN: bool, const BMN: bool>(
    a: &A,
    b: &B,
    r: BlockRange,
) -> Acc<Tl::At, FR, FC>
where
    A: Operand<T = Tl::In>,
    B: Operand<T = Tl::In>,
{
    let (stages, stage, b_off) = (Tl::STAGES, Tl::STAGE_BYTES, Tl::B_OFFSET);
    let (threads, tid) = (Tl::THREADS, arch::thread_id() as usize);
    let at = Place::of::<Tl>(tid);

    // Copies are issued step after step: each loader walks its reduction
    // indices up by BK per copy.
    let mut la = Loader::<A, AMN>::new::<Tl::SlabA>(a, r.m0, r.k_begin, r.k_end, tid, threads);
    let mut lb = Loader::<B, BMN>::new::<Tl::SlabB>(b, r.n0, r.k_begin, r.k_end, tid, threads);
    let mut copy = |slab: usize| unsafe {
        la.copy::<Tl::SlabA>(a, slab * stage);
        lb.copy::<Tl::SlabB>(b, slab * stage + b_off);
    };
    let ta = |slab: usize| LdsTile { base: slab * stage, ld: if AMN { Tl::BM + PAD } else { Tl::BK + PAD }, mn_major: AMN };
    let tb = |slab: usize| LdsTile { base: slab * stage + b_off, ld: if BMN { Tl::BN + PAD } else { Tl::BK + PAD }, mn_major: BMN };

    let mut acc: Acc<Tl::At, FR, FC> = [[Default::default(); FC]; FR];
    let steps = r.k_end.saturating_sub(r.k_begin).div_ceil(Tl::BK as u32);
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
        unsafe { multiply::<Tl, FR, FC>(&mut acc, ta(rd), tb(rd), at) };
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
    fn new<S: SlabShape>(o: &O, row0: u32, k0: u32, k_end: u32, tid: usize, threads: usize) -> Self {
        let lanes = O::T::LANES;
        let krows = if MN {
            // Slot p of the thread: vector `tid % per_k + p * per_k` of k-row `tid / per_k`.
            let per_k = (threads / S::BK).max(1);
            let passes = S::ROWS / lanes / per_k;
            let first = row0 + ((tid % per_k) * lanes) as u32;
            KRows::with(o, first, (per_k * lanes) as u32, passes, tid / per_k)
        } else {
            KRows::new::<O, S>(o, row0, tid, threads)
        };
        Loader {
            col: o.col(k0 + krows.kk as u32),
            krows,
            kvec: !MN && o.k_vec_ok() && KRows::<O::Row>::fits::<O::T, S>(threads),
            k0,
            row0,
            k_end,
            tid,
            threads,
        }
    }

    /// Global -> LDS: the next slab (`BK` reductions) to byte offset `base`.
    #[inline(always)]
    unsafe fn copy<S: SlabShape>(&mut self, o: &O, base: usize) {
        let (lanes, eb) = (O::T::LANES, <O::T as Elem>::BYTES);
        let (k0, kk) = (self.k0, self.krows.kk);
        let k = k0 + kk as u32;
        if MN {
            let per_k = self.threads / S::BK;
            for p in 0..S::ROWS / lanes / per_k {
                let row = (self.tid % per_k + p * per_k) * lanes;
                let src = if k < self.k_end { o.vec_src(self.krows.get(p), &self.col) } else { None };
                unsafe { arch::cp_async16(base + (kk * (S::ROWS + PAD) + row) * eb, src) };
            }
        } else if self.kvec {
            let per_row = S::BK / lanes;
            for p in 0..S::ROWS * per_row / self.threads {
                let row = self.tid / per_row + p * (self.threads / per_row);
                let src = if k < self.k_end { o.kvec_src(self.krows.get(p), &self.col) } else { None };
                unsafe { arch::cp_async16(base + (row * (S::BK + PAD) + kk) * eb, src) };
            }
        } else {
            let at = ElementSlab { row0: self.row0, k0, k_end: self.k_end, tid: self.tid, threads: self.threads };
            unsafe { at.copy::<O, S>(o, |r, kk| base + (r * (S::BK + PAD) + kk) * eb) };
        }
        self.k0 = k0 + S::BK as u32;
        if MN || self.kvec {
            self.col = o.col_next(&self.col, k + S::BK as u32, S::BK as u32);
        }
    }
}

/// Multiplies one stage into the accumulators ([`warp::multiply`]): the
/// wave's A fragments, its B fragments in pairs, then every atom.
#[inline(always)]
unsafe fn multiply<Tl: Tile, const FR: usize, const FC: usize>(acc: &mut Acc<Tl::At, FR, FC>, ta: LdsTile, tb: LdsTile, at: Place) {
    let (lane, i0, j0) = (at.lane, at.wm * Tl::TM, at.wn * Tl::TN);
    let a = |fr: usize, ks: usize| unsafe { Tl::At::load_a(ta, i0 + fr * Tl::At::M, ks, lane) };
    let b = |ks: usize| unsafe { Tl::At::load_b_frags::<FC>(tb, j0, ks, lane) };
    unsafe { warp::multiply::<Tl, FR, FC, false>(acc, a, b) }
}
