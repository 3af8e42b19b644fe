//! Blocks of pixels of the TMA kernels on filters with taps
//! ([`TmaPart`]): `2^lg_block` pixels along `[W, H, N]` that one tensor-map
//! box reads, blocks numbered W fastest.
//!
//! [`TmaPart`]: convgrad_types::params::TmaPart

use convgrad_types::params::TmaPart;

/// log2 of a block's pixels.
#[inline(always)]
pub fn bits(t: &TmaPart) -> u32 {
    t.lg_block[0] + t.lg_block[1] + t.lg_block[2]
}

/// The first pixel `[w, h, n]` of block `b`.
#[inline(always)]
pub fn corner(t: &TmaPart, b: u32) -> [u32; 3] {
    let lg = &t.lg_block;
    let (rest, wb) = t.div_blocks[0].divmod(b);
    let (nb, hb) = t.div_blocks[1].divmod(rest);
    [wb << lg[0], hb << lg[1], nb << lg[2]]
}

/// Pixel `[w, h, n]` of index `i` (`0 .. 2^bits`) from corner `c`: W fastest.
#[inline(always)]
pub fn in_block(t: &TmaPart, c: [u32; 3], i: u32) -> [u32; 3] {
    let lg = &t.lg_block;
    let mask = |l: u32| (1u32 << l) - 1;
    [c[0] + (i & mask(lg[0])), c[1] + ((i >> lg[0]) & mask(lg[1])), c[2] + (i >> (lg[0] + lg[1]))]
}
