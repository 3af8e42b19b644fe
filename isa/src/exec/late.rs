//! Late memory results: what a sequential run hides about `s_waitcnt`.
//!
//! A memory instruction issues; its results come back later. Each outstanding one is
//! a [`Pending`] entry of its wave, counted by the counter the ISA guides give it:
//!
//! - `vmcnt`: vector memory loads (GFX9: also stores and atomics; GFX11: loads and
//!   atomics returning data). Returned in issue order (CDNA2/CDNA3/RDNA3 guides,
//!   "Data dependency resolution"; LLVM's SIInsertWaitcnts relies on the same for
//!   results of one VMEM type).
//! - `vscnt` (GFX11 only): vector stores and atomics without return, in order.
//! - `lgkmcnt`: LDS instructions (in order among themselves), scalar memory loads
//!   (which may return out of order) and FLAT instructions (which count here too,
//!   in no order).
//!
//! A load's register writes ([`Write`]) are held in its entry and land when an
//! `s_waitcnt` guarantees the entry is complete: an entry is complete once the
//! counter's value can only be at or below the wait's count if it is, i.e. when the
//! entry and the younger entries that must finish after it (same in-order class)
//! outnumber the count. Scalar loads are only guaranteed by a count of 0. An entry
//! older than a complete one of its in-order class is complete too (a FLAT load
//! covered by `lgkmcnt(0)` completes the older vector loads).
//!
//! Checks (errors naming kernel, workgroup, wave, address, instruction and register):
//! - reading a register an outstanding load will write;
//! - writing it (other than by a later load returning in order after it);
//! - reading global or LDS bytes another wave stored with a store that is not yet
//!   known complete: the writer did not wait for its counter before the barrier or
//!   the release (atomic) that ordered the reader after it. A wave's own stores are
//!   visible to its later loads (one wave's accesses to an address stay in order).
//!   Stores still outstanding when their wave ends stay unreleased to the rest of
//!   the launch.
//!
//! Store data is read from its registers at issue (GFX9 and later read VMEM store
//! data at issue, subject only to wait states), so overwriting a store's data
//! register afterwards is allowed.

use super::Ctx;
use crate::arch::Arch;
use crate::decode::{Enc, Inst};
use std::cell::{Cell, RefCell};
use std::fmt::Write as _;

/// First index of the AccVGPRs in the register scoreboard.
pub const AGPR0: usize = 256;
/// First index of the SGPRs.
pub const SGPR0: usize = 512;
/// Scoreboard size.
pub const NREGS: usize = 640;

/// The counter class of an outstanding memory instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `vmcnt`, in order.
    Vm,
    /// `vscnt` (GFX11 stores), in order.
    Vs,
    /// `lgkmcnt`, LDS: in order among LDS instructions.
    Lds,
    /// `lgkmcnt`, scalar memory: any order.
    Smem,
}

impl Class {
    /// The counter's name on GFX12 (split counters).
    fn counter12(self) -> &'static str {
        match self {
            Class::Vm => "loadcnt",
            Class::Vs => "storecnt",
            Class::Lds => "dscnt",
            Class::Smem => "kmcnt",
        }
    }
    fn counter(self) -> &'static str {
        match self {
            Class::Vm => "vmcnt",
            Class::Vs => "vscnt",
            Class::Lds | Class::Smem => "lgkmcnt",
        }
    }
}

/// A deferred register write: `reg` (scoreboard index) of `lane` takes the bits of
/// `value` under `mask`.
#[derive(Clone, Copy, Debug)]
pub struct Write {
    /// Scoreboard index (VGPR n, [`AGPR0`] + n, [`SGPR0`] + n).
    pub reg: u16,
    /// Lane.
    pub lane: u8,
    /// Value.
    pub value: u32,
    /// Bits written (a d16 load writes one half).
    pub mask: u32,
}

/// One outstanding memory instruction.
#[derive(Clone, Debug)]
pub struct Pending {
    class: Class,
    /// A FLAT instruction: also counted by `lgkmcnt` (in no order there).
    flat: bool,
    inst: Inst,
    writes: Vec<Write>,
    regs: Vec<u16>,
    global: Vec<(u64, u32)>,
    lds: Vec<(u32, u32)>,
}

/// A wave's outstanding memory instructions and register scoreboard.
#[derive(Clone, Debug)]
pub struct Late {
    /// Late results modelled (else every instruction completes at issue).
    pub on: bool,
    /// GFX12: name the split counters in errors.
    pub gfx12: bool,
    pending: Vec<Pending>,
    /// Per register: outstanding loads that will write it.
    busy: Vec<u16>,
    /// Per register: 1 + the address of the `s_waitcnt` that landed its value, until
    /// it is read or the next `s_waitcnt` executes.
    landed: Vec<Cell<u64>>,
    landed_regs: Vec<u16>,
    /// Waits whose landed values were read before the next wait.
    needed: RefCell<Vec<u64>>,
}

