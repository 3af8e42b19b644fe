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
pub trait Operand {
    /// Element type in memory (and fed to the atom).
    type T: Elem;
    /// Whether consecutive rows are adjacent in memory (else consecutive k
    /// are): threads walk that index fastest so loads coalesce.
    fn rows_fast(&self) -> bool;
    /// Element `(row, k)`, or zero if `row` is beyond the operand or the
    /// element falls into padding.
    ///
    /// # Safety
    /// The operand's pointers must be valid for the problem it was built from.
    unsafe fn load(&self, row: u32, k: u32) -> Self::T;
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
