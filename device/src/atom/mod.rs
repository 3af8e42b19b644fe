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
pub mod mfma_gfx950;
pub mod mma_sync;
pub mod wgmma;
pub mod wmma;
pub mod wmma_gfx12;

use crate::arch;
use crate::elem::Elem;
use convgrad_types::instance::AtomKind;

/// Where an operand tile of 16-bit or 32-bit elements lies in LDS: element
/// `(row, k)` (row = M for A, N for B) sits at byte offset
/// `base + (row * ld + k) * E`, or with `mn_major` (rows contiguous, as the
/// tensor had them) at `base + (k * ld + row) * E`.
#[derive(Clone, Copy)]
pub struct LdsTile {
    /// Byte offset of element (0, 0).
    pub base: usize,
    /// Leading dimension in elements (padded).
    pub ld: usize,
    /// Whether rows, not reduction indices, are contiguous.
    pub mn_major: bool,
}

impl LdsTile {
    /// Byte offset of element `(row, k)` of `T`.
    #[inline(always)]
    pub fn at<T: Elem>(&self, row: usize, k: usize) -> usize {
        let i = if self.mn_major { k * self.ld + row } else { row * self.ld + k };
        self.base + i * T::BYTES
    }
}

/// An operand tile in LDS in one of the canonical layouts of the warpgroup
/// instructions (PTX ISA, "Shared Memory Matrix Layout"; 16-bit elements).
/// Rows run along M (A) or N (B); `mn_major` says which index is contiguous.
/// Only the swizzled layouts are built: `swizzle == W` (32, 64, 128 bytes),
/// lines of `W` bytes, 8 lines an atom, the 16-byte chunk index XORed with
/// the line index (bits 4.. with bits 7..): K-major lines are a row's k
/// (`sbo` between 8-row groups), MN-major lines are `W / 2` rows of one k
/// (`sbo` between 8-k groups, `lbo` between row blocks). The XOR works on
/// the absolute address, so atoms sit on `8 * W`-byte boundaries of LDS. The
/// unswizzled core-matrix layout (which the emulator still models) capped
/// the warpgroup kernels' throughput ([`crate::gemm::warpgroup`]).
#[derive(Clone, Copy)]
pub struct CoreTile {
    /// Byte offset of element (0, 0); a multiple of 16.
    pub base: usize,
    /// "Leading byte offset" (see above).
    pub lbo: u32,
    /// "Stride byte offset" (see above).
    pub sbo: u32,
    /// Whether rows, not k, are contiguous.
    pub mn_major: bool,
    /// Swizzle width in bytes: 32, 64 or 128.
    pub swizzle: u32,
}

