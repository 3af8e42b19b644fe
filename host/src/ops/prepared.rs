//! Prepared operations, the way frameworks call convolution libraries (CK's
//! device ops, MIOpen's solvers): a plan with its kernel resolved once, run
//! on the caller's stream with the caller's memory and workspace, every
//! buffer's device and length checked before the launch.
//!
//! ```
//! use convgrad::ops::bwd_weight::{BwdWeightConfig, BwdWeightOp, BwdWeightTensors};
//! use convgrad::ops::Workspace;
//! use convgrad::runtime::{Backend, Device, EmuArch};
//! use convgrad::types::ConvProblem;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dev = Device::shared(Backend::Emulator(EmuArch::Gfx942), 0)?;
//! // CK's order: ndim G N K C Y X Hi Wi strides dilations lpads rpads.
//! let p = ConvProblem::from_ck_args(&[2, 2, 1, 8, 8, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1])?;
//! let op = BwdWeightOp::new(&dev, &p, &BwdWeightConfig::default())?;
//! let plan = op.plan();
//! let x = dev.upload(&vec![half::f16::from_f32(0.5); plan.x.span() as usize])?;
//! let dy = dev.upload(&vec![half::f16::from_f32(0.25); plan.dy.span() as usize])?;
//! let dw = dev.alloc::<half::f16>(plan.dw.span() as usize)?;
//! let ws = dev.alloc::<u8>(op.workspace_bytes())?;
//! let stream = dev.create_stream()?;
//! let t = BwdWeightTensors { x: (&x).into(), dy: (&dy).into(), dw: (&dw).into(), ds: &[] };
//! op.execute_on(&stream, t, Workspace::raw(&ws, convgrad::ops::WorkspaceContents::Unknown))?;
//! stream.synchronize()?;
//! // dw is GKYXC: element 32 is k 0, tap (1, 1), c 0. The centre tap sees
//! // all 36 output pixels, a corner tap (element 0) the 25 inside the padding.
//! let dw = dw.download()?;
//! assert_eq!((dw[32].to_f32(), dw[0].to_f32()), (36.0 * 0.125, 25.0 * 0.125));
//! # Ok(()) }
//! ```

use super::bwd_data::plan::{self as bwd_data, BwdDataBuffers, BwdDataConfig, BwdDataPlan};
use super::bwd_weight::plan::{self as bwd_weight, BwdWeightBuffers, BwdWeightConfig, BwdWeightPlan};
use super::bwd_weight::launch::launch as launch_bwd_weight;
use super::checks::{D_NAMES, Extent, check_buffer, check_d_count, check_disjoint};
use super::error::OpError;
use super::workspace::{Workspace, WorkspaceContents};
use convgrad_types::epilogue::MAX_D;
use crate::runtime::{BufRef, Device, Kernel, Stream};
use convgrad_types::{ConvProblem, TensorDesc, TensorRole};

