//! Scalar ALU and program control: SOP1, SOP2, SOPK, SOPC, SOPP (GFX9 and GFX11 names).

use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::arch::Family;
use crate::decode::{Inst, Operand};

type R = Result<Flow, String>;

/// A scalar operand width: one SGPR or a pair.
trait Word: Copy + Default {
    fn get(c: &Ctx, o: Operand) -> Result<Self, String>;
    fn set(c: &mut Ctx, o: Operand, v: Self) -> Result<(), String>;
}

impl Word for u32 {
    fn get(c: &Ctx, o: Operand) -> Result<u32, String> {
        c.s32(o, Ty::B32)
    }
    fn set(c: &mut Ctx, o: Operand, v: u32) -> Result<(), String> {
        c.set_s32(o, v)
    }
}

impl Word for u64 {
    fn get(c: &Ctx, o: Operand) -> Result<u64, String> {
        c.s64(o, Ty::U64)
    }
    fn set(c: &mut Ctx, o: Operand, v: u64) -> Result<(), String> {
        c.set_s64(o, v)
    }
}

/// Writes D and, unless `scc` is None, SCC.
fn finish<T: Word>(c: &mut Ctx, i: &Inst, (d, scc): (T, Option<bool>)) -> R {
    T::set(c, i.dst, d)?;
    if let Some(s) = scc {
        c.wave.scc = s;
    }
    Ok(Flow::Next)
}

/// `D = f(S0, S1, SCC)`, 32-bit; `f` returns the result and the new SCC (None: unchanged).
fn op2(c: &mut Ctx, i: &Inst, f: fn(u32, u32, bool) -> (u32, Option<bool>)) -> R {
    let (a, b) = (u32::get(c, i.src[0])?, u32::get(c, i.src[1])?);
    finish(c, i, f(a, b, c.wave.scc))
}

/// 64-bit form; `b32` reads S1 as 32 bits (shift amounts, bfe controls).
fn op2_64(c: &mut Ctx, i: &Inst, b32: bool, f: fn(u64, u64, bool) -> (u64, Option<bool>)) -> R {
    let a = u64::get(c, i.src[0])?;
    let b = if b32 {
        u32::get(c, i.src[1])? as u64
    } else {
        u64::get(c, i.src[1])?
    };
    finish(c, i, f(a, b, c.wave.scc))
}

/// `D = f(S0, D, SCC)`, 32 or 64 bits (an unreadable D reads as 0).
fn op1<T: Word>(c: &mut Ctx, i: &Inst, f: fn(T, T, bool) -> (T, Option<bool>)) -> R {
    let a = T::get(c, i.src[0])?;
    let old = T::get(c, i.dst).unwrap_or_default();
    finish(c, i, f(a, old, c.wave.scc))
}

/// `SCC = f(S0, S1)`, 32 or 64 bits.
fn cmp<T: Word>(c: &mut Ctx, i: &Inst, f: fn(T, T) -> bool) -> R {
    let (a, b) = (T::get(c, i.src[0])?, T::get(c, i.src[1])?);
    c.wave.scc = f(a, b);
    Ok(Flow::Next)
}

/// `D = f(D, S0[5:0])` on a pair (`s_bitset0/1_b64`).
fn bitset64(c: &mut Ctx, i: &Inst, f: fn(u64, u32) -> u64) -> R {
    let a = u32::get(c, i.src[0])?;
    let d = u64::get(c, i.dst)?;
    u64::set(c, i.dst, f(d, a & 63))?;
    Ok(Flow::Next)
}

/// `SCC = bit S1[5:0] of S0 == want` on a pair (`s_bitcmp0/1_b64`).
fn bitcmp64(c: &mut Ctx, i: &Inst, want: u64) -> R {
    let a = u64::get(c, i.src[0])?;
    let b = u32::get(c, i.src[1])?;
    c.wave.scc = a >> (b & 63) & 1 == want;
    Ok(Flow::Next)
}

/// SOPK compares: the SGPR in `sdst` against the 16-bit immediate.
fn cmpk(c: &mut Ctx, i: &Inst, signed: bool, f: fn(i64, i64) -> bool) -> R {
    let s = c.s32(i.dst, Ty::B32)?;
    let (a, k) = if signed {
        (s as i32 as i64, i.imm)
    } else {
        (s as i64, (i.imm as u16) as i64)
    };
    c.wave.scc = f(a, k);
    Ok(Flow::Next)
}

