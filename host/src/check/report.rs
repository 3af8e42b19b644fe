//! Comparing a device result with the reference.

use super::tolerance::for_each_offset;
use crate::types::TensorDesc;
use std::fmt;

/// A canonical tensor index: `(g, n, c, d, h, w)` for activations (`c` is `k`
/// for the output), `(g, k, c, z, y, x)` for weights.
pub type Index = [usize; 6];

/// Values at one element.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Canonical index.
    pub index: Index,
    /// Device value.
    pub out: f64,
    /// Reference value.
    pub reference: f64,
    /// Allowed error there.
    pub bound: f64,
}

/// How a device result compares with the reference, over the logical
/// elements of the output tensor.
///
/// An element fails when it is not finite (NaN or infinity) or its error
/// exceeds its bound. Outputs are poisoned with NaN before a run
/// ([`crate::check::poisoned_bytes`]), so a NaN is counted as an element the
/// kernel did not write ([`ErrorReport::unwritten_count`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorReport {
    /// Logical elements compared.
    pub elems: u64,
    /// Largest `|out - ref|` over finite elements.
    pub max_abs: f64,
    /// Largest `|out - ref| / |ref|` over finite elements with
    /// `|ref| >= 2^-10 * max|ref|` (smaller references are judged by their
    /// absolute error; a relative one would only measure cancellation).
    pub max_rel: f64,
    /// `||out - ref||_2 / ||ref||_2` over finite elements (0 when both are 0).
    pub rel_l2: f64,
    /// Largest `|out - ref| / bound` over finite elements: the rule passes
    /// these iff it is at most 1.
    pub worst_ratio: f64,
    /// `||out - ref||_2` over finite elements (test 2 of the rule).
    pub l2_err: f64,
    /// `||s||_2`, the norm of the typical errors of a correct result
    /// ([`crate::check::Expected::typical`]): test 2 passes iff
    /// `l2_err <= l2_allowed`. `None` when only the per-element test ran
    /// ([`compare`]).
    pub l2_allowed: Option<f64>,
    /// Where [`ErrorReport::worst_ratio`] is, with the values there.
    pub worst: Option<Sample>,
    /// Elements that fail the rule (non-finite ones included).
    pub fail_count: u64,
    /// The first failing element in canonical order.
    pub first_fail: Option<Sample>,
    /// Device elements that are NaN or infinite.
    pub nonfinite_count: u64,
    /// Device elements that are NaN: never written, given the NaN poison.
    pub unwritten_count: u64,
    /// The first such element in canonical order.
    pub first_unwritten: Option<Index>,
    /// Reference elements that are not finite (the problem itself is bad).
    pub ref_nonfinite_count: u64,
}

impl ErrorReport {
    /// Whether every element passed, the whole result passed the aggregate
    /// test where it ran, and there was something to compare.
    pub fn passed(&self) -> bool {
        self.elems > 0 && self.fail_count == 0 && self.ref_nonfinite_count == 0 && self.l2_passed()
    }

    /// Whether the aggregate test passed (`||out - ref||_2 <= ||s||_2`), or did not run.
    pub fn l2_passed(&self) -> bool {
        self.l2_allowed.is_none_or(|a| self.l2_err <= a)
    }

    /// `l2_err / l2_allowed` (0 when both are 0), if the aggregate test ran.
    pub fn l2_ratio(&self) -> Option<f64> {
        self.l2_allowed.map(|a| if self.l2_err == 0.0 { 0.0 } else { self.l2_err / a })
    }

    /// One line: the metrics and PASS or FAIL.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "max_abs {:.3e}  max_rel {:.3e}  rel_l2 {:.3e}  worst err/bound {:.3}",
            self.max_abs, self.max_rel, self.rel_l2, self.worst_ratio
        );
        if let Some(w) = &self.worst {
            s += &format!(" at {:?}", w.index);
        }
        if let Some(r) = self.l2_ratio() {
            s += &format!("  l2 err/typical {r:.3}");
            if !self.l2_passed() {
                s += &format!(" (FAILS: ||out-ref|| {:.3e} > ||s|| {:.3e})", self.l2_err, self.l2_allowed.unwrap_or(0.0));
            }
        }
        s += &format!("; {} of {} failed", self.fail_count, self.elems);
        if self.nonfinite_count > 0 {
            s += &format!(", {} non-finite", self.nonfinite_count);
        }
        if let Some(i) = self.first_unwritten {
            s += &format!(", {} unwritten (first {:?})", self.unwritten_count, i);
        }
        if self.ref_nonfinite_count > 0 {
            s += &format!(", {} non-finite in the REFERENCE", self.ref_nonfinite_count);
        }
        if let Some(f) = &self.first_fail {
            s += &format!(
                ", first failure {:?}: out {:e} ref {:e} bound {:.3e}",
                f.index, f.out, f.reference, f.bound
            );
        }
        s + if self.passed() {
            " -> PASS"
        } else {
            " -> FAIL"
        }
    }
}

