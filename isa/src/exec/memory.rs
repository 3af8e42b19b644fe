//! Checked memories: flat global memory made of host-allocated buffers (bounds and
//! written-ness per byte) and a workgroup's LDS.

use super::cache::{Access, Cache};
use std::collections::{BTreeMap, HashMap};

/// Why an access failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// No buffer holds the range.
    OutOfBounds {
        addr: u64,
        len: usize,
        near: Option<(String, u64, usize)>,
    },
    /// A byte of the range was never written (neither by the host nor by a kernel).
    Unwritten {
        addr: u64,
        len: usize,
        buffer: String,
        offset: usize,
    },
    /// A byte of the range was stored by another wave whose store is not known to be
    /// complete (late results, see `late.rs`).
    Unreleased {
        addr: u64,
        len: usize,
        buffer: String,
        offset: usize,
        writer: String,
    },
    /// The cache model found a stale or racing access (see `cache.rs`).
    Cache(String),
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::OutOfBounds {
                addr,
                len,
                near: Some((n, base, size)),
            } => write!(
                f,
                "out-of-bounds access of {len} bytes at 0x{addr:x} (nearest buffer `{n}` is 0x{base:x}..0x{:x}, offset {})",
                base + *size as u64,
                *addr as i128 - *base as i128
            ),
            Fault::OutOfBounds {
                addr,
                len,
                near: None,
            } => write!(
                f,
                "out-of-bounds access of {len} bytes at 0x{addr:x} (no buffer)"
            ),
            Fault::Unwritten {
                addr,
                len,
                buffer,
                offset,
            } => {
                write!(
                    f,
                    "read of {len} bytes at 0x{addr:x} (buffer `{buffer}` offset {offset}) that were never written"
                )
            }
            Fault::Unreleased {
                addr,
                len,
                buffer,
                offset,
                writer,
            } => write!(
                f,
                "read of {len} bytes at 0x{addr:x} (buffer `{buffer}` offset {offset}) stored by {writer}, a store not known to be complete: the writer did not wait for it (s_waitcnt vmcnt/vscnt) before the barrier or release that ordered this read after it"
            ),
            Fault::Cache(m) => f.write_str(m),
        }
    }
}

/// One allocation.
#[derive(Clone, Debug)]
pub struct Buffer {
    /// Name used in reports.
    pub name: String,
    /// Contents.
    pub data: Vec<u8>,
    /// Per byte: has it been written?
    pub written: Vec<bool>,
    /// Per byte: the wave (launch-wide id, [`ATOMIC_MARK`] for atomics) whose store
    /// of it is outstanding; allocated at the first such store.
    pending: Option<Vec<u32>>,
}

/// Marks an outstanding atomic's bytes: other atomics may access them.
pub const ATOMIC_MARK: u32 = 1 << 31;

/// The wave performing device accesses, for late-result marks (see `late.rs`).
#[derive(Clone, Copy, Debug)]
pub struct Agent {
    /// Launch-wide wave id (from 1).
    pub id: u32,
    /// The access is an atomic.
    pub atomic: bool,
}

/// Global memory: buffers at disjoint addresses with unmapped gaps between them.
#[derive(Clone, Debug, Default)]
pub struct Memory {
    bufs: BTreeMap<u64, Buffer>,
    next: u64,
    agent: Option<Agent>,
    log: Vec<(u64, u32)>,
    writers: HashMap<u32, Writer>,
    /// The cache model of the running launch (`None`: off) and the instruction
    /// accessing memory now.
    cache: Option<Box<Cache>>,
    access: Option<Access>,
}

/// Who stored outstanding bytes, for reports: workgroup, wave and the store.
#[derive(Clone, Debug)]
pub struct Writer {
    /// Workgroup id.
    pub wg: [u32; 3],
    /// Wave in the workgroup.
    pub wave: u32,
    /// The wave's last store.
    pub inst: crate::decode::Inst,
}

impl std::fmt::Display for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [x, y, z] = self.wg;
        write!(
            f,
            "workgroup ({x},{y},{z}) wave {} (its last store `{}` at 0x{:x})",
            self.wave, self.inst, self.inst.addr
        )
    }
}

/// First address handed out; small addresses stay unmapped so null pointers fault.
const BASE: u64 = 0x1_0000_0000;
/// Unmapped bytes between two buffers.
const GAP: u64 = 0x1_0000;

