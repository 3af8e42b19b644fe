//! convgrad's developer commands (`cargo xtask <command>`; the alias lives in
//! `.cargo/config.toml`):
//!
//! - `build-kernels [--arch LIST] [--release]`: device crate -> `target/kernels/<arch>/`
//!   code objects and `target/kernels/manifest.json` (see [`build`] for the pipeline);
//! - `inspect [--arch LIST] [--kernel NAME]`: the manifest as a table, matrix
//!   instructions checked in the disassembly; fails on scratch, spills, missing
//!   matrix instructions or missing kernels;
//! - `bundle-kernels [--check]`: `target/kernels` -> the checked-in bundle `host/kernels`
//!   (see [`bundle`]);
//! - `list-instances`: the kernel instance table;
//! - `verify ...`, `bench ...`, `tune ...`: see their modules;
//! - `plot --from RESULTS.json --out CHART.svg`: a chart of a `bench --json` file.
//!
//! `CONVGRAD_LOG` sets the log level (`warn` by default; `info`, `debug`,
//! or per module as `convgrad=debug`): plan choice, module loads, JIT time.
//! Progress bars draw on stderr when it is a terminal.

mod bench;
mod build;
mod bundle;
mod host_cost;
mod inspect;
mod instances;
mod networks;
mod options;
mod plot;
mod progress;
mod tune;
mod util;
mod verify;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "convgrad developer commands")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build the device crate into code objects (AMD) and PTX (NVIDIA) under target/kernels.
    BuildKernels {
        /// Architectures, comma separated: gfx90a, gfx942, gfx950, gfx1100, gfx1200, gfx1201, sm_80, sm_90 (default: all).
        #[arg(long)]
        arch: Option<String>,
        /// Optimise the linked module with `opt -O3` / `llc -O3` (default: -O2; rustc's part is
        /// opt-level 3 with fat LTO either way).
        #[arg(long)]
        release: bool,
    },
    /// Write the checked-in kernel bundle host/kernels from target/kernels (zstd; see bundle.rs).
    BundleKernels {
        /// Only check that the bundle matches target/kernels (CI, after build-kernels).
        #[arg(long)]
        check: bool,
    },
    /// Print the manifest as a table and check each kernel's disassembly; non-zero exit on
    /// scratch use, spills, missing matrix instructions or kernels missing from an object.
    Inspect {
        /// Architectures (default: every one in the manifest).
        #[arg(long)]
        arch: Option<String>,
        /// Also print the disassembly (AMD) or PTX body (NVIDIA) of this kernel.
        #[arg(long)]
        kernel: Option<String>,
    },
    /// Print the table of kernel instances (INSTANCES).
    ListInstances,
    /// Check kernels against the CPU reference (arguments are passed through).
    #[command(disable_help_flag = true)]
    Verify {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Benchmark kernels (arguments are passed through).
    #[command(disable_help_flag = true)]
    Bench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Measure the kernel choice per shape and write the tuning table (arguments are passed through).
    #[command(disable_help_flag = true)]
    Tune {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Chart a `bench --json` file as SVG: the ratio per layer and the geomean per network (or kind).
    Plot {
        /// The `bench --json` file.
        #[arg(long)]
        from: std::path::PathBuf,
        /// The SVG to write.
        #[arg(long)]
        out: std::path::PathBuf,
    },
}

fn main() {
    progress::init_logger();
    // Errors as one readable chain of causes, never a backtrace.
    if let Err(e) = run() {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}

fn run() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::BuildKernels { arch, release } => bundle::noticing_new_kernel_dir(|| {
            build::run(&build::BuildOpts {
                archs: build::parse_archs(arch.as_deref())?,
                release,
            })
        }),
        Cmd::BundleKernels { check } => bundle::run(check),
        Cmd::Inspect { arch, kernel } => inspect::run(arch.as_deref(), kernel.as_deref()),
        Cmd::ListInstances => {
            instances::run();
            Ok(())
        }
        Cmd::Verify { args } => verify::run(&args),
        Cmd::Bench { args } => bench::run(&args),
        Cmd::Tune { args } => tune::run(&args),
        Cmd::Plot { from, out } => plot::from_file(&from, &out),
    }
}