/// `*_saveexec`: D = EXEC; EXEC = f(S0, EXEC); SCC = EXEC != 0. `wrexec`: D = EXEC = f(..).
fn saveexec(c: &mut Ctx, i: &Inst, wr: bool, f: fn(u64, u64) -> u64) -> R {
    let s0 = c.mask(i.src[0])?;
    let exec = c.wave.exec();
    let new = f(s0, exec) & c.wave.lane_mask();
    c.set_mask(i.dst, if wr { new } else { exec })?;
    c.wave.set_exec(new);
    c.wave.scc = new != 0;
    Ok(Flow::Next)
}

/// `s_lshl<K>_add_u32`: `D = (S0 << K) + S1`, SCC = the carry out.
fn lshl_add<const K: u32>(a: u32, b: u32, _: bool) -> (u32, Option<bool>) {
    let t = ((a as u64) << K) + b as u64;
    (t as u32, Some(t >> 32 != 0))
}

fn branch_if(i: &Inst, cond: bool) -> R {
    Ok(if cond {
        Flow::Jump(i.branch_target())
    } else {
        Flow::Next
    })
}

/// SIMM16 of `s_getreg`/`s_setreg`: (id, offset, mask of size bits), as the ISA guides'
/// S_GETREG_B32 (`hwRegId = SIMM16[5:0]`, `offset = SIMM16[10:6]`, `size = SIMM16[15:11] + 1`).
fn hwreg_field(i: &Inst) -> (usize, u32, u32) {
    let v = i.imm as u16 as u32;
    let size = (v >> 11 & 31) + 1;
    let mask = if size == 32 {
        u32::MAX
    } else {
        (1 << size) - 1
    };
    ((v & 63) as usize, v >> 6 & 31, mask)
}

/// `s_getreg_b32`: D = HW_REG[offset +: size] (zero-extended).
fn getreg(c: &mut Ctx, i: &Inst) -> R {
    let (id, off, mask) = hwreg_field(i);
    let v = c.wave.hwreg[id].checked_shr(off).unwrap_or(0) & mask;
    c.set_s32(i.dst, v)?;
    Ok(Flow::Next)
}

/// `s_setreg_b32` (SOPK: the SGPR in the SDST field is the source):
/// HW_REG[offset +: size] = S0[size-1:0].
fn setreg(c: &mut Ctx, i: &Inst) -> R {
    let (id, off, mask) = hwreg_field(i);
    let s0 = c.s32(i.dst, Ty::B32)?;
    let m = mask << off;
    c.wave.hwreg[id] = c.wave.hwreg[id] & !m | (s0 << off) & m;
    Ok(Flow::Next)
}

fn nop(_: &mut Ctx, _: &Inst) -> R {
    Ok(Flow::Next)
}

/// `s_waitcnt simm16`: GFX9 vmcnt in bits 3:0 and 15:14, lgkmcnt 11:8; GFX11
/// vmcnt 15:10, lgkmcnt 9:4 (expcnt counts exports, which the kernels have none of).
fn waitcnt(c: &mut Ctx, i: &Inst) -> R {
    let imm = i.imm as u16 as u32;
    let (vm, lgkm) = match c.family {
        Family::Gfx9 => ((imm & 0xf) | (imm >> 14 & 3) << 4, imm >> 8 & 0xf),
        Family::Gfx11 => (imm >> 10 & 0x3f, imm >> 4 & 0x3f),
        // GFX12 keeps s_waitcnt but splits the counters it names; the kernels use
        // the s_wait_* forms, and this one's fields are not modelled.
        Family::Gfx12 => return Err("s_waitcnt on GFX12 is not modelled (s_wait_* are)".into()),
    };
    super::late::wait(c, i.addr, Some(vm), Some(lgkm), None);
    Ok(Flow::Next)
}

