//! The AMD targets whose code objects this crate runs.

use std::fmt;

/// An AMD GPU architecture with a shipped code object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    /// CDNA2 (MI200): GFX9 encodings, wave64, MFMA, AccVGPRs.
    Gfx90a,
    /// CDNA3 (MI300): GFX9 encodings with the gfx940 changes, wave64, MFMA, AccVGPRs.
    Gfx942,
    /// CDNA4 (MI350/MI355): gfx942's encodings and memory model, plus the
    /// double-k MFMAs and a few VALU ops (`v_bitop3_*`, `v_cvt_pk_f16_f32`).
    Gfx950,
    /// RDNA3 (RX 7900): GFX11 encodings, wave32 (our kernels), WMMA.
    Gfx1100,
    /// RDNA4 (RX 9060): GFX12 encodings (VFLAT/VGLOBAL, GFX12 SMEM, split wait
    /// counters), wave32, GFX12 WMMA.
    Gfx1200,
    /// RDNA4 (RX 9070): gfx1200's instruction set (identical `.text` in our bundle).
    Gfx1201,
}

/// Instruction-encoding family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// GFX9 / CDNA (gfx90a, gfx942, gfx950).
    Gfx9,
    /// GFX11 / RDNA3.
    Gfx11,
    /// GFX12 / RDNA4.
    Gfx12,
}

impl Family {
    /// RDNA (GFX11 or GFX12): the encodings and semantics GFX12 kept from GFX11
    /// (VOP1/2/3/3P/C, VOPD, DS, SOP layouts, NULL = s124, true16 VOP3 op_sel).
    pub fn rdna(self) -> bool {
        matches!(self, Family::Gfx11 | Family::Gfx12)
    }
}

impl Arch {
    /// All architectures, in the order the project lists them.
    pub const ALL: [Arch; 6] = [
        Arch::Gfx90a,
        Arch::Gfx942,
        Arch::Gfx950,
        Arch::Gfx1100,
        Arch::Gfx1200,
        Arch::Gfx1201,
    ];

    /// The LLVM processor name (`--mcpu`).
    pub fn name(self) -> &'static str {
        match self {
            Arch::Gfx90a => "gfx90a",
            Arch::Gfx942 => "gfx942",
            Arch::Gfx950 => "gfx950",
            Arch::Gfx1100 => "gfx1100",
            Arch::Gfx1200 => "gfx1200",
            Arch::Gfx1201 => "gfx1201",
        }
    }

    /// Parses an LLVM processor name (a target-id's features after `:` are ignored).
    pub fn from_name(s: &str) -> Option<Arch> {
        let base = s.split(':').next().unwrap_or(s);
        let base = base.rsplit('-').next().unwrap_or(base);
        Arch::ALL.into_iter().find(|a| a.name() == base)
    }

    /// Encoding family.
    pub fn family(self) -> Family {
        match self {
            Arch::Gfx90a | Arch::Gfx942 | Arch::Gfx950 => Family::Gfx9,
            Arch::Gfx1100 => Family::Gfx11,
            Arch::Gfx1200 | Arch::Gfx1201 => Family::Gfx12,
        }
    }

    /// gfx942 or gfx950: the gfx940 family's encodings, cache model and
    /// MFMA wait-state columns (gfx950 extends gfx942).
    pub fn gfx94(self) -> bool {
        matches!(self, Arch::Gfx942 | Arch::Gfx950)
    }

    /// gfx1200 or gfx1201.
    pub fn gfx12(self) -> bool {
        self.family() == Family::Gfx12
    }

    /// Whether the architecture has AccVGPRs and MFMA (CDNA).
    pub fn is_cdna(self) -> bool {
        self.family() == Family::Gfx9
    }

    /// The ELF `e_flags` machine value (EF_AMDGPU_MACH_*) of the architecture.
    pub fn elf_mach(self) -> u32 {
        match self {
            Arch::Gfx90a => 0x03f,
            Arch::Gfx942 => 0x04c,
            // EF_AMDGPU_MACH_AMDGCN_GFX950 (LLVM AMDGPUUsage, ELF header table).
            Arch::Gfx950 => 0x04f,
            Arch::Gfx1100 => 0x041,
            // EF_AMDGPU_MACH_AMDGCN_GFX1200 / GFX1201 (LLVM AMDGPUUsage, ELF header table).
            Arch::Gfx1200 => 0x048,
            Arch::Gfx1201 => 0x04e,
        }
    }

    /// From the ELF `e_flags` machine field (bits 7:0).
    pub fn from_elf_mach(m: u32) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.elf_mach() == m & 0xff)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
