//! Moving tensors between their descriptors and the packed scratch the
//! reference computes in, plus the problem geometry in 3-D form.

use crate::types::layout::AXES;
use crate::types::{ConvProblem, TensorDesc};

/// Scratch order of activations and output gradients: `G N D H W C` (channels innermost).
pub(crate) const ACT: [usize; AXES] = [0, 1, 3, 4, 5, 2];
/// Scratch order of weights for fwd: `G Z Y X C K` (K innermost).
pub(crate) const WEI_CK: [usize; AXES] = [0, 3, 4, 5, 2, 1];
/// Scratch order of the weight gradient: `Z Y X G C K` (tap-major, K innermost).
pub(crate) const TAP_GCK: [usize; AXES] = [3, 4, 5, 0, 2, 1];
/// Scratch order of weights for bwd-data: `G Z Y X K C` (C innermost).
pub(crate) const WEI_KC: [usize; AXES] = [0, 3, 4, 5, 1, 2];
/// Canonical row-major order.
pub(crate) const CANON: [usize; AXES] = [0, 1, 2, 3, 4, 5];

/// Panics unless `d` has the lengths `want` and a buffer of `len` elements covers it.
pub(crate) fn check_desc(name: &str, d: &TensorDesc, want: [usize; AXES], len: usize) {
    assert!(
        d.lengths == want,
        "reference: tensor {name}: descriptor lengths {:?} differ from the problem's {:?} \
         (canonical order G,N,C,D,H,W / G,K,C,Z,Y,X)",
        d.lengths,
        want
    );
    let span = d.span();
    assert!(
        len as u64 >= span,
        "reference: tensor {name}: buffer holds {len} elements but its descriptor spans {span}"
    );
}

/// Calls `f(canonical index, position)` for every element of a tensor with
/// canonical `lengths`, visiting axes in `order` (outer to inner); `position`
/// counts 0, 1, 2, ... in that order.
#[inline]
pub(crate) fn for_each(
    lengths: &[usize; AXES],
    order: [usize; AXES],
    mut f: impl FnMut(&[usize; AXES], usize),
) {
    let total: usize = lengths.iter().product();
    let mut idx = [0usize; AXES];
    for pos in 0..total {
        f(&idx, pos);
        // Next index: the innermost axis first, carrying outwards.
        for &a in order.iter().rev() {
            idx[a] += 1;
            if idx[a] < lengths[a] {
                break;
            }
            idx[a] = 0;
        }
    }
}

/// Calls `f(offset, position)` for every element of `d`, visiting axes in
/// `order` (outer to inner): `offset` is the element's offset under `d`,
/// `position` counts 0, 1, 2, ... (offsets are built incrementally).
#[inline]
pub(crate) fn for_each_offset(
    d: &TensorDesc,
    order: [usize; AXES],
    mut f: impl FnMut(usize, usize),
) {
    let l = order.map(|a| d.lengths[a]);
    let s = order.map(|a| d.strides[a]);
    let mut pos = 0;
    for i0 in 0..l[0] {
        let o0 = i0 * s[0];
        for i1 in 0..l[1] {
            let o1 = o0 + i1 * s[1];
            for i2 in 0..l[2] {
                let o2 = o1 + i2 * s[2];
                for i3 in 0..l[3] {
                    let o3 = o2 + i3 * s[3];
                    for i4 in 0..l[4] {
                        let o4 = o3 + i4 * s[4];
                        for i5 in 0..l[5] {
                            f(o4 + i5 * s[5], pos);
                            pos += 1;
                        }
                    }
                }
            }
        }
    }
}

/// Copies the tensor `(src, d)` into a packed buffer with axes in `order`, through `map`.
pub(crate) fn gather(
    src: &[f64],
    d: &TensorDesc,
    order: [usize; AXES],
    map: impl Fn(f64) -> f64,
) -> Vec<f64> {
    let mut out = vec![0.0; d.elems() as usize];
    for_each_offset(d, order, |o, pos| out[pos] = map(src[o]));
    out
}

