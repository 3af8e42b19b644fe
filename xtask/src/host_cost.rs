//! `cargo xtask bench --host-cost`: the host time of one convolution backward
//! call through the Rust API, as a framework pays it every training step.
//!
//! For a few layers of real networks (f16, NHWGC) it queues `calls` calls
//! (at most 256, so the launch queue never fills and blocks the host) on one
//! stream and divides the host wall time by the count; the GPU work drains
//! afterwards, so the number is what the calling thread spends, not the
//! kernel time. Three ways of calling:
//! - `execute_on`: a prepared op held by the caller (the op's checks and the
//!   launch);
//! - `cache + execute_on`: the op looked up in [`PlanCache`] every call (what a
//!   framework that keys on the problem does);
//! - `wrap + execute_on`: also the caller's memory wrapped every call
//!   (`Device::wrap_foreign`, one driver range check per tensor), what the
//!   PyTorch extension does.

use anyhow::{Result, bail};
use convgrad::ops::bwd_data::{BwdDataConfig, BwdDataTensors};
use convgrad::ops::bwd_weight::{BwdWeightConfig, BwdWeightTensors};
use convgrad::ops::{PlanCache, Workspace, WorkspaceContents};
use convgrad::runtime::{BackendKind, Device, DeviceBuffer, Stream};
use convgrad_types::{ConvLayout, ConvProblem, TensorDesc, TensorRole, TypeConfig};
use std::time::Instant;

/// Layers timed: (name, CK arguments).
const LAYERS: [(&str, &[usize]); 3] = [
    ("resnet50 layer1 3x3 64, N=32", &[2, 1, 32, 64, 64, 3, 3, 56, 56, 1, 1, 1, 1, 1, 1, 1, 1]),
    ("resnet50 layer3 1x1 1024->256, N=32", &[2, 1, 32, 256, 1024, 1, 1, 14, 14, 1, 1, 1, 1, 0, 0, 0, 0]),
    ("convnext dw 7x7 384, N=32", &[2, 384, 32, 1, 1, 7, 7, 14, 14, 1, 1, 1, 1, 3, 3, 3, 3]),
];

/// Tensors of one layer in device memory.
struct Bufs {
    x: DeviceBuffer<u8>,
    w: DeviceBuffer<u8>,
    dy: DeviceBuffer<u8>,
    dx: DeviceBuffer<u8>,
    dw: DeviceBuffer<u8>,
    ws: DeviceBuffer<u8>,
    /// bwd-data's workspace (its channel-packed copies).
    dws: DeviceBuffer<u8>,
}

/// Most calls queued in one measurement: below the driver's launch queue
/// (about 1024 launches), which would otherwise make the host wait for the GPU.
const MAX_CALLS: usize = 256;

/// Microseconds of host time per call of `go`, over `calls` calls queued on
/// `stream` after a warm-up, the stream drained before and after.
fn per_call_us(stream: &Stream, calls: usize, mut go: impl FnMut() -> Result<()>) -> Result<f64> {
    for _ in 0..10 {
        go()?;
    }
    stream.synchronize()?;
    let t = Instant::now();
    for _ in 0..calls {
        go()?;
    }
    let us = t.elapsed().as_secs_f64() * 1e6 / calls as f64;
    stream.synchronize()?;
    Ok(us)
}

