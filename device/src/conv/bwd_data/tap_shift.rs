//! Backward-data by tap shifts ([`Op::BwdDataTapShift`]): stride 1, few
//! channels per group (ResNeXt's 16).
//!
//! The slice GEMM of [`bwd_data`] gathers `dY` once per tap: at C = K = 16
//! a 128-row tile re-reads every `dY` pixel nine times through per-element
//! address arithmetic, and a 32-column tile multiplies half padding, which
//! left it slower than cuDNN on ResNeXt's grouped 14x14 shape. Here a
//! workgroup stages one halo
//! of `dY` for [`TileConfig::waves_n`] groups in LDS, once, plus those
//! groups' whole filters; every tap is then the same tile read `shift` rows
//! further on.
//!
//! Pixels are laid out on a padded grid: each image is `Hp = H + (Y-1)*d`
//! rows of `Wp = W + (X-1)*d` columns, images stacked (`(n, z)` batch-major,
//! a 1-tall z filter). Output `(i, j)` of an image is grid row `i*Wp + j`,
//! and with the filter flipped (`y' = Y-1-y`) tap `(y', x')` reads grid row
//! `i*Wp + j + y'*d*Wp + x'*d` of the halo, whose grid row `r*Wp + c` holds
//! `dY[r + P - (Y-1)*d, c + P - (X-1)*d]` (zero outside). So tap `t`'s A
//! operand is the halo from row `shift(t)` on: one GEMM per tap, `M` = grid
//! rows, `N = C`, reduction `K`, all accumulating into one tile. Grid rows
//! past the image (`j >= W`, `i >= H`) are computed and dropped.
//!
//! A workgroup takes [`TapShiftPart::halo_rows`] image rows (`halo_rows * Wp <=
//! BM` grid rows; the host checks that the largest shift is at most
//! [`TileConfig::HALO_SLACK`], the halo rows staged past `BM`), and wave
//! column `wn` computes group `g0 + wn`: grid `x` = row tiles, `y` = group
//! sets. Every input-gradient element is written once, by the tile holding
//! its grid row.
//!
//! [`Op::BwdDataTapShift`]: convgrad_types::instance::Op::BwdDataTapShift
//! [`bwd_data`]: super::gemm
//! [`TapShiftPart::halo_rows`]: convgrad_types::params::TapShiftPart::halo_rows

use crate::conv::tap_grid::{Grid, Staged, Window};
use crate::conv::epilogue::{self, BiasRun, RUN, store_run_at};
use crate::conv::{copy_filter, load_args, offset};
use crate::arch;
use crate::atom::{LdsTile, MmaAtom};
use crate::elem::Elem;
use crate::gemm::Tile;
use crate::gemm::warp::{self, Acc};
use convgrad_types::instance::TileConfig;
use convgrad_types::params::ConvArgs;

/// Where the tile's pieces sit in LDS and on the grid.
#[derive(Clone, Copy)]
struct Halo {
    /// `dY` row length in LDS (elements).
    lda: usize,
    /// Byte offset of the weights.
    b_base: usize,
    /// Weight row length in LDS (elements).
    ldb: usize,
    grid: Grid,
}

/// Kernel body (module docs). `BK` is the channel count `K` padded, `BN /
/// WN` the channels `C` padded; `FC` atoms span one group's columns.
///
/// # Safety
/// Launch contract of the instance (grid above, block, LDS) and a valid argument block.
#[inline(always)]
pub unsafe fn kernel<Tl: Tile, Out: Elem, const FR: usize, const FC: usize>(args: *const ConvArgs) {
    const { assert!(FR == Tl::FR && FC * Tl::At::N == Tl::TN && Tl::BK.is_multiple_of(Tl::At::K)) };
    let a = unsafe { load_args(args) };
    let tile = Tl::CONFIG;
    let e = <Tl::In as Elem>::BYTES;
    let [t, gs, _] = arch::block_id();
    let h = Halo {
        lda: tile.halo_a_ld() as usize,
        b_base: tile.halo_a_bytes(e as u32) as usize,
        ldb: tile.halo_b_ld(Tl::At::KIND) as usize,
        grid: Grid::tile(a, t),
    };
    let g0 = gs * Tl::WN as u32;
    let threads = Tl::THREADS;
    // dY pixel of grid position (r, c): r - (Y-1)*d + P (wrapping below
    // zero). Rows past those the taps reach from the tile (read only for
    // dropped grid rows) are zeroed.
    let oy = a.lpad[1].wrapping_sub((a.filter[1] - 1) * a.dilation[1]);
    let ox = a.lpad[2].wrapping_sub((a.filter[2] - 1) * a.dilation[2]);
    let need = a.tap_shift.halo_rows * a.tap_shift.div_halo[1].div + Grid::max_shift(a);
    let dy = Staged { p: a.dy as *const Tl::In, s: a.dy_strides, chans: a.k, g0, groups: a.g };
    let rows = Tl::BM + TileConfig::HALO_SLACK as usize;
    let win = Window { step: [1, 1], add: [oy, ox], hw: [a.output[1], a.output[2]], limit: need };
    const { assert!(Tl::THREADS.is_multiple_of(Tl::WN * Tl::BK / <Tl::In as Elem>::LANES)) };
    unsafe {
        dy.copy::<Tl>(a, &h.grid, win, Tl::BK, rows, h.lda, 0, threads);
        stage_weights::<Tl>(a, &h, g0, threads);
    }
    arch::cp_async_commit();
    arch::cp_async_wait(0);
    arch::barrier();
    let acc = unsafe { multiply::<Tl, FR, FC>(a, &h) };
    // The result tile reuses the LDS the waves were reading.
    arch::barrier();
    unsafe { epilogue::<Tl, Out, FR, FC>(a, &h, g0, &acc) }
}

