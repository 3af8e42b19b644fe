//! Seeded random inputs (CK's `init` 1 and 2), reproducible across platforms.

use super::convert::round_to;
use crate::types::DType;

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny, fast generator whose
/// output sequence depends only on the seed.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    /// Next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform integer in `0..n` (`n > 0`), by the multiply-shift method.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// Uniform integer in `lo..=hi`.
    #[inline]
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below((hi - lo + 1) as u64) as usize
    }
    /// Uniform float in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// How inputs are initialised (CK's `init` argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Init {
    /// Random integers in `[-5, 4]` (CK `init = 1`): every product and every
    /// partial sum up to 2^24 is exact in f32, so a correct kernel matches
    /// the reference exactly (as long as the output type holds the result).
    Int,
    /// Uniform floats in `[-1, 1)` (CK `init = 2`), rounded to the target type.
    Float,
}

impl Init {
    /// CK's numbering: 1 = [`Init::Int`], 2 = [`Init::Float`].
    pub fn from_ck(v: u32) -> Option<Init> {
        match v {
            1 => Some(Init::Int),
            2 => Some(Init::Float),
            _ => None,
        }
    }
    /// Parses `int` / `float` (any case) or CK's `1` / `2`.
    pub fn parse(s: &str) -> Option<Init> {
        match s.to_ascii_lowercase().as_str() {
            "int" | "1" => Some(Init::Int),
            "float" | "2" => Some(Init::Float),
            _ => None,
        }
    }
    /// `int` or `float`.
    pub fn name(self) -> &'static str {
        match self {
            Init::Int => "int",
            Init::Float => "float",
        }
    }
}

/// `n` random values of `kind` from `seed`, each exactly representable in
/// `dtype` (floats are rounded to it with round-to-nearest-even; a draw that
/// rounds up to 1.0 is drawn again, so the range stays `[-1, 1)`).
///
/// The same `(seed, kind, n)` gives the same values on every platform; the
/// values for different `dtype`s are the same draws, differently rounded.
pub fn fill_random(seed: u64, kind: Init, dtype: DType, n: usize) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| match kind {
            Init::Int => rng.below(10) as f64 - 5.0,
            Init::Float => loop {
                let v = round_to(dtype, 2.0 * rng.unit() - 1.0);
                if v < 1.0 {
                    break v;
                }
            },
        })
        .collect()
}
