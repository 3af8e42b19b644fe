//! Kernel argument blocks. Every kernel takes exactly one argument, one of these
//! `#[repr(C)]` structs. The Rust kernels see a pointer (the gpu-kernel ABI
//! passes aggregates over 8 bytes by pointer). On NVIDIA the build makes it a
//! by-value parameter (`xtask::build::ir::args_by_value`): the block travels in
//! the launch's parameter space and field reads are constant-bank operands. On
//! AMD it stays a pointer to the block in device memory.

use crate::epilogue::{EpiChain, MAX_D};
use bytemuck::{Pod, Zeroable};

/// Split-K mode bits of [`ConvArgs::flags`].
pub mod flags {
    /// Partials are added atomically into the f32 workspace.
    pub const SPLITK_ATOMIC: u32 = 1;
    /// Partials are stored per k-batch into the f32 workspace (fixed-order reduction later).
    pub const SPLITK_STORE: u32 = 2;
    /// Backward-data: `w` is a channel-packed copy (host `ops::pack`) whose
    /// channel rows are readable, zeros, past `C` up to a whole 16-byte
    /// vector: its vector loads may cover them where `C` fills no vectors.
    pub const W_PADDED: u32 = 4;
}

/// Bits of [`DirectPart::vec_mode`]: the direct kernels' channel-vector fast path.
pub mod vec_mode {
    /// The fast path is on (else the scalar path runs).
    pub const ON: u32 = 1;
    /// Lanes are consecutive groups (depthwise, `C = K = 1`); else consecutive
    /// channels of one group.
    pub const DEPTHWISE: u32 = 2;
    /// Vectors of half the 16-byte width (8 bytes).
    pub const HALF: u32 = 4;
    /// Backward-weight: streams go through row segments of the output (8
    /// pixels along x), down the output's columns, reading each filter row's
    /// `x` window once (filter width 3, stride and dilation 1 along x).
    pub const ROWS: u32 = 16;
    /// Backward-data, channel lanes: `dy`'s `k` run is one aligned vector
    /// per [`KV`](../../convgrad_device/conv/bwd_data/direct/constant.KV.html)
    /// `k`s (else read one scalar per `k`).
    pub const DY_KVEC: u32 = 32;
}

/// Division of `u32` numerators below 2^31 by an invariant divisor, as a
/// multiply-high, an add and a shift (Granlund-Montgomery), so kernels never
/// divide at run time. The host computes it once per divisor.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct FastDiv {
    /// Magic multiplier.
    pub mul: u32,
    /// Post-shift.
    pub shift: u32,
    /// The divisor itself (for remainders).
    pub div: u32,
    /// Padding to 16 bytes.
    pub _pad: u32,
}

impl FastDiv {
    /// Prepares division by `d` (`d >= 1`; a zero divisor is treated as 1).
    pub const fn new(d: u32) -> FastDiv {
        let d = if d == 0 { 1 } else { d };
        let shift = 32 - (d - 1).leading_zeros();
        let mul = ((1u64 << 32) * ((1u64 << shift) - d as u64) / d as u64 + 1) as u32;
        FastDiv { mul, shift, div: d, _pad: 0 }
    }
    /// `n / d` for `n < 2^31`.
    #[inline(always)]
    pub fn div(&self, n: u32) -> u32 {
        let hi = ((n as u64 * self.mul as u64) >> 32) as u32;
        (hi + n) >> self.shift
    }
    /// `(n / d, n % d)` for `n < 2^31`.
    #[inline(always)]
    pub fn divmod(&self, n: u32) -> (u32, u32) {
        let q = self.div(n);
        (q, n - q * self.div)
    }
}

