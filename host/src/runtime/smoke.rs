//! The runtime smoke test: one small kernel per family that uses thread ids,
//! LDS, a barrier and the family's matrix instruction, run on a device and
//! compared with a CPU product. Used by `tests/runtime.rs` and the `devices`
//! example.
//!
//! Kernel contract (`device/src/kernels/smoke.rs`, instances `smoke_*` in
//! [`convgrad_types::instance`]): `D (M x N, f32) = A (M x K) * B (K x N)`,
//! A and B f16 row-major, D row-major, for exactly one matrix atom computed by
//! one wave. Argument block: [`ConvArgs`] with `x` = A, `w` = B, `dy` = D,
//! `gemm.m/n/k` = M/N/K, `abi` = [`ConvArgs::ABI`]. Grid `[1, 1, 1]`, block =
//! the instance's threads (one wave), LDS = the instance's `lds_bytes()`
//! (`(M + N) * K * 2`).
//!
//! | family | kernel       | M x N x K    | block |
//! |--------|--------------|--------------|-------|
//! | Cdna   | `smoke_mfma` | 32 x 32 x 8  | 64    |
//! | Rdna3  | `smoke_wmma` | 16 x 16 x 16 | 32    |
//! | Rdna4  | `smoke_wmma12` | 16 x 16 x 16 | 32  |
//! | Nvidia | `smoke_mma`  | 16 x 8 x 16  | 32    |

use super::error::Result;
use super::{Device, DeviceBuffer};
use convgrad_types::instance::{self, Family};
use convgrad_types::params::{ConvArgs, GemmPart};
use half::f16;

/// The launch shape of a family's smoke kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmokeSpec {
    /// Kernel name.
    pub kernel: &'static str,
    /// Rows of A and D.
    pub m: usize,
    /// Columns of B and D.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// Workgroups.
    pub grid: [u32; 3],
    /// Threads per workgroup.
    pub block: u32,
    /// Dynamic LDS bytes.
    pub lds_bytes: u32,
}

/// The smoke kernel of `family` and how it is launched (from the instance table).
pub fn spec(family: Family) -> SmokeSpec {
    let kernel = match family {
        Family::Cdna | Family::Cdna4 => "smoke_mfma",
        Family::Rdna3 => "smoke_wmma",
        Family::Rdna4 => "smoke_wmma12",
        Family::Nvidia | Family::Hopper => "smoke_mma",
    };
    let inst =
        instance::find(kernel).unwrap_or_else(|| panic!("{kernel} is not in the instance table"));
    SmokeSpec {
        kernel,
        m: inst.tile.bm as usize,
        n: inst.tile.bn as usize,
        k: inst.tile.bk as usize,
        grid: [1, 1, 1],
        block: inst.threads(family),
        lds_bytes: inst.lds_bytes(),
    }
}

/// The argument block of a smoke launch.
pub fn args(
    s: &SmokeSpec,
    a: &DeviceBuffer<f16>,
    b: &DeviceBuffer<f16>,
    d: &DeviceBuffer<f32>,
) -> ConvArgs {
    ConvArgs {
        x: a.device_addr(),
        w: b.device_addr(),
        dy: d.device_addr(),
        abi: ConvArgs::ABI,
        gemm: GemmPart { m: s.m as u32, n: s.n as u32, k: s.k as u32, ..GemmPart::default() },
        g: 1,
        ..ConvArgs::default()
    }
}

/// What a smoke run found.
#[derive(Clone, Debug)]
pub struct SmokeReport {
    /// What ran.
    pub spec: SmokeSpec,
    /// Largest |device - CPU| over D.
    pub max_abs_err: f32,
    /// Elements of D that are NaN (left unwritten: the output is NaN-poisoned).
    pub nan_count: usize,
    /// Device time of the launch, milliseconds (emulator: wall time).
    pub ms: f32,
}

impl SmokeReport {
    /// Tolerance on [`SmokeReport::max_abs_err`]: inputs are in [-1, 1] and f16
    /// products are exact in f32, so only the summation order differs.
    pub const TOLERANCE: f32 = 1e-3;

    /// Whether the result matches the CPU product.
    pub fn passed(&self) -> bool {
        self.nan_count == 0 && self.max_abs_err <= Self::TOLERANCE
    }
}

/// A small deterministic generator (no dependency).
fn values(seed: u64, n: usize) -> Vec<f16> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            // Multiples of 1/256 in [-1, 1): exact in f16.
            f16::from_f32(((s >> 40) % 512) as f32 / 256.0 - 1.0)
        })
        .collect()
}

/// `D = A * B` on the CPU, f32 accumulation.
pub fn cpu_product(a: &[f16], b: &[f16], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut d = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            d[i * n + j] = (0..k)
                .map(|kk| a[i * k + kk].to_f32() * b[kk * n + j].to_f32())
                .sum();
        }
    }
    d
}

/// Runs the device's smoke kernel once on random data and compares with the CPU.
pub fn run(dev: &Device, seed: u64) -> Result<SmokeReport> {
    let s = spec(dev.family());
    let module = dev.load_module()?;
    let kernel = module.kernel(s.kernel)?;
    let ha = values(seed, s.m * s.k);
    let hb = values(seed + 1, s.k * s.n);
    let a = dev.upload(&ha)?;
    let b = dev.upload(&hb)?;
    let d = dev.alloc::<f32>(s.m * s.n)?;
    d.fill_nan()?;
    let block = args(&s, &a, &b, &d);
    // SAFETY: `block` points the smoke kernel at `a` (m x k f16), `b` (k x n f16)
    // and `d` (m x n f32), allocated above with exactly those lengths and alive
    // until this function returns after `synchronize`; `d`, the one written,
    // is its own allocation; `spec` takes the grid (one workgroup of one tile)
    // and the m, n, k of `block` from the same instance.
    let ((), ms) = dev.time(|| unsafe { dev.launch(&kernel, s.grid, s.block, s.lds_bytes, &block) })?;
    dev.synchronize()?;
    let got = d.download()?;
    let want = cpu_product(&ha, &hb, s.m, s.n, s.k);
    let nan_count = got.iter().filter(|v| v.is_nan()).count();
    let max_abs_err = got
        .iter()
        .zip(&want)
        .filter(|(g, _)| !g.is_nan())
        .map(|(g, w)| (g - w).abs())
        .fold(0f32, f32::max);
    Ok(SmokeReport {
        spec: s,
        max_abs_err,
        nan_count,
        ms,
    })
}
