//! Validation errors: each names the field and says what is allowed.

use core::fmt;

/// A descriptor that cannot describe a valid problem, with the offending field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DescError {
    /// A field that must be at least `min` is smaller.
    TooSmall {
        /// Field name, e.g. `"filter[1]"`.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The smallest allowed value.
        min: u64,
    },
    /// A field that must be at most `max` is larger.
    TooLarge {
        /// Field name.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The largest allowed value.
        max: u64,
    },
    /// Padded input smaller than the dilated filter along one axis: no output.
    EmptyOutput {
        /// Spatial axis (0-based, in the problem's own `ndim` order).
        axis: usize,
        /// `input + lpad + rpad` along that axis.
        padded_input: u64,
        /// `(filter - 1) * dilation + 1` along that axis.
        dilated_filter: u64,
    },
    /// A list (filter, input, strides, ...) whose length is not `ndim`.
    WrongRank {
        /// Field name.
        field: &'static str,
        /// Its length.
        len: usize,
        /// `ndim`.
        ndim: usize,
    },
    /// A buffer whose length does not match its tensor descriptor.
    BufferLength {
        /// Tensor name (`"x"`, `"dy"`, `"dw"`, `"d0"`, ...).
        tensor: &'static str,
        /// Elements the descriptor spans.
        expected: u64,
        /// Elements the buffer holds.
        actual: u64,
    },
    /// A tensor spanning more elements than the kernels address with 32-bit offsets.
    IndexRange {
        /// Tensor name.
        tensor: &'static str,
        /// Elements it spans.
        span: u64,
    },
    /// A size derived from the descriptor (a product of lengths, a span, a
    /// count of FLOPs) that does not fit in 64 bits.
    Overflow {
        /// What overflows, e.g. `"w elements (G * K * C * Z * Y * X)"`.
        field: &'static str,
    },
    /// A tensor descriptor that does not fit the problem (a length) or would
    /// let one written element alias another (a stride).
    Layout {
        /// Tensor name (`"x"`, `"dw"`, `"d0"`, ...).
        tensor: &'static str,
        /// Canonical axis (0 = G, 1 = N or K, 2 = C or K, 3..6 = spatial).
        axis: usize,
        /// What is wrong and what is allowed.
        what: &'static str,
        /// The value given (a length or a stride).
        value: u64,
        /// The value the problem needs (lengths), or 0.
        expected: u64,
    },
    /// Two tensors of one call whose memory overlaps where the call writes.
    Overlap {
        /// The tensor written.
        written: &'static str,
        /// The tensor it overlaps.
        other: &'static str,
    },
    /// An option that does not apply to this problem or type combination.
    Unsupported {
        /// Field name.
        field: &'static str,
        /// What is allowed instead.
        allowed: &'static str,
    },
}

impl fmt::Display for DescError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DescError::TooSmall { field, value, min } => {
                write!(f, "{field} = {value} is too small: it must be at least {min}")
            }
            DescError::TooLarge { field, value, max } => {
                write!(f, "{field} = {value} is too large: it must be at most {max}")
            }
            DescError::EmptyOutput { axis, padded_input, dilated_filter } => write!(
                f,
                "spatial axis {axis}: padded input {padded_input} is smaller than the dilated \
                 filter {dilated_filter}, so the output would be empty; reduce the filter or \
                 dilation, or increase the input or pads"
            ),
            DescError::WrongRank { field, len, ndim } => {
                write!(f, "{field} has {len} entries but ndim is {ndim}: give one per spatial dimension")
            }
            DescError::BufferLength { tensor, expected, actual } => write!(
                f,
                "buffer for tensor {tensor} holds {actual} elements but its descriptor spans {expected}"
            ),
            DescError::IndexRange { tensor, span } => write!(
                f,
                "tensor {tensor} spans {span} elements, beyond the 2^31-1 that the kernels address \
                 with 32-bit offsets; split the batch (N) into smaller launches"
            ),
            DescError::Overflow { field } => write!(
                f,
                "{field} overflows 64 bits: the sizes are far beyond what any device can hold; reduce them"
            ),
            DescError::Layout { tensor, axis, what, value, expected } => {
                write!(f, "tensor {tensor}, canonical axis {axis} ({value}): {what}")?;
                if expected > 0 { write!(f, " (the problem needs {expected})") } else { Ok(()) }
            }
            DescError::Overlap { written, other } => write!(
                f,
                "tensor {written} (written) overlaps tensor {other} in memory; give them separate buffers"
            ),
            DescError::Unsupported { field, allowed } => {
                write!(f, "{field} is not supported here; allowed: {allowed}")
            }
        }
    }
}

impl core::error::Error for DescError {}
