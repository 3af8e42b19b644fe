//! The user-facing operations: each turns a problem into kernel launches.
//!
//! - [`bwd_weight`]: grouped backward-weight (split-K, fused Scale/Bilinear).
//! - [`bwd_data`]: grouped backward-data (stride-residue slices in one
//!   launch, fused multi-D epilogue).
//!
//! Layered like the device crate, bottom up; a file imports only files of
//! the layers below it (`.ci/ops_import_cycles.py` checks there is no circle):
//! 1. leaves: [`error`] (`OpError`, `Unsupported`, `Reason`), `launch`
//!    (`LaunchSpec`), `checks`, `lanes`, `classes`, `split` (`SplitK`),
//!    `request` (`select::Request`), `workspace`, `fold`, `pack`, [`batch`] (the
//!    split along N and G of tensors past 2^31 elements);
//! 2. [`family`]: one module per kernel family (its fit, launch geometry and
//!    argument part), as `device/src/conv/<op>/<family>.rs`;
//! 3. [`tuned`] (the measured table) and [`select`] (ranks the families' fits);
//! 4. the op plans `bwd_weight::plan`, `bwd_data::plan`;
//! 5. `prepared` (`BwdWeightOp`, `BwdDataOp`), `cache`, and the public
//!    faces [`bwd_weight`], [`bwd_data`] and this file.

pub mod batch;
pub mod bwd_data;
pub mod bwd_weight;
mod cache;
mod checks;
mod classes;
pub mod error;
pub mod family;
pub mod find;
pub mod find_file;
mod fold;
mod lanes;
mod launch;
mod pack;
mod prepared;
mod request;
pub mod select;
mod split;
pub mod tuned;
mod workspace;

pub use cache::PlanCache;
pub use pack::{PackCopy, Packed};
pub use find::{FindMode, FindOptions};
pub use find_file::CacheFile;
pub use checks::D_NAMES;
pub use error::{OpError, Reason, Unsupported};
pub use launch::LaunchSpec;
pub use workspace::{Workspace, WorkspaceContents};
