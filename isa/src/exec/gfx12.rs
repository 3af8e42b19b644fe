//! GFX12 (RDNA4: gfx1200, gfx1201) semantics that differ from GFX11.
//!
//! - **Split wait counters** (RDNA4 ISA guide, "Data dependency resolution"; LLVM
//!   `SIInsertWaitcnts`, `AMDGPUBaseInfo` for the combined forms): `loadcnt` (vector
//!   loads, atomics returning data; in order), `storecnt` (vector stores, atomics
//!   without return; in order), `dscnt` (LDS, in order; FLAT instructions count here
//!   too, in no order), `kmcnt` (scalar loads, any order: only `kmcnt(0)` guarantees
//!   one). `s_wait_loadcnt_dscnt` / `s_wait_storecnt_dscnt` carry loadcnt/storecnt in
//!   bits 13:8 and dscnt in 5:0. They map onto [`super::late`]'s classes (`Vm`, `Vs`,
//!   `Lds`, `Smem`): a load's result lands only at the wait that covers it.
//!   `samplecnt`, `bvhcnt` and `expcnt` count nothing the kernels issue.
//! - **Split barrier**: `s_barrier_signal -1` then `s_barrier_wait`. The executor's
//!   barrier is taken at the wait; between the two, a memory instruction, a memory
//!   wait or the end of the wave is refused (its order against the other waves would
//!   not be modelled), so what runs between them cannot be reordered across it.
//! - **Cache policy** from `scope` (CU, SE, DEV, SYS) instead of glc/dlc: for the
//!   cache model (`cache.rs`) a load of scope SE or wider misses the L0, of scope DEV
//!   or wider also the SE-level cache; `global_inv scope:SE` invalidates the L0,
//!   `scope:DEV`/`SYS` both levels. Atomics return their old value iff `th` bit 0.
//! - **SALU**: `s_add_nc_u64`, `s_sub_nc_u64`, `s_mul_u64` (SCC unchanged), the SALU
//!   float conversions and `s_mul_f32`; renamed GFX11 ops are aliases.
//! - **WMMA** `v_wmma_f32_16x16x16_{f16,bf16}` with GFX12's lane layout (no
//!   replicas: A and B take 4 VGPRs, 8 halves a lane), see [`wmma_slot_a`].

use super::cache::Bits;
use super::mods;
use super::wave::Ty;
use super::{Ctx, Flow, Handler};
use crate::decode::{Inst, Operand};

type R = Result<Flow, String>;

/// The lane and element (half index within the 4-VGPR operand, or VGPR index of D)
/// of `A[i][k]` of `v_wmma_f32_16x16x16_*` on GFX12, wave32.
///
/// RDNA4 ISA guide, "Wave Matrix Multiply-Accumulate" (16-bit A matrix 16x16: lanes
/// 0-15 hold rows M = lane with K = 0..7, two halves a VGPR, low half first; lanes
/// 16-31 hold the same rows with K = 8..15). Each element is held once.
pub fn wmma_slot_a(i: u32, k: u32) -> (u32, u32) {
    (i + 16 * (k / 8), k % 8)
}

/// `B[k][j]`: lanes 0-15 hold columns N = lane with K = 0..7, lanes 16-31 K = 8..15
/// (the same guide's B matrix table).
pub fn wmma_slot_b(k: u32, j: u32) -> (u32, u32) {
    (j + 16 * (k / 8), k % 8)
}

/// `C`/`D[i][j]` (f32, 8 VGPRs): VGPR r of lanes 0-15 holds row M = r, column
/// N = lane; lanes 16-31 hold rows M = 8 + r.
pub fn wmma_slot_d(i: u32, j: u32) -> (u32, u32) {
    (j + 16 * (i / 8), i % 8)
}

fn half(c: &Ctx, o: Operand, lane: u32, e: u32, bf: bool) -> Result<f64, String> {
    let w = c.v32k(o, (e / 2) as usize, lane as usize, Ty::B32)?;
    let h = (w >> (16 * (e % 2))) as u16;
    Ok(if bf {
        f32::from_bits((h as u32) << 16) as f64
    } else {
        half::f16::from_bits(h).to_f64()
    })
}

