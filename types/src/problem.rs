//! [`ConvProblem`]: a grouped N-d convolution's shape, in CK's `ConvParam` terms.

use crate::error::DescError;

/// Largest number of spatial dimensions.
pub const MAX_SPATIAL: usize = 3;

/// Largest element span of one tensor that kernels address (32-bit offsets).
pub const MAX_SPAN: u64 = i32::MAX as u64;

/// A grouped convolution `y = conv(x, w)` with `G` groups, `C` input and `K`
/// output channels per group.
///
/// Spatial sizes are stored right-aligned in 3-element arrays `[D, H, W]`
/// (filters `[Z, Y, X]`): a 2-D problem has `D = Z = 1`, stride 1, dilation 1
/// and zero pads in the leading slot. That lets every kernel treat all
/// problems as 3-D, while [`ConvProblem::spatial`] gives back the `ndim` view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvProblem {
    /// Number of spatial dimensions, 1 to 3.
    pub ndim: usize,
    /// Groups.
    pub g: usize,
    /// Batch.
    pub n: usize,
    /// Output channels per group.
    pub k: usize,
    /// Input channels per group.
    pub c: usize,
    /// Filter sizes `[Z, Y, X]`, right-aligned.
    pub filter: [usize; MAX_SPATIAL],
    /// Input sizes `[D, H, W]`, right-aligned.
    pub input: [usize; MAX_SPATIAL],
    /// Strides, right-aligned.
    pub strides: [usize; MAX_SPATIAL],
    /// Dilations, right-aligned.
    pub dilations: [usize; MAX_SPATIAL],
    /// Left (leading) pads, right-aligned.
    pub lpads: [usize; MAX_SPATIAL],
    /// Right (trailing) pads, right-aligned.
    pub rpads: [usize; MAX_SPATIAL],
}

/// Lists of per-dimension values in the problem's own `ndim` order
/// (e.g. `[Y, X]` for 2-D), as CK's command line gives them.
#[derive(Clone, Copy, Debug)]
pub struct Spatial<'a> {
    /// Filter sizes.
    pub filter: &'a [usize],
    /// Input sizes.
    pub input: &'a [usize],
    /// Strides.
    pub strides: &'a [usize],
    /// Dilations.
    pub dilations: &'a [usize],
    /// Left pads.
    pub lpads: &'a [usize],
    /// Right pads.
    pub rpads: &'a [usize],
}

/// The product of `v`, or [`DescError::Overflow`] naming `field`.
fn product(field: &'static str, v: impl IntoIterator<Item = u64>) -> Result<u64, DescError> {
    v.into_iter().try_fold(1u64, |acc, x| acc.checked_mul(x)).ok_or(DescError::Overflow { field })
}

fn right_align(
    field: &'static str,
    v: &[usize],
    ndim: usize,
    fill: usize,
) -> Result<[usize; MAX_SPATIAL], DescError> {
    if v.len() != ndim {
        return Err(DescError::WrongRank { field, len: v.len(), ndim });
    }
    let mut out = [fill; MAX_SPATIAL];
    out[MAX_SPATIAL - ndim..].copy_from_slice(v);
    Ok(out)
}

impl ConvProblem {
    /// Builds and validates a problem from per-dimension lists in `ndim` order.
    ///
    /// ```
    /// use convgrad_types::{ConvProblem, problem::Spatial};
    /// // CK example 20: 3-D, G=4, N=1, K=128, C=256, 3x3x3 filter, 14^3 input, pad 1.
    /// let p = ConvProblem::new(3, 4, 1, 128, 256, Spatial {
    ///     filter: &[3, 3, 3], input: &[14, 14, 14], strides: &[1, 1, 1],
    ///     dilations: &[1, 1, 1], lpads: &[1, 1, 1], rpads: &[1, 1, 1],
    /// }).unwrap();
    /// assert_eq!(p.output(), [14, 14, 14]);
    /// ```
    pub fn new(
        ndim: usize,
        g: usize,
        n: usize,
        k: usize,
        c: usize,
        s: Spatial<'_>,
    ) -> Result<Self, DescError> {
        if !(1..=MAX_SPATIAL).contains(&ndim) {
            return Err(if ndim == 0 {
                DescError::TooSmall { field: "ndim", value: 0, min: 1 }
            } else {
                DescError::TooLarge { field: "ndim", value: ndim as u64, max: MAX_SPATIAL as u64 }
            });
        }
        let p = ConvProblem {
            ndim,
            g,
            n,
            k,
            c,
            filter: right_align("filter", s.filter, ndim, 1)?,
            input: right_align("input", s.input, ndim, 1)?,
            strides: right_align("strides", s.strides, ndim, 1)?,
            dilations: right_align("dilations", s.dilations, ndim, 1)?,
            lpads: right_align("lpads", s.lpads, ndim, 0)?,
            rpads: right_align("rpads", s.rpads, ndim, 0)?,
        };
        p.validate()?;
        Ok(p)
    }

