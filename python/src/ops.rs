//! The module's two operations on DLPack tensors: argument checks,
//! planning (through the process-wide [`PlanCache`]), binding memory, and
//! the launch on the caller's stream.

use crate::dlpack::{self, Tensor};
use crate::epilogue;
use crate::errors;
use crate::layout;
use crate::memory::{Ctx, Mem};
use crate::problem::{self, ConvArgs};
use convgrad::ops::bwd_data::{BwdDataConfig, BwdDataOp, BwdDataTensors, DLayout};
use convgrad::ops::bwd_weight::{BwdWeightConfig, BwdWeightOp, BwdWeightTensors, SplitK};
use convgrad::ops::{PlanCache, Workspace, WorkspaceContents};
use convgrad::runtime::BufRef;
use convgrad::types::{ConvLayout, ConvProblem, EpilogueOp, TensorRole, TypeConfig};
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::sync::Arc;

/// Reads `stride` / `padding` / `dilation`: an int or a sequence of ints.
fn ints(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let vals: Vec<i64> = if let Ok(v) = obj.extract::<i64>() {
        vec![v]
    } else if obj.cast::<PyString>().is_err()
        && let Ok(v) = obj.extract::<Vec<i64>>()
    {
        v
    } else {
        return Err(errors::type_err(name, "expected an int or a sequence of ints"));
    };
    vals.into_iter()
        .map(|v| usize::try_from(v).map_err(|_| errors::value(name, format!("{v} is negative"))))
        .collect()
}

/// The conv arguments of a call: `stride` / `padding` / `dilation` (each an
/// int or a sequence of ints) and `groups`.
pub(crate) fn conv_args(
    stride: &Bound<'_, PyAny>,
    padding: &Bound<'_, PyAny>,
    dilation: &Bound<'_, PyAny>,
    groups: i64,
) -> PyResult<ConvArgs> {
    Ok(ConvArgs {
        stride: ints("stride", stride)?,
        padding: ints("padding", padding)?,
        dilation: ints("dilation", dilation)?,
        groups: usize::try_from(groups).map_err(|_| errors::value("groups", format!("{groups} is negative")))?,
    })
}

/// Whether an epilogue step reads a `D` tensor.
fn reads_d(op: &EpilogueOp) -> bool {
    matches!(op, EpilogueOp::Add | EpilogueOp::AddRelu | EpilogueOp::ReluMask | EpilogueOp::Bilinear(..))
}

