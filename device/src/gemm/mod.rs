//! The implicit-GEMM pipeline, shared by every convolution op.
//!
//! Levels (CK-Tile / cubek style):
//! - [`Operand`]: a virtual GEMM operand — element `(row, k)` of A (rows = M)
//!   or of B transposed (rows = N), computed from a convolution tensor
//!   (implicit im2col); out-of-range elements read as zero.
//! - [`block`]: one workgroup's `BM x BN` tile: global -> registers -> LDS
//!   (double-buffered, one barrier per step) -> per-wave fragments -> atoms.
//! - [`splitk`]: split-K coordinates and the fixed-order reduction of f32 partials.
//! - Epilogues come from `convgrad_types::epilogue` and are applied by the op's sink.

pub mod block;
pub mod splitk;

use crate::elem::Elem;

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
    /// Element `(row, k)`, zero in padding or past the operand.
    ///
    /// # Safety
    /// The operand's pointers must be valid for the problem it was built from.
    unsafe fn load(&self, r: &Self::Row, c: &Self::Col) -> Self::T;
    /// Rows `row .. row + T::LANES` at `k` as one vector (only when [`Operand::vec_ok`]).
    ///
    /// # Safety
    /// As [`Operand::load`]; `row` a multiple of `T::LANES`.
    unsafe fn load_vec(&self, r: &Self::Row, c: &Self::Col) -> <Self::T as Elem>::V16;
    /// Whether `T::LANES` consecutive reduction indices from a multiple of
    /// `T::LANES` are always one aligned 16-byte vector with one validity
    /// (reduction-contiguous operands, e.g. `dY` in backward-data). It implies
    /// that every range's `k_end` is a multiple of `T::LANES`.
    fn k_vec_ok(&self) -> bool {
        false
    }
    /// Reduction indices `k .. k + T::LANES` of one row as one vector (only
    /// when [`Operand::k_vec_ok`]; `c` is the context of `k`).
    ///
    /// # Safety
    /// As [`Operand::load`]; `k` a multiple of `T::LANES`.
    unsafe fn load_kvec(&self, r: &Self::Row, c: &Self::Col) -> <Self::T as Elem>::V16 {
        let _ = (r, c);
        Default::default()
    }
}

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
