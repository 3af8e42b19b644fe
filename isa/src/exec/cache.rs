//! The cache model (issue #42): what the memory model lets a non-coherent cache
//! return, and the order between workgroups that global memory needs.
//!
//! Not a timing model. Each architecture has non-coherent levels between a wave and
//! the coherent point (LLVM AMDGPUUsage, "Memory Model GFX90A / GFX942 / GFX10-GFX11"):
//!
//! | arch    | level 0                    | level 1                          |
//! |---------|----------------------------|----------------------------------|
//! | gfx90a  | vector L1 per CU (104)     | - (one L2, coherent)             |
//! | gfx942  | vector L1 per CU (8 x 38)  | L2 per XCD (8; workgroup id mod 8) |
//! | gfx1100 | L0 per CU (2 per WGP; in WGP mode waves alternate) | GL1 per shader array (4 WGPs) |
//!
//! Workgroups are placed in dispatch order (the seeded order): CU (or WGP) =
//! dispatch position modulo the count (gfx942: within the XCD), so large grids share
//! them. Every global store is a record (wave, its cache instances, issue and
//! completion time); every byte remembers its last record. A read of a byte another
//! wave stored is checked, level by level where the reader's cache instance is not
//! the writer's:
//!
//! - order: the reader's workgroup must have *acquired* the writer's workgroup: an
//!   atomic returning a value (GFX9 `sc0`/`glc`, GFX11 `glc`) at an address where the
//!   writer's workgroup made a returning atomic after the store completed (plain
//!   stores; atomics: after issue). Inside a workgroup a barrier orders.
//! - writer side: the store must have reached the level both share before that
//!   atomic. Stores write through L1/L0/GL1 (complete = in L2). On gfx942 a store
//!   without `sc1` stays dirty in its XCD's L2 until a `buffer_wbl2 sc1` on that XCD
//!   (by the writing wave after issuing it, or by any wave after it completed);
//!   atomics are performed at the coherent point.
//! - reader side: the load misses the level by its bits (gfx90a `glc`: L1; gfx942
//!   `sc1`: L1 and L2; gfx1100 `glc`: L0, `dlc`: GL1), or the reader's cache instance
//!   was invalidated after the acquire (gfx90a `buffer_wbinvl1(_vol)`; gfx942
//!   `buffer_inv sc0|sc1`: L1, `buffer_inv sc1`: L2; gfx1100 `buffer_gl0_inv`: L0,
//!   `buffer_gl1_inv`: GL1). Any wave's invalidation counts for its instance, for
//!   what that wave's workgroup had acquired.
//!
//! A failed check on bytes a plain store wrote is an error naming reader, writer,
//! store and reason; on bytes an atomic wrote, the read returns the value the byte
//! had when the launch began (a stale line's value; a CAS loop then retries), counted
//! in `stale_reads`, and a wrong result follows if the kernel depends on it. A plain
//! store over bytes another workgroup stored, without that order, is a race (error).

use super::war::{Read, Reads};
use crate::arch::Arch;
use std::collections::HashMap;

/// A non-coherent cache level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    L1,
    L2,
    L0,
    Gl1,
}