/// GFX12 `v_wmma_f32_16x16x16_{f16,bf16}`: `D = A * B + C`, products summed in f64
/// and rounded once to f32 (as the GFX11 handler).
pub(super) fn wmma(c: &mut Ctx, i: &Inst) -> R {
    let n = i.name;
    let bf = match n {
        "v_wmma_f32_16x16x16_f16" => false,
        "v_wmma_f32_16x16x16_bf16" => true,
        _ => return Err(format!("unimplemented GFX12 matrix instruction {n}")),
    };
    c.uses(
        mods::neg(0)
            | mods::neg(1)
            | mods::neg(2)
            | mods::neg_hi(0)
            | mods::neg_hi(1)
            | mods::neg_hi(2),
    );
    if i.mods.neg != 0 || i.mods.neg_hi != 0 {
        return Err(format!("{n} with neg modifiers is not modelled"));
    }
    if c.wave.lanes != 32 || c.wave.exec() != c.wave.lane_mask() {
        return Err(format!("{n} needs a full wave32 (EXEC 0x{:x})", c.wave.exec()));
    }
    let mut d = [0f32; 256];
    for r in 0..16u32 {
        for col in 0..16u32 {
            let (lane, g) = wmma_slot_d(r, col);
            let mut s = match i.src[2] {
                Operand::Vgpr(_) => {
                    f32::from_bits(c.v32k(i.src[2], g as usize, lane as usize, Ty::F32)?) as f64
                }
                o => f32::from_bits(c.s32(o, Ty::F32)?) as f64,
            };
            for k in 0..16u32 {
                let (la, ea) = wmma_slot_a(r, k);
                let (lb, eb) = wmma_slot_b(k, col);
                s += half(c, i.src[0], la, ea, bf)? * half(c, i.src[1], lb, eb, bf)?;
            }
            d[(r * 16 + col) as usize] = s as f32;
        }
    }
    for r in 0..16u32 {
        for col in 0..16u32 {
            let (lane, g) = wmma_slot_d(r, col);
            c.set_v32k(i.dst, g as usize, lane as usize, d[(r * 16 + col) as usize].to_bits())?;
        }
    }
    // 16x16x16 on RDNA4: estimated as RDNA3's 32 cycles a wave32 instruction.
    c.counters.matrix_cycles += 32;
    Ok(Flow::Next)
}

/// `s_wait_*`: the counts of (loadcnt, storecnt, dscnt, kmcnt) this wait names.
fn wait(c: &mut Ctx, i: &Inst) -> R {
    if c.wave.barrier_signaled {
        return Err(format!(
            "{} between s_barrier_signal and s_barrier_wait is not modelled",
            i.name
        ));
    }
    let imm = i.imm as u16 as u32;
    let (lo, hi) = (Some(imm & 0x3f), Some(imm >> 8 & 0x3f));
    let all = Some(imm);
    let (load, store, ds, km) = match i.name {
        "s_wait_loadcnt" => (all, None, None, None),
        "s_wait_storecnt" => (None, all, None, None),
        "s_wait_dscnt" => (None, None, all, None),
        "s_wait_kmcnt" => (None, None, None, all),
        "s_wait_loadcnt_dscnt" => (hi, None, lo, None),
        "s_wait_storecnt_dscnt" => (None, hi, lo, None),
        n => return Err(format!("unknown wait {n}")),
    };
    super::late::wait_split(c, i.addr, load, store, ds, km);
    Ok(Flow::Next)
}

fn barrier_signal(c: &mut Ctx, i: &Inst) -> R {
    // ssrc0 = -1 (inline constant 193): the workgroup barrier.
    if i.src[0] != Operand::Inline(193) {
        return Err(format!("{} with barrier {} is not modelled (only -1)", i.name, i.src[0]));
    }
    if c.wave.barrier_signaled {
        return Err("s_barrier_signal twice without s_barrier_wait".into());
    }
    c.wave.barrier_signaled = true;
    Ok(Flow::Next)
}

fn barrier_wait(c: &mut Ctx, i: &Inst) -> R {
    if !c.wave.barrier_signaled {
        return Err(format!("{} without s_barrier_signal", i.name));
    }
    c.wave.barrier_signaled = false;
    Ok(Flow::Barrier)
}

/// `global_inv scope:X`: invalidates the caches narrower than X (cache model).
fn global_inv(c: &mut Ctx, i: &Inst) -> R {
    let uid = c.wave.uid;
    let bits = Bits {
        glc: i.mods.scope >= 1,
        slc: false,
        dlc: i.mods.scope >= 2,
    };
    if let Some(m) = c.mem.cache() {
        m.maintain(uid, i.name, bits);
    }
    Ok(Flow::Next)
}

fn s64op(c: &mut Ctx, i: &Inst, f: fn(u64, u64) -> u64) -> R {
    let (a, b) = (c.s64(i.src[0], Ty::U64)?, c.s64(i.src[1], Ty::U64)?);
    c.set_s64(i.dst, f(a, b))?;
    Ok(Flow::Next)
}

