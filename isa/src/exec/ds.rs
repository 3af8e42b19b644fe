//! LDS instructions (GFX9 `ds_read/write_*`, GFX11 `ds_load/store_*`).
//!
//! Address = VGPR `addr` + offset (offset1:offset0 as one 16-bit offset; the two-address
//! forms use offset0 and offset1 in units of the element size, times 64 for `st64` /
//! `stride64`). Every access is checked against the workgroup's LDS size and for
//! reads of bytes never written.
//!
//! Bank conflicts (counter): 32 banks of 4 bytes; the lanes of a wave are taken in
//! groups of 32 (a wave64 in two halves); in each group the busiest bank's number of
//! distinct dwords, less the dwords per bank a conflict-free access of that many
//! distinct dwords needs, is added. Same-address reads broadcast. This is a model
//! of the ISA guides' rule, not of the exact hardware pipeline.

use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::decode::Inst;
use std::collections::HashSet;

#[derive(Clone, Copy)]
enum Kind {
    /// Store `n` bytes from the data dwords (sub-dword: low part, or high half if hi).
    Store { n: usize, hi: bool },
    /// Load `n` bytes into dst: `ext` sign-extends sub-dword loads; d16: `Some(hi)`
    /// writes one half and keeps the other.
    Load {
        n: usize,
        sext: bool,
        d16: Option<bool>,
    },
    /// Two-address store of `n`-byte elements (stride multiplier `st`).
    Store2 { n: usize, st: u64 },
    /// Two-address load.
    Load2 { n: usize, st: u64 },
}

fn conflicts(c: &mut Ctx, addrs: &[(usize, u64, usize)]) {
    let group = 32usize;
    let mut total = 0u64;
    for g in 0..c.wave.lanes.div_ceil(group) {
        let mut words: HashSet<u64> = HashSet::new();
        for &(l, a, n) in addrs {
            if l / group == g {
                for w in 0..n.div_ceil(4) {
                    words.insert(a / 4 + w as u64);
                }
            }
        }
        if words.is_empty() {
            continue;
        }
        let mut per_bank = [0u64; 32];
        for w in &words {
            per_bank[(w % 32) as usize] += 1;
        }
        let worst = *per_bank.iter().max().unwrap();
        let ideal = (words.len() as u64).div_ceil(32);
        total += worst.saturating_sub(ideal);
    }
    c.counters.lds_bank_conflicts += total;
}

