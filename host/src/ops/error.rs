//! What planning and running an operation can fail with, and why a kernel
//! family cannot take a problem ([`Reason`]). A leaf: every file of `ops`
//! may import it.

use convgrad_types::DescError;
use convgrad_types::instance::{Family, Op};
use std::borrow::Cow;

/// Errors of planning and running an operation.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// A descriptor is invalid or outside the kernels' limits (the field is named).
    #[error(transparent)]
    Desc(#[from] DescError),
    /// convgrad has no kernel for the request (a caller may fall back).
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// Buffers, streams or workspaces that do not fit the plan.
    #[error("{0}")]
    Usage(String),
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] crate::runtime::RuntimeError),
}

impl OpError {
    /// Whether convgrad cannot run this request at all (no kernel, an option
    /// or size outside the kernels' limits), as opposed to bad input or a
    /// runtime failure: the caller may run it elsewhere (cuDNN, MIOpen, ...).
    pub fn is_unsupported(&self) -> bool {
        match self {
            OpError::Unsupported(_) => true,
            OpError::Desc(d) => Unsupported::limit(d),
            _ => false,
        }
    }
}

/// Why convgrad cannot run a request; see
/// [`bwd_weight::supports`](super::bwd_weight::supports) and
/// [`bwd_data::supports`](super::bwd_data::supports).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Unsupported {
    /// The architecture has no kernels.
    #[error("unsupported architecture `{arch}`; convgrad has kernels for {}", crate::runtime::SUPPORTED_ARCHS.join(", "))]
    Arch {
        /// What was asked for.
        arch: String,
    },
    /// The problem or an option of it is invalid or outside the kernels' limits.
    #[error(transparent)]
    Problem(DescError),
    /// The configuration contradicts itself.
    #[error("{0}")]
    Config(String),
    /// No kernel of the operation serves these data types on this family.
    #[error("no {op} kernel for {types} on {family:?} ({op} supports {served})")]
    NoKernel {
        /// `bwd-weight` or `bwd-data`.
        op: &'static str,
        /// The data types, e.g. `f16`.
        types: &'static str,
        /// The kernel family.
        family: Family,
        /// The data types the operation serves.
        served: &'static str,
    },
    /// A forced instance that does not exist or does not fit the problem.
    #[error("--instance {name} {}", forced(why))]
    Instance {
        /// The instance asked for.
        name: String,
        /// Why it cannot run.
        why: Reason,
    },
}

impl Unsupported {
    /// Descriptor errors that are limits of the kernels rather than invalid input.
    fn limit(d: &DescError) -> bool {
        matches!(d, DescError::Unsupported { .. } | DescError::TooLarge { .. } | DescError::IndexRange { .. })
    }
    /// The reason a planning error gives.
    pub(crate) fn from_plan(e: OpError) -> Unsupported {
        match e {
            OpError::Unsupported(u) => u,
            OpError::Desc(d) => Unsupported::Problem(d),
            other => Unsupported::Config(other.to_string()),
        }
    }
    /// The family of an architecture name (`gfx942`, `sm_90`, ...).
    pub(crate) fn family_of(arch: &str) -> Result<Family, Unsupported> {
        crate::runtime::SUPPORTED_ARCHS
            .contains(&arch)
            .then(|| Family::of_arch(arch))
            .flatten()
            .ok_or_else(|| Unsupported::Arch { arch: arch.to_string() })
    }
    /// Why a kernel family cannot take the problem, where that is the reason.
    pub fn reason(&self) -> Option<&Reason> {
        match self {
            Unsupported::Instance { why, .. } => Some(why),
            _ => None,
        }
    }
}

/// Why an instance cannot run a problem: what a kernel family's `fits`
/// returns and a forced instance reports. Its text is the one users saw
/// when this was a string (tests and callers compare it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The problem's `field` is `value` where the kernel family (`kernel`,
    /// in words: "tap shifts") needs what `allowed` says.
    Needs {
        /// The family in words, the subject of "need".
        kernel: &'static str,
        /// The first need the problem does not meet: `stride`, `C`, ...
        field: &'static str,
        /// Its value in the problem (0/1 for a yes-or-no property).
        value: u64,
        /// What the family takes, as the text reads.
        allowed: Cow<'static, str>,
    },
    /// Not a convolution kernel (a self-test, a pre-pass): what it is.
    NotConvolution(&'static str),
    /// A forced name that names no instance.
    NoSuchInstance,
    /// A forced instance of another operation, data types or device family.
    OtherKind {
        /// The instance's kernel family.
        op: Op,
        /// The instance's data types.
        types: &'static str,
        /// The device families it is built for.
        families: &'static [Family],
        /// The operation the problem needs (`bwd-weight`, `bwd-data`).
        wanted_op: &'static str,
        /// The data types the problem needs.
        wanted_types: &'static str,
        /// The device's family.
        family: Family,
    },
}

impl Reason {
    /// The first of `checks` (met, field, value, allowed) not met, as the
    /// reason of kernel family `kernel`.
    pub(crate) fn first_unmet(kernel: &'static str, checks: &[Check]) -> Result<(), Reason> {
        match checks.iter().find(|c| !c.0) {
            Some(&(_, field, value, allowed)) => Err(Reason::Needs { kernel, field, value, allowed: allowed.into() }),
            None => Ok(()),
        }
    }
}

/// One need of a kernel family: whether the problem meets it, the field,
/// its value, and what is allowed (in words).
pub(crate) type Check = (bool, &'static str, u64, &'static str);

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Needs { kernel, allowed, .. } => write!(f, "{kernel} need {allowed}"),
            Reason::NotConvolution(what) => f.write_str(what),
            Reason::NoSuchInstance => f.write_str("names no such instance (see `cargo xtask list-instances`)"),
            Reason::OtherKind { op, types, families, wanted_op, wanted_types, family } => write!(
                f,
                "it is {op:?} {types} for {families:?}, the problem needs {wanted_op} {wanted_types} on {family:?}"
            ),
        }
    }
}

/// A forced instance's reason as `--instance NAME ...` continues.
fn forced(why: &Reason) -> String {
    match why {
        Reason::NoSuchInstance => why.to_string(),
        _ => format!("does not apply: {why}"),
    }
}

/// A forced instance that does not apply.
pub(crate) fn forced_mismatch(name: &str, why: Reason) -> OpError {
    OpError::Unsupported(Unsupported::Instance { name: name.to_string(), why })
}
