//! One workgroup's GEMM tile on the matrix atoms.
//!
//! LDS holds A as `[BM][BK + PAD]` and B as `[BN][BK + PAD]` (K-contiguous:
//! every atom reads runs of consecutive k), twice (double buffering). Each
//! main-loop step prefetches the next K-slab from global memory into
//! registers while the waves multiply the current slab from LDS, then stores
//! the prefetch into the other buffer; a single barrier per step separates
//! the two buffers' readers and writers.

use super::{BlockRange, Operand};
use crate::arch;
use crate::atom::MmaAtom;
use crate::elem::Elem;
use convgrad_types::instance::TileConfig;

/// Accumulators of one lane: `FR x FC` atom fragments.
pub type Acc<At, const FR: usize, const FC: usize> = [[<At as MmaAtom>::C; FC]; FR];

/// Compile-time geometry of a block tile.
pub struct Geometry<At, const BM: usize, const BN: usize, const BK: usize, const WM: usize, const WN: usize>(
    core::marker::PhantomData<At>,
);

impl<At: MmaAtom, const BM: usize, const BN: usize, const BK: usize, const WM: usize, const WN: usize>
    Geometry<At, BM, BN, BK, WM, WN>
{
    /// Threads in the workgroup.
    pub const THREADS: usize = WM * WN * At::WAVE;
    /// LDS row length in elements.
    pub const LDK: usize = BK + TileConfig::LDS_PAD as usize;
    /// Bytes of one element.
    pub const E: usize = <At::In as Elem>::BYTES;
    /// Bytes of one LDS stage (A and B).
    pub const STAGE: usize = (BM + BN) * Self::LDK * Self::E;
    /// Rows of a wave's tile.
    pub const TM: usize = BM / WM;
    /// Columns of a wave's tile.
    pub const TN: usize = BN / WN;
}

/// Runs the main loop for `range` and returns this lane's accumulators.
///
/// `FR = BM / WM / At::M` and `FC = BN / WN / At::N` atoms per wave;
/// `LA = ceil(BM * BK / THREADS)`, `LB = ceil(BN * BK / THREADS)` staged
/// elements per thread.
///
/// # Safety
/// All threads of the workgroup must call it (it contains barriers); the
/// workgroup must be launched with `2 * STAGE` bytes of LDS.
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
    const LA: usize,
    const LB: usize,
>(
    a: &A,
    b: &B,
    r: BlockRange,
) -> Acc<At, FR, FC> {
    type G<At, const BM: usize, const BN: usize, const BK: usize, const WM: usize, const WN: usize> =
        Geometry<At, BM, BN, BK, WM, WN>;
    let threads = G::<At, BM, BN, BK, WM, WN>::THREADS;
    let stage = G::<At, BM, BN, BK, WM, WN>::STAGE;
    let tid = arch::thread_id() as usize;
    let lane = tid % At::WAVE;
    let wave = tid / At::WAVE;
    let (wm, wn) = (wave % WM, wave / WM);

    let mut acc: Acc<At, FR, FC> = [[Default::default(); FC]; FR];
    let steps = r.k_end.saturating_sub(r.k_begin).div_ceil(BK as u32);
    if steps == 0 {
        return acc;
    }
    let mut ra = [At::In::default(); LA];
    let mut rb = [At::In::default(); LB];

    unsafe {
        fetch::<A, BM, BK, LA>(a, &mut ra, r.m0, r.k_begin, r.k_end, tid, threads);
        fetch::<B, BN, BK, LB>(b, &mut rb, r.n0, r.k_begin, r.k_end, tid, threads);
        stash::<A, BM, BK, LA>(a, &ra, 0, G::<At, BM, BN, BK, WM, WN>::LDK, tid, threads);
        stash::<B, BN, BK, LB>(b, &rb, BM * G::<At, BM, BN, BK, WM, WN>::LDK * G::<At, BM, BN, BK, WM, WN>::E, G::<At, BM, BN, BK, WM, WN>::LDK, tid, threads);
    }
    arch::barrier();

    for step in 0..steps {
        let cur = (step as usize % 2) * stage;
        let nxt = ((step as usize + 1) % 2) * stage;
        let more = step + 1 < steps;
        if more {
            let k0 = r.k_begin + (step + 1) * BK as u32;
            unsafe {
                fetch::<A, BM, BK, LA>(a, &mut ra, r.m0, k0, r.k_end, tid, threads);
                fetch::<B, BN, BK, LB>(b, &mut rb, r.n0, k0, r.k_end, tid, threads);
            }
        }
        unsafe { multiply::<At, BM, BN, BK, WM, WN, FR, FC>(&mut acc, cur, lane, wm, wn) };
        if more {
            let ldk = G::<At, BM, BN, BK, WM, WN>::LDK;
            let e = G::<At, BM, BN, BK, WM, WN>::E;
            unsafe {
                stash::<A, BM, BK, LA>(a, &ra, nxt, ldk, tid, threads);
                stash::<B, BN, BK, LB>(b, &rb, nxt + BM * ldk * e, ldk, tid, threads);
            }
        }
        arch::barrier();
    }
    acc
}

