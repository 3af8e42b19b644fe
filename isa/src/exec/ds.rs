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

use super::align::{self, Space};
use super::data::{Load, Store};
use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::decode::Inst;
use std::collections::HashSet;

#[derive(Clone, Copy)]
enum Kind {
    Store(Store),
    Load(Load),
    /// Two-address store of `n`-byte elements (stride multiplier `st`).
    Store2 {
        n: usize,
        st: u64,
    },
    /// Two-address load.
    Load2 {
        n: usize,
        st: u64,
    },
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
            Kind::Store(s) => {
                let a = base + i.imm as u64;
                align::check(c, Space::Lds, l, a, s.n)?;
                c.lds
                    .write(a, &s.bytes(c, i.src[1], l)?)
                    .map_err(lane_err)?;
                accesses.push((l, a, s.n));
            }
            Kind::Load(ld) => {
                let a = base + i.imm as u64;
                align::check(c, Space::Lds, l, a, ld.n)?;
                let mut bytes = ld.buffer();
                c.lds.read(a, &mut bytes[..ld.n]).map_err(lane_err)?;
                accesses.push((l, a, ld.n));
                ld.put(c, i.dst, l, &bytes)?;
            }
            Kind::Store2 { n, st } => {
                for (slot, off) in [(1usize, off0), (2, off1)] {
                    let a = base + off * n as u64 * st;
                    align::check(c, Space::Lds, l, a, n)?;
                    let bytes = Store::low(n).bytes(c, i.src[slot], l)?;
                    c.lds.write(a, &bytes).map_err(lane_err)?;
                    accesses.push((l, a, n));
                }
            }
            Kind::Load2 { n, st } => {
                for (slot, off) in [(0usize, off0), (1, off1)] {
                    let a = base + off * n as u64 * st;
                    align::check(c, Space::Lds, l, a, n)?;
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
    ("ds_write_b8", ds!(Kind::Store(Store::low(1)))),
    ("ds_write_b16", ds!(Kind::Store(Store::low(2)))),
    ("ds_write_b32", ds!(Kind::Store(Store::low(4)))),
    ("ds_write_b64", ds!(Kind::Store(Store::low(8)))),
    ("ds_write_b96", ds!(Kind::Store(Store::low(12)))),
    ("ds_write_b128", ds!(Kind::Store(Store::low(16)))),
    ("ds_write_b16_d16_hi", ds!(Kind::Store(Store::high(2)))),
    ("ds_write_b8_d16_hi", ds!(Kind::Store(Store::high(1)))),
    ("ds_write2_b32", ds!(Kind::Store2 { n: 4, st: 1 })),
    ("ds_write2st64_b32", ds!(Kind::Store2 { n: 4, st: 64 })),
    ("ds_write2_b64", ds!(Kind::Store2 { n: 8, st: 1 })),
    ("ds_write2st64_b64", ds!(Kind::Store2 { n: 8, st: 64 })),
    ("ds_read_b32", ds!(Kind::Load(Load::u(4)))),
    ("ds_read_b64", ds!(Kind::Load(Load::u(8)))),
    ("ds_read_b96", ds!(Kind::Load(Load::u(12)))),
    ("ds_read_b128", ds!(Kind::Load(Load::u(16)))),
    ("ds_read_u8", ds!(Kind::Load(Load::u(1)))),
    ("ds_read_i8", ds!(Kind::Load(Load::i(1)))),
    ("ds_read_u16", ds!(Kind::Load(Load::u(2)))),
    ("ds_read_i16", ds!(Kind::Load(Load::i(2)))),
    ("ds_read_u16_d16", ds!(Kind::Load(Load::d16(2, false)))),
    ("ds_read_u16_d16_hi", ds!(Kind::Load(Load::d16(2, true)))),
    ("ds_read_u8_d16", ds!(Kind::Load(Load::d16(1, false)))),
    ("ds_read_u8_d16_hi", ds!(Kind::Load(Load::d16(1, true)))),
    ("ds_read2_b32", ds!(Kind::Load2 { n: 4, st: 1 })),
    ("ds_read2st64_b32", ds!(Kind::Load2 { n: 4, st: 64 })),
    ("ds_read2_b64", ds!(Kind::Load2 { n: 8, st: 1 })),
    ("ds_read2st64_b64", ds!(Kind::Load2 { n: 8, st: 64 })),
];

/// GFX11's names of the operations above: (GFX11 mnemonic, GFX9 mnemonic).
pub(super) const ALIASES: &[(&str, &str)] = &[
    ("ds_store_b8", "ds_write_b8"),
    ("ds_store_b16", "ds_write_b16"),
    ("ds_store_b32", "ds_write_b32"),
    ("ds_store_b64", "ds_write_b64"),
    ("ds_store_b96", "ds_write_b96"),
    ("ds_store_b128", "ds_write_b128"),
    ("ds_store_b16_d16_hi", "ds_write_b16_d16_hi"),
    ("ds_store_b8_d16_hi", "ds_write_b8_d16_hi"),
    ("ds_store_2addr_b32", "ds_write2_b32"),
    ("ds_store_2addr_stride64_b32", "ds_write2st64_b32"),
    ("ds_store_2addr_b64", "ds_write2_b64"),
    ("ds_store_2addr_stride64_b64", "ds_write2st64_b64"),
    ("ds_load_b32", "ds_read_b32"),
    ("ds_load_b64", "ds_read_b64"),
    ("ds_load_b96", "ds_read_b96"),
    ("ds_load_b128", "ds_read_b128"),
    ("ds_load_u8", "ds_read_u8"),
    ("ds_load_i8", "ds_read_i8"),
    ("ds_load_u16", "ds_read_u16"),
    ("ds_load_i16", "ds_read_i16"),
    ("ds_load_u16_d16", "ds_read_u16_d16"),
    ("ds_load_u16_d16_hi", "ds_read_u16_d16_hi"),
    ("ds_load_2addr_b32", "ds_read2_b32"),
    ("ds_load_2addr_stride64_b32", "ds_read2st64_b32"),
    ("ds_load_2addr_b64", "ds_read2_b64"),
    ("ds_load_2addr_stride64_b64", "ds_read2st64_b64"),
];
