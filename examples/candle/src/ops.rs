//! Convolution backward passes of convgrad as candle custom ops.
//!
//! An NHWC 2-D convolution with `G` groups: input `x` `[N, H, W, G*C]`,
//! weight `w` `[G*K, Y, X, C]`, output gradient `dy` `[N, Ho, Wo, G*K]`
//! (convgrad's `NhwgcGkyxcNhwgk` layout, each tensor packed). Two
//! [`CustomOp2`]s compute the gradients:
//! - [`BwdWeight`]: `(x, dy) -> dw` `[G*K, Y, X, C]`;
//! - [`BwdData`]: `(dy, w) -> dx` `[N, H, W, G*C]`.
//!
//! Each op holds the convolution's geometry (what the tensors' shapes cannot
//! tell: filter size for `dw`, input size for `dx`, strides, dilations,
//! pads, groups) and a [`Convgrad`] context: a convgrad device (the best
//! present backend: HIP, then CUDA, then the CPU emulator) and a stream that
//! the context owns. Operations are planned through convgrad's process-wide
//! [`PlanCache`] on that stream (`bwd_weight_on`, so that runtime find, when
//! `CONVGRAD_FIND=1`, measures there too) and run with `execute_on`.
//!
//! Only `cpu_fwd` is implemented: candle's CPU storage is copied to convgrad's
//! device, the op runs, and the result comes back as candle CPU storage. On
//! a CUDA build of candle, `cuda_fwd` would instead take candle's device
//! pointers with `Device::wrap_foreign` and candle's stream with
//! `Device::wrap_stream` (see README.md; not built here, where there is no
//! CUDA toolkit).

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp2, Layout, Result, Shape, bail};
use convgrad::ops::bwd_data::{BwdDataConfig, BwdDataTensors};
use convgrad::ops::bwd_weight::{BwdWeightConfig, BwdWeightTensors};
use convgrad::ops::{PlanCache, Workspace, WorkspaceContents};
use convgrad::runtime::{Backend, Device, DeviceBuffer, Stream};
use convgrad::types::{ConvLayout, ConvProblem, TensorDesc, TensorRole, TypeConfig};
use half::{bf16, f16};
use std::sync::Arc;

/// A convgrad device and a stream owned by it (destroyed with it).
pub struct Convgrad {
    pub dev: Device,
    pub stream: Stream,
}

impl Convgrad {
    /// The best present backend (HIP, then CUDA, then the emulator) and a new stream on it.
    pub fn open() -> Result<Arc<Convgrad>> {
        let dev = Device::shared(Backend::Auto, 0).map_err(candle_core::Error::wrap)?;
        let stream = dev.create_stream().map_err(candle_core::Error::wrap)?;
        Ok(Arc::new(Convgrad { dev, stream }))
    }
}

/// Strides, dilations, pads (the same before and after) and groups of a 2-D
/// convolution, each `[height, width]`.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    pub groups: usize,
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    pub pad: [usize; 2],
}

impl Geometry {
    /// The output size of an input of `hw` under a filter of `yx`.
    pub fn output(&self, hw: [usize; 2], yx: [usize; 2]) -> [usize; 2] {
        std::array::from_fn(|i| {
            let span = self.dilation[i] * (yx[i].max(1) - 1) + 1;
            (hw[i] + 2 * self.pad[i]).saturating_sub(span) / self.stride[i].max(1) + 1
        })
    }
}

/// Candle's data of one input, checked: packed (contiguous, no offset) and
/// a floating type convgrad takes.
enum Data<'a> {
    F32(&'a [f32]),
    F16(&'a [f16]),
    Bf16(&'a [bf16]),
}

impl Data<'_> {
    fn types(&self) -> TypeConfig {
        match self {
            Data::F32(_) => TypeConfig::F32,
            Data::F16(_) => TypeConfig::F16,
            Data::Bf16(_) => TypeConfig::Bf16,
        }
    }
    /// A copy on convgrad's device (little-endian bytes, as GPUs and the emulator store them).
    fn upload(&self, dev: &Device) -> Result<DeviceBuffer<u8>> {
        let bytes: Vec<u8> = match self {
            Data::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::F16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::Bf16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        };
        dev.upload(&bytes).map_err(candle_core::Error::wrap)
    }
}

/// `s` with layout `l` as the op's input `name` of shape `want`, or an error naming it.
fn input<'a>(op: &str, name: &str, s: &'a CpuStorage, l: &Layout, want: [usize; 4]) -> Result<Data<'a>> {
    if l.dims() != want {
        bail!(
            "{op}: `{name}` has shape {:?}, expected {want:?} (NHWC: x [N, H, W, G*C], dy [N, Ho, Wo, G*K]; w [G*K, Y, X, C])",
            l.dims()
        );
    }
    // Packed: contiguous, starting at the storage's first element.
    match l.contiguous_offsets() {
        Some((0, _)) => {}
        Some((start, _)) => bail!("{op}: `{name}` starts at element {start} of its storage; convgrad takes packed tensors (call .copy() first)"),
        None => bail!(
            "{op}: `{name}` is not contiguous (strides {:?}); convgrad takes packed NHWC tensors (call .contiguous() first)",
            l.stride()
        ),
    }
    let n = l.shape().elem_count();
    let short = || candle_core::Error::Msg(format!("{op}: `{name}`'s storage holds fewer than its {n} elements"));
    Ok(match s {
        CpuStorage::F32(v) => Data::F32(v.get(..n).ok_or_else(short)?),
        CpuStorage::F16(v) => Data::F16(v.get(..n).ok_or_else(short)?),
        CpuStorage::BF16(v) => Data::Bf16(v.get(..n).ok_or_else(short)?),
        other => bail!("{op}: `{name}` has dtype {:?}; convgrad takes f32, f16 or bf16", other.dtype()),
    })
}

