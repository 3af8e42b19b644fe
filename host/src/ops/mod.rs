//! The user-facing operations: each turns a problem into kernel launches.
//!
//! - [`bwd_weight`]: grouped backward-weight (split-K, fused Scale/Bilinear).
//! - [`bwd_data`]: grouped backward-data (stride-residue slices in one
//!   launch, fused multi-D epilogue).

pub mod bwd_data;
pub mod bwd_weight;

use convgrad_types::DescError;
use convgrad_types::instance::Instance;

/// Errors of planning and running an operation.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// A descriptor is invalid.
    #[error(transparent)]
    Desc(#[from] DescError),
    /// No or a wrong instance.
    #[error("{0}")]
    Instance(String),
    /// Buffers that do not fit the plan.
    #[error("{0}")]
    Usage(String),
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] crate::runtime::RuntimeError),
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


/// Whether `vw` consecutive elements along canonical `axis` of `d`, from any
/// multiple of `vw`, form one aligned vector: unit stride there, a length
/// that `vw` divides, and every other stride of an axis longer than 1 a
/// multiple of `vw` (device buffers are at least 16-byte aligned).
pub(crate) fn lane_axis(d: &convgrad_types::TensorDesc, axis: usize, vw: usize) -> bool {
    d.strides[axis] == 1
        && d.lengths[axis].is_multiple_of(vw)
        && (0..d.lengths.len()).all(|i| i == axis || d.lengths[i] == 1 || d.strides[i].is_multiple_of(vw))
}

/// Whether a tile `tile_len` wide along a per-group channel count `len` may
/// be chosen: tiles under 64 are only taken where the channels fit one of
/// them (per useful channel they are slower; timings at the callers).
pub(crate) fn narrow_tile_fits(len: u64, tile_len: u32) -> bool {
    tile_len >= 64 || len <= tile_len as u64
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
    let lanes = (16 / bytes).min(convgrad_device::conv::bwd_data_direct::LANES);
    for (vw, half) in [(lanes, 0), (lanes / 2, vec_mode::HALF)] {
        if p.c == 1 && p.k == 1 && lane_axis(x, 0, vw) && lane_axis(dy, 0, vw) {
            return Some((vec_mode::ON | vec_mode::DW | half, vw));
        }
        if lane_axis(x, 2, vw) {
            return Some((vec_mode::ON | half, vw));
        }
    }
    None
}

/// Checks that a buffer of `bytes` covers tensor `name` (`desc`, elements of `t`).
pub(crate) fn check_buffer(
    name: &'static str,
    desc: &convgrad_types::TensorDesc,
    t: convgrad_types::DType,
    bytes: usize,
) -> Result<(), OpError> {
    let want = desc.span() as usize * t.bytes();
    if bytes < want {
        return Err(OpError::Desc(DescError::BufferLength {
            tensor: name,
            expected: (want / t.bytes()) as u64,
            actual: (bytes / t.bytes()) as u64,
        }));
    }
    Ok(())
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