/// conv_backward_data(dy, w, dx, stride, padding, dilation, groups, *, epilogue=None, d_tensors=None, workspace=None, stream=0)
/// --
///
/// Writes the input gradient of a grouped N-d convolution into `dx`:
/// `dx = epilogue(conv_transpose(dy, w), *d_tensors)`.
///
/// Shapes as PyTorch's: `dy` [N, G*K, *out], `w` [G*K, C, *filter], `dx`
/// [N, G*C, *in]; contiguous or channels_last (the weight contiguous or
/// channels_last; channels_last activations need a channels_last weight).
/// `workspace`: where the plan needs one (e.g. 16-bit types, G = 1, K not a
/// multiple of 8: copies of `dy` and `w` with K zero-padded), a byte tensor on the
/// tensors' device or a callable `f(nbytes) -> tensor` (called only when one
/// is needed); its contents do not matter and are overwritten. CPU tensors
/// use emulator scratch memory.
/// `stream`: the CUDA stream (integer handle) to launch on; ignored for CPU
/// tensors, which run on convgrad's emulator. Returns a description of the
/// kernel that ran.
#[pyfunction]
#[pyo3(signature = (dy, w, dx, stride, padding, dilation, groups, *, epilogue=None, d_tensors=None, workspace=None, stream=0))]
#[allow(clippy::too_many_arguments)]
pub fn conv_backward_data(
    dy: &Bound<'_, PyAny>,
    w: &Bound<'_, PyAny>,
    dx: &Bound<'_, PyAny>,
    stride: &Bound<'_, PyAny>,
    padding: &Bound<'_, PyAny>,
    dilation: &Bound<'_, PyAny>,
    groups: i64,
    epilogue: Option<&Bound<'_, PyAny>>,
    d_tensors: Option<&Bound<'_, PyAny>>,
    workspace: Option<&Bound<'_, PyAny>>,
    stream: i128,
) -> PyResult<String> {
    let stream = errors::stream_arg(stream)?;
    let args = conv_args(stride, padding, dilation, groups)?;
    let dy = dlpack::import("dy", dy, stream)?;
    let w = dlpack::import("w", w, stream)?;
    let dx = dlpack::import("dx", dx, stream)?;
    let ops = epilogue::parse(epilogue)?;
    let mut ds: Vec<Tensor> = Vec::new();
    if let Some(list) = d_tensors.filter(|o| !o.is_none()) {
        let items = list.try_iter().map_err(|_| errors::type_err("d_tensors", "expected a sequence of tensors"))?;
        for (i, t) in items.enumerate() {
            ds.push(dlpack::import(&format!("d_tensors[{i}]"), &t?, stream)?);
        }
    }
    let want_d = ops.iter().filter(|o| reads_d(o)).count();
    if want_d != ds.len() {
        return Err(errors::value(
            "d_tensors",
            format!("the epilogue {ops:?} reads {want_d} D tensor(s), {} given", ds.len()),
        ));
    }
    let mut all: Vec<&Tensor> = vec![&dy, &w, &dx];
    all.extend(ds.iter());
    problem::same_place(&all)?;
    let types = problem::types(&all)?;
    let p = problem::problem(&dx, &w, &dy, &args)?;
    let fam = layout::choose_family(&[&dy, &dx], &w)?;
    let maps: Vec<epilogue::DMap> = ds.iter().map(|d| epilogue::d_layout(d, &dx, &p, fam)).collect::<PyResult<_>>()?;
    problem::no_overlap(&dx, &[&dy, &w])?;
    // A D that overlaps dx must be dx itself (in-place accumulation).
    let mut alias = vec![false; ds.len()];
    for (i, d) in ds.iter().enumerate() {
        if d.overlaps(&dx) {
            if d.addr != dx.addr || d.shape != dx.shape || layout::orders(d) != layout::orders(&dx) {
                return Err(errors::value(&d.name, "overlaps dx without being dx itself (same memory and layout)"));
            }
            alias[i] = true;
        }
    }

    let ctx = Ctx::open(dy.place, stream, "dy")?;
    let d_layouts = maps.iter().map(|m| m.layout).collect();
    let op = plan_data(&ctx, (&dy, &w, &dx), &p, fam, types, ops, d_layouts)?;
    for ((d, m), want) in ds.iter().zip(&maps).zip(&op.plan().ds) {
        epilogue::check_strides(d, m, want)?;
    }
    // The channel-pack workspace: the caller's memory on a GPU, scratch on the emulator.
    let mut touched: Vec<&Tensor> = vec![&dy, &w, &dx];
    touched.extend(ds.iter());
    let ws = CallWorkspace::new(&ctx, workspace, op.workspace_bytes(), PACK_WORKSPACE, stream, &touched)?;

    let dy_m = ctx.bind(&dy, true, false)?;
    let w_m = ctx.bind(&w, true, false)?;
    // Loaded even when not aliased: on the emulator, elements a kernel failed
    // to write keep the caller's values (NaN poison in the tests) instead of
    // the emulator allocation's zeros.
    let dx_m = ctx.bind(&dx, true, true)?;
    let d_ms: Vec<Option<Mem>> = ds
        .iter()
        .zip(&alias)
        .map(|(d, &a)| if a { Ok(None) } else { ctx.bind(d, true, false).map(Some) })
        .collect::<PyResult<_>>()?;
    let d_refs: Vec<BufRef<'_>> = d_ms.iter().map(|m| m.as_ref().unwrap_or(&dx_m).as_ref()).collect();
    let t = BwdDataTensors { dy: dy_m.as_ref(), w: w_m.as_ref(), dx: dx_m.as_ref(), ds: &d_refs };
    op.execute_on(&ctx.stream, t, ws.get(WorkspaceContents::Unknown))
        .map_err(|e| errors::op("conv_backward_data", e))?;
    ctx.finish(&[("dx", &dx_m)])?;
    Ok(op.describe())
}

