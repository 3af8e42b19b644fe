//! Tensor layouts: the four layout families and (possibly strided) tensor descriptors.
//!
//! Every tensor is indexed in one canonical logical order of six axes:
//! activations `(G, N, C, D, H, W)` (C is K for the output tensor) and weights
//! `(G, K, C, Z, Y, X)`. A [`TensorDesc`] maps that index to an element offset
//! through per-axis strides, so packed layouts and strided views look the same
//! to a kernel.

use crate::error::DescError;
use crate::problem::{ConvProblem, MAX_SPAN};

/// Which tensor of the convolution a descriptor is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorRole {
    /// Input activations `x` (and their gradient `dx`): channels C.
    Input,
    /// Weights `w` (and their gradient `dw`).
    Weight,
    /// Output activations `y` (and their gradient `dy`): channels K.
    Output,
}

/// The layout families CK supports for grouped convolutions (input/weight/output).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvLayout {
    /// `NHWGC / GKYXC / NHWGK`: channels-last, groups next to channels.
    NhwgcGkyxcNhwgk,
    /// `GNHWC / GKYXC / GNHWK`: group-major, channels-last.
    GnhwcGkyxcGnhwk,
    /// `NGCHW / GKYXC / NGKHW`: channels-first activations, channels-last weights.
    NgchwGkyxcNgkhw,
    /// `NGCHW / GKCYX / NGKHW`: channels-first everywhere (PyTorch's default).
    NgchwGkcyxNgkhw,
}

/// Canonical axis slots: 0 = G, 1 = N (weights: K), 2 = C (output: K), 3..6 = spatial.
pub const AXES: usize = 6;

impl ConvLayout {
    /// All families, in a fixed order.
    pub const ALL: [ConvLayout; 4] = [
        ConvLayout::NhwgcGkyxcNhwgk,
        ConvLayout::GnhwcGkyxcGnhwk,
        ConvLayout::NgchwGkyxcNgkhw,
        ConvLayout::NgchwGkcyxNgkhw,
    ];

