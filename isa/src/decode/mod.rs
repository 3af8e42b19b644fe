//! Instruction decoder: machine words -> [`Inst`], per encoding family, for the GFX9
//! (gfx90a, gfx942) and GFX11 (gfx1100) encodings.
//!
//! Field positions and opcode numbers are those of AMD's ISA reference guides (CDNA2,
//! CDNA3, RDNA3 "Microcode Formats" and opcode tables). One file per encoding family;
//! each keeps its own opcode tables. The decoder never consults a disassembler: the
//! `decoder_agrees_with_llvm_objdump` test only cross-checks it.

mod ds;
mod flat;
mod gfx12;
mod mubuf;
mod operand;
mod smem;
mod sop;
mod tables;
mod vop1;
mod vop2;
mod vop3;
mod vop3p;
mod vopc;
mod vopd;

pub use operand::Operand;

use crate::arch::{Arch, Family};
use std::fmt;

/// Encoding family of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Enc {
    /// Scalar, one source.
    Sop1,
    /// Scalar, two sources.
    Sop2,
    /// Scalar with a 16-bit immediate.
    Sopk,
    /// Scalar compare.
    Sopc,
    /// Scalar program control.
    Sopp,
    /// Scalar memory.
    Smem,
    /// Vector ALU, one source (32-bit form).
    Vop1,
    /// Vector ALU, two sources (32-bit form).
    Vop2,
    /// Vector compare (32-bit form, result in VCC / EXEC).
    Vopc,
    /// Vector ALU, 64-bit form (VOP3A / VOP3B).
    Vop3,
    /// Packed / matrix vector ALU (VOP3P, VOP3P-MAI on CDNA, WMMA on RDNA3).
    Vop3p,
    /// RDNA3 dual-issue (two VALU ops in one word pair).
    Vopd,
    /// LDS / GDS.
    Ds,
    /// FLAT, GLOBAL and SCRATCH (`seg` tells which).
    Flat,
    /// Untyped buffer (only the cache-control forms are used by our kernels).
    Mubuf,
}

/// How a VALU instruction was encoded, which decides the assembler suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// No suffix.
    Plain,
    /// 32-bit form of an op that also has a 64-bit form (`_e32`).
    E32,
    /// 64-bit form of an op that also has a 32-bit form (`_e64`).
    E64,
    /// Sub-dword addressing (`_sdwa`, GFX9).
    Sdwa,
}

/// SDWA fields (GFX9).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sdwa {
    /// dst_sel: 0..3 BYTE_0..3, 4 WORD_0, 5 WORD_1, 6 DWORD.
    pub dst_sel: u8,
    /// dst_unused: 0 pad with zeros, 1 sign-extend, 2 preserve.
    pub dst_unused: u8,
    /// src0_sel (as dst_sel).
    pub src0_sel: u8,
    /// src0 sign-extend.
    pub src0_sext: bool,
    /// src0 neg / abs.
    pub src0_neg: bool,
    /// src0 abs.
    pub src0_abs: bool,
    /// src1_sel.
    pub src1_sel: u8,
    /// src1 sign-extend.
    pub src1_sext: bool,
    /// src1 neg.
    pub src1_neg: bool,
    /// src1 abs.
    pub src1_abs: bool,
}

/// Modifier and control fields; which ones mean something depends on the encoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mods {
    /// VOP3 abs bits (src0..2).
    pub abs: u8,
    /// VOP3/VOP3P neg bits (src0..2); on MFMA the `blgp` field sits here.
    pub neg: u8,
    /// VOP3P neg_hi bits; on MFMA the `cbsz` field sits here.
    pub neg_hi: u8,
    /// op_sel bits (VOP3 4 bits incl. dst; VOP3P 3 bits); on MFMA `abid` here.
    pub opsel: u8,
    /// VOP3P op_sel_hi bits (src0..2).
    pub opsel_hi: u8,
    /// Clamp bit (on gfx90a/gfx942 MFMA: `acc_cd`, C/D in AccVGPRs).
    pub clamp: bool,
    /// Output modifier (VOP3).
    pub omod: u8,
    /// Memory cache bits: GFX9 glc/sc0, GFX11 glc.
    pub glc: bool,
    /// GFX9 slc/nt, GFX11 slc.
    pub slc: bool,
    /// gfx942 sc1 / GFX11 dlc.
    pub dlc: bool,
    /// FLAT segment: 0 flat, 1 scratch, 2 global.
    pub seg: u8,
    /// GFX12 temporal hint `th` (VFLAT/VGLOBAL bits 54:52, SMEM 24:23 of word 0).
    pub th: u8,
    /// GFX12 scope: 0 CU, 1 SE, 2 DEV, 3 SYS.
    pub scope: u8,
    /// DS: GDS instead of LDS.
    pub gds: bool,
    /// Data operand in AccVGPRs (gfx90a/gfx942 DS/FLAT/MUBUF `acc`; MFMA A/B: bit per source).
    pub acc: u8,
    /// SDWA fields when [`Variant::Sdwa`].
    pub sdwa: Option<Sdwa>,
}

