//! FLAT and GLOBAL memory instructions (loads, stores, atomics; GFX9 and GFX11
//! names). Address: GLOBAL with `saddr` = SGPR pair + 32-bit VGPR offset + offset,
//! otherwise the 64-bit VGPR pair + offset. FLAT addresses are taken as global ones
//! (the LDS and scratch apertures are not modelled, and an address inside no buffer
//! is an error). SCRATCH is not modelled.

use super::align::{self, Space};
use super::data::{Load, Store};
use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::decode::{Inst, Operand};

#[derive(Clone, Copy)]
enum Kind {
    Load(Load),
    Store(Store),
    Atomic(Op),
}

#[derive(Clone, Copy)]
enum Op {
    AddU32,
    SubU32,
    AddF32,
    CmpSwap,
    Swap,
    MinU32,
    MaxU32,
    MinI32,
    MaxI32,
    And,
    Or,
    Xor,
}

fn address(c: &Ctx, i: &Inst, l: usize) -> Result<u64, String> {
    if i.mods.seg == 1 {
        return Err("scratch memory is not modelled".into());
    }
    let base = match i.saddr {
        Operand::None => c.v64(i.src[0], l, Ty::U64)?,
        s => c
            .s64(s, Ty::U64)?
            .wrapping_add(c.v32(i.src[0], l, Ty::B32)? as u64),
    };
    Ok(base.wrapping_add(i.imm as u64))
}

fn exec(c: &mut Ctx, i: &Inst, k: Kind) -> Result<Flow, String> {
    let lanes: Vec<usize> = c.active().collect();
    for l in lanes {
        let a = address(c, i, l)?;
        let fault = |f: super::memory::Fault| format!("lane {l}: {f}");
        let n = match k {
            Kind::Load(ld) => ld.n,
            Kind::Store(s) => s.n,
            Kind::Atomic(_) => 4,
        };
        align::check(c, Space::Global, l, a, n)?;
        match k {
            Kind::Load(ld) => {
                let mut b = ld.buffer();
                c.mem.load(a, &mut b[..ld.n]).map_err(fault)?;
                c.counters.global_bytes_read += ld.n as u64;
                ld.put(c, i.dst, l, &b)?;
            }
            Kind::Store(s) => {
                let bytes = s.bytes(c, i.src[1], l)?;
                c.mem.write(a, &bytes).map_err(fault)?;
                c.counters.global_bytes_written += s.n as u64;
            }
            Kind::Atomic(op) => {
                let mut b = [0u8; 4];
                c.mem.load(a, &mut b).map_err(fault)?;
                let old = u32::from_le_bytes(b);
                let data = c.v32k(i.src[1], 0, l, Ty::B32)?;
                let new = match op {
                    Op::AddU32 => old.wrapping_add(data),
                    Op::SubU32 => old.wrapping_sub(data),
                    Op::AddF32 => (f32::from_bits(old) + f32::from_bits(data)).to_bits(),
                    Op::CmpSwap => {
                        let cmp = c.v32k(i.src[1], 1, l, Ty::B32)?;
                        if old == cmp { data } else { old }
                    }
                    Op::Swap => data,
                    Op::MinU32 => old.min(data),
                    Op::MaxU32 => old.max(data),
                    Op::MinI32 => (old as i32).min(data as i32) as u32,
                    Op::MaxI32 => (old as i32).max(data as i32) as u32,
                    Op::And => old & data,
                    Op::Or => old | data,
                    Op::Xor => old ^ data,
                };
                c.mem.write(a, &new.to_le_bytes()).map_err(fault)?;
                c.counters.global_bytes_read += 4;
                c.counters.global_bytes_written += 4;
                // glc (GFX9 sc0): return the value before the operation.
                if i.mods.glc {
                    c.set_v32(i.dst, l, old)?;
                }
            }
        }
    }
    Ok(Flow::Next)
}

macro_rules! f {
    ($k:expr) => {
        |c, i| exec(c, i, $k)
    };
}

