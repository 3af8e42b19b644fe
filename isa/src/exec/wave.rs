//! A wave's architectural state and the operand access every instruction family uses.

use super::Ctx;
use super::hazard::Hazard;
use super::late::{AGPR0, Late, SGPR0, Write};
use crate::decode::Operand;

/// Operand type, which decides how inline constants and literals are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// 32-bit integer / bits.
    B32,
    /// f32.
    F32,
    /// f16 (inline floats as f16 bits).
    F16,
    /// 64-bit unsigned / bits (32-bit literals zero-extended).
    U64,
    /// 64-bit signed (32-bit literals sign-extended).
    I64,
    /// f64 (a 32-bit literal is the high half).
    F64,
}

/// VGPRs and AccVGPRs allocated per wave.
pub const NUM_VGPRS: usize = 256;

/// The state of one wave.
#[derive(Clone, Debug)]
pub struct Wave {
    /// Lanes: 64 (CDNA, wave64) or 32 (RDNA3 wave32).
    pub lanes: usize,
    /// The scalar register file indexed by operand code (0..=127): SGPRs, VCC at 106,
    /// M0, EXEC at 126.
    pub sgpr: [u32; 128],
    /// VGPRs, `[reg * lanes + lane]`.
    pub vgpr: Vec<u32>,
    /// AccVGPRs (CDNA), `[reg * lanes + lane]`.
    pub agpr: Vec<u32>,
    /// Scalar condition code.
    pub scc: bool,
    /// Index of the next instruction in the program.
    pub pc: usize,
    /// Ended (`s_endpgm`).
    pub done: bool,
    /// Waiting at the `s_barrier` at this address.
    pub at_barrier: Option<u64>,
    /// Wave index inside the workgroup.
    pub id: u32,
    /// Instructions executed.
    pub executed: u64,
    /// EXEC at launch: the lanes that exist.
    pub launch_exec: u64,
    /// Launch-wide id (from 1) naming the wave in memory marks.
    pub uid: u32,
    /// Outstanding memory instructions ([`super::late`]).
    pub late: Late,
    /// Wait-state records ([`super::hazard`]).
    pub hazard: Hazard,
    /// Which misaligned accesses are errors ([`super::align`]).
    pub align: super::align::Check,
    /// Hardware registers as `s_setreg`/`s_getreg` see them (by id; no effect on
    /// execution: MODE is not modelled).
    pub hwreg: [u32; 64],
    /// GFX12: `s_barrier_signal` executed, `s_barrier_wait` not yet.
    pub barrier_signaled: bool,
}

impl Wave {
    /// A zeroed wave.
    pub fn new(lanes: usize, id: u32, cdna: bool) -> Wave {
        Wave {
            lanes,
            sgpr: [0; 128],
            vgpr: vec![0; NUM_VGPRS * lanes],
            agpr: if cdna {
                vec![0; NUM_VGPRS * lanes]
            } else {
                Vec::new()
            },
            scc: false,
            pc: 0,
            done: false,
            at_barrier: None,
            id,
            executed: 0,
            launch_exec: 0,
            uid: 0,
            late: Late::default(),
            hazard: Hazard::default(),
            align: super::align::Check::Off,
            hwreg: [0; 64],
            barrier_signaled: false,
        }
    }
    /// The lanes that exist, as a mask.
    pub fn lane_mask(&self) -> u64 {
        if self.lanes == 64 {
            u64::MAX
        } else {
            (1u64 << self.lanes) - 1
        }
    }
    /// EXEC.
    pub fn exec(&self) -> u64 {
        (self.sgpr[126] as u64 | (self.sgpr[127] as u64) << 32) & self.lane_mask()
    }
    /// Sets EXEC (wave32: EXEC_LO only).
    pub fn set_exec(&mut self, m: u64) {
        self.sgpr[126] = m as u32;
        if self.lanes == 64 {
            self.sgpr[127] = (m >> 32) as u32;
        }
    }
    /// VCC.
    pub fn vcc(&self) -> u64 {
        if self.lanes == 64 {
            self.sgpr[106] as u64 | (self.sgpr[107] as u64) << 32
        } else {
            self.sgpr[106] as u64
        }
    }
}

fn inline32(code: u8, ty: Ty) -> Option<u32> {
    if let Some(i) = Operand::inline_int(code) {
        return Some(i as i32 as u32);
    }
    let f = Operand::inline_float(code)?;
    Some(match ty {
        Ty::F16 => {
            if code == 248 {
                0x3118 // 1/(2*pi) as f16
            } else {
                half::f16::from_f64(f).to_bits() as u32
            }
        }
        _ => {
            if code == 248 {
                0x3e22f983
            } else {
                (f as f32).to_bits()
            }
        }
    })
}

