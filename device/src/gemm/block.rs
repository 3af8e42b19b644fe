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
use super::{BlockRange, Operand, Place, SlabShape, Tile};
use crate::arch;
use crate::atom::MmaAtom;
use crate::elem::{Al4, Elem};
use convgrad_types::instance::TileConfig;

/// LDS row length in elements of tile `Tl`'s slabs.
const fn slab_ld<Tl: Tile>() -> usize {
    Tl::BK + TileConfig::LDS_PAD as usize
}

/// Runs the main loop for `range` and returns this lane's accumulators.
///
/// `FR = BM / WM / At::M` and `FC = BN / WN / At::N` atoms per wave.
///
/// # Safety
/// All threads of the workgroup must call it (it contains barriers); the
/// workgroup must be launched with two stages of LDS (`(BM + BN) * (BK + pad)`
/// elements each).
#[inline(always)]
pub unsafe fn run<Tl: Tile, A: Operand<T = Tl::In>, B: Operand<T = Tl::In>, const FR: usize, const FC: usize>(
    a: &A, b: &B, r: BlockRange,
) -> Acc<Tl::At, FR, FC> {
    let mut acc: Acc<Tl::At, FR, FC> = [[Default::default(); FC]; FR];
    let threads = Tl::THREADS;
    let ldk = const { slab_ld::<Tl>() };
    let e = <Tl::In as Elem>::BYTES;
    // Bytes of one LDS stage (A and B).
    let stage = const { (Tl::BM + Tl::BN) * slab_ld::<Tl>() * <Tl::In as Elem>::BYTES };
    let tid = arch::thread_id() as usize;
    let at = Place::of::<Tl>(tid);

    // Zero steps (an empty split-K batch) still goes through the prologue and its
    // barrier, which keeps the control flow uniform and the accumulators in registers.
    let steps = r.k_end.saturating_sub(r.k_begin).div_ceil(Tl::BK as u32);
    // Uniform choice per operand: 16-byte vectors along contiguous rows, or scalars.
    let va = a.rows_fast() && a.vec_ok() && vec_shape::<Tl::In, Tl::SlabA>(threads);
    let vb = b.rows_fast() && b.vec_ok() && vec_shape::<Tl::In, Tl::SlabB>(threads);
    let lanes = <Tl::In as Elem>::LANES as u32;
    // A thread keeps its vector slot for the whole loop: its row context is computed once.
    let slot_a = if va { (tid % (Tl::BM / lanes as usize)) as u32 * lanes } else { 0 };
    let slot_b = if vb { (tid % (Tl::BN / lanes as usize)) as u32 * lanes } else { 0 };
    let row_a = a.row(r.m0 + slot_a);
    let row_b = b.row(r.n0 + slot_b);
    // Otherwise 16-byte vectors along contiguous k, each thread keeping its rows.
    let ka = !va && a.k_vec_ok() && KRows::<A::Row>::fits::<Tl::In, Tl::SlabA>(threads);
    let kb = !vb && b.k_vec_ok() && KRows::<B::Row>::fits::<Tl::In, Tl::SlabB>(threads);
    let krows_a = KRows::new::<A, Tl::SlabA>(a, r.m0, tid, threads);
    let krows_b = KRows::new::<B, Tl::SlabB>(b, r.n0, tid, threads);
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
        sa.copy::<A, Tl::SlabA>(a, r.k_begin, 0);
        sb.copy::<B, Tl::SlabB>(b, r.k_begin, Tl::BM * ldk * e);
    }
    arch::barrier();

    for step in 0..steps {
        let cur = (step as usize % 2) * stage;
        let nxt = ((step as usize + 1) % 2) * stage;
        if step + 1 < steps {
            // Copied in one go, before the multiply. Holding the loads in
            // registers across the multiply (fetch here, put after) measured
            // slower on the H200: 128x128 tiles spilled (see the README).
            let k0 = r.k_begin + (step + 1) * Tl::BK as u32;
            unsafe {
                sa.copy::<A, Tl::SlabA>(a, k0, nxt);
                sb.copy::<B, Tl::SlabB>(b, k0, nxt + Tl::BM * ldk * e);
            }
        }
        unsafe { multiply::<Tl, FR, FC>(&mut acc, cur, at) };
        arch::barrier();
    }
    acc
}

