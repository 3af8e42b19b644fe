//! Backward-data's stride-residue classes: the taps of one class and how
//! they step (the device crate's `conv::residues`). A leaf.

use convgrad_types::ConvProblem;

/// Taps of the largest residue class, per dim: `ceil(filter / tilde)`.
pub(crate) fn class_taps(p: &ConvProblem) -> u64 {
    (0..3).map(|d| p.filter[d].div_ceil(tilde(p, d)) as u64).product()
}

/// `S / gcd(S, dilation)` along canonical spatial dim `d`.
pub(crate) fn tilde(p: &ConvProblem, d: usize) -> usize {
    p.strides[d] / gcd(p.strides[d], p.dilations[d])
}

/// `dilation / gcd(S, dilation)` along canonical spatial dim `d`: how far the
/// output pixel moves between consecutive taps of one class.
pub(crate) fn tap_step(p: &ConvProblem, d: usize) -> usize {
    p.dilations[d] / gcd(p.strides[d], p.dilations[d])
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Stride-residue slices: the product of the strides.
pub(crate) fn slice_count(p: &ConvProblem) -> usize {
    p.strides.iter().product()
}
