//! Wait states (issue #42): the data hazards CDNA2 (gfx90a) and CDNA3 (gfx942) do
//! not interlock, which the program must cover with enough independent instructions
//! or `s_nop` between a write and the dependent access.
//!
//! Each wave keeps a wait-state clock: every issued instruction counts 1, `s_nop N`
//! counts N+1 (LLVM's `SIInstrInfo::getNumWaitStates`; the ISA guides: S_NOP
//! "SIMM16[3:0] = 0..15 inserts 1..16 wait states"). Per register it remembers the
//! last write by each writer class ([`Writer`]: a VALU instruction, an MFMA with its
//! pass count, XDL or not), the last MFMA that read it as SrcC and the last VMEM
//! store that read it as more-than-64-bit data. Before the next instruction issues,
//! every register it reads or writes is looked up in [`RULES`]; the wait states
//! elapsed since the writer (instructions in between, `s_nop`s counted by their
//! states) must reach the rule's count, else the launch stops with an error naming
//! the register, the writer (address and mnemonic), required and actual wait states
//! and the rule. The path is the one the wave executed, so a branch counts as one
//! instruction and the writer may be in another basic block (LLVM takes the worst
//! predecessor, the hardware sees the executed path, as here).
//!
//! Sources: AMD "AMD Instinct MI200 (CDNA2) ISA Reference Guide" and "AMD Instinct
//! MI300 (CDNA3) ISA Reference Guide", section 4.5 "Manually Inserted Wait States
//! (NOPs)" (the tables of required wait states by MFMA pass count, XDL vs SMFMA vs
//! DGEMM), and LLVM `llvm/lib/Target/AMDGPU/GCNHazardRecognizer.cpp`
//! (`checkMAIHazards90A`, `checkMAIVALUHazards`, `checkVALUHazards`,
//! `checkVMEMHazards`, `checkRWLaneHazards`; the GFX940 helpers `GFX940_XDL_N_Pass*`,
//! `GFX940_SMFMA_N_Pass*`), with MFMA pass counts from `SISchedule.td`
//! (`SIDPFullSpeedModel` for gfx90a, `SIDPGFX940FullSpeedModel` for gfx942) and
//! XDL from `VOP3PInstructions.td` (`is_gfx940_xdl`: the f16/bf16/i8 MFMAs, not the
//! f32 ones). The table below is this crate's own transcription: one row per rule.
//!
//! Rows no shipped kernel hits, checked with hand-encoded sequences: DGEMM,
//! `s_setreg`/`s_getreg` (in [`RULES`]), DOT results and M0 before its implicit
//! readers ([`RULES_DOT_M0`]). Not modelled (no shipped kernel executes the writer
//! or the reader): DPP (the decoder rejects it), `v_div_fmas` after a VCC write, the
//! gfx90a VALU-DGEMM-VMEM bug workaround. GFX11 (gfx1100) has no wait-state table: the
//! RDNA3 hardware interlocks VALU dependencies (LLVM: `hasNoDataDepHazard`, which
//! skips all the counted checks), and `s_delay_alu` is a scheduling hint for
//! performance: LLVM's `AMDGPUInsertDelayAlu.cpp` inserts it "to avoid stalls on
//! GFX11+", Mesa's ACO (`aco_insert_delay_alu.cpp`) notes that without it "things
//! will still be correct" (the wave stalls instead of yielding the SIMD). The RDNA3
//! guide's own S_DELAY_ALU text could not be read here (PDF only). Hazards are off
//! on gfx1100. Its real hazards
//! (LLVM's `fixVALUTransUseHazard`, `fixVALUPartialForwardingHazard`,
//! `fixVALUMaskWriteHazard`, LDS-direct) are resolved with `s_waitcnt_depctr`
//! rather than counted states and are not modelled.

use super::Ctx;
use super::late::{AGPR0, NREGS, SGPR0, reg_name};
use crate::arch::Arch;
use crate::decode::{Enc, Inst, Operand};
use std::cell::Cell;

const WORDS: usize = NREGS.div_ceil(64);
const EXEC_LO: usize = SGPR0 + 126;
const EXEC_HI: usize = SGPR0 + 127;
const VCC_LO: usize = SGPR0 + 106;

/// An MFMA as the tables see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mfma {
    /// Passes (4 cycles each): 2, 4, 8 or 16.
    pub passes: u8,
    /// XDL (gfx90a: every non-DGEMM MFMA; gfx942: `is_gfx940_xdl`).
    pub xdl: bool,
    /// Double-precision (`v_mfma_f64_*`).
    pub dgemm: bool,
    /// First register of D (scoreboard index) and its width in registers.
    pub dst: (u16, u16),
}

/// Who touched a register before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writer {
    /// A VALU instruction other than MFMA (includes `v_accvgpr_read/write`,
    /// `v_readfirstlane`, compares): transcendental, writes a 16-bit half
    /// (SDWA `dst_sel` other than DWORD, or VOP3 `op_sel` destination bit), DOT.
    Valu { trans: bool, half: bool, dot: bool },
    /// An MFMA writing D.
    Mfma(Mfma),
    /// An MFMA reading the register as SrcC (write-after-read).
    SrcC(Mfma),
    /// A VMEM/FLAT store reading the register as data of more than 64 bits.
    WideStore,
    /// `s_setreg_b32`/`s_setreg_imm32_b32` of a hardware register (its id).
    SetReg(u8),
    /// A scalar ALU instruction writing M0.
    SaluM0,
}

/// Writer classes of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum W {
    /// Any VALU (not MFMA).
    Valu,
    /// A VALU that is not a DOT.
    ValuNotDot,
    /// A transcendental VALU.
    Trans,
    /// A VALU writing a 16-bit half of its destination.
    Half,
    /// An XDL MFMA (non-DGEMM) writing D.
    MfmaXdl,
    /// A non-XDL, non-DGEMM MFMA (gfx942 "SMFMA") writing D.
    MfmaSmfma,
    /// Any MFMA writing D.
    MfmaAny,
    /// An XDL MFMA reading SrcC.
    SrcCXdl,
    /// A store of more than 64 bits of data.
    WideStore,
    /// A DGEMM (`v_mfma_f64_*`) writing D; passes 4 (4x4x4) or 8 (16x16x4).
    Dgemm,
    /// An `s_setreg` of a hardware register.
    SetReg,
    /// A DOT VALU (`v_dot*`) writing a VGPR.
    Dot,
    /// A scalar ALU instruction writing M0.
    SaluM0,
}

