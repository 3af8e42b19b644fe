//! Grouped convolution backward-data with a fused multi-D epilogue:
//! planning (instance, slices, argument block) and execution.
//!
//! The plan and its launch are in [`plan`](self::plan()) (file `plan.rs`);
//! this file gathers the public items.

pub(crate) mod plan;

pub use self::plan::{BwdDataBuffers, BwdDataConfig, BwdDataPlan, DLayout, plan, plan_with};
#[doc(hidden)]
pub use self::plan::plan_with_limit;
pub use super::error::{OpError, Unsupported};
pub use super::launch::LaunchSpec;
pub use super::prepared::{BwdDataOp, BwdDataTensors};
use convgrad_types::ConvProblem;

/// Runs a plan on the device's own stream: one launch writes every element
/// of `dx`. [`BwdDataOp`] is the framework-facing form (resolved kernel,
/// caller's stream, checked buffers): prefer it.
///
/// # Safety
///
/// The kernel reads and writes `bufs` by address, unchecked. The caller
/// guarantees that:
/// - `plan` is one [`plan`] or [`plan_with`] returned, unmodified;
/// - `bufs.dy`, `bufs.w` and `bufs.dx` point to device memory of `dev`
///   holding at least `plan.dy.span()`, `plan.w.span()` and `plan.dx.span()`
///   elements of the plan's types, each of `bufs.ds` (as many as the
///   epilogue reads) at least the span of its `plan.ds` descriptor
///   ([`BwdDataBuffers::checked`] checks these lengths);
/// - the bytes `dx` spans overlap none of `dy`, `w` or the `D` tensors,
///   except a `D` at `dx`'s own address (`execute` refuses it unless its
///   layout is [`DLayout::Output`]: in place, element for element);
/// - every address is 16-byte aligned (checked: `OpError::Usage` names the
///   first that is not; the kernels move 16-byte vectors);
/// - all of it stays allocated, and is not used by other work, until the
///   launch on `dev`'s default stream has completed.
pub unsafe fn execute(
    dev: &crate::runtime::Device,
    module: &crate::runtime::Module,
    plan: &BwdDataPlan,
    bufs: BwdDataBuffers<'_>,
) -> Result<(), OpError> {
    let k = module.kernel(plan.main.instance.name)?;
    // SAFETY: `execute`'s contract is `launch`'s.
    unsafe { self::plan::launch(dev, &dev.default_stream(), &k, &|name| Ok(module.kernel(name)?), plan, bufs) }
}

/// Whether `cfg` can run `p` (packed tensors of `cfg.layout`) on `arch`
/// (`gfx90a`, `gfx942`, `gfx1100`, `sm_80`, `sm_90`): planning without a
/// device, so a framework can decide to fall back before allocating anything.
pub fn supports(p: &ConvProblem, cfg: &BwdDataConfig, arch: &str) -> Result<(), Unsupported> {
    let family = Unsupported::family_of(arch)?;
    plan(p, cfg, family, 1).map(|_| ()).map_err(Unsupported::from_plan)
}
