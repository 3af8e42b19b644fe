//! The rule against long reductions: simulated f32 sums of up to 10^6 random
//! products (the reference-vs-result comparison built directly, no kernel)
//! pass both tests, while an all-zero result and one element off by 1.0 fail.
//! The printed ratios are the calibration quoted in [`super::tolerance`].

use super::*;
use crate::types::epilogue::EpiChain;
use crate::types::{DType, TensorDesc};

/// Output elements per simulated tensor.
const M: usize = 32;

/// How the simulated f32 adder rounds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Adder {
    Nearest,
    /// Toward zero, as NVIDIA's tensor-core adders do.
    Truncate,
}

/// What the inputs hold.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Data {
    /// Uniform floats in [-1, 1), f32.
    Signed,
    /// Their absolute values: partial sums keep one sign (rounding errors do not cancel).
    Positive,
    /// Integers in [-5, 4] (`Init::Int`).
    Int,
}

/// One simulated output tensor of `M` sums of `l` products.
struct SimSums {
    /// Exact sums (float64).
    acc: Vec<f64>,
    /// Sums of absolute products.
    abs: Vec<f64>,
    /// What an f32 kernel summing the products in order writes.
    out: Vec<f64>,
    /// Whether every input was a small integer.
    ints: bool,
}

fn add_f32(s: f32, t: f32, adder: Adder) -> f32 {
    let r = s + t;
    if adder == Adder::Nearest || r == 0.0 || !r.is_finite() {
        return r;
    }
    let exact = s as f64 + t as f64;
    if (r as f64).abs() > exact.abs() { f32::from_bits(r.to_bits() - 1) } else { r }
}

/// Fresh random inputs (seeded by the clock, printed on failure through the
/// callers' messages) summed `l` at a time.
fn simulate(l: usize, data: Data, adder: Adder, seed: u64) -> SimSums {
    let mut rng = SplitMix64::new(seed);
    let mut draw = || match data {
        Data::Int => rng.below(10) as f32 - 5.0,
        Data::Signed => (2.0 * rng.unit() - 1.0) as f32,
        Data::Positive => rng.unit() as f32,
    };
    let mut s = SimSums { acc: vec![0.0; M], abs: vec![0.0; M], out: vec![0.0; M], ints: true };
    for j in 0..M {
        let (mut acc, mut abs, mut f) = (0.0f64, 0.0f64, 0.0f32);
        for _ in 0..l {
            let (a, b) = (draw(), draw());
            s.ints &= is_small_integer_data(&[a as f64, b as f64]);
            let t = a as f64 * b as f64; // exact: two 24-bit significands
            acc += t;
            abs += t.abs();
            f = add_f32(f, a * b, adder);
        }
        (s.acc[j], s.abs[j], s.out[j]) = (acc, abs, f as f64);
    }
    s
}

fn desc() -> TensorDesc {
    TensorDesc { lengths: [1, 1, M, 1, 1, 1], strides: [M, M, 1, 1, 1, 1] }
}

fn fresh_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
}

/// The rule for f32 data summed `l` at a time, exact for integers when `ints`.
fn judge(s: &SimSums, l: usize, out: &[f64]) -> ErrorReport {
    let t = Tolerance::new(DType::F32, [DType::F32; 2], DType::F32, l as u64).with_integer_data(s.ints);
    let e = expected(&t, &desc(), &s.acc, Some(&s.abs), &EpiChain::default(), &[]);
    compare_expected(out, &e, &desc())
}

/// Correct f32 sums pass both tests at L = 10^3..10^6, with either adder and
/// with or without cancellation; the largest share of `||s||` used stays
/// well below 1 (the calibration).
#[test]
fn correct_f32_sums_pass_at_any_length() {
    let seed = fresh_seed();
    let mut worst = 0.0f64;
    for l in [1_000, 10_000, 100_000, 1_000_000] {
        for data in [Data::Signed, Data::Positive, Data::Int] {
            for adder in [Adder::Nearest, Adder::Truncate] {
                let s = simulate(l, data, adder, seed ^ l as u64);
                let rep = judge(&s, l, &s.out);
                let ratio = rep.l2_ratio().unwrap();
                println!("L = {l:>7} {data:?} {adder:?}: l2 err/typical {ratio:.4}, worst err/bound {:.4}", rep.worst_ratio);
                assert!(rep.passed(), "seed {seed}, L = {l} {data:?} {adder:?}: {rep}");
                if data == Data::Int {
                    assert_eq!(rep.max_abs, 0.0, "integer sums below 2^24 are exact (seed {seed})");
                }
                worst = worst.max(ratio);
            }
        }
    }
    println!("largest l2 err/typical of a correct f32 sum: {worst:.4}");
    assert!(worst < 0.5, "seed {seed}: the typical-error scale is too tight ({worst:.3})");
}

/// At L = 10^6 an all-zero result passes the worst-case test element by
/// element (which is why the aggregate test exists) and fails the rule,
/// for float and for integer data.
#[test]
fn all_zero_fails_at_a_million() {
    let l = 1_000_000;
    let seed = fresh_seed();
    let s = simulate(l, Data::Signed, Adder::Nearest, seed);
    let zero = vec![0.0; M];
    let rep = judge(&s, l, &zero);
    assert_eq!(rep.fail_count, 0, "seed {seed}: test 1 alone is fooled at this length: {rep}");
    assert!(!rep.l2_passed() && !rep.passed(), "seed {seed}: all-zero passed: {rep}");
    println!("all-zero, L = 10^6: ||ref|| / ||s|| = {:.2}", 1.0 / rep.l2_allowed.unwrap() * rep.l2_err);

    let s = simulate(l, Data::Int, Adder::Nearest, seed);
    let rep = judge(&s, l, &zero);
    assert!(!rep.passed() && rep.fail_count > 0, "seed {seed}: all-zero integer result passed: {rep}");
}

/// With integer inputs at L = 10^6, one element off by 1.0 fails (element
/// by element), while the correct result passes exactly; without the
/// exactness test it would pass.
#[test]
fn one_element_off_by_one_fails_at_a_million() {
    let l = 1_000_000;
    let seed = fresh_seed();
    let s = simulate(l, Data::Int, Adder::Nearest, seed);
    assert!(s.ints && s.abs.iter().all(|&a| a <= F32_EXACT_INT), "seed {seed}: not in the exact range");
    assert!(judge(&s, l, &s.out).passed(), "seed {seed}");
    let j = (seed % M as u64) as usize;
    let mut bad = s.out.clone();
    bad[j] += 1.0;
    let rep = judge(&s, l, &bad);
    assert!(!rep.passed() && rep.fail_count == 1, "seed {seed}: off by one at {j} passed: {rep}");
    assert_eq!(rep.first_fail.map(|f| f.index[2]), Some(j));
    let lenient = SimSums { ints: false, ..s };
    assert!(judge(&lenient, l, &bad).passed(), "seed {seed}: the bounds without test 3 already catch it");
}

/// Without `A` (the fallback) nothing is taken as exact, and the per-element
/// path ([`compare`]) does not run the aggregate test.
#[test]
fn fallback_and_plain_compare() {
    let s = simulate(100, Data::Int, Adder::Nearest, fresh_seed());
    let t = Tolerance::new(DType::F32, [DType::F32; 2], DType::F32, 100).with_integer_data(true);
    let e = expected(&t, &desc(), &s.acc, None, &EpiChain::default(), &[]);
    assert!(e.bound.iter().all(|&b| b > 0.0));
    let rep = compare(&s.out, &e.reference, &e.bound, &desc());
    assert_eq!(rep.l2_allowed, None);
    assert!(rep.passed());
}