impl Default for Late {
    fn default() -> Self {
        Late {
            on: false,
            gfx12: false,
            pending: Vec::new(),
            busy: vec![0; NREGS],
            landed: vec![Cell::new(0); NREGS],
            landed_regs: Vec::new(),
            needed: RefCell::new(Vec::new()),
        }
    }
}

/// The assembler name of scoreboard register `r`.
pub fn reg_name(r: usize) -> String {
    match r {
        0..AGPR0 => format!("v{r}"),
        AGPR0..SGPR0 => format!("a{}", r - AGPR0),
        _ => match r - SGPR0 {
            106 => "vcc_lo".into(),
            107 => "vcc_hi".into(),
            124 => "m0 (null on GFX11)".into(),
            126 => "exec_lo".into(),
            127 => "exec_hi".into(),
            n => format!("s{n}"),
        },
    }
}

impl Late {
    /// Whether register `r` has an outstanding load.
    #[inline]
    pub fn busy(&self, r: usize) -> bool {
        self.busy.get(r).is_some_and(|&b| b != 0)
    }
    /// Notes a read of register `r`: if an `s_waitcnt` landed its value and no other
    /// wait ran since, that wait was needed (its removal is an early read).
    #[inline]
    pub fn note_read(&self, r: usize) {
        if let Some(l) = self.landed.get(r)
            && l.get() != 0
        {
            self.needed.borrow_mut().push(l.get() - 1);
            l.set(0);
        }
    }
    /// The waits found needed since the last call.
    pub fn take_needed(&self) -> Vec<u64> {
        std::mem::take(&mut *self.needed.borrow_mut())
    }
    fn owner(&self, r: usize) -> Option<&Pending> {
        self.pending
            .iter()
            .rev()
            .find(|p| p.regs.contains(&(r as u16)))
    }
    /// The error for reading register `r` early.
    pub fn read_error(&self, r: usize) -> String {
        match self.owner(r) {
            Some(p) => format!(
                "reads {} before its load completes: `{}` at 0x{:x} writes it and no s_waitcnt {} since covers that load",
                reg_name(r),
                p.inst,
                p.inst.addr,
                self.cname(p.class)
            ),
            None => format!("reads {} before its load completes", reg_name(r)),
        }
    }
    /// The error for writing register `r` while a load will still write it.
    pub fn write_error(&self, r: usize) -> String {
        match self.owner(r) {
            Some(p) => format!(
                "writes {} while `{}` at 0x{:x} may still write it (no s_waitcnt {} covers that load), so the load's result could land after this write",
                reg_name(r),
                p.inst,
                p.inst.addr,
                self.cname(p.class)
            ),
            None => format!("writes {} while a load may still write it", reg_name(r)),
        }
    }
    /// Outstanding entries (for reports and tests).
    fn cname(&self, c: Class) -> &'static str {
        if self.gfx12 { c.counter12() } else { c.counter() }
    }
    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }
    /// Drops every entry at the end of the wave: loads no longer matter; stores stay
    /// unreleased in memory (their marks are cleared at the end of the launch).
    pub fn end(&mut self) {
        self.pending.clear();
        self.busy.fill(0);
    }
}

/// The class of a memory instruction, and whether it is a FLAT one; `None` for
/// everything else (including cache maintenance, which returns nothing).
pub fn class_of(arch: Arch, i: &Inst) -> Option<(Class, bool)> {
    let gfx11 = arch.family().rdna();
    match i.enc {
        Enc::Smem if i.name.starts_with("s_load") || i.name.starts_with("s_buffer_load") => {
            Some((Class::Smem, false))
        }
        Enc::Ds => Some((Class::Lds, false)),
        Enc::Flat => {
            let atomic = i.name.contains("atomic");
            let store = i.name.contains("store") || atomic && !i.mods.glc;
            let class = if gfx11 && store { Class::Vs } else { Class::Vm };
            Some((class, i.mods.seg == 0))
        }
        _ => None,
    }
}

/// Records an issued memory instruction of class `class`: its deferred writes, and
/// the global / LDS ranges it stored (marked pending in the memories).
#[allow(clippy::too_many_arguments)]
pub fn issue(
    c: &mut Ctx,
    i: &Inst,
    class: Class,
    flat: bool,
    writes: Vec<Write>,
    global: Vec<(u64, u32)>,
    lds: Vec<(u32, u32)>,
) -> Result<(), String> {
    let mut regs: Vec<u16> = writes.iter().map(|w| w.reg).collect();
    regs.sort_unstable();
    regs.dedup();
    let late = &mut c.wave.late;
    for &r in &regs {
        if late.busy(r as usize) {
            let old = late
                .owner(r as usize)
                .expect("a busy register has an owner");
            let ordered = old.class == class && class != Class::Smem && !flat && !old.flat;
            if !ordered {
                return Err(format!(
                    "loads into {} while `{}` at 0x{:x} ({}) may still write it: the two results can land in either order",
                    reg_name(r as usize),
                    old.inst,
                    old.inst.addr,
                    late.cname(old.class)
                ));
            }
        }
    }
    for &r in &regs {
        late.busy[r as usize] += 1;
    }
    late.pending.push(Pending {
        class,
        flat,
        inst: i.clone(),
        writes,
        regs,
        global,
        lds,
    });
    Ok(())
}

