//! `convgrad-isa`: runs convgrad's real AMD code objects on the CPU.
//!
//! - [`code_object`]: the ELF, each kernel's `.kd` descriptor and msgpack metadata.
//! - [`decode`]: machine words -> instructions (GFX9 for gfx90a/gfx942, GFX11 for
//!   gfx1100), one file per encoding family.
//! - [`exec`]: wave state, workgroups with LDS and barriers, checked global memory,
//!   the instruction semantics (one file per family) and per-launch counters.

pub mod arch;
pub mod code_object;
pub mod decode;
pub mod exec;

pub use arch::Arch;
pub use code_object::{CodeObject, Kernel, KernelDescriptor};
pub use decode::{DecodeError, Inst};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The code object could not be read.
    #[error("code object: {0}")]
    CodeObject(String),
    /// An instruction could not be decoded.
    #[error("kernel {kernel}: {err}")]
    Decode {
        /// Kernel name.
        kernel: String,
        /// The decoder's error.
        err: DecodeError,
    },
    /// Execution failed (unimplemented instruction, memory check, trap...).
    #[error(transparent)]
    Exec(#[from] exec::ExecError),
}
