//! Backward-data by tap shifts over row segments ([`Op::BwdDataRows`],
//! Hopper warpgroups): stride 1, at most 64 output channels per group, a
//! 1-tall z filter.
//!
//! The slice GEMM ([`super::gemm`]) gathers `dY` once per tap: on U-Net's
//! 64-channel 256x256 layers (a reduction of 9 taps x 64) every tile
//! re-read its pixels nine times through per-vector address arithmetic,
//! and the pipeline's fill and the epilogue were not hidden behind a
//! reduction that short. Here a tile is `bm / 64` image rows by 64 columns
//! of `dX` (warpgroup `wm` takes row `wm`, one wgmma row block of 64 pixels).
//! Its `dY` halo, `(rows + (Y-1)d) x (64 + (X-1)d)` pixels of 64 channels,
//! is staged once as 128-byte K-major lines (one line a pixel, 128-byte
//! swizzle), so tap `(y', x')` of row `wm` is the 64 lines from
//! `(wm + y'd) * width + x'd` on: a descriptor one line shift further (the
//! swizzle works on absolute LDS addresses, so any line is a valid start).
//! The group's flipped filter for `bn` input channels (`[tap][k][c]`,
//! MN-major slabs) stays in LDS while the workgroup walks tiles
//! `TapShiftPart::tiles_per_batch` apart; two workgroups per SM overlap one's
//! epilogue (through the halo's LDS) with the other's multiplies.
//!
//! Grid: `x` = workgroups walking the tiles (image, band of rows, segment),
//! `y` = `bn`-channel column tiles of `C`, `z` = groups. Every element of
//! `dX` is written once, by the tile holding its pixel; halo pixels outside
//! `dY` and channels past `K` are zeros.
//!
//! [`Op::BwdDataRows`]: convgrad_types::instance::Op::BwdDataRows

use crate::arch;
use crate::atom::{CoreTile, MmaAtom};
use crate::conv::epilogue::{self, BiasRun, RUN, store_run_at};
use crate::conv::{copy_filter, load_args, offset, vector_axis};
use crate::elem::Elem;
use crate::gemm::Tile;
use crate::gemm::warp::Acc;
use convgrad_types::params::ConvArgs;

/// Pixels per image row of a tile (one warpgroup instruction's M).
const SEG: u32 = convgrad_types::contract::bwd_data_rows::SEG as u32;
/// Bytes of a halo line: one pixel's 64 channels of 16 bits.
const LINE: usize = 128;

/// The halo line `line` on: a K-major slab of 128-byte lines.
#[inline(always)]
fn lines(line: usize) -> CoreTile {
    CoreTile { base: line * LINE, lbo: 16, sbo: (8 * LINE) as u32, mn_major: false, swizzle: 128 }
}

/// Tap `tap`'s weights: an MN-major `bk x bn` slab (64 channels a line).
#[inline(always)]
fn weights<Tl: Tile>(tap: usize) -> CoreTile {
    let base = Tl::CONFIG.rows_halo_bytes(Tl::At::KIND, 2) as usize + tap * Tl::BK * Tl::BN * 2;
    CoreTile { base, lbo: (Tl::BK / 8 * 1024) as u32, sbo: 1024, mn_major: true, swizzle: 128 }
}

/// A tile's place: image `b = (n, z)`, first image row and column.
#[derive(Clone, Copy)]
struct Place {
    n: u32,
    z: u32,
    y0: u32,
    x0: u32,
}

impl Place {
    #[inline(always)]
    fn of(a: &ConvArgs, t: u32) -> Place {
        let (rest, seg) = a.tap_shift.div_halo[0].divmod(t);
        let (b, band) = a.tap_shift.div_halo[1].divmod(rest);
        let (n, z) = a.div_in[0].divmod(b);
        Place { n, z, y0: band * a.tap_shift.halo_rows, x0: seg * SEG }
    }
}

