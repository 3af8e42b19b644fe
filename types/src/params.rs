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
}

/// Bits of [`ConvArgs::vec_mode`]: the direct kernels' channel-vector fast path.
pub mod vec_mode {
    /// The fast path is on (else the scalar path runs).
    pub const ON: u32 = 1;
    /// Lanes are consecutive groups (depthwise, `C = K = 1`); else consecutive
    /// channels of one group.
    pub const DW: u32 = 2;
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

/// Arguments of the implicit-GEMM convolution kernels (backward-weight and
/// backward-data) and of their split-K finishing kernels.
///
/// Tensor strides are per canonical axis (see [`crate::layout`]); device
/// addresses are `u64`. A `D` tensor has the shape of the op's result and
/// may broadcast (stride 0 on an axis).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct ConvArgs {
    /// Input activations `x` (bwd-weight) or input gradient `dx` (bwd-data).
    pub x: u64,
    /// Weights `w` (bwd-data) or weight gradient `dw` (bwd-weight).
    pub w: u64,
    /// Output gradient `dy`.
    pub dy: u64,
    /// f32 split-K workspace (0 when unused).
    pub ws: u64,
    /// Epilogue `D` tensors.
    pub d: [u64; MAX_D],
    /// Layout signature, [`ConvArgs::ABI`].
    pub abi: u32,
    /// Split-K mode, see [`flags`].
    pub flags: u32,
    /// Groups, batch, input channels, output channels (per group).
    pub g: u32,
    /// Batch.
    pub n: u32,
    /// Input channels per group.
    pub c: u32,
    /// Output channels per group.
    pub k: u32,
    /// Input spatial sizes `[D, H, W]` (right-aligned, unused = 1).
    pub input: [u32; 3],
    /// Output spatial sizes.
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
    /// GEMM sizes per group.
    pub gemm_m: u32,
    /// GEMM N.
    pub gemm_n: u32,
    /// GEMM K (reduction length).
    pub gemm_k: u32,
    /// Number of split-K batches (grid z = G * k_batch).
    pub k_batch: u32,
    /// Reduction length handled by one k-batch (a multiple of the tile's K).
    pub k_per_batch: u32,
    /// Tiles along M.
    pub tiles_m: u32,
    /// Tiles along N.
    pub tiles_n: u32,
    /// Elements of one split-K partial (G * M * N), for the finishing kernels.
    pub partial_elems: u32,
    /// Fused epilogue.
    pub epi: EpiChain,
    /// Divisions by the output sizes `Do`, `Ho`, `Wo`.
    pub div_out: [FastDiv; 3],
    /// Division by `C`.
    pub div_c: FastDiv,
    /// Division by the filter's `X`.
    pub div_x: FastDiv,
    /// Division by the filter's `Y`.
    pub div_y: FastDiv,
    /// Division by `Z*Y*X`.
    pub div_zyx: FastDiv,
    /// Division by `G` (direct kernels: groups are the fastest thread index).
    pub div_g: FastDiv,
    /// Division by GEMM N.
    pub div_gemm_n: FastDiv,
    /// Backward-data: `S / gcd(S, dilation)` per dim, the number of tap
    /// residue classes (taps `t, t + tilde, ...` reach the same input pixels).
    pub tilde: [u32; 3],
    /// Backward-data: `dilation / gcd(S, dilation)`, how far the output pixel
    /// moves between consecutive taps of one class.
    pub tap_step: [u32; 3],
    /// Backward-data: stride-residue slices, `S_z * S_y * S_x` (grid y).
    pub slices: u32,
    /// Backward-data: `ceil(I / S)` per dim, input pixels of the largest slice.
    pub slice_rows: [u32; 3],
    /// Division by `slice_rows`.
    pub div_slice_rows: [FastDiv; 3],
    /// Division by the strides (slice index -> residues; pixel -> residue).
    pub div_stride: [FastDiv; 3],
    /// Division by the input sizes (direct backward-data: thread -> pixel).
    pub div_in: [FastDiv; 3],
    /// Division by `K` (backward-data reduction index -> (tap, k)).
    pub div_k: FastDiv,
    /// Division by the taps of one residue class per dim, `[floor, ceil]` of
    /// `filter / tilde` (classes `t < filter % tilde` have the larger count).
    pub div_dot: [[FastDiv; 3]; 2],
    /// Direct kernels' channel-vector fast path, [`vec_mode`] bits (0: scalar path).
    pub vec_mode: u32,
    /// Direct backward-weight: thread columns per workgroup (`256 / vec_block_cols` streams).
    pub vec_block_cols: u32,
    /// Direct backward-weight: thread columns in all (channel vectors * K * tap blocks).
    pub vec_cols: u32,
    /// Direct backward-weight: output pixels of one reduction stream.
    pub vec_stream_len: u32,
    /// Division by the channel vectors (per pixel in backward-data, per `k` in backward-weight).
    pub div_vec: FastDiv,
    /// Backward-data: division by the pixel runs per slice row; backward-weight:
    /// division by the columns per workgroup.
    pub div_run: FastDiv,
    /// Direct backward-weight: division by the tap blocks (the fastest index
    /// of a thread column).
    pub div_tap_blocks: FastDiv,
    /// Direct backward-weight, [`vec_mode::ROWS`]: division by the row
    /// segments per output row.
    pub div_segs: FastDiv,
    /// Depthwise backward-data by column strips ([`Op::BwdDataDepthwise`](crate::instance::Op)):
    /// division by the strips per stride-slice column.
    pub div_strip: FastDiv,
    /// Depthwise backward-data by column strips: slice rows per strip.
    pub strip_rows: u32,
    /// Backward-data by tap shifts: output rows per tile (of `div_halo[0].div`
    /// rows per image, the last `(Y - 1) * dilation` of them past the image).
    pub halo_rows: u32,
    /// Backward-data by tap shifts: division by the halo rows per image and
    /// by the halo row length (`H + (Y - 1) * dil`, `W + (X - 1) * dil`).
    pub div_halo: [FastDiv; 2],
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
    /// Layout signature: size plus the offset of every field.
    pub const ABI: u32 = {
        use core::mem::{offset_of, size_of};
        fnv1a(&[
            size_of::<ConvArgs>() as u32,
            offset_of!(ConvArgs, x) as u32,
            offset_of!(ConvArgs, w) as u32,
            offset_of!(ConvArgs, dy) as u32,
            offset_of!(ConvArgs, ws) as u32,
            offset_of!(ConvArgs, d) as u32,
            offset_of!(ConvArgs, abi) as u32,
            offset_of!(ConvArgs, flags) as u32,
            offset_of!(ConvArgs, g) as u32,
            offset_of!(ConvArgs, input) as u32,
            offset_of!(ConvArgs, lpad) as u32,
            offset_of!(ConvArgs, x_strides) as u32,
            offset_of!(ConvArgs, d_strides) as u32,
            offset_of!(ConvArgs, gemm_m) as u32,
            offset_of!(ConvArgs, partial_elems) as u32,
            offset_of!(ConvArgs, epi) as u32,
            size_of::<EpiChain>() as u32,
            offset_of!(ConvArgs, div_out) as u32,
            offset_of!(ConvArgs, div_zyx) as u32,
            offset_of!(ConvArgs, div_gemm_n) as u32,
            offset_of!(ConvArgs, tilde) as u32,
            offset_of!(ConvArgs, div_dot) as u32,
            offset_of!(ConvArgs, vec_mode) as u32,
            offset_of!(ConvArgs, div_run) as u32,
            offset_of!(ConvArgs, div_segs) as u32,
            offset_of!(ConvArgs, div_strip) as u32,
            offset_of!(ConvArgs, strip_rows) as u32,
            offset_of!(ConvArgs, div_halo) as u32,
            9, // bump when a field's meaning changes
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