    /// The family's 2-D name, e.g. `"NHWGC/GKYXC/NHWGK"`.
    pub fn name(self) -> &'static str {
        match self {
            ConvLayout::NhwgcGkyxcNhwgk => "NHWGC/GKYXC/NHWGK",
            ConvLayout::GnhwcGkyxcGnhwk => "GNHWC/GKYXC/GNHWK",
            ConvLayout::NgchwGkyxcNgkhw => "NGCHW/GKYXC/NGKHW",
            ConvLayout::NgchwGkcyxNgkhw => "NGCHW/GKCYX/NGKHW",
        }
    }

    /// Parses a family from its activation-layout or full name, any case
    /// (`nhwgc`, `gnhwc`, `ngchw-gkyxc`, `ngchw-gkcyx`, or [`ConvLayout::name`]).
    pub fn parse(s: &str) -> Option<ConvLayout> {
        let mut buf = [0u8; 32];
        let b = s.as_bytes();
        if b.len() > buf.len() {
            return None;
        }
        for (d, c) in buf.iter_mut().zip(b) {
            *d = c.to_ascii_lowercase();
        }
        let s = &buf[..b.len()];
        Some(match s {
            b"nhwgc" | b"nhwgc/gkyxc/nhwgk" => ConvLayout::NhwgcGkyxcNhwgk,
            b"gnhwc" | b"gnhwc/gkyxc/gnhwk" => ConvLayout::GnhwcGkyxcGnhwk,
            b"ngchw-gkyxc" | b"ngchw/gkyxc/ngkhw" => ConvLayout::NgchwGkyxcNgkhw,
            b"ngchw" | b"ngchw-gkcyx" | b"ngchw/gkcyx/ngkhw" => ConvLayout::NgchwGkcyxNgkhw,
            _ => return None,
        })
    }

    /// Axes of `role`'s tensor from outermost to innermost (canonical slot numbers),
    /// for a problem with `ndim` spatial dimensions.
    pub fn memory_order(self, role: TensorRole, ndim: usize) -> ([usize; AXES], usize) {
        // Spatial slots used by an ndim problem: the last ndim of 3..6.
        let sp = 6 - ndim;
        let mut out = [0usize; AXES];
        let mut len = 0;
        let mut push = |a: usize| {
            out[len] = a;
            len += 1;
        };
        let spatial = |push: &mut dyn FnMut(usize)| (sp..6).for_each(push);
        match (self, role) {
            (ConvLayout::NhwgcGkyxcNhwgk, TensorRole::Input | TensorRole::Output) => {
                push(1);
                spatial(&mut push);
                push(0);
                push(2);
            }
            (ConvLayout::GnhwcGkyxcGnhwk, TensorRole::Input | TensorRole::Output) => {
                push(0);
                push(1);
                spatial(&mut push);
                push(2);
            }
            (ConvLayout::NgchwGkyxcNgkhw | ConvLayout::NgchwGkcyxNgkhw, TensorRole::Input | TensorRole::Output) => {
                push(1);
                push(0);
                push(2);
                spatial(&mut push);
            }
            (ConvLayout::NgchwGkcyxNgkhw, TensorRole::Weight) => {
                push(0);
                push(1);
                push(2);
                spatial(&mut push);
            }
            (_, TensorRole::Weight) => {
                push(0);
                push(1);
                spatial(&mut push);
                push(2);
            }
        }
        (out, len)
    }

    /// Letters of `role`'s layout for `ndim`, e.g. `"NHWGC"`, `"GKZYXC"`, `"NGKW"`.
    /// Writes into `buf` and returns the used part.
    pub fn letters(self, role: TensorRole, ndim: usize, buf: &mut [u8; AXES]) -> &str {
        let (order, len) = self.memory_order(role, ndim);
        let sp_act = *b"DHW";
        let sp_wei = *b"ZYX";
        for (i, &a) in order[..len].iter().enumerate() {
            buf[i] = match (role, a) {
                (_, 0) => b'G',
                (TensorRole::Weight, 1) => b'K',
                (_, 1) => b'N',
                (TensorRole::Output, 2) => b'K',
                (_, 2) => b'C',
                (TensorRole::Weight, s) => sp_wei[s - 3],
                (_, s) => sp_act[s - 3],
            };
        }
        core::str::from_utf8(&buf[..len]).unwrap_or("?")
    }
}

/// The message of an axis whose `(length - 1) * stride` overflows.
const OVERFLOWS: &str = "(length - 1) * stride overflows 64 bits";

/// A tensor in canonical axis order: lengths and element strides per slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TensorDesc {
    /// Lengths per canonical slot (unused spatial slots have length 1).
    pub lengths: [usize; AXES],
    /// Element strides per canonical slot.
    pub strides: [usize; AXES],
}

impl TensorDesc {
    /// Canonical lengths of `role`'s tensor for `p`.
    pub fn lengths_of(p: &ConvProblem, role: TensorRole) -> [usize; AXES] {
        let o = p.output();
        match role {
            TensorRole::Input => [p.g, p.n, p.c, p.input[0], p.input[1], p.input[2]],
            TensorRole::Output => [p.g, p.n, p.k, o[0], o[1], o[2]],
            TensorRole::Weight => [p.g, p.k, p.c, p.filter[0], p.filter[1], p.filter[2]],
        }
    }

    /// The packed tensor of `role` in layout family `layout`.
    pub fn packed(p: &ConvProblem, layout: ConvLayout, role: TensorRole) -> TensorDesc {
        let lengths = Self::lengths_of(p, role);
        let (order, len) = layout.memory_order(role, p.ndim);
        let mut strides = [0usize; AXES];
        let mut s = 1;
        for &a in order[..len].iter().rev() {
            strides[a] = s;
            // Saturates rather than wraps for a problem `validate` refuses.
            s = s.saturating_mul(lengths[a]);
        }
        // Unused spatial slots have length 1; give them a harmless stride.
        for (a, st) in strides.iter_mut().enumerate() {
            if !order[..len].contains(&a) {
                *st = s;
            }
        }
        TensorDesc { lengths, strides }
    }