impl fmt::Display for ErrorReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

/// Judges the device result `out` against `e` (from
/// [`crate::check::expected`]) with the whole rule: every element within its
/// worst-case bound, and `||out - ref||_2 <= ||e.typical||_2` (both laid out by `desc`).
pub fn compare_expected(out: &[f64], e: &super::Expected, desc: &TensorDesc) -> ErrorReport {
    compare_with(out, &e.reference, &e.bound, Some(&e.typical), desc)
}

/// Compares the device result `out` with `reference` under per-element
/// `bound`s only (all three laid out by `desc`), visiting elements in
/// canonical order. This is test 1 of the rule alone: prefer
/// [`compare_expected`], which adds the aggregate test that long
/// reductions need.
pub fn compare(out: &[f64], reference: &[f64], bound: &[f64], desc: &TensorDesc) -> ErrorReport {
    compare_with(out, reference, bound, None, desc)
}

fn compare_with(
    out: &[f64],
    reference: &[f64],
    bound: &[f64],
    typical: Option<&[f64]>,
    desc: &TensorDesc,
) -> ErrorReport {
    let span = desc.span() as usize;
    assert!(
        out.len() >= span
            && reference.len() >= span
            && bound.len() >= span
            && typical.is_none_or(|t| t.len() >= span),
        "check::compare: a buffer is shorter than the descriptor spans ({span})"
    );
    let mut max_ref = 0.0f64;
    for_each_offset(desc, |_, o| {
        if reference[o].is_finite() {
            max_ref = max_ref.max(reference[o].abs());
        }
    });
    let rel_floor = max_ref * (1.0 / 1024.0);
    let mut r = ErrorReport {
        elems: desc.elems(),
        ..ErrorReport::default()
    };
    let (mut err2, mut ref2, mut typ2) = (0.0f64, 0.0f64, 0.0f64);
    for_each_offset(desc, |idx, o| {
        if let Some(t) = typical {
            typ2 += t[o] * t[o];
        }
        let (v, rv, b) = (out[o], reference[o], bound[o]);
        let sample = Sample {
            index: *idx,
            out: v,
            reference: rv,
            bound: b,
        };
        if !rv.is_finite() {
            r.ref_nonfinite_count += 1;
        }
        let ok;
        if !v.is_finite() {
            r.nonfinite_count += 1;
            if v.is_nan() {
                r.unwritten_count += 1;
                r.first_unwritten.get_or_insert(*idx);
            }
            ok = false;
        } else {
            let d = (v - rv).abs();
            r.max_abs = r.max_abs.max(d);
            if rv.abs() >= rel_floor && rv != 0.0 {
                r.max_rel = r.max_rel.max(d / rv.abs());
            }
            err2 += d * d;
            ref2 += rv * rv;
            let ratio = if d == 0.0 { 0.0 } else { d / b };
            if r.worst.is_none() || ratio > r.worst_ratio {
                r.worst_ratio = ratio;
                r.worst = Some(sample);
            }
            ok = d <= b;
        }
        if !ok {
            r.fail_count += 1;
            r.first_fail.get_or_insert(sample);
        }
    });
    r.l2_err = err2.sqrt();
    r.l2_allowed = typical.map(|_| typ2.sqrt());
    r.rel_l2 = if ref2 > 0.0 {
        (err2 / ref2).sqrt()
    } else if err2 > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    r
}

/// Elements of `out` outside the tensor `desc` (the gaps of a strided view,
/// and anything past its span) that are no longer NaN: writes out of bounds,
/// given a buffer poisoned with NaN as a whole before the run. Returns the
/// count and the first such buffer offset.
pub fn outside_writes(out: &[f64], desc: &TensorDesc) -> (usize, Option<usize>) {
    let mut inside = vec![false; out.len()];
    for_each_offset(desc, |_, o| {
        if o < inside.len() {
            inside[o] = true;
        }
    });
    let mut count = 0;
    let mut first = None;
    for (o, (&v, &ins)) in out.iter().zip(&inside).enumerate() {
        if !ins && !v.is_nan() {
            count += 1;
            first.get_or_insert(o);
        }
    }
    (count, first)
}