/// Whether a `ROWS x BK` slab can move as 16-byte row vectors, each thread
/// keeping one vector slot (a fixed group of rows) and whole passes.
#[inline(always)]
const fn vec_shape<T: Elem, S: SlabShape>(threads: usize) -> bool {
    let slots = S::ROWS / T::LANES;
    S::ROWS.is_multiple_of(T::LANES) && slots > 0 && threads.is_multiple_of(slots) && (slots * S::BK).is_multiple_of(threads)
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
    pub(super) const fn fits<T: Elem, S: SlabShape>(threads: usize) -> bool {
        let per_row = S::BK / T::LANES;
        S::BK.is_multiple_of(T::LANES)
            && per_row > 0
            && threads.is_multiple_of(per_row)
            && (S::ROWS * per_row).is_multiple_of(threads)
            && S::ROWS * per_row / threads <= KROWS
    }
    #[inline(always)]
    pub(super) fn new<O: Operand<Row = R>, S: SlabShape>(o: &O, row0: u32, tid: usize, threads: usize) -> Self {
        let per_row = (S::BK / O::T::LANES).max(1);
        let step = (threads / per_row) as u32;
        let first = row0 + (tid / per_row) as u32;
        let passes = S::ROWS * per_row / threads;
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
    fn passes<T: Elem, S: SlabShape>(&self) -> usize {
        if self.kvec { S::ROWS * (S::BK / T::LANES) / self.threads } else { (S::ROWS / T::LANES) * S::BK / self.threads }
    }

    /// Whether the slab moves as 16-byte vectors ([`Slab::fetch`] then [`Slab::put`]).
    #[inline(always)]
    fn staged<T: Elem, S: SlabShape>(&self) -> bool {
        (self.kvec || self.vec) && self.passes::<T, S>() <= STAGED
    }

    /// Issues the global loads of the K-slab at `k0` (vector paths).
    #[inline(always)]
    unsafe fn fetch<O: Operand<Row = R>, S: SlabShape>(&self, o: &O, k0: u32) -> Staged<<O::T as Elem>::V16> {
        let mut st = Staged::default();
        let passes = self.passes::<O::T, S>();
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
            let slots = S::ROWS / O::T::LANES;
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
    unsafe fn put<T: Elem, S: SlabShape>(&self, st: &Staged<T::V16>, base: usize) {
        let (lanes, eb) = (T::LANES, T::BYTES);
        let passes = self.passes::<T, S>();
        if self.kvec {
            // LDS rows are K-contiguous: each vector is stored as it is.
            let per_row = S::BK / lanes;
            let step = self.threads / per_row;
            for p in 0..STAGED {
                if p < passes {
                    let r = (self.tid / per_row) + p * step;
                    unsafe { arch::lds_st(base + (swizzle(r, lanes) * self.ldk + self.krows.kk) * eb, st.get(p)) };
                }
            }
            return;
        }
        let slots = S::ROWS / lanes;
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
    unsafe fn copy<O: Operand<Row = R>, S: SlabShape>(&self, o: &O, k0: u32, base: usize) {
        if self.staged::<O::T, S>() {
            let st = unsafe { self.fetch::<O, S>(o, k0) };
            unsafe { self.put::<O::T, S>(&st, base) };
            return;
        }
        let (ldk, eb) = (self.ldk, <O::T as Elem>::BYTES);
        let at = ElementSlab { row0: self.row0, k0, k_end: self.k_end, tid: self.tid, threads: self.threads };
        unsafe { at.copy::<O, S>(o, |r, kk| base + (swizzle(r, O::T::LANES) * ldk + kk) * eb) };
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
    pub(super) unsafe fn copy<O: Operand, S: SlabShape>(&self, o: &O, at: impl Fn(usize, usize) -> usize) {
        let (k0, k_end, tid, threads) = (self.k0, self.k_end, self.tid, self.threads);
        let zero = O::T::default();
        if o.rows_fast() && threads.is_multiple_of(S::ROWS) {
            let row = tid % S::ROWS;
            let r = o.row(self.row0 + row as u32);
            if O::BATCHED {
                batched!(tid / S::ROWS, threads / S::ROWS, S::BK, |kk| {
                    let k = k0 + kk as u32;
                    if k < k_end { unsafe { o.load(&r, &o.col(k)) } } else { zero }
                }, |kk| at(row, kk));
            } else {
                let mut kk = tid / S::ROWS;
                while kk < S::BK {
                    let k = k0 + kk as u32;
                    let v = if k < k_end { unsafe { o.load(&r, &o.col(k)) } } else { zero };
                    unsafe { arch::lds_st(at(row, kk), v) };
                    kk += threads / S::ROWS;
                }
            }
        } else {
            let fast = o.rows_fast();
            let mut idx = tid;
            while idx < S::ROWS * S::BK {
                let (row, kk) = if fast { (idx % S::ROWS, idx / S::ROWS) } else { (idx / S::BK, idx % S::BK) };
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
unsafe fn multiply<Tl: Tile, const FR: usize, const FC: usize>(acc: &mut Acc<Tl::At, FR, FC>, stage: usize, at: Place) {
    let Place { lane, wm, wn } = at;
    let ldk = const { slab_ld::<Tl>() };
    let e = <Tl::In as Elem>::BYTES;
    let (tm, tn) = (Tl::TM, Tl::TN);
    let b_base = stage + Tl::BM * ldk * e;
    let l = <Tl::In as Elem>::LANES;
    let a = |fr: usize, ks: usize| {
        let mut f: <Tl::At as MmaAtom>::A = Default::default();
        unsafe {
            load_frag::<Tl::In, <Tl::At as MmaAtom>::ARun>(f.as_mut(), stage, ldk, |s| {
                let (i, k) = Tl::At::a_elem(lane, s);
                (swizzle(wm * tm + fr * Tl::At::M + i, l), ks + k)
            })
        };
        f
    };
    // Each B fragment is filled in a local of its own and then moved into the
    // array, as `warp::multiply` does with A's. Filled in place, rustc's SROA
    // cut the gfx1100 WMMA fragment array at halves (bytes 48..50 and 50..64
    // of `[[f16; 16]; 2]`) and loaded those 7 halves with align 2: ds_load_b64
    // at LDS offsets = 2 mod 8 (issue #42, isa's alignment check).
    let b = |ks: usize| {
        let mut bf: [<Tl::At as MmaAtom>::B; FC] = [Default::default(); FC];
        for (fc, f) in bf.iter_mut().enumerate() {
            let mut one: <Tl::At as MmaAtom>::B = Default::default();
            unsafe {
                load_frag::<Tl::In, <Tl::At as MmaAtom>::BRun>(one.as_mut(), b_base, ldk, |s| {
                    let (k, j) = Tl::At::b_elem(lane, s);
                    (swizzle(wn * tn + fc * Tl::At::N + j, l), ks + k)
                })
            };
            *f = one;
        }
        bf
    };
    unsafe { warp::multiply::<Tl, FR, FC, false>(acc, a, b) }
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
