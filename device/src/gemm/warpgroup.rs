//! The warpgroup main loop (NVIDIA Hopper, `wgmma.mma_async`).
//!
//! Same schedule as [`super::multistage`] (K-slabs in flight through
//! `cp.async`), but the matrix instruction reads both operands straight from
//! LDS, so the slabs are laid out the way it wants them: its canonical
//! swizzled layouts ([`CoreTile`]). Each operand keeps its global orientation
//! (channel-contiguous operands MN-major, the instruction's transpose flag;
//! k-contiguous ones K-major), so every copy is one 16-byte move. Without the
//! swizzle (8 x 16-byte core matrices) the same kernel hit one throughput
//! ceiling whatever the shape: the swizzle is what lets the tensor cores
//! read LDS at full rate.
//!
//! The copy mappings keep both sides efficient: each warp copies whole 32-byte
//! sectors of global memory, and each 8-thread phase of a copy instruction
//! writes 8 distinct 16-byte bank groups.
//!
//! Per step: wait for the slab, make it visible to the asynchronous proxy,
//! barrier, issue the slab's `BK / 16` instructions on warpgroup `(wm, wn)`'s
//! 64 x 128 part, wait for the previous step's instructions (this step's
//! stay in flight), and issue the copies of step `s + STAGES - 2` into the
//! slab step `s - 2` read (every warpgroup finished it before the barrier).

use super::block::{ElementSlab, KROWS, KRows};
use super::warp::Acc;
use super::{BlockRange, Operand, Place, SlabShape, Tile, by_layouts};
use crate::arch;
use crate::atom::{CoreTile, MmaAtom};
use crate::elem::Elem;

/// Runs the main loop for `r` and returns this thread's accumulators.
///
/// # Safety
/// All threads of the workgroup must call it (barriers); the launch must
/// provide `STAGES * STAGE_BYTES` of LDS ([`Tile::STAGE_BYTES`]).
#[inline(always)]
pub unsafe fn run<Tl: Tile, A: Operand<T = Tl::In>, B: Operand<T = Tl::In>, const FR: usize, const FC: usize>(
    a: &A, b: &B, r: BlockRange,
) -> Acc<Tl::At, FR, FC> {
    // K-major lines are one row's BK k: 32, 64 or 128 bytes.
    const { assert!(!Tl::At::FROM_LDS || (FR == 1 && FC == 1 && (Tl::BK == 16 || Tl::BK == 32 || Tl::BK == 64))) };
    // Unpadded slabs ([`TileConfig::slab_bytes`]) keep every slab on the
    // 1024-byte boundary the 128-byte swizzle repeats at.
    const { assert!(!Tl::At::FROM_LDS || (Tl::BM * Tl::BK * <Tl::In as Elem>::BYTES).is_multiple_of(1024)) };
    const { assert!(!Tl::At::FROM_LDS || (Tl::BN * Tl::BK * <Tl::In as Elem>::BYTES).is_multiple_of(1024)) };
    let threads = Tl::THREADS;
    let amn = a.rows_fast() && a.vec_ok() && fits::<Tl::SlabA>(threads);
    let bmn = b.rows_fast() && b.vec_ok() && fits::<Tl::SlabB>(threads);
    // The slab orientations are compile-time: the instruction's transpose
    // flags are immediates.
    unsafe { by_layouts!(amn, bmn, main::<Tl, A, B, FR, FC>(a, b, r)) }
}

/// Whether a `ROWS x BK` slab splits into whole passes of the copy mappings
/// ([`Loader::new`]): warps cover 8 k x 32 rows (MN-major) or 8 rows x BK
/// (K-major), at most [`KROWS`] passes.
const fn fits<S: SlabShape>(threads: usize) -> bool {
    let per_pass = threads / (S::BK / 8);
    S::BK.is_multiple_of(8)
        && (threads / 32).is_multiple_of(S::BK / 8)
        && S::ROWS.is_multiple_of(per_pass)
        && S::ROWS / per_pass <= KROWS
}

/// A slab at byte `base` (a multiple of 1024), swizzled so that both the
/// copies and the instruction's reads spread over all banks: MN-major in
/// 128-byte lines (64 rows of one k; 8 k an atom, row blocks `BK / 8` atoms
/// apart), K-major in lines of one row's `BK` k (8 rows an atom).
#[inline(always)]
pub(crate) fn slab<Tl: Tile>(base: usize, mn_major: bool) -> CoreTile {
    if mn_major {
        CoreTile { base, lbo: (Tl::BK / 8 * 1024) as u32, sbo: 1024, mn_major, swizzle: 128 }
    } else {
        // The leading offset is unused by swizzled K-major tiles (16 by convention).
        CoreTile { base, lbo: 16, sbo: (Tl::BK * 16) as u32, mn_major, swizzle: (Tl::BK * 2) as u32 }
    }
}