/// Arguments of the convolution kernels (backward-weight and backward-data,
/// every family: implicit GEMM, direct, depthwise strips, tap shifts).
///
/// A common header (addresses, problem sizes, tensor strides, the epilogue
/// and divisions by problem sizes, read by every family) followed by one
/// part per kernel family, each read only by the kernels its docs name. Every
/// field has one meaning; a part no kernel of the plan reads may hold the
/// host's values for it or zeros.
///
/// Tensor strides are per canonical axis (see [`crate::layout`]); device
/// addresses are `u64`. A `D` tensor has the shape of the op's result and
/// may broadcast (stride 0 on an axis).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct ConvArgs {
    /// Input activations `x` (backward-weight) or input gradient `dx` (backward-data).
    pub x: u64,
    /// Weights `w` (backward-data) or weight gradient `dw` (backward-weight).
    pub w: u64,
    /// Output gradient `dy`.
    pub dy: u64,
    /// f32 split-K workspace of backward-weight (0 when unused): the
    /// partials, then one arrival counter per output tile.
    pub ws: u64,
    /// Epilogue `D` tensors.
    pub d: [u64; MAX_D],
    /// Layout signature, [`ConvArgs::ABI`]; every kernel traps on a mismatch.
    pub abi: u32,
    /// Split-K mode of backward-weight, see [`flags`] (0: no split).
    pub flags: u32,
    /// Groups.
    pub g: u32,
    /// Batch.
    pub n: u32,
    /// Input channels per group.
    pub c: u32,
    /// Output channels per group.
    pub k: u32,
    /// Input spatial sizes `[D, H, W]` (right-aligned, unused = 1).
    pub input: [u32; 3],
    /// Output spatial sizes `[Do, Ho, Wo]`.
    pub output: [u32; 3],
    /// Filter sizes `[Z, Y, X]`.
    pub filter: [u32; 3],
    /// Strides.
    pub stride: [u32; 3],
    /// Dilations.
    pub dilation: [u32; 3],
    /// Left pads.
    pub lpad: [u32; 3],
    /// Strides of `x`/`dx` per canonical axis.
    pub x_strides: [u32; 6],
    /// Strides of `w`/`dw`.
    pub w_strides: [u32; 6],
    /// Strides of `dy`.
    pub dy_strides: [u32; 6],
    /// Strides of each `D` tensor (in the result tensor's canonical axes).
    pub d_strides: [[u32; 6]; MAX_D],
    /// Fused epilogue (every kernel, on its result).
    pub epi: EpiChain,
    /// Divisions by the output sizes `Do`, `Ho`, `Wo` (backward-weight
    /// direct: output pixel index -> `(n, o)`, row segments).
    pub div_out: [FastDiv; 3],
    /// Divisions by the input sizes `D`, `H`, `W` (backward-data direct and
    /// depthwise strips: thread -> pixel; both tap-shift kernels: `[0]`,
    /// grid image -> `(n, z)`).
    pub div_in: [FastDiv; 3],
    /// Division by `C` (backward-data direct; backward-weight: filter
    /// column -> `(c, tap)` in every kernel, direct channel lanes).
    pub div_c: FastDiv,
    /// Division by `G` (the direct kernels' scalar paths: groups are a
    /// thread index).
    pub div_g: FastDiv,
    /// Division by the filter's `X` (tap index -> `(y, x)`: backward-weight
    /// filter columns, both tap-shift kernels).
    pub div_x: FastDiv,
    /// Division by the filter's `Y` (backward-weight filter columns).
    pub div_y: FastDiv,
    /// Division by the filter's taps `Z*Y*X` (backward-weight filter columns).
    pub div_zyx: FastDiv,
    /// The implicit-GEMM view and split-K.
    pub gemm: GemmPart,
    /// Backward-data's stride-residue slices.
    pub slices: SlicePart,
    /// The direct kernels' threads.
    pub direct: DirectPart,
    /// Depthwise backward-data by column strips.
    pub strips: StripPart,
    /// The tap-shift kernels' padded grid.
    pub tap_shift: TapShiftPart,
    /// Small-C inputs unfolded into channels (backward-weight's pre-pass
    /// and the kernels that run on its output).
    pub unfold: UnfoldPart,
    /// The TMA kernels' row blocks and taps ([`TmaPart`]).
    pub tma_rows: TmaPart,
    /// Padding to a multiple of 8 bytes (zero).
    pub _pad: u32,
    /// Padding that puts [`ConvArgs::tma`] on a 64-byte boundary (zero).
    pub _tma_pad: [u32; 2],
    /// Tensor maps of the TMA kernels (`Op::BwdDataTma`: `[dY, W]`), 128
    /// bytes each, filled per call from the tensors' addresses: on NVIDIA
    /// the driver's opaque `CUtensorMap` (the block is a `grid_constant`
    /// parameter aligned to 64 bytes, where `cp.async.bulk.tensor` reads
    /// it), on the emulator a [`TmaMap`]. Zero for the other kernels.
    pub tma: [[u64; 16]; 2],
}