/// The Y half of an RDNA3 VOPD pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VopdY {
    /// OPY opcode.
    pub op: u16,
    /// Mnemonic (`v_dual_*`).
    pub name: &'static str,
    /// Destination VGPR.
    pub dst: Operand,
    /// Sources (src0, vsrc1, and for fmac the destination as the addend).
    pub src: [Operand; 3],
}

/// One decoded instruction.
///
/// Operand slots by encoding: ALU: `dst`, `sdst` (VOP3B carry-out or a compare's
/// SGPR destination in VOP3), `src[0..3]`. SMEM: `dst` = sdata, `src[0]` = sbase
/// (first SGPR of the pair), `src[1]` = soffset, `imm` = offset. DS: `dst` = vdst,
/// `src` = [addr, data0, data1], `imm` = offset0 | offset1 << 8. FLAT: `dst` = vdst,
/// `src` = [addr, data, -], `saddr`, `imm` = offset. SOPP/SOPK: `imm` = simm16
/// (sign-extended). MUBUF: `src` = [vaddr, vdata, srsrc], `saddr` = soffset.
#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    /// Byte address in the code object.
    pub addr: u64,
    /// Length in bytes (4, 8, 12 or 16 with a literal).
    pub len: u8,
    /// Encoding family.
    pub enc: Enc,
    /// Opcode inside the encoding's opcode space (VOP3: the VOP3 opcode).
    pub op: u16,
    /// Mnemonic without the encoding suffix, as in the ISA guide (lower case).
    pub name: &'static str,
    /// Suffix class.
    pub variant: Variant,
    /// Destination.
    pub dst: Operand,
    /// Second (scalar) destination.
    pub sdst: Operand,
    /// Sources.
    pub src: [Operand; 3],
    /// FLAT/GLOBAL scalar address or MUBUF soffset.
    pub saddr: Operand,
    /// Immediate / offset.
    pub imm: i64,
    /// Modifiers.
    pub mods: Mods,
    /// VOPD second half.
    pub vopd_y: Option<VopdY>,
}

impl Inst {
    pub(crate) fn new(addr: u64, enc: Enc, op: u16, name: &'static str) -> Inst {
        Inst {
            addr,
            len: 4,
            enc,
            op,
            name,
            variant: Variant::Plain,
            dst: Operand::None,
            sdst: Operand::None,
            src: [Operand::None; 3],
            saddr: Operand::None,
            imm: 0,
            mods: Mods::default(),
            vopd_y: None,
        }
    }

    /// The assembler mnemonic as LLVM prints it (suffix included; VOPD: X half).
    pub fn mnemonic(&self) -> String {
        match self.variant {
            Variant::Plain => self.name.to_string(),
            Variant::E32 => format!("{}_e32", self.name),
            Variant::E64 => format!("{}_e64", self.name),
            Variant::Sdwa => format!("{}_sdwa", self.name),
        }
    }

    /// Address of the next instruction.
    pub fn next(&self) -> u64 {
        self.addr + self.len as u64
    }

    /// Branch target of a SOPP branch (`simm16` words after the next instruction).
    pub fn branch_target(&self) -> u64 {
        (self.next() as i64 + self.imm * 4) as u64
    }
}

impl fmt::Display for Inst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.mnemonic())?;
        let mut sep = " ";
        for o in [&self.dst, &self.sdst]
            .into_iter()
            .chain(self.src.iter())
            .chain([&self.saddr])
        {
            if *o != Operand::None {
                write!(f, "{sep}{o}")?;
                sep = ", ";
            }
        }
        if self.imm != 0 {
            write!(f, "{sep}imm:{}", self.imm)?;
        }
        if let Some(y) = &self.vopd_y {
            write!(f, " :: {} {}, {}, {}", y.name, y.dst, y.src[0], y.src[1])?;
        }
        Ok(())
    }
}

/// A word the decoder cannot place.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{arch}: cannot decode {what} at 0x{addr:x} (words {words:08x?})")]
pub struct DecodeError {
    /// Architecture.
    pub arch: Arch,
    /// Address.
    pub addr: u64,
    /// The first words.
    pub words: Vec<u32>,
    /// What went wrong (unknown encoding, unknown opcode of an encoding...).
    pub what: String,
}

