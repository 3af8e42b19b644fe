//! Scalar memory loads (`s_load_*`, GFX9 `dword` and GFX11 `b32` names): address =
//! SGPR pair `sbase` + offset (+ `soffset`), read from checked global memory.

use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::decode::{Inst, Operand};

fn load(c: &mut Ctx, i: &Inst, dwords: usize) -> Result<Flow, String> {
    let base = c.s64(i.src[0], Ty::U64)?;
    let soff = match i.src[1] {
        Operand::None => 0,
        o => c.s32(o, Ty::B32)? as u64,
    };
    let addr = base.wrapping_add(i.imm as u64).wrapping_add(soff) & !3;
    let mut buf = vec![0u8; dwords * 4];
    c.mem
        .load(addr, &mut buf)
        .map_err(|f| format!("scalar load: {f}"))?;
    c.counters.scalar_bytes_read += buf.len() as u64;
    let Operand::Sgpr(d) = i.dst else {
        return Err("scalar load destination".into());
    };
    for k in 0..dwords {
        let v = u32::from_le_bytes(buf[4 * k..4 * k + 4].try_into().unwrap());
        c.set_s32(Operand::Sgpr(d + k as u8), v)?;
    }
    Ok(Flow::Next)
}

pub(super) const HANDLERS: &[(&str, Handler)] = &[
    ("s_load_dword", |c, i| load(c, i, 1)),
    ("s_load_dwordx2", |c, i| load(c, i, 2)),
    ("s_load_dwordx3", |c, i| load(c, i, 3)),
    ("s_load_dwordx4", |c, i| load(c, i, 4)),
    ("s_load_dwordx8", |c, i| load(c, i, 8)),
    ("s_load_dwordx16", |c, i| load(c, i, 16)),
    ("s_dcache_inv", |_, _| Ok(Flow::Next)),
    ("s_gl1_inv", |_, _| Ok(Flow::Next)),
];

/// GFX11's names of the loads above: (GFX11, GFX9).
pub(super) const ALIASES: &[(&str, &str)] = &[
    ("s_load_b32", "s_load_dword"),
    ("s_load_b64", "s_load_dwordx2"),
    ("s_load_b128", "s_load_dwordx4"),
    ("s_load_b256", "s_load_dwordx8"),
    ("s_load_b512", "s_load_dwordx16"),
];