/// conv_backward_weight(x, dy, dw, stride, padding, dilation, groups, *, split_k=None, deterministic=False, workspace=None, workspace_zero_from=None, stream=0)
/// --
///
/// Writes the weight gradient of a grouped N-d convolution into `dw`.
///
/// `x` [N, G*C, *in], `dy` [N, G*K, *out], `dw` [G*K, C, *filter].
/// `workspace`: the split-K workspace, a byte tensor on the tensors' device or
/// a callable `f(nbytes) -> tensor` (called only when one is needed);
/// `workspace_zero_from`: the byte offset from which the workspace holds
/// zeros (0: all zero; `None`: unknown, convgrad zeroes what it needs).
/// Returns `(description, zero_from)`: the kernel that ran and the offset
/// from which the workspace holds zeros afterwards (pass it to the next call
/// with the same workspace; `None`: unknown). CPU tensors use emulator
/// scratch memory.
#[pyfunction]
#[pyo3(signature = (x, dy, dw, stride, padding, dilation, groups, *, split_k=None, deterministic=false, workspace=None, workspace_zero_from=None, stream=0))]
#[allow(clippy::too_many_arguments)]
pub fn conv_backward_weight(
    x: &Bound<'_, PyAny>,
    dy: &Bound<'_, PyAny>,
    dw: &Bound<'_, PyAny>,
    stride: &Bound<'_, PyAny>,
    padding: &Bound<'_, PyAny>,
    dilation: &Bound<'_, PyAny>,
    groups: i64,
    split_k: Option<i128>,
    deterministic: bool,
    workspace: Option<&Bound<'_, PyAny>>,
    workspace_zero_from: Option<i128>,
    stream: i128,
) -> PyResult<(String, Option<usize>)> {
    let (stream, split_k) = (errors::stream_arg(stream)?, errors::split_k_arg(split_k)?);
    let workspace_zero_from = errors::zero_from_arg(workspace_zero_from)?;
    let args = conv_args(stride, padding, dilation, groups)?;
    let x = dlpack::import("x", x, stream)?;
    let dy = dlpack::import("dy", dy, stream)?;
    let dw = dlpack::import("dw", dw, stream)?;
    let ctx = Ctx::open(x.place, stream, "x")?;
    let op = plan_weight(&ctx, &x, &dy, &dw, &args, split_k, deterministic)?;

    // The split-K workspace: the caller's memory on a GPU, scratch on the emulator.
    let ws = CallWorkspace::new(&ctx, workspace, op.workspace_bytes(), SPLIT_K_WORKSPACE, stream, &[&x, &dy, &dw])?;
    let before = workspace_zero_from.map_or(WorkspaceContents::Unknown, WorkspaceContents::ZeroFrom);

    let x_m = ctx.bind(&x, true, false)?;
    let dy_m = ctx.bind(&dy, true, false)?;
    let dw_m = ctx.bind(&dw, true, true)?; // loaded: see backward_data
    let t = BwdWeightTensors { x: x_m.as_ref(), dy: dy_m.as_ref(), dw: dw_m.as_ref(), ds: &[] };
    op.execute_on(&ctx.stream, t, ws.get(before)).map_err(|e| errors::op("conv_backward_weight", e))?;
    ctx.finish(&[("dw", &dw_m)])?;
    // What the caller's workspace holds now (emulator scratch is not theirs).
    let after = if ws.is_callers() { op.workspace_after(before) } else { before };
    let zero_from = match after {
        WorkspaceContents::Zeroed => Some(0),
        WorkspaceContents::ZeroFrom(n) => Some(n),
        WorkspaceContents::Unknown => None,
    };
    Ok((op.describe(), zero_from))
}

/// What the split-K workspace of backward-weight is, in errors.
const SPLIT_K_WORKSPACE: &str = "split-K workspace";
/// What backward-data's workspace is, in errors.
const PACK_WORKSPACE: &str = "workspace (channel-packed copies of dy and w)";

/// The workspace of one call, bound to its device: the caller's memory on a
/// GPU, emulator scratch for CPU tensors.
struct CallWorkspace {
    /// The caller's tensor, kept alive (its DLPack export) until the launch is queued.
    _tensor: Option<Tensor>,
    /// The memory the op takes (None where it needs none).
    mem: Option<Mem>,
    /// `mem` is the caller's memory (CUDA), not emulator scratch (false without `mem`).
    callers: bool,
}