/// Copies the filters of the `WN` groups, flipped, as `[group][tap][k][c]`
/// (tap `y' * X + x'` holds `W[Y-1-y', X-1-x']`): 16-byte vectors along `c`
/// where `W` has them, else element by element; zeros past `C`, `K`, `G`.
#[inline(always)]
unsafe fn stage_weights<Tl: Tile>(a: &ConvArgs, h: &Halo, g0: u32, threads: usize) {
    let cp = Tl::TN;
    let taps = (a.filter[1] * a.filter[2]) as usize;
    let ws = &a.w_strides;
    let full = <Tl::In as Elem>::LANES;
    let vec = crate::conv::vector_axis(ws, 2, crate::conv::w_vec_channels(a, full as u32), full as u32);
    let lanes = if vec { full } else { 1 };
    let per_k = cp / lanes;
    let total = per_k * Tl::BK * Tl::WN * taps;
    let w = a.w as *const Tl::In;
    let mut idx = arch::thread_id() as usize;
    while idx < total {
        let (q, cv) = (idx / per_k, idx % per_k);
        let (q, k) = (q / Tl::BK, q % Tl::BK);
        let (tap, gl) = (q / Tl::WN, q % Tl::WN);
        let (yf, xf) = a.div_x.divmod(tap as u32);
        let (y, x) = (a.filter[1] - 1 - yf, a.filter[2] - 1 - xf);
        let (g, c) = (g0 + gl as u32, (cv * lanes) as u32);
        let inside = (g < a.g) & ((k as u32) < a.k) & (c < a.c);
        let o = offset(ws, [g, k as u32, c, 0, y, x]);
        let at = h.b_base + (((gl * TileConfig::HALO_TAPS as usize + tap) * Tl::BK + k) * h.ldb + cv * lanes) * <Tl::In as Elem>::BYTES;
        unsafe { copy_filter(w, o, inside, vec, at) };
        idx += threads;
    }
}

/// Every tap's GEMM into one tile: wave `(wm, wn)` takes rows `wm * TM ..`
/// of group `wn`, A from the halo `shift` rows on, B from the tap's weights.
#[inline(always)]
unsafe fn multiply<Tl: Tile, const FR: usize, const FC: usize>(a: &ConvArgs, h: &Halo) -> Acc<Tl::At, FR, FC> {
    let tid = arch::thread_id() as usize;
    let (lane, wave) = (tid % Tl::At::WAVE, tid / Tl::At::WAVE);
    let (wm, wn) = (wave % Tl::WM, wave / Tl::WM);
    let e = <Tl::In as Elem>::BYTES;
    let ta = LdsTile { base: 0, ld: h.lda, mn_major: false };
    let i0 = wm * Tl::TM;
    let mut acc: Acc<Tl::At, FR, FC> = [[Default::default(); FC]; FR];
    for yf in 0..a.filter[1] as usize {
        for xf in 0..a.filter[2] as usize {
            let shift = Grid::shift(a, yf, xf);
            let tap = yf * a.filter[2] as usize + xf;
            let tb = LdsTile {
                base: h.b_base + (wn * TileConfig::HALO_TAPS as usize + tap) * Tl::BK * h.ldb * e,
                ld: h.ldb,
                mn_major: true,
            };
            // B first, then one A fragment at a time (`A_EACH`).
            let af = |fr: usize, ks: usize| unsafe {
                Tl::At::load_a(ta, i0 + fr * Tl::At::M + shift, wn * Tl::BK + ks, lane)
            };
            let bf = |ks: usize| unsafe { Tl::At::load_b_frags::<FC>(tb, 0, ks, lane) };
            unsafe { warp::multiply::<Tl, FR, FC, true>(&mut acc, af, bf) };
        }
    }
    acc
}

/// Writes the tile through the epilogue: tile row `m` is grid row `m` of
/// the tile, column `n` channel `n % (BN / WN)` of group `g0 + n / (BN / WN)`.
#[inline(always)]
unsafe fn epilogue<Tl: Tile, Out: Elem, const FR: usize, const FC: usize>(
    a: &ConvArgs,
    h: &Halo,
    g0: u32,
    acc: &Acc<Tl::At, FR, FC>,
) {
    const NONE: u64 = u64::MAX;
    let cp = Tl::TN as u32;
    let xs = &a.x_strides;
    // Tile row -> (n, z, y, x) of dX, if it is an input pixel.
    let pixel = |m: usize| -> Option<(u32, u32, u32, u32)> {
        let [n, z, y, x] = h.grid.at(a, m as u32)?;
        let dr = a.tap_shift.div_halo[1].div(m as u32);
        (dr < a.tap_shift.halo_rows && y < a.input[1] && x < a.input[2]).then_some((n, z, y, x))
    };
    let row = |m: usize| match pixel(m) {
        Some((n, z, y, x)) => offset(xs, [g0, n, 0, z, y, x]) as u64,
        None => NONE,
    };
    let mut bias = BiasRun::new();
    let store = |m: usize, j0: usize, at: u64, v: [f32; RUN]| {
        let (gl, c0) = (j0 as u32 / cp, j0 as u32 % cp);
        let g = g0 + gl;
        if at == NONE || c0 >= a.c || g >= a.g {
            return;
        }
        let idx = || {
            let (n, z, y, x) = pixel(m).unwrap_or((0, 0, 0, 0));
            [g, n, c0, z, y, x]
        };
        let o = at as usize + gl as usize * xs[0] as usize + c0 as usize * xs[2] as usize;
        unsafe { store_run_at::<Out, 2>(a, a.x, xs, o, idx, a.c - c0, v, &mut bias) }
    };
    unsafe { epilogue::store_tile_rows::<Tl, FR, FC, true, false>(acc, row, store) }
}
