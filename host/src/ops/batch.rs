//! Problems whose tensors pass 2^31 elements (#38): the kernels address
//! tensors with 32-bit offsets, so the plans split such a problem along N
//! (and along G where one image of every group is still too big, and along
//! its outermost spatial axis where one image of one group is) into
//! sub-problems that each fit, launched with their base addresses moved by
//! 64-bit byte offsets computed here with checked arithmetic. A leaf.
//!
//! - Backward-data: the launches are independent (an image's `dx` depends
//!   only on its `dy`; a band of `dx` rows only on the `dy` rows that reach
//!   it); the `D` tensors of the epilogue move with `dx`.
//! - Backward-weight: along G the launches are independent; along N or a
//!   spatial axis each launch of a group range adds its f32 partials into
//!   the same atomic split-K workspace and only the last one sums and
//!   writes `dw` (see `bwd_weight::launch`), so the result is the split-K
//!   path's.
//!
//! A spatial band is itself a convolution: its rows of the input and of
//! the output, with the pads that make the band's output rows line up
//! with the input rows it holds ([`Cut`]). Refused (an error naming the
//! field and the limit): one row of that axis of one image of one group
//! past the limit, and a deterministic backward-weight split along N or a
//! spatial axis.

use convgrad_types::{ConvProblem, DType, DescError, TensorDesc, TensorRole};

/// Every tensor span and 32-bit count a launch needs must be below this:
/// 2^31 elements.
pub const LIMIT: u64 = 1 << 31;

/// The most launches a split problem may take (4096 launches of 2^31
/// elements are 17 TB of f16): more is refused by name rather than planned.
pub const MAX_PARTS: u64 = 4096;

/// The groups and images one launch of a split problem covers, and the
/// band of one spatial axis where an image is cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// First group.
    pub g0: usize,
    /// Groups.
    pub groups: usize,
    /// First image.
    pub n0: usize,
    /// Images.
    pub images: usize,
    /// The band of the outermost spatial axis, where one image of one
    /// group does not fit.
    pub cut: Option<Cut>,
}

/// A band of one spatial axis: input rows `in0..in0 + in_len` and output
/// rows `out0..out0 + out_len`, a convolution of its own with pads `lpad`
/// and `rpad` on that axis (the problem's filter, stride and dilation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    /// Right-aligned spatial slot (as `ConvProblem::input`'s index).
    pub slot: usize,
    /// First input row.
    pub in0: usize,
    /// Input rows.
    pub in_len: usize,
    /// First output row.
    pub out0: usize,
    /// Output rows.
    pub out_len: usize,
    /// Leading pad of the band.
    pub lpad: usize,
    /// Trailing pad of the band.
    pub rpad: usize,
}

impl Chunk {
    /// The sub-problem of `p` this chunk runs.
    pub fn problem(&self, p: &ConvProblem) -> ConvProblem {
        let mut q = ConvProblem { g: self.groups, n: self.images, ..*p };
        if let Some(c) = self.cut {
            (q.input[c.slot], q.lpads[c.slot], q.rpads[c.slot]) = (c.in_len, c.lpad, c.rpad);
        }
        q
    }
    /// Sizes that fix the chunk's plan (its views differ only in offset).
    fn size(&self) -> (usize, usize, Option<[usize; 4]>) {
        (self.groups, self.images, self.cut.map(|c| [c.in_len, c.out_len, c.lpad, c.rpad]))
    }
    /// The view of tensor `d` (role `role`) this chunk touches and the
    /// element offset of its first element; `None` where the offset does
    /// not fit 64 bits. Weights (and the weight-shaped `D`s of
    /// backward-weight) move along G only; per-channel `D`s (stride 0 on N
    /// and the spatial axes) do not move along N or the band.
    pub fn view(&self, d: &TensorDesc, role: TensorRole) -> Option<(TensorDesc, u64)> {
        let mut v = *d;
        v.lengths[0] = self.groups;
        let mut off = (self.g0 as u64).checked_mul(d.strides[0] as u64)?;
        if role != TensorRole::Weight {
            v.lengths[1] = self.images;
            off = off.checked_add((self.n0 as u64).checked_mul(d.strides[1] as u64)?)?;
        }
        if let Some(c) = self.cut.filter(|_| role != TensorRole::Weight) {
            let (first, len) = if role == TensorRole::Input { (c.in0, c.in_len) } else { (c.out0, c.out_len) };
            let axis = 3 + c.slot;
            v.lengths[axis] = len;
            off = off.checked_add((first as u64).checked_mul(d.strides[axis] as u64)?)?;
        }
        // Axes of length 1 (unused spatial slots, or G or N cut to one) keep
        // no stride past the view's span: packed tensors give unused slots
        // the whole tensor's size, which the kernels would scale in 32 bits.
        let span = v.checked_span("").ok()?;
        for (s, _) in v.strides.iter_mut().zip(v.lengths).filter(|&(_, l)| l == 1) {
            *s = (*s).min(span as usize);
        }
        Some((v, off))
    }
}

