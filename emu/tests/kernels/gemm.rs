//! A tiled GEMM test kernel shaped like convgrad's: C (M x N, f32) = A (M x K) *
//! Bt (N x K)^T with 16-bit inputs. 64x64 block tile, BK = 32, four waves in 2x2,
//! each wave a 32x32 tile of matrix atoms. Per K step: global -> LDS staging
//! (16-byte loads), barrier, fragments from LDS into the atoms, barrier.
//! Shared by `tests/gemm.rs` and `examples/emu_throughput.rs`.
//!
//! Fragment layouts are this file's reading of matrix-layouts.md, as runs of
//! consecutive k held in consecutive elements of a lane.

use convgrad_device::arch;
use convgrad_emu::lane;
use convgrad_emu::matrix::MatrixOp;

pub const BM: usize = 64;
pub const BN: usize = 64;
pub const BK: usize = 32;
/// LDS row length in elements (BK plus padding).
const ROW: usize = BK + 8;
const B_LDS: usize = BM * ROW * 2;
/// LDS bytes the kernel is launched with.
pub const LDS_BYTES: usize = (BM + BN) * ROW * 2;

/// Threads per workgroup for `op`: four waves.
pub fn block(op: MatrixOp) -> u32 {
    4 * op.wave()
}

/// Argument block words: a, bt, c, m, n, k, op index (into `MatrixOp::ALL`).
pub fn args(a: u64, bt: u64, c: u64, m: usize, n: usize, k: usize, op: MatrixOp) -> [u64; 7] {
    let idx = MatrixOp::ALL.iter().position(|&o| o == op).unwrap();
    [a, bt, c, m as u64, n as u64, k as u64, idx as u64]
}

/// Run `r` of the A fragment of lane `l` starts at (row, k).
fn a_run(op: MatrixOp, l: usize, r: usize) -> (usize, usize) {
    use MatrixOp::*;
    match op {
        Mfma32x32x8F16 | Mfma32x32x8Bf16 => (l % 32, 4 * (l / 32)),
        Mfma16x16x16F16 | Mfma16x16x16Bf16 => (l % 16, 4 * (l / 16)),
        // gfx950: lane = i + 32*floor(k/8) resp. i + 16*floor(k/8), 8 elements.
        Mfma32x32x16F16 | Mfma32x32x16Bf16 => (l % 32, 8 * (l / 32)),
        Mfma16x16x32F16 | Mfma16x16x32Bf16 => (l % 16, 8 * (l / 16)),
        Wmma16x16x16F16 | Wmma16x16x16Bf16 => (l % 16, 0),
        Wmma16x16x16Gfx12F16 | Wmma16x16x16Gfx12Bf16 => (l % 16, 8 * (l / 16)),
        // a0a1: (g, 2t), a2a3: (g+8, 2t), a4a5: (g, 2t+8), a6a7: (g+8, 2t+8).
        Mma16x8x16F16 | Mma16x8x16Bf16 => ((l >> 2) + 8 * (r % 2), 2 * (l % 4) + 8 * (r / 2)),
        // 16-bit operand runs only (the TF32 op has its own tests in matrix_ops.rs).
        Mma16x8x8Tf32 => unreachable!("16-bit ops only"),
    }
}
/// Run `r` of the B fragment of lane `l` starts at (column n, k).
fn b_run(op: MatrixOp, l: usize, r: usize) -> (usize, usize) {
    use MatrixOp::*;
    match op {
        Mfma32x32x8F16 | Mfma32x32x8Bf16 => (l % 32, 4 * (l / 32)),
        Mfma16x16x16F16 | Mfma16x16x16Bf16 => (l % 16, 4 * (l / 16)),
        // gfx950: lane = i + 32*floor(k/8) resp. i + 16*floor(k/8), 8 elements.
        Mfma32x32x16F16 | Mfma32x32x16Bf16 => (l % 32, 8 * (l / 32)),
        Mfma16x16x32F16 | Mfma16x16x32Bf16 => (l % 16, 8 * (l / 16)),
        Wmma16x16x16F16 | Wmma16x16x16Bf16 => (l % 16, 0),
        Wmma16x16x16Gfx12F16 | Wmma16x16x16Gfx12Bf16 => (l % 16, 8 * (l / 16)),
        // b0b1: k = 2t, b2b3: k = 2t+8; n = g.
        Mma16x8x16F16 | Mma16x8x16Bf16 => (l >> 2, 2 * (l % 4) + 8 * r),
        Mma16x8x8Tf32 => unreachable!("16-bit ops only"),
    }
}
fn run_len(op: MatrixOp) -> usize {
    match op.regs().a {
        4 => 4,
        8 if op.regs().b == 8 => 8,
        16 => 16,
        _ => 2,
    }
}
/// D element `g` of lane `l` is (i, j).
fn d_ij(op: MatrixOp, l: usize, g: usize) -> (usize, usize) {
    use MatrixOp::*;
    match op {
        Mfma32x32x8F16 | Mfma32x32x8Bf16 => (8 * (g / 4) + 4 * (l / 32) + g % 4, l % 32),
        Mfma16x16x16F16 | Mfma16x16x16Bf16 => (4 * (l / 16) + g, l % 16),
        Mfma32x32x16F16 | Mfma32x32x16Bf16 => (8 * (g / 4) + 4 * (l / 32) + g % 4, l % 32),
        Mfma16x16x32F16 | Mfma16x16x32Bf16 => (4 * (l / 16) + g, l % 16),
        Wmma16x16x16F16 | Wmma16x16x16Bf16 => (2 * g + l / 16, l % 16),
        Wmma16x16x16Gfx12F16 | Wmma16x16x16Gfx12Bf16 => (8 * (l / 16) + g, l % 16),
        Mma16x8x16F16 | Mma16x8x16Bf16 => ((l >> 2) + 8 * (g / 2), 2 * (l % 4) + g % 2),
        Mma16x8x8Tf32 => unreachable!("16-bit ops only"),
    }
}