impl Level {
    fn of(arch: Arch) -> &'static [Level] {
        match arch {
            Arch::Gfx90a => &[Level::L1],
            Arch::Gfx942 | Arch::Gfx950 => &[Level::L1, Level::L2],
            Arch::Gfx1100 | Arch::Gfx1200 | Arch::Gfx1201 => &[Level::L0, Level::Gl1],
        }
    }
    fn name(self) -> &'static str {
        match self {
            Level::L1 => "vector L1 (per CU)",
            Level::L2 => "L2 (per XCD)",
            Level::L0 => "L0 (per CU of a WGP)",
            Level::Gl1 => "GL1 (per shader array)",
        }
    }
    /// What makes a load miss this level (bits, or an invalidate after the acquire).
    fn remedy(self, arch: Arch) -> &'static str {
        match (self, arch) {
            (Level::L1, Arch::Gfx90a) => "`buffer_wbinvl1_vol` after the acquire, or a `glc` load",
            (Level::L1 | Level::L2, _) => "`buffer_inv sc1` after the acquire, or an `sc1` load",
            (Level::L0, Arch::Gfx1200 | Arch::Gfx1201) => {
                "`global_inv scope:SCOPE_SE` (or wider) after the acquire, or a load of scope SE or wider"
            }
            (Level::Gl1, Arch::Gfx1200 | Arch::Gfx1201) => {
                "`global_inv scope:SCOPE_DEV` after the acquire, or a load of scope DEV or wider"
            }
            (Level::L0, _) => "`buffer_gl0_inv` after the acquire, or a `glc` load",
            (Level::Gl1, _) => "`buffer_gl1_inv` after the acquire, or a `dlc` load",
        }
    }
    /// Does a load with these bits miss this level?
    fn bypassed(self, arch: Arch, b: Bits) -> bool {
        match (arch, self) {
            (Arch::Gfx90a, Level::L1) | (Arch::Gfx1100 | Arch::Gfx1200 | Arch::Gfx1201, Level::L0) => b.glc,
            (Arch::Gfx942 | Arch::Gfx950, _) | (Arch::Gfx1100 | Arch::Gfx1200 | Arch::Gfx1201, Level::Gl1) => b.dlc,
            _ => false,
        }
    }
}

/// Cache bits as decoded: GFX9 `glc`/`sc0`, `slc`/`nt`, gfx942 `sc1` (in `dlc`);
/// GFX11 `glc`, `slc`, `dlc`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bits {
    /// `glc` / `sc0`.
    pub glc: bool,
    /// `slc` / `nt` (a streaming hint: no effect on coherence).
    pub slc: bool,
    /// GFX11 `dlc` / gfx942 `sc1`.
    pub dlc: bool,
}

impl Bits {
    /// No cache bit.
    pub const NONE: Bits = Bits { glc: false, slc: false, dlc: false };
    /// `glc` / `sc0` alone.
    pub const GLC: Bits = Bits { glc: true, slc: false, dlc: false };
    /// `dlc` / gfx942 `sc1` alone.
    pub const DLC: Bits = Bits { glc: false, slc: false, dlc: true };
    /// `glc` and `dlc` (`sc0 sc1`).
    pub const GLC_DLC: Bits = Bits { glc: true, slc: false, dlc: true };
}

/// The executing global-memory instruction, for the model.
#[derive(Clone, Copy, Debug)]
pub struct Access {
    /// Launch-wide wave id.
    pub wave: u32,
    /// Its cache bits.
    pub bits: Bits,
    /// An atomic (performed at the coherent point).
    pub atomic: bool,
    /// Stores complete at issue (late results off).
    pub immediate: bool,
    /// Instruction address and mnemonic, for reports.
    pub pc: u64,
    /// Mnemonic.
    pub name: &'static str,
}

/// Where a wave runs.
#[derive(Clone, Copy, Debug)]
pub struct Place {
    /// Linear workgroup id.
    pub wg: u32,
    /// Workgroup id (x, y, z).
    pub wg_id: [u32; 3],
    /// Wave in the workgroup.
    pub wave: u32,
    /// Cache instance per level ([`Level::of`]).
    pub dom: [u32; 2],
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [x, y, z] = self.wg_id;
        write!(f, "workgroup ({x},{y},{z}) wave {}", self.wave)
    }
}

/// One issued store (or atomic) of one wave.
#[derive(Clone, Debug)]
struct Rec {
    wave: u32,
    issue: u64,
    done: u64,
    atomic: bool,
    /// gfx942 store with `sc1`: written through the L2.
    through: bool,
    pc: u64,
    name: &'static str,
}

impl Rec {
    /// When the record counts as released by a later atomic of its workgroup.
    fn order_time(&self) -> u64 {
        if self.atomic { self.issue } else { self.done }
    }
}