/// Kernel body (module docs).
///
/// # Safety
/// Launch contract of the instance (grid above, block, LDS) and a valid argument block.
#[inline(always)]
pub unsafe fn kernel<Tl: Tile, Out: Elem, const FR: usize, const FC: usize>(args: *const ConvArgs) {
    const {
        assert!(
            Tl::At::FROM_LDS
                && FR == 1
                && FC == 1
                && Tl::BK == 64
                && Tl::TM == SEG as usize
                && Tl::WN == 1
                && <Tl::In as Elem>::BYTES == 2
        )
    };
    let a = unsafe { load_args(args) };
    let [wgs, ct, g] = arch::block_id();
    let c0 = ct * Tl::BN as u32;
    unsafe { stage_weights::<Tl>(a, g, c0) };
    let mut t = wgs;
    while t < a.tap_shift.tiles {
        let at = Place::of(a, t);
        unsafe { stage_halo::<Tl>(a, g, at) };
        arch::cp_async_commit();
        arch::cp_async_wait(0);
        arch::fence_proxy_async();
        arch::barrier();
        let acc = unsafe { multiply::<Tl>(a) };
        // Every warpgroup is done with the halo: the result tile takes its place.
        arch::barrier();
        unsafe { store::<Tl, Out>(a, g, c0, at, &acc) };
        // The result tile is read before the next halo lands on it.
        arch::barrier();
        t += a.tap_shift.tiles_per_batch;
    }
}

/// Copies the group's filter for channels `c0 ..` flipped (tap `y' * X + x'`
/// holds `W[Y-1-y', X-1-x']`): 16-byte vectors along `c` where `W` has
/// them, else element by element; zeros past `C` and `K`.
#[inline(always)]
unsafe fn stage_weights<Tl: Tile>(a: &ConvArgs, g: u32, c0: u32) {
    let ws = &a.w_strides;
    let lanes = <Tl::In as Elem>::LANES;
    let vec = vector_axis(ws, 2, crate::conv::w_vec_channels(a, lanes as u32), lanes as u32);
    let step = if vec { lanes } else { 1 };
    let per_k = Tl::BN / step;
    let taps = (a.filter[1] * a.filter[2]) as usize;
    let w = a.w as *const Tl::In;
    let mut idx = arch::thread_id() as usize;
    while idx < per_k * Tl::BK * taps {
        let (q, cv) = (idx / per_k, idx % per_k);
        let (tap, k) = (q / Tl::BK, q % Tl::BK);
        let (yf, xf) = a.div_x.divmod(tap as u32);
        let (y, x) = (a.filter[1] - 1 - yf, a.filter[2] - 1 - xf);
        let c = c0 + (cv * step) as u32;
        let inside = ((k as u32) < a.k) & (c < a.c);
        let o = offset(ws, [g, k as u32, c, 0, y, x]);
        let at = weights::<Tl>(tap).at(cv * step, k);
        unsafe { copy_filter(w, o, inside, vec, at) };
        idx += Tl::THREADS;
    }
}