/// How a spatial axis is cut into bands: by output rows (backward-weight:
/// each band sums its own output rows into the partials) or by input rows
/// (backward-data: each band writes its own `dx` rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutBy {
    /// Bands of output rows, with the input rows they read.
    Output,
    /// Bands of input rows, with the output rows that reach them.
    Input,
}

/// Converts to `i128` (never loses a `usize`).
fn wide(v: usize) -> i128 {
    v as i128
}

/// `count` bands (their rows differing by at most one) along `slot` of
/// `p`, cut as `by` says. Backward-weight's bands whose window lies wholly
/// in the padding add nothing and are left out.
pub fn bands(p: &ConvProblem, slot: usize, by: CutBy, count: usize) -> Vec<Cut> {
    let (f, s, d) = (wide(p.filter[slot]), wide(p.strides[slot]), wide(p.dilations[slot]));
    let (h, lp, ho) = (wide(p.input[slot]), wide(p.lpads[slot]), wide(p.output()[slot]));
    let reach = (f - 1) * d; // rows a window spans past its first
    let extent = match by {
        CutBy::Output => p.output()[slot],
        CutBy::Input => p.input[slot],
    };
    let count = wide(count.clamp(1, extent.max(1)));
    let mut out = Vec::new();
    for k in 0..count {
        let (a, b) = (k * wide(extent) / count, (k + 1) * wide(extent) / count);
        // Input rows [i0, i1), output rows [o0, o1) and the leading pad:
        // output row o reads input rows o*s - lp + r*d.
        let (i0, i1, o0, o1) = match by {
            CutBy::Output => ((a * s - lp).max(0), ((b - 1) * s - lp + reach + 1).min(h), a, b),
            CutBy::Input => {
                // The first output row reaching row `a`, but none whose
                // first row lies past `a` (the pad must not be negative);
                // the last one starting at or before row b - 1 (at least one).
                let o0 = (a + lp - reach).div_euclid(s) + i128::from((a + lp - reach).rem_euclid(s) != 0);
                let o0 = o0.min((a + lp).div_euclid(s)).min(ho - 1).max(0);
                let o1 = ((b - 1 + lp).div_euclid(s) + 1).max(o0 + 1).min(ho);
                (a, b, o0, o1)
            }
        };
        if i1 <= i0 {
            continue; // a window wholly in the padding
        }
        let lpad = i0 - (o0 * s - lp);
        // The trailing pad that makes the band give exactly its output rows.
        let rpad = ((o1 - o0 - 1) * s + reach + 1 - (i1 - i0) - lpad).max(0);
        let u = |v: i128| v as usize;
        out.push(Cut { slot, in0: u(i0), in_len: u(i1 - i0), out0: u(o0), out_len: u(o1 - o0), lpad: u(lpad), rpad: u(rpad) });
    }
    out
}

/// A launch of a split problem: its plan (of the chunk's sub-problem, with
/// views of the caller's tensors) and the byte offsets of its tensors.
#[derive(Clone, Debug)]
pub struct PlanPart<P> {
    /// Groups and images.
    pub chunk: Chunk,
    /// The sub-problem's plan.
    pub plan: P,
    /// Byte offsets of the three tensors, in the op's order (backward-weight:
    /// x, dy, dw; backward-data: dy, w, dx).
    pub offsets: [u64; 3],
    /// Byte offsets of the `D` tensors.
    pub d_offsets: Vec<u64>,
}

