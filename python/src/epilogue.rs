//! Fused backward-data epilogues and their `D` tensors, from Python values.
//!
//! Epilogue steps are strings in `cargo xtask verify --epilogue` spelling
//! (`pass`, `add`, `add-relu`, `relu-mask`, `scale=S`, `bilinear=A,B`;
//! `_` works for `-`), or tuples `("scale", s)`, `("bilinear", a, b)`; one
//! string may hold a chain joined by `+`. Each step that reads a `D` takes
//! the next tensor of `d_tensors`.
//!
//! A `D` tensor's layout ([`DLayout`]) is read off its PyTorch shape:
//! - `[G*C]` (or `[1, G*C, 1, ...]`): a per-channel bias (`G_C`);
//! - `[N, G, *spatial]` with `C > 1`, channels innermost in memory: one value
//!   per pixel and group (`G_NHW`), e.g. `[N, 1, H, W]` for `G = 1`;
//! - `dx`'s shape: a full tensor, contiguous (`NGCHW`) or channels_last
//!   (`NHWGC`); in `dx`'s own format it is `output` (and may be `dx` itself).

use crate::dlpack::Tensor;
use crate::errors;
use crate::layout::{self, Order};
use convgrad::ops::bwd_data::DLayout;
use convgrad::types::layout::AXES;
use convgrad::types::{ConvLayout, ConvProblem, EpilogueOp, TensorDesc};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

/// Parses the `epilogue` argument (a string, or a list of strings/tuples).
pub fn parse(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<EpilogueOp>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(Vec::new()) };
    let mut ops = Vec::new();
    if let Ok(s) = obj.cast::<PyString>() {
        for part in s.extract::<String>()?.split('+').filter(|p| !p.trim().is_empty()) {
            ops.push(parse_str(part)?);
        }
        return Ok(ops);
    }
    let items = obj.try_iter().map_err(|_| errors::type_err("epilogue", "expected a string or a list of steps"))?;
    for (i, item) in items.enumerate() {
        let item = item?;
        if let Ok(s) = item.cast::<PyString>() {
            for part in s.extract::<String>()?.split('+').filter(|p| !p.trim().is_empty()) {
                ops.push(parse_str(part)?);
            }
        } else if let Ok(t) = item.cast::<PyTuple>() {
            ops.push(parse_tuple(i, t)?);
        } else {
            return Err(errors::type_err(&format!("epilogue[{i}]"), "expected a string or a tuple"));
        }
    }
    Ok(ops)
}

const STEPS: &str = "pass, add, add-relu, relu-mask, scale=S, bilinear=A,B";

fn parse_str(s: &str) -> PyResult<EpilogueOp> {
    let s = s.trim().to_ascii_lowercase().replace('_', "-");
    let (name, args) = match s.split_once('=') {
        Some((n, a)) => (n.trim().to_string(), Some(a.to_string())),
        None => (s.clone(), None),
    };
    let nums = |n: usize| -> PyResult<Vec<f32>> {
        let a = args.as_deref().unwrap_or("");
        let v: Result<Vec<f32>, _> = a.split(',').map(|x| x.trim().parse::<f32>()).collect();
        match v {
            Ok(v) if v.len() == n => Ok(v),
            _ => Err(errors::value("epilogue", format!("`{s}`: expected {n} number(s) after `=`"))),
        }
    };
    Ok(match name.as_str() {
        "pass" | "passthrough" | "pass-through" => EpilogueOp::PassThrough,
        "add" => EpilogueOp::Add,
        "add-relu" | "addrelu" | "bias-relu" => EpilogueOp::AddRelu,
        "relu-mask" | "relumask" => EpilogueOp::ReluMask,
        "scale" => EpilogueOp::Scale(nums(1)?[0]),
        "bilinear" => {
            let v = nums(2)?;
            EpilogueOp::Bilinear(v[0], v[1])
        }
        _ => return Err(errors::value("epilogue", format!("unknown step `{s}`; expected one of: {STEPS}"))),
    })
}