/// `s_waitcnt`: waits until `vmcnt <= vm`, `lgkmcnt <= lgkm` and `vscnt <= vs`
/// (`None`: that counter is not waited for), then lands what is guaranteed complete.
pub fn wait(c: &mut Ctx, pc: u64, vm: Option<u32>, lgkm: Option<u32>, vs: Option<u32>) {
    wait_on(c, pc, vm, vs, lgkm, lgkm);
}

/// GFX12 `s_wait_*`: waits until `loadcnt <= load`, `storecnt <= store`, `dscnt <= ds`
/// and `kmcnt <= km` (`None`: not waited for). loadcnt and storecnt are the in-order
/// classes `vmcnt`/`vscnt` stand for on GFX11; dscnt counts LDS (in order) and FLAT
/// instructions (no order); kmcnt scalar loads (no order).
pub fn wait_split(
    c: &mut Ctx,
    pc: u64,
    load: Option<u32>,
    store: Option<u32>,
    ds: Option<u32>,
    km: Option<u32>,
) {
    wait_on(c, pc, load, store, ds, km);
}

/// `ds` covers LDS and FLAT entries, `km` scalar loads (GFX9/GFX11: both lgkmcnt).
fn wait_on(
    c: &mut Ctx,
    pc: u64,
    vm: Option<u32>,
    vs: Option<u32>,
    ds: Option<u32>,
    km: Option<u32>,
) {
    // A new wait: values landed by the previous ones no longer tell which was needed.
    for r in std::mem::take(&mut c.wave.late.landed_regs) {
        c.wave.late.landed[r as usize].set(0);
    }
    let needed = c.wave.late.take_needed();
    c.counters.waits_needed.extend(needed);
    let p = &c.wave.late.pending;
    if p.is_empty() {
        return;
    }
    let mut done = vec![false; p.len()];
    for (k, x) in p.iter().enumerate() {
        // Entries of x's in-order class issued at or after x (x included).
        let from_x = |cls: Class| p[k..].iter().filter(|y| y.class == cls).count() as u32;
        let by_vm = matches!(x.class, Class::Vm) && vm.is_some_and(|n| from_x(Class::Vm) > n);
        let by_vs = matches!(x.class, Class::Vs) && vs.is_some_and(|n| from_x(Class::Vs) > n);
        let by_lgkm = match x.class {
            Class::Lds => ds.is_some_and(|n| from_x(Class::Lds) > n),
            Class::Smem => km == Some(0),
            _ => x.flat && ds == Some(0),
        };
        done[k] = by_vm || by_vs || by_lgkm;
    }
    // In-order classes complete in issue order: an entry older than a complete one
    // of its class is complete too (e.g. a FLAT load covered by lgkmcnt(0) completes
    // the older global loads).
    for cls in [Class::Vm, Class::Vs, Class::Lds] {
        if let Some(last) = (0..p.len()).rev().find(|&k| done[k] && p[k].class == cls) {
            for k in 0..last {
                if p[k].class == cls {
                    done[k] = true;
                }
            }
        }
    }
    if !done.iter().any(|&d| d) {
        return;
    }

    let all = std::mem::take(&mut c.wave.late.pending);
    let mut keep = Vec::with_capacity(all.len());
    for (x, d) in all.into_iter().zip(done) {
        if d {
            for &r in &x.regs {
                c.wave.late.landed[r as usize].set(pc + 1);
                c.wave.late.landed_regs.push(r);
            }
            land(c, x);
        } else {
            keep.push(x);
        }
    }
    c.wave.late.pending = keep;
}

/// Completes an entry: its register writes land, its stores become visible.
fn land(c: &mut Ctx, x: Pending) {
    let lanes = c.wave.lanes;
    for w in &x.writes {
        let r = w.reg as usize;
        let slot = match r {
            0..AGPR0 => &mut c.wave.vgpr[r * lanes + w.lane as usize],
            AGPR0..SGPR0 => &mut c.wave.agpr[(r - AGPR0) * lanes + w.lane as usize],
            _ => &mut c.wave.sgpr[r - SGPR0],
        };
        *slot = (*slot & !w.mask) | (w.value & w.mask);
    }
    for &r in &x.regs {
        c.wave.late.busy[r as usize] -= 1;
    }
    let uid = c.wave.uid;
    for &(a, n) in &x.global {
        c.mem.release(uid, a, n as usize);
    }
    for &(a, n) in &x.lds {
        c.lds.release(a as usize, n as usize);
    }
}

/// A short description of a wave's outstanding entries (for error reports).
pub fn summary(l: &Late) -> String {
    let mut s = String::new();
    for p in &l.pending {
        let _ = write!(
            s,
            "`{}` at 0x{:x} ({}); ",
            p.inst,
            p.inst.addr,
            l.cname(p.class)
        );
    }
    s
}