/// Entries for both the `flat_` and `global_` prefixes: handlers (`name => kind`)
/// or aliases (`name => name`).
macro_rules! both {
    (aliases: $($name:literal => $to:literal),* $(,)?) => {
        &[$(
            (concat!("flat_", $name), concat!("flat_", $to)),
            (concat!("global_", $name), concat!("global_", $to)),
        )*]
    };
    ($($name:literal => $k:expr),* $(,)?) => {
        &[$((concat!("flat_", $name), f!($k)), (concat!("global_", $name), f!($k))),*]
    };
}

pub(super) const HANDLERS: &[(&str, Handler)] = both![
    "load_ubyte" => Kind::Load(Load::u(1)),
    "load_sbyte" => Kind::Load(Load::i(1)),
    "load_ushort" => Kind::Load(Load::u(2)),
    "load_sshort" => Kind::Load(Load::i(2)),
    "load_dword" => Kind::Load(Load::u(4)),
    "load_dwordx2" => Kind::Load(Load::u(8)),
    "load_dwordx3" => Kind::Load(Load::u(12)),
    "load_dwordx4" => Kind::Load(Load::u(16)),
    "load_short_d16" => Kind::Load(Load::d16(2, false)),
    "load_short_d16_hi" => Kind::Load(Load::d16(2, true)),
    "store_byte" => Kind::Store(Store::low(1)),
    "store_short" => Kind::Store(Store::low(2)),
    "store_short_d16_hi" => Kind::Store(Store::high(2)),
    "store_dword" => Kind::Store(Store::low(4)),
    "store_dwordx2" => Kind::Store(Store::low(8)),
    "store_dwordx3" => Kind::Store(Store::low(12)),
    "store_dwordx4" => Kind::Store(Store::low(16)),
    "atomic_add" => Kind::Atomic(Op::AddU32),
    "atomic_sub" => Kind::Atomic(Op::SubU32),
    "atomic_add_f32" => Kind::Atomic(Op::AddF32),
    "atomic_cmpswap" => Kind::Atomic(Op::CmpSwap),
    "atomic_swap" => Kind::Atomic(Op::Swap),
    "atomic_umin" => Kind::Atomic(Op::MinU32),
    "atomic_umax" => Kind::Atomic(Op::MaxU32),
    "atomic_smin" => Kind::Atomic(Op::MinI32),
    "atomic_smax" => Kind::Atomic(Op::MaxI32),
    "atomic_and" => Kind::Atomic(Op::And),
    "atomic_or" => Kind::Atomic(Op::Or),
    "atomic_xor" => Kind::Atomic(Op::Xor),
];

/// GFX11's names of the operations above, for both prefixes: (GFX11, GFX9).
pub(super) const ALIASES: &[(&str, &str)] = both![
    aliases:
    "load_u8" => "load_ubyte",
    "load_i8" => "load_sbyte",
    "load_u16" => "load_ushort",
    "load_i16" => "load_sshort",
    "load_b32" => "load_dword",
    "load_b64" => "load_dwordx2",
    "load_b96" => "load_dwordx3",
    "load_b128" => "load_dwordx4",
    "load_d16_b16" => "load_short_d16",
    "load_d16_hi_b16" => "load_short_d16_hi",
    "store_b8" => "store_byte",
    "store_b16" => "store_short",
    "store_d16_hi_b16" => "store_short_d16_hi",
    "store_b32" => "store_dword",
    "store_b64" => "store_dwordx2",
    "store_b96" => "store_dwordx3",
    "store_b128" => "store_dwordx4",
    "atomic_add_u32" => "atomic_add",
    "atomic_sub_u32" => "atomic_sub",
    "atomic_cmpswap_b32" => "atomic_cmpswap",
    "atomic_swap_b32" => "atomic_swap",
    "atomic_min_u32" => "atomic_umin",
    "atomic_max_u32" => "atomic_umax",
    "atomic_min_i32" => "atomic_smin",
    "atomic_max_i32" => "atomic_smax",
    "atomic_and_b32" => "atomic_and",
    "atomic_or_b32" => "atomic_or",
    "atomic_xor_b32" => "atomic_xor",
];