/// Reader (or later writer) classes of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum R {
    /// An MFMA reading it as SrcA/SrcB.
    MfmaSrcAB,
    /// An MFMA reading it as SrcC, the same registers as the writer's D.
    MfmaSrcCSame,
    /// An XDL MFMA reading it as SrcC overlapping the writer's D otherwise.
    MfmaSrcCOverlapXdl,
    /// A non-XDL MFMA reading it as SrcC overlapping the writer's D otherwise.
    MfmaSrcCOverlapSmfma,
    /// An MFMA reading it (any operand).
    MfmaAny,
    /// An MFMA (EXEC, read implicitly).
    MfmaExec,
    /// A VALU (not MFMA) reading a VGPR/AccVGPR.
    ValuVgpr,
    /// A non-transcendental VALU reading a register.
    ValuNotTrans,
    /// A VALU reading an SGPR (explicitly or VCC implicitly).
    ValuSgpr,
    /// A VMEM/FLAT/DS instruction reading a VGPR/AccVGPR (address or data).
    MemVgpr,
    /// A VMEM/FLAT instruction reading an SGPR.
    VmemSgpr,
    /// A VALU or VMEM/FLAT/DS instruction writing a VGPR/AccVGPR.
    ValuMemWrite,
    /// A VALU writing a VGPR/AccVGPR.
    ValuWrite,
    /// `v_readlane`/`v_readfirstlane` reading src0.
    ReadlaneSrc0,
    /// `v_readlane`/`v_readfirstlane`/`v_writelane` (EXEC).
    RwLaneExec,
    /// `v_readlane`/`v_writelane` lane select SGPR.
    RwLaneSelect,
    /// A DGEMM reading it as SrcC overlapping the writer's D (not the same range).
    DgemmSrcCOverlap,
    /// A 4x4x4 DGEMM reading as SrcC exactly the D of the writer.
    Dgemm4x4SrcCSame,
    /// `v_fma_f64`/`v_fmac_f64` (after any DGEMM, whatever the registers).
    Fma64,
    /// `s_getreg` of the hardware register an `s_setreg` wrote.
    GetReg,
    /// `s_setreg` of the hardware register an `s_setreg` wrote.
    SetRegAgain,
    /// The DOT opcode that wrote the VGPR, reading it as SrcA/SrcB.
    DotSameSrcAB,
    /// Any other VALU or VMEM/FLAT/DS instruction reading it (the same DOT opcode
    /// reading it as SrcC needs none).
    DotOtherRead,
    /// An instruction reading M0 implicitly on GFX9: `s_sendmsg`, `s_ttracedata`,
    /// GDS, `ds_*_addtid_b32`, `s_movrel*`, LDS DMA.
    ReadM0,
}

/// Required wait states on one architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// The rule does not apply.
    No,
    /// A fixed count.
    N(u32),
    /// By the writer's passes: 2, 4, 8, 16.
    Passes([u32; 4]),
}

/// One row: writer class, reader class, wait states on gfx90a and gfx942, source.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// Short name (in errors and the mutation report).
    pub id: &'static str,
    /// Writer.
    pub writer: W,
    /// Reader.
    pub reader: R,
    /// gfx90a.
    pub gfx90a: Need,
    /// gfx942.
    pub gfx942: Need,
    /// Where the numbers come from.
    pub source: &'static str,
}

use Need::{N, No, Passes};