fn exec(c: &mut Ctx, i: &Inst, k: Kind) -> Result<Flow, String> {
    let mut accesses = Vec::new();
    let lanes: Vec<usize> = c.active().collect();
    for &l in &lanes {
        let base = c.v32(i.src[0], l, Ty::B32)? as u64;
        let (off0, off1) = ((i.imm & 0xff) as u64, ((i.imm >> 8) & 0xff) as u64);
        let lane_err = |e: String| format!("lane {l}: {e}");
        match k {
            Kind::Store { n, hi } => {
                let a = base + i.imm as u64;
                let mut bytes = Vec::with_capacity(n);
                for d in 0..n.div_ceil(4) {
                    let v = c.v32k(i.src[1], d, l, Ty::B32)?;
                    let v = if hi { v >> 16 } else { v };
                    bytes.extend_from_slice(&v.to_le_bytes());
                }
                bytes.truncate(n);
                c.lds.write(a, &bytes).map_err(lane_err)?;
                accesses.push((l, a, n));
            }
            Kind::Load { n, sext, d16 } => {
                let a = base + i.imm as u64;
                let mut bytes = vec![0u8; n.max(4).next_multiple_of(4)];
                c.lds.read(a, &mut bytes[..n]).map_err(lane_err)?;
                accesses.push((l, a, n));
                if n >= 4 {
                    for d in 0..n / 4 {
                        let v = u32::from_le_bytes(bytes[4 * d..4 * d + 4].try_into().unwrap());
                        c.set_v32k(i.dst, d, l, v)?;
                    }
                } else {
                    let raw = u32::from_le_bytes(bytes[..4].try_into().unwrap());
                    let v = match (n, sext) {
                        (1, true) => raw as u8 as i8 as i32 as u32,
                        (2, true) => raw as u16 as i16 as i32 as u32,
                        _ => raw,
                    };
                    let v = match d16 {
                        None => v,
                        Some(false) => (c.v32(i.dst, l, Ty::B32)? & 0xffff_0000) | (v & 0xffff),
                        Some(true) => (c.v32(i.dst, l, Ty::B32)? & 0xffff) | (v << 16),
                    };
                    c.set_v32(i.dst, l, v)?;
                }
            }
            Kind::Store2 { n, st } => {
                for (slot, off) in [(1usize, off0), (2, off1)] {
                    let a = base + off * n as u64 * st;
                    let mut bytes = Vec::new();
                    for d in 0..n / 4 {
                        bytes.extend_from_slice(&c.v32k(i.src[slot], d, l, Ty::B32)?.to_le_bytes());
                    }
                    c.lds.write(a, &bytes).map_err(lane_err)?;
                    accesses.push((l, a, n));
                }
            }
            Kind::Load2 { n, st } => {
                for (slot, off) in [(0usize, off0), (1, off1)] {
                    let a = base + off * n as u64 * st;
                    let mut bytes = vec![0u8; n];
                    c.lds.read(a, &mut bytes).map_err(lane_err)?;
                    accesses.push((l, a, n));
                    for d in 0..n / 4 {
                        let v = u32::from_le_bytes(bytes[4 * d..4 * d + 4].try_into().unwrap());
                        c.set_v32k(i.dst, slot * (n / 4) + d, l, v)?;
                    }
                }
            }
        }
    }
    c.counters.lds_bytes += accesses.iter().map(|a| a.2 as u64).sum::<u64>();
    conflicts(c, &accesses);
    Ok(Flow::Next)
}

macro_rules! ds {
    ($k:expr) => {
        |c, i| exec(c, i, $k)
    };
}