    /// A tensor with explicit strides (a strided view of a bigger buffer).
    pub fn strided(p: &ConvProblem, role: TensorRole, strides: [usize; AXES]) -> TensorDesc {
        TensorDesc { lengths: Self::lengths_of(p, role), strides }
    }

    /// Number of logical elements (0 when a length is 0). Saturates at
    /// `u64::MAX` where the product overflows 64 bits (never wraps: the fields
    /// are public, so any lengths reach here); [`TensorDesc::checked_elems`]
    /// errs instead.
    pub fn elems(&self) -> u64 {
        self.checked_elems().unwrap_or(u64::MAX)
    }

    /// [`TensorDesc::elems`] with checked arithmetic: an error names the
    /// product of the lengths that overflows 64 bits.
    pub fn checked_elems(&self) -> Result<u64, DescError> {
        if self.lengths.contains(&0) {
            return Ok(0);
        }
        let field = "tensor elements (product of the lengths)";
        self.lengths.iter().try_fold(1u64, |acc, &l| acc.checked_mul(l as u64)).ok_or(DescError::Overflow { field })
    }

    /// Elements a buffer must hold: the largest offset plus one (0 for an
    /// empty tensor). Saturates at `u64::MAX` where that overflows 64 bits
    /// (never wraps); [`TensorDesc::checked_span`] says which axis.
    pub fn span(&self) -> u64 {
        self.checked_span("tensor").unwrap_or(u64::MAX)
    }

    /// [`TensorDesc::span`] with checked arithmetic: an error names `tensor`
    /// and the axis whose `(length - 1) * stride` overflows 64 bits.
    pub fn checked_span(&self, tensor: &'static str) -> Result<u64, DescError> {
        if self.lengths.contains(&0) {
            return Ok(0);
        }
        let mut last = 0u64;
        for (axis, (&l, &s)) in self.lengths.iter().zip(&self.strides).enumerate() {
            last = (l as u64 - 1)
                .checked_mul(s as u64)
                .and_then(|v| v.checked_add(last))
                .ok_or(DescError::Layout { tensor, axis, what: OVERFLOWS, value: s as u64, expected: 0 })?;
        }
        last.checked_add(1).ok_or(DescError::Overflow { field: "tensor span" })
    }

    /// Checks the descriptor of tensor `tensor` (role `role`) against `p`:
    /// lengths equal to the problem's ([`TensorDesc::lengths_of`]), a span
    /// computed without overflow and addressable with 32-bit offsets, and,
    /// where the tensor is `written`, no two elements at one offset (every
    /// axis longer than 1 has a non-zero stride, and sorted by stride each
    /// axis steps over the whole extent of the ones inside it). Returns the
    /// span (elements a buffer must hold). Every stride, an axis of length
    /// 1's included, must be at most 2^31 - 1.
    pub fn validate_for(
        &self,
        p: &ConvProblem,
        role: TensorRole,
        tensor: &'static str,
        written: bool,
    ) -> Result<u64, DescError> {
        let want = Self::lengths_of(p, role);
        if let Some(axis) = (0..AXES).find(|&a| self.lengths[a] != want[a]) {
            let (value, expected) = (self.lengths[axis] as u64, want[axis] as u64);
            let what = "its length differs from the problem's; build descriptors with TensorDesc::packed or TensorDesc::strided";
            return Err(DescError::Layout { tensor, axis, what, value, expected });
        }
        let span = self.checked_span(tensor)?;
        if span > MAX_SPAN {
            return Err(DescError::IndexRange { tensor, span });
        }
        // The kernels take strides as 32-bit values and scale them (even an
        // axis of length 1's, whose index is always 0) in 32-bit arithmetic.
        if let Some(axis) = (0..AXES).find(|&a| self.strides[a] as u64 > MAX_SPAN) {
            let what = "stride past 2^31 - 1 (the kernels' 32-bit offsets), even on an axis of length 1";
            return Err(DescError::Layout { tensor, axis, what, value: self.strides[axis] as u64, expected: 0 });
        }
        if written {
            self.check_no_alias(tensor)?;
        }
        Ok(span)
    }

