//! The epilogue: the accumulators leave through an f32 tile in LDS
//! ([`store_tile`]), threads take it in runs of [`RUN`] columns, and each
//! run goes through the argument block's epilogue chain (`D` tensors,
//! activations) into the result tensor ([`store_run`], [`store_result`]).

use super::offset;
use crate::arch;
use crate::atom::MmaAtom;
use crate::elem::{Al8, Elem, Vec16};
use crate::gemm::Tile;
use crate::gemm::warp::Acc;
use convgrad_types::params::ConvArgs;

pub use crate::gemm::RUN;

/// Writes `v` through the argument block's epilogue into the result tensor
/// `out` (strides `s`) at canonical index `idx`; the `D` tensors are read at
/// the same index with their own (possibly broadcast) strides. A `D` may be
/// the result tensor itself: each element is read before its only write.
///
/// # Safety
/// `out` and the `D` pointers must be valid for the index.
#[inline(always)]
pub unsafe fn store_result<Out: Elem>(a: &ConvArgs, out: u64, s: &[u32; 6], idx: [u32; 6], v: f32) {
    let v = a.epi.apply(v, |d| unsafe { arch::ld(a.d[d] as *const Out, offset(&a.d_strides[d], idx)).to_f32() });
    unsafe { arch::st(out as *mut Out, offset(s, idx), Out::from_f32(v)) }
}

/// Writes a run of `min(len, RUN)` consecutive elements along
/// canonical axis `AXIS`, from index `idx`, through the epilogue. A whole run
/// that is contiguous and aligned in the result goes out as 16-byte vectors,
/// its `D` values read by each `D`'s own strides (vectors, one broadcast
/// scalar, or element by element); any other run element by element
/// ([`store_result`]).
///
/// # Safety
/// As [`store_result`], for every element of the run.
#[inline(always)]
pub unsafe fn store_run<Out: Elem, const AXIS: usize>(
    a: &ConvArgs,
    out: u64,
    s: &[u32; 6],
    idx: [u32; 6],
    len: u32,
    v: [f32; RUN],
    bias: &mut BiasRun,
) {
    unsafe { store_run_at::<Out, AXIS>(a, out, s, offset(s, idx), || idx, len, v, bias) }
}

/// [`store_run`] with the run's offset `o` in `out` already known; `idx()`
/// (the run's canonical index) is computed only where a `D` tensor or an
/// element-wise store needs it.
///
/// # Safety
/// As [`store_run`]; `o` must be `offset(s, idx())`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn store_run_at<Out: Elem, const AXIS: usize>(
    a: &ConvArgs,
    out: u64,
    s: &[u32; 6],
    o: usize,
    idx: impl Fn() -> [u32; 6],
    len: u32,
    v: [f32; RUN],
    bias: &mut BiasRun,
) {
    let len = len.min(RUN as u32);
    if len as usize == RUN && s[AXIS] == 1 && o.is_multiple_of(RUN) {
        let r = a.epi.apply_run(v, |d| {
            let load = || unsafe { load_run::<Out, AXIS>(a.d[d] as *const Out, &a.d_strides[d], idx()) };
            if d != 0 || !bias.applies::<AXIS>(&a.d_strides[0]) {
                return load();
            }
            let i = idx();
            let key = [i[0], i[AXIS]];
            if bias.key != key {
                (bias.key, bias.v) = (key, load());
            }
            bias.v
        });
        unsafe { st_vectors::<Out>(out as *mut Out, o, r) };
        return;
    }
    let idx = idx();
    for_each_in_run(v, len, |e, x| {
        let mut i = idx;
        i[AXIS] += e;
        unsafe { store_result::<Out>(a, out, s, i, x) };
    });
}

/// `D0`'s run at one `(group, channel run)`, kept across a thread's calls of
/// [`store_run`] when `D0` varies along nothing else (a per-channel bias): the
/// epilogue hands each thread the same channel run row after row
/// ([`store_tile`]), so the bias is loaded once instead
/// of once per row. On its own it barely moved a fused-bias benchmark (CK
/// example 38): the cost there was the per-element opcode dispatch
/// ([`convgrad_types::epilogue::EpiStep::apply_run`]). It saves a dependent
/// load and the index arithmetic per run.
#[derive(Clone, Copy)]
pub struct BiasRun {
    key: [u32; 2],
    v: [f32; RUN],
}