/// The modelled rules. gfx90a MFMAs have 2 (4x4), 8 (16x16) or 16 (32x32) passes
/// (its "4 passes" entries are never used); gfx942 XDL counts are passes + k.
pub const RULES: &[Rule] = &[
    // MI200/MI300 ISA 4.5, "VALU write VGPR/EXEC then MFMA"; LLVM checkMAIHazards90A.
    Rule {
        id: "valu-exec-mfma",
        writer: W::Valu,
        reader: R::MfmaExec,
        gfx90a: N(4),
        gfx942: N(4),
        source: "CDNA2/CDNA3 ISA 4.5; LLVM checkMAIHazards90A VALUWritesExecWaitStates",
    },
    Rule {
        id: "valu-vgpr-mfma",
        writer: W::ValuNotDot,
        reader: R::MfmaAny,
        gfx90a: N(2),
        gfx942: N(2),
        source: "CDNA2/CDNA3 ISA 4.5; LLVM checkMAIHazards90A LegacyVALUNotDotWritesVGPRWaitStates",
    },
    // MFMA D read as the next MFMA's SrcC.
    Rule {
        id: "mfma-srcc-same",
        writer: W::MfmaAny,
        reader: R::MfmaSrcCSame,
        gfx90a: N(0),
        gfx942: Passes([2, 0, 0, 0]),
        source: "CDNA3 ISA 4.5 (2-pass XDL/SMFMA, same SrcC); LLVM GFX940_SMFMA4x4WritesVGPRFullSrcCWaitStates",
    },
    Rule {
        id: "mfma-srcc-overlap",
        writer: W::MfmaXdl,
        reader: R::MfmaSrcCOverlapXdl,
        gfx90a: Passes([2, 4, 8, 16]),
        gfx942: Passes([3, 5, 9, 17]),
        source: "CDNA2/CDNA3 ISA 4.5; LLVM SMFMA*WritesVGPROverlappedSMFMASrcCWaitStates, GFX940_XDL_N_PassWritesVGPROverlappedSMFMASrcCWaitStates",
    },
    Rule {
        id: "mfma-srcc-overlap",
        writer: W::MfmaXdl,
        reader: R::MfmaSrcCOverlapSmfma,
        gfx90a: Passes([2, 4, 8, 16]),
        gfx942: Passes([3, 5, 9, 17]),
        source: "CDNA2/CDNA3 ISA 4.5; LLVM SMFMA*WritesVGPROverlappedSMFMASrcCWaitStates, GFX940_XDL_N_PassWritesVGPROverlappedSMFMASrcCWaitStates",
    },
    Rule {
        id: "smfma-srcc-overlap",
        writer: W::MfmaSmfma,
        reader: R::MfmaSrcCOverlapSmfma,
        gfx90a: No,
        gfx942: Passes([2, 4, 8, 16]),
        source: "CDNA3 ISA 4.5; LLVM GFX940_SMFMA_N_PassWritesVGPROverlappedSMFMASrcCWaitStates (an XDL reader of an SMFMA result needs none)",
    },
    // MFMA D read as SrcA/B.
    Rule {
        id: "mfma-srcab",
        writer: W::MfmaXdl,
        reader: R::MfmaSrcAB,
        gfx90a: Passes([5, 7, 11, 19]),
        gfx942: Passes([5, 7, 11, 19]),
        source: "CDNA2/CDNA3 ISA 4.5; LLVM SMFMA*WritesVGPROverlappedSrcABWaitStates, GFX940_XDL_N_PassWritesVGPROverlappedSrcABWaitStates",
    },
    Rule {
        id: "smfma-srcab",
        writer: W::MfmaSmfma,
        reader: R::MfmaSrcAB,
        gfx90a: No,
        gfx942: Passes([4, 6, 10, 18]),
        source: "CDNA3 ISA 4.5; LLVM GFX940_SMFMA_N_PassWritesVGPROverlappedSrcABWaitStates",
    },
    // MFMA D read by VALU (v_accvgpr_read included) or by VMEM/FLAT/DS.
    Rule {
        id: "mfma-valu-read",
        writer: W::MfmaXdl,
        reader: R::ValuVgpr,
        gfx90a: Passes([5, 7, 11, 19]),
        gfx942: Passes([5, 7, 11, 19]),
        source: "CDNA2/CDNA3 ISA 4.5; LLVM checkMAIVALUHazards SMFMA*WriteVgprVALUMemExpReadWaitStates, GFX940_XDL_N_PassWriteVgprVALUMemExpReadWaitStates",
    },
    Rule {
        id: "smfma-valu-read",
        writer: W::MfmaSmfma,
        reader: R::ValuVgpr,
        gfx90a: No,
        gfx942: Passes([4, 6, 10, 18]),
        source: "CDNA3 ISA 4.5; LLVM GFX940_SMFMA_N_PassWriteVgprVALUMemExpReadWaitStates",
    },
    Rule {
        id: "mfma-mem-read",
        writer: W::MfmaXdl,
        reader: R::MemVgpr,
        gfx90a: Passes([5, 7, 11, 19]),
        gfx942: Passes([5, 7, 11, 19]),
        source: "CDNA2/CDNA3 ISA 4.5; LLVM checkMAIVALUHazards (IsMemOrExport)",
    },
    Rule {
        id: "smfma-mem-read",
        writer: W::MfmaSmfma,
        reader: R::MemVgpr,
        gfx90a: No,
        gfx942: Passes([4, 6, 10, 18]),
        source: "CDNA3 ISA 4.5; LLVM checkMAIVALUHazards (IsMemOrExport)",
    },
    // MFMA D overwritten by VALU/VMEM (write-after-write).
    Rule {
        id: "mfma-waw",
        writer: W::MfmaXdl,
        reader: R::ValuMemWrite,
        gfx90a: Passes([5, 7, 11, 19]),
        gfx942: Passes([5, 7, 11, 19]),
        source: "CDNA2/CDNA3 ISA 4.5; LLVM SMFMA*WriteVgprVALUWawWaitStates, GFX940_XDL_N_PassWriteVgprVALUWawWaitStates",
    },
    Rule {
        id: "smfma-waw",
        writer: W::MfmaSmfma,
        reader: R::ValuMemWrite,
        gfx90a: No,
        gfx942: Passes([4, 6, 10, 18]),
        source: "CDNA3 ISA 4.5; LLVM GFX940_SMFMA_N_PassWriteVgprVALUWawWaitStates",
    },
    // MFMA SrcC overwritten by VALU/VMEM (write-after-read).
    Rule {
        id: "srcc-war",
        writer: W::SrcCXdl,
        reader: R::ValuMemWrite,
        gfx90a: Passes([1, 3, 7, 15]),
        gfx942: Passes([1, 3, 7, 15]),
        source: "CDNA2/CDNA3 ISA 4.5; LLVM SMFMA*ReadVgprVALUWarWaitStates, GFX940_XDL4PassReadVgprVALUWarWaitStates",
    },
    // VALU forwarding hazards of gfx940+ (checkVALUHazards).
    Rule {
        id: "trans-use",
        writer: W::Trans,
        reader: R::ValuNotTrans,
        gfx90a: No,
        gfx942: N(1),
        source: "CDNA3 ISA 4.5 (trans result read by a non-trans VALU); LLVM checkVALUHazards hasTransForwardingHazard",
    },
    Rule {
        id: "half-dst-use",
        writer: W::Half,
        reader: R::ValuNotTrans,
        gfx90a: No,
        gfx942: N(1),
        source: "CDNA3 ISA 4.5 (SDWA dst_sel / op_sel destination forwarding); LLVM checkVALUHazards hasDstSelForwardingHazard",
    },
    Rule {
        id: "valu-sgpr-valu",
        writer: W::Valu,
        reader: R::ValuSgpr,
        gfx90a: No,
        gfx942: N(2),
        source: "CDNA3 ISA 4.5; LLVM checkVALUHazards hasVDecCoExecHazard VALUWriteSGPRVALUReadWaitstates",
    },
    Rule {
        id: "valu-vgpr-readlane",
        writer: W::Valu,
        reader: R::ReadlaneSrc0,
        gfx90a: No,
        gfx942: N(1),
        source: "CDNA3 ISA 4.5; LLVM checkVALUHazards VALUWriteVGPRReadlaneRead",
    },
    Rule {
        id: "valu-exec-rwlane",
        writer: W::Valu,
        reader: R::RwLaneExec,
        gfx90a: No,
        gfx942: N(4),
        source: "CDNA3 ISA 4.5; LLVM checkVALUHazards VALUWriteEXECRWLane",
    },
    // Older GFX9 rules that still hold on both.
    Rule {
        id: "valu-sgpr-rwlane",
        writer: W::Valu,
        reader: R::RwLaneSelect,
        gfx90a: N(4),
        gfx942: N(4),
        source: "CDNA2/CDNA3 ISA 4.5 (VALU writes SGPR, v_readlane/v_writelane lane select); LLVM checkRWLaneHazards",
    },
    Rule {
        id: "valu-sgpr-vmem",
        writer: W::Valu,
        reader: R::VmemSgpr,
        gfx90a: N(5),
        gfx942: N(5),
        source: "CDNA2/CDNA3 ISA 4.5 (VALU writes SGPR, VMEM reads it); LLVM checkVMEMHazards",
    },
    Rule {
        id: "wide-store-data",
        writer: W::WideStore,
        reader: R::ValuWrite,
        gfx90a: N(1),
        gfx942: N(2),
        source: "CDNA2/CDNA3 ISA 4.5 (VMEM store of more than 64 bits, then VALU writes its data); LLVM checkVALUHazardsHelper",
    },
    // DGEMM (v_mfma_f64_4x4x4f64: 4 passes, v_mfma_f64_16x16x4f64: 8 passes, SISchedule.td
    // Write4PassDGEMM / Write8PassDGEMM); by passes 2/4/8/16, so the 4x4 count is the
    // second entry and the 16x16 count the third (LLVM treats 8 and 16 alike).
    Rule {
        id: "dgemm-srcc-overlap",
        writer: W::Dgemm,
        reader: R::MfmaSrcCOverlapSmfma,
        gfx90a: Passes([0, 4, 9, 9]),
        gfx942: Passes([0, 4, 9, 9]),
        source: "CDNA2/CDNA3 ISA 4.5 (DGEMM write, overlapped SrcC read by a non-XDL MFMA; an XDL reader needs none); LLVM checkMAIHazards90A DMFMA4x4/DMFMA16x16WritesVGPROverlappedSrcCWaitStates",
    },
    Rule {
        id: "dgemm-srcc-same",
        writer: W::Dgemm,
        reader: R::Dgemm4x4SrcCSame,
        gfx90a: Passes([0, 4, 0, 0]),
        gfx942: Passes([0, 4, 0, 0]),
        source: "CDNA2/CDNA3 ISA 4.5 (4x4x4 DGEMM then 4x4x4 DGEMM with the same SrcC); LLVM checkMAIHazards90A DMFMA4x4WritesVGPRFullSrcCWaitStates",
    },
    Rule {
        id: "mfma-srcc-overlap-dgemm",
        writer: W::MfmaXdl,
        reader: R::DgemmSrcCOverlap,
        gfx90a: Passes([3, 0, 9, 17]),
        gfx942: No,
        source: "CDNA2 ISA 4.5 (XDL write, overlapped SrcC read by a DGEMM; gfx942 uses the XDL row above); LLVM checkMAIHazards90A SMFMA*WritesVGPROverlappedDMFMASrcCWaitStates",
    },
    Rule {
        id: "dgemm-srcab",
        writer: W::Dgemm,
        reader: R::MfmaSrcAB,
        gfx90a: Passes([0, 6, 11, 11]),
        gfx942: Passes([0, 6, 11, 11]),
        source: "CDNA2/CDNA3 ISA 4.5; LLVM checkMAIHazards90A DMFMA4x4/DMFMA16x16WritesVGPROverlappedMFMASrcABWaitStates",
    },
    Rule {
        id: "dgemm-valu-read",
        writer: W::Dgemm,
        reader: R::ValuVgpr,
        gfx90a: Passes([0, 6, 11, 11]),
        gfx942: Passes([0, 6, 11, 11]),
        source: "CDNA2/CDNA3 ISA 4.5; LLVM checkMAIVALUHazards DMFMA4x4/DMFMA16x16WriteVgprVALUReadWaitStates",
    },
    Rule {
        id: "dgemm-mem-read",
        writer: W::Dgemm,
        reader: R::MemVgpr,
        gfx90a: Passes([0, 9, 18, 18]),
        gfx942: Passes([0, 9, 18, 18]),
        source: "CDNA2/CDNA3 ISA 4.5; LLVM checkMAIVALUHazards DMFMA4x4/DMFMA16x16WriteVgprMemExpReadWaitStates",
    },
    Rule {
        id: "dgemm-waw",
        writer: W::Dgemm,
        reader: R::ValuMemWrite,
        gfx90a: Passes([0, 6, 11, 11]),
        gfx942: Passes([0, 6, 11, 11]),
        source: "CDNA2/CDNA3 ISA 4.5; LLVM checkMAIVALUHazards DMFMA4x4/DMFMA16x16WriteVgprVALUWriteWaitStates",
    },
    Rule {
        id: "dgemm-fma64",
        writer: W::Dgemm,
        reader: R::Fma64,
        gfx90a: N(2),
        gfx942: N(2),
        source: "CDNA2/CDNA3 ISA 4.5 (DGEMM then v_fma_f64/v_fmac_f64, any registers); LLVM checkMAIVALUHazards DMFMAToFMA64WaitStates",
    },
    // s_setreg (hardware registers; LLVM checkSetRegHazards with getSetRegWaitStates() = 2
    // after Sea Islands, checkGetRegHazards GetRegWaitStates = 2).
    Rule {
        id: "setreg-getreg",
        writer: W::SetReg,
        reader: R::GetReg,
        gfx90a: N(2),
        gfx942: N(2),
        source: "CDNA2/CDNA3 ISA 4.5 (S_SETREG then S_GETREG of the same register); LLVM checkGetRegHazards",
    },
    Rule {
        id: "setreg-setreg",
        writer: W::SetReg,
        reader: R::SetRegAgain,
        gfx90a: N(2),
        gfx942: N(2),
        source: "CDNA2/CDNA3 ISA 4.5 (S_SETREG then S_SETREG of the same register); LLVM checkSetRegHazards",
    },
];