const _: () = assert!(core::mem::offset_of!(ConvArgs, tma) % 64 == 0);

/// A tiled tensor map as convgrad describes it: what the host encodes into
/// a [`ConvArgs::tma`] slot (`cuTensorMapEncodeTiled` on NVIDIA) and what
/// the emulator reads back from it. Dimension 0 is the contiguous one.
/// Elements outside `dims` read as zero; a box of `boxes` elements lands
/// in LDS in dimension order (dimension 0 fastest), 16-byte chunks
/// swizzled by the 128-byte pattern when `swizzle` is 128. Along a
/// dimension with an element stride `e > 1` the box spans `boxes` elements
/// and reads every `e`-th, `ceil(boxes / e)` in all (the driver's
/// `elementStrides`: a strided convolution's input read per output pixel).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct TmaMap {
    /// [`TmaMap::MAGIC`]: tells a map from an unfilled slot.
    pub magic: u32,
    /// Dimensions used (1 to 5).
    pub rank: u32,
    /// Device address of element 0 (16-byte aligned).
    pub base: u64,
    /// Elements per dimension.
    pub dims: [u32; 5],
    /// Bytes per element (2).
    pub elem_bytes: u32,
    /// Byte strides of dimensions 1.. (multiples of 16).
    pub strides: [u64; 4],
    /// Box elements per dimension (at most 256; dimension 0's bytes a
    /// multiple of 16, at most 128 with the 128-byte swizzle).
    pub boxes: [u32; 5],
    /// Swizzle span in bytes: 0 or 128.
    pub swizzle: u32,
    /// Element strides per dimension (1 to 8; 0 reads as 1; dimension 0's
    /// is 1): see above.
    pub elem_strides: [u32; 5],
    /// Padding to 8 bytes (zero).
    pub _pad: u32,
}

impl TmaMap {
    /// `"TMAP"`.
    pub const MAGIC: u32 = 0x5041_4d54;
    /// Element stride of dimension `d` (0 reads as 1).
    pub const fn step(&self, d: usize) -> u32 {
        if self.elem_strides[d] == 0 { 1 } else { self.elem_strides[d] }
    }
    /// Elements one box reads along dimension `d`.
    pub const fn box_elems(&self, d: usize) -> u32 {
        self.boxes[d].div_ceil(self.step(d))
    }
    /// Bytes of one box.
    pub const fn box_bytes(&self) -> u32 {
        let mut b = self.elem_bytes;
        let mut d = 0;
        while d < self.rank as usize {
            b *= self.box_elems(d);
            d += 1;
        }
        b
    }
}

const _: () = assert!(core::mem::size_of::<TmaMap>() <= 128);

/// The implicit-GEMM view of the problem, per group, and its split-K
/// (backward-weight: every kernel, as the split-K workspace is the
/// `[k_batch][G][M][N]` dW matrix; backward-data: the GEMM kernel).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GemmPart {
    /// GEMM M per group (backward-weight `K`; backward-data `N` times the
    /// largest stride slice's pixels).
    pub m: u32,
    /// GEMM N per group (backward-weight `C * Z*Y*X`, the filter columns;
    /// backward-data `C`).
    pub n: u32,
    /// GEMM K, the reduction length (backward-weight `N * output pixels`;
    /// backward-data the largest class's taps times `K`).
    pub k: u32,
    /// Backward-weight: split-K batches (grid z = `G * k_batch` on the
    /// GEMM, `k_batch` on the other kernels); 1 without a split.
    pub k_batch: u32,
    /// Backward-weight GEMM and direct scalar path: GEMM K per k-batch (a
    /// multiple of the tile's K).
    pub k_per_batch: u32,
    /// GEMM tiles along M (grid x = `tiles_m * tiles_n`, M fastest).
    pub tiles_m: u32,
    /// GEMM tiles along N.
    pub tiles_n: u32,
    /// Backward-weight: elements of one split-K partial, `G * M * N`.
    pub partial_elems: u32,
    /// Backward-weight direct scalar path: division by GEMM N.
    pub div_n: FastDiv,
}