/// GFX11 `s_waitcnt_{vmcnt,lgkmcnt,vscnt} sdst, simm16` (counter 0, 1, 2): the count
/// is the immediate with `null` as the register.
fn waitcnt_k(c: &mut Ctx, i: &Inst, counter: usize) -> R {
    let null = c.family == Family::Gfx11 && i.dst == Operand::Sgpr(124);
    if !null {
        return Err(format!(
            "{} with a count in {} is not modelled",
            i.name, i.dst
        ));
    }
    let n = Some(i.imm as u16 as u32);
    match counter {
        0 => super::late::wait(c, i.addr, n, None, None),
        1 => super::late::wait(c, i.addr, None, n, None),
        _ => super::late::wait(c, i.addr, None, None, n),
    }
    Ok(Flow::Next)
}

fn bfe32(v: u32, ctl: u32, signed: bool) -> u32 {
    let off = ctl & 31;
    let width = (ctl >> 16) & 0x7f;
    if width == 0 {
        return 0;
    }
    let width = width.min(32);
    let x = (v as u64 >> off) & ((1u64 << width) - 1);
    if signed && width < 32 && x >> (width - 1) & 1 != 0 {
        (x | !((1u64 << width) - 1)) as u32
    } else {
        x as u32
    }
}

fn bfe64(v: u64, ctl: u64, signed: bool) -> u64 {
    let off = ctl & 63;
    let width = ((ctl >> 16) & 0x7f).min(64);
    if width == 0 {
        return 0;
    }
    let x = if width == 64 {
        v >> off
    } else {
        (v >> off) & ((1u64 << width) - 1)
    };
    if signed && width < 64 && x >> (width - 1) & 1 != 0 {
        x | !((1u64 << width) - 1)
    } else {
        x
    }
}

/// The SOPC and SOPK compares of the conditions, signed and unsigned:
/// `s_cmp_<cond>_{i32,u32}` (S0 with S1), `s_cmpk_<cond>_{i32,u32}` (D with simm16).
macro_rules! compares {
    ($($cond:literal $op:tt),*) => {
        &[$(
            (concat!("s_cmp_", $cond, "_i32"), |c, i| {
                cmp::<u32>(c, i, |a, b| (a as i32) $op (b as i32))
            }),
            (concat!("s_cmp_", $cond, "_u32"), |c, i| cmp::<u32>(c, i, |a, b| a $op b)),
            (concat!("s_cmpk_", $cond, "_i32"), |c, i| cmpk(c, i, true, |a, b| a $op b)),
            (concat!("s_cmpk_", $cond, "_u32"), |c, i| cmpk(c, i, false, |a, b| a $op b)),
        )*]
    };
}

pub(super) const COMPARES: &[(&str, Handler)] =
    compares!["eq" ==, "lg" !=, "gt" >, "ge" >=, "lt" <, "le" <=];