impl Memory {
    /// Empty memory.
    pub fn new() -> Self {
        Memory {
            bufs: BTreeMap::new(),
            next: BASE,
            ..Default::default()
        }
    }

    /// Allocates `size` bytes (unwritten) and returns the device address.
    pub fn alloc(&mut self, name: &str, size: usize) -> u64 {
        if self.next == 0 {
            self.next = BASE;
        }
        let addr = self.next;
        self.next = (addr + size as u64 + GAP).next_multiple_of(GAP);
        self.bufs.insert(
            addr,
            Buffer {
                name: name.to_string(),
                data: vec![0; size],
                written: vec![false; size],
                pending: None,
            },
        );
        addr
    }

    /// Allocates a buffer holding `bytes` (written).
    pub fn upload(&mut self, name: &str, bytes: &[u8]) -> u64 {
        let a = self.alloc(name, bytes.len());
        let b = self.bufs.get_mut(&a).unwrap();
        b.data.copy_from_slice(bytes);
        b.written.fill(true);
        a
    }

    /// Frees a buffer.
    pub fn free(&mut self, addr: u64) {
        self.bufs.remove(&addr);
    }

    fn locate(&self, addr: u64, len: usize) -> Result<(u64, usize), Fault> {
        if let Some((&base, b)) = self.bufs.range(..=addr).next_back() {
            let off = (addr - base) as usize;
            if off + len <= b.data.len() {
                return Ok((base, off));
            }
        }
        let near = self
            .bufs
            .iter()
            .min_by_key(|(b, buf)| {
                let end = **b + buf.data.len() as u64;
                if addr < **b {
                    **b - addr
                } else {
                    addr.saturating_sub(end)
                }
            })
            .map(|(b, buf)| (buf.name.clone(), *b, buf.data.len()));
        Err(Fault::OutOfBounds { addr, len, near })
    }

