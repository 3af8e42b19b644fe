//! Tests of the float64 CPU reference (`convgrad::reference`) and of the
//! verification utilities (`convgrad::check`), written so as not to trust the
//! reference: hand-computed cases with the expected numbers written out, an
//! independent naive implementation, and the adjoint identities
//! `<fwd(x, w), dy> == <x, bwd_data(dy, w)> == <w, bwd_weight(x, dy)>`.
//!
//! `cargo test -p convgrad --test reference`; the timing of a 2 GFLOP problem:
//! `cargo test -p convgrad --test reference -- --ignored --nocapture speed`.

use convgrad::check::{self, Init, SplitMix64, Tolerance};
use convgrad::reference as r;
use convgrad::types::epilogue::{EpiChain, EpilogueOp};
use convgrad::types::problem::Spatial;
use convgrad::types::{ConvLayout, ConvProblem, DType, TensorDesc, TensorRole, TypeConfig};

// ---------------------------------------------------------------- helpers

#[allow(clippy::too_many_arguments)]
fn prob(
    ndim: usize,
    g: usize,
    n: usize,
    k: usize,
    c: usize,
    f: &[usize],
    i: &[usize],
    s: &[usize],
    d: &[usize],
    lp: &[usize],
    rp: &[usize],
) -> ConvProblem {
    ConvProblem::new(
        ndim,
        g,
        n,
        k,
        c,
        Spatial {
            filter: f,
            input: i,
            strides: s,
            dilations: d,
            lpads: lp,
            rpads: rp,
        },
    )
    .unwrap()
}

/// A problem in CK's argument order (`ndim G N K C`, then filter, input,
/// strides, dilations, left and right pads per spatial dim).
fn ck(v: &[usize]) -> ConvProblem {
    ConvProblem::from_ck_args(v).unwrap()
}

fn descs(p: &ConvProblem, l: ConvLayout) -> [TensorDesc; 3] {
    [TensorRole::Input, TensorRole::Weight, TensorRole::Output]
        .map(|role| TensorDesc::packed(p, l, role))
}

/// A NaN-filled buffer for `d` holding `vals` (canonical order).
fn put(vals: &[f64], d: &TensorDesc) -> Vec<f64> {
    let mut b = vec![f64::NAN; d.span() as usize];
    r::from_canonical(vals, &mut b, d);
    b
}

/// The canonical (GNKC + spatial, row-major) index of `i` in a tensor of
/// lengths `l`.
fn canonical(l: &[usize; 6], i: [usize; 6]) -> usize {
    ((((i[0] * l[1] + i[1]) * l[2] + i[2]) * l[3] + i[3]) * l[4] + i[4]) * l[5] + i[5]
}

fn nan_buf(d: &TensorDesc) -> Vec<f64> {
    vec![f64::NAN; d.span() as usize]
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
            "{what}: element {i}: got {a}, want {b}\n got  {got:?}\n want {want:?}"
        );
    }
}

/// A tensor's values as stored, and its descriptor (operands go in the
/// order x, w, dy).
type Stored<'a> = (&'a [f64], &'a TensorDesc);

/// What the three passes give: `(y, dx, dw)`.
type Passes = (Vec<f64>, Vec<f64>, Vec<f64>);

