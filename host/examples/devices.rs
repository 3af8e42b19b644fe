//! Opens a device, says which one and why, and runs the smoke kernel (one
//! matrix instruction through LDS and a barrier) against a CPU product.
//!
//! ```text
//! cargo run -p convgrad --example devices                      # Auto: HIP, CUDA, else the emulator
//! cargo run -p convgrad --example devices -- --backend emu --emu-arch gfx1100
//! cargo run -p convgrad --example devices -- --backend cuda --device 1
//! cargo run -p convgrad --example devices --features hip       # with AMD GPU support
//! ```
//!
//! It runs as-is on a machine without a GPU (on the emulator). On a GPU the
//! kernels must have been built first (`cargo xtask build-kernels`), so that
//! the code object for the device's architecture is embedded. The exit status
//! is non-zero when the smoke result does not match.

use convgrad::runtime::{Backend, Device, smoke};
use std::process::ExitCode;

fn usage() -> ! {
    eprintln!(
        "usage: devices [--backend auto|hip|cuda|emu] [--emu-arch gfx90a|gfx942|gfx1100|sm_80|sm_90] [--device N]"
    );
    std::process::exit(2)
}

fn main() -> ExitCode {
    let mut backend = "auto".to_string();
    let mut emu_arch = None;
    let mut index = 0usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--backend" => backend = value(),
            "--emu-arch" => emu_arch = Some(value()),
            "--device" => index = value().parse().unwrap_or_else(|_| usage()),
            "-h" | "--help" => usage(),
            _ => usage(),
        }
    }
    let backend = match Backend::parse(&backend, emu_arch.as_deref()) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let dev = match Device::open(backend, index) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: cannot open {backend} device {index}: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("selection:     {}", dev.selection_note());
    println!("backend:       {}", dev.backend_kind());
    println!("device:        {}", dev.name());
    println!(
        "architecture:  {} ({:?} family, wave {})",
        dev.arch(),
        dev.family(),
        dev.wave_size()
    );
    println!(
        "memory:        {:.1} GiB",
        dev.memory_bytes() as f64 / (1u64 << 30) as f64
    );
    println!("compute units: {}", dev.compute_units());
    println!(
        "max LDS:       {} KiB per workgroup",
        dev.max_lds_bytes() / 1024
    );
    match smoke::run(&dev, 1) {
        Ok(r) => {
            let s = r.spec;
            println!(
                "smoke:         {} ({}x{}x{}, block {}, {} B LDS): max |err| {:.3e}, {} unwritten, {:.3} ms -> {}",
                s.kernel,
                s.m,
                s.n,
                s.k,
                s.block,
                s.lds_bytes,
                r.max_abs_err,
                r.nan_count,
                r.ms,
                if r.passed() { "ok" } else { "MISMATCH" }
            );
            if r.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("error: smoke kernel: {e}");
            ExitCode::FAILURE
        }
    }
}