/// Per buffer: the last record of each byte (index + 1), the first atomic of the
/// atomics since its last plain store (their sum holds every one of them: on hardware
/// the reader's own atomic can come first), and the contents when the launch first
/// stored into it.
#[derive(Clone, Debug)]
struct Bytes {
    rec: Vec<u32>,
    first: Vec<u32>,
    orig: Vec<u8>,
    orig_written: Vec<bool>,
}

const NEVER: u64 = u64::MAX;

/// Horizons: per writer workgroup, the latest time up to which it is acquired.
type Horizon = HashMap<u32, u64>;

/// The model's state for one launch.
#[derive(Clone, Debug)]
pub struct Cache {
    arch: Arch,
    wgp_mode: bool,
    now: u64,
    recs: Vec<Rec>,
    cur: Option<u32>,
    bytes: HashMap<u64, Bytes>,
    places: HashMap<u32, Place>,
    dispatched: u32,
    per_xcd: [u32; 8],
    /// Reader workgroup -> writer workgroups it acquired.
    acq: HashMap<u32, Horizon>,
    /// (level, instance) -> writer workgroups whose published data it holds fresh.
    cov: HashMap<(usize, u32), Horizon>,
    /// gfx942: per XCD, its `buffer_wbl2 sc1` (time, wave).
    wb: HashMap<u32, Vec<(u64, u32)>>,
    /// Returning atomics per address: (workgroup, time).
    sync: HashMap<u64, Vec<(u32, u64)>>,
    /// Reads that returned a stale line's value (bytes an atomic of another
    /// workgroup wrote, read without the order or invalidation that needs).
    pub stale_reads: u64,
    /// Plain reads, for write-after-read races ([`super::war`]).
    reads: Reads,
}

/// CUs of an MI210 (gfx90a), CUs per XCD and XCDs of an MI300X (gfx942), WGPs and
/// WGPs per shader array of an RX 7900 XTX (gfx1100).
const CUS_90A: u32 = 104;
const CUS_PER_XCD: u32 = 38;
const XCDS: u32 = 8;
const WGPS: u32 = 48;
const WGPS_PER_SA: u32 = 4;

impl Cache {
    /// A fresh model; `wgp_mode`: gfx1100's `WGP_MODE` (waves of a workgroup on
    /// both CUs of a WGP).
    pub fn new(arch: Arch, wgp_mode: bool) -> Cache {
        Cache {
            arch,
            wgp_mode,
            now: 1,
            recs: Vec::new(),
            cur: None,
            bytes: HashMap::new(),
            places: HashMap::new(),
            dispatched: 0,
            per_xcd: [0; 8],
            acq: HashMap::new(),
            cov: HashMap::new(),
            wb: HashMap::new(),
            sync: HashMap::new(),
            stale_reads: 0,
            reads: Reads::default(),
        }
    }

    /// Places the next dispatched workgroup (linear id `wg`); returns its cache
    /// instances for wave 0 (see [`Cache::place_wave`]).
    pub fn dispatch(&mut self, wg: u32) -> [u32; 2] {
        let k = self.dispatched;
        self.dispatched += 1;
        match self.arch {
            Arch::Gfx90a => [k % CUS_90A, 0],
            Arch::Gfx942 | Arch::Gfx950 => {
                let x = wg % XCDS;
                let n = self.per_xcd[x as usize];
                self.per_xcd[x as usize] += 1;
                [x * CUS_PER_XCD + n % CUS_PER_XCD, x]
            }
            Arch::Gfx1100 | Arch::Gfx1200 | Arch::Gfx1201 => {
                let wgp = k % WGPS;
                [wgp * 2, wgp / WGPS_PER_SA]
            }
        }
    }

