//! Input decoding shared by convgrad's fuzz targets (`fuzz_targets/`).
//!
//! The problem targets read numbers from the fuzzer's bytes: a byte below
//! 0x80 is that small number; a byte of 0x80 or more is followed by up to 8
//! little-endian bytes of a full 64-bit number (missing bytes are 0). Small
//! sizes stay cheap to find and every wrapping size is reachable.

use convgrad::ops::{bwd_data, bwd_weight};
use convgrad_types::{ConvLayout, ConvProblem, TensorRole, TypeConfig};

/// Reads numbers from fuzzer bytes (see the crate docs).
pub struct Numbers<'a> {
    data: &'a [u8],
}

impl<'a> Numbers<'a> {
    /// Numbers from `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Numbers { data }
    }

    /// The next raw byte, if any.
    pub fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.data.split_first()?;
        self.data = rest;
        Some(b)
    }

    /// The next number, if any.
    pub fn next_usize(&mut self) -> Option<usize> {
        let tag = self.byte()?;
        if tag < 0x80 {
            return Some(tag as usize);
        }
        let n = self.data.len().min(8);
        let mut le = [0u8; 8];
        le[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Some(u64::from_le_bytes(le) as usize)
    }

    /// A problem in CK's order: ndim (reduced to 1..=3 so that most inputs
    /// reach the size checks), then `5 + 6 * ndim - 1` numbers, and the
    /// result of [`ConvProblem::from_ck_args`] on them. `None` when the bytes
    /// run out.
    pub fn problem_args(&mut self) -> Option<Vec<usize>> {
        let ndim = self.byte()? as usize % 4;
        let want = 5 + 6 * ndim.max(1);
        let mut v = vec![ndim];
        while v.len() < want {
            v.push(self.next_usize()?);
        }
        Some(v)
    }

    /// An element of `all` picked by the next byte (the first when none is left).
    pub fn pick<T: Copy>(&mut self, all: &[T]) -> T {
        all[self.byte().unwrap_or(0) as usize % all.len()]
    }
}

/// Tensor roles, for [`Numbers::pick`].
pub const ROLES: [TensorRole; 3] = [TensorRole::Input, TensorRole::Weight, TensorRole::Output];

/// Architectures `supports` is asked about.
pub const ARCHS: [&str; 4] = ["gfx942", "gfx1100", "sm_90", "sm_80"];

/// Asks both operations whether they support `p` with configurations
/// picked from `num`; the answer may be either, but it must come back.
pub fn ask_supports(p: &ConvProblem, num: &mut Numbers<'_>) {
    let arch = num.pick(&ARCHS);
    let layout = num.pick(&ConvLayout::ALL);
    let types = num.pick(&TypeConfig::ALL);
    let split = num.byte().unwrap_or(0);
    let split_k = match split {
        0..=127 => bwd_weight::SplitK::Auto,
        s => bwd_weight::SplitK::Fixed(u32::from(s - 128)),
    };
    let cfg = bwd_weight::BwdWeightConfig { layout, types, split_k, deterministic: split % 2 == 1, ..Default::default() };
    let _ = bwd_weight::supports(p, &cfg, arch);
    let cfg = bwd_data::BwdDataConfig { layout, types, ..Default::default() };
    let _ = bwd_data::supports(p, &cfg, arch);
}