fn inline64(code: u8, ty: Ty) -> Option<u64> {
    if let Some(i) = Operand::inline_int(code) {
        return Some(i as u64);
    }
    let f = Operand::inline_float(code)?;
    Some(match ty {
        Ty::F64 => {
            if code == 248 {
                0x3fc45f306dc9c882
            } else {
                f.to_bits()
            }
        }
        _ => inline32(code, ty)? as u64,
    })
}

impl Ctx<'_> {
    fn sreg(&self, n: u8) -> u32 {
        if n == 124 && self.family.rdna() {
            0
        } else {
            self.wave.sgpr[n as usize]
        }
    }
    fn special(&self, c: u16) -> Result<u32, String> {
        match c {
            253 => Ok(self.wave.scc as u32),
            251 => Ok((self.wave.vcc() == 0) as u32),
            252 => Ok((self.wave.exec() == 0) as u32),
            _ => Err(format!("unsupported source operand code {c}")),
        }
    }

    /// A 32-bit scalar (or broadcast) source.
    pub fn s32(&self, o: Operand, ty: Ty) -> Result<u32, String> {
        match o {
            Operand::Sgpr(n) => {
                self.check_read(SGPR0 + n as usize)?;
                Ok(self.sreg(n))
            }
            Operand::Inline(c) => inline32(c, ty).ok_or_else(|| format!("inline constant {c}")),
            Operand::Literal(v) => Ok(v),
            Operand::Special(c) => self.special(c),
            o => Err(format!("operand {o} where a scalar was expected")),
        }
    }
    /// A 64-bit scalar (or broadcast) source.
    pub fn s64(&self, o: Operand, ty: Ty) -> Result<u64, String> {
        match o {
            Operand::Sgpr(n) => {
                if n == 124 && self.family.rdna() {
                    return Ok(0);
                }
                let hi = self
                    .wave
                    .sgpr
                    .get(n as usize + 1)
                    .copied()
                    .ok_or("SGPR pair out of range")?;
                self.check_read(SGPR0 + n as usize)?;
                self.check_read(SGPR0 + n as usize + 1)?;
                Ok(self.sreg(n) as u64 | (hi as u64) << 32)
            }
            Operand::Inline(c) => inline64(c, ty).ok_or_else(|| format!("inline constant {c}")),
            Operand::Literal(v) => Ok(match ty {
                Ty::I64 => v as i32 as i64 as u64,
                Ty::F64 => (v as u64) << 32,
                _ => v as u64,
            }),
            Operand::Special(c) => self.special(c).map(|v| v as u64),
            o => Err(format!("operand {o} where a scalar was expected")),
        }
    }
    /// Fails if an outstanding load will write scoreboard register `r`.
    #[inline]
    fn check_read(&self, r: usize) -> Result<(), String> {
        self.wave.hazard.note_read(r);
        if self.wave.late.busy(r) {
            return Err(self.wave.late.read_error(r));
        }
        self.wave.late.note_read(r);
        Ok(())
    }
    /// Writes the bits `mask` of scoreboard register `r` in `lane`: deferred while a
    /// memory instruction issues (late results), else at once, an error if an
    /// outstanding load will still write the register.
    fn put(&mut self, r: usize, lane: usize, v: u32, mask: u32) -> Result<(), String> {
        self.wave.hazard.note_write(r);
        if let Some(d) = &mut self.defer {
            d.push(Write {
                reg: r as u16,
                lane: lane as u8,
                value: v,
                mask,
            });
            return Ok(());
        }
        if self.wave.late.busy(r) {
            return Err(self.wave.late.write_error(r));
        }
        let lanes = self.wave.lanes;
        let slot = match r {
            0..AGPR0 => &mut self.wave.vgpr[r * lanes + lane],
            AGPR0..SGPR0 => self
                .wave
                .agpr
                .get_mut((r - AGPR0) * lanes + lane)
                .ok_or("AccVGPR on an architecture without them")?,
            _ => &mut self.wave.sgpr[r - SGPR0],
        };
        *slot = (*slot & !mask) | (v & mask);
        Ok(())
    }
    /// Writes a scalar register (NULL on GFX11 and writes past the file are dropped/errors).
    pub fn set_s32(&mut self, o: Operand, v: u32) -> Result<(), String> {
        match o {
            Operand::Sgpr(124) if self.family.rdna() => Ok(()),
            Operand::Sgpr(n) => self.put(SGPR0 + n as usize, 0, v, u32::MAX),
            o => Err(format!("cannot write scalar operand {o}")),
        }
    }
    /// Writes a scalar register pair.
    pub fn set_s64(&mut self, o: Operand, v: u64) -> Result<(), String> {
        match o {
            Operand::Sgpr(124) if self.family.rdna() => Ok(()),
            Operand::Sgpr(n) if (n as usize) < 127 => {
                self.put(SGPR0 + n as usize, 0, v as u32, u32::MAX)?;
                self.put(SGPR0 + n as usize + 1, 0, (v >> 32) as u32, u32::MAX)
            }
            o => Err(format!("cannot write scalar pair {o}")),
        }
    }
    /// Reads a lane mask held in SGPRs (a pair in wave64, one SGPR in wave32).
    pub fn mask(&self, o: Operand) -> Result<u64, String> {
        if self.wave.lanes == 64 {
            self.s64(o, Ty::U64)
        } else {
            self.s32(o, Ty::B32).map(|v| v as u64)
        }
    }
    /// Writes a lane mask.
    pub fn set_mask(&mut self, o: Operand, v: u64) -> Result<(), String> {
        if self.wave.lanes == 64 {
            self.set_s64(o, v)
        } else {
            self.set_s32(o, v as u32)
        }
    }

    /// The scoreboard index of `v[r+k]` (or `a[r+k]` with `base` [`AGPR0`]).
    fn vreg(&self, base: usize, r: u16, k: usize) -> Result<usize, String> {
        let reg = r as usize + k;
        if reg >= NUM_VGPRS {
            return Err(format!(
                "vector register {reg} beyond the {NUM_VGPRS} modelled"
            ));
        }
        Ok(base + reg)
    }

    /// A 32-bit per-lane source (scalars and constants broadcast).
    pub fn v32(&self, o: Operand, lane: usize, ty: Ty) -> Result<u32, String> {
        self.v32k(o, 0, lane, ty)
    }
    /// Dword `k` of a vector operand (`v[r+k]`).
    pub fn v32k(&self, o: Operand, k: usize, lane: usize, ty: Ty) -> Result<u32, String> {
        match o {
            Operand::Vgpr(r) => {
                let i = self.vreg(0, r, k)?;
                self.check_read(i)?;
                Ok(self.wave.vgpr[i * self.wave.lanes + lane])
            }
            Operand::Agpr(r) => {
                let i = self.vreg(AGPR0, r, k)?;
                self.check_read(i)?;
                self.wave
                    .agpr
                    .get((i - AGPR0) * self.wave.lanes + lane)
                    .copied()
                    .ok_or_else(|| "AccVGPR on an architecture without them".into())
            }
            Operand::Sgpr(n) if k > 0 => self.s32(Operand::Sgpr(n + k as u8), ty),
            o => self.s32(o, ty),
        }
    }
    /// A 64-bit per-lane source.
    pub fn v64(&self, o: Operand, lane: usize, ty: Ty) -> Result<u64, String> {
        match o {
            Operand::Vgpr(_) | Operand::Agpr(_) => {
                Ok(self.v32k(o, 0, lane, ty)? as u64 | (self.v32k(o, 1, lane, ty)? as u64) << 32)
            }
            o => self.s64(o, ty),
        }
    }
    /// Writes dword `k` of a vector destination in one lane.
    pub fn set_v32k(&mut self, o: Operand, k: usize, lane: usize, v: u32) -> Result<(), String> {
        self.set_v32k_masked(o, k, lane, v, u32::MAX)
    }
    /// Writes the bits `mask` of dword `k` of a vector destination in one lane.
    pub fn set_v32k_masked(
        &mut self,
        o: Operand,
        k: usize,
        lane: usize,
        v: u32,
        mask: u32,
    ) -> Result<(), String> {
        match o {
            Operand::Vgpr(r) => {
                let i = self.vreg(0, r, k)?;
                self.put(i, lane, v, mask)
            }
            Operand::Agpr(r) => {
                let i = self.vreg(AGPR0, r, k)?;
                self.put(i, lane, v, mask)
            }
            o => Err(format!("cannot write vector operand {o}")),
        }
    }
    /// Writes a vector destination in one lane.
    pub fn set_v32(&mut self, o: Operand, lane: usize, v: u32) -> Result<(), String> {
        self.set_v32k(o, 0, lane, v)
    }
    /// Writes a 64-bit vector destination in one lane.
    pub fn set_v64(&mut self, o: Operand, lane: usize, v: u64) -> Result<(), String> {
        self.set_v32k(o, 0, lane, v as u32)?;
        self.set_v32k(o, 1, lane, (v >> 32) as u32)
    }
    /// Active lanes (EXEC), as indices.
    pub fn active(&self) -> impl Iterator<Item = usize> + use<> {
        let m = self.wave.exec();
        (0..64).filter(move |l| m >> l & 1 != 0)
    }
}