impl CoreTile {
    /// Byte offset of 16-bit element `(row, k)`.
    #[inline(always)]
    pub fn at(&self, row: usize, k: usize) -> usize {
        let (lbo, sbo, w) = (self.lbo as usize, self.sbo as usize, self.swizzle as usize);
        let per_line = w / 2;
        let off = if self.mn_major {
            (row % per_line) * 2 + (row / per_line) * lbo + (k % 8) * w + (k / 8) * sbo
        } else {
            (row % 8) * w + (row / 8) * sbo + k * 2
        };
        let a = self.base + off;
        a ^ (((a >> 7) & (w / 16 - 1)) << 4)
    }
    /// The tile moved by `rows` rows (a multiple of 8, or of `swizzle / 2`
    /// for swizzled MN-major tiles) and `k` reductions (a multiple of 8; of
    /// the line for swizzled K-major tiles, or inside it).
    #[inline(always)]
    pub fn offset(self, rows: usize, k: usize) -> CoreTile {
        let (lbo, sbo, w) = (self.lbo as usize, self.sbo as usize, self.swizzle as usize);
        let d = if self.mn_major { (rows / (w / 2)) * lbo + (k / 8) * sbo } else { (rows / 8) * sbo + k * 2 };
        CoreTile { base: self.base + d, ..self }
    }
}

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
    /// A run of A slots `r*len .. (r+1)*len` holding consecutive k of one row,
    /// as one aligned type (one LDS load when rows are K-contiguous).
    type ARun: Copy + Default + AsRef<[Self::In]>;
    /// Same for B: consecutive k of one column.
    type BRun: Copy + Default + AsRef<[Self::In]>;
    /// `(i, k)` of the A element in register slot `e` of `lane`.
    fn a_elem(lane: usize, e: usize) -> (usize, usize);
    /// `(k, j)` of the B element in slot `e` of `lane`.
    fn b_elem(lane: usize, e: usize) -> (usize, usize);
    /// `(i, j)` of the accumulator in slot `e` of `lane`.
    fn c_elem(lane: usize, e: usize) -> (usize, usize);
    /// `(lane, e)` holding accumulator `(i, j)`: the inverse of [`MmaAtom::c_elem`].
    fn c_slot(i: usize, j: usize) -> (usize, usize);
    /// The A fragment of rows `i0 ..` and reductions `k0 ..` of an LDS tile
    /// (element by element through [`MmaAtom::a_elem`]; atoms with a matrix
    /// load instruction override it).
    ///
    /// # Safety
    /// The whole wave calls it together; the fragment lies in LDS.
    #[inline(always)]
    unsafe fn load_a(t: LdsTile, i0: usize, k0: usize, lane: usize) -> Self::A {
        let mut f = Self::A::default();
        for (e, x) in f.as_mut().iter_mut().enumerate() {
            let (i, k) = Self::a_elem(lane, e);
            *x = unsafe { arch::lds_ld(t.at::<Self::In>(i0 + i, k0 + k)) };
        }
        f
    }
    /// The B fragment of columns `j0 ..` and reductions `k0 ..` (as [`MmaAtom::load_a`]).
    ///
    /// # Safety
    /// As [`MmaAtom::load_a`].
    #[inline(always)]
    unsafe fn load_b(t: LdsTile, j0: usize, k0: usize, lane: usize) -> Self::B {
        let mut f = Self::B::default();
        for (e, x) in f.as_mut().iter_mut().enumerate() {
            let (k, j) = Self::b_elem(lane, e);
            *x = unsafe { arch::lds_ld(t.at::<Self::In>(j0 + j, k0 + k)) };
        }
        f
    }
    /// The B fragments of columns `j0 ..` and `j0 + N ..` together.
    ///
    /// # Safety
    /// As [`MmaAtom::load_a`].
    #[inline(always)]
    unsafe fn load_b2(t: LdsTile, j0: usize, k0: usize, lane: usize) -> [Self::B; 2] {
        unsafe { [Self::load_b(t, j0, k0, lane), Self::load_b(t, j0 + Self::N, k0, lane)] }
    }
    /// The `F` B fragments of columns `j0 ..` (`F * N` of them), in pairs
    /// through [`MmaAtom::load_b2`].
    ///
    /// # Safety
    /// As [`MmaAtom::load_a`].
    #[inline(always)]
    unsafe fn load_b_frags<const F: usize>(t: LdsTile, j0: usize, k0: usize, lane: usize) -> [Self::B; F] {
        let mut bf: [Self::B; F] = [Default::default(); F];
        for q in 0..F / 2 {
            let [x, y] = unsafe { Self::load_b2(t, j0 + 2 * q * Self::N, k0, lane) };
            (bf[2 * q], bf[2 * q + 1]) = (x, y);
        }
        if F % 2 == 1 {
            bf[F - 1] = unsafe { Self::load_b(t, j0 + (F - 1) * Self::N, k0, lane) };
        }
        bf
    }
    /// `c = a * b + c`, issued by the whole wave.
    ///
    /// # Safety
    /// Every lane of the wave must call it together (convergent).
    unsafe fn mma(a: &Self::A, b: &Self::B, c: &mut Self::C);
    /// Whether the instruction reads its operands from LDS ([`MmaAtom::mma_lds`])
    /// instead of registers (warpgroup atoms: no A/B fragments).
    const FROM_LDS: bool = false;
    /// `c = a * b + c` with `M x K` A and `N x K` B tiles read from LDS,
    /// asynchronously: results are defined after [`crate::arch::wgmma_wait`].
    ///
    /// # Safety
    /// Only for [`MmaAtom::FROM_LDS`] atoms; every lane of the warpgroup calls
    /// it together with the same tiles, which lie in LDS.
    unsafe fn mma_lds(a: CoreTile, b: CoreTile, c: &mut Self::C) {
        let _ = (a, b, c);
        arch::trap()
    }
}

/// Raw 16-bit operand bits of a fragment (for the emulator and bit-cast intrinsics).
#[inline(always)]
pub fn bits<T: Elem, const L: usize>(f: &[T; L]) -> [u16; L] {
    core::array::from_fn(|i| f[i].bits16())
}