/// Rows no instruction pair of the shipped objects hits (checked with hand-encoded
/// sequences, `tests/hazard_rows.rs`): DOT results and M0 before its implicit readers.
pub const RULES_DOT_M0: &[Rule] = &[
    // LLVM checkMAIVALUHazards (hasGFX90AInsts: gfx90a and gfx940+), DOT writes a VGPR.
    Rule {
        id: "dot-same-srcab",
        writer: W::Dot,
        reader: R::DotSameSrcAB,
        gfx90a: N(3),
        gfx942: N(3),
        source: "LLVM checkMAIVALUHazards DotWriteSameDotReadSrcAB",
    },
    Rule {
        id: "dot-other-read",
        writer: W::Dot,
        reader: R::DotOtherRead,
        gfx90a: N(3),
        gfx942: N(3),
        source: "LLVM checkMAIVALUHazards DotWriteDifferentVALURead (VALU and VMEM/FLAT/DS readers)",
    },
    // GFX9: SALU writes M0, then an instruction reading it implicitly.
    Rule {
        id: "salu-m0-read",
        writer: W::SaluM0,
        reader: R::ReadM0,
        gfx90a: N(1),
        gfx942: N(1),
        source: "CDNA2/CDNA3 ISA 4.5 (S_MOV to M0 then GDS, S_SENDMSG, LDS add-TID, LDS DMA, S_MOVREL); LLVM checkReadM0Hazards (hasReadM0SendMsgHazard, hasReadM0LdsDmaHazard, hasReadM0MovRelInterpHazard: GFX9)",
    },
];