/// The main loop with the slab orientations `AMN`, `BMN` (MN-major, else K-major).
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
    let Place { wm, wn, .. } = Place::of::<Tl>(tid);

    let mut la = Loader::<A, AMN>::new::<Tl::SlabA>(a, r.m0, r.k_begin, r.k_end, tid, threads);
    let mut lb = Loader::<B, BMN>::new::<Tl::SlabB>(b, r.n0, r.k_begin, r.k_end, tid, threads);
    // A macro, not a closure: a closure called twice may stay a call, and
    // the loaders it borrows would then live in local memory.
    macro_rules! copy {
        ($s:expr) => {
            unsafe {
                la.copy::<Tl::SlabA>(a, slab::<Tl>($s * stage, AMN));
                lb.copy::<Tl::SlabB>(b, slab::<Tl>($s * stage + b_off, BMN));
            }
        };
    }

    let mut acc: Acc<Tl::At, FR, FC> = [[Default::default(); FC]; FR];
    let steps = r.k_end.saturating_sub(r.k_begin).div_ceil(Tl::BK as u32);
    // Copies run `ahead` steps in front; one step's instructions stay in
    // flight, so a slab is rewritten two steps after it was read.
    let ahead = stages - 2;
    for s in 0..ahead {
        if (s as u32) < steps {
            copy!(s);
        }
        arch::cp_async_commit();
    }
    let (mut rd, mut wr) = (0, ahead);
    for step in 0..steps {
        // This thread's copies of `step` have landed; after the barrier
        // everyone's have, and every warpgroup has finished step - 2.
        arch::cp_async_wait(ahead as u32 - 1);
        arch::fence_proxy_async();
        arch::barrier();
        let ta = slab::<Tl>(rd * stage, AMN).offset(wm * Tl::TM, 0);
        let tb = slab::<Tl>(rd * stage + b_off, BMN).offset(wn * Tl::TN, 0);
        arch::wgmma_fence();
        let mut ks = 0;
        while ks < Tl::BK {
            unsafe { Tl::At::mma_lds(ta.offset(0, ks), tb.offset(0, ks), &mut acc[0][0]) };
            ks += Tl::At::K;
        }
        arch::wgmma_commit();
        // Step - 1's instructions are done: its slab is free from the next barrier on.
        arch::wgmma_wait(1);
        if step + (ahead as u32) < steps {
            copy!(wr);
        }
        arch::cp_async_commit();
        rd = if rd + 1 == stages { 0 } else { rd + 1 };
        wr = if wr + 1 == stages { 0 } else { wr + 1 };
    }
    arch::wgmma_wait(0);
    // The epilogue reuses the LDS.
    arch::cp_async_wait(0);
    arch::barrier();
    acc
}

/// One thread's share of an operand's slab copies.
struct Loader<O: Operand, const MN: bool> {
    /// The thread's rows (first rows of 8-row vectors when `MN`), one per pass.
    krows: KRows<O::Row>,
    /// The thread's first row, relative to the tile.
    row: usize,
    /// K-major slabs: 16-byte k-vectors (else element copies).
    kvec: bool,
    /// First reduction index of the next slab.
    k0: u32,
    /// Context of the thread's reduction index `k0 + krows.kk`.
    col: O::Col,
    row0: u32,
    k_end: u32,
    tid: usize,
    threads: usize,
}

impl<O: Operand, const MN: bool> Loader<O, MN> {
    /// MN-major: a warp copies 8 k (one per lane of a phase: 8 bank groups)
    /// x 4 row vectors (64 contiguous bytes per k row). K-major: 8 rows (a
    /// phase) x `BK / 8` k-vectors (whole rows of the slab).
    #[inline(always)]
    fn new<S: SlabShape>(o: &O, row0: u32, k0: u32, k_end: u32, tid: usize, threads: usize) -> Self {
        let kgroups = S::BK / 8;
        let per_pass = threads / kgroups;
        let passes = S::ROWS / per_pass;
        let (w, l) = (tid / 32, tid % 32);
        let (row, kk) = if MN {
            (8 * (l / 8 + 4 * (w / kgroups)), l % 8 + 8 * (w % kgroups))
        } else {
            (tid % 8 + 8 * (tid / (8 * kgroups)), 8 * ((tid / 8) % kgroups))
        };
        let krows = KRows::with(o, row0 + row as u32, per_pass as u32, passes, kk);
        Loader {
            col: o.col(k0 + kk as u32),
            krows,
            row,
            kvec: !MN && o.k_vec_ok() && fits::<S>(threads),
            k0,
            row0,
            k_end,
            tid,
            threads,
        }
    }

    /// Global -> LDS: the next slab (`BK` reductions) into `t`.
    #[inline(always)]
    unsafe fn copy<S: SlabShape>(&mut self, o: &O, t: CoreTile) {
        let (k0, kk) = (self.k0, self.krows.kk);
        let k = k0 + kk as u32;
        if MN || self.kvec {
            // Constant trip count (unrolled: the row contexts stay in registers).
            let per_pass = self.threads / (S::BK / 8);
            for p in 0..S::ROWS / per_pass {
                let row = self.row + p * per_pass;
                let src = if k >= self.k_end {
                    None
                } else if MN {
                    o.vec_src(self.krows.get(p), &self.col)
                } else {
                    o.kvec_src(self.krows.get(p), &self.col)
                };
                unsafe { arch::cp_async16(t.at(row, kk), src) };
            }
            self.col = o.col_next(&self.col, k + S::BK as u32, S::BK as u32);
        } else {
            let at = ElementSlab { row0: self.row0, k0, k_end: self.k_end, tid: self.tid, threads: self.threads };
            unsafe { at.copy::<O, S>(o, |r, kk| t.at(r, kk)) };
        }
        self.k0 = k0 + S::BK as u32;
    }
}
