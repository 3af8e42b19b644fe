//! FLAT and GLOBAL memory instructions (loads, stores, atomics; GFX9 and GFX11
//! names). Address: GLOBAL with `saddr` = SGPR pair + 32-bit VGPR offset + offset,
//! otherwise the 64-bit VGPR pair + offset. FLAT addresses are taken as global ones
//! (the LDS and scratch apertures are not modelled, and an address inside no buffer
//! is an error). SCRATCH is not modelled.

use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::decode::{Inst, Operand};

#[derive(Clone, Copy)]
enum Kind {
    Load {
        n: usize,
        sext: bool,
        d16: Option<bool>,
    },
    Store {
        n: usize,
        hi: bool,
    },
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
        match k {
            Kind::Load { n, sext, d16 } => {
                let mut b = vec![0u8; n.max(4).next_multiple_of(4)];
                c.mem.read(a, &mut b[..n]).map_err(fault)?;
                c.counters.global_bytes_read += n as u64;
                if n >= 4 {
                    for d in 0..n / 4 {
                        c.set_v32k(
                            i.dst,
                            d,
                            l,
                            u32::from_le_bytes(b[4 * d..4 * d + 4].try_into().unwrap()),
                        )?;
                    }
                } else {
                    let raw = u32::from_le_bytes(b[..4].try_into().unwrap());
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
            Kind::Store { n, hi } => {
                let mut bytes = Vec::with_capacity(16);
                for d in 0..n.div_ceil(4) {
                    let v = c.v32k(i.src[1], d, l, Ty::B32)?;
                    bytes.extend_from_slice(&(if hi { v >> 16 } else { v }).to_le_bytes());
                }
                bytes.truncate(n);
                c.mem.write(a, &bytes).map_err(fault)?;
                c.counters.global_bytes_written += n as u64;
            }
            Kind::Atomic(op) => {
                let mut b = [0u8; 4];
                c.mem.read(a, &mut b).map_err(fault)?;
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

const fn ld(n: usize) -> Kind {
    Kind::Load {
        n,
        sext: false,
        d16: None,
    }
}
const fn st(n: usize) -> Kind {
    Kind::Store { n, hi: false }
}

/// Entries for both the `flat_` and `global_` prefixes.
macro_rules! both {
    ($($name:literal => $k:expr),* $(,)?) => {
        &[$((concat!("flat_", $name), f!($k)), (concat!("global_", $name), f!($k))),*]
    };
}

pub(super) const HANDLERS: &[(&str, Handler)] = both![
    // GFX9
    "load_ubyte" => ld(1),
    "load_sbyte" => Kind::Load { n: 1, sext: true, d16: None },
    "load_ushort" => ld(2),
    "load_sshort" => Kind::Load { n: 2, sext: true, d16: None },
    "load_dword" => ld(4),
    "load_dwordx2" => ld(8),
    "load_dwordx3" => ld(12),
    "load_dwordx4" => ld(16),
    "load_short_d16" => Kind::Load { n: 2, sext: false, d16: Some(false) },
    "load_short_d16_hi" => Kind::Load { n: 2, sext: false, d16: Some(true) },
    "store_byte" => st(1),
    "store_short" => st(2),
    "store_short_d16_hi" => Kind::Store { n: 2, hi: true },
    "store_dword" => st(4),
    "store_dwordx2" => st(8),
    "store_dwordx3" => st(12),
    "store_dwordx4" => st(16),
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
    // GFX11
    "load_u8" => ld(1),
    "load_i8" => Kind::Load { n: 1, sext: true, d16: None },
    "load_u16" => ld(2),
    "load_i16" => Kind::Load { n: 2, sext: true, d16: None },
    "load_b32" => ld(4),
    "load_b64" => ld(8),
    "load_b96" => ld(12),
    "load_b128" => ld(16),
    "load_d16_b16" => Kind::Load { n: 2, sext: false, d16: Some(false) },
    "load_d16_hi_b16" => Kind::Load { n: 2, sext: false, d16: Some(true) },
    "store_b8" => st(1),
    "store_b16" => st(2),
    "store_d16_hi_b16" => Kind::Store { n: 2, hi: true },
    "store_b32" => st(4),
    "store_b64" => st(8),
    "store_b96" => st(12),
    "store_b128" => st(16),
    "atomic_add_u32" => Kind::Atomic(Op::AddU32),
    "atomic_sub_u32" => Kind::Atomic(Op::SubU32),
    "atomic_cmpswap_b32" => Kind::Atomic(Op::CmpSwap),
    "atomic_swap_b32" => Kind::Atomic(Op::Swap),
    "atomic_min_u32" => Kind::Atomic(Op::MinU32),
    "atomic_max_u32" => Kind::Atomic(Op::MaxU32),
    "atomic_min_i32" => Kind::Atomic(Op::MinI32),
    "atomic_max_i32" => Kind::Atomic(Op::MaxI32),
    "atomic_and_b32" => Kind::Atomic(Op::And),
    "atomic_or_b32" => Kind::Atomic(Op::Or),
    "atomic_xor_b32" => Kind::Atomic(Op::Xor),
];