    /// A device read: bounds and written-ness checked.
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), Fault> {
        let (base, off) = self.locate(addr, out.len())?;
        let b = &self.bufs[&base];
        if let Some(k) = b.written[off..off + out.len()].iter().position(|w| !w) {
            return Err(Fault::Unwritten {
                addr,
                len: out.len(),
                buffer: b.name.clone(),
                offset: off + k,
            });
        }
        if let (Some(ag), Some(p)) = (self.agent, &b.pending) {
            let n = out.len();
            if let Some(k) = p[off..off + n].iter().position(|&m| {
                m != 0 && m & !ATOMIC_MARK != ag.id && !(ag.atomic && m & ATOMIC_MARK != 0)
            }) {
                let w = p[off + k] & !ATOMIC_MARK;
                return Err(Fault::Unreleased {
                    addr,
                    len: n,
                    buffer: b.name.clone(),
                    offset: off + k,
                    writer: self
                        .writers
                        .get(&w)
                        .map_or_else(|| format!("wave {w}"), |w| w.to_string()),
                });
            }
        }
        out.copy_from_slice(&b.data[off..off + out.len()]);
        Ok(())
    }

    /// A device read under the cache model (when on): [`Memory::read`], then the
    /// model's check of the bytes other waves stored.
    pub fn load(&mut self, addr: u64, out: &mut [u8]) -> Result<(), Fault> {
        self.read(addr, out)?;
        let (base, off) = self.locate(addr, out.len())?;
        if let (Some(c), Some(a)) = (self.cache.as_mut(), self.access.as_ref()) {
            let (name, size) = (&self.bufs[&base].name, self.bufs[&base].data.len());
            c.read(a, (base, size, off), out).map_err(|m| {
                Fault::Cache(format!("{m} (0x{addr:x}, buffer `{name}` offset {off})"))
            })?;
        }
        Ok(())
    }

    /// A device write: bounds checked, bytes become written (and, under an agent,
    /// pending until [`Memory::release`]).
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), Fault> {
        let (base, off) = self.locate(addr, data.len())?;
        let b = self.bufs.get_mut(&base).unwrap();
        if let (Some(c), Some(a)) = (self.cache.as_mut(), self.access.as_ref()) {
            c.write(a, (base, off, data.len()), &b.data, &b.written)
                .map_err(|m| {
                    Fault::Cache(format!(
                        "{m} (0x{addr:x}, buffer `{}` offset {off})",
                        b.name
                    ))
                })?;
            if a.atomic && a.bits.glc {
                c.atomic_sync(a.wave, addr);
            }
        }
        b.data[off..off + data.len()].copy_from_slice(data);
        b.written[off..off + data.len()].fill(true);
        if let Some(ag) = self.agent {
            let len = b.data.len();
            let p = b.pending.get_or_insert_with(|| vec![0; len]);
            let m = ag.id | if ag.atomic { ATOMIC_MARK } else { 0 };
            p[off..off + data.len()].fill(m);
            self.log.push((addr, data.len() as u32));
        }
        Ok(())
    }

    /// The wave whose accesses follow (`None`: the host, or no late results).
    pub fn set_agent(&mut self, agent: Option<Agent>) {
        self.agent = agent;
    }

    /// The ranges written under the agent since the last call.
    pub fn take_log(&mut self) -> Vec<(u64, u32)> {
        std::mem::take(&mut self.log)
    }

    /// Names wave `id` in reports.
    pub fn describe_writer(&mut self, id: u32, who: Writer) {
        self.writers.insert(id, who);
    }

    /// Starts (or, with `None`, turns off) the cache model for a launch.
    pub fn set_cache(&mut self, c: Option<Cache>) {
        self.cache = c.map(Box::new);
        self.access = None;
    }

    /// The running launch's cache model.
    pub fn cache(&mut self) -> Option<&mut Cache> {
        self.cache.as_deref_mut()
    }

    /// The global-memory instruction whose accesses follow (`None`: the host).
    pub fn set_access(&mut self, a: Option<Access>) {
        if let (Some(c), Some(_)) = (self.cache.as_mut(), a) {
            c.begin();
        }
        self.access = a;
    }

    /// The instruction accessing memory now.
    pub fn access(&self) -> Option<Access> {
        self.access
    }

    /// Wave `id`'s store of `addr..addr + len` is complete.
    pub fn release(&mut self, id: u32, addr: u64, len: usize) {
        if let Ok((base, off)) = self.locate(addr, len)
            && let Some(c) = self.cache.as_mut()
        {
            c.complete(id, base, off, len);
        }
        if let Ok((base, off)) = self.locate(addr, len)
            && let Some(p) = self.bufs.get_mut(&base).and_then(|b| b.pending.as_mut())
        {
            for m in &mut p[off..off + len] {
                if *m & !ATOMIC_MARK == id {
                    *m = 0;
                }
            }
        }
    }

    /// Every store is complete (the end of a launch).
    pub fn release_all(&mut self) {
        for b in self.bufs.values_mut() {
            b.pending = None;
        }
        self.writers.clear();
        self.agent = None;
        self.log.clear();
    }

    /// Host view of a buffer by its address (whole contents, written or not).
    pub fn buffer(&self, addr: u64) -> Option<&Buffer> {
        self.bufs.get(&addr)
    }

    /// Host read of `len` bytes of a buffer.
    pub fn download(&self, addr: u64, len: usize) -> Vec<u8> {
        let (base, off) = self.locate(addr, len).expect("download out of bounds");
        self.bufs[&base].data[off..off + len].to_vec()
    }
}

/// A workgroup's LDS, with written-ness per byte.
#[derive(Clone, Debug)]
pub struct Lds {
    /// Contents.
    pub data: Vec<u8>,
    /// Per byte: written?
    pub written: Vec<bool>,
    /// Race tracking: the wave accessing now, and the barrier interval (epoch,
    /// from 1; a barrier's release starts the next).
    wave: u32,
    epoch: u32,
    /// Per byte: the epoch and wave of its last write, the epoch of its
    /// reads and the waves that read it then.
    write_epoch: Vec<u32>,
    write_wave: Vec<u32>,
    read_epoch: Vec<u32>,
    readers: Vec<u64>,
    /// Late results: per byte, 1 + the wave whose store of it is outstanding.
    pend: Vec<u8>,
    /// Writes are marked pending (a late-results store is executing).
    marking: bool,
    log: Vec<(u32, u32)>,
}

