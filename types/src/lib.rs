//! Shared descriptor types of convgrad, used by the device kernels (`no_std`,
//! compiled for amdgcn, nvptx and the host emulator), by the host runtime and
//! by the build pipeline.
//!
//! - [`ConvProblem`]: the shape of a grouped N-d convolution (CK's `ConvParam`).
//! - [`ConvLayout`] / [`TensorDesc`]: the four layout families, and strided tensors.
//! - [`DType`] / [`TypeConfig`]: element types and their combinations.
//! - [`EpilogueOp`]: the element-wise operations fused into a kernel's write.
//! - [`params`]: the `#[repr(C)]` argument block kernels receive (by value on NVIDIA, by pointer on AMD).
//! - [`instance`]: the table of kernel instances (tile configurations).
#![no_std]
#![deny(missing_docs)]

pub mod contract;
pub mod dtype;
pub mod epilogue;
pub mod error;
pub mod instance;
pub mod layout;
pub mod params;
pub mod problem;

pub use dtype::{DType, TypeConfig};
pub use epilogue::EpilogueOp;
pub use error::DescError;
pub use layout::{ConvLayout, TensorDesc, TensorRole};
pub use problem::ConvProblem;
