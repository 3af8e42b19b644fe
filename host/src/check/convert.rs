//! Conversions between float64 values and device storage (f32, f16, bf16),
//! all with round-to-nearest-even.
//!
//! `half`'s own `f16::from_f64` / `bf16::from_f64` are not correctly rounded
//! for every f64 (they drop the low 32 mantissa bits first, or go through
//! f32); here the rounding is done exactly in f64 by [`round_to`] and the
//! then representable value is converted exactly.

use crate::types::DType;
use half::{bf16, f16};

/// `(mantissa bits, smallest normal exponent, largest finite value)` of a type.
const fn params(t: DType) -> (i32, i32, f64) {
    match t {
        DType::F32 => (23, -126, f32::MAX as f64),
        DType::F16 => (10, -14, 65504.0),
        // (2 - 2^-7) * 2^127
        DType::Bf16 => (7, -126, 3.389_531_389_251_535_5e38),
        // (2 - 2^-10) * 2^127 (a compute type: f32's range, 10 mantissa bits)
        DType::Tf32 => (10, -126, 3.401_162_134_214_653_5e38),
    }
}

/// Rounds `v` to the nearest value of `t` (ties to even), subnormals included;
/// values beyond the largest finite one round to infinity as IEEE 754 says.
/// NaN stays NaN.
pub fn round_to(t: DType, v: f64) -> f64 {
    if !v.is_finite() || v == 0.0 {
        return v;
    }
    if t == DType::F32 {
        return v as f32 as f64; // Rust's f64 -> f32 cast is round-to-nearest-even.
    }
    let (mant, emin, max) = params(t);
    // Exponent of |v| (v is a normal f64 here: subnormal f64s are far below every target's range).
    let e = ((v.to_bits() >> 52) & 0x7FF) as i32 - 1023;
    let q = (e.max(emin) - mant) as f64; // quantum 2^q, exactly scaled below
    let scale = 2f64.powi(q as i32);
    let r = (v / scale).round_ties_even() * scale;
    if r.abs() > max {
        f64::INFINITY.copysign(v)
    } else {
        r
    }
}

/// Rounds every element in place to `t` (see [`round_to`]).
pub fn round_slice(t: DType, v: &mut [f64]) {
    for x in v {
        *x = round_to(t, *x);
    }
}

/// Unit roundoff of `t`: `2^-(mantissa bits + 1)`.
pub fn unit_roundoff(t: DType) -> f64 {
    2f64.powi(-(t.mantissa_bits() as i32 + 1))
}

/// Half the spacing of `t`'s subnormals: the largest absolute rounding error
/// below the normal range (f16: 2^-25, bf16: 2^-134, f32: 2^-150).
pub fn underflow_error(t: DType) -> f64 {
    let (mant, emin, _) = params(t);
    2f64.powi(emin - mant - 1)
}

/// f64 values to f32 storage (round-to-nearest-even).
pub fn to_f32(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}
/// f64 values to f16 storage (round-to-nearest-even).
pub fn to_f16(v: &[f64]) -> Vec<f16> {
    v.iter()
        .map(|&x| f16::from_f64(round_to(DType::F16, x)))
        .collect()
}
/// f64 values to bf16 storage (round-to-nearest-even).
pub fn to_bf16(v: &[f64]) -> Vec<bf16> {
    v.iter()
        .map(|&x| bf16::from_f64(round_to(DType::Bf16, x)))
        .collect()
}
/// f32 storage to f64 (exact).
pub fn from_f32(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}
/// f16 storage to f64 (exact).
pub fn from_f16(v: &[f16]) -> Vec<f64> {
    v.iter().map(|&x| x.to_f64()).collect()
}
/// bf16 storage to f64 (exact).
pub fn from_bf16(v: &[bf16]) -> Vec<f64> {
    v.iter().map(|&x| x.to_f64()).collect()
}

/// f64 values to the raw native-endian bytes of `t` storage
/// (what a device buffer of `t` holds), rounded to nearest even.
pub fn to_bytes(t: DType, v: &[f64]) -> Vec<u8> {
    match t {
        // TF32 is only a compute type; its container is f32.
        DType::F32 | DType::Tf32 => bytemuck::cast_slice(&to_f32(v)).to_vec(),
        DType::F16 => bytemuck::cast_slice(&to_f16(v)).to_vec(),
        DType::Bf16 => bytemuck::cast_slice(&to_bf16(v)).to_vec(),
    }
}

/// Raw native-endian bytes of `t` storage to f64 (exact). Panics if the byte
/// count is not a multiple of the element size.
pub fn from_bytes(t: DType, b: &[u8]) -> Vec<f64> {
    assert!(
        b.len().is_multiple_of(t.bytes()),
        "from_bytes: {} bytes is not a whole number of {} elements",
        b.len(),
        t.name()
    );
    // pod_collect_to_vec copies, so the byte slice need not be aligned.
    match t {
        DType::F32 | DType::Tf32 => from_f32(&bytemuck::pod_collect_to_vec::<u8, f32>(b)),
        DType::F16 => from_f16(&bytemuck::pod_collect_to_vec::<u8, f16>(b)),
        DType::Bf16 => from_bf16(&bytemuck::pod_collect_to_vec::<u8, bf16>(b)),
    }
}

/// `n` elements of `t` storage, every one a quiet NaN: fill an output with
/// this before a run, and any NaN left afterwards marks an element the kernel
/// did not write (see [`crate::check::ErrorReport::unwritten_count`]).
pub fn poisoned_bytes(t: DType, n: usize) -> Vec<u8> {
    to_bytes(t, &vec![f64::NAN; n])
}