impl Lds {
    /// `size` bytes, unwritten.
    pub fn new(size: usize) -> Self {
        Lds {
            data: vec![0; size],
            written: vec![false; size],
            wave: 0,
            epoch: 1,
            write_epoch: vec![0; size],
            write_wave: vec![0; size],
            read_epoch: vec![0; size],
            readers: vec![0; size],
            pend: vec![0; size],
            marking: false,
            log: Vec::new(),
        }
    }
    /// The wave whose accesses follow.
    pub fn set_wave(&mut self, wave: u32) {
        self.wave = wave;
    }
    /// A barrier released the workgroup: accesses before it are ordered
    /// before those after it.
    pub fn barrier(&mut self) {
        self.epoch += 1;
    }
    /// Checks bytes `a..a + n` against other waves' accesses since the last
    /// barrier (a race: no barrier orders them), then records this access.
    /// Accesses of one wave are ordered by its program, of one instruction's
    /// lanes by the hardware.
    fn track(&mut self, a: usize, n: usize, write: bool) -> Result<(), String> {
        let (w, e) = (self.wave, self.epoch);
        let me = 1u64 << (w % 64);
        for k in a..a + n {
            if self.write_epoch[k] == e && self.write_wave[k] != w {
                let what = if write { "writes" } else { "reads" };
                return Err(format!(
                    "LDS race: wave {w} {what} byte {k}, which wave {} wrote since the last barrier",
                    self.write_wave[k]
                ));
            }
            if write && self.read_epoch[k] == e && self.readers[k] & !me != 0 {
                return Err(format!(
                    "LDS race: wave {w} writes byte {k}, which wave {} read since the last barrier",
                    (self.readers[k] & !me).trailing_zeros()
                ));
            }
        }
        for k in a..a + n {
            if write {
                self.write_epoch[k] = e;
                self.write_wave[k] = w;
            } else {
                if self.read_epoch[k] != e {
                    self.read_epoch[k] = e;
                    self.readers[k] = 0;
                }
                self.readers[k] |= me;
            }
        }
        Ok(())
    }
    /// The offset of an access of `len` bytes at `addr`, if inside the allocation.
    fn offset(&self, addr: u64, len: usize) -> Result<usize, String> {
        let a = addr as usize;
        if addr > u32::MAX as u64 || a + len > self.data.len() {
            return Err(format!(
                "LDS access of {len} bytes at offset {addr} outside the {} bytes allocated",
                self.data.len()
            ));
        }
        Ok(a)
    }
    /// Checked read.
    pub fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        let a = self.offset(addr, out.len())?;
        if let Some(k) = self.written[a..a + out.len()].iter().position(|w| !w) {
            return Err(format!(
                "read of LDS bytes {}..{} that were never written (first: {})",
                a,
                a + out.len(),
                a + k
            ));
        }
        self.track(a, out.len(), false)?;
        let me = self.wave as u8 + 1;
        if let Some(k) = self.pend[a..a + out.len()]
            .iter()
            .position(|&p| p != 0 && p != me)
        {
            return Err(format!(
                "wave {} reads LDS byte {} stored by wave {} with a store not known to be complete: that wave did not wait (s_waitcnt lgkmcnt) before the barrier that ordered this read after it",
                self.wave,
                a + k,
                self.pend[a + k] - 1
            ));
        }
        out.copy_from_slice(&self.data[a..a + out.len()]);
        Ok(())
    }

    /// Marks (or stops marking) writes as outstanding stores of the current wave.
    pub fn set_marking(&mut self, on: bool) {
        self.marking = on;
    }

    /// The ranges stored under marking since the last call.
    pub fn take_log(&mut self) -> Vec<(u32, u32)> {
        std::mem::take(&mut self.log)
    }

    /// The current wave's store of `a..a + n` is complete.
    pub fn release(&mut self, a: usize, n: usize) {
        let me = self.wave as u8 + 1;
        for p in &mut self.pend[a..a + n] {
            if *p == me {
                *p = 0;
            }
        }
    }
    /// Checked write.
    pub fn write(&mut self, addr: u64, bytes: &[u8]) -> Result<(), String> {
        let a = self.offset(addr, bytes.len())?;
        self.track(a, bytes.len(), true)?;
        self.data[a..a + bytes.len()].copy_from_slice(bytes);
        self.written[a..a + bytes.len()].fill(true);
        if self.marking {
            self.pend[a..a + bytes.len()].fill(self.wave as u8 + 1);
            self.log.push((a as u32, bytes.len() as u32));
        }
        Ok(())
    }
}
