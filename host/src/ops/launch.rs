//! A kernel launch ([`LaunchSpec`]) and the argument block's problem header
//! that every kernel family starts from. A leaf.

use convgrad_types::instance::Instance;
use convgrad_types::params::ConvArgs;
use convgrad_types::{ConvProblem, DescError};

/// Largest grid y or z of a launch (CUDA and HIP alike).
pub(crate) const GRID_Z: u64 = 65535;

/// A launch of one kernel.
#[derive(Clone, Copy, Debug)]
pub struct LaunchSpec {
    /// Instance.
    pub instance: &'static Instance,
    /// Grid.
    pub grid: [u32; 3],
    /// Threads per workgroup.
    pub block: u32,
    /// LDS bytes.
    pub lds_bytes: u32,
}

impl LaunchSpec {
    /// Checks the grid against what CUDA and HIP launch: every dimension at
    /// least 1, x at most 2^31 - 1 (and its work-items, x times the
    /// workgroup's threads, within 32 bits), y and z at most 65535. A plan
    /// that would launch outside these is refused by name, not at launch.
    pub fn check_grid(&self) -> Result<(), DescError> {
        const NAMES: [&str; 3] = ["launch grid x", "launch grid y", "launch grid z"];
        const MAX: [u64; 3] = [i32::MAX as u64, GRID_Z, GRID_Z];
        for ((field, max), v) in NAMES.into_iter().zip(MAX).zip(self.grid.map(u64::from)) {
            if v == 0 {
                return Err(DescError::TooSmall { field, value: 0, min: 1 });
            }
            if v > max {
                return Err(DescError::TooLarge { field, value: v, max });
            }
        }
        let items = self.grid[0] as u64 * self.block as u64;
        if items > u32::MAX as u64 {
            let field = "launch work-items along x (grid x * threads per workgroup)";
            return Err(DescError::TooLarge { field, value: items, max: u32::MAX as u64 });
        }
        Ok(())
    }
}

/// The argument block's problem header for `p` (abi, sizes, strides, pads);
/// tensor strides and every kernel family's part are left to the caller.
pub(crate) fn problem_args(p: &ConvProblem) -> ConvArgs {
    let u3 = |v: [usize; 3]| v.map(|x| x as u32);
    ConvArgs {
        abi: ConvArgs::ABI,
        g: p.g as u32,
        n: p.n as u32,
        c: p.c as u32,
        k: p.k as u32,
        input: u3(p.input),
        output: u3(p.output()),
        filter: u3(p.filter),
        stride: u3(p.strides),
        dilation: u3(p.dilations),
        lpad: u3(p.lpads),
        ..Default::default()
    }
}
