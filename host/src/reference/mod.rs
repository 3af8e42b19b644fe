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
    let inputs = [
        In("x", TensorRole::Input, x, xd, ACT),
        In("w", TensorRole::Weight, w, wd, WEI_CK),
    ];
    let out = Out("y", TensorRole::Output, y, yd, ACT);
    pass(p, inputs, out, &EpiChain::default(), &[], fwd_packed);
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
    let inputs = [
        In("dy", TensorRole::Output, dy, dyd, ACT),
        In("w", TensorRole::Weight, w, wd, WEI_KC),
    ];
    let out = Out("dx", TensorRole::Input, dx, dxd, ACT);
    pass(p, inputs, out, chain, ds, bwd_data_packed);
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
    let inputs = [
        In("x", TensorRole::Input, x, xd, ACT),
        In("dy", TensorRole::Output, dy, dyd, ACT),
    ];
    let out = Out("dw", TensorRole::Weight, dw, dwd, TAP_GCK);
    pass(p, inputs, out, chain, ds, bwd_weight_packed);
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

/// An input of a pass: its name (for panics), role in the problem, values,
/// descriptor, and the packed order the pass reads it in.
struct In<'a>(&'static str, TensorRole, &'a [f64], &'a TensorDesc, [usize; AXES]);

/// The output of a pass, as [`In`]: the packed order is the one the pass
/// computes it in.
struct Out<'a>(&'static str, TensorRole, &'a mut [f64], &'a TensorDesc, [usize; AXES]);

/// What every public pass does around its packed computation: checks each
/// tensor against the problem (the inputs, the output, then the epilogue's
/// `D` tensors), gathers the inputs into their packed orders, runs `packed`
/// on them and scatters its result through `chain` into the output.
fn pass(
    p: &ConvProblem,
    inputs: [In<'_>; 2],
    out: Out<'_>,
    chain: &EpiChain,
    ds: &[DTensor<'_>],
    packed: fn(&ConvProblem, &[f64], &[f64]) -> Vec<f64>,
) {
    for In(name, role, v, d, _) in &inputs {
        check_desc(name, d, TensorDesc::lengths_of(p, *role), v.len());
    }
    let Out(name, role, dst, dd, order) = out;
    let out_len = TensorDesc::lengths_of(p, role);
    check_desc(name, dd, out_len, dst.len());
    check_chain(chain, ds, out_len);
    let [a, b] = inputs.map(|In(_, _, v, d, order)| gather(v, d, order, id));
    scatter(dst, dd, order, &packed(p, &a, &b), chain, ds);
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

/// Forward pass on packed `x` (G N D H W C) and `w` (G Z Y X C K); returns `y` as G N Do Ho Wo K:
/// every output pixel sums the input pixels its taps read ([`Geo::src`]).
fn fwd_packed(p: &ConvProblem, xs: &[f64], ws: &[f64]) -> Vec<f64> {
    let q = Geo::new(p);
    let src = Side { dims: q.inp, ch: q.c };
    let dst = Side { dims: q.out, ch: q.k };
    tap_sum(&q, xs, src, ws, dst, q.taps() as f64, Geo::src)
}

/// Backward-data on packed `dy` (G N Do Ho Wo K) and `w` (G Z Y X K C); returns `dx` as G N D H W C:
/// every input pixel sums the output pixels whose taps read it ([`Geo::dst`]);
/// pixels no tap reaches keep their 0.
fn bwd_data_packed(p: &ConvProblem, dys: &[f64], ws: &[f64]) -> Vec<f64> {
    let q = Geo::new(p);
    let src = Side { dims: q.out, ch: q.k };
    let dst = Side { dims: q.inp, ch: q.c };
    // Taps that reach a pixel: about taps / prod(stride).
    let reach = (q.taps() as f64 / q.s.iter().product::<usize>() as f64).max(1.0);
    tap_sum(&q, dys, src, ws, dst, reach, Geo::dst)
}

/// Spatial sizes `[D, H, W]` and channels of one side of [`tap_sum`].
#[derive(Clone, Copy)]
struct Side {
    dims: [usize; 3],
    ch: usize,
}

/// The loop the forward and backward-data passes share:
/// `out[g, n, o, :] += a[g, n, map(o, tap), :] * b[g, tap, :, :]` over the
/// taps whose `map` gives a pixel of `a`.
///
/// `a` is packed G N (src dims) A, `b` G Z Y X A O and the result G N (dst
/// dims) O, with A = `src.ch` and O = `dst.ch` (innermost). `map(q, axis, o, f)`
/// is the coordinate along `axis` of the `a` pixel that tap `f` connects to
/// coordinate `o` of the result, or `None`. Rows are `(g, n, d, h)` of the
/// result; per row the `(z, y)` taps that connect it to a row of `a` (and
/// that row) are listed once, then every pixel of the row adds
/// `a[pixel', :] * b[tap, :, :]` over its `x` taps (inner loop over O,
/// contiguous). `reach` is about how many taps reach one pixel (for the
/// split over threads).
fn tap_sum(
    q: &Geo,
    a: &[f64],
    src: Side,
    b: &[f64],
    dst: Side,
    reach: f64,
    map: impl Fn(&Geo, usize, usize, usize) -> Option<usize> + Sync,
) -> Vec<f64> {
    let (ac, oc) = (src.ch, dst.ch);
    let [_, sh, sw] = src.dims;
    let [d_, h_, w_] = dst.dims;
    let [z_, y_, x_] = q.fil;
    let mut out = vec![0.0; q.g * q.n * dst.dims.iter().product::<usize>() * oc];
    let row_len = w_ * oc;
    let macs = row_len as f64 * ac as f64 * reach;
    par::par_rows(&mut out, row_len, macs, |row0, chunk| {
        let mut zy: Vec<(usize, usize)> = Vec::with_capacity(z_ * y_);
        for (r, out) in chunk.chunks_exact_mut(row_len).enumerate() {
            let row = row0 + r;
            let h = row % h_;
            let d = (row / h_) % d_;
            let gn = row / (h_ * d_);
            let g = gn / q.n;
            zy.clear();
            for z in 0..z_ {
                let Some(sd) = map(q, 0, d, z) else { continue };
                for y in 0..y_ {
                    let Some(sy) = map(q, 1, h, y) else { continue };
                    // (row base in `a`, filter row base), in pixels / taps.
                    zy.push((
                        ((gn * src.dims[0] + sd) * sh + sy) * sw,
                        ((g * z_ + z) * y_ + y) * x_,
                    ));
                }
            }
            for (w, acc) in out.chunks_exact_mut(oc).enumerate() {
                for &(arow, brow) in &zy {
                    for xx in 0..x_ {
                        let Some(sx) = map(q, 2, w, xx) else { continue };
                        let ao = (arow + sx) * ac;
                        let bo = (brow + xx) * ac * oc;
                        mac(acc, &a[ao..ao + ac], &b[bo..bo + ac * oc]);
                    }
                }
            }
        }
    });
    out
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
