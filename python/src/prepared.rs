//! The prepared backward of one convolution layer: the path
//! `ConvFunction.backward` takes on CUDA tensors every training step.
//!
//! A DLPack import, the layout checks and the plan-cache lookup cost tens of
//! microseconds of host time per tensor and call; a training step calls the
//! same layers with the same shapes and strides every time. So the layer is
//! planned once from sample tensors (every check of the DLPack path, both
//! ops), and each step passes only data addresses, which are checked against
//! the driver's allocation and the plan's spans before the launch.

use crate::dlpack::{self, Place, Tensor};
use crate::errors;
use crate::layout;
use crate::memory::Ctx;
use crate::ops::{conv_args, plan_data, plan_weight};
use crate::problem;
use convgrad::ops::bwd_data::{BwdDataOp, BwdDataTensors};
use convgrad::ops::bwd_weight::{BwdWeightOp, BwdWeightTensors};
use convgrad::ops::{Workspace, WorkspaceContents};
use convgrad::runtime::{Device, DeviceBuffer};
use pyo3::prelude::*;
use std::sync::Arc;

/// The tensors of a layer's backward, in the order `run` takes their addresses.
const NAMES: [&str; 5] = ["x", "w", "dy", "dx", "dw"];

/// PreparedBackward(x, w, dy, dx, dw, stride, padding, dilation, groups, *, split_k=None, deterministic=False, stream=0)
/// --
///
/// The backward of one CUDA convolution layer, planned once from sample
/// tensors: `dx` (or None: no input gradient) and `dw` (or None: no weight
/// gradient) are the outputs' layouts, `x`, `w`, `dy` the inputs', with the
/// checks of `conv_backward_data` / `conv_backward_weight`.
/// `run(...)` then launches both on tensors with the same shapes, dtypes and
/// strides given by their data addresses.
#[pyclass(frozen, module = "convgrad_torch._native")]
pub struct PreparedBackward {
    dev: Device,
    data: Option<Arc<BwdDataOp>>,
    weight: Option<Arc<BwdWeightOp>>,
    /// Bytes each tensor spans from its data address, in the order of `NAMES`
    /// (0 for an output that is not computed).
    spans: [usize; 5],
}

