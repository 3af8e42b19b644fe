//! One workgroup's GEMM tile on the matrix atoms.
//!
//! LDS holds A as `[BM][BK + PAD]` and B as `[BN][BK + PAD]` (K-contiguous:
//! every atom reads runs of consecutive k), twice (double buffering). Each
//! main-loop step copies the next K-slab from global memory straight into the
//! other buffer while the waves multiply the current one (other waves hide
//! the load latency; no staging registers, so nothing is indexed at run time
//! and spills to scratch); a single barrier per step separates the two
//! buffers' readers and writers.
//!
//! The result leaves through LDS as well
//! ([`crate::conv::epilogue::store_tile`]).

use super::warp::{self, Acc};
use super::{BlockRange, Operand};
use crate::arch;
use crate::atom::MmaAtom;
use crate::elem::{Al4, Elem};
use convgrad_types::instance::TileConfig;

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
/// `FR = BM / WM / At::M` and `FC = BN / WN / At::N` atoms per wave.
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
>(
    a: &A,
    b: &B,
    r: BlockRange,
) -> Acc<At, FR, FC> {
    let mut acc: Acc<At, FR, FC> = [[Default::default(); FC]; FR];
    type G<At, const BM: usize, const BN: usize, const BK: usize, const WM: usize, const WN: usize> =
        Geometry<At, BM, BN, BK, WM, WN>;
    let threads = G::<At, BM, BN, BK, WM, WN>::THREADS;
    let stage = G::<At, BM, BN, BK, WM, WN>::STAGE;
    let tid = arch::thread_id() as usize;
    let lane = tid % At::WAVE;
    let wave = tid / At::WAVE;
    let (wm, wn) = (wave % WM, wave / WM);

    // Zero steps (an empty split-K batch) still goes through the prologue and its
    // barrier, which keeps the control flow uniform and the accumulators in registers.
    let steps = r.k_end.saturating_sub(r.k_begin).div_ceil(BK as u32);
    let ldk = G::<At, BM, BN, BK, WM, WN>::LDK;
    let e = G::<At, BM, BN, BK, WM, WN>::E;
    // Uniform choice per operand: 16-byte vectors along contiguous rows, or scalars.
    let va = a.rows_fast() && a.vec_ok() && vec_shape::<At::In, BM, BK>(threads);
    let vb = b.rows_fast() && b.vec_ok() && vec_shape::<At::In, BN, BK>(threads);
    let lanes = <At::In as Elem>::LANES as u32;
    // A thread keeps its vector slot for the whole loop: its row context is computed once.
    let slot_a = if va { (tid % (BM / lanes as usize)) as u32 * lanes } else { 0 };
    let slot_b = if vb { (tid % (BN / lanes as usize)) as u32 * lanes } else { 0 };
    let row_a = a.row(r.m0 + slot_a);
    let row_b = b.row(r.n0 + slot_b);
    // Otherwise 16-byte vectors along contiguous k, each thread keeping its rows.
    let ka = !va && a.k_vec_ok() && KRows::<A::Row>::fits::<At::In, BM, BK>(threads);
    let kb = !vb && b.k_vec_ok() && KRows::<B::Row>::fits::<At::In, BN, BK>(threads);
    let krows_a = KRows::new::<A, BM, BK>(a, r.m0, tid, threads);
    let krows_b = KRows::new::<B, BN, BK>(b, r.n0, tid, threads);
    let sa = Slab {
        vec: va,
        kvec: ka,
        krows: krows_a,
        row: &row_a,
        row0: r.m0,
        k_end: r.k_end,
        tid,
        threads,
        ldk,
    };
    let sb = Slab {
        vec: vb,
        kvec: kb,
        krows: krows_b,
        row: &row_b,
        row0: r.n0,
        k_end: r.k_end,
        tid,
        threads,
        ldk,
    };

    unsafe {
        sa.copy::<A, BM, BK>(a, r.k_begin, 0);
        sb.copy::<B, BN, BK>(b, r.k_begin, BM * ldk * e);
    }
    arch::barrier();

    for step in 0..steps {
        let cur = (step as usize % 2) * stage;
        let nxt = ((step as usize + 1) % 2) * stage;
        if step + 1 < steps {
            // Copied in one go, before the multiply. Holding the loads in
            // registers across the multiply (fetch here, put after) measured
            // slower on the H200: 128x128 tiles spilled (see the README).
            let k0 = r.k_begin + (step + 1) * BK as u32;
            unsafe {
                sa.copy::<A, BM, BK>(a, k0, nxt);
                sb.copy::<B, BN, BK>(b, k0, nxt + BM * ldk * e);
            }
        }
        unsafe { multiply::<At, BM, BN, BK, WM, WN, FR, FC>(&mut acc, cur, lane, wm, wn) };
        arch::barrier();
    }
    acc
}