/// Copies the tile's `dY` halo: line `r * width + col` holds pixel
/// `(y0 + r + P - (Y-1)d, x0 + col + P - (X-1)d)` (zero outside `dY`), 8
/// threads a line (one 16-byte chunk each, the 8 chunks of a swizzled line
/// in distinct bank groups), walking lines by carries.
#[inline(always)]
unsafe fn stage_halo<Tl: Tile>(a: &ConvArgs, g: u32, at: Place) {
    let s = &a.dy_strides;
    let pad = |d: usize| (a.filter[d] - 1) * a.dilation[d];
    let width = SEG + pad(2);
    let total = (a.tap_shift.halo_rows + pad(1)) * width;
    let oy = at.y0.wrapping_add(a.lpad[1]).wrapping_sub(pad(1));
    let ox = at.x0.wrapping_add(a.lpad[2]).wrapping_sub(pad(2));
    let tid = arch::thread_id();
    let chunk = tid % 8;
    let ch = chunk * 8;
    let base = g * s[0] + ch * s[2] + at.n * s[1] + at.z * s[3];
    let p = a.dy as *const Tl::In;
    let step = Tl::THREADS as u32 / 8;
    let mut line = tid / 8;
    let (mut r, mut col) = (line / width, line % width);
    while line < total {
        let (y, x) = (oy.wrapping_add(r), ox.wrapping_add(col));
        let inside = (ch < a.k) & (y < a.output[1]) & (x < a.output[2]);
        let src = inside.then(|| p.wrapping_add((base + y * s[4] + x * s[5]) as usize) as *const <Tl::In as Elem>::V16);
        unsafe { arch::cp_async16(lines(0).at(line as usize, ch as usize), src) };
        line += step;
        col += step;
        while col >= width {
            col -= width;
            r += 1;
        }
    }
}

/// Every tap's instructions into one tile: warpgroup `wm` (image row `wm`)
/// reads the halo from line `(wm + y'd) * width + x'd`, the reduction
/// stopping at `K` rounded up to the instruction's 16.
#[inline(always)]
unsafe fn multiply<Tl: Tile>(a: &ConvArgs) -> Acc<Tl::At, 1, 1> {
    let wm = arch::thread_id() as usize / Tl::At::WAVE;
    let width = (SEG + (a.filter[2] - 1) * a.dilation[2]) as usize;
    let (dy, dx) = (a.dilation[1] as usize, a.dilation[2] as usize);
    let kend = (a.k as usize).next_multiple_of(Tl::At::K);
    let mut acc: Acc<Tl::At, 1, 1> = [[Default::default(); 1]; 1];
    arch::wgmma_fence();
    for yf in 0..a.filter[1] as usize {
        for xf in 0..a.filter[2] as usize {
            let ta = lines((wm + yf * dy) * width + xf * dx);
            let tb = weights::<Tl>(yf * a.filter[2] as usize + xf);
            let mut ks = 0;
            while ks < kend {
                unsafe { Tl::At::mma_lds(ta.offset(0, ks), tb.offset(0, ks), &mut acc[0][0]) };
                ks += Tl::At::K;
            }
        }
    }
    arch::wgmma_commit();
    arch::wgmma_wait(0);
    acc
}

/// Writes the tile through the epilogue: tile row `m` is pixel
/// `(y0 + m / 64, x0 + m % 64)`, column `n` channel `c0 + n`.
#[inline(always)]
unsafe fn store<Tl: Tile, Out: Elem>(a: &ConvArgs, g: u32, c0: u32, at: Place, acc: &Acc<Tl::At, 1, 1>) {
    const NONE: u64 = u64::MAX;
    let xs = &a.x_strides;
    let pixel = |m: usize| {
        let (y, x) = (at.y0 + m as u32 / SEG, at.x0 + m as u32 % SEG);
        (y < a.input[1] && x < a.input[2]).then_some((y, x))
    };
    let row = |m: usize| match pixel(m) {
        Some((y, x)) => offset(xs, [g, at.n, 0, at.z, y, x]) as u64,
        None => NONE,
    };
    let mut bias = BiasRun::new();
    let store = |m: usize, j0: usize, o: u64, v: [f32; RUN]| {
        let c = c0 + j0 as u32;
        if o == NONE || c >= a.c {
            return;
        }
        let idx = || {
            let (y, x) = pixel(m).unwrap_or((0, 0));
            [g, at.n, c, at.z, y, x]
        };
        let o = o as usize + c as usize * xs[2] as usize;
        unsafe { store_run_at::<Out, 2>(a, a.x, xs, o, idx, a.c - c, v, &mut bias) }
    };
    unsafe { epilogue::store_tile_rows::<Tl, 1, 1, true, false>(acc, row, store) }
}
