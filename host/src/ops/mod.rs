//! The user-facing operations: each turns a problem into kernel launches.
//!
//! - [`bwd_weight`]: grouped backward-weight (split-K, fused Scale/Bilinear).
//! - [`bwd_data`]: grouped backward-data (stride-residue slices in one
//!   launch, fused multi-D epilogue).

pub mod bwd_data;
pub mod bwd_weight;
mod bwd_weight_depthwise;
mod cache;
mod fold;
mod prepared;
pub mod select;
pub mod tuned;
mod unfold;

pub use cache::PlanCache;
pub use prepared::{Workspace, WorkspaceContents};

use convgrad_types::DescError;
use convgrad_types::instance::{Family, Instance};

/// Errors of planning and running an operation.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// A descriptor is invalid or outside the kernels' limits (the field is named).
    #[error(transparent)]
    Desc(#[from] DescError),
    /// convgrad has no kernel for the request (a caller may fall back).
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// Buffers, streams or workspaces that do not fit the plan.
    #[error("{0}")]
    Usage(String),
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] crate::runtime::RuntimeError),
}

impl OpError {
    /// Whether convgrad cannot run this request at all (no kernel, an option
    /// or size outside the kernels' limits), as opposed to bad input or a
    /// runtime failure: the caller may run it elsewhere (cuDNN, MIOpen, ...).
    pub fn is_unsupported(&self) -> bool {
        match self {
            OpError::Unsupported(_) => true,
            OpError::Desc(d) => Unsupported::limit(d),
            _ => false,
        }
    }
}

/// Why convgrad cannot run a request; see [`bwd_weight::supports`] and
/// [`bwd_data::supports`].
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Unsupported {
    /// The architecture has no kernels.
    #[error("unsupported architecture `{arch}`; convgrad has kernels for {}", crate::runtime::SUPPORTED_ARCHS.join(", "))]
    Arch {
        /// What was asked for.
        arch: String,
    },
    /// The problem or an option of it is invalid or outside the kernels' limits.
    #[error(transparent)]
    Problem(DescError),
    /// The configuration contradicts itself.
    #[error("{0}")]
    Config(String),
    /// No kernel of the operation serves these data types on this family.
    #[error("no {op} kernel for {types} on {family:?} ({op} supports {served})")]
    NoKernel {
        /// `bwd-weight` or `bwd-data`.
        op: &'static str,
        /// The data types, e.g. `f16`.
        types: &'static str,
        /// The kernel family.
        family: Family,
        /// The data types the operation serves.
        served: &'static str,
    },
    /// A forced instance that does not exist or does not fit the problem.
    #[error("--instance {name} {why}")]
    Instance {
        /// The instance asked for.
        name: String,
        /// Why it cannot run.
        why: String,
    },
}

impl Unsupported {
    /// Descriptor errors that are limits of the kernels rather than invalid input.
    fn limit(d: &DescError) -> bool {
        matches!(d, DescError::Unsupported { .. } | DescError::TooLarge { .. } | DescError::IndexRange { .. })
    }
    /// The reason a planning error gives.
    pub(crate) fn from_plan(e: OpError) -> Unsupported {
        match e {
            OpError::Unsupported(u) => u,
            OpError::Desc(d) => Unsupported::Problem(d),
            other => Unsupported::Config(other.to_string()),
        }
    }
    /// The family of an architecture name (`gfx942`, `sm_90`, ...).
    pub(crate) fn family_of(arch: &str) -> Result<Family, Unsupported> {
        crate::runtime::SUPPORTED_ARCHS
            .contains(&arch)
            .then(|| Family::of_arch(arch))
            .flatten()
            .ok_or_else(|| Unsupported::Arch { arch: arch.to_string() })
    }
}

