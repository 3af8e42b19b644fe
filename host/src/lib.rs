//! convgrad: convolution backward passes as GPU kernels written in Rust.
pub use convgrad_types as types;

pub mod check;
pub mod code_objects;
pub mod ops;
pub mod reference;
pub mod runtime;
pub mod verify;