impl Rule {
    fn need(&self, arch: Arch, passes: u8) -> u32 {
        let n = match arch {
            Arch::Gfx90a => self.gfx90a,
            // gfx950 on gfx942's column: a floor. LLVM's GCNHazardRecognizer adds
            // a state to some XDL rows on gfx950 (`hasGFX950Insts`) that this
            // table does not carry yet, so a gfx950 shortfall by one may pass.
            Arch::Gfx942 | Arch::Gfx950 => self.gfx942,
            _ => No,
        };
        match n {
            No => 0,
            N(k) => k,
            Passes(t) => {
                t[match passes {
                    0..=2 => 0,
                    3..=4 => 1,
                    5..=8 => 2,
                    _ => 3,
                }]
            }
        }
    }
}

impl W {
    /// Whether a record of class `w` belongs to this writer class, and its passes.
    fn matches(self, w: Writer) -> Option<u8> {
        match (self, w) {
            (W::Valu, Writer::Valu { .. }) => Some(0),
            (W::ValuNotDot, Writer::Valu { dot: false, .. }) => Some(0),
            (W::Trans, Writer::Valu { trans: true, .. }) => Some(0),
            (W::Half, Writer::Valu { half: true, .. }) => Some(0),
            (W::MfmaXdl, Writer::Mfma(m)) if m.xdl && !m.dgemm => Some(m.passes),
            (W::MfmaSmfma, Writer::Mfma(m)) if !m.xdl && !m.dgemm => Some(m.passes),
            (W::MfmaAny, Writer::Mfma(m)) => Some(m.passes),
            (W::SrcCXdl, Writer::SrcC(m)) if m.xdl && !m.dgemm => Some(m.passes),
            (W::WideStore, Writer::WideStore) => Some(0),
            (W::Dgemm, Writer::Mfma(m)) if m.dgemm => Some(m.passes),
            (W::SetReg, Writer::SetReg(_)) => Some(0),
            (W::Dot, Writer::Valu { dot: true, .. }) => Some(0),
            (W::SaluM0, Writer::SaluM0) => Some(0),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Rec {
    /// The wave's wait-state clock after the writer issued.
    at: u64,
    pc: u64,
    name: &'static str,
    w: Writer,
}

/// A wave's hazard state.
#[derive(Clone, Debug, Default)]
pub struct Hazard {
    /// Wait states checked.
    pub on: bool,
    /// Wait-state clock.
    clock: u64,
    reads: [Cell<u64>; WORDS],
    writes: [Cell<u64>; WORDS],
    valu: Vec<Option<Rec>>,
    mfma: Vec<Option<Rec>>,
    srcc: Vec<Option<Rec>>,
    store: Vec<Option<Rec>>,
    /// The last DGEMM (for `dgemm-fma64`).
    dgemm: Option<Rec>,
    /// The last `s_setreg` per hardware register id.
    setreg: Vec<Option<Rec>>,
    /// The last SALU write of M0.
    m0: Option<Rec>,
    /// gfx1100's hazards ([`Gfx11`]).
    gfx11: Gfx11,
    /// Recent `s_nop`s: (clock before, wait states, address).
    nops: Vec<(u64, u64, u64)>,
}

impl Hazard {
    /// Notes a read of scoreboard register `r` by the running instruction.
    #[inline]
    pub fn note_read(&self, r: usize) {
        if self.on {
            let c = &self.reads[r / 64];
            c.set(c.get() | 1 << (r % 64));
        }
    }
    /// Notes a write of scoreboard register `r` by the running instruction.
    #[inline]
    pub fn note_write(&self, r: usize) {
        if self.on {
            let c = &self.writes[r / 64];
            c.set(c.get() | 1 << (r % 64));
        }
    }
    /// Clears the access log before an instruction.
    pub fn begin(&mut self) {
        for c in self.reads.iter().chain(&self.writes) {
            c.set(0);
        }
        if self.valu.is_empty() {
            for v in [
                &mut self.valu,
                &mut self.mfma,
                &mut self.srcc,
                &mut self.store,
            ] {
                *v = vec![None; NREGS];
            }
            self.setreg = vec![None; 64];
        }
    }
}

fn bits(words: &[Cell<u64>; WORDS]) -> impl Iterator<Item = usize> + '_ {
    words.iter().enumerate().flat_map(|(k, c)| {
        let mut w = c.get();
        std::iter::from_fn(move || {
            (w != 0).then(|| {
                let b = w.trailing_zeros() as usize;
                w &= w - 1;
                k * 64 + b
            })
        })
    })
}

/// The unit an instruction issues to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Valu,
    Mfma,
    Vmem,
    Lds,
    Other,
}

fn unit(i: &Inst) -> Unit {
    match i.enc {
        Enc::Vop3p if i.name.starts_with("v_mfma") => Unit::Mfma,
        Enc::Vop1 | Enc::Vop2 | Enc::Vopc | Enc::Vop3 | Enc::Vop3p | Enc::Vopd => Unit::Valu,
        Enc::Flat | Enc::Mubuf => Unit::Vmem,
        Enc::Ds => Unit::Lds,
        _ => Unit::Other,
    }
}

/// Pass count, XDL and DGEMM of an MFMA (see the module sources).
pub fn mfma_kind(arch: Arch, name: &str) -> (u8, bool, bool) {
    let dgemm = name.contains("f64");
    let shape = name
        .split('_')
        .find(|p| p.contains('x') && p.as_bytes()[0].is_ascii_digit());
    let shape = shape.unwrap_or("");
    let mut dims = shape.split('x');
    let m: u32 = dims.next().and_then(|d| d.parse().ok()).unwrap_or(32);
    let k: String = dims
        .nth(1)
        .unwrap_or("")
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    let k: u32 = k.parse().unwrap_or(0);
    let f32_in = name.ends_with("f32") && !name.contains("xf32");
    if dgemm {
        // SISchedule.td: Write4PassDGEMM (4x4x4), Write8PassDGEMM (16x16x4).
        return (if m == 4 { 4 } else { 8 }, false, true);
    }
    match arch {
        // gfx950's double-k f16/bf16 MFMAs (16x16x32, 32x32x16) fall in the
        // m = 16 -> 4 / m = 32 -> 8 pass rows below, as gfx942's 16x16x16 and
        // 32x32x8: CDNA4 doubles k at the same rate. (Inferred, not from a
        // table: LLVM's gfx950 code puts 12 states between a 32x32x16 XDL
        // write and a DS read of it, enough for 8 passes (11), not 16 (19).)
        Arch::Gfx942 | Arch::Gfx950 => {
            let passes = match m {
                4 => 2,
                16 if !name.contains("xf32") && matches!(k, 1 | 4) => 8,
                16 => 4,
                32 if !name.contains("xf32") && matches!(k, 1 | 2 | 4) => 16,
                _ => 8,
            };
            (passes, !dgemm && !f32_in, dgemm)
        }
        _ => {
            let passes = match m {
                4 => 2,
                16 => 8,
                _ => 16,
            };
            (passes, !dgemm, dgemm)
        }
    }
}

fn range(o: Operand, n: usize) -> Option<(usize, usize)> {
    match o {
        Operand::Vgpr(r) => Some((r as usize, n)),
        Operand::Agpr(r) => Some((AGPR0 + r as usize, n)),
        _ => None,
    }
}

/// Registers of an MFMA's D (and C) and of A/B.
fn mfma_widths(name: &str) -> (usize, usize) {
    let d = if name.contains("f64_16x16") {
        8
    } else if name.contains("f64_4x4") {
        2
    } else if name.contains("32x32") {
        16
    } else {
        4
    };
    // f32 inputs: one register; f16/bf16 (4 values) and f64: two; gfx950's
    // double-k f16/bf16 (8 values): four.
    let ab = if name.ends_with("f32") && !name.contains("xf32") {
        1
    } else if name.contains("16x16x32_") || name.contains("32x32x16_") {
        4
    } else {
        2
    };
    (d, ab)
}

fn is_trans(name: &str) -> bool {
    [
        "v_exp_", "v_log_", "v_rcp_", "v_rsq_", "v_sqrt_", "v_sin_", "v_cos_",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

fn writes_half(i: &Inst) -> bool {
    match i.mods.sdwa {
        Some(s) => s.dst_sel != 6,
        None => i.enc == Enc::Vop3 && i.mods.opsel & 8 != 0,
    }
}

/// Data registers of a store wider than 64 bits (FLAT/GLOBAL: `src[1]`).
fn wide_store_data(i: &Inst) -> Option<(usize, usize)> {
    if i.enc != Enc::Flat || !i.name.contains("store") {
        return None;
    }
    let n = if i.name.ends_with("dwordx4") || i.name.ends_with("b128") {
        4
    } else if i.name.ends_with("dwordx3") || i.name.ends_with("b96") {
        3
    } else {
        return None;
    };
    range(i.src[1], n)
}

fn describe(w: Writer) -> String {
    match w {
        Writer::Valu { trans, half, dot } => format!(
            "VALU{}{}{}",
            if trans { ", transcendental" } else { "" },
            if half {
                ", 16-bit destination half"
            } else {
                ""
            },
            if dot { ", DOT" } else { "" }
        ),
        Writer::Mfma(m) | Writer::SrcC(m) => format!(
            "MFMA, {} passes, {}",
            m.passes,
            if m.dgemm {
                "DGEMM"
            } else if m.xdl {
                "XDL"
            } else {
                "SMFMA"
            }
        ),
        Writer::WideStore => "VMEM store of more than 64 bits of data".into(),
        Writer::SetReg(id) => format!("s_setreg of hardware register {id}"),
        Writer::SaluM0 => "SALU write of M0".into(),
    }
}

/// A transcendental result on gfx1100: the VALU and TRANS counts after it and the
/// expiry epoch it was written in.
#[derive(Clone, Copy, Debug)]
struct TransRec {
    valus: u64,
    trans: u64,
    epoch: u64,
    pc: u64,
    name: &'static str,
}

/// GFX11 (gfx1100) hazards that LLVM resolves with `s_waitcnt_depctr` or `v_nop`
/// rather than counted wait states (`GCNHazardRecognizer.cpp`):
///
/// - `gfx11-trans-use` (`fixVALUTransUseHazard`): a VALU reads a VGPR a
///   transcendental VALU wrote with at most 5 VALUs and at most 1 transcendental in
///   between, and no VMEM/FLAT/DS instruction or `s_waitcnt_depctr` with
///   `va_vdst = 0` (LLVM inserts `s_waitcnt_depctr 0x0fff`) since the writer.
/// - `gfx11-wmma` (`fixWMMAHazards`): a WMMA reads as A or B registers overlapping
///   the D of the previous WMMA with no VALU between them (LLVM inserts `v_nop`).
///
/// Not modelled: `fixVALUPartialForwardingHazard` (EXEC changed by SALU between two
/// VALU writes and a read), `fixVALUMaskWriteHazard` (GFX11.5), LDS-direct.
#[derive(Clone, Debug, Default)]
struct Gfx11 {
    valus: u64,
    trans: u64,
    epoch: u64,
    trans_w: std::collections::HashMap<usize, TransRec>,
    /// The last WMMA: D (first scoreboard register, count), VALU count after it.
    wmma: Option<(usize, usize, u64, u64, &'static str)>,
}

/// gfx1100's rules for the instruction `i` that just ran.
fn after_gfx11(c: &mut Ctx, i: &Inst) -> Result<(), String> {
    let u = unit(i);
    let h = &mut c.wave.hazard;
    let g = &mut h.gfx11;
    let wmma = i.name.starts_with("v_wmma");
    if u == Unit::Valu {
        for r in bits(&h.reads).filter(|&r| r < SGPR0) {
            if let Some(w) = g.trans_w.get(&r)
                && w.epoch == g.epoch
            {
                let (nv, nt) = (g.valus - w.valus, g.trans - w.trans);
                if nv <= 5 && nt <= 1 {
                    return Err(format!(
                        "wait-state hazard (rule `gfx11-trans-use`): reads {} {nv} VALU{} ({nt} transcendental) after `{}` at 0x{:x} (transcendental) wrote it, with no `s_waitcnt_depctr va_vdst(0)`, VMEM, FLAT or DS between; more than 5 VALUs or 1 transcendental, or one of those, required (LLVM GCNHazardRecognizer fixVALUTransUseHazard)",
                        reg_name(r),
                        if nv == 1 { "" } else { "s" },
                        w.name,
                        w.pc
                    ));
                }
            }
        }
        if wmma && let Some((b, n, valus, pc, name)) = g.wmma {
            for o in [i.src[0], i.src[1]] {
                if let Some((ob, on)) = range(o, 8)
                    && ob < b + n
                    && b < ob + on
                    && g.valus == valus
                {
                    return Err(format!(
                        "wait-state hazard (rule `gfx11-wmma`): reads {} as matrix A/B right after `{name}` at 0x{pc:x} wrote it as D, with no VALU between; a `v_nop` required (LLVM GCNHazardRecognizer fixWMMAHazards)",
                        reg_name(ob.max(b))
                    ));
                }
            }
        }
        g.valus += 1;
        let trans = is_trans(i.name);
        if trans {
            g.trans += 1;
            let rec = TransRec {
                valus: g.valus,
                trans: g.trans,
                epoch: g.epoch,
                pc: i.addr,
                name: i.name,
            };
            for r in bits(&h.writes).filter(|&r| r < SGPR0) {
                g.trans_w.insert(r, rec);
            }
        }
        if wmma && let Some((b, n)) = range(i.dst, 8) {
            g.wmma = Some((b, n, g.valus, i.addr, i.name));
        }
    }
    let depctr_va_vdst_0 = i.name == "s_waitcnt_depctr" && (i.imm as u16 >> 12) & 0xf == 0;
    if matches!(u, Unit::Vmem | Unit::Lds) || depctr_va_vdst_0 {
        g.epoch += 1;
        g.trans_w.clear();
    }
    Ok(())
}

/// Checks the instruction `i` that just ran (its reads and writes logged) against the
/// records, then records its own writes and advances the clock.
pub fn after(c: &mut Ctx, i: &Inst) -> Result<(), String> {
    let arch = c.arch;
    if arch == Arch::Gfx1100 {
        return after_gfx11(c, i);
    }
    let u = unit(i);
    let h = &c.wave.hazard;
    let now = h.clock;
    // (register, reader class)
    let mut acc: Vec<(usize, R)> = Vec::new();
    let mut mfma_rec: Option<Mfma> = None;
    let mut srcc: Option<(usize, usize)> = None;
    match u {
        Unit::Mfma => {
            let (passes, xdl, dgemm) = mfma_kind(arch, i.name);
            let (dw, abw) = mfma_widths(i.name);
            for o in [i.src[0], i.src[1]] {
                if let Some((b, n)) = range(o, abw) {
                    for r in b..b + n {
                        acc.push((r, R::MfmaSrcAB));
                        acc.push((r, R::MfmaAny));
                        acc.push((r, R::DotOtherRead));
                    }
                }
            }
            if let Some((b, n)) = range(i.src[2], dw) {
                srcc = Some((b, n));
                for r in b..b + n {
                    let same = h.mfma[r].is_some_and(|p| match p.w {
                        Writer::Mfma(m) => m.dst == (b as u16, n as u16),
                        _ => false,
                    });
                    acc.push((
                        r,
                        if same {
                            R::MfmaSrcCSame
                        } else if xdl {
                            R::MfmaSrcCOverlapXdl
                        } else {
                            R::MfmaSrcCOverlapSmfma
                        },
                    ));
                    if dgemm && !same {
                        acc.push((r, R::DgemmSrcCOverlap));
                    }
                    if dgemm && same && passes == 4 {
                        acc.push((r, R::Dgemm4x4SrcCSame));
                    }
                    acc.push((r, R::MfmaAny));
                    acc.push((r, R::DotOtherRead));
                }
            }
            acc.push((EXEC_LO, R::MfmaExec));
            acc.push((EXEC_HI, R::MfmaExec));
            let dst = range(i.dst, dw).map_or((0, 0), |(b, n)| (b as u16, n as u16));
            mfma_rec = Some(Mfma {
                passes,
                xdl,
                dgemm,
                dst,
            });
        }
        Unit::Valu => {
            let trans = is_trans(i.name);
            let rl = matches!(i.name, "v_readlane_b32" | "v_readfirstlane_b32");
            let rw = rl || i.name == "v_writelane_b32";
            let select = if matches!(i.name, "v_readlane_b32" | "v_writelane_b32") {
                match i.src[1] {
                    Operand::Sgpr(n) => Some(SGPR0 + n as usize),
                    _ => None,
                }
            } else {
                None
            };
            for r in bits(&h.reads) {
                if r < SGPR0 {
                    if let Some(d) = dot_reader(i, h.valu[r], r) {
                        acc.push((r, d));
                    }
                    acc.push((r, R::ValuVgpr));
                    if rl {
                        acc.push((r, R::ReadlaneSrc0));
                    }
                } else if r != EXEC_LO && r != EXEC_HI {
                    acc.push((r, R::ValuSgpr));
                }
                if !trans {
                    acc.push((r, R::ValuNotTrans));
                }
                if Some(r) == select {
                    acc.push((r, R::RwLaneSelect));
                }
            }
            if rw {
                acc.push((EXEC_LO, R::RwLaneExec));
                acc.push((EXEC_HI, R::RwLaneExec));
            }
            for r in bits(&h.writes).filter(|&r| r < SGPR0) {
                acc.push((r, R::ValuMemWrite));
                acc.push((r, R::ValuWrite));
            }
        }
        Unit::Vmem | Unit::Lds => {
            for r in bits(&h.reads) {
                if r < SGPR0 {
                    acc.push((r, R::DotOtherRead));
                    acc.push((r, R::MemVgpr));
                } else if u == Unit::Vmem {
                    acc.push((r, R::VmemSgpr));
                }
            }
            for r in bits(&h.writes).filter(|&r| r < SGPR0) {
                acc.push((r, R::ValuMemWrite));
            }
        }
        Unit::Other => {}
    }
    // Register-less dependencies: (record, reader class, what is read).
    let mut extra: Vec<(Rec, R, String)> = Vec::new();
    if matches!(
        i.name,
        "v_fma_f64" | "v_fmac_f64" | "v_fmac_f64_e32" | "v_fmac_f64_e64"
    ) && let Some(rec) = h.dgemm
    {
        extra.push((rec, R::Fma64, "the DGEMM pipeline".into()));
    }
    if reads_m0(i)
        && let Some(rec) = h.m0
    {
        extra.push((rec, R::ReadM0, "M0 (read implicitly)".into()));
    }
    if let Some(id) = hwreg_of(i) {
        let reader = if i.name == "s_getreg_b32" {
            R::GetReg
        } else {
            R::SetRegAgain
        };
        if let Some(rec) = h.setreg.get(id as usize).copied().flatten() {
            extra.push((rec, reader, format!("hardware register {id}")));
        }
    }

    // Check every access against every record of its register.
    let checks = acc
        .iter()
        .flat_map(|&(r, reader)| {
            [h.valu[r], h.mfma[r], h.srcc[r], h.store[r]]
                .into_iter()
                .flatten()
                .map(move |rec| (rec, reader, reg_name(r)))
        })
        .chain(extra);
    for (rec, reader, what) in checks {
        {
            for rule in RULES
                .iter()
                .chain(RULES_DOT_M0)
                .filter(|x| x.reader == reader)
            {
                let Some(passes) = rule.writer.matches(rec.w) else {
                    continue;
                };
                let need = rule.need(arch, passes) as u64;
                if need == 0 {
                    continue;
                }
                let have = now - rec.at;
                if have < need {
                    return Err(format!(
                        "wait-state hazard (rule `{}`): {} {} {} wait state{} after `{}` at 0x{:x} ({}) {} it; {} required ({})",
                        rule.id,
                        if matches!(reader, R::ValuMemWrite | R::ValuWrite | R::SetRegAgain) {
                            "writes"
                        } else {
                            "reads"
                        },
                        what,
                        have,
                        if have == 1 { "" } else { "s" },
                        rec.name,
                        rec.pc,
                        describe(rec.w),
                        match rec.w {
                            Writer::SrcC(_) => "read as SrcC",
                            Writer::WideStore => "read as store data",
                            Writer::SetReg(_) => "set",
                            _ => "wrote",
                        },
                        need,
                        rule.source
                    ));
                }
                // Covered: the closest reader per rule, and the dependencies that
                // s_nop states were part of the cover of.
                let slack = have - need;
                let m = c
                    .counters
                    .hazard_min_slack
                    .entry(rule.id)
                    .or_insert((u64::MAX, 0));
                if slack < m.0 {
                    *m = (slack, i.addr);
                }
                let between = || {
                    h.nops
                        .iter()
                        .filter(|&&(at, _, _)| at >= rec.at && at < now)
                };
                let nop_states: u64 = between().map(|&(_, n, _)| n).sum();
                if have - nop_states < need {
                    c.counters.hazard_deps += 1;
                    c.counters.hazard_wait_states += need;
                    for &(_, n, pc) in between() {
                        if n - 1 > slack {
                            c.counters.nops_needed.entry(pc).or_insert(rule.id);
                        }
                    }
                }
            }
        }
    }

    // Record this instruction's writes (and SrcC / wide store reads).
    let me = |w: Writer| Rec {
        at: 0,
        pc: i.addr,
        name: i.name,
        w,
    };
    let cost = if i.name == "s_nop" {
        (i.imm as u64 & 0xf) + 1
    } else {
        1
    };
    let at = now + cost;
    let h = &mut c.wave.hazard;
    match u {
        Unit::Mfma => {
            let m = mfma_rec.expect("an MFMA record");
            let rec = Rec {
                at,
                ..me(Writer::Mfma(m))
            };
            for r in m.dst.0 as usize..(m.dst.0 + m.dst.1) as usize {
                h.mfma[r] = Some(rec);
            }
            if let Some((b, n)) = srcc {
                let rec = Rec {
                    at,
                    ..me(Writer::SrcC(m))
                };
                for r in b..b + n {
                    h.srcc[r] = Some(rec);
                }
            }
            if m.dgemm {
                h.dgemm = Some(Rec {
                    at,
                    ..me(Writer::Mfma(m))
                });
            }
        }
        Unit::Valu => {
            let w = Writer::Valu {
                trans: is_trans(i.name),
                half: writes_half(i),
                dot: i.name.starts_with("v_dot"),
            };
            let rec = Rec { at, ..me(w) };
            let written: Vec<usize> = bits(&h.writes).collect();
            for r in written {
                h.valu[r] = Some(rec);
            }
            if i.name.starts_with("v_cmpx") {
                h.valu[EXEC_LO] = Some(rec);
                h.valu[EXEC_HI] = Some(rec);
            }
        }
        Unit::Vmem => {
            if let Some((b, n)) = wide_store_data(i) {
                let rec = Rec {
                    at,
                    ..me(Writer::WideStore)
                };
                for r in b..b + n {
                    h.store[r] = Some(rec);
                }
            }
        }
        _ => {
            let salu = matches!(i.enc, Enc::Sop1 | Enc::Sop2 | Enc::Sopk | Enc::Sopc);
            if salu && bits(&h.writes).any(|r| r == SGPR0 + 124) {
                h.m0 = Some(Rec {
                    at,
                    ..me(Writer::SaluM0)
                });
            }
            if let Some(id) = hwreg_of(i).filter(|_| i.name.starts_with("s_setreg")) {
                h.setreg[id as usize] = Some(Rec {
                    at,
                    ..me(Writer::SetReg(id))
                });
            }
        }
    }
    if i.name == "s_nop" {
        c.counters.nop_wait_states += cost;
        h.nops.push((now, cost, i.addr));
        if h.nops.len() > 64 {
            h.nops.drain(..32);
        }
    }
    h.clock = at;
    Ok(())
}

/// The DOT reader class of VALU `i` reading VGPR `r` last written by `w`: the same
/// DOT opcode reads it as SrcA/SrcB (SrcC: none), anything else reads a DOT result.
fn dot_reader(i: &Inst, w: Option<Rec>, r: usize) -> Option<R> {
    let same = w.is_some_and(|w| w.name == i.name);
    if !same {
        return Some(R::DotOtherRead);
    }
    let ab = [i.src[0], i.src[1]]
        .into_iter()
        .filter_map(|o| range(o, 1))
        .any(|(b, n)| (b..b + n).contains(&r));
    ab.then_some(R::DotSameSrcAB)
}

/// Whether `i` reads M0 implicitly on GFX9 (LLVM `isSendMsgTraceDataOrGDS`,
/// `isSMovRel`, the `ds_*_addtid_b32`, `isLdsDma`).
fn reads_m0(i: &Inst) -> bool {
    i.name.starts_with("s_sendmsg")
        || i.name.starts_with("s_ttracedata")
        || i.name.starts_with("s_movrel")
        || i.name.contains("_addtid_")
        || i.name.contains("_lds_")
        || (i.enc == Enc::Ds && i.mods.gds)
}

/// The hardware register id an `s_getreg`/`s_setreg` names (SIMM16 bits 5:0).
fn hwreg_of(i: &Inst) -> Option<u8> {
    matches!(
        i.name,
        "s_getreg_b32" | "s_setreg_b32" | "s_setreg_imm32_b32"
    )
    .then_some((i.imm & 0x3f) as u8)
}

/// VCC, the implicit mask source of the 32-bit / SDWA carry and select forms.
pub const VCC: usize = VCC_LO;
