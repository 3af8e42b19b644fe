//! Split-K: the reduction (GEMM K) is cut into `k_batch` ranges, one per
//! workgroup along grid z. Partials are always f32: added atomically into a
//! zeroed workspace `[G][M][N]`, or stored per batch into `[k_batch][G][M][N]`
//! and summed later in batch order, which makes the result bitwise
//! reproducible.
//!
//! The last workgroup to put its partial into a tile finishes that tile (sums,
//! epilogue, cast): each counts its arrival in a `u32` counter per tile after
//! the partials ([`last_arrival`]). No finishing launch, and no zeroing pass
//! before the next call either: the finisher zeroes the atomic partials it
//! read and resets the counter, so the workspace is left as it was found.
//! (On short depthwise problems the finishing kernel, the zeroing pass and
//! their launch gaps were about a tenth of the time.)

use super::BlockRange;
use super::RUN;
use crate::arch;
use crate::elem::Vec16;
use convgrad_types::params::{ConvArgs, flags};

/// Where this workgroup's partial goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartialMode {
    /// No split: apply the epilogue and write the result.
    Direct,
    /// Atomic f32 add into the workspace.
    Atomic,
    /// Store into this batch's slice of the workspace.
    Store,
}

/// Decoded grid position of a GEMM workgroup.
#[derive(Clone, Copy, Debug)]
pub struct Coord {
    /// Group.
    pub g: u32,
    /// k-batch index.
    pub kb: u32,
    /// Tile range.
    pub range: BlockRange,
    /// Partial mode.
    pub mode: PartialMode,
}

/// The partial mode the argument block asks for.
#[inline(always)]
pub fn mode(a: &ConvArgs) -> PartialMode {
    if a.flags & flags::SPLITK_STORE != 0 {
        PartialMode::Store
    } else if a.flags & flags::SPLITK_ATOMIC != 0 {
        PartialMode::Atomic
    } else {
        PartialMode::Direct
    }
}

/// Decodes grid `(x = tile, z = g * k_batch + kb)` for tiles of `bm x bn`.
#[inline(always)]
pub fn coord(a: &ConvArgs, block: [u32; 3], bm: u32, bn: u32) -> Coord {
    let tile = block[0];
    let (tm, tn) = (tile % a.gemm.tiles_m, tile / a.gemm.tiles_m);
    let (g, kb) = (block[2] / a.gemm.k_batch, block[2] % a.gemm.k_batch);
    let k_begin = kb * a.gemm.k_per_batch;
    let k_end = if a.gemm.k_batch == 1 { a.gemm.k } else { (k_begin + a.gemm.k_per_batch).min(a.gemm.k) };
    let mode = mode(a);
    Coord { g, kb, range: BlockRange { m0: tm * bm, n0: tn * bn, k_begin, k_end }, mode }
}

/// Workspace index of element `(m, n)` of group `g`'s partial from batch `kb`.
#[inline(always)]
pub fn ws_index(a: &ConvArgs, mode: PartialMode, kb: u32, g: u32, m: u32, n: u32) -> usize {
    let inner = ((g as usize * a.gemm.m as usize) + m as usize) * a.gemm.n as usize + n as usize;
    match mode {
        PartialMode::Store => kb as usize * a.gemm.partial_elems as usize + inner,
        _ => inner,
    }
}

/// Puts partial `v` of element `(m, n)` of group `g` from batch `kb` into
/// the workspace (`mode` is `Atomic` or `Store`).
///
/// # Safety
/// `a.ws` must hold the workspace the mode implies.
#[inline(always)]
pub unsafe fn put(a: &ConvArgs, mode: PartialMode, kb: u32, g: u32, m: u32, n: u32, v: f32) {
    let (ws, i) = (a.ws as *mut f32, ws_index(a, mode, kb, g, m, n));
    match mode {
        PartialMode::Atomic => unsafe { arch::atomic_add_f32(ws, i, v) },
        _ => unsafe { arch::st(ws, i, v) },
    }
}

/// [`put`] for columns `n .. n + 4` as one 16-byte access: the split-K
/// epilogue's atomics were a sixth of the stall samples of the GEMM kernel
/// on the H200 one element at a time.
///
/// # Safety
/// As [`put`]; `gemm.n` and `n` multiples of 4 (16-byte aligned in the workspace).
#[inline(always)]
pub unsafe fn put4(a: &ConvArgs, mode: PartialMode, kb: u32, g: u32, m: u32, n: u32, v: [f32; 4]) {
    let (ws, i) = (a.ws as *mut f32, ws_index(a, mode, kb, g, m, n));
    match mode {
        PartialMode::Atomic => unsafe { arch::atomic_add_f32x4(ws, i, v) },
        _ => unsafe { arch::st(ws.wrapping_add(i) as *mut Vec16<[f32; 4]>, 0, Vec16(v)) },
    }
}