pub(super) const HANDLERS: &[(&str, Handler)] = &[
    // SOP2
    ("s_add_u32", |c, i| {
        op2(c, i, |a, b, _| {
            let (d, o) = a.overflowing_add(b);
            (d, Some(o))
        })
    }),
    ("s_sub_u32", |c, i| {
        op2(c, i, |a, b, _| {
            let (d, o) = a.overflowing_sub(b);
            (d, Some(o))
        })
    }),
    ("s_add_i32", |c, i| {
        op2(c, i, |a, b, _| {
            let (d, o) = (a as i32).overflowing_add(b as i32);
            (d as u32, Some(o))
        })
    }),
    ("s_sub_i32", |c, i| {
        op2(c, i, |a, b, _| {
            let (d, o) = (a as i32).overflowing_sub(b as i32);
            (d as u32, Some(o))
        })
    }),
    ("s_addc_u32", |c, i| {
        op2(c, i, |a, b, s| {
            let t = a as u64 + b as u64 + s as u64;
            (t as u32, Some(t >> 32 != 0))
        })
    }),
    ("s_subb_u32", |c, i| {
        op2(c, i, |a, b, s| {
            let t = (a as u64).wrapping_sub(b as u64).wrapping_sub(s as u64);
            (t as u32, Some((b as u64 + s as u64) > a as u64))
        })
    }),
    ("s_min_i32", |c, i| {
        op2(c, i, |a, b, _| {
            (
                (a as i32).min(b as i32) as u32,
                Some((a as i32) < (b as i32)),
            )
        })
    }),
    ("s_min_u32", |c, i| {
        op2(c, i, |a, b, _| (a.min(b), Some(a < b)))
    }),
    ("s_max_i32", |c, i| {
        op2(c, i, |a, b, _| {
            (
                (a as i32).max(b as i32) as u32,
                Some((a as i32) > (b as i32)),
            )
        })
    }),
    ("s_max_u32", |c, i| {
        op2(c, i, |a, b, _| (a.max(b), Some(a > b)))
    }),
    ("s_cselect_b32", |c, i| {
        op2(c, i, |a, b, s| (if s { a } else { b }, None))
    }),
    ("s_cselect_b64", |c, i| {
        op2_64(c, i, false, |a, b, s| (if s { a } else { b }, None))
    }),
    ("s_and_b32", |c, i| {
        op2(c, i, |a, b, _| (a & b, Some(a & b != 0)))
    }),
    ("s_or_b32", |c, i| {
        op2(c, i, |a, b, _| (a | b, Some(a | b != 0)))
    }),
    ("s_xor_b32", |c, i| {
        op2(c, i, |a, b, _| (a ^ b, Some(a ^ b != 0)))
    }),
    ("s_andn2_b32", |c, i| {
        op2(c, i, |a, b, _| (a & !b, Some(a & !b != 0)))
    }),
    ("s_orn2_b32", |c, i| {
        op2(c, i, |a, b, _| (a | !b, Some(a | !b != 0)))
    }),
    ("s_nand_b32", |c, i| {
        op2(c, i, |a, b, _| (!(a & b), Some(!(a & b) != 0)))
    }),
    ("s_nor_b32", |c, i| {
        op2(c, i, |a, b, _| (!(a | b), Some(!(a | b) != 0)))
    }),
    ("s_xnor_b32", |c, i| {
        op2(c, i, |a, b, _| (!(a ^ b), Some(!(a ^ b) != 0)))
    }),
    ("s_and_b64", |c, i| {
        op2_64(c, i, false, |a, b, _| (a & b, Some(a & b != 0)))
    }),
    ("s_or_b64", |c, i| {
        op2_64(c, i, false, |a, b, _| (a | b, Some(a | b != 0)))
    }),
    ("s_xor_b64", |c, i| {
        op2_64(c, i, false, |a, b, _| (a ^ b, Some(a ^ b != 0)))
    }),
    ("s_andn2_b64", |c, i| {
        op2_64(c, i, false, |a, b, _| (a & !b, Some(a & !b != 0)))
    }),
    ("s_orn2_b64", |c, i| {
        op2_64(c, i, false, |a, b, _| (a | !b, Some(a | !b != 0)))
    }),
    ("s_nand_b64", |c, i| {
        op2_64(c, i, false, |a, b, _| (!(a & b), Some(!(a & b) != 0)))
    }),
    ("s_nor_b64", |c, i| {
        op2_64(c, i, false, |a, b, _| (!(a | b), Some(!(a | b) != 0)))
    }),
    ("s_xnor_b64", |c, i| {
        op2_64(c, i, false, |a, b, _| (!(a ^ b), Some(!(a ^ b) != 0)))
    }),
    ("s_lshl_b32", |c, i| {
        op2(c, i, |a, b, _| (a << (b & 31), Some(a << (b & 31) != 0)))
    }),
    ("s_lshr_b32", |c, i| {
        op2(c, i, |a, b, _| (a >> (b & 31), Some(a >> (b & 31) != 0)))
    }),
    ("s_ashr_i32", |c, i| {
        op2(c, i, |a, b, _| {
            let d = ((a as i32) >> (b & 31)) as u32;
            (d, Some(d != 0))
        })
    }),
    ("s_lshl_b64", |c, i| {
        op2_64(c, i, true, |a, b, _| {
            (a << (b & 63), Some(a << (b & 63) != 0))
        })
    }),
    ("s_lshr_b64", |c, i| {
        op2_64(c, i, true, |a, b, _| {
            (a >> (b & 63), Some(a >> (b & 63) != 0))
        })
    }),
    ("s_ashr_i64", |c, i| {
        op2_64(c, i, true, |a, b, _| {
            let d = ((a as i64) >> (b & 63)) as u64;
            (d, Some(d != 0))
        })
    }),
    ("s_bfm_b32", |c, i| {
        op2(c, i, |a, b, _| {
            ((((1u64 << (a & 31)) - 1) as u32).wrapping_shl(b & 31), None)
        })
    }),
    ("s_mul_i32", |c, i| {
        op2(c, i, |a, b, _| (a.wrapping_mul(b), None))
    }),
    ("s_mul_hi_u32", |c, i| {
        op2(c, i, |a, b, _| (((a as u64 * b as u64) >> 32) as u32, None))
    }),
    ("s_mul_hi_i32", |c, i| {
        op2(c, i, |a, b, _| {
            (((a as i32 as i64 * b as i32 as i64) >> 32) as u32, None)
        })
    }),
    ("s_bfe_u32", |c, i| {
        op2(c, i, |a, b, _| {
            let d = bfe32(a, b, false);
            (d, Some(d != 0))
        })
    }),
    ("s_bfe_i32", |c, i| {
        op2(c, i, |a, b, _| {
            let d = bfe32(a, b, true);
            (d, Some(d != 0))
        })
    }),
    ("s_bfe_u64", |c, i| {
        op2_64(c, i, true, |a, b, _| {
            let d = bfe64(a, b, false);
            (d, Some(d != 0))
        })
    }),
    ("s_bfe_i64", |c, i| {
        op2_64(c, i, true, |a, b, _| {
            let d = bfe64(a, b, true);
            (d, Some(d != 0))
        })
    }),
    ("s_absdiff_i32", |c, i| {
        op2(c, i, |a, b, _| {
            let d = (a as i32).wrapping_sub(b as i32).unsigned_abs();
            (d, Some(d != 0))
        })
    }),
    ("s_lshl1_add_u32", |c, i| op2(c, i, lshl_add::<1>)),
    ("s_lshl2_add_u32", |c, i| op2(c, i, lshl_add::<2>)),
    ("s_lshl3_add_u32", |c, i| op2(c, i, lshl_add::<3>)),
    ("s_lshl4_add_u32", |c, i| op2(c, i, lshl_add::<4>)),
    ("s_pack_ll_b32_b16", |c, i| {
        op2(c, i, |a, b, _| ((a & 0xffff) | b << 16, None))
    }),
    ("s_pack_lh_b32_b16", |c, i| {
        op2(c, i, |a, b, _| ((a & 0xffff) | (b & 0xffff_0000), None))
    }),
    ("s_pack_hh_b32_b16", |c, i| {
        op2(c, i, |a, b, _| ((a >> 16) | (b & 0xffff_0000), None))
    }),
    ("s_pack_hl_b32_b16", |c, i| {
        op2(c, i, |a, b, _| ((a >> 16) | b << 16, None))
    }),
    // SOPK
    ("s_movk_i32", |c, i| {
        c.set_s32(i.dst, i.imm as i32 as u32)?;
        Ok(Flow::Next)
    }),
    ("s_cmovk_i32", |c, i| {
        if c.wave.scc {
            c.set_s32(i.dst, i.imm as i32 as u32)?;
        }
        Ok(Flow::Next)
    }),
    ("s_addk_i32", |c, i| {
        let (d, o) = (c.s32(i.dst, Ty::B32)? as i32).overflowing_add(i.imm as i32);
        c.set_s32(i.dst, d as u32)?;
        c.wave.scc = o;
        Ok(Flow::Next)
    }),
    ("s_mulk_i32", |c, i| {
        let d = (c.s32(i.dst, Ty::B32)? as i32).wrapping_mul(i.imm as i32);
        c.set_s32(i.dst, d as u32)?;
        Ok(Flow::Next)
    }),
    ("s_waitcnt_vscnt", |c, i| waitcnt_k(c, i, 2)),
    ("s_waitcnt_vmcnt", |c, i| waitcnt_k(c, i, 0)),
    ("s_waitcnt_expcnt", nop),
    ("s_waitcnt_lgkmcnt", |c, i| waitcnt_k(c, i, 1)),
    ("s_version", nop),
    // SOP1
    ("s_mov_b32", |c, i| op1::<u32>(c, i, |a, _, _| (a, None))),
    ("s_mov_b64", |c, i| op1::<u64>(c, i, |a, _, _| (a, None))),
    ("s_cmov_b32", |c, i| {
        op1::<u32>(c, i, |a, d, s| (if s { a } else { d }, None))
    }),
    ("s_cmov_b64", |c, i| {
        op1::<u64>(c, i, |a, d, s| (if s { a } else { d }, None))
    }),
    ("s_not_b32", |c, i| {
        op1::<u32>(c, i, |a, _, _| (!a, Some(!a != 0)))
    }),
    ("s_not_b64", |c, i| {
        op1::<u64>(c, i, |a, _, _| (!a, Some(!a != 0)))
    }),
    ("s_brev_b32", |c, i| {
        op1::<u32>(c, i, |a, _, _| (a.reverse_bits(), None))
    }),
    ("s_brev_b64", |c, i| {
        op1::<u64>(c, i, |a, _, _| (a.reverse_bits(), None))
    }),
    ("s_bcnt0_i32_b32", |c, i| {
        op1::<u32>(c, i, |a, _, _| {
            (a.count_zeros(), Some(a.count_zeros() != 0))
        })
    }),
    ("s_bcnt1_i32_b32", |c, i| {
        op1::<u32>(c, i, |a, _, _| (a.count_ones(), Some(a.count_ones() != 0)))
    }),
    ("s_bcnt1_i32_b64", |c, i| {
        let a = c.s64(i.src[0], Ty::U64)?;
        c.set_s32(i.dst, a.count_ones())?;
        c.wave.scc = a != 0;
        Ok(Flow::Next)
    }),
    ("s_ff1_i32_b32", |c, i| {
        op1::<u32>(c, i, |a, _, _| {
            (if a == 0 { u32::MAX } else { a.trailing_zeros() }, None)
        })
    }),
    ("s_flbit_i32_b32", |c, i| {
        op1::<u32>(c, i, |a, _, _| {
            (if a == 0 { u32::MAX } else { a.leading_zeros() }, None)
        })
    }),
    ("s_sext_i32_i8", |c, i| {
        op1::<u32>(c, i, |a, _, _| (a as i8 as i32 as u32, None))
    }),
    ("s_sext_i32_i16", |c, i| {
        op1::<u32>(c, i, |a, _, _| (a as i16 as i32 as u32, None))
    }),
    ("s_bitset0_b32", |c, i| {
        op1::<u32>(c, i, |a, d, _| (d & !(1 << (a & 31)), None))
    }),
    ("s_bitset1_b32", |c, i| {
        op1::<u32>(c, i, |a, d, _| (d | 1 << (a & 31), None))
    }),
    ("s_bitset0_b64", |c, i| bitset64(c, i, |d, b| d & !(1 << b))),
    ("s_bitset1_b64", |c, i| bitset64(c, i, |d, b| d | 1 << b)),
    ("s_abs_i32", |c, i| {
        op1::<u32>(c, i, |a, _, _| {
            let d = (a as i32).unsigned_abs();
            (d, Some(d != 0))
        })
    }),
    ("s_and_saveexec_b64", |c, i| {
        saveexec(c, i, false, |s, e| s & e)
    }),
    ("s_or_saveexec_b64", |c, i| {
        saveexec(c, i, false, |s, e| s | e)
    }),
    ("s_xor_saveexec_b64", |c, i| {
        saveexec(c, i, false, |s, e| s ^ e)
    }),
    ("s_andn2_saveexec_b64", |c, i| {
        saveexec(c, i, false, |s, e| s & !e)
    }),
    ("s_orn2_saveexec_b64", |c, i| {
        saveexec(c, i, false, |s, e| s | !e)
    }),
    ("s_nand_saveexec_b64", |c, i| {
        saveexec(c, i, false, |s, e| !(s & e))
    }),
    ("s_nor_saveexec_b64", |c, i| {
        saveexec(c, i, false, |s, e| !(s | e))
    }),
    ("s_xnor_saveexec_b64", |c, i| {
        saveexec(c, i, false, |s, e| !(s ^ e))
    }),
    ("s_andn1_saveexec_b64", |c, i| {
        saveexec(c, i, false, |s, e| !s & e)
    }),
    ("s_orn1_saveexec_b64", |c, i| {
        saveexec(c, i, false, |s, e| !s | e)
    }),
    ("s_andn1_wrexec_b64", |c, i| {
        saveexec(c, i, true, |s, e| !s & e)
    }),
    ("s_andn2_wrexec_b64", |c, i| {
        saveexec(c, i, true, |s, e| s & !e)
    }),
    ("s_getpc_b64", |c, i| {
        c.set_s64(i.dst, i.next())?;
        Ok(Flow::Next)
    }),
    ("s_setpc_b64", |c, i| {
        Ok(Flow::Jump(c.s64(i.src[0], Ty::U64)?))
    }),
    // SOPC
    ("s_bitcmp0_b32", |c, i| {
        cmp::<u32>(c, i, |a, b| a >> (b & 31) & 1 == 0)
    }),
    ("s_bitcmp1_b32", |c, i| {
        cmp::<u32>(c, i, |a, b| a >> (b & 31) & 1 == 1)
    }),
    ("s_bitcmp0_b64", |c, i| bitcmp64(c, i, 0)),
    ("s_bitcmp1_b64", |c, i| bitcmp64(c, i, 1)),
    ("s_cmp_eq_u64", |c, i| cmp::<u64>(c, i, |a, b| a == b)),
    ("s_cmp_lg_u64", |c, i| cmp::<u64>(c, i, |a, b| a != b)),
    // SOPK
    ("s_getreg_b32", getreg),
    ("s_setreg_b32", setreg),
    // SOPP
    ("s_nop", nop),
    ("s_waitcnt", waitcnt),
    ("s_waitcnt_depctr", nop),
    ("s_delay_alu", nop),
    ("s_clause", nop),
    ("s_set_inst_prefetch_distance", nop),
    ("s_setprio", nop),
    ("s_sleep", nop),
    ("s_icache_inv", nop),
    ("s_sendmsg", nop),
    // The value a message returns. The shipped kernels send one, MSG_RTN_GET_DOORBELL,
    // after `s_trap` on the abort path (which already ends the launch with an error):
    // the executor has no hardware queue, so the doorbell, like any returned value, is 0.
    ("s_sendmsg_rtn_b32", |c, i| {
        c.set_s32(i.dst, 0)?;
        Ok(Flow::Next)
    }),
    ("s_endpgm", |_, _| Ok(Flow::End)),
    ("s_barrier", |_, _| Ok(Flow::Barrier)),
    ("s_branch", |_, i| Ok(Flow::Jump(i.branch_target()))),
    ("s_cbranch_scc0", |c, i| branch_if(i, !c.wave.scc)),
    ("s_cbranch_scc1", |c, i| branch_if(i, c.wave.scc)),
    ("s_cbranch_vccz", |c, i| {
        branch_if(i, c.wave.vcc() & c.wave.lane_mask() == 0)
    }),
    ("s_cbranch_vccnz", |c, i| {
        branch_if(i, c.wave.vcc() & c.wave.lane_mask() != 0)
    }),
    ("s_cbranch_execz", |c, i| branch_if(i, c.wave.exec() == 0)),
    ("s_cbranch_execnz", |c, i| branch_if(i, c.wave.exec() != 0)),
    ("s_trap", |_, i| {
        Err(format!(
            "the kernel trapped (s_trap {}): a device-side assertion or panic",
            i.imm
        ))
    }),
    ("s_sethalt", |_, i| {
        Err(format!("the kernel halted (s_sethalt {})", i.imm))
    }),
    ("s_code_end", |_, _| {
        Err("executed s_code_end padding".into())
    }),
];

