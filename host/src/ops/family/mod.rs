//! One module per kernel family, as the device crate's
//! `conv/<op>/<family>.rs`: what the family fits (`fits`, with the words
//! `NEEDS` that `cargo xtask list-instances` prints), and its planner: the
//! launch geometry and its part of the argument block.
//!
//! The families import only the leaves of `ops` (request, error, lanes,
//! classes, split, launch) and [`tap_grid`]; [`select`](super::select)
//! ranks their fits and the op plans run their planners.

pub mod bwd_data;
pub mod bwd_weight;
pub mod tap_grid;
pub mod tma;
