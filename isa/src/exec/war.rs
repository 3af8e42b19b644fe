//! Write-after-read races in global memory (issue #42): a plain store over bytes
//! another wave read, with nothing ordering that read before the store.
//!
//! The order is the cache model's ([`super::cache`]): inside a workgroup an
//! `s_barrier` after the read was issued; between workgroups a release/acquire
//! (the reader's workgroup made a returning atomic after the read, and the storing
//! workgroup's returning atomic at that address saw it). Without it the store may
//! land before the read is performed on hardware (the reader's load is still in
//! flight, or its workgroup runs later), so the reader sees the new value.
//!
//! Per byte, per reading workgroup, the model keeps the latest plain read and the
//! latest read by a different wave of that workgroup: the latest read a store must
//! follow is always one of them (orders only grow with time), whatever wave stores.
//! An ordered store clears the byte's reads: later stores are ordered after it (by
//! the write-after-write check) and so after them. Atomics neither record reads (a
//! CAS loop's plain read is checked by its CAS) nor are checked as stores (atomics
//! may overlap). A wave's own reads never race with its stores.

use std::collections::HashMap;

/// One executed read instruction of one wave.
#[derive(Clone, Copy, Debug)]
pub struct Read {
    /// Launch-wide wave id.
    pub wave: u32,
    /// The model's time at issue.
    pub time: u64,
    /// Instruction address and mnemonic, for reports.
    pub pc: u64,
    pub name: &'static str,
}

/// The reads of one byte by one workgroup: the latest (`last`) and the latest by a
/// wave other than `last`'s (`other`); indices + 1 into [`Reads::recs`], 0 none.
#[derive(Clone, Copy, Debug)]
struct Slot {
    wg: u32,
    last: u32,
    other: u32,
}

/// A read the store is not ordered after.
pub struct Race {
    /// Byte of the store's access.
    pub byte: usize,
    pub read: Read,
    /// The reading wave's workgroup.
    pub wg: u32,
}

/// The reads of one launch.
#[derive(Clone, Debug, Default)]
pub struct Reads {
    recs: Vec<Read>,
    cur: Option<u32>,
    /// Per buffer (base address): per byte an index + 1 into `sets`, 0 none.
    bytes: HashMap<u64, Vec<u32>>,
    sets: Vec<Vec<Slot>>,
}

impl Reads {
    /// A new instruction begins.
    pub fn begin(&mut self) {
        self.cur = None;
    }

    /// Records a plain read of `off .. off + n` of the buffer at `base` (`size`
    /// bytes) by wave `r.wave` of workgroup `wg`.
    pub fn record(&mut self, r: Read, wg: u32, (base, size, off, n): (u64, usize, usize, usize)) {
        let idx = *self.cur.get_or_insert_with(|| {
            self.recs.push(r);
            self.recs.len() as u32
        });
        let per = self.bytes.entry(base).or_insert_with(|| vec![0; size]);
        for b in &mut per[off..off + n] {
            if *b == 0 {
                self.sets.push(Vec::new());
                *b = self.sets.len() as u32;
            }
            let set = &mut self.sets[*b as usize - 1];
            match set.iter_mut().find(|s| s.wg == wg) {
                Some(s) => {
                    if s.last != idx && self.recs[s.last as usize - 1].wave != r.wave {
                        s.other = s.last;
                    }
                    s.last = idx;
                }
                None => set.push(Slot {
                    wg,
                    last: idx,
                    other: 0,
                }),
            }
        }
    }

    /// Checks a plain store of `off .. off + n` of the buffer at `base` by wave
    /// `wave`: every read of those bytes by another wave must be
    /// `ordered(reader workgroup, read time)` before it. Clears the bytes' reads.
    pub fn store(
        &mut self,
        wave: u32,
        (base, off, n): (u64, usize, usize),
        ordered: impl Fn(u32, u64) -> bool,
    ) -> Result<(), Race> {
        let Some(per) = self.bytes.get_mut(&base) else {
            return Ok(());
        };
        for (k, b) in per[off..off + n].iter_mut().enumerate() {
            let Some(set) = b.checked_sub(1).map(|i| &self.sets[i as usize]) else {
                continue;
            };
            for s in set {
                let last = self.recs[s.last as usize - 1];
                let read = if last.wave != wave {
                    last
                } else if s.other != 0 {
                    self.recs[s.other as usize - 1]
                } else {
                    continue;
                };
                if !ordered(s.wg, read.time) {
                    return Err(Race {
                        byte: k,
                        read,
                        wg: s.wg,
                    });
                }
            }
            // Ordered after every read: the set is done with (its slot stays allocated).
            self.sets[*b as usize - 1].clear();
        }
        Ok(())
    }
}