    /// Records wave `uid`'s place; `wg_dom` from [`Cache::dispatch`].
    pub fn place_wave(&mut self, uid: u32, wg: u32, wg_id: [u32; 3], wave: u32, wg_dom: [u32; 2]) {
        let mut dom = wg_dom;
        if matches!(self.arch, Arch::Gfx1100 | Arch::Gfx1200 | Arch::Gfx1201) && self.wgp_mode {
            dom[0] += wave % 2;
        }
        self.places.insert(
            uid,
            Place {
                wg,
                wg_id,
                wave,
                dom,
            },
        );
    }

    /// A new instruction begins.
    pub fn begin(&mut self) {
        self.now += 1;
        self.cur = None;
        self.reads.begin();
    }

    fn place(&self, uid: u32) -> Place {
        self.places.get(&uid).copied().unwrap_or(Place {
            wg: u32::MAX,
            wg_id: [u32::MAX; 3],
            wave: uid,
            dom: [u32::MAX; 2],
        })
    }

    /// A barrier released workgroup `wg`: its waves' earlier accesses are ordered
    /// before their later ones.
    pub fn barrier(&mut self, wg: u32) {
        self.now += 1;
        self.acq.entry(wg).or_default().insert(wg, self.now);
    }

    /// A cache-maintenance instruction `name` with bits `b` by wave `uid`.
    pub fn maintain(&mut self, uid: u32, name: &str, b: Bits) {
        let p = self.place(uid);
        let levels = Level::of(self.arch);
        let hit: Vec<usize> = match (self.arch, name) {
            (Arch::Gfx90a, "buffer_wbinvl1_vol" | "buffer_wbinvl1") => vec![0],
            (Arch::Gfx942 | Arch::Gfx950, "buffer_inv") if b.dlc => vec![0, 1],
            (Arch::Gfx942 | Arch::Gfx950, "buffer_inv") if b.glc => vec![0],
            (Arch::Gfx942 | Arch::Gfx950, "buffer_wbl2") if b.dlc => {
                self.wb.entry(p.dom[1]).or_default().push((self.now, uid));
                vec![]
            }
            (Arch::Gfx1100, "buffer_gl0_inv") => vec![0],
            (Arch::Gfx1100, "buffer_gl1_inv") => vec![1],
            // GFX12 global_inv: scope SE (glc) invalidates the L0, DEV/SYS (dlc) both.
            (Arch::Gfx1200 | Arch::Gfx1201, "global_inv") if b.dlc => vec![0, 1],
            (Arch::Gfx1200 | Arch::Gfx1201, "global_inv") if b.glc => vec![0],
            _ => vec![],
        };
        let acquired = self.acq.get(&p.wg).cloned().unwrap_or_default();
        for k in hit.into_iter().filter(|&k| k < levels.len()) {
            let cov = self.cov.entry((k, p.dom[k])).or_default();
            for (&w, &t) in &acquired {
                let e = cov.entry(w).or_insert(0);
                *e = (*e).max(t);
            }
        }
    }

    /// Wave `uid`'s stores of `base + off .. + len` completed.
    pub fn complete(&mut self, uid: u32, base: u64, off: usize, len: usize) {
        let Some(b) = self.bytes.get(&base) else {
            return;
        };
        for &r in &b.rec[off..off + len] {
            if let Some(rec) = r.checked_sub(1).and_then(|r| self.recs.get_mut(r as usize))
                && rec.wave == uid
                && rec.done == NEVER
            {
                rec.done = self.now;
            }
        }
    }

    /// When record `r`'s data reaches the level shared past level `k` (`None`: not
    /// before the end of the launch).
    fn published(&self, r: &Rec, k: usize, dom: u32) -> Option<u64> {
        if r.atomic {
            return Some(r.issue);
        }
        if r.done == NEVER {
            return None;
        }
        if Level::of(self.arch)[k] != Level::L2 || r.through {
            return Some(r.done);
        }
        self.wb
            .get(&dom)?
            .iter()
            .find_map(|&(t, w)| ((w == r.wave && t > r.issue) || t > r.done).then_some(t))
    }

