//! A dependent of `convgrad` built on stable Rust: one small grouped backward-weight
//! problem in f16 on the CPU emulator, checked against a float64 reference written
//! here, and the architectures whose GPU code this build embeds.
//!
//! Tolerance: inputs are multiples of 1/16 in [-1, 1] (exact in f16), so every
//! product and the f32 sums are exact; the only rounding is the f16 store of `dw`,
//! at most half an ulp (2^-11 relative). The check allows `1e-3 * (1 + |ref|)`.
//! Exit status 1 on any failure.

use convgrad::ops::bwd_weight::{BwdWeightConfig, BwdWeightOp, BwdWeightTensors};
use convgrad::ops::{Workspace, WorkspaceContents};
use convgrad::runtime::{Backend, Device, EmuArch};
use convgrad::types::{ConvLayout, ConvProblem, TypeConfig};
use half::f16;

// G groups, N images, K output and C input channels per group, Y x X filter,
// H x W input, stride 1, padding 1: output H x W.
const G: usize = 2;
const N: usize = 2;
const K: usize = 8;
const C: usize = 8;
const Y: usize = 3;
const X: usize = 3;
const H: usize = 6;
const W: usize = 6;

/// `n` values `i/16`, `i` in -16..=16, from a fixed linear congruential sequence.
fn fill(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) % 33) as f64 / 16.0 - 1.0
        })
        .collect()
}

/// `dw[g][k][y][x][c] = sum over n, ho, wo of dy[n][ho][wo][g][k] * x[n][hi][wi][g][c]`
/// with `hi = ho + y - 1`, `wi = wo + x - 1` (layouts NHWGC, GKYXC, NHWGK).
fn reference(x: &[f64], dy: &[f64]) -> Vec<f64> {
    let mut dw = vec![0.0; G * K * Y * X * C];
    for (g, k, fy, fx, c) in (0..G).flat_map(|g| (0..K).flat_map(move |k| (0..Y).flat_map(move |fy| (0..X).flat_map(move |fx| (0..C).map(move |c| (g, k, fy, fx, c)))))) {
        let mut acc = 0.0;
        for n in 0..N {
            for ho in 0..H {
                for wo in 0..W {
                    let (hi, wi) = ((ho + fy) as isize - 1, (wo + fx) as isize - 1);
                    if hi < 0 || wi < 0 || hi >= H as isize || wi >= W as isize {
                        continue;
                    }
                    let xi = (((n * H + hi as usize) * W + wi as usize) * G + g) * C + c;
                    let yi = (((n * H + ho) * W + wo) * G + g) * K + k;
                    acc += dy[yi] * x[xi];
                }
            }
        }
        dw[(((g * K + k) * Y + fy) * X + fx) * C + c] = acc;
    }
    dw
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    println!("convgrad built_archs(): {:?}", convgrad::code_objects::built_archs());
    let dev = Device::open(Backend::Emulator(EmuArch::Gfx942), 0)?;
    println!("device: {} ({})", dev.name(), dev.arch());
    // ck-style arguments: ndim, G, N, K, C, filter, input, strides, dilations, pads.
    let p = ConvProblem::from_ck_args(&[2, G, N, K, C, Y, X, H, W, 1, 1, 1, 1, 1, 1, 1, 1])?;
    let cfg = BwdWeightConfig { layout: ConvLayout::NhwgcGkyxcNhwgk, types: TypeConfig::F16, ..Default::default() };
    let op = BwdWeightOp::new(&dev, &p, &cfg)?;
    println!("problem: {p}\nkernel: {}", op.describe());

    let (x, dy) = (fill(1, N * H * W * G * C), fill(2, N * H * W * G * K));
    let to_f16 = |v: &[f64]| v.iter().map(|&a| f16::from_f64(a)).collect::<Vec<_>>();
    let xb = dev.upload(&to_f16(&x))?;
    let dyb = dev.upload(&to_f16(&dy))?;
    let dwb = dev.alloc::<f16>(G * K * Y * X * C)?;
    let ws = dev.alloc::<u8>(op.workspace_bytes().max(1))?;
    ws.fill_zero()?;
    let stream = dev.create_stream()?;
    let t = BwdWeightTensors { x: (&xb).into(), dy: (&dyb).into(), dw: (&dwb).into(), ds: &[] };
    op.execute_on(&stream, t, Workspace::raw(&ws, WorkspaceContents::Zeroed))?;
    stream.synchronize()?;

    let got = dwb.download()?;
    let want = reference(&x, &dy);
    let mut worst = 0.0f64;
    let mut bad = 0;
    for (g, r) in got.iter().zip(&want) {
        let err = (g.to_f64() - r).abs();
        worst = worst.max(err / (1.0 + r.abs()));
        bad += usize::from(!(err <= 1e-3 * (1.0 + r.abs())));
    }
    println!("dw: {} values, {bad} outside 1e-3 * (1 + |ref|), worst {worst:.2e}", want.len());
    Ok(bad == 0)
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
