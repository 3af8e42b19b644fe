//! [`RuntimeError`]: everything the runtime can report, each variant carrying
//! enough to act on (the failing call and the runtime's own words, the sizes
//! that disagree, the names that exist).

use std::fmt;

/// Result of runtime calls.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

/// An error of the host runtime.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A GPU runtime call failed; `message` is the runtime's own error name and text,
    /// e.g. `cuModuleLoadData failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)`.
    #[error("{call} failed: {message}")]
    Call {
        /// The API call, e.g. `cuModuleLoadData` or `hipMalloc`.
        call: &'static str,
        /// The runtime's error name and description.
        message: String,
    },
    /// The emulator refused a call or a kernel broke a rule.
    #[error("emulator {call} failed: {source}")]
    Emulator {
        /// The emulator call, e.g. `launch`.
        call: &'static str,
        /// What the emulator said.
        #[source]
        source: convgrad_emu::EmuError,
    },
    /// The requested backend has no usable device.
    #[error("{0}")]
    NoDevice(String),
    /// The backend was not compiled into this build.
    #[error("{0}")]
    NotBuilt(String),
    /// The device's architecture has no kernels in convgrad.
    #[error("unsupported GPU architecture {found} ({device}); supported: {}", .supported.join(", "))]
    UnsupportedArch {
        /// The device's name.
        device: String,
        /// What the device reported (e.g. `sm_75`, `gfx1030`).
        found: String,
        /// Architectures convgrad has kernels for.
        supported: Vec<&'static str>,
    },
    /// No code object was built (embedded) for the device's architecture.
    #[error(
        "no code object for {arch} in this build (built: {}); run `cargo xtask build-kernels --arch {arch}` and rebuild",
        if .built.is_empty() { "none".to_string() } else { .built.join(", ") }
    )]
    NoCodeObject {
        /// The device architecture.
        arch: String,
        /// Architectures that were built.
        built: Vec<String>,
    },
    /// A kernel name that the module does not contain.
    #[error("kernel `{name}` not found in the {arch} module; it has: {}", list_or_none(.available))]
    KernelNotFound {
        /// The requested name.
        name: String,
        /// The module's architecture (or emulator family).
        arch: String,
        /// Kernels that exist.
        available: Vec<String>,
    },
    /// A kernel's argument layout in the code object's metadata is not the
    /// convgrad ABI (one 8-byte pointer to an argument block).
    #[error("kernel `{kernel}`: argument layout mismatch: found {found}; expected {expected}")]
    ArgLayout {
        /// Kernel name.
        kernel: String,
        /// What the metadata says.
        found: String,
        /// What the host passes.
        expected: String,
    },
    /// A code object that could not be parsed.
    #[error("malformed code object: {0}")]
    CodeObject(String),
    /// The code object was built for another architecture than the device's.
    #[error("code object targets {found} but the device is {device_arch}")]
    ArchMismatch {
        /// Target recorded in the code object.
        found: String,
        /// The device's architecture.
        device_arch: String,
    },
    /// Host and device sizes disagree.
    #[error("{what}: size mismatch: {host} on the host vs {device} on the device")]
    SizeMismatch {
        /// The operation, e.g. `upload`.
        what: &'static str,
        /// Host-side size, e.g. `100 elements (400 bytes)`.
        host: String,
        /// Device-side size.
        device: String,
    },
    /// A buffer smaller than the problem descriptor requires.
    #[error("buffer for {what} too small: the problem needs {required}, the buffer holds {actual}")]
    BufferTooSmall {
        /// The tensor, e.g. `dy`.
        what: String,
        /// What the problem needs.
        required: String,
        /// What the buffer holds.
        actual: String,
    },
    /// A launch with a shape the device or kernel cannot run.
    #[error("launch of `{kernel}`: {what}")]
    InvalidLaunch {
        /// Kernel name.
        kernel: String,
        /// What is wrong.
        what: String,
    },
    /// Caller memory that cannot be wrapped: not this device's, misaligned,
    /// or shorter than the length given.
    #[error("foreign memory: {0}")]
    ForeignMemory(String),
    /// An object (buffer, kernel, event) used with a device it does not belong to.
    #[error("{0} belongs to another device")]
    WrongDevice(&'static str),
    /// A backend or architecture name that does not parse.
    #[error("{0}")]
    Parse(String),
}

fn list_or_none(v: &[String]) -> String {
    if v.is_empty() {
        "(none)".to_string()
    } else {
        v.join(", ")
    }
}

/// Formats a byte count with its element count, for size-mismatch messages.
pub(crate) fn elems(n: usize, elem_bytes: usize) -> String {
    format!("{n} elements ({} bytes)", n * elem_bytes)
}

impl RuntimeError {
    /// A failed runtime call.
    pub(crate) fn call(call: &'static str, message: impl fmt::Display) -> Self {
        RuntimeError::Call {
            call,
            message: message.to_string(),
        }
    }
    /// A failed emulator call.
    pub(crate) fn emu(call: &'static str, source: convgrad_emu::EmuError) -> Self {
        RuntimeError::Emulator { call, source }
    }
}
