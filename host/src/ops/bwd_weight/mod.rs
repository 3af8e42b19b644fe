//! Grouped convolution backward-weight: planning (instance, split-K, argument
//! block) and execution on any [`crate::runtime`] device.
//!
//! GEMM per group: `M = K`, `N = C * Z*Y*X`, reduction `N_batch * Do*Ho*Wo`.
//! The plan is in [`plan`](self::plan()) (file `plan.rs`), the launch in
//! `launch.rs`; this file gathers the public items.

pub(crate) mod launch;
pub(crate) mod plan;

pub use self::plan::{BwdWeightBuffers, BwdWeightConfig, BwdWeightPlan, UnfoldPlan, plan, plan_with};
#[doc(hidden)]
pub use self::plan::plan_with_limit;
pub use super::error::{OpError, Unsupported};
pub use super::launch::LaunchSpec;
pub use super::prepared::{BwdWeightOp, BwdWeightTensors};
pub use super::split::{MAX_SPLIT_K, SplitK, check_split};
pub use super::workspace::SplitKWorkspace;
use super::workspace::Workspace;
use convgrad_types::ConvProblem;

/// Runs a plan on the device's own stream: one launch; with split-K, the
/// workspace is zeroed first only where a previous call left partials that
/// this one needs as zeros ([`SplitKWorkspace`]). `workspace` must hold
/// `plan.workspace_elems` elements (it may be `None` when that is 0).
/// [`BwdWeightOp`] is the framework-facing form (resolved kernel, caller's
/// stream and workspace, checked buffers): prefer it.
///
/// # Safety
///
/// The kernels read and write `bufs` by address, unchecked. The caller
/// guarantees that:
/// - `plan` is one [`plan`] or [`plan_with`] returned, unmodified;
/// - `bufs.x` and `bufs.dy` point to device memory of `dev` holding at least
///   `plan.x.span()` / `plan.dy.span()` elements of the activation type the
///   plan was made for, `bufs.dw` at least `plan.dw.span()` elements of the
///   weight type, and each of `bufs.ds` (as many as the epilogue reads) at
///   least the span of its `plan.ds` descriptor ([`BwdWeightBuffers::checked`]
///   checks these lengths);
/// - the bytes `dw` spans overlap none of the other tensors' nor the
///   workspace's;
/// - every address is 16-byte aligned (checked: `OpError::Usage` names the
///   first that is not; the kernels move 16-byte vectors);
/// - all of it stays allocated, and is not used by other work, until the
///   launches on `dev`'s default stream have completed.
pub unsafe fn execute(
    dev: &crate::runtime::Device,
    module: &crate::runtime::Module,
    plan: &BwdWeightPlan,
    bufs: BwdWeightBuffers<'_>,
    workspace: Option<&SplitKWorkspace>,
) -> Result<(), OpError> {
    let k = module.kernel(plan.main.instance.name)?;
    let pre = plan.pre_pass().map(|name| module.kernel(name)).transpose()?;
    let ws = workspace.map_or(Workspace::None, Workspace::Tracked);
    // SAFETY: `execute`'s contract is `launch`'s; a tracked workspace is checked there.
    unsafe { launch::launch(dev, &dev.default_stream(), &k, pre.as_ref(), plan, bufs, ws) }
}

/// Whether `cfg` can run `p` (packed tensors of `cfg.layout`) on `arch`
/// (`gfx90a`, `gfx942`, `gfx1100`, `sm_80`, `sm_90`): planning without a
/// device, so a framework can decide to fall back before allocating anything.
pub fn supports(p: &ConvProblem, cfg: &BwdWeightConfig, arch: &str) -> Result<(), Unsupported> {
    let family = Unsupported::family_of(arch)?;
    plan(p, cfg, family, 1).map(|_| ()).map_err(Unsupported::from_plan)
}