pub(super) const HANDLERS: &[(&str, Handler)] = &[
    ("ds_write_b8", ds!(Kind::Store { n: 1, hi: false })),
    ("ds_write_b16", ds!(Kind::Store { n: 2, hi: false })),
    ("ds_write_b32", ds!(Kind::Store { n: 4, hi: false })),
    ("ds_write_b64", ds!(Kind::Store { n: 8, hi: false })),
    ("ds_write_b96", ds!(Kind::Store { n: 12, hi: false })),
    ("ds_write_b128", ds!(Kind::Store { n: 16, hi: false })),
    ("ds_write_b16_d16_hi", ds!(Kind::Store { n: 2, hi: true })),
    ("ds_write_b8_d16_hi", ds!(Kind::Store { n: 1, hi: true })),
    ("ds_write2_b32", ds!(Kind::Store2 { n: 4, st: 1 })),
    ("ds_write2st64_b32", ds!(Kind::Store2 { n: 4, st: 64 })),
    ("ds_write2_b64", ds!(Kind::Store2 { n: 8, st: 1 })),
    ("ds_write2st64_b64", ds!(Kind::Store2 { n: 8, st: 64 })),
    (
        "ds_read_b32",
        ds!(Kind::Load {
            n: 4,
            sext: false,
            d16: None
        }),
    ),
    (
        "ds_read_b64",
        ds!(Kind::Load {
            n: 8,
            sext: false,
            d16: None
        }),
    ),
    (
        "ds_read_b96",
        ds!(Kind::Load {
            n: 12,
            sext: false,
            d16: None
        }),
    ),
    (
        "ds_read_b128",
        ds!(Kind::Load {
            n: 16,
            sext: false,
            d16: None
        }),
    ),
    (
        "ds_read_u8",
        ds!(Kind::Load {
            n: 1,
            sext: false,
            d16: None
        }),
    ),
    (
        "ds_read_i8",
        ds!(Kind::Load {
            n: 1,
            sext: true,
            d16: None
        }),
    ),
    (
        "ds_read_u16",
        ds!(Kind::Load {
            n: 2,
            sext: false,
            d16: None
        }),
    ),
    (
        "ds_read_i16",
        ds!(Kind::Load {
            n: 2,
            sext: true,
            d16: None
        }),
    ),
    (
        "ds_read_u16_d16",
        ds!(Kind::Load {
            n: 2,
            sext: false,
            d16: Some(false)
        }),
    ),
    (
        "ds_read_u16_d16_hi",
        ds!(Kind::Load {
            n: 2,
            sext: false,
            d16: Some(true)
        }),
    ),
    (
        "ds_read_u8_d16",
        ds!(Kind::Load {
            n: 1,
            sext: false,
            d16: Some(false)
        }),
    ),
    (
        "ds_read_u8_d16_hi",
        ds!(Kind::Load {
            n: 1,
            sext: false,
            d16: Some(true)
        }),
    ),
    ("ds_read2_b32", ds!(Kind::Load2 { n: 4, st: 1 })),
    ("ds_read2st64_b32", ds!(Kind::Load2 { n: 4, st: 64 })),
    ("ds_read2_b64", ds!(Kind::Load2 { n: 8, st: 1 })),
    ("ds_read2st64_b64", ds!(Kind::Load2 { n: 8, st: 64 })),
    ("ds_store_b8", ds!(Kind::Store { n: 1, hi: false })),
    ("ds_store_b16", ds!(Kind::Store { n: 2, hi: false })),
    ("ds_store_b32", ds!(Kind::Store { n: 4, hi: false })),
    ("ds_store_b64", ds!(Kind::Store { n: 8, hi: false })),
    ("ds_store_b96", ds!(Kind::Store { n: 12, hi: false })),
    ("ds_store_b128", ds!(Kind::Store { n: 16, hi: false })),
    ("ds_store_b16_d16_hi", ds!(Kind::Store { n: 2, hi: true })),
    ("ds_store_b8_d16_hi", ds!(Kind::Store { n: 1, hi: true })),
    ("ds_store_2addr_b32", ds!(Kind::Store2 { n: 4, st: 1 })),
    (
        "ds_store_2addr_stride64_b32",
        ds!(Kind::Store2 { n: 4, st: 64 }),
    ),
    ("ds_store_2addr_b64", ds!(Kind::Store2 { n: 8, st: 1 })),
    (
        "ds_store_2addr_stride64_b64",
        ds!(Kind::Store2 { n: 8, st: 64 }),
    ),
    (
        "ds_load_b32",
        ds!(Kind::Load {
            n: 4,
            sext: false,
            d16: None
        }),
    ),
    (
        "ds_load_b64",
        ds!(Kind::Load {
            n: 8,
            sext: false,
            d16: None
        }),
    ),
    (
        "ds_load_b96",
        ds!(Kind::Load {
            n: 12,
            sext: false,
            d16: None
        }),
    ),
    (
        "ds_load_b128",
        ds!(Kind::Load {
            n: 16,
            sext: false,
            d16: None
        }),
    ),
    (
        "ds_load_u8",
        ds!(Kind::Load {
            n: 1,
            sext: false,
            d16: None
        }),
    ),
    (
        "ds_load_i8",
        ds!(Kind::Load {
            n: 1,
            sext: true,
            d16: None
        }),
    ),
    (
        "ds_load_u16",
        ds!(Kind::Load {
            n: 2,
            sext: false,
            d16: None
        }),
    ),
    (
        "ds_load_i16",
        ds!(Kind::Load {
            n: 2,
            sext: true,
            d16: None
        }),
    ),
    (
        "ds_load_u16_d16",
        ds!(Kind::Load {
            n: 2,
            sext: false,
            d16: Some(false)
        }),
    ),
    (
        "ds_load_u16_d16_hi",
        ds!(Kind::Load {
            n: 2,
            sext: false,
            d16: Some(true)
        }),
    ),
    ("ds_load_2addr_b32", ds!(Kind::Load2 { n: 4, st: 1 })),
    (
        "ds_load_2addr_stride64_b32",
        ds!(Kind::Load2 { n: 4, st: 64 }),
    ),
    ("ds_load_2addr_b64", ds!(Kind::Load2 { n: 8, st: 1 })),
    (
        "ds_load_2addr_stride64_b64",
        ds!(Kind::Load2 { n: 8, st: 64 }),
    ),
];
