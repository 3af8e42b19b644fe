//! Split-K: the reduction (GEMM K) is cut into `k_batch` ranges, one per
//! workgroup along grid z. Partials are always f32: added atomically into a
//! zeroed workspace `[G][M][N]`, or stored per batch into `[k_batch][G][M][N]`
//! and summed later in batch order, which makes the result bitwise
//! reproducible.

use super::BlockRange;
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
    let (tm, tn) = (tile % a.tiles_m, tile / a.tiles_m);
    let (g, kb) = (block[2] / a.k_batch, block[2] % a.k_batch);
    let k_begin = kb * a.k_per_batch;
    let k_end = if a.k_batch == 1 { a.gemm_k } else { (k_begin + a.k_per_batch).min(a.gemm_k) };
    let mode = mode(a);
    Coord { g, kb, range: BlockRange { m0: tm * bm, n0: tn * bn, k_begin, k_end }, mode }
}

/// Workspace index of element `(m, n)` of group `g`'s partial from batch `kb`.
#[inline(always)]
pub fn ws_index(a: &ConvArgs, mode: PartialMode, kb: u32, g: u32, m: u32, n: u32) -> usize {
    let inner = ((g as usize * a.gemm_m as usize) + m as usize) * a.gemm_n as usize + n as usize;
    match mode {
        PartialMode::Store => kb as usize * a.partial_elems as usize + inner,
        _ => inner,
    }
}

/// Sums element `idx` (< `partial_elems`) of the workspace over all batches, in batch order.
///
/// # Safety
/// `a.ws` must hold the partials the mode implies.
#[inline(always)]
pub unsafe fn reduce(a: &ConvArgs, idx: usize) -> f32 {
    let ws = a.ws as *const f32;
    if a.flags & flags::SPLITK_STORE != 0 {
        let mut v = 0.0f32;
        for kb in 0..a.k_batch as usize {
            v += unsafe { crate::arch::ld(ws, kb * a.partial_elems as usize + idx) };
        }
        v
    } else {
        unsafe { crate::arch::ld(ws, idx) }
    }
}