impl BiasRun {
    /// Nothing loaded yet.
    #[inline(always)]
    pub fn new() -> BiasRun {
        BiasRun { key: [u32::MAX; 2], v: [0.0; RUN] }
    }
    /// Whether `D0` (strides `ds`) depends on the group and the `AXIS` index only.
    #[inline(always)]
    fn applies<const AXIS: usize>(&self, ds: &[u32; 6]) -> bool {
        let mut only = true;
        for (i, &st) in ds.iter().enumerate() {
            only &= i == 0 || i == AXIS || st == 0;
        }
        only
    }
}

impl Default for BiasRun {
    fn default() -> Self {
        Self::new()
    }
}

/// Calls `f(e, v[e])` for `e < min(len, RUN)`. The values shift through
/// registers: a rolled loop indexing `v` at run time would put it in scratch.
#[inline(always)]
pub fn for_each_in_run(v: [f32; RUN], len: u32, mut f: impl FnMut(u32, f32)) {
    let mut cur = v;
    for e in 0..(len as usize).min(RUN) as u32 {
        f(e, cur[0]);
        cur = core::array::from_fn(|i| if i + 1 < RUN { cur[i + 1] } else { 0.0 });
    }
}

/// A `D` tensor's values at a run along `AXIS` from `idx`.
#[inline(always)]
unsafe fn load_run<T: Elem, const AXIS: usize>(p: *const T, ds: &[u32; 6], idx: [u32; 6]) -> [f32; RUN] {
    let o = offset(ds, idx);
    match ds[AXIS] {
        1 if o.is_multiple_of(RUN) => {
            let mut out = [0.0; RUN];
            let mut e = 0;
            while e < RUN {
                let v: T::V16 = unsafe { arch::ld(p.wrapping_add(o + e) as *const T::V16, 0) };
                for (i, x) in v.as_ref().iter().enumerate() {
                    out[e + i] = x.to_f32();
                }
                e += T::LANES;
            }
            out
        }
        0 => [unsafe { arch::ld(p, o) }.to_f32(); RUN],
        st => core::array::from_fn(|e| unsafe { arch::ld(p, o + e * st as usize) }.to_f32()),
    }
}

/// Stores a run as 16-byte vectors at element offset `o` (a multiple of [`RUN`]).
#[inline(always)]
unsafe fn st_vectors<T: Elem>(p: *mut T, o: usize, v: [f32; RUN]) {
    let mut e = 0;
    while e < RUN {
        let mut w = T::V16::default();
        for (i, x) in w.as_mut().iter_mut().enumerate() {
            *x = T::from_f32(v[e + i]);
        }
        unsafe { arch::st(p.wrapping_add(o + e) as *mut T::V16, 0, w) };
        e += T::LANES;
    }
}

/// Writes the accumulators into an f32 `BM x BN` tile in LDS (rows
/// `TileConfig::epilogue_ld` long), then calls `f(m, n0, values)` for every run of
/// [`RUN`] consecutive columns `n0 ..` of row `m` (tile-relative), threads
/// walking rows so that consecutive threads take consecutive runs: the op
/// computes a row's context once per run and stores whole vectors.
///
/// # Safety
/// All threads of the workgroup must call it (barriers), after the main loop,
/// with at least `TileConfig::epilogue_bytes` of LDS.
#[inline(always)]
pub unsafe fn store_tile<Tl: Tile, const FR: usize, const FC: usize>(
    acc: &Acc<Tl::At, FR, FC>,
    mut f: impl FnMut(usize, usize, [f32; RUN]),
) {
    unsafe { store_tile_rows::<Tl, FR, FC, false, false>(acc, |_| 0, |m, n0, _, v| f(m, n0, v)) }
}