/// Loads `n` consecutive 16-bit elements from LDS byte offset `off` into `out`.
unsafe fn lds_run(off: usize, out: &mut [u16]) {
    unsafe {
        match out.len() {
            2 => out.copy_from_slice(&arch::lds_ld::<[u16; 2]>(off)),
            4 => out.copy_from_slice(&arch::lds_ld::<[u16; 4]>(off)),
            8 => out.copy_from_slice(&arch::lds_ld::<[u16; 8]>(off)),
            16 => {
                out[..8].copy_from_slice(&arch::lds_ld::<[u16; 8]>(off));
                out[8..].copy_from_slice(&arch::lds_ld::<[u16; 8]>(off + 16));
            }
            _ => unreachable!(),
        }
    }
}

/// The kernel. Grid: (N / BN, M / BM); M, N multiples of 64, K of 32.
pub unsafe fn gemm_kernel(args: *const u8) {
    unsafe {
        let w = args as *const u64;
        let (pa, pb, pc) = (arch::ld(w, 0) as *const [u16; 8], arch::ld(w, 1) as *const [u16; 8], arch::ld(w, 2) as *mut f32);
        let (n, k) = (arch::ld(w, 4) as usize, arch::ld(w, 5) as usize);
        let op = MatrixOp::ALL[arch::ld(w, 6) as usize];
        let (am, an, ak) = op.shape();
        let (am, an, ak) = (am as usize, an as usize, ak as usize);
        let (wave, r) = (op.wave() as usize, op.regs());
        let threads = 4 * wave;
        let t = arch::thread_id() as usize;
        let (l, wv) = (t % wave, t / wave);
        let (wm, wn) = (wv / 2, wv % 2);
        let [bx, by, _] = arch::block_id();
        let (m0, n0) = (by as usize * BM, bx as usize * BN);
        let (tiles_m, tiles_n) = (32 / am, 32 / an);
        let rl = run_len(op);
        let mut acc = [[0f32; 16]; 8];
        for k0 in (0..k).step_by(BK) {
            // Stage: 8-element chunks, 4 per row of the tile.
            for c in (t..BM * BK / 8).step_by(threads) {
                let (row, seg) = (c / 4, (c % 4) * 8);
                let va = arch::ld(pa, ((m0 + row) * k + k0 + seg) / 8);
                arch::lds_st((row * ROW + seg) * 2, va);
                let vb = arch::ld(pb, ((n0 + row) * k + k0 + seg) / 8);
                arch::lds_st(B_LDS + (row * ROW + seg) * 2, vb);
            }
            arch::barrier();
            for kk in (0..BK).step_by(ak) {
                let mut bf = [[0u16; 16]; 4];
                for (tn, b) in bf.iter_mut().enumerate().take(tiles_n) {
                    for run in 0..r.b / rl {
                        let (col, kr) = b_run(op, l, run);
                        let off = B_LDS + ((wn * 32 + tn * an + col) * ROW + kk + kr) * 2;
                        lds_run(off, &mut b[run * rl..(run + 1) * rl]);
                    }
                }
                for tm in 0..tiles_m {
                    let mut af = [0u16; 16];
                    for run in 0..r.a / rl {
                        let (row, kr) = a_run(op, l, run);
                        lds_run(((wm * 32 + tm * am + row) * ROW + kk + kr) * 2, &mut af[run * rl..(run + 1) * rl]);
                    }
                    for (tn, b) in bf.iter().enumerate().take(tiles_n) {
                        let cacc = &mut acc[tm * tiles_n + tn];
                        let c = *cacc;
                        lane::mma(op, &af[..r.a], &b[..r.b], &c[..r.c], &mut cacc[..r.c]);
                    }
                }
            }
            arch::barrier();
        }
        for tm in 0..tiles_m {
            for tn in 0..tiles_n {
                for (g, &v) in acc[tm * tiles_n + tn][..r.c].iter().enumerate() {
                    let (i, j) = d_ij(op, l, g);
                    let (row, col) = (m0 + wm * 32 + tm * am + i, n0 + wn * 32 + tn * an + j);
                    arch::st(pc, row * n + col, v);
                }
            }
        }
    }
}
