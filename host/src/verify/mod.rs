//! Verification harness: run an operation on a device with fresh random
//! inputs and NaN-poisoned outputs, and judge the result against the float64
//! CPU reference with the written-down tolerance rule ([`crate::check::tolerance`]).
//!
//! Used by `cargo xtask verify` and by the test suites, so both exercise the
//! same path.

pub mod bwd_data;
pub mod bwd_weight;

use crate::check::{self, ErrorReport, Expected, Init, Tolerance};
use crate::ops::OpError;
use crate::reference::{self, DTensor};
use crate::runtime::Device;
use convgrad_types::epilogue::EpiChain;
use convgrad_types::{ConvLayout, DType, TensorDesc, TensorRole};

/// A host-side copy of one tensor, for `--dump`.
#[derive(Clone, Debug)]
pub struct TensorDump {
    /// File stem, e.g. `"x"`, `"dw"`, `"reference"`.
    pub name: &'static str,
    /// Layout letters in memory order, e.g. `"NHWGC"`.
    pub layout: String,
    /// Shape in the order of the layout's letters.
    pub shape: Vec<usize>,
    /// Storage type name (`f32`, `f16`, `bf16`, or `f64` for the reference).
    pub dtype: &'static str,
    /// Values in memory order (packed), widened to f64 exactly.
    pub values: Vec<f64>,
}

/// What one verification run found.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Kernel instance that ran.
    pub instance: &'static str,
    /// What ran, in one line (`BwdWeightPlan::describe` / `BwdDataPlan::describe`).
    pub describe: String,
    /// k-batches of split-K.
    pub k_batch: u32,
    /// Split-K mode in words.
    pub split_mode: &'static str,
    /// Comparison against the reference.
    pub report: ErrorReport,
    /// The tolerance rule, as text.
    pub rule: String,
    /// Median kernel time in ms over the timed runs, if timing was asked for.
    pub median_ms: Option<f64>,
    /// Raw device output bytes (bitwise determinism checks).
    pub output_bytes: Vec<u8>,
    /// Tensors for `--dump` (empty unless asked for).
    pub dumps: Vec<TensorDump>,
}

impl Outcome {
    /// Whether the result passed the rule.
    pub fn passed(&self) -> bool {
        self.report.passed()
    }
}

