//! convgrad's convolution backward passes as candle custom ops ([`ops`]),
//! checked against candle's own conv2d gradients computed in f64.
//!
//! For each dtype convgrad takes (f32, f16, bf16): fresh random inputs
//! (the seed is printed), `dw` and `dx` of a grouped, strided NHWC 2-D
//! convolution through the custom ops, and the reference: candle's `conv2d`
//! of the same (rounded) inputs in f64, differentiated by candle's autograd
//! (`loss = sum(conv2d(x, w) * dy)`, so `d loss/dx = dx` and `d loss/dw = dw`).
//!
//! A value passes iff `|out - ref| <= u |ref| + eta + (1 + u) (L + 2) 2^-23 S`:
//! `u` the output type's unit roundoff (2^-24, 2^-11, 2^-8) and `eta` half
//! its smallest subnormal (2^-150, 2^-25, 2^-134), `L` the length
//! of the reduction, `S` the sum of |products| of that element (the same
//! gradient of |x|, |w|, |dy|). That bounds f32 accumulation in any order and
//! the output rounding, and is far below |ref| for a wrong value.
//! Then bad inputs must give errors naming the field. Exit status 1 on any failure.
//!
//! Run: `cargo +stable run --release` (here, in examples/candle).

mod ops;

use candle_core::{DType, Device, Tensor, Var};
use ops::{BwdData, BwdWeight, Convgrad, Geometry};
use rand::{Rng, SeedableRng, rngs::StdRng};
use std::sync::Arc;

// N images, G groups of C input and K output channels, Y x X filter, H x W input.
const N: usize = 2;
const G: usize = 2;
const C: usize = 8;
const K: usize = 12;
const Y: usize = 3;
const X: usize = 3;
const H: usize = 9;
const W: usize = 9;
const GEOMETRY: Geometry = Geometry {
    groups: G,
    stride: [2, 2],
    dilation: [1, 1],
    pad: [1, 1],
};

/// `dims` random values in [-1, 1) as an f32 tensor converted to `dtype`.
fn random(rng: &mut StdRng, dims: &[usize], dtype: DType) -> candle_core::Result<Tensor> {
    let n = dims.iter().product();
    let v: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    Tensor::from_vec(v, dims, &Device::Cpu)?.to_dtype(dtype)
}

/// Candle's gradients of `sum(conv2d(x, w) * dy)` in f64: `(dx, dw)` in the
/// NHWC / [G*K, Y, X, C] layouts of the inputs.
fn candle_grads(x: &Tensor, w: &Tensor, dy: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
    let g = GEOMETRY;
    let nchw = |t: &Tensor| t.to_dtype(DType::F64)?.permute((0, 3, 1, 2))?.contiguous();
    let xv = Var::from_tensor(&nchw(x)?)?;
    let wv = Var::from_tensor(&nchw(w)?)?;
    let y = xv.as_tensor().conv2d(wv.as_tensor(), g.pad[0], g.stride[0], g.dilation[0], g.groups)?;
    let loss = (y * nchw(dy)?)?.sum_all()?;
    let grads = loss.backward()?;
    let grad = |v: &Var| -> candle_core::Result<Tensor> {
        let t = grads.get(v.as_tensor()).ok_or_else(|| candle_core::Error::Msg("no gradient".into()))?;
        t.permute((0, 2, 3, 1))?.contiguous()
    };
    Ok((grad(&xv)?, grad(&wv)?))
}

fn values(t: &Tensor) -> candle_core::Result<Vec<f64>> {
    t.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()
}

/// Compares `got` with `want` under the bound of the module docs; prints a line; true on pass.
fn compare(what: &str, got: &Tensor, want: &Tensor, sum_abs: &Tensor, (u, eta): (f64, f64), len: usize) -> candle_core::Result<bool> {
    if got.dims() != want.dims() {
        println!("{what}: shape {:?}, expected {:?}  FAIL", got.dims(), want.dims());
        return Ok(false);
    }
    let (got, want, s) = (values(got)?, values(want)?, values(sum_abs)?);
    let (mut bad, mut worst, mut max_abs) = (0usize, 0.0f64, 0.0f64);
    for ((o, r), s) in got.iter().zip(&want).zip(&s) {
        let bound = u * r.abs() + eta + (1.0 + u) * (len as f64 + 2.0) * 2f64.powi(-23) * s;
        let err = (o - r).abs();
        // NaN fails too.
        if err.is_nan() || err > bound {
            bad += 1;
        }
        worst = worst.max(err / bound.max(f64::MIN_POSITIVE));
        max_abs = max_abs.max(err);
    }
    let verdict = if bad == 0 { "ok" } else { "FAIL" };
    println!(
        "{what}: {} values, max |err| {max_abs:.3e}, worst err/bound {worst:.3}, {bad} outside  {verdict}",
        want.len()
    );
    Ok(bad == 0)
}

