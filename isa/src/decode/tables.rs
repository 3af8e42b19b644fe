//! Shared helpers for the opcode tables.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

/// An opcode table: `(opcode, mnemonic)`.
pub(crate) type Table = &'static [(u16, &'static str)];

/// Finds an opcode in a table.
pub(crate) fn find(t: Table, op: u32) -> Option<&'static str> {
    t.iter().find(|(o, _)| *o as u32 == op).map(|(_, n)| *n)
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