/// Backward-data's stride-residue slices (see `convgrad_device::conv::residues`):
/// the GEMM kernel runs one GEMM per slice; the direct and depthwise-strip
/// kernels find each pixel's tap class.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct SlicePart {
    /// `S / gcd(S, dilation)` per dim, the number of tap residue classes
    /// (taps `t, t + tilde, ...` reach the same input pixels).
    pub tilde: [u32; 3],
    /// `dilation / gcd(S, dilation)`, how far the output pixel moves
    /// between consecutive taps of one class.
    pub tap_step: [u32; 3],
    /// Slices, `S_z * S_y * S_x` (the GEMM's grid y).
    pub count: u32,
    /// `ceil(I / S)` per dim, input pixels of the largest slice (GEMM).
    pub rows: [u32; 3],
    /// Division by `rows` (GEMM: row -> `(n, q)`).
    pub div_rows: [FastDiv; 3],
    /// Division by the strides (slice index -> residues; pixel -> residue).
    pub div_stride: [FastDiv; 3],
    /// Division by `K` (GEMM: reduction index -> `(tap, k)`).
    pub div_k: FastDiv,
    /// Division by the taps of one residue class per dim, `[floor, ceil]`
    /// of `filter / tilde` (classes `t < filter % tilde` have the larger count).
    pub div_dot: [[FastDiv; 3]; 2],
    /// GEMM epilogue: division of a column (channel) by the channels of one
    /// `dx` channel row. `C` where channels are plain; with y folded into
    /// the channels (stride == filter along y and x), a column is `(filter
    /// row i, channel)` and row `i` starts [`SlicePart::channel_row_stride`]
    /// elements further on in `dx`.
    pub div_channel_row: FastDiv,
    /// Element stride of `dx` between channel rows (0 where channels are plain).
    pub channel_row_stride: u32,
    /// Padding to a multiple of 8 bytes.
    pub _pad: u32,
}

/// The direct kernels (backward-data direct and depthwise strips,
/// backward-weight direct and depthwise filter rows): the channel-vector
/// path and the thread decompositions. Backward-weight's depthwise filter
/// rows read the fields of the direct kernel's channel vectors with its own
/// units: columns are `(filter row, channel vector)`, the reduction units
/// are chunks of output rows and [`div_segs`](Self::div_segs) divides by the
/// chunks per output row.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct DirectPart {
    /// The channel-vector fast path, [`vec_mode`] bits (0: scalar path;
    /// both direct kernels dispatch on it).
    pub vec_mode: u32,
    /// Backward-data direct, scalar path: input-gradient elements `G * N *
    /// C * pixels`, one thread each.
    pub dx_elems: u32,
    /// Backward-weight direct, channel vectors: thread columns per workgroup
    /// (`256 / block_cols` streams).
    pub block_cols: u32,
    /// Backward-weight direct, channel vectors: thread columns in all
    /// (channel vectors * `K` * tap blocks).
    pub cols: u32,
    /// Backward-weight direct, channel vectors: reduction units (output
    /// pixels, or row segments with [`vec_mode::ROWS`]) of one stream.
    pub stream_len: u32,
    /// Division by the channel vectors, `G * C / VW` (backward-data direct
    /// and depthwise strips: the fastest thread index; backward-weight
    /// direct: a thread column's vector).
    pub div_vec: FastDiv,
    /// Backward-data direct and depthwise strips: division by the pixel
    /// runs per slice row (`ceil(slice row / RUN)`).
    pub div_runs: FastDiv,
    /// Backward-weight direct, channel vectors: division by [`block_cols`](Self::block_cols)
    /// (thread -> `(stream, column)`).
    pub div_block_cols: FastDiv,
    /// Backward-weight direct, channel vectors: division by the tap blocks
    /// (the fastest index of a thread column).
    pub div_tap_blocks: FastDiv,
    /// Backward-weight direct, [`vec_mode::ROWS`]: division by the row
    /// segments per output row.
    pub div_segs: FastDiv,
}