/// Whether a `ROWS x BK` slab can move as 16-byte row vectors, each thread
/// keeping one vector slot (a fixed group of rows) and whole passes.
#[inline(always)]
const fn vec_shape<T: Elem, const ROWS: usize, const BK: usize>(threads: usize) -> bool {
    let slots = ROWS / T::LANES;
    ROWS.is_multiple_of(T::LANES) && slots > 0 && threads.is_multiple_of(slots) && (slots * BK).is_multiple_of(threads)
}

/// Physical LDS row of logical row `r`: rows are XOR-swizzled within groups
/// of `l * l` so that the `l`-row vectors that neighbouring lanes store (rows
/// `l` apart, which would share a bank) land in different banks, while any
/// `l` consecutive rows stay a permutation of themselves for the readers.
#[inline(always)]
pub fn swizzle(r: usize, l: usize) -> usize {
    r ^ ((r / l) % l)
}

/// Most rows a thread keeps in the k-vector path.
pub(super) const KROWS: usize = 4;

/// A thread's rows in the k-vector path: `BK / LANES` threads share a row
/// (one vector each, k-adjacent), and a thread visits up to [`KROWS`] rows
/// `threads / (BK / LANES)` apart, the same ones every step, so their row
/// contexts are computed once. Named fields, not an array: an array indexed
/// in a loop may end up in scratch memory.
#[derive(Clone, Copy)]
pub(super) struct KRows<R> {
    r0: R,
    r1: R,
    r2: R,
    r3: R,
    /// Element offset of this thread's vector within the slab row.
    pub(super) kk: usize,
}

impl<R: Copy> KRows<R> {
    /// Whether a `ROWS x BK` slab splits into whole passes of 16-byte k-vectors.
    #[inline(always)]
    pub(super) const fn fits<T: Elem, const ROWS: usize, const BK: usize>(threads: usize) -> bool {
        let per_row = BK / T::LANES;
        BK.is_multiple_of(T::LANES)
            && per_row > 0
            && threads.is_multiple_of(per_row)
            && (ROWS * per_row).is_multiple_of(threads)
            && ROWS * per_row / threads <= KROWS
    }
    #[inline(always)]
    pub(super) fn new<O: Operand<Row = R>, const ROWS: usize, const BK: usize>(o: &O, row0: u32, tid: usize, threads: usize) -> Self {
        let per_row = (BK / O::T::LANES).max(1);
        let step = (threads / per_row) as u32;
        let first = row0 + (tid / per_row) as u32;
        let passes = ROWS * per_row / threads;
        Self::with(o, first, step, passes, (tid % per_row) * O::T::LANES)
    }
    /// Rows `first + p * step` for passes `p < passes` (at most [`KROWS`]).
    #[inline(always)]
    pub(super) fn with<O: Operand<Row = R>>(o: &O, first: u32, step: u32, passes: usize, kk: usize) -> Self {
        // Slots past the thread's passes repeat the first row (never loaded).
        let at = |p: u32| o.row(first + if (p as usize) < passes { p * step } else { 0 });
        KRows { r0: at(0), r1: at(1), r2: at(2), r3: at(3), kk }
    }
    /// Row context of pass `p` (a constant after unrolling).
    #[inline(always)]
    pub(super) fn get(&self, p: usize) -> &R {
        match p {
            0 => &self.r0,
            1 => &self.r1,
            2 => &self.r2,
            _ => &self.r3,
        }
    }
}