/// Errors of a verification run (not a failed comparison: that is an [`Outcome`]).
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Reorders a canonical-strided buffer into the memory order of `layout`
/// letters, returning (shape, values) for dumping.
pub(crate) fn memory_order_dump(
    buf: &[f64],
    desc: &convgrad_types::TensorDesc,
    order: &[usize],
) -> (Vec<usize>, Vec<f64>) {
    let shape: Vec<usize> = order.iter().map(|&a| desc.lengths[a]).collect();
    let total: usize = shape.iter().product();
    let mut out = Vec::with_capacity(total);
    let mut idx = vec![0usize; order.len()];
    for _ in 0..total {
        let mut c = [0usize; 6];
        for (k, &a) in order.iter().enumerate() {
            c[a] = idx[k];
        }
        out.push(buf[desc.offset(c)]);
        for k in (0..idx.len()).rev() {
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    (shape, out)
}

/// The float64 side of one check, as [`bwd_weight::judge`] and
/// [`bwd_data::judge`] give it.
#[derive(Clone, Debug)]
pub struct Judged {
    /// Comparison of the device output against the reference.
    pub report: ErrorReport,
    /// Reference values and the allowed error per element.
    pub expected: Expected,
    /// The tolerance rule applied.
    pub tolerance: Tolerance,
}

/// Judges `out` (the output tensor `desc`, read back from the device) against
/// the float64 reference: `pass(a, b, acc)` is the operation's reference pass
/// on its two inputs; it runs on `inputs` for the accumulator and on their
/// absolute values for the error bound, then the epilogue `chain` reads the
/// `D` tensors (values `ds`, descriptors `d_descs`) and
/// [`check::compare_expected`] applies `tolerance` (both tests; exact where
/// both inputs are small integers, [`check::is_small_integer_data`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn judge(
    tolerance: Tolerance,
    desc: &TensorDesc,
    out: &[f64],
    inputs: [&[f64]; 2],
    chain: &EpiChain,
    ds: &[&[f64]],
    d_descs: &[TensorDesc],
    pass: impl Fn(&[f64], &[f64], &mut [f64]),
) -> Judged {
    let n = desc.span() as usize;
    let mut acc = vec![0.0; n];
    pass(inputs[0], inputs[1], &mut acc);
    let mut abs = vec![0.0; n];
    pass(&reference::abs_values(inputs[0]), &reference::abs_values(inputs[1]), &mut abs);
    let ds: Vec<DTensor<'_>> = ds.iter().copied().zip(d_descs).collect();
    let tolerance = tolerance.with_integer_data(inputs.iter().all(|v| check::is_small_integer_data(v)));
    let expected = check::expected(&tolerance, desc, &acc, Some(&abs), chain, &ds);
    let report = check::compare_expected(out, &expected, desc);
    Judged { report, expected, tolerance }
}

/// Layout letters and memory order (outermost first) of a tensor for dumps.
pub(crate) type DumpLayout = (String, Vec<usize>);

/// [`DumpLayout`] of the tensor `role` in the layout family `l`.
pub(crate) fn dump_layout(l: ConvLayout, role: TensorRole, ndim: usize) -> DumpLayout {
    let mut b = [0u8; 6];
    let (order, len) = l.memory_order(role, ndim);
    (l.letters(role, ndim, &mut b).to_string(), order[..len].to_vec())
}

/// One tensor of a verification run.
pub(crate) struct Tensor<'a> {
    /// Dump name (`x`, `dy`, `dw`, ...; `D` tensors take [`crate::ops::D_NAMES`]).
    pub name: &'static str,
    /// Its descriptor in the plan.
    pub desc: &'a TensorDesc,
    /// Storage type on the device.
    pub dtype: DType,
    /// Elements drawn or allocated (the descriptor's span).
    pub len: usize,
    /// How `--dump` writes it.
    pub dump: DumpLayout,
}

impl<'a> Tensor<'a> {
    /// A tensor of `desc.span()` elements.
    pub fn new(name: &'static str, desc: &'a TensorDesc, dtype: DType, dump: DumpLayout) -> Self {
        Tensor { name, desc, dtype, len: desc.span() as usize, dump }
    }
}

/// How a case draws and runs, common to both operations' cases.
pub(crate) struct Draw {
    /// Inputs get `seed`, `seed + 1`, `D_i` gets `seed + 2 + i`.
    pub seed: u64,
    /// Integer or float inputs.
    pub init: Init,
    /// The output starts with `D0`'s values and `D0` is the output buffer itself.
    pub alias_d0: bool,
    /// Timed runs after the checked one.
    pub timed_runs: usize,
    /// Keep host copies of the tensors.
    pub dump: bool,
}

/// Device addresses of one run, handed to the operation's launch.
#[derive(Clone, Copy)]
pub(crate) struct Addrs<'a> {
    /// The two inputs, in the order of the reference pass.
    pub inputs: [u64; 2],
    /// The output.
    pub output: u64,
    /// The `D` tensors (`D0` is `output` when aliased).
    pub ds: &'a [u64],
}

/// The tensors of one run, as the plan lays them out.
pub(crate) struct Tensors<'a> {
    /// The two inputs, in the order of the reference pass.
    pub inputs: [Tensor<'a>; 2],
    /// The output.
    pub output: Tensor<'a>,
    /// The epilogue's `D` tensors.
    pub ds: Vec<Tensor<'a>>,
}

