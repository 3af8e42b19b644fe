//! Backward-data as implicit GEMMs: `dX = dY conv rot180(W)`, written straight
//! into `dX` (implicit col2im), without multiplying the zeros that the
//! transposed strided convolution would insert.
//!
//! Per dimension, input pixel `i` receives taps `f` with
//! `i + P - f*D ≡ 0 (mod S)`. All pixels of one stride residue `r = i mod S`
//! take the same class of taps, `f = t + tilde*j` (`tilde = S / gcd(S, D)`),
//! and tap `j` reads output pixel `o = q + base - j*tap_step` for
//! `i = r + S*q`. Each residue combination is a *slice*, one GEMM per group:
//! - M: rows `(n, q_z, q_y, q_x)`, `slices.rows` per dim (rows past the input
//!   are skipped),
//! - N: input channels `c`,
//! - reduction: `(j_z, j_y, j_x, k)`, k fastest, `dot` taps per dim.
//!
//! Residues no tap reaches (`dot = 0`: strides larger than the filter, or
//! `gcd(S, D) > 1`) have an empty reduction and still write `f(0, D...)`, so
//! every element of `dX` is written exactly once. Grid: `x = tiles_m * tiles_n`,
//! `y = slices`, `z = G`; stride 1 is one slice, a plain implicit GEMM.

use crate::conv::residues::Slice;
use crate::conv::epilogue::{self, BiasRun, RUN, store_run_at};
use crate::conv::{ChannelRows, ColMap, load_args, spatial_off, vector_axis};
use crate::arch;
use crate::atom::MmaAtom;
use crate::elem::Elem;
use crate::gemm::{self, BlockRange, Operand, Tile};
use convgrad_types::params::ConvArgs;

/// A reduction position of a slice GEMM: tap `j` (per dim) and channel `k`.
/// Moving on by less than `K` is a carry, not three divisions.
#[derive(Clone, Copy)]
pub struct TapPos {
    j: [u32; 3],
    k: u32,
}

impl TapPos {
    /// Position of reduction index `rk`.
    #[inline(always)]
    fn at(a: &ConvArgs, s: &Slice, rk: u32) -> TapPos {
        let (j, k) = a.slices.div_k.divmod(rk);
        TapPos { j: s.split_tap(j), k }
    }
    /// Position of `rk_next = rk + delta`; `None` when the channel stays in
    /// the same tap (the caller then just adds `delta` channels).
    #[inline(always)]
    fn wraps(&self, a: &ConvArgs, s: &Slice, rk_next: u32, delta: u32) -> Option<TapPos> {
        (self.k + delta >= a.k).then(|| TapPos::at(a, s, rk_next))
    }
}

/// A operand: `dY[g]` gathered per slice row and tap, `M x (taps * K)`.
pub struct DyGather<'a, T> {
    a: &'a ConvArgs,
    s: Slice,
    p: *const T,
    g_off: u32,
}

/// Row context of [`DyGather`]: the offset of the row's output pixel for tap
/// 0 (`q + base` per dim, may lie outside `dY`), and `q + base` per dim to
/// check a tap's pixel against the bounds. A skipped row (past the GEMM or
/// the input) gets a `v[0]` no tap brings back inside.
#[derive(Clone, Copy)]
pub struct PixRow {
    off: u32,
    v: [u32; 3],
}

/// Column context of [`DyGather`]: channel offset minus the tap's output
/// shift (so a row's offset plus this is the element's), and the shift per dim.
#[derive(Clone, Copy)]
pub struct TapK {
    off: u32,
    shift: [u32; 3],
    pos: TapPos,
}

impl<T: Elem> DyGather<'_, T> {
    #[inline(always)]
    fn tap_k(&self, pos: TapPos) -> TapK {
        let (j, st, s) = (&pos.j, &self.a.slices.tap_step, &self.a.dy_strides);
        let shift = [j[0] * st[0], j[1] * st[1], j[2] * st[2]];
        TapK { off: (pos.k * s[2]).wrapping_sub(spatial_off(shift, s)), shift, pos }
    }

    /// Element offset, or none outside `dY` (or for a skipped row). Branch
    /// free: two adds for the offset, one compare per dim for the bounds.
    #[inline(always)]
    fn offset(&self, r: &PixRow, c: &TapK) -> Option<u32> {
        let out = &self.a.output;
        // Wraps to a huge value below zero: one compare checks both ends.
        let o = [r.v[0].wrapping_sub(c.shift[0]), r.v[1].wrapping_sub(c.shift[1]), r.v[2].wrapping_sub(c.shift[2])];
        let inside = (o[0] < out[0]) & (o[1] < out[1]) & (o[2] < out[2]);
        inside.then_some(r.off.wrapping_add(c.off))
    }
}