/// Declares a register atom and implements [`MmaAtom`] for it from its data,
/// as CuTe's MMA traits are data: the struct (named as its [`AtomKind`];
/// generic over the element type with its input trait, if any), its
/// `M x N x K` shape and wave, the per-lane register arrays and k-run type
/// (the same for A and B), the four lane maps (`a_elem`, `b_elem`, `c_elem`,
/// `c_slot`, in any order) and the body of `mma`. What follows the data
/// (matrix-load overrides) goes into the impl as written.
macro_rules! mma_atom {
    (
        $(#[$doc:meta])*
        pub struct $name:ident$(<$t:ident: $input:ident>)?: $m:literal x $n:literal x $k:literal, wave $wave:literal;
        In = $in:ty, A = $a:ty, B = $b:ty, C = $c:ty, Run = $run:ty;
        $(fn $map:ident($p:pat_param, $q:pat_param) = $at:expr;)*
        unsafe fn mma($x:ident, $y:ident, $z:ident) = $mma:expr;
        $($extra:tt)*
    ) => {
        $(#[$doc])*
        pub struct $name$(<$t>(core::marker::PhantomData<$t>))?;

        impl$(<$t: $input>)? $crate::atom::MmaAtom for $name$(<$t>)? {
            const KIND: $crate::atom::AtomKind = $crate::atom::AtomKind::$name;
            const M: usize = $m;
            const N: usize = $n;
            const K: usize = $k;
            const WAVE: usize = $wave;
            type In = $in;
            type A = $a;
            type B = $b;
            type C = $c;
            type ARun = $run;
            type BRun = $run;
            $(
                #[inline(always)]
                fn $map($p: usize, $q: usize) -> (usize, usize) {
                    $at
                }
            )*
            #[inline(always)]
            unsafe fn mma($x: &$a, $y: &$b, $z: &mut $c) {
                $mma
            }
            $($extra)*
        }
    };
}
pub(crate) use mma_atom;

/// `#[repr(simd)]` wrappers of arrays: the LLVM vector types the matrix
/// intrinsics take and return.
#[cfg(any(target_arch = "amdgpu", target_arch = "nvptx64"))]
macro_rules! simd_types {
    ($($name:ident = [$t:ty; $n:literal]),* $(,)?) => {$(
        #[repr(simd)]
        #[derive(Clone, Copy)]
        pub struct $name(pub [$t; $n]);
    )*};
}
#[cfg(any(target_arch = "amdgpu", target_arch = "nvptx64"))]
pub(crate) use simd_types;

/// Bf16 elements as the `i16` vector lanes the bf16 intrinsics take (Bf16
/// is a transparent u16: the bits reinterpret as-is).
#[cfg(target_arch = "amdgpu")]
#[inline(always)]
pub(crate) fn bf16_lanes<const L: usize>(v: &[crate::elem::Bf16; L]) -> [i16; L] {
    // SAFETY: `L` 2-byte plain-data elements either way.
    unsafe { core::mem::transmute_copy::<[crate::elem::Bf16; L], [i16; L]>(v) }
}

/// Declares an atom's input trait: the element types (f16, bf16) its
/// instruction takes, each method `$f` one instruction on operand arrays of
/// `$la`, `$lb`, `$lc` elements. The GPU targets implement it with their
/// intrinsics; on the host it runs as the emulator's matrix ops `$f16` and
/// `$bf16`.
macro_rules! input_trait {
    (
        $(#[$doc:meta])*
        pub trait $input:ident {
            $($(#[$fdoc:meta])* fn $f:ident[$la:literal, $lb:literal, $lc:literal] = $f16:ident, $bf16:ident;)*
        }
    ) => {
        $(#[$doc])*
        pub trait $input: $crate::elem::Elem {
            $(
                $(#[$fdoc])*
                ///
                /// # Safety
                /// Every lane of the wave must call it together (convergent).
                unsafe fn $f(a: &[Self; $la], b: &[Self; $lb], c: &mut [f32; $lc]);
            )*
        }

        #[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
        mod emu {
            use super::$input;
            use crate::atom::emulate;
            use crate::elem::{Bf16, f16};
            use convgrad_emu::matrix::MatrixOp;
            impl $input for f16 {
                $(
                    #[inline(always)]
                    unsafe fn $f(a: &[f16; $la], b: &[f16; $lb], c: &mut [f32; $lc]) {
                        emulate(MatrixOp::$f16, a, b, c)
                    }
                )*
            }
            impl $input for Bf16 {
                $(
                    #[inline(always)]
                    unsafe fn $f(a: &[Bf16; $la], b: &[Bf16; $lb], c: &mut [f32; $lc]) {
                        emulate(MatrixOp::$bf16, a, b, c)
                    }
                )*
            }
        }
    };
}
pub(crate) use input_trait;

/// The emulator's `op` on this lane's registers of 32-bit operands (TF32
/// in f32 containers), each element as two 16-bit words, low word first.
#[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
#[inline(always)]
pub(crate) fn emulate32<const LA: usize, const LB: usize, const LC: usize>(
    op: convgrad_emu::matrix::MatrixOp, a: &[f32; LA], b: &[f32; LB], c: &mut [f32; LC],
) {
    let words = |f: &[f32]| -> ([u16; 8], usize) {
        let mut w = [0u16; 8];
        for (i, x) in f.iter().enumerate() {
            let v = x.to_bits();
            (w[2 * i], w[2 * i + 1]) = (v as u16, (v >> 16) as u16);
        }
        (w, 2 * f.len())
    };
    let ((aw, na), (bw, nb)) = (words(a), words(b));
    let cin = *c;
    convgrad_emu::lane::mma(op, &aw[..na], &bw[..nb], &cin, c);
}

/// The emulator's `op` on this lane's registers: `c = a * b + c`.
#[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
#[inline(always)]
pub(crate) fn emulate<T: Elem, const LA: usize, const LB: usize, const LC: usize>(
    op: convgrad_emu::matrix::MatrixOp, a: &[T; LA], b: &[T; LB], c: &mut [f32; LC],
) {
    let cin = *c;
    convgrad_emu::lane::mma(op, &bits(a), &bits(b), &cin, c);
}