/// Right-aligned 3-D geometry of a problem (unused leading axes have size 1).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geo {
    pub g: usize,
    pub n: usize,
    pub c: usize,
    pub k: usize,
    pub inp: [usize; 3],
    pub out: [usize; 3],
    pub fil: [usize; 3],
    pub s: [usize; 3],
    pub d: [usize; 3],
    pub lp: [usize; 3],
}

impl Geo {
    pub fn new(p: &ConvProblem) -> Geo {
        Geo {
            g: p.g,
            n: p.n,
            c: p.c,
            k: p.k,
            inp: p.input,
            out: p.output(),
            fil: p.filter,
            s: p.strides,
            d: p.dilations,
            lp: p.lpads,
        }
    }
    pub fn in_pix(&self) -> usize {
        self.inp.iter().product()
    }
    pub fn out_pix(&self) -> usize {
        self.out.iter().product()
    }
    pub fn taps(&self) -> usize {
        self.fil.iter().product()
    }
    /// Input coordinate that output coordinate `o` reads through tap `f` along
    /// axis `a` (`o*s - lp + f*d`), or `None` when it falls in the padding.
    #[inline(always)]
    pub fn src(&self, a: usize, o: usize, f: usize) -> Option<usize> {
        let t = o * self.s[a] + f * self.d[a];
        if t < self.lp[a] || t - self.lp[a] >= self.inp[a] {
            None
        } else {
            Some(t - self.lp[a])
        }
    }
    /// Output coordinate whose tap `f` reads input coordinate `i` along axis
    /// `a` (solves `o*s - lp + f*d = i`), or `None` when there is none.
    #[inline(always)]
    pub fn dst(&self, a: usize, i: usize, f: usize) -> Option<usize> {
        let t = i + self.lp[a];
        let fd = f * self.d[a];
        if t < fd {
            return None;
        }
        let t = t - fd;
        if !t.is_multiple_of(self.s[a]) {
            return None;
        }
        let o = t / self.s[a];
        if o < self.out[a] { Some(o) } else { None }
    }
}

/// `acc[m] += sum_r a[r] * b[r * M + m]` with `M = acc.len()`, four `r` at a time.
#[inline]
pub(crate) fn mac(acc: &mut [f64], a: &[f64], b: &[f64]) {
    let m = acc.len();
    debug_assert!(b.len() >= a.len() * m);
    if m == 1 {
        // Depthwise-like: a plain dot product.
        acc[0] += a.iter().zip(&b[..a.len()]).map(|(x, y)| x * y).sum::<f64>();
        return;
    }
    let mut r = 0;
    while r + 4 <= a.len() {
        fma4(
            acc,
            [a[r], a[r + 1], a[r + 2], a[r + 3]],
            [
                &b[r * m..],
                &b[(r + 1) * m..],
                &b[(r + 2) * m..],
                &b[(r + 3) * m..],
            ],
        );
        r += 4;
    }
    while r < a.len() {
        fma1(acc, a[r], &b[r * m..]);
        r += 1;
    }
}

/// `acc[i] += a0*b0[i] + a1*b1[i] + a2*b2[i] + a3*b3[i]`.
#[inline(always)]
pub(crate) fn fma4(acc: &mut [f64], a: [f64; 4], b: [&[f64]; 4]) {
    let m = acc.len();
    let (b0, b1, b2, b3) = (&b[0][..m], &b[1][..m], &b[2][..m], &b[3][..m]);
    for i in 0..m {
        acc[i] += a[0] * b0[i] + a[1] * b1[i] + a[2] * b2[i] + a[3] * b3[i];
    }
}

/// `acc[i] += a * b[i]`.
#[inline(always)]
pub(crate) fn fma1(acc: &mut [f64], a: f64, b: &[f64]) {
    let b = &b[..acc.len()];
    for (o, &v) in acc.iter_mut().zip(b) {
        *o += a * v;
    }
}
