//! Backward-weight's launch: readying the split-K workspace, then the
//! pre-pass (where the plan unfolds x) and the kernel, on a stream.

use super::plan::{BwdWeightBuffers, BwdWeightPlan};
use crate::ops::checks::check_d_count;
use crate::ops::error::OpError;
use crate::ops::workspace::Workspace;
use crate::runtime::{BufRef, Device, Kernel, Stream};

/// Queues `plan`'s launches on `stream` (the unfolding pre-pass `pre`, then
/// `kernel`) after readying the workspace: zeroes (on the stream) what the
/// call needs as zeros and a previous call may have left non-zero.
pub(crate) fn launch(
    dev: &Device,
    stream: &Stream,
    kernel: &Kernel,
    pre: Option<&Kernel>,
    plan: &BwdWeightPlan,
    bufs: BwdWeightBuffers<'_>,
    ws: Workspace<'_>,
) -> Result<(), OpError> {
    check_d_count(plan.ds.len(), bufs.ds.len())?;
    let need = plan.workspace_elems * 4;
    // Atomic partials and every counter must start at zero; stored partials
    // need not, nor `x'` ahead of them (each call writes it whole).
    let scratch = plan.scratch_bytes();
    let zeros_from = scratch + if plan.atomic_partials { 0 } else { plan.partial_elems * 4 };
    let short = |got: usize| {
        OpError::Usage(format!(
            "workspace: bwd-weight needs {need} bytes of split-K workspace (BwdWeightOp::workspace_bytes), got {got}"
        ))
    };
    let (addr, tracked) = match (need, ws) {
        (0, _) => (0, None),
        (_, Workspace::None) => return Err(short(0)),
        (_, Workspace::Tracked(w)) => {
            BufRef::from(&w.buf).check_device(dev.inner(), "workspace")?;
            if w.len() * 4 < need {
                return Err(short(w.len() * 4));
            }
            if w.dirty.get() * 4 > zeros_from {
                w.buf.fill_bytes_on(stream, 0)?;
                w.dirty.set(0);
            }
            (w.device_addr(), Some(w))
        }
        (_, Workspace::Raw { mem, contents }) => {
            if mem.bytes() < need {
                return Err(short(mem.bytes()));
            }
            mem.check_device(dev.inner(), "workspace")?;
            if !mem.device_addr().is_multiple_of(16) {
                return Err(OpError::Usage(format!(
                    "workspace: address {:#x} is not 16-byte aligned (the partial sums are added in 16-byte vectors)",
                    mem.device_addr()
                )));
            }
            // Zeros needed in `zeros_from..need`; the workspace has them from `zero_from` on.
            let dirty_end = contents.zero_from().min(need);
            if dirty_end > zeros_from {
                dev.fill_raw(stream, mem.device_addr() + zeros_from as u64, 0, dirty_end - zeros_from)?;
            }
            (mem.device_addr(), None)
        }
    };
    let args = plan.args(bufs.x, bufs.dw, bufs.dy, addr, bufs.ds);
    let launched = match (plan.unfold.as_ref().zip(plan.unfold_args(bufs.x, addr)), pre) {
        (Some((u, pre_args)), Some(k)) => dev.launch_on(stream, k, u.launch.grid, u.launch.block, 0, &pre_args),
        (Some((u, _)), None) => {
            return Err(OpError::Usage(format!("bwd-weight: the plan's pre-pass {} was not given", u.launch.instance.name)));
        }
        _ => Ok(()),
    }
    .and_then(|()| dev.launch_on(stream, kernel, plan.main.grid, plan.main.block, plan.main.lds_bytes, &args));
    if let Some(w) = tracked {
        // `x'` and stored partials stay behind; after a failed launch nothing is known.
        let scratch = scratch / 4;
        let left = match launched {
            Ok(()) if plan.atomic_partials => w.dirty.get().max(scratch),
            Ok(()) => w.dirty.get().max(scratch + plan.partial_elems),
            Err(_) => w.len(),
        };
        w.dirty.set(left);
    }
    Ok(launched?)
}