fn parse_tuple(i: usize, t: &Bound<'_, PyTuple>) -> PyResult<EpilogueOp> {
    let arg = format!("epilogue[{i}]");
    let name: String = t.get_item(0).and_then(|n| n.extract()).map_err(|_| errors::type_err(&arg, "a tuple step starts with its name"))?;
    let nums: Vec<f32> = (1..t.len())
        .map(|j| t.get_item(j).and_then(|v| v.extract::<f32>()))
        .collect::<PyResult<_>>()
        .map_err(|_| errors::type_err(&arg, "the step's parameters must be numbers"))?;
    let joined = nums.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(",");
    parse_str(&if nums.is_empty() { name } else { format!("{name}={joined}") })
}

/// How one `D` tensor maps onto `dx`'s canonical axes: the layout to plan
/// with and the tensor's own canonical strides (0 on broadcast axes).
pub struct DMap {
    /// Layout for the planner.
    pub layout: DLayout,
    /// Canonical strides of the tensor as given.
    pub strides: [usize; AXES],
}

/// Reads the layout of `d` (PyTorch shape) for `dx` (`dx_layout`'s family).
pub fn d_layout(d: &Tensor, dx: &Tensor, p: &ConvProblem, dx_layout: ConvLayout) -> PyResult<DMap> {
    let gc = p.g * p.c;
    let rank = dx.shape.len();
    let s = &d.strides;
    // Per-channel bias: [G*C] or [1, G*C, 1, ...].
    let bias_shape = d.shape.len() == 1 && d.shape[0] == gc
        || d.shape.len() == rank && d.shape[1] == gc && d.shape.iter().enumerate().all(|(i, &l)| i == 1 || l == 1);
    if bias_shape && d.shape != dx.shape {
        let st = if d.shape.len() == 1 { s[0] } else { s[1] } as usize;
        let st = if gc == 1 { 1 } else { st };
        return Ok(DMap { layout: DLayout::PerChannel, strides: [p.c * st, 0, st, 0, 0, 0] });
    }
    if d.shape == dx.shape {
        let orders = layout::orders(d);
        let own = layout::act_order(dx_layout);
        // In dx's own format it is `Output` (which an alias of dx needs).
        let layout = if orders.contains(&own) {
            DLayout::Output
        } else if let Some(&o) = orders.first() {
            DLayout::Full(match o {
                Order::ChannelsLast => ConvLayout::NhwgcGkyxcNhwgk,
                Order::Contiguous => ConvLayout::NgchwGkcyxNgkhw,
            })
        } else {
            return Err(layout::layout_error(d, "D"));
        };
        let strides = layout::canonical_strides(d, p, convgrad::types::TensorRole::Input);
        return Ok(DMap { layout, strides });
    }
    // Per pixel: [N, G, *spatial], G innermost.
    let per_pixel = d.shape.len() == rank && d.shape[0] == dx.shape[0] && d.shape[1] == p.g && d.shape[2..] == dx.shape[2..];
    if per_pixel {
        let mut strides = [0usize; AXES];
        strides[0] = s[1] as usize;
        strides[1] = s[0] as usize;
        for (o, &v) in strides[AXES - p.ndim..].iter_mut().zip(&s[2..]) {
            *o = v as usize;
        }
        return Ok(DMap { layout: DLayout::PerPixel, strides });
    }
    Err(errors::value(
        &d.name,
        format!(
            "shape {:?} is none of the D layouts: [G*C] = [{gc}] (per-channel bias), \
             [N, G, *spatial] = {:?} (per pixel), or dx's shape {:?} (full tensor)",
            d.shape,
            [&dx.shape[..1], &[p.g][..], &dx.shape[2..]].concat(),
            dx.shape
        ),
    ))
}

/// Checks that `d`'s strides are those the plan expects for it (every axis
/// of `dx` longer than 1; broadcast axes have stride 0 in both).
pub fn check_strides(d: &Tensor, m: &DMap, want: &TensorDesc) -> PyResult<()> {
    for a in 0..AXES {
        if want.lengths[a] > 1 && want.strides[a] != m.strides[a] {
            return Err(errors::value(
                &d.name,
                format!(
                    "strides {:?} do not fit the {} layout convgrad reads it in (canonical G,N,C,D,H,W strides {:?}, \
                     expected {:?}); make it dense ({})",
                    d.strides,
                    m.layout.name(),
                    m.strides,
                    want.strides,
                    match m.layout {
                        DLayout::PerPixel => "channels innermost: [N, G, *spatial] in channels_last order",
                        _ => ".contiguous() or channels_last",
                    }
                ),
            ));
        }
    }
    Ok(())
}