/// A forced instance that does not apply.
/// The argument block's problem header for `p` (abi, sizes, strides, pads);
/// tensor strides and every kernel family's part are left to the caller.
pub(crate) fn problem_args(p: &convgrad_types::ConvProblem) -> convgrad_types::params::ConvArgs {
    let u3 = |v: [usize; 3]| v.map(|x| x as u32);
    convgrad_types::params::ConvArgs {
        abi: convgrad_types::params::ConvArgs::ABI,
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

pub(crate) fn forced_mismatch(name: &str, why: String) -> OpError {
    OpError::Unsupported(Unsupported::Instance { name: name.to_string(), why })
}

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
        const MAX: [u64; 3] = [i32::MAX as u64, 65535, 65535];
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

/// Whether `vw` consecutive elements along canonical `axis` of `d`, from any
/// multiple of `vw`, form one aligned vector: unit stride there, a length
/// that `vw` divides, and every other stride of an axis longer than 1 a
/// multiple of `vw` (device buffers are at least 16-byte aligned).
pub(crate) fn lane_axis(d: &convgrad_types::TensorDesc, axis: usize, vw: usize) -> bool {
    d.strides[axis] == 1
        && d.lengths[axis].is_multiple_of(vw)
        && (0..d.lengths.len()).all(|i| i == axis || d.lengths[i] == 1 || d.strides[i].is_multiple_of(vw))
}

/// The direct kernels' channel-vector mode (`convgrad_types::params::vec_mode`
/// bits) and lane count for a problem whose activations are `x` (dx or x) and
/// output gradient `dy` (elements of `bytes`): depthwise problems
/// (`C = K = 1`) take lanes along the groups of `x` and `dy`, others along the
/// channels of `x` (`C` a multiple of the lanes); the kernels' `LANES` lanes
/// (at most a 16-byte vector) first, then half as many. `None`: the layout
/// has no such run (the scalar path runs).
pub(crate) fn direct_vec_mode(
    p: &convgrad_types::ConvProblem,
    bytes: usize,
    x: &convgrad_types::TensorDesc,
    dy: &convgrad_types::TensorDesc,
) -> Option<(u32, usize)> {
    use convgrad_types::params::vec_mode;
    let lanes = (16 / bytes).min(convgrad_types::contract::bwd_data_direct::LANES);
    for (vw, half) in [(lanes, 0), (lanes / 2, vec_mode::HALF)] {
        if p.c == 1 && p.k == 1 && lane_axis(x, 0, vw) && lane_axis(dy, 0, vw) {
            return Some((vec_mode::ON | vec_mode::DEPTHWISE | half, vw));
        }
        if lane_axis(x, 2, vw) {
            return Some((vec_mode::ON | half, vw));
        }
    }
    None
}

/// Checks that a buffer of `bytes` covers tensor `name` (`desc`, elements of
/// `t`): O(1), no allocation (the descriptor was validated when planned).
pub(crate) fn check_buffer(
    name: &'static str,
    desc: &convgrad_types::TensorDesc,
    t: convgrad_types::DType,
    bytes: usize,
) -> Result<(), OpError> {
    let span = desc.checked_span(name)?;
    let want = span.checked_mul(t.bytes() as u64).ok_or(DescError::Overflow { field: "tensor bytes" })?;
    if (bytes as u64) < want {
        return Err(OpError::Desc(DescError::BufferLength {
            tensor: name,
            expected: span,
            actual: (bytes / t.bytes()) as u64,
        }));
    }
    Ok(())
}

/// One tensor's descriptor to validate at plan time: name, descriptor, role,
/// whether the call writes it.
pub(crate) type DescCheck<'a> = (&'static str, &'a convgrad_types::TensorDesc, convgrad_types::TensorRole, bool);

/// Validates each descriptor against the problem `p` (see
/// [`TensorDesc::validate_for`](convgrad_types::TensorDesc::validate_for)):
/// lengths, checked span within 32-bit offsets, no aliasing in written tensors.
pub(crate) fn validate_descs(p: &convgrad_types::ConvProblem, descs: &[DescCheck<'_>]) -> Result<(), OpError> {
    for &(name, desc, role, written) in descs {
        desc.validate_for(p, role, name, written)?;
    }
    Ok(())
}

/// The bytes `[start, end)` a call touches in one buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Extent {
    pub name: &'static str,
    pub start: u64,
    pub end: u64,
}

impl Extent {
    /// `bytes` bytes at `addr` (saturating: an extent never wraps).
    pub(crate) fn new(name: &'static str, addr: u64, bytes: u64) -> Extent {
        Extent { name, start: addr, end: addr.saturating_add(bytes) }
    }
    fn overlaps(&self, o: &Extent) -> bool {
        self.start < o.end && o.start < self.end
    }
}

/// Errs where the `written` extent overlaps any of `others` (O(n), no
/// allocation). An empty extent overlaps nothing.
pub(crate) fn check_disjoint(written: &Extent, others: &[Extent]) -> Result<(), OpError> {
    match others.iter().find(|o| written.overlaps(o)) {
        Some(o) => Err(OpError::Desc(DescError::Overlap { written: written.name, other: o.name })),
        None => Ok(()),
    }
}

/// Names of the `D` tensors, by index.
pub const D_NAMES: [&str; convgrad_types::epilogue::MAX_D] = ["d0", "d1", "d2", "d3"];

/// Checks that `given` D tensors were passed for an epilogue reading `want`.
pub(crate) fn check_d_count(want: usize, given: usize) -> Result<(), OpError> {
    if want != given {
        return Err(OpError::Usage(format!("the epilogue reads {want} D tensor(s), {given} given")));
    }
    Ok(())
}

/// Checks the `D` buffers against their descriptors (elements of `t`) and
/// collects their device addresses into `ds`.
pub(crate) fn collect_ds<T: bytemuck::Pod>(
    descs: &[convgrad_types::TensorDesc],
    t: convgrad_types::DType,
    d: &[&crate::runtime::DeviceBuffer<T>],
    ds: &mut Vec<u64>,
) -> Result<(), OpError> {
    check_d_count(descs.len(), d.len())?;
    ds.clear();
    for (i, (b, desc)) in d.iter().zip(descs).enumerate() {
        check_buffer(D_NAMES[i], desc, t, b.bytes())?;
        ds.push(b.device_addr());
    }
    Ok(())
}
