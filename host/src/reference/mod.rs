//! Float64 CPU reference for the convolution passes, the yardstick every
//! device result is judged against.
//!
//! With `x` the input, `w` the weights and `y`/`dy` the output (gradient), all
//! indexed canonically (activations `(g, n, c, d, h, w)`, weights
//! `(g, k, c, z, y, x)`, see [`crate::types::layout`]) and `i(o, f) = o*s - lp + f*dil`
//! per spatial axis (positions outside the input are padding and read as 0):
//!
//! - forward ([`conv_fwd`]): `y[g,n,k,o] = sum_{c,f} x[g,n,c,i(o,f)] * w[g,k,c,f]`
//! - backward-data ([`bwd_data`]): `dx[g,n,c,i] = sum_{k,f,o : i(o,f) = i} dy[g,n,k,o] * w[g,k,c,f]`
//!   (the transposed convolution; input pixels no tap reaches get 0)
//! - backward-weight ([`bwd_weight`]): `dw[g,k,c,f] = sum_{n,o} x[g,n,c,i(o,f)] * dy[g,n,k,o]`
//!
//! The `_multi_d` variants apply a fused epilogue [`EpiChain`] to the float64
//! accumulator at every output element: `out = chain(acc, D0, D1, ...)`, each
//! `D` read at the same canonical index through its own descriptor.
//!
//! Everything accumulates in f64 (exact products and sums for integer data;
//! about 1e-16 relative otherwise). Every tensor may have any layout or strides:
//! each input is first gathered through its [`TensorDesc`] into a packed
//! channels-innermost scratch, the pass runs there with contiguous inner loops,
//! split over [`threads`] workers by output rows (each worker owns its rows, so
//! there are no write races), and the result is scattered back through the
//! output descriptor. Every element of the output tensor is written; elements of
//! the output buffer outside the tensor (gaps of a strided view) are not touched.
//! Each element is summed in a fixed order, so results are bitwise the same
//! for any thread count ([`THREADS_ENV`] overrides it). Measured on 2 cores:
//! about 10-15 GFLOP/s for dense problems (a 1.85 GFLOP pass in 0.12-0.2 s),
//! about 0.2-0.3 GFLOP/s for depthwise ones (C = K = 1, per-tap overhead).
//!
//! The functions panic (with the tensor's name) when a descriptor's lengths do
//! not match the problem or a buffer is shorter than its descriptor spans:
//! they are test and verification code, not a user-facing API.
//!
//! For the error bounds of [`crate::check`], run the same pass on absolute
//! values ([`abs_values`]): that gives `sum |products|` per output element.

mod pack;
mod par;

use crate::types::epilogue::{EpiChain, MAX_STEPS, opcode};
use crate::types::layout::AXES;
use crate::types::{ConvProblem, TensorDesc, TensorRole};
use pack::{
    ACT, CANON, Geo, TAP_GCK, WEI_CK, WEI_KC, check_desc, fma1, fma4, for_each, for_each_offset,
    gather, mac,
};

pub use par::{THREADS_ENV, threads};

/// An auxiliary epilogue tensor: its values and its descriptor. It has the
/// lengths of the pass's output tensor; a stride of 0 broadcasts along an axis
/// (e.g. a per-channel bias has non-zero strides only on G and C).
pub type DTensor<'a> = (&'a [f64], &'a TensorDesc);

fn id(v: f64) -> f64 {
    v
}

/// Forward convolution `y = conv(x, w)` (used to test the backward passes
/// through the adjoint identities). Writes every element of `y`.
pub fn conv_fwd(
    p: &ConvProblem,
    x: &[f64],
    xd: &TensorDesc,
    w: &[f64],
    wd: &TensorDesc,
    y: &mut [f64],
    yd: &TensorDesc,
) {
    check_desc(
        "x",
        xd,
        TensorDesc::lengths_of(p, TensorRole::Input),
        x.len(),
    );
    check_desc(
        "w",
        wd,
        TensorDesc::lengths_of(p, TensorRole::Weight),
        w.len(),
    );
    check_desc(
        "y",
        yd,
        TensorDesc::lengths_of(p, TensorRole::Output),
        y.len(),
    );
    let acc = fwd_packed(p, &gather(x, xd, ACT, id), &gather(w, wd, WEI_CK, id));
    scatter(y, yd, ACT, &acc, &EpiChain::default(), &[]);
}

