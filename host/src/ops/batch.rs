//! Problems whose tensors pass 2^31 elements (#38): the kernels address
//! tensors with 32-bit offsets, so the plans split such a problem along N
//! (and along G where one image of every group is still too big) into
//! sub-problems that each fit, launched with their base addresses moved by
//! 64-bit byte offsets computed here with checked arithmetic. A leaf.
//!
//! - Backward-data: the launches are independent (an image's `dx` depends
//!   only on its `dy`); the `D` tensors of the epilogue move with `dx`.
//! - Backward-weight: along G the launches are independent; along N each
//!   launch of a group range adds its f32 partials into the same atomic
//!   split-K workspace and only the last one sums and writes `dw` (see
//!   `bwd_weight::launch`), so the result is the split-K path's.
//!
//! Refused (an error naming the field and the limit): one image of one
//! group past the limit (that needs 64-bit offsets inside the kernels), and
//! a deterministic backward-weight split along N.

use convgrad_types::{ConvProblem, DType, DescError, TensorDesc, TensorRole};

/// Every tensor span and 32-bit count a launch needs must be below this:
/// 2^31 elements.
pub const LIMIT: u64 = 1 << 31;

/// The most launches a split problem may take (4096 launches of 2^31
/// elements are 17 TB of f16): more is refused by name rather than planned.
pub const MAX_PARTS: u64 = 4096;

/// The groups and images one launch of a split problem covers.
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
}

impl Chunk {
    /// The sub-problem of `p` this chunk runs.
    pub fn problem(&self, p: &ConvProblem) -> ConvProblem {
        ConvProblem { g: self.groups, n: self.images, ..*p }
    }
    /// The view of tensor `d` (role `role`) this chunk touches and the
    /// element offset of its first element; `None` where the offset does
    /// not fit 64 bits. Weights (and the weight-shaped `D`s of
    /// backward-weight) move along G only; per-channel `D`s (stride 0 on N)
    /// do not move along N.
    pub fn view(&self, d: &TensorDesc, role: TensorRole) -> Option<(TensorDesc, u64)> {
        let mut v = *d;
        v.lengths[0] = self.groups;
        let mut off = (self.g0 as u64).checked_mul(d.strides[0] as u64)?;
        if role != TensorRole::Weight {
            v.lengths[1] = self.images;
            off = off.checked_add((self.n0 as u64).checked_mul(d.strides[1] as u64)?)?;
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
    let along = match (first.chunk.groups < p.g, first.chunk.images < p.n) {
        (true, true) => "N and G",
        (true, false) => "G",
        _ => "N",
    };
    let (g, n) = (first.chunk.groups, first.chunk.images);
    format!(" ; past 2^31 elements: {} launches along {along} ({g} groups x {n} images each, the last ones what is left)", parts.len())
}

/// Plans of the chunks' sub-problems by their size: a split problem's
/// chunks come in at most four sizes (whole or last along G and N), and a
/// chunk's plan depends only on its size (its views differ only in offset).
pub(crate) struct SizeCache<P>(Vec<((usize, usize), P)>);

impl<P: Clone> SizeCache<P> {
    /// An empty cache.
    pub(crate) fn new() -> Self {
        SizeCache(Vec::new())
    }
    /// The plan of chunks of `c`'s size: from the cache, else `plan()`'s.
    pub(crate) fn get<E>(&mut self, c: &Chunk, plan: impl FnOnce() -> Result<P, E>) -> Result<P, E> {
        let key = (c.groups, c.images);
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

/// Whether every descriptor's view for `groups` groups and `images` images
/// spans fewer than `limit` elements.
pub(crate) fn views_fit(descs: &[(&TensorDesc, TensorRole)], groups: usize, images: usize, limit: u64) -> bool {
    let c = Chunk { g0: 0, groups, n0: 0, images };
    descs.iter().all(|(d, role)| c.view(d, *role).and_then(|(v, _)| v.checked_span("").ok()).is_some_and(|s| s < limit))
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

/// The chunks `p` runs as: `None` where `fits(G, N)` (one launch), else
/// the most images per launch that fit with every group (along N), or one
/// image per launch and the most groups that fit (along N and G), the last
/// chunk of each taking what is left. `fits(groups, images)` says whether
/// a launch of that many fits (monotone in both). An image of one group
/// that does not fit is refused, naming what is too big (`what`).
pub(crate) fn chunks(p: &ConvProblem, what: &'static str, fits: impl Fn(usize, usize) -> bool) -> Result<Option<Vec<Chunk>>, DescError> {
    if fits(p.g, p.n) {
        return Ok(None);
    }
    let images = largest(p.n, |n| fits(p.g, n));
    let (groups, images) = if images > 0 { (p.g, images) } else { (largest(p.g, |g| fits(g, 1)), 1) };
    if groups == 0 {
        return Err(DescError::Unsupported { field: what, allowed: "one image of one group within 2^31 - 1 elements and 32-bit counts (larger needs 64-bit offsets inside the kernels; #38)" });
    }
    let parts = p.g.div_ceil(groups) as u64 * p.n.div_ceil(images) as u64;
    if parts > MAX_PARTS {
        return Err(DescError::TooLarge { field: "launches of a problem split along N and G (past 2^31 elements)", value: parts, max: MAX_PARTS });
    }
    let mut out = Vec::with_capacity(parts as usize);
    for g0 in (0..p.g).step_by(groups) {
        for n0 in (0..p.n).step_by(images) {
            out.push(Chunk { g0, groups: groups.min(p.g - g0), n0, images: images.min(p.n - n0) });
        }
    }
    Ok(Some(out))
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
    // The chunks keep the strides, which the kernels take as 32-bit values.
    if let Some(axis) = (0..want.len()).find(|&a| d.lengths[a] > 1 && d.strides[a] as u64 >= LIMIT) {
        let what = "stride past 2^31 - 1 (the kernels' 32-bit offsets), even on an axis of length 1";
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
        let c = chunks(&p(2, 10), "x", |g, n| g * n <= 6).unwrap().unwrap();
        assert_eq!(c.iter().map(|c| (c.n0, c.images)).collect::<Vec<_>>(), [(0, 3), (3, 3), (6, 3), (9, 1)]);
        // One image of 5 groups does not fit, 2 do: along G and N.
        let c = chunks(&p(5, 2), "x", |g, n| g * n <= 2).unwrap().unwrap();
        assert_eq!(c.len(), 6);
        assert_eq!(c[4], Chunk { g0: 4, groups: 1, n0: 0, images: 1 });
        assert!(chunks(&p(5, 2), "x", |_, _| true).unwrap().is_none());
        let e = chunks(&p(5, 2), "x (one image of one group)", |_, _| false).unwrap_err();
        assert!(e.to_string().contains("x (one image of one group)"), "{e}");
    }
}