/// Depthwise backward-data by column strips
/// ([`Op::BwdDataDepthwise`](crate::instance::Op)); the kernel also reads
/// [`SlicePart`] and [`DirectPart::div_vec`], [`DirectPart::div_runs`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct StripPart {
    /// Slice rows per strip (0: not a strip plan).
    pub rows: u32,
    /// Division by the strips per stride-slice column.
    pub div_strips: FastDiv,
}

/// The padded pixel grid of the tap-shift kernels (backward-data and
/// backward-weight, `convgrad_device::conv::tap_grid`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct TapShiftPart {
    /// Grid image rows per tile (of `div_halo[0].div` rows per image, the
    /// last `(Y - 1) * dilation` of them past the image); 0: not a
    /// tap-shift plan. Row-segment tiles: image rows per tile.
    pub halo_rows: u32,
    /// Tiles over all images (backward-data: grid x).
    pub tiles: u32,
    /// Backward-weight: tiles per split-K batch (each workgroup sums its
    /// batch's tiles). Row-segment tiles: the workgroups along x (each
    /// walks the tiles this far apart).
    pub tiles_per_batch: u32,
    /// Division by the grid rows per image and by the grid row length
    /// (`H + (Y - 1) * dil`, `W + (X - 1) * dil`). Row-segment tiles: by
    /// the 64-pixel segments per image row and the bands of `halo_rows`
    /// image rows per image.
    pub div_halo: [FastDiv; 2],
}

/// `x` unfolded into channels ahead of backward-weight
/// ([`Op::BwdWeightUnfold`](crate::instance::Op), `convgrad_device::conv::bwd_weight::unfold`):
/// `x'` is `[N][D'][H'][W'][C']` packed, the trailing `dims` spatial axes
/// running over output positions and their taps times `C` as channels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct UnfoldPart {
    /// Every backward-weight kernel: the real channels of an unfolded or
    /// packed problem (taps of the unfolded axes times `C`; `C`); filter
    /// columns of channels at or past it pad `C'` to whole vectors and are
    /// not stored. 0: all are stored (not unfolded, or no padding).
    /// The pre-pass: the channels of the source that exist.
    pub valid: u32,
    /// The pre-pass: spatial axes unfolded, counted from x (1: x; 2: y, x; 3: all).
    pub dims: u32,
    /// The pre-pass: elements of `x'` (a multiple of 16 bytes' worth).
    pub elems: u32,
    /// Every backward-weight kernel: the rows of `dW` (its `K`) that exist
    /// where the problem's `K'` pads them to whole vectors (a packed `dy`);
    /// rows at or past it are not stored. 0: all are stored.
    /// The pre-pass: the images (axis 1) of the source that exist; rows of
    /// the copy past them are zeros.
    pub rows: u32,
    /// The pre-pass: division by the 16-byte vectors per pixel of `x'`.
    pub div_vecs: FastDiv,
    /// The pre-pass: division by `x'`'s spatial sizes `[D', H', W']`.
    pub div_pix: [FastDiv; 3],
}

/// The TMA kernels on filters with taps (`convgrad_device::conv::{bwd_data,
/// bwd_weight}::tma`): pixels go in blocks of `2^lg_block` along
/// `[W, H, N]`, blocks ordered W fastest, one map box each. Backward-data:
/// a tile's rows are one block of input pixels, the reduction runs over the
/// taps, `k_pad` channels each (`k_pad == 0`: rows are the pixels in order,
/// a 1x1 filter). Backward-weight: each reduction step is one block of
/// output pixels (`lg_block` all 0: the pixels in order, a 1x1 filter).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct TmaPart {
    /// log2 of a block's pixels along `W`, `H` and `N` (they sum to log2 of
    /// the tile's BM, backward-data, or BK, backward-weight).
    pub lg_block: [u32; 3],
    /// Backward-data: `K` rounded up to the tile's BK (0: no taps, see above).
    pub k_pad: u32,
    /// Divisions by the blocks along `W` and `H`.
    pub div_blocks: [FastDiv; 2],
    /// Padding to 64 bytes (zero).
    pub _pad: [u32; 4],
}