/// The three passes (forward, backward-data, backward-weight) on `x`, `w`,
/// `dy` as stored: `(y, dx, dw)` as stored, NaN where a pass wrote nothing.
fn passes(p: &ConvProblem, [(x, xd), (w, wd), (dy, yd)]: [Stored<'_>; 3]) -> Passes {
    let (mut y, mut dx, mut dw) = (nan_buf(yd), nan_buf(xd), nan_buf(wd));
    r::conv_fwd(p, x, xd, w, wd, &mut y, yd);
    r::bwd_data(p, dy, yd, w, wd, &mut dx, xd);
    r::bwd_weight(p, x, xd, dy, yd, &mut dw, wd);
    (y, dx, dw)
}

/// The three passes on one layout family, results in canonical order.
fn run_all(
    p: &ConvProblem,
    l: ConvLayout,
    x: &[f64],
    w: &[f64],
    dy: &[f64],
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let [xd, wd, yd] = descs(p, l);
    let (xb, wb, dyb) = (put(x, &xd), put(w, &wd), put(dy, &yd));
    let (y, dx, dw) = passes(p, [(&xb, &xd), (&wb, &wd), (&dyb, &yd)]);
    (
        r::to_canonical(&y, &yd),
        r::to_canonical(&dx, &xd),
        r::to_canonical(&dw, &wd),
    )
}

// ------------------------------------------------------- hand-computed cases

/// Runs `pass(chain, out)`, a pass with the epilogue `ops`, into a NaN-filled
/// output stored as `outd`; the result in canonical order.
fn with_epilogue(
    outd: &TensorDesc,
    ops: &[EpilogueOp],
    pass: impl FnOnce(&EpiChain, &mut [f64]),
) -> Vec<f64> {
    let mut out = nan_buf(outd);
    pass(&EpiChain::from_ops(ops).unwrap(), &mut out);
    r::to_canonical(&out, outd)
}

/// 1-D, W = 5, filter 3, stride 2, pads 1/1 -> 3 outputs.
/// x = [1,2,3,4,5], w = [1,2,3], dy = [1,10,100]:
///   y[o]  = sum_f x[2o-1+f] w[f]          = [0+2+6, 2+6+12, 4+10+0]       = [8, 20, 14]
///   dx[i] = sum_{2o-1+f=i} dy[o] w[f]     = [2, 3+10, 20, 30+100, 200]    = [2, 13, 20, 130, 200]
///   dw[f] = sum_o x[2o-1+f] dy[o]         = [0+20+400, 1+30+500, 2+40+0]  = [420, 531, 42]
#[test]
fn hand_1d_stride2_pad() {
    let p = prob(1, 1, 1, 1, 1, &[3], &[5], &[2], &[1], &[1], &[1]);
    assert_eq!(p.output()[2], 3);
    for l in ConvLayout::ALL {
        let (y, dx, dw) = run_all(
            &p,
            l,
            &[1., 2., 3., 4., 5.],
            &[1., 2., 3.],
            &[1., 10., 100.],
        );
        assert_close(&y, &[8., 20., 14.], "fwd");
        assert_close(&dx, &[2., 13., 20., 130., 200.], "bwd_data");
        assert_close(&dw, &[420., 531., 42.], "bwd_weight");
    }
}

/// 1-D, W = 5, filter 1, stride 3 -> outputs read x[0], x[3]; pixels 1, 2, 4
/// are reached by no tap and must be written as 0 (the buffer starts as NaN).
/// With C = 2, K = 1, w = [2, -1]: dx[c=0] = [2*7, 0, 0, 2*5, 0], dx[c=1] = [-7, 0, 0, -5, 0].
#[test]
fn hand_1d_unreached_pixels() {
    let p = prob(1, 1, 1, 1, 2, &[1], &[5], &[3], &[1], &[0], &[0]);
    assert_eq!(p.output()[2], 2);
    for l in ConvLayout::ALL {
        let x: Vec<f64> = (1..=10).map(f64::from).collect();
        let (y, dx, dw) = run_all(&p, l, &x, &[2., -1.], &[7., 5.]);
        // y[o] = 2*x[c0, 3o] - x[c1, 3o] = [2*1 - 6, 2*4 - 9]
        assert_close(&y, &[-4., -1.], "fwd");
        assert_close(
            &dx,
            &[14., 0., 0., 10., 0., -7., 0., 0., -5., 0.],
            "bwd_data",
        );
        // dw[c] = 7 x[c, 0] + 5 x[c, 3] = [7 + 20, 42 + 45]
        assert_close(&dw, &[27., 87.], "bwd_weight");
    }
}

/// 2-D, 4x4 input x[h][w] = 4h + w, 2x2 filter w = [[1,2],[3,4]], dilation 2,
/// stride 1, no pad -> 2x2 output; dy = [[1,2],[3,4]].
///   y[a][b]  = x[a][b] + 2x[a][b+2] + 3x[a+2][b] + 4x[a+2][b+2] = 10(4a+b) + 68
///   dx[h][w] = dy[h%2][w%2] * w[h/2][w/2] (each pixel has exactly one tap)
///   dw[p][q] = sum_{a,b} x[a+2p][b+2q] dy[a][b] = 34 + 10(8p + 2q)
#[test]
fn hand_2d_dilation() {
    let p = prob(
        2,
        1,
        1,
        1,
        1,
        &[2, 2],
        &[4, 4],
        &[1, 1],
        &[2, 2],
        &[0, 0],
        &[0, 0],
    );
    let x: Vec<f64> = (0..16).map(f64::from).collect();
    for l in ConvLayout::ALL {
        let (y, dx, dw) = run_all(&p, l, &x, &[1., 2., 3., 4.], &[1., 2., 3., 4.]);
        assert_close(&y, &[68., 78., 108., 118.], "fwd");
        #[rustfmt::skip]
        let want_dx = [
            1., 2., 2., 4.,
            3., 4., 6., 8.,
            3., 6., 4., 8.,
            9., 12., 12., 16.,
        ];
        assert_close(&dx, &want_dx, "bwd_data");
        assert_close(&dw, &[34., 54., 114., 134.], "bwd_weight");
    }
}

/// Grouped: G = 2, N = 1, C = 2, K = 1, 1-D W = 3, filter 2 -> 2 outputs.
/// x[g][c]: g0 [1,2,3],[4,5,6]; g1 [7,8,9],[10,11,12]
/// w[g][0][c]: g0 [1,-1],[2,0]; g1 [0,1],[-1,3];   dy[g]: g0 [1,2]; g1 [3,-1]
///   y  = g0 [(1-2)+(8+0), (2-3)+(10+0)] = [7, 9];  g1 [(0+8)+(-10+33), (0+9)+(-11+36)] = [31, 34]
///   dx = g0 c0 [1, -1+2, -2] c1 [2, 0+4, 0]; g1 c0 [0, 3+0, -1] c1 [-3, 9+1, -3]
///   dw = g0 c0 [1+4, 2+6] c1 [4+10, 5+12]; g1 c0 [21-8, 24-9] c1 [30-11, 33-12]
/// Any mixing of groups changes these numbers.
#[test]
fn hand_grouped() {
    let p = prob(1, 2, 1, 1, 2, &[2], &[3], &[1], &[1], &[0], &[0]);
    let x: Vec<f64> = (1..=12).map(f64::from).collect();
    let w = [1., -1., 2., 0., 0., 1., -1., 3.];
    for l in ConvLayout::ALL {
        let (y, dx, dw) = run_all(&p, l, &x, &w, &[1., 2., 3., -1.]);
        assert_close(&y, &[7., 9., 31., 34.], "fwd");
        assert_close(
            &dx,
            &[1., 1., -2., 2., 4., 0., 0., 3., -1., -3., 10., -3.],
            "bwd_data",
        );
        assert_close(&dw, &[5., 8., 14., 17., 13., 15., 19., 21.], "bwd_weight");
    }
}

/// Epilogues on the grouped case above.
/// - AddRelu with a per-(g, c) bias b = [[0.5, -3], [1, 2]] broadcast over N
///   and W through stride 0: max(dx + b, 0)
///   = g0c0 [1.5, 1.5, 0] g0c1 [0, 1, 0] g1c0 [1, 4, 0] g1c1 [0, 12, 0]
/// - Bilinear(2, -1) with D = [1..12] (the output's previous contents):
///   2 dx - D = [1, 0, -7, 0, 3, -6, -7, -2, -11, -16, 9, -18]
/// - ReluMask with D = [1,-1,0, 1,1,1, -2,2,-2, 0.5,0,1]: dx * (D > 0)
///   = [1, 0, 0, 2, 4, 0, 0, 3, 0, -3, 0, -3]
/// - weight gradient Scale(0.5): [2.5, 4, 7, 8.5, 6.5, 7.5, 9.5, 10.5];
///   Bilinear(1, 2) with D = 1: dw + 2 = [7, 10, 16, 19, 15, 17, 21, 23]
#[test]
fn hand_epilogues() {
    let p = prob(1, 2, 1, 1, 2, &[2], &[3], &[1], &[1], &[0], &[0]);
    let x: Vec<f64> = (1..=12).map(f64::from).collect();
    let w = [1., -1., 2., 0., 0., 1., -1., 3.];
    let dyv = [1., 2., 3., -1.];
    for l in ConvLayout::ALL {
        let [xd, wd, yd] = descs(&p, l);
        let (xb, wb, dyb) = (put(&x, &xd), put(&w, &wd), put(&dyv, &yd));
        let run_dx = |ds: &[(&[f64], &TensorDesc)], ops: &[EpilogueOp]| {
            with_epilogue(&xd, ops, |chain, dx| {
                r::bwd_data_multi_d(&p, &dyb, &yd, &wb, &wd, ds, chain, dx, &xd)
            })
        };
        // Bias: lengths of dx, strides only on G and C (N and W broadcast).
        let bias_d = TensorDesc {
            lengths: xd.lengths,
            strides: [2, 0, 1, 0, 0, 0],
        };
        let bias = [0.5, -3., 1., 2.];
        let got = run_dx(&[(&bias, &bias_d)], &[EpilogueOp::AddRelu]);
        assert_close(
            &got,
            &[1.5, 1.5, 0., 0., 1., 0., 1., 4., 0., 0., 12., 0.],
            "add-relu",
        );

        let prev = put(&(1..=12).map(f64::from).collect::<Vec<_>>(), &xd);
        let got = run_dx(&[(&prev, &xd)], &[EpilogueOp::Bilinear(2.0, -1.0)]);
        assert_close(
            &got,
            &[1., 0., -7., 0., 3., -6., -7., -2., -11., -16., 9., -18.],
            "bilinear",
        );

        let mask = put(&[1., -1., 0., 1., 1., 1., -2., 2., -2., 0.5, 0., 1.], &xd);
        let got = run_dx(&[(&mask, &xd)], &[EpilogueOp::ReluMask]);
        assert_close(
            &got,
            &[1., 0., 0., 2., 4., 0., 0., 3., 0., -3., 0., -3.],
            "relu-mask",
        );

        let run_dw = |ds: &[(&[f64], &TensorDesc)], ops: &[EpilogueOp]| {
            with_epilogue(&wd, ops, |chain, dw| {
                r::bwd_weight_multi_d(&p, &xb, &xd, &dyb, &yd, ds, chain, dw, &wd)
            })
        };
        assert_close(
            &run_dw(&[], &[EpilogueOp::Scale(0.5)]),
            &[2.5, 4., 7., 8.5, 6.5, 7.5, 9.5, 10.5],
            "scale",
        );
        let ones_d = TensorDesc {
            lengths: wd.lengths,
            strides: [0; 6],
        };
        assert_close(
            &run_dw(&[(&[1.0], &ones_d)], &[EpilogueOp::Bilinear(1.0, 2.0)]),
            &[7., 10., 16., 19., 15., 17., 21., 23.],
            "bilinear dw",
        );
    }
}

/// A 3-D case by hand: 2x2x2 input, 2x2x2 filter of ones, stride 1, no pad ->
/// one output = sum of x; dx = dy * 1 everywhere; dw = dy * x.
#[test]
fn hand_3d() {
    let p = ck(&[
        3, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0,
    ]);
    let x: Vec<f64> = (1..=8).map(f64::from).collect();
    for l in ConvLayout::ALL {
        let (y, dx, dw) = run_all(&p, l, &x, &[1.0; 8], &[3.0]);
        assert_close(&y, &[36.], "fwd");
        assert_close(&dx, &[3.0; 8], "bwd_data");
        assert_close(&dw, &[3., 6., 9., 12., 15., 18., 21., 24.], "bwd_weight");
    }
}

// ------------------------------------------------------- naive reference

fn in_range(o: usize, f: usize, p: &ConvProblem, a: usize) -> Option<usize> {
    let i = (o * p.strides[a] + f * p.dilations[a]) as isize - p.lpads[a] as isize;
    (i >= 0 && (i as usize) < p.input[a]).then_some(i as usize)
}

/// Straight from the definitions, scatter form for bwd-data (the fast one
/// gathers): `(y, dx, dw)` in canonical order.
fn naive(p: &ConvProblem, [(x, xd), (w, wd), (dy, yd)]: [Stored<'_>; 3]) -> Passes {
    let o = p.output();
    let (mut y, mut dx, mut dw) = (
        vec![0.0; yd.elems() as usize],
        vec![0.0; xd.elems() as usize],
        vec![0.0; wd.elems() as usize],
    );
    for g in 0..p.g {
        for n in 0..p.n {
            for k in 0..p.k {
                for c in 0..p.c {
                    for (o0, o1, o2) in (0..o[0]).flat_map(|a| {
                        (0..o[1]).flat_map(move |b| (0..o[2]).map(move |cc| (a, b, cc)))
                    }) {
                        for (f0, f1, f2) in (0..p.filter[0]).flat_map(|a| {
                            (0..p.filter[1])
                                .flat_map(move |b| (0..p.filter[2]).map(move |cc| (a, b, cc)))
                        }) {
                            let (Some(i0), Some(i1), Some(i2)) = (
                                in_range(o0, f0, p, 0),
                                in_range(o1, f1, p, 1),
                                in_range(o2, f2, p, 2),
                            ) else {
                                continue;
                            };
                            let xi = [g, n, c, i0, i1, i2];
                            let wi = [g, k, c, f0, f1, f2];
                            let yi = [g, n, k, o0, o1, o2];
                            let (xv, wv, dyv) =
                                (x[xd.offset(xi)], w[wd.offset(wi)], dy[yd.offset(yi)]);
                            y[canonical(&yd.lengths, yi)] += xv * wv;
                            dx[canonical(&xd.lengths, xi)] += dyv * wv;
                            dw[canonical(&wd.lengths, wi)] += xv * dyv;
                        }
                    }
                }
            }
        }
    }
    (y, dx, dw)
}

// ------------------------------------------------------- random problems

struct Case {
    p: ConvProblem,
    xd: TensorDesc,
    wd: TensorDesc,
    yd: TensorDesc,
    strided: bool,
    layout: Option<ConvLayout>,
}

fn random_problem(rng: &mut SplitMix64, max_macs: u64) -> ConvProblem {
    loop {
        let ndim = rng.range(1, 3);
        let (g, n, k, c) = (
            rng.range(1, 3),
            rng.range(1, 2),
            rng.range(1, 4),
            rng.range(1, 4),
        );
        let mut v: [Vec<usize>; 6] = Default::default();
        for _ in 0..ndim {
            let (f, s, d) = (rng.range(1, 3), rng.range(1, 4), rng.range(1, 3));
            let (lp, rp) = (rng.range(0, 3), rng.range(0, 3));
            let span = (f - 1) * d + 1;
            let min_in = span.saturating_sub(lp + rp).max(1);
            let extra = if ndim == 3 { 3 } else { 7 };
            for (list, val) in
                v.iter_mut()
                    .zip([f, rng.range(min_in, min_in + extra), s, d, lp, rp])
            {
                list.push(val);
            }
        }
        let p = prob(ndim, g, n, k, c, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
        if p.flops() / 2 <= max_macs {
            return p;
        }
    }
}

/// A random non-packed descriptor: random axis order, gaps between axes.
fn random_strided(rng: &mut SplitMix64, p: &ConvProblem, role: TensorRole) -> TensorDesc {
    let lengths = TensorDesc::lengths_of(p, role);
    let mut order = [0, 1, 2, 3, 4, 5];
    for i in (1..6).rev() {
        order.swap(i, rng.range(0, i));
    }
    let mut strides = [0usize; 6];
    let mut s = 1;
    for &a in &order {
        strides[a] = s;
        s = s * lengths[a] + rng.range(0, 2);
    }
    TensorDesc { lengths, strides }
}

fn random_case(rng: &mut SplitMix64, max_macs: u64) -> Case {
    let p = random_problem(rng, max_macs);
    if rng.below(4) == 0 {
        let [xd, wd, yd] = [TensorRole::Input, TensorRole::Weight, TensorRole::Output]
            .map(|role| random_strided(rng, &p, role));
        Case {
            p,
            xd,
            wd,
            yd,
            strided: true,
            layout: None,
        }
    } else {
        let l = ConvLayout::ALL[rng.below(4) as usize];
        let [xd, wd, yd] = descs(&p, l);
        Case {
            p,
            xd,
            wd,
            yd,
            strided: false,
            layout: Some(l),
        }
    }
}

/// Random float data in the tensor's logical elements, NaN in its gaps (so a
/// read of a gap would poison the result).
fn random_tensor(rng: &mut SplitMix64, d: &TensorDesc) -> Vec<f64> {
    let vals = check::fill_random(rng.next_u64(), Init::Float, DType::F32, d.elems() as usize);
    put(&vals, d)
}

/// Random `x`, `w`, `dy` stored as `xd`, `wd`, `yd` describe, drawn in that order.
fn operands(
    rng: &mut SplitMix64,
    xd: &TensorDesc,
    wd: &TensorDesc,
    yd: &TensorDesc,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    (
        random_tensor(rng, xd),
        random_tensor(rng, wd),
        random_tensor(rng, yd),
    )
}

#[derive(Default, Debug)]
struct Coverage {
    ndim: [usize; 4],
    stride_gt_filter: usize,
    stride: [usize; 5],
    dilation: [usize; 4],
    asym_pad: usize,
    groups: usize,
    layouts: [usize; 4],
    strided: usize,
    nonzero: usize,
}

impl Coverage {
    fn add(&mut self, c: &Case) {
        let p = &c.p;
        self.ndim[p.ndim] += 1;
        for a in p.first_axis()..3 {
            self.stride[p.strides[a]] += 1;
            self.dilation[p.dilations[a]] += 1;
            if p.strides[a] > p.filter[a] {
                self.stride_gt_filter += 1;
            }
            if p.lpads[a] != p.rpads[a] {
                self.asym_pad += 1;
            }
        }
        if p.g > 1 {
            self.groups += 1;
        }
        match c.layout {
            Some(l) => self.layouts[ConvLayout::ALL.iter().position(|&m| m == l).unwrap()] += 1,
            None => self.strided += 1,
        }
    }
    fn assert_covered(&self) {
        assert!(self.ndim[1..].iter().all(|&v| v >= 20), "{self:?}");
        assert!(self.stride[1..].iter().all(|&v| v >= 20), "{self:?}");
        assert!(self.dilation[1..].iter().all(|&v| v >= 20), "{self:?}");
        assert!(
            self.layouts.iter().all(|&v| v >= 20) && self.strided >= 20,
            "{self:?}"
        );
        assert!(
            self.stride_gt_filter >= 20
                && self.asym_pad >= 20
                && self.groups >= 20
                && self.nonzero >= 100,
            "{self:?}"
        );
    }
}

/// `<fwd(x, w), dy> == <x, bwd_data(dy, w)> == <w, bwd_weight(x, dy)>` to
/// 1e-12 of `<fwd(|x|, |w|), |dy|>`, on 400 random problems covering every
/// dim, strides 1-4 (also above the filter size), dilations 1-3, asymmetric
/// pads, groups, every layout family and random strided tensors. Also checks
/// that every output element is written and no gap of a strided output is.
#[test]
fn adjoint_identities_random() {
    let mut rng = SplitMix64::new(0xAD_70_17);
    let mut cov = Coverage::default();
    for case in 0..400 {
        let c = random_case(&mut rng, 20_000);
        cov.add(&c);
        let Case { p, xd, wd, yd, .. } = &c;
        let (x, w, dy) = operands(&mut rng, xd, wd, yd);
        let (y, dx, dw) = passes(p, [(&x, xd), (&w, wd), (&dy, yd)]);
        for (name, buf, d) in [("y", &y, yd), ("dx", &dx, xd), ("dw", &dw, wd)] {
            assert!(
                r::to_canonical(buf, d).iter().all(|v| v.is_finite()),
                "case {case} {p}: {name} has unwritten elements"
            );
            assert_eq!(
                check::outside_writes(buf, d).0,
                0,
                "case {case} {p}: {name} written outside the tensor"
            );
        }
        let (a, b, cc) = (
            r::dot(&y, yd, &dy, yd),
            r::dot(&x, xd, &dx, xd),
            r::dot(&w, wd, &dw, wd),
        );
        let mut ya = nan_buf(yd);
        r::conv_fwd(
            p,
            &r::abs_values(&x),
            xd,
            &r::abs_values(&w),
            wd,
            &mut ya,
            yd,
        );
        let scale = r::dot(&ya, yd, &r::abs_values(&dy), yd);
        if scale > 0.0 {
            cov.nonzero += 1;
        }
        let tol = 1e-12 * scale;
        assert!(
            (a - b).abs() <= tol && (a - cc).abs() <= tol,
            "case {case} {p} (strided {}): <y,dy> {a} <x,dx> {b} <w,dw> {cc} scale {scale}",
            c.strided
        );
    }
    cov.assert_covered();
}

/// The fast reference equals the naive definitions element by element on
/// random problems (layouts and strided tensors included), plus a few larger
/// ones that run on several threads.
#[test]
fn matches_naive_random() {
    let mut rng = SplitMix64::new(0x5EED_0001);
    let mut cases: Vec<Case> = (0..150).map(|_| random_case(&mut rng, 20_000)).collect();
    for (s, l) in [
        (1, ConvLayout::NhwgcGkyxcNhwgk),
        (2, ConvLayout::NgchwGkcyxNgkhw),
        (3, ConvLayout::GnhwcGkyxcGnhwk),
    ] {
        let p = prob(
            2,
            2,
            2,
            24,
            20,
            &[3, 3],
            &[31, 29],
            &[s, s],
            &[1, 2],
            &[1, 2],
            &[2, 0],
        );
        let [xd, wd, yd] = descs(&p, l);
        assert!(p.flops() / 2 > 1_500_000, "large enough to be threaded");
        cases.push(Case {
            p,
            xd,
            wd,
            yd,
            strided: false,
            layout: Some(l),
        });
    }
    for (i, c) in cases.iter().enumerate() {
        let Case { p, xd, wd, yd, .. } = c;
        let (x, w, dy) = operands(&mut rng, xd, wd, yd);
        let (ny, ndx, ndw) = naive(p, [(&x, xd), (&w, wd), (&dy, yd)]);
        let (y, dx, dw) = passes(p, [(&x, xd), (&w, wd), (&dy, yd)]);
        for (name, got, want) in [
            ("fwd", r::to_canonical(&y, yd), ny),
            ("bwd_data", r::to_canonical(&dx, xd), ndx),
            ("bwd_weight", r::to_canonical(&dw, wd), ndw),
        ] {
            for (j, (a, b)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-12 * (1.0 + b.abs()) * 100.0,
                    "case {i} {p}: {name}[{j}] = {a}, naive {b}"
                );
            }
        }
    }
}

/// The multi-D variants equal the chain applied to the plain pass, with
/// broadcast (stride-0) and strided D tensors, and `check::expected` gives
/// the same reference values.
#[test]
fn multi_d_matches_chain_random() {
    let mut rng = SplitMix64::new(77);
    let chains = [
        vec![EpilogueOp::AddRelu],
        vec![EpilogueOp::Bilinear(0.75, -1.5)],
        vec![EpilogueOp::Scale(-2.0), EpilogueOp::Add],
        vec![
            EpilogueOp::ReluMask,
            EpilogueOp::Add,
            EpilogueOp::Scale(0.5),
        ],
        vec![EpilogueOp::PassThrough],
    ];
    for i in 0..60 {
        let c = random_case(&mut rng, 20_000);
        let Case { p, xd, wd, yd, .. } = &c;
        let (x, w, dy) = operands(&mut rng, xd, wd, yd);
        let ops = &chains[i % chains.len()];
        let chain = EpiChain::from_ops(ops).unwrap();
        for (out_d, is_data) in [(xd, true), (wd, false)] {
            // D0 broadcast over everything but axes 0 and 2 (bias-like), D1 a strided full tensor.
            let bias_d = TensorDesc {
                lengths: out_d.lengths,
                strides: [out_d.lengths[2], 0, 1, 0, 0, 0],
            };
            let bias = check::fill_random(
                rng.next_u64(),
                Init::Float,
                DType::F16,
                out_d.lengths[0] * out_d.lengths[2],
            );
            let full_d = random_strided(
                &mut rng,
                p,
                if is_data {
                    TensorRole::Input
                } else {
                    TensorRole::Weight
                },
            );
            let full = random_tensor(&mut rng, &full_d);
            let ds: Vec<(&[f64], &TensorDesc)> = vec![(&bias, &bias_d), (&full, &full_d)];
            let (mut plain, mut fused) = (nan_buf(out_d), nan_buf(out_d));
            if is_data {
                r::bwd_data(p, &dy, yd, &w, wd, &mut plain, out_d);
                r::bwd_data_multi_d(p, &dy, yd, &w, wd, &ds, &chain, &mut fused, out_d);
            } else {
                r::bwd_weight(p, &x, xd, &dy, yd, &mut plain, out_d);
                r::bwd_weight_multi_d(p, &x, xd, &dy, yd, &ds, &chain, &mut fused, out_d);
            }
            let pc = r::to_canonical(&plain, out_d);
            let fc = r::to_canonical(&fused, out_d);
            let bc = r::to_canonical(&bias, &bias_d);
            let dc = r::to_canonical(&full, &full_d);
            for j in 0..pc.len() {
                let want = r::apply_chain(&chain, pc[j], |d| if d == 0 { bc[j] } else { dc[j] });
                assert_eq!(fc[j].to_bits(), want.to_bits(), "case {i} {p}: element {j}");
            }
            let tol = if is_data {
                Tolerance::bwd_data(TypeConfig::F16, p)
            } else {
                Tolerance::bwd_weight(TypeConfig::F16, p, 1)
            };
            let e = check::expected(&tol, out_d, &plain, None, &chain, &ds);
            assert_eq!(
                r::to_canonical(&e.reference, out_d),
                fc,
                "case {i}: check::expected reference"
            );
        }
    }
}

/// Reference results do not depend on how work is split over threads: a
/// threaded run equals the same problem computed as G separate 1-group
/// problems (each also threaded differently) bit for bit.
#[test]
fn groups_are_independent() {
    let p = prob(
        2,
        3,
        2,
        16,
        12,
        &[3, 3],
        &[20, 20],
        &[2, 1],
        &[1, 1],
        &[1, 1],
        &[1, 1],
    );
    let p1 = ConvProblem { g: 1, ..p };
    let mut rng = SplitMix64::new(5);
    let l = ConvLayout::GnhwcGkyxcGnhwk; // group-major: group g is a contiguous slice
    let [xd, wd, yd] = descs(&p, l);
    let [xd1, wd1, yd1] = descs(&p1, l);
    let (x, w, dy) = operands(&mut rng, &xd, &wd, &yd);
    let (_, dx, dw) = passes(&p, [(&x, &xd), (&w, &wd), (&dy, &yd)]);
    let (nx, nw, ny) = (
        xd1.span() as usize,
        wd1.span() as usize,
        yd1.span() as usize,
    );
    for g in 0..p.g {
        let (xg, wg, dyg) = (&x[g * nx..][..nx], &w[g * nw..][..nw], &dy[g * ny..][..ny]);
        let (_, dx1, dw1) = passes(&p1, [(xg, &xd1), (wg, &wd1), (dyg, &yd1)]);
        assert_eq!(dx1, dx[g * nx..][..nx], "group {g} dx");
        assert_eq!(dw1, dw[g * nw..][..nw], "group {g} dw");
    }
}

// ------------------------------------------------------- check: conversions, random

#[test]
fn rounding_is_nearest_even() {
    // f16: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 -> even (1); a hair above rounds up.
    assert_eq!(check::round_to(DType::F16, 1.0 + 2f64.powi(-11)), 1.0);
    assert_eq!(
        check::round_to(DType::F16, 1.0 + 2f64.powi(-11) + 2f64.powi(-40)),
        1.0 + 2f64.powi(-10)
    );
    assert_eq!(
        check::round_to(DType::F16, 1.0 + 3.0 * 2f64.powi(-11)),
        1.0 + 2.0 * 2f64.powi(-10)
    );
    // half's from_f64 drops the low 32 bits before rounding; ours does not.
    assert_eq!(
        check::to_f16(&[1.0 + 2f64.powi(-11) + 2f64.powi(-40)])[0].to_f64(),
        1.0 + 2f64.powi(-10)
    );
    // Subnormals, overflow, and the largest finite values.
    assert_eq!(check::round_to(DType::F16, 2f64.powi(-25)), 0.0); // tie -> even (0)
    assert_eq!(
        check::round_to(DType::F16, 3.0 * 2f64.powi(-26)),
        2f64.powi(-24)
    );
    assert_eq!(check::round_to(DType::F16, 65519.0), 65504.0);
    assert_eq!(check::round_to(DType::F16, 65520.0), f64::INFINITY);
    assert_eq!(check::round_to(DType::F16, -1e6), f64::NEG_INFINITY);
    assert_eq!(check::round_to(DType::Bf16, 1.0 + 2f64.powi(-8)), 1.0);
    assert_eq!(
        check::round_to(DType::Bf16, 1.0 + 3.0 * 2f64.powi(-8)),
        1.0 + 2f64.powi(-6)
    );
    assert_eq!(check::round_to(DType::Bf16, 3.39e38), 3.3895313892515355e38); // midpoint to 2^128 is 3.396e38
    assert_eq!(check::round_to(DType::Bf16, 3.5e38), f64::INFINITY);
    assert!(check::round_to(DType::F16, f64::NAN).is_nan());
    // Against half on random values already rounded to f32 (where half is exact).
    let mut rng = SplitMix64::new(1);
    for _ in 0..100_000 {
        let v = ((rng.unit() - 0.5) * 2f64.powi(rng.range(0, 60) as i32 - 30)) as f32;
        assert_eq!(
            check::round_to(DType::F16, v as f64),
            half::f16::from_f32(v).to_f64(),
            "{v:e}"
        );
        assert_eq!(
            check::round_to(DType::Bf16, v as f64),
            half::bf16::from_f32(v).to_f64(),
            "{v:e}"
        );
    }
}

#[test]
fn storage_round_trips() {
    let v = check::fill_random(3, Init::Float, DType::Bf16, 1000);
    for t in [DType::F32, DType::F16, DType::Bf16] {
        let b = check::to_bytes(t, &v);
        assert_eq!(b.len(), 1000 * t.bytes());
        let back = check::from_bytes(t, &b);
        let want: Vec<f64> = v.iter().map(|&x| check::round_to(t, x)).collect();
        assert_eq!(back, want, "{t:?}");
        // Unaligned byte slices work too.
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(&b);
        assert_eq!(check::from_bytes(t, &shifted[1..]), want);
        assert!(
            check::from_bytes(t, &check::poisoned_bytes(t, 5))
                .iter()
                .all(|x| x.is_nan())
        );
    }
    assert_eq!(check::from_f32(&check::to_f32(&v)), v);
    assert_eq!(check::from_bf16(&check::to_bf16(&v)), v);
}

#[test]
fn fill_random_kinds() {
    for t in [DType::F32, DType::F16, DType::Bf16] {
        let a = check::fill_random(42, Init::Float, t, 50_000);
        assert_eq!(
            a,
            check::fill_random(42, Init::Float, t, 50_000),
            "deterministic"
        );
        assert_ne!(a, check::fill_random(43, Init::Float, t, 50_000));
        assert!(
            a.iter()
                .all(|&v| (-1.0..1.0).contains(&v) && check::round_to(t, v) == v)
        );
        let mean = a.iter().sum::<f64>() / a.len() as f64;
        assert!(mean.abs() < 0.02, "{t:?} mean {mean}");
        let i = check::fill_random(42, Init::Int, t, 50_000);
        for k in -5..=4 {
            let cnt = i.iter().filter(|&&v| v == k as f64).count();
            assert!((4000..6000).contains(&cnt), "{k}: {cnt}");
        }
        assert!(
            i.iter()
                .all(|&v| (-5.0..=4.0).contains(&v) && v.fract() == 0.0)
        );
    }
    assert_eq!(Init::parse("1"), Some(Init::Int));
    assert_eq!(Init::parse("Float"), Some(Init::Float));
    assert_eq!(Init::from_ck(3), None);
}

// ------------------------------------------------------- check: tolerance rule

/// How a simulated f32 kernel orders its sum.
#[derive(Clone, Copy, Debug)]
enum Order {
    Seq,
    Rev,
    /// `kb` partial sums (split-K) added in order.
    Split(usize),
    Pairwise,
}

fn f32_sum(p: &[f32], order: Order) -> f32 {
    match order {
        Order::Seq => p.iter().fold(0.0f32, |s, &t| s + t),
        Order::Rev => p.iter().rev().fold(0.0f32, |s, &t| s + t),
        Order::Split(kb) => {
            let chunk = p.len().div_ceil(kb).max(1);
            p.chunks(chunk)
                .map(|c| f32_sum(c, Order::Seq))
                .fold(0.0f32, |s, t| s + t)
        }
        Order::Pairwise => {
            if p.len() <= 2 {
                p.iter().fold(0.0f32, |s, &t| s + t)
            } else {
                let (a, b) = p.split_at(p.len() / 2);
                f32_sum(a, order) + f32_sum(b, order)
            }
        }
    }
}

/// The terms `(a, b)` of every output element, canonical order of the output.
fn terms(p: &ConvProblem, data: bool, x: &[f64], w: &[f64], dy: &[f64]) -> Vec<Vec<(f64, f64)>> {
    let l = ConvLayout::GnhwcGkyxcGnhwk;
    let [xd, wd, yd] = descs(p, l);
    let o = p.output();
    let outd = if data { xd } else { wd };
    let mut all = vec![Vec::new(); outd.elems() as usize];
    for g in 0..p.g {
        for n in 0..p.n {
            for k in 0..p.k {
                for c in 0..p.c {
                    for oh in 0..o[1] {
                        for ow in 0..o[2] {
                            for fy in 0..p.filter[1] {
                                for fx in 0..p.filter[2] {
                                    let (Some(ih), Some(iw)) =
                                        (in_range(oh, fy, p, 1), in_range(ow, fx, p, 2))
                                    else {
                                        continue;
                                    };
                                    let (xi, wi, yi) = (
                                        [g, n, c, 0, ih, iw],
                                        [g, k, c, 0, fy, fx],
                                        [g, n, k, 0, oh, ow],
                                    );
                                    let (xv, wv, dyv) =
                                        (x[xd.offset(xi)], w[wd.offset(wi)], dy[yd.offset(yi)]);
                                    if data {
                                        all[canonical(&xd.lengths, xi)].push((dyv, wv));
                                    } else {
                                        all[canonical(&wd.lengths, wi)].push((xv, dyv));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    all
}

struct Sim {
    p: ConvProblem,
    data: bool,
    x: Vec<f64>,
    w: Vec<f64>,
    dy: Vec<f64>,
    outd: TensorDesc,
}

impl Sim {
    /// A 2-D problem with random inputs of type combination `tc` (`abs`: all positive).
    fn new(p: ConvProblem, data: bool, tc: TypeConfig, init: Init, seed: u64, abs: bool) -> Sim {
        let [xd, wd, yd] = descs(&p, ConvLayout::GnhwcGkyxcGnhwk);
        let f = |s: u64, t: DType, n: usize| {
            let v = check::fill_random(seed * 3 + s, init, t, n);
            if abs { r::abs_values(&v) } else { v }
        };
        let x = f(0, tc.act(), xd.elems() as usize);
        let w = f(1, tc.wei(), wd.elems() as usize);
        let dy = f(2, tc.act(), yd.elems() as usize);
        Sim {
            p,
            data,
            x,
            w,
            dy,
            outd: if data { xd } else { wd },
        }
    }
    fn descs(&self) -> [TensorDesc; 3] {
        descs(&self.p, ConvLayout::GnhwcGkyxcGnhwk)
    }
    /// (acc, abs) from the reference.
    fn reference(&self) -> (Vec<f64>, Vec<f64>) {
        let [xd, wd, yd] = self.descs();
        let (mut acc, mut abs) = (nan_buf(&self.outd), nan_buf(&self.outd));
        let a = r::abs_values;
        if self.data {
            r::bwd_data(&self.p, &self.dy, &yd, &self.w, &wd, &mut acc, &xd);
            r::bwd_data(&self.p, &a(&self.dy), &yd, &a(&self.w), &wd, &mut abs, &xd);
        } else {
            r::bwd_weight(&self.p, &self.x, &xd, &self.dy, &yd, &mut acc, &wd);
            r::bwd_weight(&self.p, &a(&self.x), &xd, &a(&self.dy), &yd, &mut abs, &wd);
        }
        (acc, abs)
    }
    /// The f32 products an f32-accumulating kernel forms per output element:
    /// operands rounded to the compute type, multiplied in f32.
    fn products(&self, tc: TypeConfig) -> Vec<Vec<f32>> {
        let ct = tc.compute();
        terms(&self.p, self.data, &self.x, &self.w, &self.dy)
            .iter()
            .map(|ts| {
                ts.iter()
                    .map(|&(a, b)| check::round_to(ct, a) as f32 * check::round_to(ct, b) as f32)
                    .collect()
            })
            .collect()
    }
    /// What the kernel writes: f32 sums in `order`, the f32 epilogue, one rounding.
    fn kernel(
        &self,
        tc: TypeConfig,
        prods: &[Vec<f32>],
        order: Order,
        chain: &EpiChain,
        d: &[f64],
    ) -> Vec<f64> {
        let out_t = if self.data { tc.act() } else { tc.wei() };
        prods
            .iter()
            .enumerate()
            .map(|(j, ps)| {
                let v = chain.apply(f32_sum(ps, order), |_| d[j] as f32);
                check::round_to(out_t, v as f64)
            })
            .collect()
    }
    fn tolerance(&self, tc: TypeConfig, kb: usize) -> Tolerance {
        if self.data {
            Tolerance::bwd_data(tc, &self.p)
        } else {
            Tolerance::bwd_weight(tc, &self.p, kb)
        }
    }
}

fn sim_problems() -> Vec<ConvProblem> {
    vec![
        prob(
            2,
            2,
            2,
            16,
            16,
            &[3, 3],
            &[16, 16],
            &[1, 1],
            &[1, 1],
            &[1, 1],
            &[1, 1],
        ),
        prob(
            2,
            1,
            2,
            12,
            8,
            &[3, 3],
            &[17, 15],
            &[2, 2],
            &[1, 1],
            &[1, 0],
            &[1, 2],
        ),
        prob(
            2,
            1,
            8,
            4,
            4,
            &[3, 3],
            &[32, 32],
            &[1, 1],
            &[2, 2],
            &[2, 2],
            &[2, 2],
        ),
    ]
}

/// Simulated f32-accumulating kernels (every type combination, sequential,
/// reversed, pairwise and split-K sums, plain and with epilogues, random and
/// all-positive data) never fail the rule.
#[test]
fn correct_f32_kernels_pass() {
    let (mut worst, mut l2_worst) = (0.0f64, 0.0f64);
    for (pi, p) in sim_problems().into_iter().enumerate() {
        for data in [true, false] {
            for tc in TypeConfig::EVERY {
                for (init, abs) in [
                    (Init::Float, false),
                    (Init::Float, true),
                    (Init::Int, false),
                ] {
                    let sim = Sim::new(p, data, tc, init, pi as u64 * 7 + data as u64, abs);
                    let (acc, absr) = sim.reference();
                    let out_t = if data { tc.act() } else { tc.wei() };
                    let d = check::fill_random(99, Init::Float, out_t, sim.outd.elems() as usize);
                    let db = put(&d, &sim.outd);
                    let prods = sim.products(tc);
                    for (order, kb) in [
                        (Order::Seq, 1),
                        (Order::Rev, 1),
                        (Order::Pairwise, 1),
                        (Order::Split(7), 7),
                    ] {
                        let tol = sim.tolerance(tc, kb).with_integer_data(init == Init::Int);
                        for ops in [
                            vec![],
                            vec![EpilogueOp::AddRelu],
                            vec![EpilogueOp::Bilinear(1.5, -0.75)],
                            vec![EpilogueOp::Scale(3.0)],
                        ] {
                            let chain = EpiChain::from_ops(&ops).unwrap();
                            let out = put(&sim.kernel(tc, &prods, order, &chain, &d), &sim.outd);
                            let ds: Vec<(&[f64], &TensorDesc)> = if chain.num_d > 0 {
                                vec![(&db, &sim.outd)]
                            } else {
                                vec![]
                            };
                            let e =
                                check::expected(&tol, &sim.outd, &acc, Some(&absr), &chain, &ds);
                            let rep = check::compare_expected(&out, &e, &sim.outd);
                            l2_worst = l2_worst.max(rep.l2_ratio().unwrap_or(0.0));
                            assert!(
                                rep.passed(),
                                "{p} data={data} {tc:?} {init:?} abs={abs} {order:?} {ops:?}: {rep}\n{}",
                                tol.rule_text()
                            );
                            if init == Init::Int && chain.len == 0 && out_t == DType::F32 {
                                assert_eq!(rep.max_abs, 0.0, "integer data is exact in f32");
                            }
                            if rep.worst_ratio > worst {
                                worst = rep.worst_ratio;
                                println!(
                                    "largest err/bound so far {worst:.3}: {p} data={data} {tc:?} {init:?} {order:?} {ops:?}: {:?}",
                                    rep.worst
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    println!("largest err/bound of a correct f32 kernel: {worst:.3}, largest l2 err/typical {l2_worst:.3}");
}

/// One wrong tap fails: (a) a whole result computed with an off-by-one input
/// index (left pad + 1, i.e. every tap reads its neighbour) fails for every
/// type combination; (b) element by element, adding one wrong tap's
/// contribution to bwd-data (reading weight tap x+1 for one output pixel), or
/// giving a bwd-weight element its neighbouring tap's value, fails for at
/// least 99% of the elements with float data when the accumulation length is
/// at most 4096 (90% at L = 8192, where about 4% are expected to hide; the rest are elements where the wrong
/// contribution happens to be below the worst-case rounding bound; 85% where
/// the kernel multiplies f32 weights in bf16, whose products are only good to
/// 2^-8 of themselves).
#[test]
fn wrong_tap_fails() {
    for p in sim_problems() {
        for data in [true, false] {
            for tc in TypeConfig::EVERY {
                let sim = Sim::new(p, data, tc, Init::Float, 11, false);
                let (acc, absr) = sim.reference();
                let tol = sim.tolerance(tc, 1);
                let e = check::expected(
                    &tol,
                    &sim.outd,
                    &acc,
                    Some(&absr),
                    &EpiChain::default(),
                    &[],
                );
                let out_t = if data { tc.act() } else { tc.wei() };
                let correct = put(
                    &sim.kernel(tc, &sim.products(tc), Order::Seq, &EpiChain::default(), &[]),
                    &sim.outd,
                );
                assert!(check::compare(&correct, &e.reference, &e.bound, &sim.outd).passed());

                // (a) shifted input index.
                let mut ps = p;
                ps.lpads[2] += 1;
                ps.rpads[2] -= 1;
                let shifted = Sim {
                    p: ps,
                    ..Sim::new(p, data, tc, Init::Float, 11, false)
                };
                let (mut bad, _) = shifted.reference();
                check::round_slice(out_t, &mut bad);
                let rep = check::compare(&bad, &e.reference, &e.bound, &sim.outd);
                assert!(
                    !rep.passed() && rep.fail_count * 2 > rep.elems,
                    "{p} data={data} {tc:?}: off-by-one passed: {rep}"
                );

                // (b) element by element.
                let outc = r::to_canonical(&correct, &sim.outd);
                let refc = r::to_canonical(&e.reference, &sim.outd);
                let bndc = r::to_canonical(&e.bound, &sim.outd);
                let wrong = wrong_contributions(&sim);
                let (mut tried, mut caught) = (0, 0);
                for (j, wv) in wrong.iter().enumerate() {
                    let Some(wv) = wv else { continue };
                    tried += 1;
                    let perturbed = check::round_to(out_t, outc[j] + wv);
                    if (perturbed - refc[j]).abs() > bndc[j] {
                        caught += 1;
                    }
                }
                // Where the compute type rounds an input (f32 weights in a bf16 multiply),
                // each product may be off by 2^-8 of itself, and a wrong tap that small
                // cannot be told from rounding.
                // The bound grows like 2uL * sum|t| (worst case), a wrong tap like sqrt(L):
                // at L = 8192 about 4% of single wrong taps hide under it (expected).
                // TF32 operands (f32-tf32, e_p ~ 2^-10): the bound is ~2^-10 of
                // sum|t| from the first product on: 94.4-99.5% caught here
                // (94.4% at L = 8192, 97.9% at L = 144); the L2 test 2 catches
                // what hides element by element.
                let need = if tol.product_err() > 1e-3 {
                    0.85
                } else if tol.product_err() > 5e-4 || tol.accum_len > 4096 {
                    0.90
                } else {
                    0.99
                };
                println!("{p} data={data} {tc:?}: caught {caught} of {tried} single wrong taps");
                assert!(
                    tried > 100 && caught as f64 >= need * tried as f64,
                    "{p} data={data} {tc:?}: caught {caught} of {tried}"
                );
            }
        }
    }
}

/// Per output element, the change one wrong tap makes (None where there is no neighbour tap).
fn wrong_contributions(sim: &Sim) -> Vec<Option<f64>> {
    let p = &sim.p;
    let [xd, wd, yd] = sim.descs();
    let o = p.output();
    let mut out = vec![None; sim.outd.elems() as usize];
    let lx = &sim.outd.lengths;
    for (j, slot) in out.iter_mut().enumerate() {
        // canonical index of element j
        let mut idx = [0usize; 6];
        let mut rest = j;
        for a in (0..6).rev() {
            idx[a] = rest % lx[a];
            rest /= lx[a];
        }
        if sim.data {
            // First (o, f) reaching this dx pixel; contribution of tap fx+1 (or fx-1) at the same o.
            let [g, n, c, _, ih, iw] = idx;
            'find: for fy in 0..p.filter[1] {
                for fx in 0..p.filter[2] {
                    let (Some(oh), Some(ow)) =
                        (solve(ih, fy, p, 1, o[1]), solve(iw, fx, p, 2, o[2]))
                    else {
                        continue;
                    };
                    let fx2 = if fx + 1 < p.filter[2] { fx + 1 } else { fx - 1 };
                    let s: f64 = (0..p.k)
                        .map(|k| {
                            sim.dy[yd.offset([g, n, k, 0, oh, ow])]
                                * sim.w[wd.offset([g, k, c, 0, fy, fx2])]
                        })
                        .sum();
                    *slot = Some(s);
                    break 'find;
                }
            }
        } else {
            // dw[f] replaced by dw[f'] with f' the neighbouring x tap.
            let [g, k, c, _, fy, fx] = idx;
            let fx2 = if fx + 1 < p.filter[2] { fx + 1 } else { fx - 1 };
            let mut s = 0.0;
            for n in 0..p.n {
                for oh in 0..o[1] {
                    for ow in 0..o[2] {
                        let dyv = sim.dy[yd.offset([g, n, k, 0, oh, ow])];
                        if let (Some(ih), Some(iw2)) =
                            (in_range(oh, fy, p, 1), in_range(ow, fx2, p, 2))
                        {
                            s += sim.x[xd.offset([g, n, c, 0, ih, iw2])] * dyv;
                        }
                        if let (Some(ih), Some(iw)) =
                            (in_range(oh, fy, p, 1), in_range(ow, fx, p, 2))
                        {
                            s -= sim.x[xd.offset([g, n, c, 0, ih, iw])] * dyv;
                        }
                    }
                }
            }
            *slot = Some(s);
        }
    }
    out
}

fn solve(i: usize, f: usize, p: &ConvProblem, a: usize, out: usize) -> Option<usize> {
    let t = (i + p.lpads[a]) as isize - (f * p.dilations[a]) as isize;
    (t >= 0 && (t as usize).is_multiple_of(p.strides[a]) && t as usize / p.strides[a] < out)
        .then(|| t as usize / p.strides[a])
}

/// Poisoned (NaN) elements count as unwritten, infinities as non-finite, and
/// writes into the gaps of a strided output are found.
#[test]
fn report_flags_unwritten_and_nonfinite() {
    let p = prob(1, 1, 1, 1, 1, &[1], &[6], &[1], &[1], &[0], &[0]);
    let d = TensorDesc {
        lengths: TensorDesc::lengths_of(&p, TensorRole::Input),
        strides: [6, 6, 6, 6, 6, 2],
    }; // every other element
    let reference = put(&[1., 2., 3., 4., 5., 6.], &d);
    let bound = vec![1e-6; d.span() as usize];
    let mut out = reference.clone();
    assert!(check::compare(&out, &reference, &bound, &d).passed());
    assert_eq!(check::outside_writes(&out, &d), (0, None));
    out[4] = f64::NAN; // element 2
    out[8] = f64::INFINITY; // element 4
    out[1] = 0.0; // a gap
    let rep = check::compare(&out, &reference, &bound, &d);
    assert!(!rep.passed());
    assert_eq!(
        (rep.fail_count, rep.nonfinite_count, rep.unwritten_count),
        (2, 2, 1)
    );
    assert_eq!(rep.first_unwritten, Some([0, 0, 0, 0, 0, 2]));
    assert_eq!(check::outside_writes(&out, &d), (1, Some(1)));
    let mut out = reference.clone();
    out[10] += 1e-5;
    let rep = check::compare(&out, &reference, &bound, &d);
    assert_eq!(rep.fail_count, 1);
    assert_eq!(rep.first_fail.unwrap().index, [0, 0, 0, 0, 0, 5]);
    assert!(rep.summary().ends_with("FAIL"), "{rep}");
    let rule = Tolerance::bwd_weight(TypeConfig::Bf16F32, &p, 4).rule_text();
    assert!(
        rule.contains("pass iff") && rule.contains("f32 output"),
        "{rule}"
    );
}

/// The accumulation lengths: CK's GEMM-K.
#[test]
fn accumulation_lengths() {
    // Seed bwd-data problem: stride 2, 3x3 -> YDot = XDot = 2, GEMM-K = 4K.
    let p = prob(
        2,
        1,
        128,
        256,
        128,
        &[3, 3],
        &[71, 71],
        &[2, 2],
        &[1, 1],
        &[1, 1],
        &[1, 1],
    );
    assert_eq!(check::accum_len_bwd_data(&p), 256 * 4);
    println!("{}", Tolerance::bwd_data(TypeConfig::F16, &p).rule_text());
    // Stride 2, dilation 2: gcd 2, tilde 1 -> all 9 taps.
    let p = prob(
        2,
        1,
        1,
        8,
        8,
        &[3, 3],
        &[16, 16],
        &[2, 2],
        &[2, 2],
        &[2, 2],
        &[2, 2],
    );
    assert_eq!(check::accum_len_bwd_data(&p), 8 * 9);
    // CK example 20: N * prod(out) = 14^3.
    let p = ck(&[
        3, 4, 1, 128, 256, 3, 3, 3, 14, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    ]);
    assert_eq!(check::accum_len_bwd_weight(&p, 1), 2744);
    assert_eq!(check::accum_len_bwd_weight(&p, 8), 343 + 8);
}

// ------------------------------------------------------- speed

/// ~1.85 GFLOP per pass (2-D G=1 N=8 K=64 C=64 3x3 56x56 pad 1) in two layout
/// families, and a depthwise problem; prints the rate of each pass. Run with
/// `-- --ignored --nocapture speed` (`CONVGRAD_REF_THREADS=1` for one thread).
#[test]
#[ignore]
fn speed_2gflop() {
    // 8 images of 56x56, 3x3 filters, pad 1: G groups of C -> K channels.
    let layer = |g, k, c| ck(&[2, g, 8, k, c, 3, 3, 56, 56, 1, 1, 1, 1, 1, 1, 1, 1]);
    let (dense, depthwise) = (layer(1, 64, 64), layer(512, 1, 1));
    let mut rng = SplitMix64::new(9);
    for (p, l) in [
        (dense, ConvLayout::NhwgcGkyxcNhwgk),
        (dense, ConvLayout::NgchwGkcyxNgkhw),
        (depthwise, ConvLayout::NhwgcGkyxcNhwgk),
    ] {
        let gf = p.flops() as f64 * 1e-9;
        let [xd, wd, yd] = descs(&p, l);
        let (x, w, dy) = operands(&mut rng, &xd, &wd, &yd);
        let (mut dx, mut dw, mut y) = (nan_buf(&xd), nan_buf(&wd), nan_buf(&yd));
        let time = |f: &mut dyn FnMut()| {
            let t = std::time::Instant::now();
            f();
            t.elapsed().as_secs_f64()
        };
        let tf = time(&mut || r::conv_fwd(&p, &x, &xd, &w, &wd, &mut y, &yd));
        let td = time(&mut || r::bwd_data(&p, &dy, &yd, &w, &wd, &mut dx, &xd));
        let tw = time(&mut || r::bwd_weight(&p, &x, &xd, &dy, &yd, &mut dw, &wd));
        println!(
            "{} {p} ({gf:.2} GFLOP, {} threads): fwd {tf:.2}s {:.2} GFLOP/s, bwd_data {td:.2}s {:.2} GFLOP/s, bwd_weight {tw:.2}s {:.2} GFLOP/s",
            l.name(),
            r::threads(),
            gf / tf,
            gf / td,
            gf / tw
        );
        assert!(tf.max(td).max(tw) < 30.0);
    }
}
