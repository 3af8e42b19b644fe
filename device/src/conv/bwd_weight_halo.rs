//! Backward-weight by tap shifts ([`Op::BwdWeightHalo`]): stride 1, few
//! channels per group (ResNeXt's 16).
//!
//! The backward-weight GEMM gathers `im2col(X)` once per tap; here a
//! workgroup stages, per tile of the padded grid ([`super::halo`]), the `dY`
//! pixels of `halo_rows` image rows (zeros at grid positions past the
//! image) and the halo of `X` they reach, for [`TileConfig::waves_n`]
//! groups. Filter tap `(y, x)` then reads the `X` halo `y*d*Wp + x*d` rows
//! further on: `dW[tap] += dY^T X[shift(tap)..]`, `M = K`, `N = C`, the
//! reduction over the tile's grid rows. Wave `wn` owns group `g0 + wn` and
//! keeps every tap's accumulators (`HALO_TAPS` x `K x C`).
//!
//! Grid: `x` = k-batch (a run of [`ConvArgs::k_per_batch`] row tiles of
//! the [`ConvArgs::tiles_m`]), `y` = group sets. Each workgroup's sums leave
//! through the split-K partials (or the epilogue without split-K), as the
//! direct kernel's do.
//!
//! [`Op::BwdWeightHalo`]: convgrad_types::instance::Op::BwdWeightHalo

use super::bwd_weight_direct::put;
use super::halo::{Grid, Staged};
use super::load_args;
use crate::arch;
use crate::atom::{LdsTile, MmaAtom};
use crate::elem::Elem;
use convgrad_types::instance::TileConfig;
use convgrad_types::params::ConvArgs;

const TAPS: usize = TileConfig::HALO_TAPS as usize;

/// Kernel body (module docs): `BM` grid rows per tile, `BK` the channels
/// `K` padded (`FR` atoms), `CP = BN / WN` the channels `C` padded (`FC` atoms).
///
/// # Safety
/// Launch contract of the instance (grid above, block, LDS) and a valid argument block.
#[inline(always)]
pub unsafe fn kernel<
    At: MmaAtom,
    Out: Elem,
    const BM: usize,
    const BN: usize,
    const BK: usize,
    const WN: usize,
    const CP: usize,
    const FR: usize,
    const FC: usize,
>(
    args: *const ConvArgs,
) {
    const { assert!(CP == BN / WN && FC * At::N == CP && FR * At::M == BK && BM.is_multiple_of(At::K)) };
    let a = unsafe { load_args(args) };
    let tile = TileConfig::of(BM, BN, BK, 1, WN);
    let e = <At::In as Elem>::BYTES;
    let (lda, ldx) = (tile.halo_a_ld() as usize, tile.halo_x_ld() as usize);
    let x_base = BM * lda * e;
    let [kb, gs, _] = arch::block_id();
    let g0 = gs * WN as u32;
    let threads = WN * At::WAVE;
    let tid = arch::thread_id() as usize;
    let (lane, wn) = (tid % At::WAVE, tid / At::WAVE);
    let taps = (a.filter[1] * a.filter[2]) as usize;
    // Each tap's X tile: the halo `shift` rows on, this wave's group.
    let tb: [LdsTile; TAPS] = core::array::from_fn(|t| {
        let (y, x) = a.div_x.divmod(t as u32);
        let shift = Grid::shift(a, y as usize, x as usize);
        LdsTile { base: x_base + (shift * ldx + wn * CP) * e, ld: ldx, mn_major: true }
    });
    let ta = LdsTile { base: wn * BK * e, ld: lda, mn_major: true };
    let dy = Staged { p: a.dy as *const At::In, s: a.dy_strides, chans: a.k, g0, groups: a.g };
    let x = Staged { p: a.x as *const At::In, s: a.x_strides, chans: a.c, g0, groups: a.g };
    let (py, px) = (a.lpad[1], a.lpad[2]);
    let rows = a.halo_rows * a.div_halo[1].div;
    let need = rows + Grid::max_shift(a);
    let mut acc = [[[<At::C>::default(); FC]; FR]; TAPS];
    let first = kb * a.k_per_batch;
    let last = (first + a.k_per_batch).min(a.tiles_m);
    for t in first..last {
        let grid = Grid::tile(a, t);
        unsafe {
            dy.copy::<BK, WN>(BM, lda, 0, threads, |m| {
                let [n, z, r, c] = grid.at(a, m).filter(|_| m < rows)?;
                ((r < a.output[1]) & (c < a.output[2])).then_some([n, z, r, c])
            });
            x.copy::<CP, WN>(BM + TileConfig::HALO_SLACK as usize, ldx, x_base, threads, |m| {
                let [n, z, r, c] = grid.at(a, m).filter(|_| m < need)?;
                let (y, xx) = (r.wrapping_sub(py), c.wrapping_sub(px));
                ((y < a.input[1]) & (xx < a.input[2])).then_some([n, z, y, xx])
            });
        }
        arch::cp_async_commit();
        arch::cp_async_wait(0);
        arch::barrier();
        let mut ks = 0;
        while ks < BM {
            let af: [At::A; FR] = core::array::from_fn(|fr| unsafe { At::load_a(ta, fr * At::M, ks, lane) });
            for (tap, acc_t) in acc.iter_mut().enumerate() {
                if tap >= taps {
                    break;
                }
                let mut bf: [At::B; FC] = [Default::default(); FC];
                for q in 0..FC / 2 {
                    let [u, v] = unsafe { At::load_b2(tb[tap], 2 * q * At::N, ks, lane) };
                    (bf[2 * q], bf[2 * q + 1]) = (u, v);
                }
                if FC % 2 == 1 {
                    bf[FC - 1] = unsafe { At::load_b(tb[tap], (FC - 1) * At::N, ks, lane) };
                }
                for (fr, row) in acc_t.iter_mut().enumerate() {
                    for (fc, c) in row.iter_mut().enumerate() {
                        unsafe { At::mma(&af[fr], &bf[fc], c) };
                    }
                }
            }
            ks += At::K;
        }
        // The next tile's copies overwrite what the waves read.
        arch::barrier();
    }
    let g = g0 + wn as u32;
    for (tap, acc_t) in acc.iter().enumerate() {
        for (fr, row) in acc_t.iter().enumerate() {
            for (fc, frag) in row.iter().enumerate() {
                for (s, &v) in frag.as_ref().iter().enumerate() {
                    let (i, j) = At::c_elem(lane, s);
                    let (k, c) = ((fr * At::M + i) as u32, (fc * At::N + j) as u32);
                    if tap < taps && k < a.k && c < a.c && g < a.g {
                        unsafe { put::<Out>(a, kb, g, k, c, tap as u32, v) };
                    }
                }
            }
        }
    }
}
