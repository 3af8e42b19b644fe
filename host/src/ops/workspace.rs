//! Backward-weight's split-K workspace: convgrad's own, which tracks what
//! calls left in it ([`SplitKWorkspace`]), or the caller's memory and what
//! it holds ([`Workspace`], [`WorkspaceContents`]). A leaf.

use crate::runtime::BufRef;

/// What a caller-provided workspace holds when it is passed in. Thread it
/// through the calls with [`BwdWeightOp::workspace_after`](super::prepared::BwdWeightOp::workspace_after) to never queue a
/// memset that is not needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkspaceContents {
    /// Every byte is zero: freshly zeroed, or only ever used by
    /// non-deterministic convgrad calls (the kernels zero the sums and
    /// counters they read). convgrad queues no memset.
    Zeroed,
    /// Bytes from this offset on are zero; the ones before may not be (per-split
    /// partials a deterministic call left behind). convgrad zeroes what the
    /// call needs as zeros below the offset.
    ZeroFrom(usize),
    /// Anything: convgrad zeroes what the call needs as zeros on the stream first.
    Unknown,
}

impl WorkspaceContents {
    /// The offset from which every byte is zero.
    pub(crate) fn zero_from(self) -> usize {
        match self {
            WorkspaceContents::Zeroed => 0,
            WorkspaceContents::ZeroFrom(n) => n,
            WorkspaceContents::Unknown => usize::MAX,
        }
    }
}

/// The split-K workspace of a backward-weight call.
#[derive(Clone, Copy, Debug)]
pub enum Workspace<'a> {
    /// None: only for plans that need none ([`BwdWeightOp::workspace_bytes`](super::prepared::BwdWeightOp::workspace_bytes) is 0).
    None,
    /// convgrad's own workspace, which tracks what previous calls left in it.
    Tracked(&'a SplitKWorkspace),
    /// The caller's memory (e.g. from a framework's caching allocator), at
    /// least [`BwdWeightOp::workspace_bytes`](super::prepared::BwdWeightOp::workspace_bytes) long and 16-byte aligned.
    Raw {
        /// The memory.
        mem: BufRef<'a>,
        /// What it holds now.
        contents: WorkspaceContents,
    },
}

impl<'a> Workspace<'a> {
    /// The caller's memory `mem` holding `contents`.
    pub fn raw(mem: impl Into<BufRef<'a>>, contents: WorkspaceContents) -> Self {
        Workspace::Raw { mem: mem.into(), contents }
    }
}

/// The split-K workspace of backward-weight calls: f32 partials and one
/// `u32` arrival counter per output tile after them.
///
/// The kernels leave what they use as they found it (the last workgroup of a
/// tile zeroes the atomic sums it read and resets its counter), so the
/// workspace is zeroed when allocated and not before every call. It remembers
/// how far partials may be left behind: per-batch partials of deterministic
/// calls stay in place, and a later call whose zeros they cover zeroes the
/// workspace first; so does the call after a failed launch.
#[derive(Debug)]
pub struct SplitKWorkspace {
    pub(crate) buf: crate::runtime::DeviceBuffer<f32>,
    /// Elements `0..dirty` may be non-zero; all after them are zero.
    pub(crate) dirty: std::cell::Cell<usize>,
}

impl SplitKWorkspace {
    /// A zero-filled workspace of `elems` elements on `dev`.
    pub fn new(dev: &crate::runtime::Device, elems: usize) -> crate::runtime::Result<Self> {
        let buf = dev.alloc::<f32>(elems)?;
        buf.fill_zero()?;
        Ok(SplitKWorkspace { buf, dirty: std::cell::Cell::new(0) })
    }
    /// Its size in elements.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.buf.len() == 0
    }
    /// Device address of element 0.
    pub fn device_addr(&self) -> u64 {
        self.buf.device_addr()
    }
}