    /// Index of the first used slot in the right-aligned arrays.
    pub fn first_axis(&self) -> usize {
        MAX_SPATIAL - self.ndim
    }

    /// Checks every field; the error names the field and what is allowed.
    pub fn validate(&self) -> Result<(), DescError> {
        const AXIS: [[&str; 6]; 3] = [
            ["filter[0]", "input[0]", "strides[0]", "dilations[0]", "lpads[0]", "rpads[0]"],
            ["filter[1]", "input[1]", "strides[1]", "dilations[1]", "lpads[1]", "rpads[1]"],
            ["filter[2]", "input[2]", "strides[2]", "dilations[2]", "lpads[2]", "rpads[2]"],
        ];
        if !(1..=MAX_SPATIAL).contains(&self.ndim) {
            return Err(DescError::TooLarge { field: "ndim", value: self.ndim as u64, max: 3 });
        }
        for (field, v) in [("G", self.g), ("N", self.n), ("K", self.k), ("C", self.c)] {
            if v == 0 {
                return Err(DescError::TooSmall { field, value: 0, min: 1 });
            }
            if v as u64 > MAX_SPAN {
                return Err(DescError::TooLarge { field, value: v as u64, max: MAX_SPAN });
            }
        }
        for a in 0..MAX_SPATIAL {
            // Names are in the problem's own order (axis 0 = first given dimension).
            let names = AXIS[a.saturating_sub(self.first_axis()).min(2)];
            for (i, v) in [self.filter[a], self.input[a], self.strides[a], self.dilations[a]]
                .into_iter()
                .enumerate()
            {
                if v == 0 {
                    return Err(DescError::TooSmall { field: names[i], value: 0, min: 1 });
                }
                if v as u64 > MAX_SPAN {
                    return Err(DescError::TooLarge { field: names[i], value: v as u64, max: MAX_SPAN });
                }
            }
            for (i, v) in [(4, self.lpads[a]), (5, self.rpads[a])] {
                if v as u64 > MAX_SPAN {
                    return Err(DescError::TooLarge { field: names[i], value: v as u64, max: MAX_SPAN });
                }
            }
            let padded = self.input[a] as u64 + self.lpads[a] as u64 + self.rpads[a] as u64;
            let dilated = (self.filter[a] as u64 - 1) * self.dilations[a] as u64 + 1;
            // The kernels index windows and tap shifts in 32 bits.
            const SPANS: [[&str; 2]; 3] = [
                ["input[0] + lpads[0] + rpads[0]", "(filter[0] - 1) * dilations[0] + 1"],
                ["input[1] + lpads[1] + rpads[1]", "(filter[1] - 1) * dilations[1] + 1"],
                ["input[2] + lpads[2] + rpads[2]", "(filter[2] - 1) * dilations[2] + 1"],
            ];
            let spans = SPANS[a.saturating_sub(self.first_axis()).min(2)];
            for (field, v) in [(spans[0], padded), (spans[1], dilated)] {
                if v > MAX_SPAN {
                    return Err(DescError::TooLarge { field, value: v, max: MAX_SPAN });
                }
            }
            if padded < dilated {
                return Err(DescError::EmptyOutput {
                    axis: a - self.first_axis().min(a),
                    padded_input: padded,
                    dilated_filter: dilated,
                });
            }
        }
        // x and dy may pass 2^31 elements: the host's plans split them along
        // N (and G) into launches that each address fewer (the weights are
        // not split along K or C, so they must fit as a whole).
        self.checked_input_elems()?;
        self.checked_output_elems()?;
        let span = self.checked_weight_elems()?;
        if span > MAX_SPAN {
            return Err(DescError::IndexRange { tensor: "w", span });
        }
        self.checked_flops()?;
        Ok(())
    }

