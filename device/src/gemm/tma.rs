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
//! Per step `s`: wait for stage `s`'s mbarrier phase, issue its `BK / 16`
//! instructions, wait for step `s - 1`'s, barrier (every warpgroup is done
//! with step `s - 1`'s stage), and thread 0 refills that stage with step
//! `s - 1 + STAGES`. Copies run `STAGES - 1` steps ahead.

use super::warp::Acc;
use super::warpgroup::slab;
use super::{BlockRange, Place, SlabShape, Tile};
use crate::arch::{self, tma};
use crate::atom::MmaAtom;
use crate::elem::Elem;

/// A GEMM operand (`rows x K`) read as boxes of a tensor map: element
/// `(row, k)` is the map's element at `base` with `row` added to coordinate
/// `row_dim` and `k` to `k_dim`. The host builds the map with the boxes the
/// tile takes ([`TmaOperand::box_rows`] x `BK`).
pub struct TmaOperand {
    /// The argument block's map slot.
    pub map: *const tma::MapSlot,
    /// Rows contiguous in memory: MN-major slabs, one box per 64 rows (128
    /// bytes of f16 per k); else K-major, one box of the slab's rows.
    pub mn_major: bool,
    /// Coordinates of element `(0, 0)`.
    pub base: [i32; 3],
    /// The map dimension rows run along.
    pub row_dim: usize,
    /// The map dimension the reduction runs along.
    pub k_dim: usize,
}

impl TmaOperand {
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
        let mut h = 0;
        while h < S::ROWS / rows {
            let mut c = self.base;
            c[self.row_dim] += (row0 as usize + h * rows) as i32;
            c[self.k_dim] += k0 as i32;
            unsafe { tma::tma_load(dst + h * rows * S::BK * T::BYTES, bar, self.map, c) };
            h += 1;
        }
    }
}

/// Runs the main loop for `r` and returns this thread's accumulators.
///
/// # Safety
/// All threads of the workgroup must call it; the launch provides
/// `Instance::lds_bytes` of LDS; the maps describe the operands with the
/// boxes of [`TmaOperand::box_rows`] x `BK`.
#[inline(always)]
pub unsafe fn run<Tl: Tile, const FR: usize, const FC: usize>(
    a: &TmaOperand,
    b: &TmaOperand,
    r: BlockRange,
) -> Acc<Tl::At, FR, FC> {
    // Only warpgroup tiles with 128-byte K lines have TMA instances; the
    // slice GEMM kernel instantiates this for every tile (a constant test).
    if !(Tl::At::FROM_LDS && FR == 1 && FC == 1 && Tl::BK * <Tl::In as Elem>::BYTES == 128) {
        arch::trap()
    }
    let (stages, stage, b_off) = (Tl::STAGES, Tl::STAGE_BYTES, Tl::B_OFFSET);
    let bars = Tl::CONFIG.tma_mbar_offset(Tl::At::KIND, <Tl::In as Elem>::BYTES as u32) as usize;
    let tid = arch::thread_id() as usize;
    let Place { wm, wn, .. } = Place::of::<Tl>(tid);
    if tid == 0 {
        let mut s = 0;
        while s < stages {
            unsafe { tma::mbar_init(bars + 8 * s, 1) };
            s += 1;
        }
        tma::mbar_init_fence();
    }
    arch::barrier();
    let steps = r.k_end.saturating_sub(r.k_begin).div_ceil(Tl::BK as u32);
    // Thread 0: step `step`'s slabs into stage `s`.
    let issue = |step: u32, s: usize| unsafe {
        tma::mbar_expect_tx(bars + 8 * s, stage as u32);
        let k = r.k_begin + step * Tl::BK as u32;
        a.load::<Tl::SlabA, Tl::In>(s * stage, bars + 8 * s, r.m0, k);
        b.load::<Tl::SlabB, Tl::In>(s * stage + b_off, bars + 8 * s, r.n0, k);
    };
    if tid == 0 {
        let mut s = 0;
        while s < stages && (s as u32) < steps {
            issue(s as u32, s);
            s += 1;
        }
    }
    let mut acc: Acc<Tl::At, FR, FC> = [[Default::default(); FC]; FR];
    let (mut rd, mut phase) = (0usize, 0u32);
    for step in 0..steps {
        unsafe { tma::mbar_wait(bars + 8 * rd, phase) };
        let ta = slab::<Tl>(rd * stage, a.mn_major).offset(wm * Tl::TM, 0);
        let tb = slab::<Tl>(rd * stage + b_off, b.mn_major).offset(wn * Tl::TN, 0);
        arch::wgmma_fence();
        let mut ks = 0;
        while ks < Tl::BK {
            unsafe { Tl::At::mma_lds(ta.offset(0, ks), tb.offset(0, ks), &mut acc[0][0]) };
            ks += Tl::At::K;
        }
        arch::wgmma_commit();
        // Step - 1's instructions are done in this warpgroup; after the
        // barrier in every warpgroup, and its stage can be refilled.
        arch::wgmma_wait(1);
        arch::barrier();
        let prev = if rd == 0 { stages - 1 } else { rd - 1 };
        if tid == 0 && step >= 1 && step - 1 + (stages as u32) < steps {
            issue(step - 1 + stages as u32, prev);
        }
        rd += 1;
        if rd == stages {
            rd = 0;
            phase ^= 1;
        }
    }
    arch::wgmma_wait(0);
    // The epilogue reuses the stages (every copy issued has landed: each was waited for).
    arch::barrier();
    acc
}
