//! Backward-weight's launch: readying the split-K workspace, then the
//! pre-pass (where the plan unfolds x) and the kernel, on a stream; for a
//! problem split along N and G (#38), every part's launches in order.

use super::plan::{BwdWeightBuffers, BwdWeightPlan};
use crate::ops::checks::{D_NAMES, check_bases, check_d_count};
use crate::ops::error::OpError;
use crate::ops::workspace::{SplitKWorkspace, Workspace};
use crate::runtime::{BufRef, Device, Kernel, Stream};
use convgrad_types::epilogue::MAX_D;
use convgrad_types::instance::Op;
use convgrad_types::params::ConvArgs;

/// The byte the arrival counters are filled with while the launches of a
/// group range before its last add their partials: each counter then reads
/// `0x8080_8080` plus the arrivals so far, which never equals `k_batch - 1`
/// (at most 65534), so no workgroup takes the sums until the last launch,
/// before which the counters are zeroed.
const HOLD_COUNTERS: u8 = 0x80;

/// Queues `plan`'s launches on `stream` (the unfolding pre-pass `pre`, then
/// `kernel`; for a split plan, each part's) after readying the workspace:
/// zeroes (on the stream) what the call needs as zeros and a previous call
/// may have left non-zero.
///
/// # Safety
/// `bufs` keep [`super::execute`]'s contract for `plan`, and `ws` is
/// checked here (a tracked workspace) or the caller's (a raw one, at least
/// `plan.workspace_bytes()` of `dev`, disjoint from `bufs`).
pub(crate) unsafe fn launch(
    dev: &Device,
    stream: &Stream,
    kernel: &Kernel,
    pre: Option<&Kernel>,
    plan: &BwdWeightPlan,
    bufs: BwdWeightBuffers<'_>,
    ws: Workspace<'_>,
) -> Result<(), OpError> {
    check_d_count(plan.ds.len(), bufs.ds.len())?;
    check_bases([("x", bufs.x), ("dy", bufs.dy), ("dw", bufs.dw)].into_iter().chain(D_NAMES.into_iter().zip(bufs.ds.iter().copied())))?;
    let (addr, tracked) = ready_workspace(dev, stream, plan, ws)?;
    // SAFETY: this fn's contract; `addr` is the readied workspace.
    let launched = unsafe {
        if plan.parts.is_empty() {
            launch_one(dev, stream, kernel, pre, plan, bufs, addr)
        } else {
            launch_parts(dev, stream, kernel, pre, plan, bufs, addr)
        }
    };
    if let Some(w) = tracked {
        // `x'` and stored partials stay behind; after a failed launch nothing is known.
        let scratch = plan.scratch_bytes() / 4;
        let left = match launched {
            Ok(()) if plan.atomic_partials => w.dirty.get().max(scratch),
            Ok(()) => w.dirty.get().max(scratch + plan.partial_elems),
            Err(_) => w.len(),
        };
        w.dirty.set(left);
    }
    launched
}

/// Checks the workspace against the plan and zeroes what the call needs as
/// zeros (atomic partials and every counter; stored partials and `x'` need
/// not be): its address (0 without one) and convgrad's own workspace.
fn ready_workspace<'w>(
    dev: &Device,
    stream: &Stream,
    plan: &BwdWeightPlan,
    ws: Workspace<'w>,
) -> Result<(u64, Option<&'w SplitKWorkspace>), OpError> {
    let need = plan.workspace_elems * 4;
    let zeros_from = plan.scratch_bytes() + if plan.atomic_partials { 0 } else { plan.partial_elems * 4 };
    let short = |got: usize| {
        OpError::Usage(format!(
            "workspace: bwd-weight needs {need} bytes of split-K workspace (BwdWeightOp::workspace_bytes), got {got}"
        ))
    };
    match (need, ws) {
        (0, _) => Ok((0, None)),
        (_, Workspace::None) => Err(short(0)),
        (_, Workspace::Tracked(w)) => {
            BufRef::from(&w.buf).check_device(dev.inner(), "workspace")?;
            if w.len() * 4 < need {
                return Err(short(w.len() * 4));
            }
            if w.dirty.get() * 4 > zeros_from {
                w.buf.fill_bytes_on(stream, 0)?;
                w.dirty.set(0);
            }
            Ok((w.device_addr(), Some(w)))
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
            Ok((mem.device_addr(), None))
        }
    }
}

