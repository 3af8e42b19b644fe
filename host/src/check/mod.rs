//! Judging a device result: seeded random inputs, conversions to and from
//! device storage types, the per-element tolerance rule, and error reports.
//!
//! The usual flow (backward-data shown; backward-weight is the same with
//! [`Tolerance::bwd_weight`]):
//!
//! 1. inputs: [`fill_random`] in the storage types, sent with [`to_bytes`];
//!    the output buffer is filled with [`poisoned_bytes`] (NaN) before the run;
//! 2. reference: `acc` = [`crate::reference::bwd_data`] on the inputs and
//!    `abs` = the same on [`crate::reference::abs_values`] of them;
//! 3. [`expected`] gives the reference values and the allowed error per element;
//! 4. [`compare_expected`] the device output (read back with [`from_bytes`]) with them;
//!    print [`rule_text`] and [`ErrorReport::summary`]; fail unless [`ErrorReport::passed`].
//!
//! ```
//! use convgrad::check::{self, Init, Tolerance};
//! use convgrad::reference as r;
//! use convgrad::types::epilogue::{EpiChain, EpilogueOp};
//! use convgrad::types::{ConvLayout, ConvProblem, TensorDesc, TensorRole, TypeConfig};
//!
//! let p = ConvProblem::from_ck_args(&[2, 2, 2, 8, 4, 3, 3, 9, 9, 2, 2, 1, 1, 1, 1, 1, 1]).unwrap();
//! let tc = TypeConfig::F16;
//! let l = ConvLayout::NhwgcGkyxcNhwgk;
//! let [dxd, wd, dyd] = [TensorRole::Input, TensorRole::Weight, TensorRole::Output].map(|t| TensorDesc::packed(&p, l, t));
//! let dy = check::fill_random(1, Init::Float, tc.act(), dyd.span() as usize);
//! let w = check::fill_random(2, Init::Float, tc.wei(), wd.span() as usize);
//! // Per-channel bias (stride 0 over N and the spatial axes) and ReLU.
//! let bias_d = TensorDesc { lengths: dxd.lengths, strides: [p.c, 0, 1, 0, 0, 0] };
//! let bias = check::fill_random(3, Init::Float, tc.act(), p.g * p.c);
//! let chain = EpiChain::from_ops(&[EpilogueOp::AddRelu]).unwrap();
//! let ds = [(&bias[..], &bias_d)];
//!
//! let n = dxd.span() as usize;
//! let (mut acc, mut abs) = (vec![0.0; n], vec![0.0; n]);
//! r::bwd_data(&p, &dy, &dyd, &w, &wd, &mut acc, &dxd);
//! r::bwd_data(&p, &r::abs_values(&dy), &dyd, &r::abs_values(&w), &wd, &mut abs, &dxd);
//! let tol = Tolerance::bwd_data(tc, &p);
//! let e = check::expected(&tol, &dxd, &acc, Some(&abs), &chain, &ds);
//!
//! // Stand-in for the device: the reference rounded to f16.
//! let device_bytes = check::to_bytes(tc.act(), &e.reference);
//! let out = check::from_bytes(tc.act(), &device_bytes);
//! let report = check::compare_expected(&out, &e, &dxd);
//! println!("{}\n{}", tol.rule_text(), report.summary());
//! assert!(report.passed());
//! ```
//!
//! The rule and its derivation are in [`tolerance`].

mod convert;
mod report;
mod rng;
pub mod tolerance;

pub use convert::{
    from_bf16, from_bytes, from_f16, from_f32, poisoned_bytes, round_slice, round_to, to_bf16,
    to_bytes, to_f16, to_f32, underflow_error, unit_roundoff,
};
pub use report::{ErrorReport, Index, Sample, compare, compare_expected, outside_writes};
pub use rng::{Init, SplitMix64, fill_random};
pub use tolerance::{
    Expected, F32_EXACT_INT, Tolerance, accum_len_bwd_data, accum_len_bwd_weight, expected,
    is_small_integer_data, rule_text, split_len,
};

#[cfg(test)]
mod tests;