/// Which (row, k) of a `ROWS x BK` slab staged element `i` of thread `tid` is.
#[inline(always)]
fn slab_coord<const ROWS: usize, const BK: usize>(rows_fast: bool, idx: usize) -> (usize, usize) {
    if rows_fast { (idx % ROWS, idx / ROWS) } else { (idx / BK, idx % BK) }
}

/// Global -> registers for one K-slab starting at `k0`.
#[inline(always)]
unsafe fn fetch<O: Operand, const ROWS: usize, const BK: usize, const L: usize>(
    o: &O,
    regs: &mut [O::T; L],
    row0: u32,
    k0: u32,
    k_end: u32,
    tid: usize,
    threads: usize,
) {
    let fast = o.rows_fast();
    for (i, reg) in regs.iter_mut().enumerate() {
        let idx = tid + i * threads;
        let (row, kk) = slab_coord::<ROWS, BK>(fast, idx);
        let k = k0 + kk as u32;
        *reg = if idx < ROWS * BK && k < k_end { unsafe { o.load(row0 + row as u32, k) } } else { O::T::default() };
    }
}

/// Registers -> LDS (`[ROWS][ldk]` at byte offset `base`).
#[inline(always)]
unsafe fn stash<O: Operand, const ROWS: usize, const BK: usize, const L: usize>(
    o: &O,
    regs: &[O::T; L],
    base: usize,
    ldk: usize,
    tid: usize,
    threads: usize,
) {
    let fast = o.rows_fast();
    for (i, &v) in regs.iter().enumerate() {
        let idx = tid + i * threads;
        if idx < ROWS * BK {
            let (row, kk) = slab_coord::<ROWS, BK>(fast, idx);
            unsafe { arch::lds_st(base + (row * ldk + kk) * <O::T as Elem>::BYTES, v) };
        }
    }
}

/// Multiplies one LDS stage into the accumulators, atom by atom.
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
    stage: usize,
    lane: usize,
    wm: usize,
    wn: usize,
) {
    let ldk = Geometry::<At, BM, BN, BK, WM, WN>::LDK;
    let e = <At::In as Elem>::BYTES;
    let tm = Geometry::<At, BM, BN, BK, WM, WN>::TM;
    let tn = Geometry::<At, BM, BN, BK, WM, WN>::TN;
    let b_base = stage + BM * ldk * e;
    let mut ks = 0;
    while ks < BK {
        let mut af: [At::A; FR] = [Default::default(); FR];
        let mut bf: [At::B; FC] = [Default::default(); FC];
        for (fr, f) in af.iter_mut().enumerate() {
            for (s, v) in f.as_mut().iter_mut().enumerate() {
                let (i, k) = At::a_elem(lane, s);
                let row = wm * tm + fr * At::M + i;
                *v = unsafe { arch::lds_ld(stage + (row * ldk + ks + k) * e) };
            }
        }
        for (fc, f) in bf.iter_mut().enumerate() {
            for (s, v) in f.as_mut().iter_mut().enumerate() {
                let (k, j) = At::b_elem(lane, s);
                let row = wn * tn + fc * At::N + j;
                *v = unsafe { arch::lds_ld(b_base + (row * ldk + ks + k) * e) };
            }
        }
        for fr in 0..FR {
            for fc in 0..FC {
                unsafe { At::mma(&af[fr], &bf[fc], &mut acc[fr][fc]) };
            }
        }
        ks += At::K;
    }
}

/// Calls `f(m, n, value)` for every accumulator of this lane (tile-relative
/// coordinates `m < BM`, `n < BN`).
#[inline(always)]
pub fn for_each_acc<At: MmaAtom, const BM: usize, const BN: usize, const WM: usize, const WN: usize, const FR: usize, const FC: usize>(
    acc: &Acc<At, FR, FC>,
    mut f: impl FnMut(usize, usize, f32),
) {
    let tid = arch::thread_id() as usize;
    let lane = tid % At::WAVE;
    let wave = tid / At::WAVE;
    let (wm, wn) = (wave % WM, wave / WM);
    let (tm, tn) = (BM / WM, BN / WN);
    for (fr, row) in acc.iter().enumerate() {
        for (fc, frag) in row.iter().enumerate() {
            for (s, &v) in frag.as_ref().iter().enumerate() {
                let (i, j) = At::c_elem(lane, s);
                f(wm * tm + fr * At::M + i, wn * tn + fc * At::N + j, v);
            }
        }
    }
}