/// The plan's note on a split, for `describe`: empty without one.
pub(crate) fn describe<P>(p: &ConvProblem, parts: &[PlanPart<P>]) -> String {
    let Some(first) = parts.first() else { return String::new() };
    let (g, n) = (first.chunk.groups, first.chunk.images);
    let mut along = Vec::new();
    if n < p.n || first.chunk.cut.is_some() {
        along.push("N");
    }
    if g < p.g {
        along.push("G");
    }
    let band = match first.chunk.cut {
        Some(c) => {
            let axis = ["D", "H", "W"][c.slot];
            along.push(axis);
            let most = |f: fn(&Cut) -> usize| parts.iter().filter_map(|q| q.chunk.cut.as_ref().map(f)).max().unwrap_or(0);
            format!(", bands of {axis} of up to {} input / {} output rows", most(|c| c.in_len), most(|c| c.out_len))
        }
        None => String::new(),
    };
    let along = along.join(" and ");
    format!(" ; past 2^31 elements: {} launches along {along} ({g} groups x {n} images each{band}, the last ones what is left)", parts.len())
}

/// Plans of the chunks' sub-problems by their size: a split problem's
/// chunks come in a few sizes (whole or last along G and N, first, middle
/// or last band), and a chunk's plan depends only on its size (its views
/// differ only in offset).
pub(crate) struct SizeCache<P>(Vec<(ChunkSize, P)>);

/// What [`SizeCache`] keys plans by.
type ChunkSize = (usize, usize, Option<[usize; 4]>);

impl<P: Clone> SizeCache<P> {
    /// An empty cache.
    pub(crate) fn new() -> Self {
        SizeCache(Vec::new())
    }
    /// The plan of chunks of `c`'s size: from the cache, else `plan()`'s.
    pub(crate) fn get<E>(&mut self, c: &Chunk, plan: impl FnOnce() -> Result<P, E>) -> Result<P, E> {
        let key = c.size();
        if let Some((_, p)) = self.0.iter().find(|(k, _)| *k == key) {
            return Ok(p.clone());
        }
        let p = plan()?;
        self.0.push((key, p.clone()));
        Ok(p)
    }
}

/// `elem` elements of `t` in bytes, checked.
pub(crate) fn bytes(elems: u64, t: DType) -> Result<u64, DescError> {
    elems.checked_mul(t.bytes() as u64).ok_or(DescError::Overflow { field: "tensor byte offset" })
}

/// The view of `d` for `chunk` and its byte offset (elements of `t`).
pub(crate) fn view_bytes(chunk: &Chunk, d: &TensorDesc, role: TensorRole, t: DType) -> Result<(TensorDesc, u64), DescError> {
    let (v, off) = chunk.view(d, role).ok_or(DescError::Overflow { field: "tensor offset of a split launch" })?;
    Ok((v, bytes(off, t)?))
}

/// Whether every descriptor's view for `chunk` spans fewer than `limit`
/// elements.
pub(crate) fn views_fit(descs: &[(&TensorDesc, TensorRole)], chunk: &Chunk, limit: u64) -> bool {
    descs.iter().all(|(d, role)| chunk.view(d, *role).and_then(|(v, _)| v.checked_span("").ok()).is_some_and(|s| s < limit))
}

/// The largest `v` in `1..=max` with `fits(v)` (monotone: true up to some
/// point), or 0 where `fits(1)` is false.
fn largest(max: usize, fits: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, max);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) { lo = mid } else { hi = mid - 1 }
    }
    lo
}