#[pymethods]
impl PreparedBackward {
    #[new]
    #[pyo3(signature = (x, w, dy, dx, dw, stride, padding, dilation, groups, *, split_k=None, deterministic=false, stream=0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        x: &Bound<'_, PyAny>,
        w: &Bound<'_, PyAny>,
        dy: &Bound<'_, PyAny>,
        dx: Option<&Bound<'_, PyAny>>,
        dw: Option<&Bound<'_, PyAny>>,
        stride: &Bound<'_, PyAny>,
        padding: &Bound<'_, PyAny>,
        dilation: &Bound<'_, PyAny>,
        groups: i64,
        split_k: Option<i128>,
        deterministic: bool,
        stream: i128,
    ) -> PyResult<Self> {
        let (stream, split_k) = (errors::stream_arg(stream)?, errors::split_k_arg(split_k)?);
        let args = conv_args(stride, padding, dilation, groups)?;
        let x = dlpack::import("x", x, stream)?;
        let w = dlpack::import("w", w, stream)?;
        let dy = dlpack::import("dy", dy, stream)?;
        let dx = dx.filter(|t| !t.is_none()).map(|t| dlpack::import("dx", t, stream)).transpose()?;
        let dw = dw.filter(|t| !t.is_none()).map(|t| dlpack::import("dw", t, stream)).transpose()?;
        if dx.is_none() && dw.is_none() {
            return Err(errors::value("dx", "and dw are both None: nothing to compute"));
        }
        let mut all: Vec<&Tensor> = vec![&x, &w, &dy];
        all.extend(dx.iter().chain(dw.iter()));
        problem::same_place(&all)?;
        if x.place == Place::Cpu {
            return Err(errors::value(
                "x",
                "PreparedBackward runs CUDA tensors; CPU tensors take conv_backward_data / conv_backward_weight",
            ));
        }
        let ctx = Ctx::open(x.place, stream, "x")?;
        let data = match &dx {
            Some(dx) => {
                let types = problem::types(&[&dy, &w, dx])?;
                let p = problem::problem(dx, &w, &dy, &args)?;
                let fam = layout::choose_family(&[&dy, dx, &x], &w)?;
                problem::no_overlap(dx, &[&dy, &w, &x])?;
                Some(plan_data(&ctx, (&dy, &w, dx), &p, fam, types, Vec::new(), Vec::new())?)
            }
            None => None,
        };
        let weight = match &dw {
            Some(dw) => {
                if let Some(dx) = &dx {
                    problem::no_overlap(dw, &[dx])?;
                }
                Some(plan_weight(&ctx, &x, &dy, dw, &args, split_k, deterministic)?)
            }
            None => None,
        };
        let span = |t: Option<&Tensor>| t.map_or(0, Tensor::span_bytes);
        let spans = [span(Some(&x)), span(Some(&w)), span(Some(&dy)), span(dx.as_ref()), span(dw.as_ref())];
        Ok(PreparedBackward { dev: ctx.dev, data, weight, spans })
    }

    /// Bytes of workspace each `run` needs (0: none): backward-data's region
    /// (its channel-packed copies of dy and w, rounded up to 16 bytes) first,
    /// then backward-weight's split-K workspace.
    #[getter]
    fn workspace_bytes(&self) -> usize {
        let (_, at, weight_need) = self.workspace_regions();
        at + weight_need
    }

    /// describe()
    /// --
    ///
    /// The kernels that run, one line per op.
    fn describe(&self) -> String {
        let d = self.data.iter().map(|op| format!("dx: {}", op.describe()));
        let w = self.weight.iter().map(|op| format!("dw: {}", op.describe()));
        d.chain(w).collect::<Vec<_>>().join("\n")
    }

    /// run(x, w, dy, dx, dw, workspace, workspace_bytes, workspace_zero_from, stream)
    /// --
    ///
    /// Queues the layer's backward on `stream` (a CUstream of the tensors'
    /// device as an integer): the data addresses of tensors with the sample
    /// tensors' shapes, dtypes and strides (0 for an output that is not
    /// computed, and for `x` / `w` where only `dw` / `dx` is). `workspace`:
    /// the address of `workspace_bytes` bytes (16-byte aligned, at least the
    /// `workspace_bytes` property) that hold zeros from byte
    /// `workspace_zero_from` on (`None`: unknown). Backward-data uses its
    /// first bytes (its channel-packed copies; any contents, overwritten),
    /// backward-weight the rest from there (rounded up to 16 bytes) on. Every
    /// address is checked to lie, with its tensor's span, inside one
    /// allocation of the device, outputs and the workspace not to overlap
    /// other tensors. Returns the offset from which the workspace holds
    /// zeros afterwards (`None`: unknown), past backward-data's region.
    #[pyo3(signature = (x, w, dy, dx, dw, workspace, workspace_bytes, workspace_zero_from, stream))]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        x: i128,
        w: i128,
        dy: i128,
        dx: i128,
        dw: i128,
        workspace: i128,
        workspace_bytes: i128,
        workspace_zero_from: Option<i128>,
        stream: i128,
    ) -> PyResult<Option<usize>> {
        let stream = errors::stream_arg(stream)?;
        let workspace_zero_from = errors::zero_from_arg(workspace_zero_from)?;
        let addr = |name: &str, v: i128| errors::int_arg::<u64>(name, v, "a data address, a non-negative int (0 where unused)");
        let addrs = [addr("x", x)?, addr("w", w)?, addr("dy", dy)?, addr("dx", dx)?, addr("dw", dw)?];
        let workspace = addr("workspace", workspace)?;
        let workspace_bytes: usize = errors::int_arg("workspace_bytes", workspace_bytes, "a byte count, a non-negative int")?;
        let used = [self.weight.is_some(), self.data.is_some(), true, self.data.is_some(), self.weight.is_some()];
        let mut mems: [Option<DeviceBuffer<u8>>; 5] = Default::default();
        for i in 0..5 {
            if used[i] {
                mems[i] = Some(self.wrap(NAMES[i], addrs[i], self.spans[i])?);
            }
        }
        // Outputs (3, 4) overlap no input (0..3) and not each other.
        let range = |i: usize| (addrs[i], addrs[i] + self.spans[i] as u64);
        for out in [3, 4] {
            for other in 0..out {
                let ((a0, a1), (b0, b1)) = (range(out), range(other));
                if used[out] && used[other] && a0 < b1 && b0 < a1 {
                    return Err(errors::value(NAMES[out], format!("overlaps {} in memory", NAMES[other])));
                }
            }
        }
        // The workspace: backward-data's region [0, data_need), then
        // backward-weight's from `at` (data_need rounded up to 16 bytes) to
        // the end of the caller's bytes; checked before anything is queued.
        let (data_need, at, weight_need) = self.workspace_regions();
        let need = at + weight_need;
        let end = workspace.saturating_add(workspace_bytes as u64);
        if need > 0 {
            if workspace_bytes < need {
                return Err(errors::value(
                    "workspace",
                    format!(
                        "{workspace_bytes} bytes is too small: this call needs {need} bytes of workspace \
                         (PreparedBackward.workspace_bytes)"
                    ),
                ));
            }
            for (i, name) in NAMES.iter().enumerate().filter(|&(i, _)| used[i]) {
                let (b0, b1) = range(i);
                if workspace < b1 && b0 < end {
                    return Err(errors::value("workspace", format!("overlaps {name} in memory")));
                }
            }
        }
        let data_ws = (data_need > 0).then(|| self.wrap("workspace", workspace, data_need)).transpose()?;
        let weight_ws = (weight_need > 0)
            .then(|| self.wrap("workspace", workspace.saturating_add(at as u64), workspace_bytes - at))
            .transpose()?;
        // SAFETY: the Python layer passes PyTorch's current stream of the
        // tensors' device (a live CUstream of its primary context); it
        // outlives this call, the only use.
        let s = unsafe { self.dev.wrap_stream(stream as *mut std::ffi::c_void) }.map_err(|e| errors::runtime("stream", e))?;
        let m = |i: usize| mems[i].as_ref().map(|b| b.as_buf_ref());
        if let (Some(op), Some(dy), Some(w), Some(dx)) = (&self.data, m(2), m(1), m(3)) {
            let ws = match &data_ws {
                Some(b) => Workspace::raw(b, WorkspaceContents::Unknown),
                None => Workspace::None,
            };
            op.execute_on(&s, BwdDataTensors { dy, w, dx, ds: &[] }, ws)
                .map_err(|e| errors::op("conv_backward_data", e))?;
        }
        // Backward-weight's region holds zeros from `workspace_zero_from - at`
        // on (all of it where the caller's zeros start inside data's region).
        let mut after =
            workspace_zero_from.map_or(WorkspaceContents::Unknown, |z| WorkspaceContents::ZeroFrom(z.saturating_sub(at)));
        if let (Some(op), Some(x), Some(dy), Some(dw)) = (&self.weight, m(0), m(2), m(4)) {
            let before = after;
            let ws = match &weight_ws {
                Some(b) => Workspace::raw(b, before),
                None => Workspace::None,
            };
            op.execute_on(&s, BwdWeightTensors { x, dy, dw, ds: &[] }, ws)
                .map_err(|e| errors::op("conv_backward_weight", e))?;
            after = op.workspace_after(before);
        }
        // Back to offsets in the caller's bytes: data's region holds its copies.
        let after = match after {
            WorkspaceContents::Zeroed => Some(at),
            WorkspaceContents::ZeroFrom(n) => Some(at + n),
            WorkspaceContents::Unknown => None,
        };
        Ok(after)
    }
}