impl<'a> Tensors<'a> {
    /// The two inputs and the output, each `(name, descriptor, type, role)`,
    /// dumped in the layout family `l` of an `ndim`-D problem; the `D`
    /// tensors `ds` as given.
    pub fn in_layout(
        l: ConvLayout,
        ndim: usize,
        inputs: [(&'static str, &'a TensorDesc, DType, TensorRole); 2],
        output: (&'static str, &'a TensorDesc, DType, TensorRole),
        ds: Vec<Tensor<'a>>,
    ) -> Self {
        let tensor = |(name, desc, dtype, role)| Tensor::new(name, desc, dtype, dump_layout(l, role, ndim));
        Tensors { inputs: inputs.map(tensor), output: tensor(output), ds }
    }
}

/// What a plan says about itself, for the [`Outcome`].
pub(crate) struct Planned {
    pub instance: &'static str,
    pub describe: String,
    pub k_batch: u32,
    pub split_mode: &'static str,
}

/// The harness both operations share: draws fresh random inputs and `D`
/// tensors (seeded by `draw`), uploads them, poisons the output with NaN (or
/// starts it from `D0` when aliased), runs `execute` once, reads the output
/// back, times further runs if asked, and judges the result with
/// `judge(inputs, ds, out)`.
pub(crate) fn check_run(
    dev: &Device,
    draw: &Draw,
    planned: Planned,
    tensors: Tensors<'_>,
    execute: impl Fn(Addrs<'_>) -> Result<(), OpError>,
    judge: impl FnOnce([&[f64]; 2], &[&[f64]], &[f64]) -> Judged,
) -> Result<Outcome, Error> {
    let Tensors { inputs, output, ds } = tensors;
    let draw_values = |t: &Tensor<'_>, k: u64| check::fill_random(draw.seed.wrapping_add(k), draw.init, t.dtype, t.len);
    let a = draw_values(&inputs[0], 0);
    let b = draw_values(&inputs[1], 1);
    let dv: Vec<Vec<f64>> = ds.iter().enumerate().map(|(i, t)| draw_values(t, 2 + i as u64)).collect();
    let alias = draw.alias_d0;
    if alias && ds.first().is_none_or(|d| d.desc != output.desc) {
        return Err(format!(
            "aliasing D0 with {} needs an epilogue that reads a D0 in the `output` layout",
            output.name
        )
        .into());
    }

    let upload = |t: &Tensor<'_>, v: &[f64]| dev.upload(&check::to_bytes(t.dtype, v));
    let a_buf = upload(&inputs[0], &a)?;
    let b_buf = upload(&inputs[1], &b)?;
    let out_init = if alias { check::to_bytes(output.dtype, &dv[0]) } else { check::poisoned_bytes(output.dtype, output.len) };
    let out_buf = dev.upload(&out_init)?;
    let d_bufs = ds.iter().zip(&dv).skip(alias as usize).map(|(t, v)| upload(t, v)).collect::<Result<Vec<_>, _>>()?;
    let mut d_addrs: Vec<u64> = d_bufs.iter().map(|b| b.device_addr()).collect();
    if alias {
        d_addrs.insert(0, out_buf.device_addr());
    }
    let addrs = Addrs { inputs: [a_buf.device_addr(), b_buf.device_addr()], output: out_buf.device_addr(), ds: &d_addrs };

    execute(addrs)?;
    dev.synchronize()?;
    let output_bytes = out_buf.download()?;
    let out = check::from_bytes(output.dtype, &output_bytes);
    let median_ms = median_ms(dev, draw.timed_runs, || execute(addrs))?;

    let d_values: Vec<&[f64]> = dv.iter().map(Vec::as_slice).collect();
    let judged = judge([&a, &b], &d_values, &out);

    let mut dumps = Vec::new();
    if draw.dump {
        let mut push = |t: &Tensor<'_>, name: &'static str, values: &[f64], dtype: &'static str| {
            let (shape, values) = memory_order_dump(values, t.desc, &t.dump.1);
            dumps.push(TensorDump { name, layout: t.dump.0.clone(), shape, dtype, values });
        };
        push(&inputs[0], inputs[0].name, &a, inputs[0].dtype.name());
        push(&inputs[1], inputs[1].name, &b, inputs[1].dtype.name());
        for (t, v) in ds.iter().zip(&dv) {
            push(t, t.name, v, t.dtype.name());
        }
        push(&output, output.name, &out, output.dtype.name());
        push(&output, "reference", &judged.expected.reference, "f64");
    }
    Ok(Outcome {
        instance: planned.instance,
        describe: planned.describe,
        k_batch: planned.k_batch,
        split_mode: planned.split_mode,
        report: judged.report,
        rule: judged.tolerance.rule_text(),
        median_ms,
        output_bytes,
        dumps,
    })
}