/// Backward-data `dx = conv_transpose(dy, w)`. Writes every element of `dx`,
/// 0 where no filter tap reaches.
pub fn bwd_data(
    p: &ConvProblem,
    dy: &[f64],
    dyd: &TensorDesc,
    w: &[f64],
    wd: &TensorDesc,
    dx: &mut [f64],
    dxd: &TensorDesc,
) {
    bwd_data_multi_d(p, dy, dyd, w, wd, &[], &EpiChain::default(), dx, dxd);
}

/// Grouped backward-data with a fused epilogue:
/// `dx = chain(conv_transpose(dy, w), D0, D1, ...)` at every element of `dx`
/// (pixels no tap reaches get `chain(0, D...)`).
///
/// `ds[i]` is the `D` tensor that chain steps with `d == i` read. A `D` that
/// aliases the output (in-place accumulation into an existing gradient) must
/// be passed as a copy of the output's previous contents: the borrow rules
/// forbid passing `dx` itself, and a copy is what a correct kernel sees.
#[allow(clippy::too_many_arguments)]
pub fn bwd_data_multi_d(
    p: &ConvProblem,
    dy: &[f64],
    dyd: &TensorDesc,
    w: &[f64],
    wd: &TensorDesc,
    ds: &[DTensor<'_>],
    chain: &EpiChain,
    dx: &mut [f64],
    dxd: &TensorDesc,
) {
    check_desc(
        "dy",
        dyd,
        TensorDesc::lengths_of(p, TensorRole::Output),
        dy.len(),
    );
    check_desc(
        "w",
        wd,
        TensorDesc::lengths_of(p, TensorRole::Weight),
        w.len(),
    );
    let out_len = TensorDesc::lengths_of(p, TensorRole::Input);
    check_desc("dx", dxd, out_len, dx.len());
    check_chain(chain, ds, out_len);
    let acc = bwd_data_packed(p, &gather(dy, dyd, ACT, id), &gather(w, wd, WEI_KC, id));
    scatter(dx, dxd, ACT, &acc, chain, ds);
}

/// Grouped backward-weight `dw = conv(x, dy)` (sum over the batch and output
/// pixels). Writes every element of `dw`.
pub fn bwd_weight(
    p: &ConvProblem,
    x: &[f64],
    xd: &TensorDesc,
    dy: &[f64],
    dyd: &TensorDesc,
    dw: &mut [f64],
    dwd: &TensorDesc,
) {
    bwd_weight_multi_d(p, x, xd, dy, dyd, &[], &EpiChain::default(), dw, dwd);
}

/// Grouped backward-weight with a fused epilogue on the weight gradient:
/// `dw = chain(conv(x, dy), D0, ...)` (e.g. `Scale(s)`, or `Bilinear(a, b)`
/// with `D0` the previous weight gradient, passed as a copy).
#[allow(clippy::too_many_arguments)]
pub fn bwd_weight_multi_d(
    p: &ConvProblem,
    x: &[f64],
    xd: &TensorDesc,
    dy: &[f64],
    dyd: &TensorDesc,
    ds: &[DTensor<'_>],
    chain: &EpiChain,
    dw: &mut [f64],
    dwd: &TensorDesc,
) {
    check_desc(
        "x",
        xd,
        TensorDesc::lengths_of(p, TensorRole::Input),
        x.len(),
    );
    check_desc(
        "dy",
        dyd,
        TensorDesc::lengths_of(p, TensorRole::Output),
        dy.len(),
    );
    let out_len = TensorDesc::lengths_of(p, TensorRole::Weight);
    check_desc("dw", dwd, out_len, dw.len());
    check_chain(chain, ds, out_len);
    let acc = bwd_weight_packed(p, &gather(x, xd, ACT, id), &gather(dy, dyd, ACT, id));
    scatter(dw, dwd, TAP_GCK, &acc, chain, ds);
}

/// Applies an epilogue chain in float64, with `d(i)` the value of `D` tensor
/// `i` at this element (the same operations as
/// [`EpiChain::apply`], whose f32 version kernels run).
///
/// Panics on an opcode this reference does not know, so that a new device
/// operation cannot pass unchecked.
#[inline]
pub fn apply_chain(chain: &EpiChain, mut v: f64, mut d: impl FnMut(usize) -> f64) -> f64 {
    for s in &chain.steps[..(chain.len as usize).min(MAX_STEPS)] {
        let (a, b) = (s.a as f64, s.b as f64);
        v = match s.op {
            opcode::PASS => v,
            opcode::SCALE => a * v,
            opcode::BILINEAR => a * v + b * d(s.d as usize),
            opcode::ADD => v + d(s.d as usize),
            opcode::RELU => {
                if v > 0.0 {
                    v
                } else {
                    0.0
                }
            }
            opcode::RELU_MASK => {
                if d(s.d as usize) > 0.0 {
                    v
                } else {
                    0.0
                }
            }
            op => panic!(
                "reference: epilogue opcode {op} has no float64 reference (add it to reference::apply_chain)"
            ),
        };
    }
    v
}

/// `|v|` elementwise: run a pass on `abs_values` of both inputs to get, per
/// output element, the sum of the absolute values of its products (the scale
/// of the rigorous error bound in [`crate::check`]).
pub fn abs_values(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| x.abs()).collect()
}

/// The tensor's logical elements in canonical row-major order
/// (`G,N,C,D,H,W` or `G,K,C,Z,Y,X`, unused spatial axes of length 1).
pub fn to_canonical(buf: &[f64], d: &TensorDesc) -> Vec<f64> {
    assert!(
        buf.len() as u64 >= d.span(),
        "reference: buffer shorter than its descriptor spans"
    );
    gather(buf, d, CANON, id)
}

/// Writes values given in canonical row-major order into the tensor `(buf, d)`.
pub fn from_canonical(vals: &[f64], buf: &mut [f64], d: &TensorDesc) {
    assert_eq!(
        vals.len() as u64,
        d.elems(),
        "reference: value count differs from the tensor's element count"
    );
    assert!(
        buf.len() as u64 >= d.span(),
        "reference: buffer shorter than its descriptor spans"
    );
    for_each(&d.lengths, CANON, |idx, pos| {
        buf[d.offset(*idx)] = vals[pos]
    });
}

/// `sum_i a[i] * b[i]` over the logical elements of two tensors of the same
/// lengths (possibly different layouts), in f64.
pub fn dot(a: &[f64], ad: &TensorDesc, b: &[f64], bd: &TensorDesc) -> f64 {
    assert_eq!(
        ad.lengths, bd.lengths,
        "reference::dot: tensors of different lengths"
    );
    let mut s = 0.0;
    for_each(&ad.lengths, CANON, |idx, _| {
        s += a[ad.offset(*idx)] * b[bd.offset(*idx)]
    });
    s
}

fn check_chain(chain: &EpiChain, ds: &[DTensor<'_>], out_len: [usize; AXES]) {
    assert!(
        chain.len as usize <= MAX_STEPS,
        "reference: epilogue chain of {} steps (at most {MAX_STEPS})",
        chain.len
    );
    for s in &chain.steps[..chain.len as usize] {
        assert!(
            !s.reads_d() || (s.d as usize) < ds.len(),
            "reference: epilogue step {} reads D{} but {} D tensor(s) were given",
            s.op,
            s.d,
            ds.len()
        );
    }
    for (i, (buf, d)) in ds.iter().enumerate() {
        let name = format!("D{i}");
        check_desc(&name, d, out_len, buf.len());
    }
}

/// Writes the packed result (axes in `order`) through `chain` into `(dst, dd)`.
fn scatter(
    dst: &mut [f64],
    dd: &TensorDesc,
    order: [usize; AXES],
    acc: &[f64],
    chain: &EpiChain,
    ds: &[DTensor<'_>],
) {
    if chain.len == 0 {
        for_each_offset(dd, order, |o, pos| dst[o] = acc[pos]);
    } else {
        for_each(&dd.lengths, order, |idx, pos| {
            dst[dd.offset(*idx)] = apply_chain(chain, acc[pos], |i| ds[i].0[ds[i].1.offset(*idx)]);
        });
    }
}

/// Forward pass on packed `x` (G N D H W C) and `w` (G Z Y X C K); returns `y` as G N Do Ho Wo K.
///
/// Rows are `(g, n, od, oh)`; per row the filter rows `(z, y)` that land
/// inside the input are listed once, then every output pixel of the row adds
/// `x[pixel, :] * w[tap, :, :]` (inner loop over K, contiguous).
fn fwd_packed(p: &ConvProblem, xs: &[f64], ws: &[f64]) -> Vec<f64> {
    let q = Geo::new(p);
    let (c, k) = (q.c, q.k);
    let [d_, h_, w_] = q.inp;
    let [od_, oh_, ow_] = q.out;
    let [z_, y_, x_] = q.fil;
    let mut ys = vec![0.0; q.g * q.n * q.out_pix() * k];
    let row_len = ow_ * k;
    let macs = (row_len * c * q.taps()) as f64;
    par::par_rows(&mut ys, row_len, macs, |row0, chunk| {
        let mut zy: Vec<(usize, usize)> = Vec::with_capacity(z_ * y_);
        for (r, out) in chunk.chunks_exact_mut(row_len).enumerate() {
            let row = row0 + r;
            let oh = row % oh_;
            let od = (row / oh_) % od_;
            let gn = row / (oh_ * od_);
            let g = gn / q.n;
            zy.clear();
            for z in 0..z_ {
                let Some(id) = q.src(0, od, z) else { continue };
                for y in 0..y_ {
                    let Some(ih) = q.src(1, oh, y) else { continue };
                    // (input row base, filter row base), in pixels / taps.
                    zy.push((
                        ((gn * d_ + id) * h_ + ih) * w_,
                        ((g * z_ + z) * y_ + y) * x_,
                    ));
                }
            }
            for (ow, acc) in out.chunks_exact_mut(k).enumerate() {
                for &(xrow, wrow) in &zy {
                    for xx in 0..x_ {
                        let Some(iw) = q.src(2, ow, xx) else { continue };
                        let xo = (xrow + iw) * c;
                        let wo = (wrow + xx) * c * k;
                        mac(acc, &xs[xo..xo + c], &ws[wo..wo + c * k]);
                    }
                }
            }
        }
    });
    ys
}

/// Backward-data on packed `dy` (G N Do Ho Wo K) and `w` (G Z Y X K C); returns `dx` as G N D H W C.
///
/// Rows are `(g, n, id, ih)`; per row the `(z, y)` taps that reach it (and
/// the output row each reads) are listed once, then every pixel of the row
/// adds `dy[pixel', :] * w[tap, :, :]` over its reaching `x` taps (inner loop
/// over C, contiguous). Pixels no tap reaches keep their 0.
fn bwd_data_packed(p: &ConvProblem, dys: &[f64], ws: &[f64]) -> Vec<f64> {
    let q = Geo::new(p);
    let (c, k) = (q.c, q.k);
    let [d_, h_, w_] = q.inp;
    let [od_, oh_, ow_] = q.out;
    let [z_, y_, x_] = q.fil;
    let mut dxs = vec![0.0; q.g * q.n * q.in_pix() * c];
    let row_len = w_ * c;
    // Taps that reach a pixel: about taps / prod(stride).
    let reach = (q.taps() as f64 / q.s.iter().product::<usize>() as f64).max(1.0);
    let macs = row_len as f64 * k as f64 * reach;
    par::par_rows(&mut dxs, row_len, macs, |row0, chunk| {
        let mut zy: Vec<(usize, usize)> = Vec::with_capacity(z_ * y_);
        for (r, out) in chunk.chunks_exact_mut(row_len).enumerate() {
            let row = row0 + r;
            let ih = row % h_;
            let id = (row / h_) % d_;
            let gn = row / (h_ * d_);
            let g = gn / q.n;
            zy.clear();
            for z in 0..z_ {
                let Some(od) = q.dst(0, id, z) else { continue };
                for y in 0..y_ {
                    let Some(oh) = q.dst(1, ih, y) else { continue };
                    zy.push((
                        ((gn * od_ + od) * oh_ + oh) * ow_,
                        ((g * z_ + z) * y_ + y) * x_,
                    ));
                }
            }
            for (iw, acc) in out.chunks_exact_mut(c).enumerate() {
                for &(yrow, wrow) in &zy {
                    for xx in 0..x_ {
                        let Some(ow) = q.dst(2, iw, xx) else { continue };
                        let yo = (yrow + ow) * k;
                        let wo = (wrow + xx) * k * c;
                        mac(acc, &dys[yo..yo + k], &ws[wo..wo + k * c]);
                    }
                }
            }
        }
    });
    dxs
}

/// Backward-weight on packed `x` (G N D H W C) and `dy` (G N Do Ho Wo K); returns `dw` as Z Y X G C K.
///
/// Rows are `(tap, g, c)` of `K` elements. For each tap a worker lists the
/// valid `(input pixel, output pixel)` pairs once (they do not depend on the
/// group), then for each block of rows of one `(tap, g)` and a channel range
/// applies them four at a time as rank-4 updates `acc[c, :] += x[p, c] * dy[p', :]`.
fn bwd_weight_packed(p: &ConvProblem, xs: &[f64], dys: &[f64]) -> Vec<f64> {
    let q = Geo::new(p);
    let (c, k) = (q.c, q.k);
    let [d_, h_, w_] = q.inp;
    let [od_, oh_, ow_] = q.out;
    let [_, y_, x_] = q.fil;
    let (in_pix, out_pix) = (q.in_pix(), q.out_pix());
    let mut dws = vec![0.0; q.taps() * q.g * c * k];
    let macs = (k * q.n * out_pix) as f64;
    par::par_rows(&mut dws, k, macs, |row0, chunk| {
        let rows = chunk.len() / k;
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        let mut pairs_tap = usize::MAX;
        let mut r = 0;
        while r < rows {
            let row = row0 + r;
            let c0 = row % c;
            let g = (row / c) % q.g;
            let tap = row / (c * q.g);
            let cnt = (c - c0).min(rows - r);
            if tap != pairs_tap {
                let (z, y, xx) = (tap / (y_ * x_), (tap / x_) % y_, tap % x_);
                pairs.clear();
                for n in 0..q.n {
                    for od in 0..od_ {
                        let Some(id) = q.src(0, od, z) else { continue };
                        for oh in 0..oh_ {
                            let Some(ih) = q.src(1, oh, y) else { continue };
                            for ow in 0..ow_ {
                                let Some(iw) = q.src(2, ow, xx) else { continue };
                                let xp = ((n * d_ + id) * h_ + ih) * w_ + iw;
                                let yp = ((n * od_ + od) * oh_ + oh) * ow_ + ow;
                                pairs.push((xp * c, yp * k));
                            }
                        }
                    }
                }
                pairs_tap = tap;
            }
            let (xb, yb) = (g * q.n * in_pix * c + c0, g * q.n * out_pix * k);
            let blk = &mut chunk[r * k..(r + cnt) * k];
            let mut quads = pairs.chunks_exact(4);
            for qd in &mut quads {
                let xo = [xb + qd[0].0, xb + qd[1].0, xb + qd[2].0, xb + qd[3].0];
                let b = [
                    &dys[yb + qd[0].1..],
                    &dys[yb + qd[1].1..],
                    &dys[yb + qd[2].1..],
                    &dys[yb + qd[3].1..],
                ];
                for (ci, acc) in blk.chunks_exact_mut(k).enumerate() {
                    fma4(
                        acc,
                        [
                            xs[xo[0] + ci],
                            xs[xo[1] + ci],
                            xs[xo[2] + ci],
                            xs[xo[3] + ci],
                        ],
                        b,
                    );
                }
            }
            for &(xo, yo) in quads.remainder() {
                for (ci, acc) in blk.chunks_exact_mut(k).enumerate() {
                    fma1(acc, xs[xb + xo + ci], &dys[yb + yo..]);
                }
            }
            r += cnt;
        }
    });
    dws
}