/// Queues one plan's pre-pass (if it unfolds x) and kernel, its workspace at `ws`.
///
/// # Safety
/// As [`launch`], with `ws` the plan's readied workspace.
unsafe fn launch_one(
    dev: &Device,
    stream: &Stream,
    kernel: &Kernel,
    pre: Option<&Kernel>,
    plan: &BwdWeightPlan,
    bufs: BwdWeightBuffers<'_>,
    ws: u64,
) -> Result<(), OpError> {
    let args = with_maps(dev, plan, plan.args(bufs.x, bufs.dw, bufs.dy, ws, bufs.ds))?;
    match (plan.unfold.as_ref().zip(plan.unfold_args(bufs.x, ws)), pre) {
        // SAFETY: the pre-pass reads x and writes x' into the workspace, both held by the contract.
        (Some((u, pre_args)), Some(k)) => unsafe { dev.launch_on(stream, k, u.launch.grid, u.launch.block, 0, &pre_args)? },
        (Some((u, _)), None) => {
            return Err(OpError::Usage(format!("bwd-weight: the plan's pre-pass {} was not given", u.launch.instance.name)));
        }
        _ => {}
    }
    for c in plan.pack.iter().flat_map(|k| &k.copies) {
        let k = pre.ok_or_else(|| OpError::Usage(format!("bwd-weight: the plan's pre-pass {} was not given", c.launch.instance.name)))?;
        let src = if c.tensor == "x" { bufs.x } else { bufs.dy };
        // SAFETY: the copy reads x or dy and writes its bytes of the workspace, all held by the contract.
        unsafe { dev.launch_on(stream, k, c.launch.grid, c.launch.block, 0, &c.args(src, ws))? };
    }
    // SAFETY: the contract holds `bufs` and `ws`; the arguments are the plan's own.
    unsafe { dev.launch_on(stream, kernel, plan.main.grid, plan.main.block, plan.main.lds_bytes, &args)? };
    Ok(())
}

/// Queues a split plan's parts in order, each on its tensors' views (base
/// addresses moved by the part's byte offsets) and its `x'` placed right
/// before the shared partials. Where a group range runs as several
/// launches along N, its counters hold ([`HOLD_COUNTERS`]) until the last.
///
/// # Safety
/// As [`launch_one`].
unsafe fn launch_parts(
    dev: &Device,
    stream: &Stream,
    kernel: &Kernel,
    pre: Option<&Kernel>,
    plan: &BwdWeightPlan,
    bufs: BwdWeightBuffers<'_>,
    ws: u64,
) -> Result<(), OpError> {
    let (scratch, need) = (plan.scratch_bytes(), plan.workspace_elems * 4);
    let at = |base: u64, off: u64| {
        base.checked_add(off).ok_or_else(|| OpError::Usage(format!("address {base:#x} + {off} passes 64 bits")))
    };
    let parts = &plan.parts;
    for (i, part) in parts.iter().enumerate() {
        let first = i == 0 || parts[i - 1].chunk.g0 != part.chunk.g0;
        let last = parts.get(i + 1).is_none_or(|q| q.chunk.g0 != part.chunk.g0);
        // The range's counters follow its partials (of its groups), up to
        // the end (bytes past them are unused by the range, left zero).
        let counters_from = scratch + part.plan.partial_elems * 4;
        if !(first && last) && (first || last) && need > counters_from {
            let fill = if last { 0 } else { HOLD_COUNTERS };
            dev.fill_raw(stream, at(ws, counters_from as u64)?, fill, need - counters_from)?;
        }
        let mut ds = [0u64; MAX_D];
        for ((d, &b), &off) in ds.iter_mut().zip(bufs.ds).zip(&part.d_offsets) {
            *d = at(b, off)?;
        }
        let [ox, ody, odw] = part.offsets;
        let pb = BwdWeightBuffers { x: at(bufs.x, ox)?, dy: at(bufs.dy, ody)?, dw: at(bufs.dw, odw)?, ds: &ds[..bufs.ds.len().min(MAX_D)] };
        let base = if ws == 0 { 0 } else { ws + (scratch - part.plan.scratch_bytes()) as u64 };
        // SAFETY: a part's views lie inside `bufs`' tensors and its x' and
        // partials inside `ws` (offsets and sub-plans from the splitting plan).
        unsafe { launch_one(dev, stream, kernel, pre, &part.plan, pb, base)? };
    }
    Ok(())
}

/// `args` with the tensor maps of `plan`'s TMA kernel filled in (other
/// kernels: unchanged). The maps describe the problem the kernel runs (the
/// folded or packed one where the plan folds or packs; the TMA family
/// never unfolds): a plan
/// whose argument block says otherwise is refused.
fn with_maps(dev: &Device, plan: &BwdWeightPlan, mut args: ConvArgs) -> Result<ConvArgs, OpError> {
    if plan.main.instance.op != Op::BwdWeightTma {
        return Ok(args);
    }
    let (p, x) = plan.folded.as_deref().map_or((&plan.problem, &plan.x), |(p, x)| (p, x));
    let t = &plan.main.instance.tile;
    use crate::ops::family::bwd_weight::tma;
    if (args.k, args.c, args.gemm.k as u64) != (p.k as u32, p.c as u32, tma::reduction(p, t)) {
        return Err(OpError::Usage(format!("bwd-weight: the TMA plan's argument block does not match its problem {p:?}")));
    }
    let dy = plan.pack.as_ref().and_then(|k| k.copy("dy")).map_or(&plan.dy, |c| &c.desc);
    let maps = tma::maps(p, dy, x, t, &args.tma_rows, args.dy, args.x).map_err(OpError::Usage)?;
    for (slot, m) in args.tma.iter_mut().zip(&maps) {
        *slot = dev.encode_tma(m)?;
    }
    Ok(args)
}
