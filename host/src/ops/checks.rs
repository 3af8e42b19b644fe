//! Checks of the caller's tensors and buffers against a plan: descriptors
//! at plan time, buffer lengths and overlaps when a call is queued. A leaf
//! above [`error`](super::error).

use super::error::OpError;
use convgrad_types::{ConvProblem, DType, DescError, TensorDesc, TensorRole};

/// Checks that a buffer of `bytes` covers tensor `name` (`desc`, elements of
/// `t`): O(1), no allocation (the descriptor was validated when planned).
pub(crate) fn check_buffer(name: &'static str, desc: &TensorDesc, t: DType, bytes: usize) -> Result<(), OpError> {
    let span = desc.checked_span(name)?;
    let want = span.checked_mul(t.bytes() as u64).ok_or(DescError::Overflow { field: "tensor bytes" })?;
    if (bytes as u64) < want {
        return Err(OpError::Desc(DescError::BufferLength {
            tensor: name,
            expected: span,
            actual: (bytes / t.bytes()) as u64,
        }));
    }
    Ok(())
}

/// Base-address alignment every tensor of a call needs: the kernels move
/// 16-byte vectors along channels (and Hopper's tensor maps read from
/// 16-byte aligned bases), and a misaligned vector access faults on the GPU.
pub const BASE_ALIGN: u64 = 16;

/// Checks that each `(name, address)` is [`BASE_ALIGN`]-aligned, else names
/// the first that is not. A view at an element offset (a slice of a bigger
/// tensor) can fail it; `convgrad_torch` copies such tensors first.
pub(crate) fn check_bases(bases: impl IntoIterator<Item = (&'static str, u64)>) -> Result<(), OpError> {
    match bases.into_iter().find(|(_, a)| !a.is_multiple_of(BASE_ALIGN)) {
        Some((name, a)) => Err(OpError::Usage(format!(
            "{name}: address {a:#x} is not {BASE_ALIGN}-byte aligned (the kernels move {BASE_ALIGN}-byte vectors); copy a view at an element offset into an aligned buffer"
        ))),
        None => Ok(()),
    }
}

/// One tensor's descriptor to validate at plan time: name, descriptor, role,
/// whether the call writes it.
pub(crate) type DescCheck<'a> = (&'static str, &'a TensorDesc, TensorRole, bool);

/// Validates each descriptor against the problem `p` (see
/// [`TensorDesc::validate_for`]): lengths, checked span within 32-bit
/// offsets, no aliasing in written tensors.
pub(crate) fn validate_descs(p: &ConvProblem, descs: &[DescCheck<'_>]) -> Result<(), OpError> {
    for &(name, desc, role, written) in descs {
        desc.validate_for(p, role, name, written)?;
    }
    Ok(())
}

/// The bytes `[start, end)` a call touches in one buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Extent {
    pub name: &'static str,
    pub start: u64,
    pub end: u64,
}

impl Extent {
    /// `bytes` bytes at `addr` (saturating: an extent never wraps).
    pub(crate) fn new(name: &'static str, addr: u64, bytes: u64) -> Extent {
        Extent { name, start: addr, end: addr.saturating_add(bytes) }
    }
    fn overlaps(&self, o: &Extent) -> bool {
        self.start < o.end && o.start < self.end
    }
}

/// Errs where the `written` extent overlaps any of `others` (O(n), no
/// allocation). An empty extent overlaps nothing.
pub(crate) fn check_disjoint(written: &Extent, others: &[Extent]) -> Result<(), OpError> {
    match others.iter().find(|o| written.overlaps(o)) {
        Some(o) => Err(OpError::Desc(DescError::Overlap { written: written.name, other: o.name })),
        None => Ok(()),
    }
}

/// Names of the `D` tensors, by index.
pub const D_NAMES: [&str; convgrad_types::epilogue::MAX_D] = ["d0", "d1", "d2", "d3"];

/// Checks that `given` D tensors were passed for an epilogue reading `want`.
pub(crate) fn check_d_count(want: usize, given: usize) -> Result<(), OpError> {
    if want != given {
        return Err(OpError::Usage(format!("the epilogue reads {want} D tensor(s), {given} given")));
    }
    Ok(())
}

/// Checks the `D` buffers against their descriptors (elements of `t`) and
/// collects their device addresses into `ds`.
pub(crate) fn collect_ds<T: bytemuck::Pod>(
    descs: &[TensorDesc],
    t: DType,
    d: &[&crate::runtime::DeviceBuffer<T>],
    ds: &mut Vec<u64>,
) -> Result<(), OpError> {
    check_d_count(descs.len(), d.len())?;
    ds.clear();
    for (i, (b, desc)) in d.iter().zip(descs).enumerate() {
        check_buffer(D_NAMES[i], desc, t, b.bytes())?;
        ds.push(b.device_addr());
    }
    Ok(())
}