    /// Output sizes `[Do, Ho, Wo]`, right-aligned:
    /// `(in + lp + rp - (f - 1) * d - 1) / s + 1`.
    ///
    /// Never panics: an axis whose sizes give no output (or that
    /// [`ConvProblem::validate`] would refuse) has size 0; see
    /// [`ConvProblem::checked_output`] for the error.
    pub fn output(&self) -> [usize; MAX_SPATIAL] {
        core::array::from_fn(|a| self.output_axis(a).unwrap_or(0))
    }

    /// Output sizes as [`ConvProblem::output`], computed with checked
    /// arithmetic: an error names the axis whose sizes overflow or give no output.
    pub fn checked_output(&self) -> Result<[usize; MAX_SPATIAL], DescError> {
        let mut out = [0; MAX_SPATIAL];
        for (a, o) in out.iter_mut().enumerate() {
            *o = self.output_axis(a)?;
        }
        Ok(out)
    }

    /// Output size along right-aligned slot `a`, with checked arithmetic.
    fn output_axis(&self, a: usize) -> Result<usize, DescError> {
        const OUT: [&str; MAX_SPATIAL] = ["output[0]", "output[1]", "output[2]"];
        let field = OUT[a.saturating_sub(self.first_axis()).min(2)];
        let of = || DescError::Overflow { field };
        let padded = (self.input[a] as u64)
            .checked_add(self.lpads[a] as u64)
            .and_then(|v| v.checked_add(self.rpads[a] as u64))
            .ok_or_else(of)?;
        let dilated = (self.filter[a] as u64)
            .checked_sub(1)
            .ok_or(DescError::TooSmall { field, value: 0, min: 1 })?
            .checked_mul(self.dilations[a] as u64)
            .and_then(|v| v.checked_add(1))
            .ok_or_else(of)?;
        let axis = a - self.first_axis().min(a);
        let span = padded
            .checked_sub(dilated)
            .ok_or(DescError::EmptyOutput { axis, padded_input: padded, dilated_filter: dilated })?;
        let o = span
            .checked_div(self.strides[a] as u64)
            .ok_or(DescError::TooSmall { field, value: 0, min: 1 })?
            + 1;
        usize::try_from(o).map_err(|_| of())
    }

