//! The TMA main loop (NVIDIA Hopper): the warpgroup main loop's schedule
//! ([`super::warpgroup`]) with every copy one `cp.async.bulk.tensor` box
//! issued by thread 0 instead of each thread's 16-byte `cp.async` copies.
//!
//! On the H200 the `cp.async` loop is bound by instruction issue (ncu: 61%
//! SM, 31% DRAM throughput on a ResNet-50 1x1 layer, where cuBLAS's TMA
//! kernel reaches 57% DRAM): every thread computes addresses and bounds of
//! its copies each step. Here the tensor map does that in hardware,
//! including the zeros past the tensor's edges, and writes the 128-byte
//! swizzle `wgmma` reads ([`CoreTile`]).
//!
//! A producer warp beside the tile's warpgroups issues the copies; the
//! warpgroups wait on a stage's `full` mbarrier, issue its `BK / 16`
//! instructions and release the stage of the step before on its `empty`
//! mbarrier ([`run`]).

use super::warp::Acc;
use super::warpgroup::slab;
use super::{BlockRange, Place, SlabShape, Tile};
use crate::arch::{self, tma};
use crate::atom::MmaAtom;
use crate::elem::Elem;

/// A GEMM operand (`rows x K`) read as boxes of a tensor map (rank 3 or 5):
/// the box of rows `row0..` and reductions `k0..` starts at coordinates
/// `at(row0, k0)`. An MN-major slab takes one box per 64 rows: placed by
/// stepping the first box's coordinates along `row_dim` where the slab's
/// rows run along one map dimension, else each by `at` (the boxes of a
/// convolution's columns may lie in different taps).
/// The host builds the map with the boxes the tile takes
/// ([`TmaOperand::box_rows`] x `BK`).
pub struct TmaOperand<F> {
    /// The argument block's map slot.
    pub map: *const tma::MapSlot,
    /// Rows contiguous in memory: MN-major slabs, one box per 64 rows (128
    /// bytes of f16 per k); else K-major, one box of the slab's rows.
    pub mn_major: bool,
    /// The map has rank 5 (else 3: the copies name the rank).
    pub rank5: bool,
    /// The map dimension a slab's rows run along (`None`: they need not,
    /// every box is placed by `at`). One `at` per slab keeps the single
    /// producer thread's work per step small: the build of backward-data's
    /// taps kernel that placed every box by `at` (and chose each copy's
    /// rank at run time) ran 1.18-1.46x slower on the H200 than the one
    /// before it (tuning-log 2026-11-29b).
    pub row_dim: Option<usize>,
    /// Coordinates of the box of element `(row0, k0)`: plain offsets for a
    /// GEMM on plain tensors, pixel blocks and taps for a convolution's.
    pub at: F,
}

impl<F: Fn(u32, u32) -> [i32; 5]> TmaOperand<F> {
    /// Rows of one box: 64 (one 128-byte swizzle line of f16 per k) when
    /// MN-major, else the slab's.
    pub const fn box_rows(mn_major: bool, slab_rows: usize) -> usize {
        if mn_major { 64 } else { slab_rows }
    }

    /// Issues the boxes of the slab of rows `row0..` and reductions
    /// `k0..k0 + BK` into LDS byte `dst`, completing on the mbarrier at `bar`.
    #[inline(always)]
    unsafe fn load<S: SlabShape, T: Elem>(&self, dst: usize, bar: usize, row0: u32, k0: u32) {
        let rows = Self::box_rows(self.mn_major, S::ROWS);
        let mut c = (self.at)(row0, k0);
        let mut h = 0;
        while h < S::ROWS / rows {
            if h > 0 {
                match self.row_dim {
                    Some(d) => c[d] += rows as i32,
                    None => c = (self.at)(row0 + (h * rows) as u32, k0),
                }
            }
            unsafe { tma::tma_load(dst + h * rows * S::BK * T::BYTES, bar, self.map, c, self.rank5) };
            h += 1;
        }
    }
}

