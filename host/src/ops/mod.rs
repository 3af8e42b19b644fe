//! The user-facing operations: each turns a problem into kernel launches.
//!
//! - [`bwd_weight`]: grouped backward-weight (split-K, fused Scale/Bilinear).

pub mod bwd_weight;
