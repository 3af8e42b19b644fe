//! Emulated matrix throughput on a realistic tiled GEMM (global -> LDS staging,
//! barriers, fragments from LDS, wave tiles of matrix atoms), per architecture.
//!
//! `cargo run --release -p convgrad-emu --example emu_throughput [-- M N K]`
//! (default 512 512 512). Threads: all cores, or `CONVGRAD_EMU_THREADS`. Best of 3 runs.

#[path = "../tests/kernels/gemm.rs"]
mod gemm;

use convgrad_emu::matrix::MatrixOp;
use convgrad_emu::{EmuArch, Emulator, Launch};

fn upload(emu: &Emulator, bytes: &[u8]) -> u64 {
    let a = emu.alloc(bytes.len()).unwrap();
    emu.write(a, bytes).unwrap();
    a
}

fn main() {
    let dims: Vec<usize> = std::env::args().skip(1).map(|s| s.parse().expect("M N K")).collect();
    let (m, n, k) = match dims[..] {
        [m, n, k] => (m, n, k),
        [] => (512, 512, 512),
        _ => panic!("usage: emu_throughput [M N K]"),
    };
    assert!(m % gemm::BM == 0 && n % gemm::BN == 0 && k % gemm::BK == 0, "M, N multiples of 64, K of 32");
    let cases = [
        (EmuArch::Gfx942, MatrixOp::Mfma32x32x8F16),
        (EmuArch::Gfx942, MatrixOp::Mfma16x16x16Bf16),
        (EmuArch::Gfx1100, MatrixOp::Wmma16x16x16F16),
        (EmuArch::Sm90, MatrixOp::Mma16x8x16F16),
    ];
    println!("GEMM {m}x{n}x{k}, 64x64x32 block tile, 4 waves");
    for (arch, op) in cases {
        let emu = Emulator::new(arch);
        let one = if op.is_bf16() { half::bf16::ONE.to_bits() } else { half::f16::ONE.to_bits() };
        let a = upload(&emu, &one.to_le_bytes().repeat(m * k));
        let b = upload(&emu, &one.to_le_bytes().repeat(n * k));
        let c = emu.alloc(m * n * 4).unwrap();
        let words = gemm::args(a, b, c, m, n, k, op);
        let args = upload(&emu, &words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<_>>());
        let launch = Launch {
            name: "gemm",
            entry: gemm::gemm_kernel,
            grid: [(n / gemm::BN) as u32, (m / gemm::BM) as u32, 1],
            block: gemm::block(op),
            lds_bytes: gemm::LDS_BYTES,
            args,
        };
        // Best of three: the figure is the emulator's, not the other load on the machine.
        let rep = (0..3).map(|_| emu.launch(&launch).unwrap()).min_by_key(|r| r.elapsed).unwrap();
        let mut first = [0u8; 4];
        emu.read(c, &mut first).unwrap();
        assert_eq!(f32::from_le_bytes(first), k as f32, "wrong result");
        let total = rep.matrix_flops as f64 / rep.elapsed.as_secs_f64() / 1e6;
        let threads = emu.threads().min(rep.workgroups as usize);
        println!(
            "{:8} {:28} {:7.3} s  {:8.1} MFLOP/s total  {:8.1} MFLOP/s per core ({threads} threads, {} workgroups)",
            arch.name(),
            op.mnemonic(),
            rep.elapsed.as_secs_f64(),
            total,
            total / threads as f64,
            rep.workgroups
        );
    }
}