impl PreparedBackward {
    /// The workspace layout of a `run`: the bytes backward-data needs at its
    /// start, where backward-weight's region starts (that rounded up to 16
    /// bytes; 0 where backward-data needs none) and the bytes
    /// backward-weight needs there.
    fn workspace_regions(&self) -> (usize, usize, usize) {
        let data_need = self.data.as_ref().map_or(0, |op| op.workspace_bytes());
        let weight_need = self.weight.as_ref().map_or(0, |op| op.workspace_bytes());
        (data_need, data_need.next_multiple_of(16), weight_need)
    }

    /// The caller's `bytes` at `addr` (argument `name`), checked to be 16-byte
    /// aligned and inside one allocation of the device.
    fn wrap(&self, name: &str, addr: u64, bytes: usize) -> PyResult<DeviceBuffer<u8>> {
        if !addr.is_multiple_of(16) {
            return Err(errors::value(
                name,
                format!("data address {addr:#x} is not 16-byte aligned; convgrad's kernels load 16-byte vectors"),
            ));
        }
        // SAFETY: the range is checked against the driver's allocation table
        // (all `bytes` inside one live allocation of this device); the Python
        // layer passes addresses of tensors it holds for the whole call, and
        // PyTorch's caching allocator orders any reuse of that memory after
        // the work queued on the same stream.
        unsafe { self.dev.wrap_foreign::<u8>(addr, bytes) }.map_err(|e| errors::runtime(name, e))
    }
}
