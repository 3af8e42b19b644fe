//! Grouped backward-data with a fused bias + ReLU epilogue through the library
//! API, as a framework would call it.
//!
//! Opens the best device (HIP, CUDA, else the CPU emulator), plans a strided
//! 2-D grouped problem in f16 (NHWGC/GKYXC/NHWGK) with `dx = max(dx + bias, 0)`
//! and the bias laid out per channel (CK's `G_C`), runs the one launch, and
//! checks `dx` against the float64 reference.
//!
//! Run: `cargo run --release -p convgrad --example bwd_data`

use convgrad::check::{self, Init};
use convgrad::ops::bwd_data::{self, BwdDataBuffers, BwdDataConfig, DLayout};
use convgrad::runtime::{Backend, Device};
use convgrad::types::{ConvLayout, ConvProblem, DType, EpilogueOp, TypeConfig};
use convgrad::verify;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::open(Backend::Auto, 0)?;
    println!("device: {} ({}) — {}", dev.name(), dev.arch(), dev.selection_note());

    // G=4 groups of K=32 -> C=24, 3x3 filter, stride 2, 13x13 input, pad 1, batch 2,
    // in CK's argument order: ndim G N K C, then filter, input, strides,
    // dilations, left and right pads per spatial dim (the bwd_weight example
    // spells the same fields out with `ConvProblem::new`).
    let p = ConvProblem::from_ck_args(&[2, 4, 2, 32, 24, 3, 3, 13, 13, 2, 2, 1, 1, 1, 1, 1, 1])?;
    let cfg = BwdDataConfig {
        layout: ConvLayout::NhwgcGkyxcNhwgk,
        types: TypeConfig::F16,
        epilogue: vec![EpilogueOp::AddRelu],
        d_layouts: vec![DLayout::PerChannel],
        instance: None,
        strip_rows: None,
    };
    let plan = bwd_data::plan(&p, &cfg, dev.family(), dev.compute_units())?;
    println!("problem: {p}\nkernel: {} over {} stride slices", plan.main.instance.name, plan.slices);

    // Inputs as f16 (random, exactly representable), output poisoned with NaN.
    let f16s = |seed, n| check::fill_random(seed, Init::Float, DType::F16, n);
    let (dy, w, bias) = (f16s(1, plan.dy.span() as usize), f16s(2, plan.w.span() as usize), f16s(3, plan.ds[0].span() as usize));
    let dy_buf = dev.upload(&check::to_f16(&dy))?;
    let w_buf = dev.upload(&check::to_f16(&w))?;
    let bias_buf = dev.upload(&check::to_f16(&bias))?;
    let dx_buf = dev.alloc::<half::f16>(plan.dx.span() as usize)?;
    dx_buf.fill_nan()?;

    let module = dev.load_module()?;
    let mut ds = Vec::new();
    // Odd K would pack dy and w into a workspace first; this problem needs none.
    let ws = (plan.workspace_bytes() > 0).then(|| dev.alloc::<u8>(plan.workspace_bytes())).transpose()?;
    let bufs = BwdDataBuffers::checked(&plan, cfg.types, &dy_buf, &w_buf, &dx_buf, &[&bias_buf], &mut ds, ws.as_ref())?;
    // SAFETY: lengths checked by `BwdDataBuffers::checked`; separate buffers of `dev`, alive past the sync.
    unsafe { bwd_data::execute(&dev, &module, &plan, bufs)? };
    dev.synchronize()?;
    let dx = check::from_f16(&dx_buf.download()?);

    // Check against the float64 reference with the written tolerance rule.
    let report = verify::bwd_data::judge(&plan, &cfg, &dy, &w, &[&bias], &dx).report;
    println!("{}", report.summary());
    if !report.passed() {
        std::process::exit(1);
    }
    Ok(())
}