impl<T: Elem> Operand for DyGather<'_, T> {
    type T = T;
    type Row = PixRow;
    type Col = TapK;
    #[inline(always)]
    fn rows_fast(&self) -> bool {
        // Consecutive rows are consecutive output pixels along W.
        self.a.dy_strides[5] == 1
    }
    #[inline(always)]
    fn vec_ok(&self) -> bool {
        false
    }
    #[inline(always)]
    fn k_vec_ok(&self) -> bool {
        vector_axis(&self.a.dy_strides, 2, self.a.k, T::LANES as u32)
    }
    #[inline(always)]
    fn row(&self, m: u32) -> PixRow {
        let (n, q) = Slice::split_row(self.a, m);
        let valid = m < self.a.gemm.m && self.s.pixel(self.a, q).is_some();
        let (b, s) = (&self.s.base, &self.a.dy_strides);
        let v = [q[0].wrapping_add(b[0]), q[1].wrapping_add(b[1]), q[2].wrapping_add(b[2])];
        PixRow {
            off: (self.g_off + n * s[1]).wrapping_add(spatial_off(v, s)),
            // Past any extent after any tap's shift: both stay below 2^31
            // (`ConvProblem::validate` bounds padded inputs and dilated filters).
            v: [if valid { v[0] } else { u32::MAX }, v[1], v[2]],
        }
    }
    #[inline(always)]
    fn col(&self, rk: u32) -> TapK {
        self.tap_k(TapPos::at(self.a, &self.s, rk))
    }
    #[inline(always)]
    fn col_next(&self, c: &TapK, rk_next: u32, delta: u32) -> TapK {
        match c.pos.wraps(self.a, &self.s, rk_next, delta) {
            Some(pos) => self.tap_k(pos),
            None => TapK { off: c.off.wrapping_add(delta * self.a.dy_strides[2]), pos: TapPos { k: c.pos.k + delta, ..c.pos }, ..*c },
        }
    }
    #[inline(always)]
    unsafe fn load(&self, r: &PixRow, c: &TapK) -> T {
        match self.offset(r, c) {
            Some(o) => unsafe { arch::ld(self.p, o as usize) },
            None => T::default(),
        }
    }
    #[inline(always)]
    fn kvec_src(&self, r: &PixRow, c: &TapK) -> Option<*const T::V16> {
        self.offset(r, c).map(|o| self.p.wrapping_add(o as usize) as *const T::V16)
    }
}

/// Reduction index -> offset in `W[g]` of the slice's tap and channel `k`.
pub struct WTaps<'a> {
    a: &'a ConvArgs,
    s: Slice,
}

impl WTaps<'_> {
    #[inline(always)]
    fn ctx(&self, pos: TapPos) -> (u32, TapPos) {
        let (ws, t, tl, j) = (&self.a.w_strides, &self.s.t, &self.a.slices.tilde, &pos.j);
        let off = pos.k * ws[1] + (t[0] + tl[0] * j[0]) * ws[3] + (t[1] + tl[1] * j[1]) * ws[4] + (t[2] + tl[2] * j[2]) * ws[5];
        (off, pos)
    }
}

impl ColMap for WTaps<'_> {
    type C = (u32, TapPos);
    #[inline(always)]
    fn at(&self, rk: u32) -> (u32, TapPos) {
        self.ctx(TapPos::at(self.a, &self.s, rk))
    }
    #[inline(always)]
    fn next(&self, c: &(u32, TapPos), rk_next: u32, delta: u32) -> (u32, TapPos) {
        let (off, pos) = *c;
        match pos.wraps(self.a, &self.s, rk_next, delta) {
            Some(p) => self.ctx(p),
            None => (off + delta * self.a.w_strides[1], TapPos { k: pos.k + delta, ..pos }),
        }
    }
    #[inline(always)]
    fn off(c: &(u32, TapPos)) -> u32 {
        c.0
    }
}

const _: () = assert!(RUN == convgrad_types::contract::gemm_epilogue::RUN);

