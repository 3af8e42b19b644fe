//! Per-lane data of the LDS and global memory instructions: the bytes a store takes
//! from its data VGPRs and how a load's bytes land in its destination.

use super::Ctx;
use super::wave::Ty;
use crate::decode::Operand;

/// A load of `n` bytes: sub-dword loads zero- or sign-extend (`sext`), or with
/// `d16: Some(hi)` write one half of the destination and keep the other.
#[derive(Clone, Copy)]
pub(super) struct Load {
    pub n: usize,
    pub sext: bool,
    pub d16: Option<bool>,
}

/// A store of `n` bytes from the data dwords (sub-dword: the low part, or the high
/// half if `hi`).
#[derive(Clone, Copy)]
pub(super) struct Store {
    pub n: usize,
    pub hi: bool,
}

impl Load {
    /// Zero-extending.
    pub const fn u(n: usize) -> Load {
        Load {
            n,
            sext: false,
            d16: None,
        }
    }
    /// Sign-extending.
    pub const fn i(n: usize) -> Load {
        Load {
            n,
            sext: true,
            d16: None,
        }
    }
    /// Into the low or (`hi`) high half.
    pub const fn d16(n: usize, hi: bool) -> Load {
        Load {
            n,
            sext: false,
            d16: Some(hi),
        }
    }

    /// A buffer for the loaded bytes (the first `n` are read), at least a dword.
    pub fn buffer(self) -> Vec<u8> {
        vec![0u8; self.n.max(4).next_multiple_of(4)]
    }

    /// Writes the loaded bytes `b` (a [`Load::buffer`]) to lane `l` of `dst`.
    pub fn put(self, c: &mut Ctx, dst: Operand, l: usize, b: &[u8]) -> Result<(), String> {
        let dword = |d: usize| u32::from_le_bytes(b[4 * d..4 * d + 4].try_into().unwrap());
        if self.n >= 4 {
            for d in 0..self.n / 4 {
                c.set_v32k(dst, d, l, dword(d))?;
            }
            return Ok(());
        }
        let v = match (self.n, self.sext) {
            (1, true) => dword(0) as u8 as i8 as i32 as u32,
            (2, true) => dword(0) as u16 as i16 as i32 as u32,
            _ => dword(0),
        };
        // d16: one half is written, the other kept (merged when the data lands).
        match self.d16 {
            None => c.set_v32(dst, l, v),
            Some(false) => c.set_v32k_masked(dst, 0, l, v & 0xffff, 0xffff),
            Some(true) => c.set_v32k_masked(dst, 0, l, v << 16, 0xffff_0000),
        }
    }
}

impl Store {
    /// The whole dwords, or the low part of one.
    pub const fn low(n: usize) -> Store {
        Store { n, hi: false }
    }
    /// The high half of a dword.
    pub const fn high(n: usize) -> Store {
        Store { n, hi: true }
    }

    /// The bytes lane `l` stores from the data operand `data`.
    pub fn bytes(self, c: &Ctx, data: Operand, l: usize) -> Result<Vec<u8>, String> {
        let mut bytes = Vec::with_capacity(16);
        for d in 0..self.n.div_ceil(4) {
            let v = c.v32k(data, d, l, Ty::B32)?;
            bytes.extend_from_slice(&(if self.hi { v >> 16 } else { v }).to_le_bytes());
        }
        bytes.truncate(self.n);
        Ok(bytes)
    }
}
