//! The implicit-GEMM pipeline, shared by every convolution op.
//!
//! The main loops, the epilogue and the tiled kernels are generic over one
//! [`Tile`]: the atom and the tile's sizes ([`TileShape`] per instance).
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
//!     Hopper's `wgmma` reads straight from LDS;
//!   - [`tma`]: the same slabs as tensor-map boxes, one thread issuing them
//!     (operands that are plain strided tensors, `Op::BwdDataTma`).
//!
//!   The first two feed the atoms from per-wave fragments through
//!   [`warp::multiply`] (as do the tap-shift kernels); the op's epilogue
//!   ([`crate::conv::epilogue`]) takes the accumulators in runs of columns.
//! - [`splitk`]: split-K coordinates and the fixed-order reduction of f32 partials.
//! - Epilogues come from `convgrad_types::epilogue` and are applied by the op's sink.

pub mod block;
pub mod multistage;
pub mod splitk;
pub mod tma;
pub mod warp;
pub mod warpgroup;

use crate::atom::MmaAtom;
use crate::elem::Elem;
use convgrad_types::instance::TileConfig;

/// A workgroup tile's shape, as one type: the matrix atom and the tile
/// `BM x BN`, reduced `BK` at a time by `WM x WN` waves
/// ([`TileShape`] implements it for every instance). Kernels and main loops
/// take one `Tl: Tile` instead of the atom and five sizes; arrays sized by
/// atoms per wave still need their lengths as const generics (`FR`, `FC`:
/// no `generic_const_exprs`), which the entry points check against
/// [`Tile::FR`] and [`Tile::FC`].
pub trait Tile {
    /// Multiplicand element type (the atom's).
    type In: Elem;
    /// The matrix atom.
    type At: MmaAtom<In = Self::In>;
    /// Tile rows (GEMM M).
    const BM: usize;
    /// Tile columns (GEMM N).
    const BN: usize;
    /// Reduction indices per main-loop step.
    const BK: usize;
    /// Waves along M.
    const WM: usize;
    /// Waves along N.
    const WN: usize;
    /// Rows of a wave's part of the tile.
    const TM: usize = Self::BM / Self::WM;
    /// Columns of a wave's part of the tile.
    const TN: usize = Self::BN / Self::WN;
    /// Atoms per wave along M of the GEMM main loops (accumulator rows).
    const FR: usize = Self::TM / <Self::At as MmaAtom>::M;
    /// Atoms per wave along N of the GEMM main loops (accumulator columns).
    const FC: usize = Self::TN / <Self::At as MmaAtom>::N;
    /// Threads of the workgroup.
    const THREADS: usize = Self::WM * Self::WN * <Self::At as MmaAtom>::WAVE;
    /// The tile as the host sees it (LDS sizes, stages).
    const CONFIG: TileConfig = TileConfig::of(Self::BM, Self::BN, Self::BK, Self::WM, Self::WN);
    /// K-slabs in LDS at once ([`TileConfig::stages`]).
    const STAGES: usize = Self::CONFIG.stages(<Self::At as MmaAtom>::KIND) as usize;
    /// Bytes of one stage of the asynchronous-copy main loops, the A slab
    /// then the B slab ([`TileConfig::stage_bytes`]).
    const STAGE_BYTES: usize =
        Self::CONFIG.stage_bytes(<Self::In as Elem>::BYTES as u32, <Self::At as MmaAtom>::KIND) as usize;
    /// Byte offset of the B slab in such a stage ([`TileConfig::slab_bytes`] of A).
    const B_OFFSET: usize = TileConfig::slab_bytes(
        Self::BM as u32,
        Self::BK as u32,
        <Self::In as Elem>::BYTES as u32,
        <Self::At as MmaAtom>::KIND,
    ) as usize;
    /// The A operand's K-slab, `BM x BK`.
    type SlabA: SlabShape;
    /// The B operand's K-slab, `BN x BK`.
    type SlabB: SlabShape;
}