/// Reader over a kernel's words.
pub(crate) struct Words<'a> {
    pub arch: Arch,
    pub bytes: &'a [u8],
    pub pos: usize,
    pub base: u64,
}

impl Words<'_> {
    /// The word at `pos + 4 * i`.
    pub fn word(&self, i: usize) -> Result<u32, DecodeError> {
        let o = self.pos + 4 * i;
        match self.bytes.get(o..o + 4) {
            Some(b) => Ok(u32::from_le_bytes(b.try_into().unwrap())),
            None => Err(self.err("a truncated instruction")),
        }
    }
    pub fn addr(&self) -> u64 {
        self.base + self.pos as u64
    }
    pub fn err(&self, what: &str) -> DecodeError {
        let words = (0..2)
            .filter_map(|i| self.bytes.get(self.pos + 4 * i..self.pos + 4 * i + 4))
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        DecodeError {
            arch: self.arch,
            addr: self.addr(),
            words,
            what: what.to_string(),
        }
    }
    pub fn unknown(&self, enc: &str, op: u32) -> DecodeError {
        self.err(&format!("unknown {enc} opcode {op} (0x{op:x})"))
    }
    /// A new instruction of opcode `op` named `name`, or the error naming `what`'s
    /// unknown opcode.
    pub fn inst(
        &self,
        enc: Enc,
        what: &str,
        op: u32,
        name: Option<&'static str>,
    ) -> Result<Inst, DecodeError> {
        let name = name.ok_or_else(|| self.unknown(what, op))?;
        Ok(Inst::new(self.addr(), enc, op as u16, name))
    }
}

/// Decodes the instruction at byte offset `pos` of `bytes` (loaded at address `base`).
pub fn decode_at(arch: Arch, bytes: &[u8], base: u64, pos: usize) -> Result<Inst, DecodeError> {
    let w = Words {
        arch,
        bytes,
        pos,
        base,
    };
    let mut inst = decode_word(&w, w.word(0)?)?;
    // A literal constant follows the instruction's own words when a source says so.
    operand::take_literal(&w, &mut inst)?;
    Ok(inst)
}

fn decode_word(w: &Words, w0: u32) -> Result<Inst, DecodeError> {
    // VOP1/VOPC/VOP2 and the scalar ALU encodings sit alike in both families.
    if w0 >> 31 == 0 {
        return match w0 >> 25 {
            0x3f => vop1::decode(w, w0),
            0x3e => vopc::decode(w, w0),
            _ => vop2::decode(w, w0),
        };
    }
    if w0 >> 30 == 0b10 {
        return match w0 >> 23 {
            0x17d => sop::sop1(w, w0),
            0x17e => sop::sopc(w, w0),
            0x17f => sop::sopp(w, w0),
            _ if w0 >> 28 == 0b1011 => sop::sopk(w, w0),
            _ => sop::sop2(w, w0),
        };
    }
    match (w.arch.family(), w0 >> 26) {
        (Family::Gfx12, 0b111101) => gfx12::smem(w, w0),
        (Family::Gfx12, 0b111011) => gfx12::vflat(w, w0),
        (Family::Gfx12, 0b110001) => Err(w.err("a GFX12 VBUFFER instruction (not decoded)")),
        (Family::Gfx12, 0b111000 | 0b110111) => Err(w.err("an unknown GFX12 encoding")),
        (Family::Gfx9, 0b110000) | (Family::Gfx11, 0b111101) => smem::decode(w, w0),
        (Family::Gfx9, 0b110100) if w0 >> 23 == 0x1a7 => vop3p::decode(w, w0),
        (Family::Gfx9, 0b110100) | (Family::Gfx11 | Family::Gfx12, 0b110101) => vop3::decode(w, w0),
        (Family::Gfx11 | Family::Gfx12, 0b110011) => vop3p::decode(w, w0),
        (Family::Gfx11 | Family::Gfx12, 0b110010) => vopd::decode(w, w0),
        (_, 0b110110) => ds::decode(w, w0),
        (_, 0b110111) => flat::decode(w, w0),
        (_, 0b111000) => mubuf::decode(w, w0),
        (Family::Gfx9, _) => Err(w.err("an unknown GFX9 encoding")),
        (Family::Gfx11, _) => Err(w.err("an unknown GFX11 encoding")),
        (Family::Gfx12, _) => Err(w.err("an unknown GFX12 encoding")),
    }
}

/// Decodes a whole kernel body. `s_code_end` padding after the last instruction is
/// decoded like any other word.
pub fn decode_all(arch: Arch, code: &[u8], base: u64) -> Result<Vec<Inst>, DecodeError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 4 <= code.len() {
        let i = decode_at(arch, code, base, pos)?;
        pos += i.len as usize;
        out.push(i);
    }
    Ok(out)
}