/// A call's tensors: the buffers `$t` and the epilogue's `D` tensors, all
/// checked against the plan's descriptors when the call is queued.
macro_rules! op_tensors {
    ($(#[$doc:meta])* $name:ident { $($(#[$tdoc:meta])* $t:ident),+; $(#[$ddoc:meta])* ds }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub struct $name<'a> {
            $($(#[$tdoc])* pub $t: BufRef<'a>,)+
            $(#[$ddoc])*
            pub ds: &'a [BufRef<'a>],
        }
    };
}

op_tensors! {
    /// The tensors of one backward-weight call (lengths checked against the plan).
    BwdWeightTensors {
        /// Input activations (act type).
        x,
        /// Output gradient (act type).
        dy,
        /// Weight gradient, written (weight type).
        dw;
        /// `D` tensors of the epilogue (weight type).
        ds
    }
}

op_tensors! {
    /// The tensors of one backward-data call (lengths checked against the plan).
    /// A `D` may be `dx` itself when its layout is `DLayout::Output`.
    BwdDataTensors {
        /// Output gradient.
        dy,
        /// Weights.
        w,
        /// Input gradient, written.
        dx;
        /// `D` tensors of the epilogue.
        ds
    }
}

/// Checks each buffer's device and length against its descriptor; returns
/// the extents each call touches (O(1) per buffer, no allocation).
fn checked<const N: usize>(
    dev: &Device,
    stream: &Stream,
    bufs: [(&'static str, &BufRef<'_>, &TensorDesc, convgrad_types::DType); N],
) -> Result<[Extent; N], OpError> {
    stream.check_device(dev.inner())?;
    let mut out = [Extent::new("", 0, 0); N];
    for (o, (name, b, desc, t)) in out.iter_mut().zip(bufs) {
        b.check_device(dev.inner(), name)?;
        check_buffer(name, desc, t, b.bytes())?;
        // Within the buffer's length (just checked), so no overflow.
        *o = Extent::new(name, b.device_addr(), desc.span() * t.bytes() as u64);
    }
    Ok(out)
}

/// The `D` tensors' extents, each checked like the main tensors, in a
/// fixed array (no allocation) with their count.
fn checked_ds(
    dev: &Device,
    stream: &Stream,
    descs: &[TensorDesc],
    t: convgrad_types::DType,
    ds: &[BufRef<'_>],
) -> Result<([Extent; MAX_D], usize), OpError> {
    check_d_count(descs.len(), ds.len())?;
    let mut out = [Extent::new("", 0, 0); MAX_D];
    for (i, (b, d)) in ds.iter().zip(descs).enumerate().take(MAX_D) {
        out[i] = checked(dev, stream, [(D_NAMES[i], b, d, t)])?[0];
    }
    Ok((out, ds.len().min(MAX_D)))
}

/// The extents' start addresses, for the argument block.
fn addrs<const N: usize>(e: &[Extent; N]) -> [u64; N] {
    e.map(|e| e.start)
}

/// The items both prepared operations have: the struct (device,
/// configuration, plan, resolved kernel) and its `new` (packed tensors),
/// `with_descs` (the descriptors `$t`, in order, of the tensor roles
/// `$role`), `plan`, `device` and `describe`.
macro_rules! prepared_op {
    ($(#[$doc:meta])* $op:ident($cfg:ty, $plan:ty, $plan_with:path, [$($t:ident: $role:ident),+])) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $op {
            dev: Device,
            cfg: $cfg,
            plan: $plan,
            kernel: Kernel,
        }

        impl $op {
            /// Plans `p` for `dev` with packed tensors of `cfg.layout`.
            pub fn new(dev: &Device, p: &ConvProblem, cfg: &$cfg) -> Result<Self, OpError> {
                let d = |r| TensorDesc::packed(p, cfg.layout, r);
                Self::with_descs(dev, p, cfg, $(d(TensorRole::$role)),+)
            }
            #[doc = concat!("Plans `p` for `dev` with explicit (possibly strided) descriptors of ", stringify!($($t),+), ".")]
            pub fn with_descs(dev: &Device, p: &ConvProblem, cfg: &$cfg, $($t: TensorDesc),+) -> Result<Self, OpError> {
                let plan = $plan_with(p, cfg, dev.family(), dev.compute_units(), $($t),+)?;
                let kernel = dev.kernels()?.kernel(plan.main.instance.name)?;
                Ok($op { dev: dev.clone(), cfg: cfg.clone(), plan, kernel })
            }
            /// The plan (descriptors, instance, and what it chose: split-K,
            /// mapping, epilogue).
            pub fn plan(&self) -> &$plan {
                &self.plan
            }
            /// The device it runs on.
            pub fn device(&self) -> &Device {
                &self.dev
            }
            /// One line on what runs: kernel, split or mapping, grid.
            pub fn describe(&self) -> String {
                let m = &self.plan.main;
                format!("{} ; grid {:?} x {} threads", self.plan.describe(), m.grid, m.block)
            }
        }
    };
}

prepared_op! {
    /// A backward-weight problem planned for one device, its kernel resolved.
    BwdWeightOp(BwdWeightConfig, BwdWeightPlan, bwd_weight::plan_with, [x: Input, dw: Weight, dy: Output])
}

impl BwdWeightOp {
    /// Bytes of split-K workspace each call needs (0: none).
    pub fn workspace_bytes(&self) -> usize {
        self.plan.workspace_elems * 4
    }
    /// What a workspace that held `before` holds after a successful call:
    /// the call leaves zeros where it needed them (a non-deterministic call:
    /// all it used; a deterministic one: its arrival counters, its per-split
    /// partials stay), and bytes past what it used as they were.
    pub fn workspace_after(&self, before: WorkspaceContents) -> WorkspaceContents {
        let need = self.workspace_bytes();
        if need == 0 {
            return before;
        }
        let tail = if before.zero_from() > need { before.zero_from() } else { 0 };
        let scratch = self.plan.scratch_bytes();
        let partials = scratch + if self.plan.atomic_partials { 0 } else { self.plan.partial_elems * 4 };
        match tail.max(partials) {
            0 => WorkspaceContents::Zeroed,
            usize::MAX => WorkspaceContents::Unknown,
            n => WorkspaceContents::ZeroFrom(n),
        }
    }
    /// Queues the call on `stream`: no host wait, nothing allocated.
    pub fn execute_on(&self, stream: &Stream, t: BwdWeightTensors<'_>, ws: Workspace<'_>) -> Result<(), OpError> {
        let (act, wei) = (self.cfg.types.act(), self.cfg.types.wei());
        let p = &self.plan;
        let e = checked(&self.dev, stream, [("x", &t.x, &p.x, act), ("dy", &t.dy, &p.dy, act), ("dw", &t.dw, &p.dw, wei)])?;
        let (de, nd) = checked_ds(&self.dev, stream, &p.ds, wei, t.ds)?;
        // dw (written) touches no input; the workspace (written) no tensor.
        let mut read = [Extent::new("", 0, 0); 3 + MAX_D];
        read[..2].copy_from_slice(&e[..2]);
        read[2..2 + nd].copy_from_slice(&de[..nd]);
        check_disjoint(&e[2], &read[..2 + nd])?;
        read[2 + nd] = e[2];
        check_disjoint(&workspace_extent(&ws, self.workspace_bytes()), &read[..3 + nd])?;
        let [x, dy, dw] = addrs(&e);
        let ds = addrs(&de);
        let bufs = BwdWeightBuffers { x, dy, dw, ds: &ds[..nd] };
        let pre = p.pre_pass().map(|name| self.dev.kernels()?.kernel(name)).transpose()?;
        // SAFETY: every address was checked above against its allocation,
        // the plan's spans and the others (no overlap), on this device.
        unsafe { launch_bwd_weight(&self.dev, stream, &self.kernel, pre.as_ref(), p, bufs, ws) }
    }
}

/// The bytes a call writes in its workspace: the first `need` of it.
fn workspace_extent(ws: &Workspace<'_>, need: usize) -> Extent {
    let addr = match ws {
        Workspace::None => 0,
        Workspace::Tracked(w) => w.device_addr(),
        Workspace::Raw { mem, .. } => mem.device_addr(),
    };
    Extent::new("workspace", addr, need as u64)
}

prepared_op! {
    /// A backward-data problem planned for one device, its kernel resolved.
    BwdDataOp(BwdDataConfig, BwdDataPlan, bwd_data::plan_with, [dy: Output, w: Weight, dx: Input])
}

impl BwdDataOp {
    /// Bytes of workspace each call needs (0: none): the copies of `dy` and
    /// `w` with `K` zero padded to whole vectors, where `K` fills none
    /// (`ops::pack`). Any contents will do; the call overwrites them.
    pub fn workspace_bytes(&self) -> usize {
        self.plan.workspace_bytes()
    }
    /// Queues the call on `stream`: no host wait, nothing allocated;
    /// `ws` may be [`Workspace::None`] where [`workspace_bytes`](Self::workspace_bytes) is 0.
    pub fn execute_on(&self, stream: &Stream, t: BwdDataTensors<'_>, ws: Workspace<'_>) -> Result<(), OpError> {
        let ty = self.cfg.types.act();
        let p = &self.plan;
        let e = checked(&self.dev, stream, [
            ("dy", &t.dy, &p.dy, ty),
            ("w", &t.w, &p.w, self.cfg.types.wei()),
            ("dx", &t.dx, &p.dx, ty),
        ])?;
        let (de, nd) = checked_ds(&self.dev, stream, &p.ds, ty, t.ds)?;
        // dx (written) touches no input but a D that is dx itself (its
        // layout is checked at the launch: in place, element for element).
        let dx = e[2];
        check_disjoint(&dx, &e[..2])?;
        for d in &de[..nd] {
            if d.start != dx.start {
                check_disjoint(&dx, std::slice::from_ref(d))?;
            }
        }
        // The workspace (written) touches no tensor.
        let need = self.workspace_bytes();
        let workspace = if need == 0 { 0 } else { checked_workspace(&self.dev, &ws, need)? };
        let mut all = [Extent::new("", 0, 0); 3 + MAX_D];
        all[..3].copy_from_slice(&e);
        all[3..3 + nd].copy_from_slice(&de[..nd]);
        check_disjoint(&workspace_extent(&ws, need), &all[..3 + nd])?;
        let [dy, w, dx] = addrs(&e);
        let ds = addrs(&de);
        let resolve = |name: &str| Ok(self.dev.kernels()?.kernel(name)?);
        let bufs = BwdDataBuffers { dy, w, dx, ds: &ds[..nd], workspace };
        // SAFETY: every address was checked above against its allocation,
        // the plan's spans and the others (no overlap), on this device.
        unsafe { bwd_data::launch(&self.dev, stream, &self.kernel, &resolve, p, bufs) }
    }
}

/// The address of a workspace of at least `need` bytes on `dev`, 16-byte
/// aligned (whatever it holds: the copies overwrite it).
fn checked_workspace(dev: &Device, ws: &Workspace<'_>, need: usize) -> Result<u64, OpError> {
    let mem = match ws {
        Workspace::None => None,
        Workspace::Tracked(w) => Some(BufRef::from(&w.buf)),
        Workspace::Raw { mem, .. } => Some(*mem),
    };
    let got = mem.map_or(0, |m| m.bytes());
    let short = || OpError::Usage(format!("workspace: bwd-data needs {need} bytes (BwdDataOp::workspace_bytes), got {got}"));
    let mem = mem.filter(|m| m.bytes() >= need).ok_or_else(short)?;
    mem.check_device(dev.inner(), "workspace")?;
    if !mem.device_addr().is_multiple_of(16) {
        return Err(OpError::Usage(format!("workspace: address {:#x} is not 16-byte aligned", mem.device_addr())));
    }
    Ok(mem.device_addr())
}
