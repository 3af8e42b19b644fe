//! How a framework calls convgrad: the device opened once and shared, a
//! `supports` check that decides between convgrad and a fallback before
//! anything is allocated, prepared operations from the plan cache, the
//! framework's own memory, stream and workspace, and no host wait between
//! the layers of a step.
//!
//! The "framework" here allocates its tensors with convgrad's allocator and
//! hands out raw addresses, as PyTorch's caching allocator would hand out
//! `data_ptr()`s; convgrad wraps them with their lengths checked. On an NVIDIA
//! GPU, a PyTorch stream's `cuda_stream` integer goes where `create_stream`
//! is called here.
//!
//! Run: `cargo run --release -p convgrad --example framework`

use convgrad::check::{self, Init};
use convgrad::ops::bwd_data::{self, BwdDataConfig, BwdDataTensors};
use convgrad::ops::bwd_weight::{self, BwdWeightConfig, BwdWeightTensors};
use convgrad::ops::{PlanCache, Workspace, WorkspaceContents};
use convgrad::runtime::{Backend, Device, DeviceBuffer};
use convgrad::types::{ConvLayout, ConvProblem, DType, TensorDesc, TensorRole, TypeConfig};

/// One layer's backward pass, as a framework's autograd would run it.
struct Layer {
    problem: ConvProblem,
    x: DeviceBuffer<u8>,
    w: DeviceBuffer<u8>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::shared(Backend::Auto, 0)?;
    println!("device: {} ({}) — {}", dev.name(), dev.arch(), dev.selection_note());
    let layout = ConvLayout::NhwgcGkyxcNhwgk;
    let wcfg = BwdWeightConfig { layout, types: TypeConfig::F16, ..Default::default() };
    let dcfg = BwdDataConfig { layout, types: TypeConfig::F16, ..Default::default() };

    // A small network: a grouped 3x3, a strided 3x3, a depthwise 3x3 (CK's argument order).
    let shapes: [&[usize]; 3] = [
        &[2, 4, 2, 16, 16, 3, 3, 12, 12, 1, 1, 1, 1, 1, 1, 1, 1],
        &[2, 1, 2, 32, 64, 3, 3, 12, 12, 2, 2, 1, 1, 1, 1, 1, 1],
        &[2, 32, 2, 1, 1, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1],
    ];
    let bytes = |d: &TensorDesc| d.span() as usize * 2;
    let mut layers = Vec::new();
    for (i, s) in shapes.iter().enumerate() {
        let p = ConvProblem::from_ck_args(s)?;
        // Ask before committing: a framework falls back to its own kernels here.
        if let Err(why) = bwd_weight::supports(&p, &wcfg, dev.arch()).and(bwd_data::supports(&p, &dcfg, dev.arch())) {
            println!("layer {i}: falls back ({why})");
            continue;
        }
        let d = |r| TensorDesc::packed(&p, layout, r);
        let fill = |seed, d: &TensorDesc| -> Result<DeviceBuffer<u8>, Box<dyn std::error::Error>> {
            let v = check::fill_random(seed, Init::Float, DType::F16, d.span() as usize);
            Ok(dev.upload(&check::to_bytes(DType::F16, &v))?)
        };
        layers.push(Layer { problem: p, x: fill(i as u64, &d(TensorRole::Input))?, w: fill(99 + i as u64, &d(TensorRole::Weight))? });
    }

    // The framework's stream; every layer of the step is queued on it.
    let stream = dev.create_stream()?;
    let cache = PlanCache::global();
    for step in 0..2 {
        let mut keep = Vec::new();
        for (i, l) in layers.iter().enumerate() {
            let p = &l.problem;
            let d = |r| TensorDesc::packed(p, layout, r);
            let (xd, wd, yd) = (d(TensorRole::Input), d(TensorRole::Weight), d(TensorRole::Output));
            let wop = cache.bwd_weight(&dev, p, &wcfg, xd, wd, yd)?;
            let dop = cache.bwd_data(&dev, p, &dcfg, yd, wd, xd)?;
            // The framework's memory for dy, dx, dw and the workspace, seen by
            // convgrad as raw addresses with lengths.
            let dy = dev.upload(&check::to_bytes(DType::F16, &check::fill_random(7 + step, Init::Float, DType::F16, yd.span() as usize)))?;
            let [dx, dw, ws] = [bytes(&xd), bytes(&wd), wop.workspace_bytes()].map(|n| dev.alloc::<u8>(n));
            let (dx, dw, ws) = (dx?, dw?, ws?);
            ws.fill_zero()?;
            // SAFETY: the framework's buffers outlive the step (kept in `keep`
            // until the stream is synchronized).
            let [dyf, dxf, dwf, wsf] = unsafe {
                [&dy, &dx, &dw, &ws].map(|b| dev.wrap_foreign::<u8>(b.device_addr(), b.len()))
            };
            let (dyf, dxf, dwf, wsf) = (dyf?, dxf?, dwf?, wsf?);
            // bwd-data's own workspace (odd K: its channel-packed copies), apart
            // from bwd-weight's, whose zeros the copies would overwrite.
            let dws = dev.alloc::<u8>(dop.workspace_bytes().max(16))?;
            let t = BwdDataTensors { dy: (&dyf).into(), w: (&l.w).into(), dx: (&dxf).into(), ds: &[] };
            dop.execute_on(&stream, t, Workspace::raw(&dws, WorkspaceContents::Unknown))?;
            let t = BwdWeightTensors { x: (&l.x).into(), dy: (&dyf).into(), dw: (&dwf).into(), ds: &[] };
            wop.execute_on(&stream, t, Workspace::raw(&wsf, WorkspaceContents::Zeroed))?;
            if step == 0 {
                println!("layer {i}: {p}\n  bwd-data:   {}\n  bwd-weight: {}", dop.describe(), wop.describe());
            }
            keep.push((dy, dx, dw, ws, dws));
        }
        // One host wait per step, where the framework needs the gradients.
        stream.synchronize()?;
        let finite = keep.iter().all(|(_, dx, dw, _, _)| {
            [dx, dw].iter().all(|b| check::from_bytes(DType::F16, &b.download().unwrap_or_default()).iter().all(|v| v.is_finite()))
        });
        println!("step {step}: {} layers, all gradients finite: {finite}; {} prepared ops cached", layers.len(), cache.len());
        if !finite {
            std::process::exit(1);
        }
    }
    Ok(())
}
