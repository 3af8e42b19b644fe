//! Grouped backward-weight through the library API, as a framework would call it.
//!
//! Opens the best device (HIP, CUDA, else the CPU emulator), plans a 2-D grouped
//! problem in f16 with NHWGC/GKYXC/NHWGK layouts, uploads `x` and `dy`, runs the
//! kernels, downloads `dw` and checks it against the float64 reference.
//!
//! Run: `cargo run --release -p convgrad --example bwd_weight`

use convgrad::check::{self, Init};
use convgrad::ops::bwd_weight::{self, BwdWeightBuffers, BwdWeightConfig, SplitK};
use convgrad::runtime::{Backend, Device};
use convgrad::types::{ConvLayout, ConvProblem, DType, TypeConfig, problem::Spatial};
use convgrad::verify;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::open(Backend::Auto, 0)?;
    println!("device: {} ({}) — {}", dev.name(), dev.arch(), dev.selection_note());

    // G=8 groups of C=32 -> K=32, 3x3 filter, 12x12 input, pad 1, batch 2.
    let p = ConvProblem::new(2, 8, 2, 32, 32, Spatial {
        filter: &[3, 3],
        input: &[12, 12],
        strides: &[1, 1],
        dilations: &[1, 1],
        lpads: &[1, 1],
        rpads: &[1, 1],
    })?;
    let cfg = BwdWeightConfig {
        layout: ConvLayout::NhwgcGkyxcNhwgk,
        types: TypeConfig::F16,
        split_k: SplitK::Auto,
        ..Default::default()
    };
    let plan = bwd_weight::plan(&p, &cfg, dev.family(), dev.compute_units())?;
    println!("problem: {p}\nkernel: {} with k_batch {}", plan.main.instance.name, plan.k_batch);

    // Inputs as f16 (random, exactly representable), output poisoned with NaN.
    let x = check::fill_random(1, Init::Float, DType::F16, plan.x.span() as usize);
    let dy = check::fill_random(2, Init::Float, DType::F16, plan.dy.span() as usize);
    let x_buf = dev.upload(&check::to_f16(&x))?;
    let dy_buf = dev.upload(&check::to_f16(&dy))?;
    let dw_buf = dev.alloc::<half::f16>(plan.dw.span() as usize)?;
    dw_buf.fill_nan()?;
    let ws = bwd_weight::SplitKWorkspace::for_plan(&dev, &plan)?;

    let module = dev.load_module()?;
    let bufs = BwdWeightBuffers { x: x_buf.device_addr(), dy: dy_buf.device_addr(), dw: dw_buf.device_addr(), ds: &[] };
    let ((), ms) = dev.time(|| {
        // SAFETY: the buffers above, of `dev`, span the plan's tensors, apart, alive past the timed sync.
        unsafe { bwd_weight::execute(&dev, &module, &plan, bufs, ws.as_ref()) }.map_err(|e| match e {
            bwd_weight::OpError::Runtime(r) => r,
            other => panic!("{other}"),
        })
    })?;
    let dw = check::from_f16(&dw_buf.download()?);

    // Check against the float64 reference with the written tolerance rule.
    let report = verify::bwd_weight::judge(&plan, &cfg, &x, &dy, &[], &dw).report;
    println!("{} ({ms:.3} ms)", report.summary());
    if !report.passed() {
        std::process::exit(1);
    }
    Ok(())
}