/// `r` must be an error whose text names `field`.
fn refused<T>(what: &str, r: candle_core::Result<T>, field: &str) -> bool {
    match r {
        Ok(_) => {
            println!("{what}: accepted  FAIL");
            false
        }
        Err(e) => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("");
            let ok = text.contains(field);
            println!("{what}: refused: {first}  {}", if ok { "ok" } else { "FAIL (does not name the field)" });
            ok
        }
    }
}

fn run() -> candle_core::Result<bool> {
    let cg: Arc<Convgrad> = Convgrad::open()?;
    println!("convgrad device: {} ({}), {}", cg.dev.name(), cg.dev.arch(), cg.dev.selection_note());
    let seed: u64 = rand::random();
    println!("seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let [ho, wo] = GEOMETRY.output([H, W], [Y, X]);
    println!("problem: N {N}, G {G}, C {C}, K {K}, {Y}x{X} filter, {H}x{W} input, {GEOMETRY:?} -> {ho}x{wo}");
    let bwd_weight = BwdWeight {
        cg: cg.clone(),
        geometry: GEOMETRY,
        filter: [Y, X],
    };
    let bwd_data = BwdData {
        cg: cg.clone(),
        geometry: GEOMETRY,
        input: [H, W],
    };
    let mut pass = true;
    let rounding = |u: i32, eta: i32| (2f64.powi(-u), 2f64.powi(-eta));
    for (dtype, u) in [
        (DType::F32, rounding(24, 150)),
        (DType::F16, rounding(11, 25)),
        (DType::BF16, rounding(8, 134)),
    ] {
        let x = random(&mut rng, &[N, H, W, G * C], dtype)?;
        let w = random(&mut rng, &[G * K, Y, X, C], dtype)?;
        let dy = random(&mut rng, &[N, ho, wo, G * K], dtype)?;
        let dw = x.apply_op2_no_bwd(&dy, &bwd_weight)?;
        let dx = dy.apply_op2_no_bwd(&w, &bwd_data)?;
        let (want_dx, want_dw) = candle_grads(&x, &w, &dy)?;
        let (sum_dx, sum_dw) = candle_grads(&x.abs()?, &w.abs()?, &dy.abs()?)?;
        pass &= compare(&format!("{dtype:?} dw {:?}", dw.dims()), &dw, &want_dw, &sum_dw, u, N * ho * wo)?;
        pass &= compare(&format!("{dtype:?} dx {:?}", dx.dims()), &dx, &want_dx, &sum_dx, u, K * Y * X)?;
    }

    // Bad input: errors naming the field.
    let x = random(&mut rng, &[N, W, H, G * C], DType::F16)?;
    let dy = random(&mut rng, &[N, ho, wo, G * K], DType::F16)?;
    pass &= refused(
        "x transposed (not contiguous)",
        x.transpose(1, 2)?.apply_op2_no_bwd(&dy, &bwd_weight),
        "`x` is not contiguous",
    );
    pass &= refused("x in f64", x.to_dtype(DType::F64)?.apply_op2_no_bwd(&dy, &bwd_weight), "`x` has dtype");
    pass &= refused(
        "dy in f32 with x in f16",
        x.apply_op2_no_bwd(&dy.to_dtype(DType::F32)?, &bwd_weight),
        "`dy`",
    );
    pass &= refused(
        "dy of the wrong shape",
        x.apply_op2_no_bwd(&dy.narrow(1, 0, 2)?.contiguous()?, &bwd_weight),
        "`dy` has shape",
    );
    let w = random(&mut rng, &[G * K + 1, Y, X, C], DType::F16)?;
    pass &= refused("w with G*K + 1 filters", dy.apply_op2_no_bwd(&w, &bwd_data), "`w` has shape");
    Ok(pass)
}

fn main() {
    match run() {
        Ok(true) => println!("PASS"),
        Ok(false) => {
            println!("FAIL");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
