//! Operands: the 9-bit source field (SGPRs, special registers, inline constants,
//! literal, VGPRs) and register fields of the other encodings.

use super::{DecodeError, Enc, Inst, Words};
use crate::arch::Family;
use std::fmt;

/// A decoded operand. Register operands name the first register; how many
/// consecutive registers an instruction reads or writes is the executor's business.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// Absent.
    None,
    /// Scalar register file entry by its operand code 0..=127 (SGPRs, VCC at 106,
    /// TTMPs, M0 (GFX9 124, GFX11 125), GFX11 NULL at 124, EXEC at 126).
    Sgpr(u8),
    /// Vector register.
    Vgpr(u16),
    /// Accumulation register (CDNA).
    Agpr(u16),
    /// Inline constant by operand code (128..=208 integers, 240..=248 floats); its
    /// value depends on the operand's type, see [`Operand::inline_int`].
    Inline(u8),
    /// 32-bit literal constant (code 255, value in the next word).
    Literal(u32),
    /// Another special source code (SCC 253, VCCZ 251, EXECZ 252, apertures 235..=239,
    /// SDWA 249, DPP 250, GFX11 DPP8 233/234).
    Special(u16),
}

impl Operand {
    /// Decodes a 9-bit source field.
    pub fn src9(v: u32) -> Operand {
        match v {
            0..=127 => Operand::Sgpr(v as u8),
            128..=208 | 240..=248 => Operand::Inline(v as u8),
            255 => Operand::Literal(0),
            256..=511 => Operand::Vgpr((v - 256) as u16),
            _ => Operand::Special(v as u16),
        }
    }
    /// Decodes an 8-bit scalar source field (SOP*: same codes as the low 8 bits).
    pub fn ssrc8(v: u32) -> Operand {
        Self::src9(v & 0xff)
    }
    /// Decodes a 7-bit scalar destination field.
    pub fn sdst7(v: u32) -> Operand {
        Operand::Sgpr((v & 0x7f) as u8)
    }
    /// A memory instruction's data register: an AccVGPR when the `acc` bit is set.
    pub(crate) fn data(acc: u8, r: u32) -> Operand {
        if acc != 0 {
            Operand::Agpr(r as u16)
        } else {
            Operand::Vgpr(r as u16)
        }
    }
    /// The three 9-bit sources of a VOP3/VOP3P second word (bits 8:0, 17:9, 26:18).
    pub(crate) fn src9x3(w1: u32) -> [Operand; 3] {
        [0, 9, 18].map(|sh| Operand::src9((w1 >> sh) & 0x1ff))
    }
    /// Integer value of an inline integer constant (codes 128..=208).
    pub fn inline_int(code: u8) -> Option<i64> {
        match code {
            128..=192 => Some(code as i64 - 128),
            193..=208 => Some(192 - code as i64),
            _ => None,
        }
    }
    /// Value of an inline float constant (codes 240..=248) as f64.
    pub fn inline_float(code: u8) -> Option<f64> {
        Some(match code {
            240 => 0.5,
            241 => -0.5,
            242 => 1.0,
            243 => -1.0,
            244 => 2.0,
            245 => -2.0,
            246 => 4.0,
            247 => -4.0,
            248 => 1.0 / (2.0 * std::f64::consts::PI),
            _ => return None,
        })
    }
    /// Whether this is a literal.
    pub fn is_literal(&self) -> bool {
        matches!(self, Operand::Literal(_))
    }
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Operand::None => f.write_str("-"),
            Operand::Sgpr(106) => f.write_str("vcc_lo"),
            Operand::Sgpr(107) => f.write_str("vcc_hi"),
            Operand::Sgpr(126) => f.write_str("exec_lo"),
            Operand::Sgpr(127) => f.write_str("exec_hi"),
            Operand::Sgpr(r) => write!(f, "s{r}"),
            Operand::Vgpr(r) => write!(f, "v{r}"),
            Operand::Agpr(r) => write!(f, "a{r}"),
            Operand::Inline(c) => match (Operand::inline_int(c), Operand::inline_float(c)) {
                (Some(i), _) => write!(f, "{i}"),
                (_, Some(x)) => write!(f, "{x}"),
                _ => write!(f, "inline{c}"),
            },
            Operand::Literal(v) => write!(f, "0x{v:x}"),
            Operand::Special(253) => f.write_str("scc"),
            Operand::Special(251) => f.write_str("vccz"),
            Operand::Special(252) => f.write_str("execz"),
            Operand::Special(c) => write!(f, "special{c}"),
        }
    }
}

/// Reads the literal word for any source (or VOPD half) coded 255, and the constant
/// `K` of the madmk/madak/fmamk/fmaak forms, and sets the instruction length.
pub(crate) fn take_literal(w: &Words, inst: &mut Inst) -> Result<(), DecodeError> {
    let own = inst.len as usize / 4;
    let mut needs = inst.src.iter().any(Operand::is_literal)
        || inst
            .vopd_y
            .as_ref()
            .is_some_and(|y| y.src.iter().any(Operand::is_literal));
    let k_form = matches!(
        inst.name,
        "v_madmk_f32"
            | "v_madak_f32"
            | "v_fmamk_f32"
            | "v_fmaak_f32"
            | "v_madmk_f16"
            | "v_madak_f16"
            | "v_fmamk_f16"
            | "v_fmaak_f16"
    ) || inst
        .vopd_y
        .as_ref()
        .is_some_and(|y| matches!(y.name, "v_dual_fmamk_f32" | "v_dual_fmaak_f32"))
        || matches!(inst.name, "v_dual_fmamk_f32" | "v_dual_fmaak_f32")
        || inst.name == "s_setreg_imm32_b32";
    if inst.enc == Enc::Vop3 && w.arch.family() == Family::Gfx9 && needs {
        return Err(w.err("a literal in a GFX9 VOP3 instruction"));
    }
    needs |= k_form;
    if !needs {
        return Ok(());
    }
    let lit = w.word(own)?;
    for s in inst.src.iter_mut() {
        if s.is_literal() {
            *s = Operand::Literal(lit);
        }
    }
    if let Some(y) = inst.vopd_y.as_mut() {
        for s in y.src.iter_mut() {
            if s.is_literal() {
                *s = Operand::Literal(lit);
            }
        }
    }
    if k_form {
        // K is carried as the instruction's immediate.
        inst.imm = lit as i64;
    }
    inst.len += 4;
    Ok(())
}