impl CallWorkspace {
    /// The workspace of a call that needs `need` bytes (`what` the op calls
    /// it, in errors) from the argument `workspace`: None, a byte tensor, or
    /// a callable `f(nbytes) -> tensor` (called only where `need > 0`). A
    /// given tensor is checked to be contiguous, on `tensors[0]`'s device, at
    /// least `need` bytes long and to overlap none of `tensors` (all the
    /// call's tensors); a CUDA call that needs one and has none is refused.
    /// CPU tensors run on emulator scratch whatever is given.
    fn new(
        ctx: &Ctx,
        workspace: Option<&Bound<'_, PyAny>>,
        need: usize,
        what: &str,
        stream: usize,
        tensors: &[&Tensor],
    ) -> PyResult<CallWorkspace> {
        let tensor = match workspace.filter(|w| !w.is_none()) {
            Some(w) if need > 0 && w.is_callable() => Some(dlpack::import_raw("workspace", &w.call1((need,))?, stream)?),
            Some(w) if w.is_callable() => None,
            Some(w) => Some(dlpack::import_raw("workspace", w, stream)?),
            None => None,
        };
        if let Some(ws) = &tensor {
            problem::same_place(&[tensors[0], ws])?;
            if !layout::is_dense(ws, layout::Order::Contiguous) {
                return Err(errors::value("workspace", "must be a contiguous tensor"));
            }
            let got = ws.numel() * ws.elem_bytes;
            if got < need {
                return Err(errors::value(
                    "workspace",
                    format!("{got} bytes is too small: this call needs {need} bytes of {what}"),
                ));
            }
            problem::no_overlap(ws, tensors)?;
        }
        let (mem, callers) = match (&tensor, need, tensors[0].place) {
            (_, 0, _) => (None, false),
            (_, _, dlpack::Place::Cpu) => (Some(ctx.scratch(need, "workspace")?), false),
            (Some(ws), _, _) => (Some(ctx.bind(ws, false, false)?), true),
            (None, _, _) => {
                return Err(errors::value(
                    "workspace",
                    format!("this call needs {need} bytes of {what}: pass a tensor or an allocator callable"),
                ));
            }
        };
        Ok(CallWorkspace { _tensor: tensor, mem, callers })
    }

    /// Whether the op writes the caller's memory (so what it holds afterwards is theirs to track).
    fn is_callers(&self) -> bool {
        self.callers
    }

    /// The op's workspace argument; `contents`: what the caller's memory
    /// holds (emulator scratch: unknown).
    fn get(&self, contents: WorkspaceContents) -> Workspace<'_> {
        match &self.mem {
            None => Workspace::None,
            Some(m) => Workspace::raw(m.as_ref(), if self.callers { contents } else { WorkspaceContents::Unknown }),
        }
    }
}

/// Plans the weight gradient `dw` of `x` and `dy` (the checks of
/// [`conv_backward_weight`]) through the process-wide plan cache, on
/// `ctx.stream`: the stream the op is launched on (PyTorch's current stream
/// on CUDA, the emulator's stream on the CPU), where a runtime find
/// measurement (`CONVGRAD_FIND`) is queued, ordered with the caller's work.
pub(crate) fn plan_weight(
    ctx: &Ctx,
    x: &Tensor,
    dy: &Tensor,
    dw: &Tensor,
    args: &ConvArgs,
    split_k: Option<u32>,
    deterministic: bool,
) -> PyResult<Arc<BwdWeightOp>> {
    problem::same_place(&[x, dy, dw])?;
    let types = problem::types(&[x, dy, dw])?;
    let p = problem::problem(x, dw, dy, args)?;
    let fam = layout::choose_family(&[x, dy], dw)?;
    problem::no_overlap(dw, &[x, dy])?;
    let split_k = match split_k {
        None => SplitK::Auto,
        Some(0) => return Err(errors::value("split_k", "must be at least 1 (or None: chosen by convgrad)")),
        Some(n) => SplitK::Fixed(n),
    };
    let cfg = BwdWeightConfig {
        layout: fam,
        types,
        epilogue: EpilogueOp::PassThrough,
        split_k,
        deterministic,
        instance: None,
    };
    PlanCache::global()
        .bwd_weight_on(
            &ctx.stream,
            &p,
            &cfg,
            layout::desc(x, &p, fam, TensorRole::Input),
            layout::desc(dw, &p, fam, TensorRole::Weight),
            layout::desc(dy, &p, fam, TensorRole::Output),
        )
        .map_err(|e| errors::op("conv_backward_weight", e))
}

/// Plans the input gradient `dx` of `dy` and `w` (checked by the caller:
/// problem `p`, family `fam`, `types`) with the epilogue `ops` reading D
/// tensors of `d_layouts`, through the process-wide plan cache, on
/// `ctx.stream` (as [`plan_weight`]: a runtime find measurement runs there).
pub(crate) fn plan_data(
    ctx: &Ctx,
    (dy, w, dx): (&Tensor, &Tensor, &Tensor),
    p: &ConvProblem,
    fam: ConvLayout,
    types: TypeConfig,
    ops: Vec<EpilogueOp>,
    d_layouts: Vec<DLayout>,
) -> PyResult<Arc<BwdDataOp>> {
    let cfg = BwdDataConfig { layout: fam, types, epilogue: ops, d_layouts, instance: None, strip_rows: None };
    PlanCache::global()
        .bwd_data_on(
            &ctx.stream,
            p,
            &cfg,
            layout::desc(dy, p, fam, TensorRole::Output),
            layout::desc(w, p, fam, TensorRole::Weight),
            layout::desc(dx, p, fam, TensorRole::Input),
        )
        .map_err(|e| errors::op("conv_backward_data", e))
}