/// Median time in ms of `runs` further runs of `execute` (`None` for 0).
fn median_ms(dev: &Device, runs: usize, execute: impl Fn() -> Result<(), OpError>) -> Result<Option<f64>, Error> {
    if runs == 0 {
        return Ok(None);
    }
    let mut t = Vec::with_capacity(runs);
    for _ in 0..runs {
        let ((), ms) = dev.time(|| {
            execute().map_err(|e| match e {
                OpError::Runtime(r) => r,
                other => panic!("plan was already checked: {other}"),
            })
        })?;
        t.push(ms as f64);
    }
    t.sort_by(f64::total_cmp);
    Ok(Some(t[t.len() / 2]))
}

#[cfg(test)]
mod tests {
    use crate::check::{self, Init};
    use crate::ops::bwd_weight::{self as op, BwdWeightConfig};
    use crate::reference;
    use convgrad_types::instance::Family;
    use convgrad_types::{ConvProblem, TypeConfig};

    /// The verify path finds integer inputs by itself: with `Init::Int` data
    /// over a reduction of 16384 (where the worst-case bound is about 200), a
    /// dW exact but for one element off by 1.0 fails, and the exact one passes.
    #[test]
    fn integer_inputs_are_judged_exactly() {
        let p = ConvProblem::from_ck_args(&[2, 1, 4, 8, 8, 1, 1, 64, 64, 1, 1, 1, 1, 0, 0, 0, 0]).unwrap();
        let cfg = BwdWeightConfig { types: TypeConfig::F32, ..Default::default() };
        let plan = op::plan(&p, &cfg, Family::Cdna, 64).unwrap();
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(3, |d| d.as_nanos() as u64);
        let x = check::fill_random(seed, Init::Int, cfg.types.act(), plan.x.span() as usize);
        let dy = check::fill_random(seed + 1, Init::Int, cfg.types.act(), plan.dy.span() as usize);
        let mut dw = vec![0.0; plan.dw.span() as usize];
        reference::bwd_weight(&p, &x, &plan.x, &dy, &plan.dy, &mut dw, &plan.dw);
        let judged = super::bwd_weight::judge(&plan, &cfg, &x, &dy, &[], &dw);
        assert!(judged.report.passed() && judged.tolerance.integer_data, "seed {seed}: {}", judged.report);
        let j = (seed % dw.len() as u64) as usize;
        dw[j] += 1.0;
        let judged = super::bwd_weight::judge(&plan, &cfg, &x, &dy, &[], &dw);
        assert!(!judged.report.passed() && judged.report.fail_count == 1, "seed {seed}: off by one passed: {}", judged.report);
        let mut abs = vec![0.0; dw.len()];
        let a = reference::abs_values;
        reference::bwd_weight(&p, &a(&x), &plan.x, &a(&dy), &plan.dy, &mut abs, &plan.dw);
        let worst_case = judged.tolerance.with_integer_data(false).bound(dw[j], abs[j]);
        assert!(worst_case > 10.0, "seed {seed}: the worst-case bound alone would let it through ({worst_case})");
    }
}
