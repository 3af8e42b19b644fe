//! convgrad: convolution backward passes as GPU kernels written in Rust.
//!
//! - [`ops`]: the operations. A framework checks [`ops::bwd_weight::supports`]
//!   / [`ops::bwd_data::supports`], takes a prepared operation from
//!   [`ops::PlanCache`] ([`ops::bwd_weight::BwdWeightOp`],
//!   [`ops::bwd_data::BwdDataOp`]) and runs it with `execute_on` on its own
//!   stream ([`runtime::Device::wrap_stream`]) and memory
//!   ([`runtime::Device::wrap_foreign`]); `examples/framework.rs` shows the
//!   whole flow. The plan-level functions (`plan`, `execute`) are what
//!   `xtask verify` and `bench` use.
//! - [`runtime`]: devices (HIP, CUDA, the CPU emulator), streams, buffers, launches.
//! - [`reference`](mod@reference), [`check`], [`verify`]: the float64 reference, the tolerance
//!   rule and the verification harness.
pub use convgrad_types as types;

pub mod check;
pub mod code_objects;
pub mod ops;
pub mod reference;
pub mod runtime;
pub mod verify;