/// The chunks `p` runs as: `None` where the whole problem fits (one
/// launch), else the most images per launch that fit with every group
/// (along N), or every image and the most groups that fit (along G), or
/// one group and the most images that fit (along G and N), or one image of
/// one group per launch in bands of the
/// outermost spatial axis (cut as `by` says) of the most rows that fit; the
/// last chunk of each taking what is left. `fits(chunk)` says whether a
/// launch of that chunk fits (monotone in groups, images and rows). A row
/// of one image of one group that does not fit is refused, naming what is
/// too big (`what`).
pub(crate) fn chunks(p: &ConvProblem, what: &'static str, by: CutBy, fits: impl Fn(&Chunk) -> bool) -> Result<Option<Vec<Chunk>>, DescError> {
    let whole = |groups, images| Chunk { g0: 0, groups, n0: 0, images, cut: None };
    if fits(&whole(p.g, p.n)) {
        return Ok(None);
    }
    // Every group with the most images; else every image with the most
    // groups (independent launches, also for backward-weight); else one
    // group with the most images; else one image of one group, in bands.
    let images = largest(p.n, |n| fits(&whole(p.g, n)));
    let groups = if images > 0 { 0 } else { largest(p.g, |g| fits(&whole(g, p.n))) };
    let (groups, images) = match (images, groups) {
        (0, 0) => (1, largest(p.n, |n| fits(&whole(1, n))).max(1)),
        (0, g) => (g, p.n),
        (n, _) => (p.g, n),
    };
    let cuts = if fits(&whole(groups, images)) { vec![None] } else { band_cuts(p, what, by, &fits)?.into_iter().map(Some).collect() };
    let parts = (p.g.div_ceil(groups) as u64).saturating_mul(p.n.div_ceil(images) as u64).saturating_mul(cuts.len() as u64);
    if parts > MAX_PARTS {
        return Err(DescError::TooLarge { field: "launches of a problem split along N, G and a spatial axis (past 2^31 elements)", value: parts, max: MAX_PARTS });
    }
    let mut out = Vec::with_capacity(parts as usize);
    for g0 in (0..p.g).step_by(groups) {
        for n0 in (0..p.n).step_by(images) {
            for &cut in &cuts {
                out.push(Chunk { g0, groups: groups.min(p.g - g0), n0, images: images.min(p.n - n0), cut });
            }
        }
    }
    Ok(Some(out))
}

/// The bands of one image of one group (see [`chunks`]): along the
/// outermost spatial axis with more than one row, the most rows per band
/// for which every band fits; each band checked to be the convolution it
/// stands for.
fn band_cuts(p: &ConvProblem, what: &'static str, by: CutBy, fits: &impl Fn(&Chunk) -> bool) -> Result<Vec<Cut>, DescError> {
    let refused = DescError::Unsupported {
        field: what,
        allowed: "one row of the outermost spatial axis of one image of one group within 2^31 - 1 elements and 32-bit counts (#38)",
    };
    let Some(slot) = (p.first_axis()..3).find(|&a| p.input[a] > 1 && p.output()[a] > 1) else { return Err(refused) };
    let band = |cut| Chunk { g0: 0, groups: 1, n0: 0, images: 1, cut: Some(cut) };
    let extent = if by == CutBy::Output { p.output()[slot] } else { p.input[slot] };
    // The fewest bands that fit (more than MAX_PARTS are refused anyway).
    let all_fit = |count: usize| bands(p, slot, by, count).into_iter().all(|c| fits(&band(c)));
    let cap = extent.min(MAX_PARTS as usize);
    let count = cap + 1 - largest(cap, |fewer| all_fit(cap + 1 - fewer));
    if count > cap || !all_fit(count) {
        return Err(refused);
    }
    let cuts = bands(p, slot, by, count);
    if cuts.is_empty() {
        // Every window lies in the padding: no output row reads an input row.
        return Err(DescError::Unsupported { field: what, allowed: "a problem past 2^31 elements whose windows reach the input along its outermost spatial axis" });
    }
    for c in &cuts {
        let q = band(*c).problem(p);
        if q.checked_output().map(|o| o[slot]) != Ok(c.out_len) {
            return Err(DescError::Unsupported { field: what, allowed: "bands whose pads line up (internal: please report the problem)" });
        }
    }
    Ok(cuts)
}