/// Most 16-byte vectors a thread stages per operand and step.
const STAGED: usize = 4;

/// Vectors loaded from global memory and held in registers while the waves
/// multiply the current stage (named fields: they must stay in registers).
#[derive(Clone, Copy, Default)]
struct Staged<V> {
    v0: V,
    v1: V,
    v2: V,
    v3: V,
}

impl<V: Copy> Staged<V> {
    /// Vector `p` (a constant after unrolling).
    #[inline(always)]
    fn get(&self, p: usize) -> V {
        match p {
            0 => self.v0,
            1 => self.v1,
            2 => self.v2,
            _ => self.v3,
        }
    }
    #[inline(always)]
    fn set(&mut self, p: usize, v: V) {
        match p {
            0 => self.v0 = v,
            1 => self.v1 = v,
            2 => self.v2 = v,
            _ => self.v3 = v,
        }
    }
}

/// One thread's share of an operand's K-slab: which elements it moves.
struct Slab<'r, R> {
    vec: bool,
    kvec: bool,
    krows: KRows<R>,
    row: &'r R,
    row0: u32,
    k_end: u32,
    tid: usize,
    threads: usize,
    ldk: usize,
}

impl<R: Copy> Slab<'_, R> {
    /// Vectors this thread moves per step on a vector path.
    #[inline(always)]
    fn passes<T: Elem, const ROWS: usize, const BK: usize>(&self) -> usize {
        if self.kvec { ROWS * (BK / T::LANES) / self.threads } else { (ROWS / T::LANES) * BK / self.threads }
    }

    /// Whether the slab moves as 16-byte vectors ([`Slab::fetch`] then [`Slab::put`]).
    #[inline(always)]
    fn staged<T: Elem, const ROWS: usize, const BK: usize>(&self) -> bool {
        (self.kvec || self.vec) && self.passes::<T, ROWS, BK>() <= STAGED
    }

    /// Issues the global loads of the K-slab at `k0` (vector paths).
    #[inline(always)]
    unsafe fn fetch<O: Operand<Row = R>, const ROWS: usize, const BK: usize>(
        &self,
        o: &O,
        k0: u32,
    ) -> Staged<<O::T as Elem>::V16> {
        let mut st = Staged::default();
        let passes = self.passes::<O::T, ROWS, BK>();
        if self.kvec {
            let k = k0 + self.krows.kk as u32;
            let col = o.col(k);
            for p in 0..STAGED {
                if p < passes && k < self.k_end {
                    st.set(p, unsafe { o.load_kvec(self.krows.get(p), &col) });
                }
            }
        } else {
            // A thread owns `lanes` rows and `passes` consecutive k of the slab.
            let slots = ROWS / O::T::LANES;
            let kbase = (self.tid / slots) * passes;
            for p in 0..STAGED {
                let k = k0 + (kbase + p) as u32;
                if p < passes && k < self.k_end {
                    st.set(p, unsafe { o.load_vec(self.row, &o.col(k)) });
                }
            }
        }
        st
    }

    /// Stores fetched vectors into LDS (`[ROWS][ldk]` at byte offset `base`).
    #[inline(always)]
    unsafe fn put<T: Elem, const ROWS: usize, const BK: usize>(&self, st: &Staged<T::V16>, base: usize) {
        let (lanes, eb) = (T::LANES, T::BYTES);
        let passes = self.passes::<T, ROWS, BK>();
        if self.kvec {
            // LDS rows are K-contiguous: each vector is stored as it is.
            let per_row = BK / lanes;
            let step = self.threads / per_row;
            for p in 0..STAGED {
                if p < passes {
                    let r = (self.tid / per_row) + p * step;
                    unsafe { arch::lds_st(base + (swizzle(r, lanes) * self.ldk + self.krows.kk) * eb, st.get(p)) };
                }
            }
            return;
        }
        let slots = ROWS / lanes;
        let row = (self.tid % slots) * lanes;
        let kbase = (self.tid / slots) * passes;
        if passes.is_multiple_of(2) {
            // Pairs of k go to LDS as one 4-byte store per row.
            for q in 0..STAGED / 2 {
                if 2 * q < passes {
                    let (v0, v1) = (st.get(2 * q), st.get(2 * q + 1));
                    for e in 0..lanes {
                        let pair = Al4([v0.as_ref()[e], v1.as_ref()[e]]);
                        let r = swizzle(row + e, lanes);
                        unsafe { arch::lds_st(base + (r * self.ldk + kbase + 2 * q) * eb, pair) };
                    }
                }
            }
        } else {
            for p in 0..STAGED {
                if p < passes {
                    for (e, &x) in st.get(p).as_ref().iter().enumerate() {
                        let r = swizzle(row + e, lanes);
                        unsafe { arch::lds_st(base + (r * self.ldk + kbase + p) * eb, x) };
                    }
                }
            }
        }
    }

    /// Global -> LDS (`[ROWS][ldk]` at byte offset `base`) for the K-slab at
    /// `k0`, in one go: through registers on the vector paths, element by
    /// element otherwise.
    #[inline(always)]
    unsafe fn copy<O: Operand<Row = R>, const ROWS: usize, const BK: usize>(&self, o: &O, k0: u32, base: usize) {
        if self.staged::<O::T, ROWS, BK>() {
            let st = unsafe { self.fetch::<O, ROWS, BK>(o, k0) };
            unsafe { self.put::<O::T, ROWS, BK>(&st, base) };
            return;
        }
        let (ldk, eb) = (self.ldk, <O::T as Elem>::BYTES);
        let at = ElementSlab { row0: self.row0, k0, k_end: self.k_end, tid: self.tid, threads: self.threads };
        unsafe { at.copy::<O, ROWS, BK>(o, |r, kk| base + (swizzle(r, O::T::LANES) * ldk + kk) * eb) };
    }
}