/// The backward-data GEMM kernel body (grid in the module docs).
///
/// # Safety
/// Launch contract of the instance (grid, block, LDS) and a valid argument block.
#[inline(always)]
pub unsafe fn kernel<Tl: Tile, Out: Elem, const FR: usize, const FC: usize>(args: *const ConvArgs) {
    unsafe { run::<Tl, Out, FR, FC, false>(args) }
}

/// The GEMM kernel with the slice GEMM's main loop (`TMA = false`) or the
/// TMA main loop (`conv::bwd_data::tma`); the epilogue is the same.
///
/// # Safety
/// As [`kernel`]; with `TMA`, the argument block's maps filled for the tile.
#[inline(always)]
pub(crate) unsafe fn run<Tl: Tile, Out: Elem, const FR: usize, const FC: usize, const TMA: bool>(args: *const ConvArgs) {
    let a = unsafe { load_args(args) };
    let [tile, s, g] = arch::block_id();
    let (tm, tn) = (tile % a.gemm.tiles_m, tile / a.gemm.tiles_m);
    let slice = Slice::of_launch(a, s);
    let dy = DyGather { a, s: slice, p: a.dy as *const Tl::In, g_off: g * a.dy_strides[0] };
    // B operand: `W[g]` of the slice's taps, transposed: `C x (taps * K)`.
    let ws = &a.w_strides;
    let w = ChannelRows {
        p: a.w as *const Tl::In,
        g_off: g * ws[0],
        strides: ws,
        rows: a.c,
        vec_rows: crate::conv::w_vec_channels(a, <Tl::In as Elem>::LANES as u32),
        col: WTaps { a, s: slice },
    };
    let r = BlockRange { m0: tm * Tl::BM as u32, n0: tn * Tl::BN as u32, k_begin: 0, k_end: slice.gemm_k };
    let acc = if TMA {
        match unsafe { super::tma::mainloop::<Tl, FR, FC>(a, g, r) } {
            Some(acc) => acc,
            None => return,
        }
    } else {
        unsafe { gemm::mainloop::<Tl, _, _, FR, FC>(&dy, &w, r) }
    };
    // Row -> input pixel `(n, [z, y, x])`, or none (past the GEMM or
    // outside the input): the slice's rows, or the TMA kernel's pixel blocks.
    let pixel = |m: u32| {
        if TMA && a.tma_rows.k_pad != 0 {
            return super::tma::block_pixel(a, m);
        }
        let (n, q) = Slice::split_row(a, m);
        slice.pixel(a, q).filter(|_| m < a.gemm.m).map(|px| (n, px))
    };
    // Row contexts: the offset of the row's input pixel in `dX` (channel 0),
    // or none, once per tile row.
    const NONE: u64 = u64::MAX;
    let xs = &a.x_strides;
    let row = |i: usize| match pixel(r.m0 + i as u32) {
        Some((n, px)) => crate::conv::offset(xs, [g, n, 0, px[0], px[1], px[2]]) as u64,
        None => NONE,
    };
    let mut bias = BiasRun::new();
    let store = |i: usize, j0: usize, at: u64, v: [f32; RUN]| {
        let c0 = r.n0 + j0 as u32;
        if at == NONE || c0 >= a.c {
            return;
        }
        // Column -> (channel row, channel): row 0 only, unless y is folded
        // into the channels; then the run goes to its row's part of dX
        // (runs never straddle rows: the host keeps rows a multiple of RUN).
        let (cr, ci) = a.slices.div_channel_row.divmod(c0);
        let out = a.x + (cr * a.slices.channel_row_stride) as u64 * Out::BYTES as u64;
        // The canonical index, for D tensors and element-wise stores only.
        let idx = || {
            let (n, px) = pixel(r.m0 + i as u32).unwrap_or((0, [0; 3]));
            [g, n, ci, px[0], px[1], px[2]]
        };
        let o = at as usize + ci as usize * xs[2] as usize;
        let len = (a.c - c0).min(a.slices.div_channel_row.div - ci);
        unsafe { store_run_at::<Out, 2>(a, out, xs, o, idx, len, v, &mut bias) }
    };
    // The row table where it fits the LDS the main loop already holds.
    let table = const { Tl::CONFIG.row_table_fits(Tl::At::KIND, <Tl::In as Elem>::BYTES as u32) };
    unsafe {
        if table {
            epilogue::store_tile_rows::<Tl, FR, FC, true, TMA>(&acc, row, store)
        } else {
            epilogue::store_tile_rows::<Tl, FR, FC, false, TMA>(&acc, row, store)
        }
    }
}
