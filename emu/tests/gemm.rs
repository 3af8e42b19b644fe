//! A realistic tiled GEMM (LDS staging, barriers, wave tiles of matrix atoms)
//! on every architecture model, against a plain f64 product.

mod common;
#[path = "kernels/gemm.rs"]
mod gemm;

use common::*;
use convgrad_emu::EmuArch;
use convgrad_emu::matrix::MatrixOp;

fn bits(op: MatrixOp, x: f32) -> (u16, f64) {
    if op.is_bf16() {
        let h = half::bf16::from_f32(x);
        (h.to_bits(), h.to_f64())
    } else {
        let h = half::f16::from_f32(x);
        (h.to_bits(), h.to_f64())
    }
}

fn run(arch: EmuArch, op: MatrixOp, m: usize, n: usize, k: usize) {
    let mut rng = Rng(42 + m as u64);
    let a: Vec<(u16, f64)> = (0..m * k).map(|_| bits(op, rng.unit())).collect();
    let bt: Vec<(u16, f64)> = (0..n * k).map(|_| bits(op, rng.unit())).collect();
    let emu = emu(arch);
    let pa = upload(&emu, "a", &a.iter().map(|x| x.0).collect::<Vec<_>>());
    let pb = upload(&emu, "bt", &bt.iter().map(|x| x.0).collect::<Vec<_>>());
    let pc = alloc::<f32>(&emu, "c", m * n);
    let args = args(&emu, &gemm::args(pa, pb, pc, m, n, k, op));
    let grid = [(n / gemm::BN) as u32, (m / gemm::BM) as u32, 1];
    let rep = launch(&emu, "gemm", gemm::gemm_kernel, grid, gemm::block(op), gemm::LDS_BYTES, args).unwrap();
    assert_eq!(rep.matrix_flops, (2 * m * n * k) as u64);
    let c: Vec<f32> = download(&emu, pc, m * n);
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k).map(|kk| a[i * k + kk].1 * bt[j * k + kk].1).sum();
            let got = c[i * n + j] as f64;
            assert!((got - want).abs() < 1e-4 * (1.0 + want.abs()), "{op:?} C[{i}][{j}] = {got}, want {want}");
        }
    }
}

#[test]
fn gemm_on_every_matrix_instruction() {
    let cases = [
        (EmuArch::Gfx942, MatrixOp::Mfma32x32x8F16),
        (EmuArch::Gfx90a, MatrixOp::Mfma32x32x8Bf16),
        (EmuArch::Gfx942, MatrixOp::Mfma16x16x16F16),
        (EmuArch::Gfx942, MatrixOp::Mfma16x16x16Bf16),
        (EmuArch::Gfx1100, MatrixOp::Wmma16x16x16F16),
        (EmuArch::Gfx1100, MatrixOp::Wmma16x16x16Bf16),
        (EmuArch::Gfx1200, MatrixOp::Wmma16x16x16Gfx12F16),
        (EmuArch::Gfx1201, MatrixOp::Wmma16x16x16Gfx12Bf16),
        (EmuArch::Sm80, MatrixOp::Mma16x8x16F16),
        (EmuArch::Sm90, MatrixOp::Mma16x8x16Bf16),
        (EmuArch::Gfx950, MatrixOp::Mfma32x32x16F16),
        (EmuArch::Gfx950, MatrixOp::Mfma32x32x16Bf16),
        (EmuArch::Gfx950, MatrixOp::Mfma16x16x32F16),
        (EmuArch::Gfx950, MatrixOp::Mfma16x16x32Bf16),
    ];
    for (arch, op) in cases {
        run(arch, op, 128, 64, 96);
    }
}