/// FNV-1a over a list of words, usable in constants.
pub const fn fnv1a(words: &[u32]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < words.len() {
        let mut w = words[i];
        let mut b = 0;
        while b < 4 {
            h ^= w & 0xff;
            h = h.wrapping_mul(0x0100_0193);
            w >>= 8;
            b += 1;
        }
        i += 1;
    }
    h
}

impl ConvArgs {
    /// Backward-weight: the reduction one split-K batch takes, in the unit
    /// of the plan's kernel: tap-shift tiles, the direct kernel's stream
    /// units on its channel-vector path, else GEMM K (what tells two
    /// launches of one kernel and `k_batch` apart).
    pub fn per_batch(&self) -> u32 {
        if self.tap_shift.halo_rows > 0 {
            self.tap_shift.tiles_per_batch
        } else if self.direct.vec_mode != 0 {
            self.direct.stream_len
        } else {
            self.gemm.k_per_batch
        }
    }

    /// Layout signature: the size, the offsets of the header's field groups
    /// and of each part, and each part's size and inner offsets.
    pub const ABI: u32 = {
        use core::mem::{offset_of, size_of};
        fnv1a(&[
            size_of::<ConvArgs>() as u32,
            offset_of!(ConvArgs, x) as u32,
            offset_of!(ConvArgs, d) as u32,
            offset_of!(ConvArgs, abi) as u32,
            offset_of!(ConvArgs, flags) as u32,
            offset_of!(ConvArgs, g) as u32,
            offset_of!(ConvArgs, input) as u32,
            offset_of!(ConvArgs, lpad) as u32,
            offset_of!(ConvArgs, x_strides) as u32,
            offset_of!(ConvArgs, d_strides) as u32,
            offset_of!(ConvArgs, epi) as u32,
            size_of::<EpiChain>() as u32,
            offset_of!(ConvArgs, div_out) as u32,
            offset_of!(ConvArgs, div_in) as u32,
            offset_of!(ConvArgs, div_zyx) as u32,
            offset_of!(ConvArgs, gemm) as u32,
            size_of::<GemmPart>() as u32,
            offset_of!(GemmPart, k_batch) as u32,
            offset_of!(GemmPart, div_n) as u32,
            offset_of!(ConvArgs, slices) as u32,
            size_of::<SlicePart>() as u32,
            offset_of!(SlicePart, count) as u32,
            offset_of!(SlicePart, div_dot) as u32,
            offset_of!(ConvArgs, direct) as u32,
            size_of::<DirectPart>() as u32,
            offset_of!(DirectPart, stream_len) as u32,
            offset_of!(DirectPart, div_segs) as u32,
            offset_of!(ConvArgs, strips) as u32,
            size_of::<StripPart>() as u32,
            offset_of!(ConvArgs, tap_shift) as u32,
            size_of::<TapShiftPart>() as u32,
            offset_of!(TapShiftPart, div_halo) as u32,
            offset_of!(ConvArgs, unfold) as u32,
            size_of::<UnfoldPart>() as u32,
            offset_of!(UnfoldPart, div_pix) as u32,
            offset_of!(ConvArgs, tma_rows) as u32,
            size_of::<TmaPart>() as u32,
            offset_of!(TmaPart, div_blocks) as u32,
            offset_of!(ConvArgs, tma) as u32,
            14, // bump when a field's meaning changes
        ])
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn fast_division_is_exact() {
        let mut x: u64 = 12345;
        for d in (1..300u32).chain([641, 1000, 3136, 65535, 65536, 1 << 20, (1 << 30) + 7, (1 << 31) - 1]) {
            let f = FastDiv::new(d);
            for n in [0u32, 1, d - 1, d, d.saturating_add(1), d.saturating_mul(2) - 1, (1 << 31) - 1, (1 << 31) - 2] {
                if n >= 1 << 31 {
                    continue;
                }
                assert_eq!(f.divmod(n), (n / d, n % d), "{n} / {d}");
            }
            for _ in 0..200 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let n = (x >> 33) as u32;
                assert_eq!(f.div(n), n / d, "{n} / {d}");
            }
        }
    }
    #[test]
    fn args_are_8_byte_multiple_and_signed() {
        assert_eq!(core::mem::size_of::<ConvArgs>() % 8, 0);
        assert_ne!(ConvArgs::ABI, 0);
    }
}
