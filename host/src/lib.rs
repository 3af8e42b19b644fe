//! convgrad: convolution backward passes as GPU kernels written in Rust.
pub use convgrad_types as types;

pub mod reference;
pub mod runtime;
pub mod ops;