/// Checks a descriptor of a problem that will be split (the chunks' views
/// are validated when planned): lengths as the problem's, a span within 64
/// bits, strides within 2^31 - 1 and, for a `written` tensor, no two
/// elements at one offset.
pub(crate) fn validate_whole(p: &ConvProblem, d: &TensorDesc, role: TensorRole, name: &'static str, written: bool) -> Result<(), DescError> {
    let want = TensorDesc::lengths_of(p, role);
    if let Some(axis) = (0..want.len()).find(|&a| d.lengths[a] != want[a]) {
        let what = "its length differs from the problem's; build descriptors with TensorDesc::packed or TensorDesc::strided";
        return Err(DescError::Layout { tensor: name, axis, what, value: d.lengths[axis] as u64, expected: want[axis] as u64 });
    }
    d.checked_span(name)?;
    // The chunks keep the strides, which the kernels take as 32-bit values
    // (G and N may be cut to one, where the stride is not used).
    if let Some(axis) = (2..want.len()).find(|&a| d.lengths[a] > 1 && d.strides[a] as u64 >= LIMIT) {
        let what = "stride past 2^31 - 1 (the kernels' 32-bit offsets)";
        return Err(DescError::Layout { tensor: name, axis, what, value: d.strides[axis] as u64, expected: 0 });
    }
    if written {
        d.check_no_alias(name)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(g: usize, n: usize) -> ConvProblem {
        let mut p = ConvProblem::from_ck_args(&[2, 1, 1, 4, 4, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1]).unwrap();
        (p.g, p.n) = (g, n);
        p
    }

    #[test]
    fn chunks_cover_every_image_and_group_once() {
        // 10 images, 3 fit: 3 + 3 + 3 + 1.
        let gn = |f: fn(usize, usize) -> bool| move |c: &Chunk| f(c.groups, c.images);
        let c = chunks(&p(2, 10), "x", CutBy::Output, gn(|g, n| g * n <= 6)).unwrap().unwrap();
        assert_eq!(c.iter().map(|c| (c.n0, c.images)).collect::<Vec<_>>(), [(0, 3), (3, 3), (6, 3), (9, 1)]);
        // One image of 5 groups does not fit, both images of one group do: along G.
        let c = chunks(&p(5, 2), "x", CutBy::Output, gn(|g, n| g * n <= 2)).unwrap().unwrap();
        assert_eq!(c.len(), 5);
        assert_eq!(c[4], Chunk { g0: 4, groups: 1, n0: 0, images: 2, cut: None });
        // Neither: one group, the most images (along G and N).
        let c = chunks(&p(5, 4), "x", CutBy::Output, gn(|g, n| g * n <= 3)).unwrap().unwrap();
        assert_eq!(c.iter().map(|c| (c.g0, c.n0, c.images)).take(3).collect::<Vec<_>>(), [(0, 0, 3), (0, 3, 1), (1, 0, 3)]);
        assert_eq!(c.len(), 10);
        assert!(chunks(&p(5, 2), "x", CutBy::Output, |_| true).unwrap().is_none());
        let e = chunks(&p(5, 2), "x (one image of one group)", CutBy::Output, |_| false).unwrap_err();
        assert!(e.to_string().contains("x (one image of one group)"), "{e}");
    }

    /// A 1-D convolution along the band's axis: `(input, filter, stride,
    /// dilation, lpad, rpad)`.
    type Axis = (usize, usize, usize, usize, usize, usize);

    fn out_len((h, f, s, d, lp, rp): Axis) -> usize {
        (h + lp + rp - (f - 1) * d - 1) / s + 1
    }

    /// `dx` of a 1-D convolution, integers (exact).
    fn dx_1d(a: Axis, dy: &[i64], w: &[i64]) -> Vec<i64> {
        let (h, f, s, d, lp, _) = a;
        let mut dx = vec![0; h];
        for (o, &g) in dy.iter().enumerate() {
            for (r, &wv) in w.iter().enumerate().take(f) {
                let i = (o * s + r * d) as i64 - lp as i64;
                if (0..h as i64).contains(&i) {
                    dx[i as usize] += g * wv;
                }
            }
        }
        dx
    }

    /// `dw` of a 1-D convolution, integers (exact).
    fn dw_1d(a: Axis, x: &[i64], dy: &[i64]) -> Vec<i64> {
        let (h, f, s, d, lp, _) = a;
        (0..f)
            .map(|r| {
                let taps = dy.iter().enumerate().map(|(o, &g)| (g, (o * s + r * d) as i64 - lp as i64));
                taps.filter(|&(_, i)| (0..h as i64).contains(&i)).map(|(g, i)| g * x[i as usize]).sum()
            })
            .collect()
    }

    /// Every band of every row count, on many 1-D convolutions (strides
    /// past the filter, dilations, pads past the filter, rows that no
    /// output reads): each band is the convolution it stands for, the
    /// bands of `dx` rows together give `dx` and the bands of output rows
    /// together give `dw`, exactly.
    #[test]
    fn bands_are_the_convolution_they_stand_for() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize % m
        };
        let mut checked = 0;
        for _ in 0..400 {
            let (f, s, d) = (1 + next(4), 1 + next(4), 1 + next(3));
            let (h, lp, rp) = (1 + next(24), next(5), next(5));
            let a = (h, f, s, d, lp, rp);
            if h + lp + rp < (f - 1) * d + 1 {
                continue;
            }
            let ho = out_len(a);
            let vals = |n: usize, next: &mut dyn FnMut(usize) -> usize| (0..n).map(|_| next(11) as i64 - 5).collect::<Vec<_>>();
            let (x, dy, w) = (vals(h, &mut next), vals(ho, &mut next), vals(f, &mut next));
            let p = ConvProblem::from_ck_args(&[1, 1, 1, 8, 8, f, h, s, d, lp, rp]).unwrap();
            let (want_dx, want_dw) = (dx_1d(a, &dy, &w), dw_1d(a, &x, &dy));
            for count in 1..=h.max(ho) {
                let mut dx = vec![i64::MIN; h];
                for c in bands(&p, 2, CutBy::Input, count) {
                    let b = (c.in_len, f, s, d, c.lpad, c.rpad);
                    assert_eq!(out_len(b), c.out_len, "{a:?} in {count} bands: {c:?}");
                    let part = dx_1d(b, &dy[c.out0..c.out0 + c.out_len], &w);
                    for (i, v) in part.into_iter().enumerate() {
                        assert_eq!(dx[c.in0 + i], i64::MIN, "{a:?} in {count} bands: row {} written twice", c.in0 + i);
                        dx[c.in0 + i] = v;
                    }
                }
                assert_eq!(dx, want_dx, "dx of {a:?} in {count} bands");
                let mut dw = vec![0; f];
                let mut covered = 0;
                for c in bands(&p, 2, CutBy::Output, count) {
                    let b = (c.in_len, f, s, d, c.lpad, c.rpad);
                    assert_eq!(out_len(b), c.out_len, "{a:?} in {count} bands: {c:?}");
                    let part = dw_1d(b, &x[c.in0..c.in0 + c.in_len], &dy[c.out0..c.out0 + c.out_len]);
                    dw.iter_mut().zip(part).for_each(|(t, v)| *t += v);
                    covered += c.out_len;
                }
                assert!(covered <= ho);
                assert_eq!(dw, want_dw, "dw of {a:?} in {count} bands");
                checked += 1;
            }
        }
        assert!(checked > 2000, "{checked}");
    }

    #[test]
    fn one_image_of_one_group_is_cut_into_bands_that_fit() {
        // 2-D, 8 channels, 3x3 over 16x16, pad 1: one image of x is 2048
        // elements; at 700, 5 bands of 3 or 4 output rows read up to 5
        // input rows (640; the last band's fourth row is in the pad).
        let p = ConvProblem::from_ck_args(&[2, 1, 2, 8, 8, 3, 3, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1]).unwrap();
        let x = TensorDesc::packed(&p, convgrad_types::ConvLayout::NhwgcGkyxcNhwgk, TensorRole::Input);
        let fits = |c: &Chunk| c.view(&x, TensorRole::Input).is_some_and(|(v, _)| v.span() < 700);
        let c = chunks(&p, "x", CutBy::Output, fits).unwrap().unwrap();
        assert_eq!(c.len(), 2 * 5, "{c:?}");
        let first = c[0].cut.unwrap();
        assert_eq!((first.in0, first.in_len, first.out0, first.out_len, first.lpad), (0, 4, 0, 3, 1));
        let last = c[4].cut.unwrap();
        assert_eq!((last.in0, last.in_len, last.out0, last.out_len, last.rpad), (11, 5, 12, 4, 1));
        assert!(c.iter().all(fits));
        // One row alone too big: refused naming the field.
        let e = chunks(&p, "x (a row)", CutBy::Output, |c: &Chunk| c.cut.is_some_and(|c| c.in_len == 0)).unwrap_err();
        assert!(e.to_string().contains("x (a row)"), "{e}");
    }
}