/// Prints the host cost per call of each way of calling, per layer and op.
pub fn run(dev: &Device, calls: usize) -> Result<()> {
    if dev.backend_kind() == BackendKind::Emulator {
        bail!("--host-cost: the emulator runs each launch before returning, so host cost means nothing there; run on a GPU");
    }
    let calls = calls.clamp(1, MAX_CALLS);
    let stream = dev.create_stream()?;
    let layout = ConvLayout::NhwgcGkyxcNhwgk;
    let types = TypeConfig::F16;
    let wcfg = BwdWeightConfig { layout, types, ..Default::default() };
    let dcfg = BwdDataConfig { layout, types, ..Default::default() };
    println!("host cost per call, {calls} calls queued on one stream ({}):", dev.name());
    println!("{:<38} {:>6} {:>12} {:>18} {:>17}", "layer", "op", "execute_on", "cache + execute_on", "wrap + execute_on");
    for (name, args) in LAYERS {
        let p = ConvProblem::from_ck_args(args)?;
        let d = |r| TensorDesc::packed(&p, layout, r);
        let (dx_d, dw_d, dy_d) = (d(TensorRole::Input), d(TensorRole::Weight), d(TensorRole::Output));
        let wop = PlanCache::global().bwd_weight(dev, &p, &wcfg, dx_d, dw_d, dy_d)?;
        let dop = PlanCache::global().bwd_data(dev, &p, &dcfg, dy_d, dw_d, dx_d)?;
        let bytes = |t: &TensorDesc| t.span() as usize * 2;
        let b = Bufs {
            x: dev.alloc(bytes(&dx_d))?,
            w: dev.alloc(bytes(&dw_d))?,
            dy: dev.alloc(bytes(&dy_d))?,
            dx: dev.alloc(bytes(&dx_d))?,
            dw: dev.alloc(bytes(&dw_d))?,
            ws: dev.alloc(wop.workspace_bytes().max(16))?,
            dws: dev.alloc(dop.workspace_bytes().max(16))?,
        };
        b.ws.fill_bytes(0)?;
        let ws = || Workspace::raw(&b.ws, WorkspaceContents::Zeroed);
        let dws = || Workspace::raw(&b.dws, WorkspaceContents::Unknown);
        let wt = |x: &DeviceBuffer<u8>, dy: &DeviceBuffer<u8>, dw: &DeviceBuffer<u8>| -> Result<()> {
            wop.execute_on(&stream, BwdWeightTensors { x: x.into(), dy: dy.into(), dw: dw.into(), ds: &[] }, ws())?;
            Ok(())
        };
        let weight = [
            per_call_us(&stream, calls, || wt(&b.x, &b.dy, &b.dw))?,
            per_call_us(&stream, calls, || {
                let op = PlanCache::global().bwd_weight(dev, &p, &wcfg, dx_d, dw_d, dy_d)?;
                op.execute_on(&stream, BwdWeightTensors { x: (&b.x).into(), dy: (&b.dy).into(), dw: (&b.dw).into(), ds: &[] }, ws())?;
                Ok(())
            })?,
            per_call_us(&stream, calls, || {
                let [x, dy, dw] = wrap(dev, [&b.x, &b.dy, &b.dw])?;
                wt(&x, &dy, &dw)
            })?,
        ];
        let dt = |dy: &DeviceBuffer<u8>, w: &DeviceBuffer<u8>, dx: &DeviceBuffer<u8>| -> Result<()> {
            dop.execute_on(&stream, BwdDataTensors { dy: dy.into(), w: w.into(), dx: dx.into(), ds: &[] }, dws())?;
            Ok(())
        };
        let data = [
            per_call_us(&stream, calls, || dt(&b.dy, &b.w, &b.dx))?,
            per_call_us(&stream, calls, || {
                let op = PlanCache::global().bwd_data(dev, &p, &dcfg, dy_d, dw_d, dx_d)?;
                op.execute_on(&stream, BwdDataTensors { dy: (&b.dy).into(), w: (&b.w).into(), dx: (&b.dx).into(), ds: &[] }, dws())?;
                Ok(())
            })?,
            per_call_us(&stream, calls, || {
                let [dy, w, dx] = wrap(dev, [&b.dy, &b.w, &b.dx])?;
                dt(&dy, &w, &dx)
            })?,
        ];
        for (op, t) in [("dw", weight), ("dx", data)] {
            println!("{name:<38} {op:>6} {:>9.2} us {:>15.2} us {:>14.2} us", t[0], t[1], t[2]);
        }
    }
    stream.synchronize()?;
    Ok(())
}

/// The buffers' memory wrapped again as foreign memory, as a framework's
/// tensors are on every call.
fn wrap<const N: usize>(dev: &Device, bufs: [&DeviceBuffer<u8>; N]) -> Result<[DeviceBuffer<u8>; N]> {
    let mut out = Vec::with_capacity(N);
    for b in bufs {
        // SAFETY: the memory is `b`'s own allocation, alive for the whole
        // benchmark (the wrapped view never frees it).
        out.push(unsafe { dev.wrap_foreign::<u8>(b.device_addr(), b.bytes()) }?);
    }
    out.try_into().map_err(|_| anyhow::anyhow!("wrap: buffer count changed"))
}