/// [`store_tile`] with a row context: `f(m, n0, row(m), values)`. With
/// `TABLE`, the threads compute `row` once per tile row into LDS after the
/// result tile (`8 * BM` more bytes) and each run reads it back, instead of
/// every run redoing its row's index arithmetic (on the H200 that arithmetic
/// was most of the epilogue's instructions: 16 runs share a row of a
/// 128-wide tile).
///
/// With `PRODUCER` (a warp-specialised main loop whose producer warp has
/// left, [`crate::gemm::tma::run`]), the tile's threads sync on a named
/// barrier of their own.
///
/// # Safety
/// As [`store_tile`] (with `PRODUCER`: every thread of the tile); with
/// `TABLE`, `TileConfig::epilogue_bytes + 8 * BM` of LDS.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn store_tile_rows<Tl: Tile, const FR: usize, const FC: usize, const TABLE: bool, const PRODUCER: bool>(
    acc: &Acc<Tl::At, FR, FC>,
    row: impl Fn(usize) -> u64,
    mut f: impl FnMut(usize, usize, u64, [f32; RUN]),
) {
    const { assert!(Tl::BN.is_multiple_of(RUN)) };
    let ld = Tl::CONFIG.epilogue_ld(Tl::At::KIND) as usize;
    let table = Tl::BM * ld * 4;
    let tid = arch::thread_id() as usize;
    let lane = tid % Tl::At::WAVE;
    let wave = tid / Tl::At::WAVE;
    let (wm, wn) = (wave % Tl::WM, wave / Tl::WM);
    let (tm, tn) = (Tl::TM, Tl::TN);
    let threads = Tl::THREADS;
    // NVIDIA's accumulators hold column pairs (elements 2s, 2s + 1): one
    // 8-byte store each, a half-warp's 4 rows x 8 columns, rows 8 banks apart
    // (`epilogue_ld`): no bank conflicts. AMD's hold columns of rows: scalars.
    let pairs = Tl::At::KIND.nvidia();
    // Small constant-trip loops with constant register indices: fully unrolled.
    for (fr, r) in acc.iter().enumerate() {
        for (fc, frag) in r.iter().enumerate() {
            let frag = frag.as_ref();
            if !pairs {
                for (s, &v) in frag.iter().enumerate() {
                    let (i, j) = Tl::At::c_elem(lane, s);
                    let (m, n) = (wm * tm + fr * Tl::At::M + i, wn * tn + fc * Tl::At::N + j);
                    unsafe { arch::lds_st((m * ld + n) * 4, v) };
                }
                continue;
            }
            // A branch-free body with a constant step unrolls and keeps the
            // accumulators in registers (skipping odd elements inside a loop
            // of elements put 64-element fragments on the stack).
            let mut s = 0;
            while s < frag.len() {
                let (i, j) = Tl::At::c_elem(lane, s);
                let (m, n) = (wm * tm + fr * Tl::At::M + i, wn * tn + fc * Tl::At::N + j);
                unsafe { arch::lds_st((m * ld + n) * 4, Al8([frag[s], frag[s + 1]])) };
                s += 2;
            }
        }
    }
    if TABLE {
        let mut m = tid;
        while m < Tl::BM {
            unsafe { arch::lds_st(table + m * 8, row(m)) };
            m += threads;
        }
    }
    crate::gemm::tma::consumer_sync::<Tl>(PRODUCER);
    let per_row = Tl::BN / RUN;
    let mut idx = tid;
    while idx < Tl::BM * per_row {
        let (m, n0) = (idx / per_row, (idx % per_row) * RUN);
        let at = (m * ld + n0) * 4;
        // NVIDIA's 16-byte loads go 8 lanes at a time: a run starting in an
        // odd 128-byte line reads its upper half first, so 8 runs 32 bytes
        // apart cover 32 distinct banks (AMD's reads keep their order).
        let swap = pairs && (at / 128) % 2 == 1;
        let (first, second) = if swap { (at + 16, at) } else { (at, at + 16) };
        let (x, y): (Vec16<[f32; 4]>, Vec16<[f32; 4]>) = unsafe { (arch::lds_ld(first), arch::lds_ld(second)) };
        let (lo, hi) = if swap { (y.0, x.0) } else { (x.0, y.0) };
        let r = if TABLE { unsafe { arch::lds_ld::<u64>(table + m * 8) } } else { row(m) };
        f(m, n0, r, [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]]);
        idx += threads;
    }
}