/// The two inputs' types, which must agree.
fn types(op: &str, (a, an): (&Data, &str), (b, bn): (&Data, &str)) -> Result<TypeConfig> {
    if a.types() != b.types() {
        bail!("{op}: `{an}` is {:?} but `{bn}` is {:?}; both must have one dtype", a.types(), b.types());
    }
    Ok(a.types())
}

/// convgrad's problem in CK's argument order (2-D, symmetric pads).
fn problem(op: &str, g: &Geometry, n: usize, k: usize, c: usize, yx: [usize; 2], hw: [usize; 2]) -> Result<ConvProblem> {
    let args = [
        2,
        g.groups,
        n,
        k,
        c,
        yx[0],
        yx[1],
        hw[0],
        hw[1],
        g.stride[0],
        g.stride[1],
        g.dilation[0],
        g.dilation[1],
        g.pad[0],
        g.pad[1],
        g.pad[0],
        g.pad[1],
    ];
    ConvProblem::from_ck_args(&args).map_err(|e| candle_core::Error::Msg(format!("{op}: {e}")))
}

/// Bytes per element of `types`'s activations and weights (the ops here use one dtype).
fn elem_bytes(types: TypeConfig) -> usize {
    types.act().bytes()
}

/// The output buffer downloaded as candle storage of `types`'s dtype.
fn download(out: &DeviceBuffer<u8>, types: TypeConfig) -> Result<CpuStorage> {
    let bytes = out.download().map_err(candle_core::Error::wrap)?;
    Ok(match types {
        TypeConfig::F16 => CpuStorage::F16(bytes.as_chunks::<2>().0.iter().map(|&b| f16::from_le_bytes(b)).collect()),
        TypeConfig::Bf16 => CpuStorage::BF16(bytes.as_chunks::<2>().0.iter().map(|&b| bf16::from_le_bytes(b)).collect()),
        _ => CpuStorage::F32(bytes.as_chunks::<4>().0.iter().map(|&b| f32::from_le_bytes(b)).collect()),
    })
}

fn op_err(op: &str, e: impl std::fmt::Display) -> candle_core::Error {
    candle_core::Error::Msg(format!("{op}: convgrad: {e}"))
}

/// `dw = BwdWeight(x, dy)`: the weight gradient of an NHWC 2-D convolution
/// with a `filter` (`[Y, X]`) and `geometry`.
pub struct BwdWeight {
    pub cg: Arc<Convgrad>,
    pub geometry: Geometry,
    pub filter: [usize; 2],
}