/// An element-by-element slab copy (operands without 16-byte vectors): rows
/// `row0 ..`, reductions `k0 ..` of a `ROWS x BK` slab.
pub(super) struct ElementSlab {
    pub(super) row0: u32,
    pub(super) k0: u32,
    pub(super) k_end: u32,
    pub(super) tid: usize,
    pub(super) threads: usize,
}

impl ElementSlab {
    /// Copies the slab, threads walking the operand's contiguous index
    /// fastest; element `(row, kk)` lands at LDS byte `at(row, kk)`.
    ///
    /// Where consecutive rows are adjacent in memory and the threads cover
    /// whole rows of the slab (im2col of x with few channels, weights with
    /// few channels), each thread keeps one row and computes its context
    /// once per slab; for [`Operand::BATCHED`] operands its loads go out in
    /// batches of four before their stores: a store right after each load
    /// made every load wait out its whole latency (the RGB stem's im2col,
    /// 16 elements a thread).
    #[inline(always)]
    pub(super) unsafe fn copy<O: Operand, const ROWS: usize, const BK: usize>(&self, o: &O, at: impl Fn(usize, usize) -> usize) {
        let (k0, k_end, tid, threads) = (self.k0, self.k_end, self.tid, self.threads);
        let zero = O::T::default();
        if o.rows_fast() && threads.is_multiple_of(ROWS) {
            let row = tid % ROWS;
            let r = o.row(self.row0 + row as u32);
            if O::BATCHED {
                batched!(tid / ROWS, threads / ROWS, BK, |kk| {
                    let k = k0 + kk as u32;
                    if k < k_end { unsafe { o.load(&r, &o.col(k)) } } else { zero }
                }, |kk| at(row, kk));
            } else {
                let mut kk = tid / ROWS;
                while kk < BK {
                    let k = k0 + kk as u32;
                    let v = if k < k_end { unsafe { o.load(&r, &o.col(k)) } } else { zero };
                    unsafe { arch::lds_st(at(row, kk), v) };
                    kk += threads / ROWS;
                }
            }
        } else {
            let fast = o.rows_fast();
            let mut idx = tid;
            while idx < ROWS * BK {
                let (row, kk) = if fast { (idx % ROWS, idx / ROWS) } else { (idx / BK, idx % BK) };
                let k = k0 + kk as u32;
                let v = if k < k_end { unsafe { o.load(&o.row(self.row0 + row as u32), &o.col(k)) } } else { zero };
                unsafe { arch::lds_st(at(row, kk), v) };
                idx += threads;
            }
        }
    }
}

