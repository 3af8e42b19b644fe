//! Stride residues of backward-data: per dimension, input pixel `i`
//! receives taps `f` with `i + P - f*D ≡ 0 (mod S)`; all pixels of one
//! residue `r = i mod S` take the same class of taps `f = t + tilde*j`
//! (`tilde = S / gcd(S, D)`), tap `j` reading output pixel
//! `q + base - j*tap_step` for `i = r + S*q`.
//!
//! [`Slice`] holds the classes of a residue combination (the GEMM's slices
//! and the direct kernel's scalar path); `class_of` finds one dimension's
//! class with multiply-high divisions only (the channel-lane paths).

use convgrad_types::params::{ConvArgs, FastDiv};

/// One stride-residue slice: its taps and where they read `dY`.
#[derive(Clone, Copy)]
pub struct Slice {
    /// Residue of the slice's input pixels, per dim.
    pub r: [u32; 3],
    /// First tap of the class, per dim.
    pub t: [u32; 3],
    /// Output pixel of tap `j = 0` for `q = 0` (may be negative: wrapping).
    pub base: [u32; 3],
    /// Taps of the class, per dim (0: no tap reaches the slice).
    pub dot: [u32; 3],
    /// Divisions by `dot` along y and x (tap index -> per-dim taps).
    div_dot: [FastDiv; 2],
    /// Reduction length: `dot_z * dot_y * dot_x * K`.
    pub gemm_k: u32,
}

impl Slice {
    /// The slice of stride residues `r`.
    #[inline(always)]
    pub fn new(a: &ConvArgs, r: [u32; 3]) -> Slice {
        // One call per dim with a literal index: every array stays in registers.
        let (z, y, x) = (slice_class(a, 0, r[0]), slice_class(a, 1, r[1]), slice_class(a, 2, r[2]));
        let dot = [z.dot, y.dot, x.dot];
        Slice {
            r,
            t: [z.t, y.t, x.t],
            base: [z.base, y.base, x.base],
            dot,
            div_dot: [y.div, x.div],
            gemm_k: dot[0] * dot[1] * dot[2] * a.k,
        }
    }

    /// Slice number `s` of the launch (grid y): residues with x fastest.
    #[inline(always)]
    pub fn of_launch(a: &ConvArgs, s: u32) -> Slice {
        let (t, rx) = a.slices.div_stride[2].divmod(s);
        let (rz, ry) = a.slices.div_stride[1].divmod(t);
        Slice::new(a, [rz, ry, rx])
    }

    /// Tap index `j` of the class -> per-dim taps.
    #[inline(always)]
    pub fn split_tap(&self, j: u32) -> [u32; 3] {
        let (t, jx) = self.div_dot[1].divmod(j);
        let (jz, jy) = self.div_dot[0].divmod(t);
        [jz, jy, jx]
    }

    /// Row `m` of the slice GEMM -> `(n, q)`.
    #[inline(always)]
    pub fn split_row(a: &ConvArgs, m: u32) -> (u32, [u32; 3]) {
        let (t, qx) = a.slices.div_rows[2].divmod(m);
        let (t, qy) = a.slices.div_rows[1].divmod(t);
        let (n, qz) = a.slices.div_rows[0].divmod(t);
        (n, [qz, qy, qx])
    }

    /// Input pixel of row position `q`, if it lies inside the input.
    #[inline(always)]
    pub fn pixel(&self, a: &ConvArgs, q: [u32; 3]) -> Option<[u32; 3]> {
        let (r, s) = (&self.r, &a.stride);
        let i = [r[0] + s[0] * q[0], r[1] + s[1] * q[1], r[2] + s[2] * q[2]];
        (i[0] < a.input[0] && i[1] < a.input[1] && i[2] < a.input[2]).then_some(i)
    }
}

/// The tap class of residue `r` along dim `d`.
struct SliceClass {
    t: u32,
    base: u32,
    dot: u32,
    div: FastDiv,
}

/// The class of stride residue `r` along dim `d`: the one `t < tilde` with
/// `r + P - t*D` divisible by `S` (none: no tap reaches these pixels).
#[inline(always)]
fn slice_class(a: &ConvArgs, d: usize, r: u32) -> SliceClass {
    let (s, dil) = (a.stride[d] as i32, a.dilation[d] as i32);
    let mut t = 0;
    let mut found = None;
    while t < a.slices.tilde[d] {
        let v = r as i32 + a.lpad[d] as i32 - t as i32 * dil;
        if v.rem_euclid(s) == 0 {
            found = Some(v.div_euclid(s) as u32);
            break;
        }
        t += 1;
    }
    let more = t < a.filter[d] % a.slices.tilde[d];
    let div = if more { a.slices.div_dot[1][d] } else { a.slices.div_dot[0][d] };
    match found {
        Some(base) => SliceClass { t, base, dot: a.filter[d] / a.slices.tilde[d] + more as u32, div },
        None => SliceClass { t: 0, base: 0, dot: 0, div },
    }
}

/// The tap class of stride residue `r` along dim `d` (pass a literal `d`).
#[derive(Clone, Copy)]
pub(crate) struct Class {
    /// First tap.
    pub t: u32,
    /// Output pixel of tap 0 for slice position 0 (wrapping below zero).
    pub base: u32,
    /// Taps of the class (0: no tap reaches the residue).
    pub dot: u32,
}

/// The one `t < tilde` with `r + P - t*D ≡ 0 (mod S)`, with multiply-high
/// divisions only: `r + P + S*D - t*D` stays non-negative.
#[inline(always)]
pub(crate) fn class_of(a: &ConvArgs, d: usize, r: u32) -> Class {
    let (s, dil) = (a.stride[d], a.dilation[d]);
    let top = r + a.lpad[d] + s * dil;
    let mut t = 0;
    while t < a.slices.tilde[d] {
        let (q, rem) = a.slices.div_stride[d].divmod(top - t * dil);
        if rem == 0 {
            // div_dot[1] divides by floor(filter / tilde) + 1 (never 0, so exact).
            let few = a.slices.div_dot[1][d].div - 1;
            let more = t < a.filter[d] - few * a.slices.tilde[d];
            return Class { t, base: q.wrapping_sub(dil), dot: few + more as u32 };
        }
        t += 1;
    }
    Class { t: 0, base: 0, dot: 0 }
}
