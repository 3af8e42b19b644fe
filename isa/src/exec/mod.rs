//! placeholder
/// Execution error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ExecError(pub String);
