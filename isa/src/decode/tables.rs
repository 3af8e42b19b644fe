//! Shared helpers for the opcode tables.

use crate::arch::Arch;
use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

/// An opcode table: `(opcode, mnemonic)`.
pub(crate) type Table = &'static [(u16, &'static str)];

/// Finds an opcode in a table.
pub(crate) fn find(t: Table, op: u32) -> Option<&'static str> {
    t.iter().find(|(o, _)| *o as u32 == op).map(|(_, n)| *n)
}

/// One encoding's opcodes per architecture. An entry GFX9 and GFX11 share (same
/// opcode, same mnemonic) stands once, in `both`; `gfx9` holds what gfx90a and gfx942
/// share, `gfx90a`/`gfx942` what only one of them has.
pub(crate) struct Tables {
    pub both: Table,
    pub gfx9: Table,
    pub gfx90a: Table,
    pub gfx942: Table,
    /// gfx950's own, on top of gfx942's.
    pub gfx950: Table,
    pub gfx11: Table,
    /// GFX12 (gfx1200/gfx1201): its own and renamed opcodes, looked up before `gfx11`,
    /// whose entries GFX12 keeps unless listed in `gfx11_only`.
    pub gfx12: Table,
    /// GFX11 opcodes that GFX12 removed (decoding them on GFX12 is an error).
    pub gfx11_only: &'static [u16],
}

impl Tables {
    /// No opcodes.
    pub const NONE: Tables = Tables {
        both: &[],
        gfx9: &[],
        gfx90a: &[],
        gfx942: &[],
        gfx950: &[],
        gfx11: &[],
        gfx12: &[],
        gfx11_only: &[],
    };

    /// The mnemonic of `op` on `arch`.
    pub fn find(&self, arch: Arch, op: u32) -> Option<&'static str> {
        let own: [Table; 3] = match arch {
            Arch::Gfx90a => [self.gfx90a, self.gfx9, &[]],
            Arch::Gfx942 => [self.gfx942, self.gfx9, &[]],
            Arch::Gfx950 => [self.gfx950, self.gfx942, self.gfx9],
            Arch::Gfx1100 => [self.gfx11, &[], &[]],
            Arch::Gfx1200 | Arch::Gfx1201 => {
                if let Some(n) = find(self.gfx12, op) {
                    return Some(n);
                }
                if self.gfx11_only.iter().any(|&o| o as u32 == op) {
                    return None;
                }
                [self.gfx11, &[], &[]]
            }
        };
        own.into_iter().chain([self.both]).find_map(|t| find(t, op))
    }
}

/// Interns a generated mnemonic (FLAT segment prefixes, compare names).
pub(crate) fn intern(s: String) -> &'static str {
    static SET: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut set = SET.get_or_init(Default::default).lock().unwrap();
    if let Some(&v) = set.get(s.as_str()) {
        return v;
    }
    let v: &'static str = Box::leak(s.into_boxed_str());
    set.insert(v);
    v
}
