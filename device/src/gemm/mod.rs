//! The implicit-GEMM pipeline, shared by every convolution op.
//!
//! Levels (CK-Tile / cubek style):
//! - [`Operand`]: a virtual GEMM operand — element `(row, k)` of A (rows = M)
//!   or of B transposed (rows = N), computed from a convolution tensor
//!   (implicit im2col); out-of-range elements read as zero.
//! - [`mainloop`]: one workgroup's `BM x BN` tile, through one of two main
//!   loops, by the atom's family (`TileConfig::stages`):
//!   - [`block`]: global -> registers -> LDS, double-buffered (AMD, FMA);
//!   - [`multistage`]: asynchronous copies, several slabs in flight, matrix
//!     loads from LDS (NVIDIA);
//!   - [`warpgroup`]: the same copies into the swizzled layouts that
//!     Hopper's `wgmma` reads straight from LDS.
//!
//!   The first two feed the atoms from per-wave fragments through
//!   [`warp::multiply`] (as do the tap-shift kernels); the op's epilogue
//!   ([`crate::conv::epilogue`]) takes the accumulators in runs of columns.
//! - [`splitk`]: split-K coordinates and the fixed-order reduction of f32 partials.
//! - Epilogues come from `convgrad_types::epilogue` and are applied by the op's sink.

pub mod block;
pub mod multistage;
pub mod splitk;
pub mod warp;
pub mod warpgroup;

use crate::atom::MmaAtom;
use crate::elem::Elem;
use convgrad_types::instance::TileConfig;

/// A virtual GEMM operand seen by one group: `rows x K` (A: rows = M, B: rows = N).
///
/// Addressing is separable: a row context (computed once per thread, since a
/// thread keeps its rows for the whole main loop) and a column context (one
/// per reduction index a thread touches per step) combine with a few adds.
pub trait Operand {
    /// Element type in memory (and fed to the atom).
    type T: Elem;
    /// What a row contributes to an element's address.
    type Row: Copy;
    /// What a reduction index contributes.
    type Col: Copy;
    /// Whether element-by-element copies of this operand issue each
    /// thread's loads in batches (`block::ElementSlab`): im2col of x, which
    /// the 3-channel stems' backward-weight waits on. Batches cost registers
    /// (bwd-data's operands then kept a loader context in local memory on
    /// sm_90), so other operands copy one element at a time.
    const BATCHED: bool = false;
    /// Whether consecutive rows are adjacent in memory (else consecutive k
    /// are): threads walk that index fastest so loads coalesce.
    fn rows_fast(&self) -> bool;
    /// Whether `T::LANES` consecutive rows starting at a multiple of
    /// `T::LANES` are always one aligned 16-byte vector with one validity.
    fn vec_ok(&self) -> bool;
    /// Context of `row` (rows past the operand yield zeros).
    fn row(&self, row: u32) -> Self::Row;
    /// Context of reduction index `k`.
    fn col(&self, k: u32) -> Self::Col;
    /// Context of reduction index `k_next = k + delta` from `c`, the context
    /// of `k` (the multistage loop walks each thread's reduction indices up by
    /// `BK` a step): operands override it with a carry instead of divisions.
    #[inline(always)]
    fn col_next(&self, c: &Self::Col, k_next: u32, delta: u32) -> Self::Col {
        let _ = (c, delta);
        self.col(k_next)
    }
    /// Element `(row, k)`, zero in padding or past the operand.
    ///
    /// # Safety
    /// The operand's pointers must be valid for the problem it was built from.
    unsafe fn load(&self, r: &Self::Row, c: &Self::Col) -> Self::T;
    /// Address of rows `row .. row + T::LANES` at `k` as one aligned 16-byte
    /// vector, or `None` where they are all zero (padding, past the operand).
    /// Only asked when [`Operand::vec_ok`]; `row` a multiple of `T::LANES`.
    fn vec_src(&self, r: &Self::Row, c: &Self::Col) -> Option<*const <Self::T as Elem>::V16> {
        let _ = (r, c);
        None
    }
    /// Whether `T::LANES` consecutive reduction indices from a multiple of
    /// `T::LANES` are always one aligned 16-byte vector with one validity
    /// (reduction-contiguous operands, e.g. `dY` in backward-data). It implies
    /// that every range's `k_end` is a multiple of `T::LANES`.
    fn k_vec_ok(&self) -> bool {
        false
    }
    /// Address of reduction indices `k .. k + T::LANES` of one row as one
    /// vector, or `None` where they are zero (only when [`Operand::k_vec_ok`];
    /// `c` is the context of `k`, a multiple of `T::LANES`).
    fn kvec_src(&self, r: &Self::Row, c: &Self::Col) -> Option<*const <Self::T as Elem>::V16> {
        let _ = (r, c);
        None
    }
    /// The vector at [`Operand::vec_src`], loaded (zeros for `None`).
    ///
    /// # Safety
    /// As [`Operand::load`].
    #[inline(always)]
    unsafe fn load_vec(&self, r: &Self::Row, c: &Self::Col) -> <Self::T as Elem>::V16 {
        match self.vec_src(r, c) {
            Some(p) => unsafe { crate::arch::ld(p, 0) },
            None => Default::default(),
        }
    }
    /// The vector at [`Operand::kvec_src`], loaded (zeros for `None`).
    ///
    /// # Safety
    /// As [`Operand::load`].
    #[inline(always)]
    unsafe fn load_kvec(&self, r: &Self::Row, c: &Self::Col) -> <Self::T as Elem>::V16 {
        match self.kvec_src(r, c) {
            Some(p) => unsafe { crate::arch::ld(p, 0) },
            None => Default::default(),
        }
    }
}

/// Columns per run of the result: what the epilogue
/// ([`crate::conv::epilogue::store_tile`]) hands on at a time, and split-K's
/// partial runs.
pub const RUN: usize = 8;

/// The part of the GEMM one workgroup computes.
#[derive(Clone, Copy, Debug)]
pub struct BlockRange {
    /// First row (M) of the tile.
    pub m0: u32,
    /// First column (N) of the tile.
    pub n0: u32,
    /// First reduction index.
    pub k_begin: u32,
    /// One past the last reduction index.
    pub k_end: u32,
}

/// Runs the main loop of the atom's family for `r` and returns this lane's
/// accumulators (`FR x FC` atom fragments per wave).
///
/// # Safety
/// All threads of the workgroup must call it (barriers), launched with the
/// instance's LDS (`Instance::lds_bytes`).
#[inline(always)]
pub unsafe fn mainloop<
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
) -> warp::Acc<At, FR, FC> {
    let tile = TileConfig::of(BM, BN, BK, WM, WN);
    if At::FROM_LDS {
        unsafe { warpgroup::run::<At, A, B, BM, BN, BK, WM, WN, FR, FC>(a, b, r) }
    } else if tile.stages(At::KIND) > 2 {
        unsafe { multistage::run::<At, A, B, BM, BN, BK, WM, WN, FR, FC>(a, b, r) }
    } else {
        unsafe { block::run::<At, A, B, BM, BN, BK, WM, WN, FR, FC>(a, b, r) }
    }
}