/// Workspace elements (f32) that hold partials; the tiles' arrival counters follow.
#[inline(always)]
pub fn partials_len(a: &ConvArgs) -> usize {
    let batches = if a.flags & flags::SPLITK_STORE != 0 { a.gemm.k_batch as usize } else { 1 };
    batches * a.gemm.partial_elems as usize
}

/// With split-K, counts this workgroup's arrival at `tile` once its
/// partials are out and tells every thread whether it was the last of the
/// tile's `k_batch` workgroups, which then owns the sums ([`take`],
/// [`take_run`]) and resets the counter for the next call; false without
/// split-K. The answer passes through LDS byte 0.
///
/// # Safety
/// Every thread of the workgroup calls it, with LDS no longer read; `a.ws`
/// holds the counters after the partials ([`partials_len`]), zero before the
/// tile's first arrival.
#[inline(always)]
pub unsafe fn last_arrival(a: &ConvArgs, tile: u32) -> bool {
    unsafe { last_arrival_synced(a, tile, arch::barrier) }
}

/// [`last_arrival`] with the workgroup barrier `sync` of the threads that
/// take part (a TMA tile's, whose producer warp has left).
///
/// # Safety
/// As [`last_arrival`], for every thread `sync` waits for.
#[inline(always)]
pub unsafe fn last_arrival_synced(a: &ConvArgs, tile: u32, sync: impl Fn()) -> bool {
    const FLAG: usize = 0;
    if mode(a) == PartialMode::Direct {
        return false;
    }
    arch::arrival_fence();
    sync();
    if arch::thread_id() == 0 {
        let counters = (a.ws as *mut f32).wrapping_add(partials_len(a)) as *mut u32;
        let last = unsafe { arch::arrive(counters, tile as usize) } == a.gemm.k_batch - 1;
        if last {
            unsafe { arch::st(counters, tile as usize, 0) };
        }
        unsafe { arch::lds_st(FLAG, last as u32) };
    }
    sync();
    let last = unsafe { arch::lds_ld::<u32>(FLAG) } != 0;
    if last {
        arch::arrival_fence();
    }
    last
}

/// The whole reduction of element `(m, n)` of group `g`, for the last
/// workgroup of its tile: the batches' partials in batch order, or the atomic
/// sum, which is zeroed for the next call.
///
/// # Safety
/// After [`last_arrival`] returned true for the element's tile.
#[inline(always)]
pub unsafe fn take(a: &ConvArgs, g: u32, m: u32, n: u32) -> f32 {
    let (ws, i) = (a.ws as *mut f32, ws_index(a, PartialMode::Atomic, 0, g, m, n));
    if a.flags & flags::SPLITK_STORE != 0 {
        let mut v = 0.0f32;
        for kb in 0..a.gemm.k_batch as usize {
            v += unsafe { arch::ld(ws, kb * a.gemm.partial_elems as usize + i) };
        }
        v
    } else {
        let v = unsafe { arch::ld(ws, i) };
        unsafe { arch::st(ws, i, 0.0) };
        v
    }
}

/// The whole reduction of `len` (at most [`RUN`]) consecutive elements from
/// `idx` (a multiple of [`RUN`] into a row of `gemm.n`), for the last
/// workgroup of their tile: every batch's partials in batch order, or the
/// atomic sums, zeroed for the next call as they are read; 16-byte accesses
/// when the rows are whole quads.
///
/// # Safety
/// As [`take`], for the run's tile.
#[inline(always)]
pub unsafe fn take_run(a: &ConvArgs, idx: usize, len: u32) -> [f32; RUN] {
    let ws = a.ws as *mut f32;
    let stored = a.flags & flags::SPLITK_STORE != 0;
    let batches = if stored { a.gemm.k_batch as usize } else { 1 };
    let quads = a.gemm.n.is_multiple_of(4);
    let mut v = [0.0f32; RUN];
    for kb in 0..batches {
        let base = kb * a.gemm.partial_elems as usize + idx;
        for q in 0..RUN / 4 {
            if (4 * q as u32) >= len {
                continue;
            }
            let at = base + 4 * q;
            let on = |e: usize| ((4 * q + e) as u32) < len;
            let x: [f32; 4] = if quads {
                let x = unsafe { arch::ld(ws.wrapping_add(at) as *const Vec16<[f32; 4]>, 0).0 };
                if !stored {
                    unsafe { arch::st(ws.wrapping_add(at) as *mut Vec16<[f32; 4]>, 0, Vec16([0.0; 4])) };
                }
                x
            } else {
                // Elements past `len` belong to the next row: read as zeros, left alone.
                core::array::from_fn(|e| {
                    if !on(e) {
                        return 0.0;
                    }
                    let x = unsafe { arch::ld(ws, at + e) };
                    if !stored {
                        unsafe { arch::st(ws, at + e, 0.0) };
                    }
                    x
                })
            };
            for e in 0..4 {
                v[4 * q + e] += x[e];
            }
        }
    }
    v
}