pub(super) const HANDLERS: &[(&str, Handler)] = &[
    ("s_wait_loadcnt", wait),
    ("s_wait_storecnt", wait),
    ("s_wait_dscnt", wait),
    ("s_wait_kmcnt", wait),
    ("s_wait_loadcnt_dscnt", wait),
    ("s_wait_storecnt_dscnt", wait),
    // No sampler, BVH or export instruction in the kernels: these counters stay 0.
    ("s_wait_samplecnt", |_, _| Ok(Flow::Next)),
    ("s_wait_bvhcnt", |_, _| Ok(Flow::Next)),
    ("s_wait_expcnt", |_, _| Ok(Flow::Next)),
    // GFX11's s_waitcnt_depctr: ALU dependencies, which a sequential run meets.
    ("s_wait_alu", |_, _| Ok(Flow::Next)),
    ("s_barrier_signal", barrier_signal),
    ("s_barrier_wait", barrier_wait),
    ("global_inv", global_inv),
    ("s_add_nc_u64", |c, i| s64op(c, i, u64::wrapping_add)),
    ("s_sub_nc_u64", |c, i| s64op(c, i, u64::wrapping_sub)),
    ("s_mul_u64", |c, i| s64op(c, i, u64::wrapping_mul)),
    ("s_cvt_f32_u32", |c, i| {
        let a = c.s32(i.src[0], Ty::B32)?;
        c.set_s32(i.dst, (a as f32).to_bits())?;
        Ok(Flow::Next)
    }),
    ("s_cvt_f32_i32", |c, i| {
        let a = c.s32(i.src[0], Ty::B32)?;
        c.set_s32(i.dst, (a as i32 as f32).to_bits())?;
        Ok(Flow::Next)
    }),
    ("s_cvt_u32_f32", |c, i| {
        let x = f32::from_bits(c.s32(i.src[0], Ty::F32)?);
        // NaN -> 0, saturating (as v_cvt_u32_f32).
        c.set_s32(i.dst, if x.is_nan() { 0 } else { x as u32 })?;
        Ok(Flow::Next)
    }),
    ("s_cvt_i32_f32", |c, i| {
        let x = f32::from_bits(c.s32(i.src[0], Ty::F32)?);
        c.set_s32(i.dst, if x.is_nan() { 0 } else { x as i32 as u32 })?;
        Ok(Flow::Next)
    }),
    ("s_mul_f32", |c, i| {
        let a = f32::from_bits(c.s32(i.src[0], Ty::F32)?);
        let b = f32::from_bits(c.s32(i.src[1], Ty::F32)?);
        c.set_s32(i.dst, (a * b).to_bits())?;
        Ok(Flow::Next)
    }),
];

/// GFX12's names of operations GFX9/GFX11 also have: (GFX12, existing).
pub(super) const ALIASES: &[(&str, &str)] = &[
    ("s_add_co_u32", "s_add_u32"),
    ("s_sub_co_u32", "s_sub_u32"),
    ("s_add_co_i32", "s_add_i32"),
    ("s_sub_co_i32", "s_sub_i32"),
    ("s_add_co_ci_u32", "s_addc_u32"),
    ("s_sub_co_ci_u32", "s_subb_u32"),
    ("s_addk_co_i32", "s_addk_i32"),
    ("s_load_b96", "s_load_dwordx3"),
    ("v_mad_co_u64_u32", "v_mad_u64_u32"),
    // IEEE maximumNumber/minimumNumber, as GFX11's v_max_f32/v_min_f32 are modelled.
    ("v_max_num_f32", "v_max_f32"),
    ("v_min_num_f32", "v_min_f32"),
    ("v_dual_max_num_f32", "v_dual_max_f32"),
    ("v_dual_min_num_f32", "v_dual_min_f32"),
];

#[cfg(test)]
mod tests {
    use super::{wmma_slot_a, wmma_slot_b, wmma_slot_d};
    use convgrad_emu::matrix::MatrixOp;

    /// Second opinion: the emulator's RDNA4 tables (`emu/src/matrix/wmma_gfx12.rs`,
    /// from GPUOpen's RDNA4 article) give the same lane and element for every A, B
    /// and D element, with no replicas. (The kernels' atom,
    /// `device/src/atom/wmma_gfx12.rs`, states the same maps: a_elem(l, e) =
    /// (l % 16, 8 (l / 16) + e), b_elem = (8 (l / 16) + e, l % 16), c_elem =
    /// (8 (l / 16) + e, l % 16).)
    #[test]
    fn wmma_layout_agrees_with_the_emulator() {
        for op in [MatrixOp::Wmma16x16x16Gfx12F16, MatrixOp::Wmma16x16x16Gfx12Bf16] {
            for r in 0..16u32 {
                for k in 0..16u32 {
                    let s = op.a_slot(r, k);
                    assert_eq!(wmma_slot_a(r, k), (s.lane, s.elem), "{op:?} A[{r}][{k}]");
                    let s = op.b_slot(k, r);
                    assert_eq!(wmma_slot_b(k, r), (s.lane, s.elem), "{op:?} B[{k}][{r}]");
                    let s = op.d_slot(r, k);
                    assert_eq!(wmma_slot_d(r, k), (s.lane, s.elem), "{op:?} D[{r}][{k}]");
                    assert!(op.a_replica(r, k).is_none() && op.b_replica(k, r).is_none());
                }
            }
        }
    }

    /// Every (lane, element) of A, B and D holds exactly one matrix element.
    #[test]
    fn wmma_layout_is_a_bijection() {
        for f in [wmma_slot_a, wmma_slot_b, wmma_slot_d] {
            let mut seen = [false; 256];
            for x in 0..16 {
                for y in 0..16 {
                    let (l, e) = f(x, y);
                    assert!(l < 32 && e < 8);
                    assert!(!std::mem::replace(&mut seen[(l * 8 + e) as usize], true));
                }
            }
        }
    }
}