/// GFX11's names of operations above: (GFX11, GFX9).
pub(super) const ALIASES: &[(&str, &str)] = &[
    ("s_and_not1_b32", "s_andn2_b32"),
    ("s_or_not1_b32", "s_orn2_b32"),
    ("s_and_not1_b64", "s_andn2_b64"),
    ("s_or_not1_b64", "s_orn2_b64"),
    ("s_ctz_i32_b32", "s_ff1_i32_b32"),
    ("s_clz_i32_u32", "s_flbit_i32_b32"),
    ("s_and_saveexec_b32", "s_and_saveexec_b64"),
    ("s_or_saveexec_b32", "s_or_saveexec_b64"),
    ("s_xor_saveexec_b32", "s_xor_saveexec_b64"),
    ("s_and_not1_saveexec_b32", "s_andn2_saveexec_b64"),
    ("s_or_not1_saveexec_b32", "s_orn2_saveexec_b64"),
    ("s_and_not0_saveexec_b32", "s_andn1_saveexec_b64"),
    ("s_or_not0_saveexec_b32", "s_orn1_saveexec_b64"),
    ("s_and_not0_wrexec_b32", "s_andn1_wrexec_b64"),
    ("s_and_not1_wrexec_b32", "s_andn2_wrexec_b64"),
];