    /// The problem's per-dimension lists, in `ndim` order.
    pub fn spatial(&self) -> Spatial<'_> {
        let f = self.first_axis();
        Spatial {
            filter: &self.filter[f..],
            input: &self.input[f..],
            strides: &self.strides[f..],
            dilations: &self.dilations[f..],
            lpads: &self.lpads[f..],
            rpads: &self.rpads[f..],
        }
    }

    /// Filter taps, `Z * Y * X` (saturating at `u64::MAX`, exact for a
    /// validated problem; [`ConvProblem::checked_filter_taps`] errs instead).
    pub fn filter_taps(&self) -> u64 {
        self.checked_filter_taps().unwrap_or(u64::MAX)
    }
    /// Input pixels per image, `D * H * W` (saturating, as [`ConvProblem::filter_taps`]).
    pub fn input_pixels(&self) -> u64 {
        self.checked_input_pixels().unwrap_or(u64::MAX)
    }
    /// Output pixels per image, `Do * Ho * Wo` (saturating, as [`ConvProblem::filter_taps`]).
    pub fn output_pixels(&self) -> u64 {
        self.checked_output_pixels().unwrap_or(u64::MAX)
    }
    /// Elements of the input (and input-gradient) tensor: `G*N*C*D*H*W`
    /// (saturating, as [`ConvProblem::filter_taps`]).
    pub fn input_elems(&self) -> u64 {
        self.checked_input_elems().unwrap_or(u64::MAX)
    }
    /// Elements of the weight (and weight-gradient) tensor: `G*K*C*Z*Y*X`
    /// (saturating, as [`ConvProblem::filter_taps`]).
    pub fn weight_elems(&self) -> u64 {
        self.checked_weight_elems().unwrap_or(u64::MAX)
    }
    /// Elements of the output (and output-gradient) tensor: `G*N*K*Do*Ho*Wo`
    /// (saturating, as [`ConvProblem::filter_taps`]).
    pub fn output_elems(&self) -> u64 {
        self.checked_output_elems().unwrap_or(u64::MAX)
    }
    /// Multiply-add FLOPs of one pass (each of fwd, bwd-data, bwd-weight):
    /// `2 * G * N * K * C * prod(out) * prod(filter)` (saturating, as
    /// [`ConvProblem::filter_taps`]).
    pub fn flops(&self) -> u64 {
        self.checked_flops().unwrap_or(u64::MAX)
    }
    /// Minimum bytes a backward-weight pass moves: read x and dy, write dw
    /// (saturating at `u64::MAX`).
    pub fn bwd_weight_bytes(&self, act_bytes: usize, wei_bytes: usize) -> u64 {
        self.traffic_bytes(act_bytes, wei_bytes).unwrap_or(u64::MAX)
    }
    /// Minimum bytes a backward-data pass moves: read dy and w, write dx
    /// (saturating at `u64::MAX`).
    pub fn bwd_data_bytes(&self, act_bytes: usize, wei_bytes: usize) -> u64 {
        self.traffic_bytes(act_bytes, wei_bytes).unwrap_or(u64::MAX)
    }

    /// `Z * Y * X`; an error names the product that overflows 64 bits.
    pub fn checked_filter_taps(&self) -> Result<u64, DescError> {
        product("filter taps (Z * Y * X)", self.filter.iter().map(|&v| v as u64))
    }
    /// `D * H * W`; an error names the product that overflows 64 bits.
    pub fn checked_input_pixels(&self) -> Result<u64, DescError> {
        product("input pixels (D * H * W)", self.input.iter().map(|&v| v as u64))
    }
    /// `Do * Ho * Wo`; an error names the axis or product that overflows.
    pub fn checked_output_pixels(&self) -> Result<u64, DescError> {
        product("output pixels (Do * Ho * Wo)", self.checked_output()?.iter().map(|&v| v as u64))
    }
    /// `G*N*C*D*H*W`; an error names the product that overflows 64 bits.
    pub fn checked_input_elems(&self) -> Result<u64, DescError> {
        let gnc = [self.g, self.n, self.c].map(|v| v as u64);
        product("x elements (G * N * C * D * H * W)", gnc.into_iter().chain([self.checked_input_pixels()?]))
    }
    /// `G*K*C*Z*Y*X`; an error names the product that overflows 64 bits.
    pub fn checked_weight_elems(&self) -> Result<u64, DescError> {
        let gkc = [self.g, self.k, self.c].map(|v| v as u64);
        product("w elements (G * K * C * Z * Y * X)", gkc.into_iter().chain([self.checked_filter_taps()?]))
    }
    /// `G*N*K*Do*Ho*Wo`; an error names the product that overflows 64 bits.
    pub fn checked_output_elems(&self) -> Result<u64, DescError> {
        let gnk = [self.g, self.n, self.k].map(|v| v as u64);
        product("dy elements (G * N * K * Do * Ho * Wo)", gnk.into_iter().chain([self.checked_output_pixels()?]))
    }
    /// `2 * G * N * K * C * prod(out) * prod(filter)`; an error names the
    /// product that overflows 64 bits.
    pub fn checked_flops(&self) -> Result<u64, DescError> {
        let sizes = [2, self.g, self.n, self.k, self.c].map(|v| v as u64);
        let spatial = [self.checked_output_pixels()?, self.checked_filter_taps()?];
        product("flops (2 * G * N * K * C * output pixels * filter taps)", sizes.into_iter().chain(spatial))
    }
    /// `(x + dy) * act_bytes + w * wei_bytes`, checked.
    fn traffic_bytes(&self, act_bytes: usize, wei_bytes: usize) -> Result<u64, DescError> {
        let field = "bytes moved ((x + dy) * act bytes + w * weight bytes)";
        let act = self.checked_input_elems()?.checked_add(self.checked_output_elems()?);
        let act = act.and_then(|v| v.checked_mul(act_bytes as u64));
        let wei = self.checked_weight_elems()?.checked_mul(wei_bytes as u64);
        act.zip(wei).and_then(|(a, w)| a.checked_add(w)).ok_or(DescError::Overflow { field })
    }

    /// CK's order: `ndim G N K C <filter> <input> <strides> <dilations> <lpads> <rpads>`.
    pub fn ck_args(&self) -> impl Iterator<Item = usize> + '_ {
        let s = self.spatial();
        [self.ndim, self.g, self.n, self.k, self.c]
            .into_iter()
            .chain(s.filter.iter().copied())
            .chain(s.input.iter().copied())
            .chain(s.strides.iter().copied())
            .chain(s.dilations.iter().copied())
            .chain(s.lpads.iter().copied())
            .chain(s.rpads.iter().copied())
    }

    /// Parses CK's order (see [`ConvProblem::ck_args`]) from a list of numbers.
    pub fn from_ck_args(v: &[usize]) -> Result<Self, DescError> {
        let ndim = *v.first().ok_or(DescError::WrongRank { field: "problem", len: 0, ndim: 5 })?;
        if !(1..=MAX_SPATIAL).contains(&ndim) {
            return Err(DescError::Unsupported { field: "ndim", allowed: "1, 2 or 3" });
        }
        let want = 5 + 6 * ndim;
        if v.len() != want {
            return Err(DescError::WrongRank { field: "problem (ndim G N K C + 6 lists of ndim)", len: v.len(), ndim: want });
        }
        let l = |i: usize| &v[5 + i * ndim..5 + (i + 1) * ndim];
        ConvProblem::new(ndim, v[1], v[2], v[3], v[4], Spatial {
            filter: l(0),
            input: l(1),
            strides: l(2),
            dilations: l(3),
            lpads: l(4),
            rpads: l(5),
        })
    }
}