    /// Why wave `who` may not see record `r` (from wave `w`) fresh; `None`: it does.
    fn verdict(&self, a: &Access, who: &Place, w: &Place, r: &Rec) -> Option<String> {
        let own = who.wg == w.wg;
        let horizon = self.acq.get(&who.wg).and_then(|h| h.get(&w.wg)).copied();
        // Another wave of the same workgroup: only an `s_barrier` after the store
        // completed orders it before this read (the LDS rule, in global memory).
        if own && !r.atomic && horizon.is_none_or(|h| h <= r.order_time()) {
            return Some(
                "no `s_barrier` of the workgroup after the store completed: a race between waves of one workgroup".into(),
            );
        }
        if !own && horizon.is_none_or(|h| h <= r.order_time()) {
            return Some(
                "no release/acquire orders the two workgroups (no returning atomic of the reader's workgroup saw one the writer's workgroup made after this store): a race between workgroups".into(),
            );
        }
        for (k, level) in Level::of(self.arch).iter().enumerate() {
            if who.dom[k] == w.dom[k] {
                continue;
            }
            let (lname, arch) = (level.name(), self.arch);
            let Some(p) = self.published(r, k, w.dom[k]) else {
                return Some(format!(
                    "the store is still dirty in the writer's {lname} {}: no `buffer_wbl2 sc1` on that XCD after it (nor an `sc1` store)",
                    w.dom[k]
                ));
            };
            if horizon.is_some_and(|h| h <= p) {
                return Some(format!(
                    "the store reached past the writer's {lname} only after the writer's release (a `buffer_wbl2 sc1` or completion after its release atomic)"
                ));
            }
            if level.bypassed(arch, a.bits) {
                continue;
            }
            let fresh = self
                .cov
                .get(&(k, who.dom[k]))
                .and_then(|c| c.get(&w.wg))
                .is_some_and(|&t| t > p);
            if !fresh {
                return Some(format!(
                    "the reader's {lname} {} may hold the line from before the store: it needs {}",
                    who.dom[k],
                    level.remedy(arch)
                ));
            }
        }
        None
    }

    /// Checks a read of `out` at `base + off` of a buffer of `size` bytes (already
    /// filled from memory); bytes an atomic wrote that would be stale get their
    /// launch-start value. Plain reads are recorded for write-after-read races.
    pub fn read(
        &mut self,
        a: &Access,
        (base, size, off): (u64, usize, usize),
        out: &mut [u8],
    ) -> Result<(), String> {
        if a.atomic {
            return Ok(());
        }
        let read = Read {
            wave: a.wave,
            time: self.now,
            pc: a.pc,
            name: a.name,
        };
        let wg = self.place(a.wave).wg;
        self.reads.record(read, wg, (base, size, off, out.len()));
        let Some(b) = self.bytes.get(&base) else {
            return Ok(());
        };
        let who = self.place(a.wave);
        let mut stale = Vec::new();
        for k in 0..out.len() {
            let writers = [b.rec[off + k], b.first[off + k]];
            let Some((r, w, why)) = writers
                .iter()
                .filter_map(|&ri| self.recs.get(ri.checked_sub(1)? as usize))
                .filter(|r| r.wave != a.wave)
                .find_map(|r| {
                    let w = self.place(r.wave);
                    Some((r, w, self.verdict(a, &who, &w, r)?))
                })
            else {
                continue;
            };
            if r.atomic && b.orig_written[off + k] {
                stale.push((k, b.orig[off + k]));
                continue;
            }
            return Err(format!(
                "stale or racing read (cache model): {who} reads byte {} of this access, which {w} stored with `{}` at 0x{:x}; {why}",
                k, r.name, r.pc
            ));
        }
        self.stale_reads += stale.len() as u64;
        for (k, v) in stale {
            out[k] = v;
        }
        Ok(())
    }