impl CustomOp2 for BwdWeight {
    fn name(&self) -> &'static str {
        "convgrad-bwd-weight"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> Result<(CpuStorage, Shape)> {
        let (op, g) = (self.name(), &self.geometry);
        let Ok((n, h, w, gc)) = l1.shape().dims4() else {
            bail!("{op}: `x` has shape {:?}, expected [N, H, W, G*C]", l1.dims())
        };
        let Ok((_, _, _, gk)) = l2.shape().dims4() else {
            bail!("{op}: `dy` has shape {:?}, expected [N, Ho, Wo, G*K]", l2.dims())
        };
        if g.groups == 0 || gc % g.groups != 0 || gk % g.groups != 0 {
            bail!("{op}: `groups` = {} does not divide the channels of `x` ({gc}) and `dy` ({gk})", g.groups);
        }
        let (c, k) = (gc / g.groups, gk / g.groups);
        let [ho, wo] = g.output([h, w], self.filter);
        let x = input(op, "x", s1, l1, [n, h, w, gc])?;
        let dy = input(op, "dy", s2, l2, [n, ho, wo, gk])?;
        let types = types(op, (&x, "x"), (&dy, "dy"))?;
        let p = problem(op, g, n, k, c, self.filter, [h, w])?;
        let layout = ConvLayout::NhwgcGkyxcNhwgk;
        let cfg = BwdWeightConfig {
            layout,
            types,
            ..Default::default()
        };
        let d = |r| TensorDesc::packed(&p, layout, r);
        let (dev, stream) = (&self.cg.dev, &self.cg.stream);
        let plan = PlanCache::global()
            .bwd_weight_on(stream, &p, &cfg, d(TensorRole::Input), d(TensorRole::Weight), d(TensorRole::Output))
            .map_err(|e| op_err(op, e))?;
        let (xb, dyb) = (x.upload(dev)?, dy.upload(dev)?);
        let elems = gk * self.filter[0] * self.filter[1] * c;
        let dwb = dev.alloc::<u8>(elems * elem_bytes(types)).map_err(candle_core::Error::wrap)?;
        let ws = dev.alloc::<u8>(plan.workspace_bytes().max(1)).map_err(candle_core::Error::wrap)?;
        ws.fill_zero().map_err(candle_core::Error::wrap)?;
        let t = BwdWeightTensors {
            x: (&xb).into(),
            dy: (&dyb).into(),
            dw: (&dwb).into(),
            ds: &[],
        };
        plan.execute_on(stream, t, Workspace::raw(&ws, WorkspaceContents::Zeroed))
            .map_err(|e| op_err(op, e))?;
        // The only host wait: candle's CPU storage needs the result now.
        stream.synchronize().map_err(candle_core::Error::wrap)?;
        let out = download(&dwb, types)?;
        Ok((out, Shape::from((gk, self.filter[0], self.filter[1], c))))
    }
}

/// `dx = BwdData(dy, w)`: the input gradient of an NHWC 2-D convolution of
/// an `input` (`[H, W]`) with `geometry`.
pub struct BwdData {
    pub cg: Arc<Convgrad>,
    pub geometry: Geometry,
    pub input: [usize; 2],
}

impl CustomOp2 for BwdData {
    fn name(&self) -> &'static str {
        "convgrad-bwd-data"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> Result<(CpuStorage, Shape)> {
        let (op, g) = (self.name(), &self.geometry);
        let Ok((n, _, _, gk)) = l1.shape().dims4() else {
            bail!("{op}: `dy` has shape {:?}, expected [N, Ho, Wo, G*K]", l1.dims())
        };
        let Ok((_, fy, fx, c)) = l2.shape().dims4() else {
            bail!("{op}: `w` has shape {:?}, expected [G*K, Y, X, C]", l2.dims())
        };
        if g.groups == 0 || gk % g.groups != 0 {
            bail!("{op}: `groups` = {} does not divide the channels of `dy` ({gk})", g.groups);
        }
        let k = gk / g.groups;
        let [h, w] = self.input;
        let [ho, wo] = g.output([h, w], [fy, fx]);
        let dy = input(op, "dy", s1, l1, [n, ho, wo, gk])?;
        let wt = input(op, "w", s2, l2, [gk, fy, fx, c])?;
        let types = types(op, (&dy, "dy"), (&wt, "w"))?;
        let p = problem(op, g, n, k, c, [fy, fx], [h, w])?;
        let layout = ConvLayout::NhwgcGkyxcNhwgk;
        let cfg = BwdDataConfig {
            layout,
            types,
            ..Default::default()
        };
        let d = |r| TensorDesc::packed(&p, layout, r);
        let (dev, stream) = (&self.cg.dev, &self.cg.stream);
        let plan = PlanCache::global()
            .bwd_data_on(stream, &p, &cfg, d(TensorRole::Output), d(TensorRole::Weight), d(TensorRole::Input))
            .map_err(|e| op_err(op, e))?;
        let (dyb, wb) = (dy.upload(dev)?, wt.upload(dev)?);
        let elems = n * h * w * g.groups * c;
        let dxb = dev.alloc::<u8>(elems * elem_bytes(types)).map_err(candle_core::Error::wrap)?;
        let t = BwdDataTensors {
            dy: (&dyb).into(),
            w: (&wb).into(),
            dx: (&dxb).into(),
            ds: &[],
        };
        // Odd output channel counts pack dy and w into a workspace first (any contents).
        let ws = dev.alloc::<u8>(plan.workspace_bytes().max(1)).map_err(candle_core::Error::wrap)?;
        plan.execute_on(stream, t, Workspace::raw(&ws, WorkspaceContents::Unknown))
            .map_err(|e| op_err(op, e))?;
        stream.synchronize().map_err(candle_core::Error::wrap)?;
        let out = download(&dxb, types)?;
        Ok((out, Shape::from((n, h, w, g.groups * c))))
    }
}