    /// Errs where two canonical indices of the tensor share an offset: an
    /// axis longer than 1 with stride 0, or, with the axes sorted by stride,
    /// one whose stride is smaller than the extent of the axes inside it.
    pub fn check_no_alias(&self, tensor: &'static str) -> Result<(), DescError> {
        let mut axes = [0usize; AXES];
        let mut n = 0;
        for a in (0..AXES).filter(|&a| self.lengths[a] > 1) {
            if self.strides[a] == 0 {
                let what = "stride 0 on an axis longer than 1: written elements would alias; give every such axis a non-zero stride";
                return Err(DescError::Layout { tensor, axis: a, what, value: 0, expected: 0 });
            }
            axes[n] = a;
            n += 1;
        }
        let axes = &mut axes[..n];
        axes.sort_unstable_by_key(|&a| (self.strides[a], self.lengths[a]));
        let mut extent = 1u64; // offsets the inner axes cover: max offset + 1
        for &a in axes.iter() {
            let s = self.strides[a] as u64;
            if s < extent {
                let what = "stride smaller than the extent of the axes with smaller strides: written elements would alias";
                return Err(DescError::Layout { tensor, axis: a, what, value: s, expected: 0 });
            }
            extent = (self.lengths[a] as u64 - 1)
                .checked_mul(s)
                .and_then(|v| v.checked_add(extent))
                .ok_or(DescError::Layout { tensor, axis: a, what: OVERFLOWS, value: s, expected: 0 })?;
        }
        Ok(())
    }

    /// Element offset of a canonical index.
    #[inline]
    pub fn offset(&self, idx: [usize; AXES]) -> usize {
        idx.iter().zip(&self.strides).map(|(i, s)| i * s).sum()
    }

    /// Checks that the tensor is addressable with 32-bit offsets and that a
    /// buffer of `buffer_len` elements covers it.
    pub fn check(&self, tensor: &'static str, buffer_len: usize) -> Result<(), DescError> {
        let span = self.checked_span(tensor)?;
        if span > MAX_SPAN {
            return Err(DescError::IndexRange { tensor, span });
        }
        if (buffer_len as u64) < span {
            return Err(DescError::BufferLength { tensor, expected: span, actual: buffer_len as u64 });
        }
        Ok(())
    }

    /// Strides as `u32`, for kernel parameters (valid after [`TensorDesc::check`]).
    pub fn strides_u32(&self) -> [u32; AXES] {
        self.strides.map(|s| s.min(u32::MAX as usize) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `tensor_desc` fuzz target (issue #38): `elems` multiplied
    /// the public lengths in u64 and overflowed (a panic with overflow checks,
    /// a wrapped count without). It saturates now; `checked_elems` names it.
    #[test]
    fn elems_of_any_lengths_never_overflow() {
        let huge = TensorDesc { lengths: [1 << 32, 1 << 32, 1, 1, 1, 1], strides: [1; AXES] };
        assert_eq!(huge.elems(), u64::MAX);
        let e = huge.checked_elems().unwrap_err();
        assert!(matches!(e, DescError::Overflow { field } if field.starts_with("tensor elements")), "{e:?}");
        // A zero length makes it empty whatever the others are.
        let empty = TensorDesc { lengths: [usize::MAX, usize::MAX, 0, 1, 1, 1], strides: [1; AXES] };
        assert_eq!((empty.elems(), empty.checked_elems()), (0, Ok(0)));
        let small = TensorDesc { lengths: [2, 3, 4, 1, 1, 5], strides: [1; AXES] };
        assert_eq!(small.elems(), 120);
    }
}