    /// Records a store (or atomic) of `n` bytes at `base + off` into a buffer whose
    /// whole contents and written-ness before it are `data`/`written`; a plain store
    /// over bytes another workgroup stored without order between them is a race.
    pub fn write(
        &mut self,
        a: &Access,
        (base, off, n): (u64, usize, usize),
        data: &[u8],
        written: &[bool],
    ) -> Result<(), String> {
        self.bytes.entry(base).or_insert_with(|| Bytes {
            rec: vec![0; data.len()],
            first: vec![0; data.len()],
            orig: data.to_vec(),
            orig_written: written.to_vec(),
        });
        let who = self.place(a.wave);
        if !a.atomic {
            // Write after read: every other wave's read of these bytes ordered before.
            let acq = &self.acq;
            let ordered = |rwg: u32, t: u64| {
                acq.get(&who.wg)
                    .and_then(|h| h.get(&rwg))
                    .is_some_and(|&h| h > t)
            };
            if let Err(r) = self.reads.store(a.wave, (base, off, n), ordered) {
                let rp = self.place(r.read.wave);
                let why = if r.wg == who.wg {
                    "with no `s_barrier` of the workgroup between that read and this store"
                } else {
                    "with no release/acquire from the reading workgroup to this one (no returning atomic of this workgroup saw one the reader's made after the read)"
                };
                return Err(format!(
                    "global write-after-read race (cache model): {who} stores byte {} of this access, which {rp} read with `{}` at 0x{:x} {why}: the store may land before that read",
                    r.byte, r.read.name, r.read.pc
                ));
            }
            let b = &self.bytes[&base];
            for k in off..off + n {
                let Some(ri) = b.rec[k].checked_sub(1) else {
                    continue;
                };
                let r = &self.recs[ri as usize];
                let w = self.place(r.wave);
                if r.wave == a.wave || (w.wg == who.wg && r.atomic) {
                    continue;
                }
                let h = self.acq.get(&who.wg).and_then(|h| h.get(&w.wg));
                if w.wg == who.wg && h.is_none_or(|&h| h <= r.order_time()) {
                    return Err(format!(
                        "global race (cache model): {who} stores byte {} of this access, which {w} of the same workgroup stored with `{}` at 0x{:x} with no `s_barrier` after that store completed",
                        k - off,
                        r.name,
                        r.pc
                    ));
                }
                if w.wg == who.wg {
                    continue;
                }
                if h.is_none_or(|&h| h <= r.order_time()) {
                    return Err(format!(
                        "global race (cache model): {who} stores byte {} of this access, which {w} stored with `{}` at 0x{:x} with no release/acquire between the two workgroups",
                        k - off,
                        r.name,
                        r.pc
                    ));
                }
            }
        }
        let idx = match self.cur {
            Some(i) => i,
            None => {
                self.recs.push(Rec {
                    wave: a.wave,
                    issue: self.now,
                    done: if a.immediate { self.now } else { NEVER },
                    atomic: a.atomic,
                    through: self.arch.gfx94() && a.bits.dlc,
                    pc: a.pc,
                    name: a.name,
                });
                let i = self.recs.len() as u32;
                self.cur = Some(i);
                i
            }
        };
        let b = self.bytes.get_mut(&base).expect("inserted above");
        for k in off..off + n {
            let run = b.rec[k] != 0 && b.first[k] != 0;
            b.first[k] = match (a.atomic, run) {
                (false, _) => 0,
                (true, true) => b.first[k],
                (true, false) => idx,
            };
        }
        b.rec[off..off + n].fill(idx);
        Ok(())
    }

    /// A returning atomic of wave `uid` at `addr`: its workgroup acquires every
    /// workgroup that made one there before, and releases to later ones.
    pub fn atomic_sync(&mut self, uid: u32, addr: u64) {
        let wg = self.place(uid).wg;
        let list = self.sync.entry(addr).or_default();
        let seen: Vec<(u32, u64)> = list.iter().copied().filter(|&(w, _)| w != wg).collect();
        list.push((wg, self.now));
        let h = self.acq.entry(wg).or_default();
        for (w, t) in seen {
            let e = h.entry(w).or_insert(0);
            *e = (*e).max(t);
        }
    }
}