/// Indices `$first, $first + $step, ..` below `$end`: the value of `$load`
/// (with the index bound to its name) to LDS byte `$at`, four loads in
/// flight before their stores. Spelled out (a macro, not closures, and the
/// slots by hand): closures called per slot were left uninlined on AMD and
/// their captures went to scratch; eight slots put a loader's context in
/// local memory on sm_90's 256-thread tiles.
macro_rules! batched {
    ($first:expr, $step:expr, $end:expr, |$i:ident| $load:expr, |$j:ident| $at:expr) => {{
        let (step, end) = ($step, $end);
        let mut i0 = $first;
        while i0 < end {
            let mut v = [Default::default(); 4];
            batched!(@each b => {
                let $i = i0 + b * step;
                if $i < end {
                    v[b] = $load;
                }
            });
            batched!(@each b => {
                let $j = i0 + b * step;
                if $j < end {
                    unsafe { arch::lds_st($at, v[b]) };
                }
            });
            i0 += 4 * step;
        }
    }};
    (@each $b:ident => $body:block) => {
        { let $b: usize = 0; $body } { let $b: usize = 1; $body } { let $b: usize = 2; $body } { let $b: usize = 3; $body }
    };
}
use batched;

/// Multiplies one LDS stage into the accumulators ([`warp::multiply`]),
/// fragments loaded in runs of k from the swizzled rows.
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
    let l = <At::In as Elem>::LANES;
    let a = |fr: usize, ks: usize| {
        let mut f: At::A = Default::default();
        unsafe {
            load_frag::<At::In, At::ARun>(f.as_mut(), stage, ldk, |s| {
                let (i, k) = At::a_elem(lane, s);
                (swizzle(wm * tm + fr * At::M + i, l), ks + k)
            })
        };
        f
    };
    let b = |ks: usize| {
        let mut bf: [At::B; FC] = [Default::default(); FC];
        for (fc, f) in bf.iter_mut().enumerate() {
            unsafe {
                load_frag::<At::In, At::BRun>(f.as_mut(), b_base, ldk, |s| {
                    let (k, j) = At::b_elem(lane, s);
                    (swizzle(wn * tn + fc * At::N + j, l), ks + k)
                })
            };
        }
        bf
    };
    unsafe { warp::multiply::<At, BK, FR, FC, false>(acc, a, b) }
}

/// Loads one fragment from a K-contiguous LDS tile at byte offset `base`, in
/// runs of consecutive k (`R`, the atom's run type): one aligned LDS load per
/// run instead of one per element. `at(slot)` gives the (physical row, k) of
/// a slot; slots of a run share the row and have consecutive k.
#[inline(always)]
unsafe fn load_frag<T: Elem, R: Copy + AsRef<[T]>>(
    f: &mut [T],
    base: usize,
    ldk: usize,
    at: impl Fn(usize) -> (usize, usize),
) {
    let run = core::mem::size_of::<R>() / T::BYTES;
    for r in 0..f.len() / run {
        let (row, k) = at(r * run);
        let v: R = unsafe { arch::lds_ld(base + (row * ldk + k) * T::BYTES) };
        f[r * run..(r + 1) * run].copy_from_slice(v.as_ref());
    }
}