/// Runs the main loop for `r` and returns this thread's accumulators; the
/// producer warp (threads `Tl::THREADS..`, see below) gets `None` and
/// must leave: the epilogue syncs the consumers only ([`consumer_sync`]).
///
/// Warp-specialised: the tile's warpgroups only consume, one extra warp
/// produces. Per stage two mbarriers: `full` (count 1: the producer's
/// `expect_tx`, completed when the copies land) and `empty` (one arrival
/// per consumer warp once its `wgmma` reading the stage are done). The
/// producer waits on `empty` before refilling a stage, so the consumers
/// never wait for each other: the CTA barrier per step of the earlier
/// loop held every warpgroup to the slowest (tuning log 2026-11-28e).
///
/// # Safety
/// All threads of the workgroup (`Tl::THREADS + 32`) must call it; the
/// launch provides `Instance::lds_bytes` of LDS; the maps describe the
/// operands with the boxes of [`TmaOperand::box_rows`] x `BK`.
#[inline(always)]
pub unsafe fn run<Tl: Tile, const FR: usize, const FC: usize>(
    a: &TmaOperand<impl Fn(u32, u32) -> [i32; 5]>,
    b: &TmaOperand<impl Fn(u32, u32) -> [i32; 5]>,
    r: BlockRange,
) -> Option<Acc<Tl::At, FR, FC>> {
    // Only warpgroup tiles with 128-byte K lines have TMA instances; the
    // slice GEMM kernel instantiates this for every tile (a constant test).
    if !(Tl::At::FROM_LDS && FR == 1 && FC == 1 && Tl::BK * <Tl::In as Elem>::BYTES == 128) {
        arch::trap()
    }
    let (stages, stage, b_off) = (Tl::STAGES, Tl::STAGE_BYTES, Tl::B_OFFSET);
    let full = Tl::CONFIG.tma_mbar_offset(Tl::At::KIND, <Tl::In as Elem>::BYTES as u32) as usize;
    let empty = full + 8 * stages;
    let consumer_warps = (Tl::THREADS / 32) as u32;
    let tid = arch::thread_id() as usize;
    if tid == 0 {
        let mut s = 0;
        while s < stages {
            unsafe { tma::mbar_init(full + 8 * s, 1) };
            unsafe { tma::mbar_init(empty + 8 * s, consumer_warps) };
            s += 1;
        }
        tma::mbar_init_fence();
    }
    arch::barrier();
    let steps = r.k_end.saturating_sub(r.k_begin).div_ceil(Tl::BK as u32);
    if tid >= Tl::THREADS {
        // The producer: one thread issues every step's slabs, a stage at a
        // time once its previous round's readers have released it.
        if tid == Tl::THREADS {
            let (mut s, mut round) = (0usize, 0u32);
            for step in 0..steps {
                if round > 0 {
                    unsafe { tma::mbar_wait(empty + 8 * s, (round - 1) & 1) };
                }
                unsafe { tma::mbar_expect_tx(full + 8 * s, stage as u32) };
                let k = r.k_begin + step * Tl::BK as u32;
                unsafe { a.load::<Tl::SlabA, Tl::In>(s * stage, full + 8 * s, r.m0, k) };
                unsafe { b.load::<Tl::SlabB, Tl::In>(s * stage + b_off, full + 8 * s, r.n0, k) };
                s += 1;
                if s == stages {
                    s = 0;
                    round += 1;
                }
            }
        }
        return None;
    }
    let Place { wm, wn, .. } = Place::of::<Tl>(tid);
    let mut acc: Acc<Tl::At, FR, FC> = [[Default::default(); FC]; FR];
    let (mut rd, mut phase) = (0usize, 0u32);
    for step in 0..steps {
        unsafe { tma::mbar_wait(full + 8 * rd, phase) };
        let ta = slab::<Tl>(rd * stage, a.mn_major).offset(wm * Tl::TM, 0);
        let tb = slab::<Tl>(rd * stage + b_off, b.mn_major).offset(wn * Tl::TN, 0);
        arch::wgmma_fence();
        let mut ks = 0;
        while ks < Tl::BK {
            unsafe { Tl::At::mma_lds(ta.offset(0, ks), tb.offset(0, ks), &mut acc[0][0]) };
            ks += Tl::At::K;
        }
        arch::wgmma_commit();
        // Step - 1's instructions are done in this warp: release its stage.
        arch::wgmma_wait(1);
        // The first lane of each consumer warp arrives (the count is the warps).
        #[allow(clippy::manual_is_multiple_of)]
        let first_lane = tid % 32 == 0;
        if step >= 1 && first_lane {
            let prev = if rd == 0 { stages - 1 } else { rd - 1 };
            unsafe { tma::mbar_arrive(empty + 8 * prev) };
        }
        rd += 1;
        if rd == stages {
            rd = 0;
            phase ^= 1;
        }
    }
    arch::wgmma_wait(0);
    // The epilogue reuses the stages: every copy issued has landed (each
    // was waited for) and, after this, every consumer is done reading.
    consumer_sync::<Tl>(true);
    Some(acc)
}

/// The workgroup barrier of a tile's threads: with a producer warp beside
/// them (`producer`), named barrier 1 for `Tl::THREADS` threads (the
/// producer has left); else barrier 0.
#[inline(always)]
pub fn consumer_sync<Tl: Tile>(producer: bool) {
    if producer { tma::named_barrier(1, Tl::THREADS as u32) } else { arch::barrier() }
}