impl core::fmt::Display for ConvProblem {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = self.spatial();
        let o = self.output();
        let list = |f: &mut core::fmt::Formatter<'_>, v: &[usize], sep: &str| -> core::fmt::Result {
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    f.write_str(sep)?;
                }
                write!(f, "{x}")?;
            }
            Ok(())
        };
        write!(f, "{}D G={} N={} K={} C={} filter=", self.ndim, self.g, self.n, self.k, self.c)?;
        list(f, s.filter, "x")?;
        f.write_str(" in=")?;
        list(f, s.input, "x")?;
        f.write_str(" out=")?;
        list(f, &o[self.first_axis()..], "x")?;
        f.write_str(" stride=")?;
        list(f, s.strides, ",")?;
        f.write_str(" dil=")?;
        list(f, s.dilations, ",")?;
        f.write_str(" lpad=")?;
        list(f, s.lpads, ",")?;
        f.write_str(" rpad=")?;
        list(f, s.rpads, ",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_d(input: usize, filter: usize, dil: usize, pads: [usize; 2]) -> Result<ConvProblem, DescError> {
        ConvProblem::new(2, 1, 1, 8, 8, Spatial {
            filter: &[3, filter],
            input: &[9, input],
            strides: &[1, 1],
            dilations: &[1, dil],
            lpads: &[1, pads[0]],
            rpads: &[1, pads[1]],
        })
    }

    #[test]
    fn spans_that_overflow_32_bit_indexing_are_refused_by_name() {
        two_d(9, 3, 1, [1, 1]).unwrap();
        let big = MAX_SPAN as usize;
        // Each pad fits, their sum with the input does not.
        let e = two_d(9, 3, 1, [big, big]).unwrap_err();
        assert!(matches!(e, DescError::TooLarge { field: "input[1] + lpads[1] + rpads[1]", .. }), "{e:?}");
        // A dilated filter wider than 32-bit indexing allows.
        let e = two_d(9, 3, big, [big - 100, 0]).unwrap_err();
        assert!(matches!(e, DescError::TooLarge { field: "(filter[1] - 1) * dilations[1] + 1", .. }), "{e:?}");
        // Still the usual message for a window larger than the padded input.
        let e = two_d(9, 12, 1, [0, 0]).unwrap_err();
        assert!(matches!(e, DescError::EmptyOutput { .. }), "{e:?}");
    }
}