/// The [`Tile`] of atom `At` and sizes `BM x BN x BK` on `WM x WN` waves,
/// with `RING` stages in its main loop (0: the atom's choice,
/// [`TileConfig::stages`]).
pub struct TileShape<
    At,
    const BM: usize,
    const BN: usize,
    const BK: usize,
    const WM: usize,
    const WN: usize,
    const RING: usize = 0,
>(core::marker::PhantomData<At>);

impl<
    At: MmaAtom,
    const BM: usize,
    const BN: usize,
    const BK: usize,
    const WM: usize,
    const WN: usize,
    const RING: usize,
> Tile for TileShape<At, BM, BN, BK, WM, WN, RING>
{
    type In = At::In;
    type At = At;
    const BM: usize = BM;
    const BN: usize = BN;
    const BK: usize = BK;
    const WM: usize = WM;
    const WN: usize = WN;
    const CONFIG: TileConfig = TileConfig::of(BM, BN, BK, WM, WN).with_ring(RING);
    type SlabA = SlabOf<BM, BK>;
    type SlabB = SlabOf<BN, BK>;
}

/// Where a thread sits in a tile: its lane, and its wave's place `(wm, wn)`
/// among the tile's `WM x WN` waves (M fastest).
#[derive(Clone, Copy)]
pub struct Place {
    /// Lane in the wave.
    pub lane: usize,
    /// Wave row.
    pub wm: usize,
    /// Wave column.
    pub wn: usize,
}

impl Place {
    /// The place of thread `tid` in tile `Tl`.
    #[inline(always)]
    pub fn of<Tl: Tile>(tid: usize) -> Place {
        let wave = tid / Tl::At::WAVE;
        Place { lane: tid % Tl::At::WAVE, wm: wave % Tl::WM, wn: wave / Tl::WM }
    }
}

/// The shape of one operand's K-slab, `ROWS x BK`, as a type: what the
/// copies are generic over (an associated type can carry a tile's sizes
/// where a const generic argument could not be computed from them).
pub trait SlabShape {
    /// Rows of the slab (`BM` for A, `BN` for B).
    const ROWS: usize;
    /// Reduction indices of the slab.
    const BK: usize;
}

/// The [`SlabShape`] `ROWS x BK`.
pub struct SlabOf<const ROWS: usize, const BK: usize>;

impl<const ROWS: usize, const BK: usize> SlabShape for SlabOf<ROWS, BK> {
    const ROWS: usize = ROWS;
    const BK: usize = BK;
}

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

/// Calls `$f::<$g.., AMN, BMN>($arg..)` with the slab layouts `amn`, `bmn`
/// as const generics (one instance per layout pair: the fragment loads and
/// the instruction's transpose flags are then constants).
macro_rules! by_layouts {
    ($amn:expr, $bmn:expr, $f:ident::<$($g:tt),*>($($arg:expr),*)) => {
        match ($amn, $bmn) {
            (true, true) => $f::<$($g),*, true, true>($($arg),*),
            (true, false) => $f::<$($g),*, true, false>($($arg),*),
            (false, true) => $f::<$($g),*, false, true>($($arg),*),
            (false, false) => $f::<$($g),*, false, false>($($arg),*),
        }
    };
}
pub(crate) use by_layouts;

/// Runs the main loop of the atom's family for `r` and returns this lane's
/// accumulators (`FR x FC` atom fragments per wave).
///
/// # Safety
/// All threads of the workgroup must call it (barriers), launched with the
/// instance's LDS (`Instance::lds_bytes`).
#[inline(always)]
pub unsafe fn mainloop<Tl: Tile, A: Operand<T = Tl::In>, B: Operand<T = Tl::In>, const FR: usize, const FC: usize>(
    a: &A, b: &B, r: BlockRange,
) -> warp::Acc<Tl::At, FR, FC> {
    const { assert!(FR == Tl::FR && FC == Tl::FC) };
    if Tl::At::FROM_LDS {
        unsafe { warpgroup::run::<Tl, A, B, FR, FC>(a, b, r) }
    } else if Tl::CONFIG.stages(Tl::At::KIND) > 2 {
        unsafe { multistage::run::<Tl, A, B, FR, FC>(a, b, r) }
    } else {
        unsafe { block::run::<Tl, A, B, FR, FC>(a, b, r) }
    }
}
