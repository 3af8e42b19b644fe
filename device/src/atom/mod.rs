//! Matrix atoms: one hardware matrix instruction each, CuTe-style.
//!
//! An atom computes `D = A * B + C` for an `M x N x K` tile across one wave.
//! Its lane-to-element layout is data ([`MmaAtom::a_elem`], [`MmaAtom::b_elem`],
//! [`MmaAtom::c_elem`]): the GEMM pipeline loads and stores fragments through
//! these maps and never assumes an instruction's layout. One file per
//! architecture's instructions; the emulator holds its own, independent
//! tables, so a wrong map here shows up as wrong numbers there.

pub mod fma;
pub mod mfma;
pub mod mma_sync;
pub mod wmma;

use crate::elem::Elem;
use convgrad_types::instance::AtomKind;

/// Per-lane operand registers of an atom (a fixed-size array).
pub trait Frag<T>: Copy + Default + AsRef<[T]> + AsMut<[T]> {}
impl<T: Copy + Default, const L: usize> Frag<T> for [T; L] where [T; L]: Default {}

/// One matrix instruction and its lane layouts.
pub trait MmaAtom {
    /// Which instruction.
    const KIND: AtomKind;
    /// Rows of A / D.
    const M: usize;
    /// Columns of B / D.
    const N: usize;
    /// Reduction length.
    const K: usize;
    /// Lanes that issue it together (1 for the scalar FMA atom).
    const WAVE: usize;
    /// Multiplicand element type.
    type In: Elem;
    /// A operand registers of one lane.
    type A: Frag<Self::In>;
    /// B operand registers of one lane.
    type B: Frag<Self::In>;
    /// Accumulator registers of one lane.
    type C: Frag<f32>;
    /// `(i, k)` of the A element in register slot `e` of `lane`.
    fn a_elem(lane: usize, e: usize) -> (usize, usize);
    /// `(k, j)` of the B element in slot `e` of `lane`.
    fn b_elem(lane: usize, e: usize) -> (usize, usize);
    /// `(i, j)` of the accumulator in slot `e` of `lane`.
    fn c_elem(lane: usize, e: usize) -> (usize, usize);
    /// `c = a * b + c`, issued by the whole wave.
    ///
    /// # Safety
    /// Every lane of the wave must call it together (convergent).
    unsafe fn mma(a: &Self::A, b: &Self::B, c: &mut Self::C);
}

/// Raw 16-bit operand bits of a fragment (for the emulator and bit-cast intrinsics).
#[inline(always)]
pub fn bits<T: Elem, const L: usize>(f: &[T; L]) -> [u16; L] {
    core::array::from_fn(|i| f[i].bits16())
}
