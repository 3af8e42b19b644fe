//! Device memory: real host allocations (device address = host pointer), each
//! with a "written" shadow bitmap (1 bit per byte) so reads of memory nothing
//! wrote are caught. Buffers start poisoned with 0xFF (NaN as f32 and f16).

use crate::EmuError;
use std::alloc::Layout;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};

/// Alignment of every allocation (as the GPU runtimes give at least this).
pub(crate) const ALIGN: usize = 256;
/// Byte pattern unwritten memory holds.
pub(crate) const POISON: u8 = 0xFF;

/// One allocation.
pub(crate) struct Alloc {
    /// Sequential id, named in messages as `#id`.
    pub id: u32,
    pub base: u64,
    pub size: usize,
    layout: Layout,
    /// Bit `b` set: byte `b` was written.
    written: Box<[AtomicU64]>,
    label: Mutex<Option<String>>,
}

// SAFETY: the allocation is plain bytes owned by this struct; concurrent access
// from workers goes through raw pointers exactly as on a GPU.
unsafe impl Send for Alloc {}
unsafe impl Sync for Alloc {}

impl Drop for Alloc {
    fn drop(&mut self) {
        // SAFETY: allocated in `Alloc::new` with `self.layout`.
        unsafe { std::alloc::dealloc(self.base as *mut u8, self.layout) }
    }
}

const _: () = assert!(size_of::<AtomicU64>() == size_of::<u64>() && align_of::<AtomicU64>() == align_of::<u64>());

impl Alloc {
    fn new(id: u32, size: usize) -> Option<Alloc> {
        let layout = Layout::from_size_align(size.max(1), ALIGN).ok()?;
        // SAFETY: non-zero size.
        let p = unsafe { std::alloc::alloc(layout) };
        if p.is_null() {
            return None;
        }
        // SAFETY: `p` is valid for `layout.size()` bytes.
        unsafe { p.write_bytes(POISON, layout.size()) };
        // Zeroed u64s reinterpreted as atomics (same layout, asserted above); calloc is fast for big buffers.
        let words = vec![0u64; size.div_ceil(64)].into_boxed_slice();
        // SAFETY: AtomicU64 has the size, alignment and bit validity of u64.
        let written = unsafe { Box::from_raw(Box::into_raw(words) as *mut [AtomicU64]) };
        Some(Alloc { id, base: p as u64, size, layout, written, label: Mutex::new(None) })
    }

    /// `#id 'label' (size bytes)` for messages.
    pub fn describe(&self) -> String {
        match &*self.label.lock().unwrap() {
            Some(l) => format!("buffer #{} '{l}' ({} bytes)", self.id, self.size),
            None => format!("buffer #{} ({} bytes)", self.id, self.size),
        }
    }

    /// Whether bytes `off..off+n` were all written.
    #[inline]
    pub fn is_written(&self, off: usize, n: usize) -> bool {
        let (mut o, end) = (off, off + n);
        while o < end {
            let (w, b) = (o / 64, o % 64);
            let take = (64 - b).min(end - o);
            let mask = if take == 64 { !0 } else { ((1u64 << take) - 1) << b };
            if self.written[w].load(Relaxed) & mask != mask {
                return false;
            }
            o += take;
        }
        true
    }

    /// First unwritten byte in `off..off+n`.
    pub fn first_unwritten(&self, off: usize, n: usize) -> Option<usize> {
        (off..off + n).find(|&o| self.written[o / 64].load(Relaxed) & (1 << (o % 64)) == 0)
    }

    /// Marks bytes `off..off+n` written (loads first: a store to memory already
    /// written costs no atomic read-modify-write).
    #[inline]
    pub fn mark_written(&self, off: usize, n: usize) {
        let (mut o, end) = (off, off + n);
        while o < end {
            let (w, b) = (o / 64, o % 64);
            let take = (64 - b).min(end - o);
            let mask = if take == 64 { !0 } else { ((1u64 << take) - 1) << b };
            let word = &self.written[w];
            if word.load(Relaxed) & mask != mask {
                word.fetch_or(mask, Relaxed);
            }
            o += take;
        }
    }
}

/// The registry of live allocations, by base address.
#[derive(Default)]
pub(crate) struct Memory {
    map: RwLock<BTreeMap<u64, Arc<Alloc>>>,
    next_id: AtomicU32,
}

impl Memory {
    pub fn alloc(&self, bytes: usize) -> Result<u64, EmuError> {
        let id = self.next_id.fetch_add(1, Relaxed);
        let a = Alloc::new(id, bytes).ok_or_else(|| EmuError::Usage(format!("cannot allocate {bytes} bytes")))?;
        let base = a.base;
        self.map.write().unwrap().insert(base, Arc::new(a));
        Ok(base)
    }

    pub fn free(&self, addr: u64) -> Result<(), EmuError> {
        // Running launches hold their own `Arc`s, so the bytes outlive them.
        match self.map.write().unwrap().remove(&addr) {
            Some(_) => Ok(()),
            None => Err(EmuError::Usage(format!("free of {addr:#x}, which is not the base of a live allocation"))),
        }
    }

    /// The allocation holding all of `addr..addr+n`, and the offset of `addr` in it.
    pub fn find(&self, addr: u64, n: usize) -> Result<(Arc<Alloc>, usize), EmuError> {
        let map = self.map.read().unwrap();
        let hit = map.range(..=addr).next_back().map(|(_, a)| a.clone());
        match hit {
            Some(a) if in_bounds(&a, addr, n).is_some() => {
                let off = (addr - a.base) as usize;
                Ok((a, off))
            }
            _ => Err(EmuError::Usage(format!(
                "host access of {n} bytes at {addr:#x} is not inside one live allocation"
            ))),
        }
    }

    /// All live allocations sorted by base, for a launch.
    pub fn snapshot(&self) -> Vec<Arc<Alloc>> {
        self.map.read().unwrap().values().cloned().collect()
    }
}

/// Offset of `addr` in `a` when `addr..addr+n` lies inside it.
#[inline]
fn in_bounds(a: &Alloc, addr: u64, n: usize) -> Option<usize> {
    let off = addr.wrapping_sub(a.base);
    (off <= a.size as u64 && n as u64 <= a.size as u64 - off).then_some(off as usize)
}

/// A launch's view of memory: a sorted snapshot plus the last allocation hit,
/// so the common access costs two compares and no lock.
pub(crate) struct MemView {
    allocs: Vec<Arc<Alloc>>,
    last: Cell<usize>,
}

impl MemView {
    pub fn new(allocs: Vec<Arc<Alloc>>) -> Self {
        MemView { allocs, last: Cell::new(0) }
    }

    /// The allocation holding `addr..addr+n` and the offset in it.
    #[inline]
    pub fn lookup(&self, addr: u64, n: usize) -> Option<(&Alloc, usize)> {
        if let Some(a) = self.allocs.get(self.last.get())
            && let Some(off) = in_bounds(a, addr, n)
        {
            return Some((a, off));
        }
        self.lookup_slow(addr, n)
    }

    #[inline(never)]
    fn lookup_slow(&self, addr: u64, n: usize) -> Option<(&Alloc, usize)> {
        let i = self.allocs.partition_point(|a| a.base <= addr).checked_sub(1)?;
        let a = &self.allocs[i];
        let off = in_bounds(a, addr, n)?;
        self.last.set(i);
        Some((a, off))
    }

    /// Names the allocation nearest to a bad address, for an out-of-bounds message:
    /// `buffer #3 (1024 bytes) element offset 1030 (byte offset 4120)`.
    #[cold]
    pub fn locate(&self, addr: u64, elem: usize) -> String {
        let dist = |a: &Alloc| {
            if addr < a.base {
                a.base - addr
            } else {
                addr.saturating_sub(a.base + a.size as u64)
            }
        };
        match self.allocs.iter().min_by_key(|a| dist(a)) {
            None => format!("address {addr:#x} (no allocation exists)"),
            Some(a) => {
                let off = addr as i128 - a.base as i128;
                format!("{} element offset {} (byte offset {off})", a.describe(), off.div_euclid(elem.max(1) as i128))
            }
        }
    }

    /// Where an in-bounds access is: `buffer #3 (1024 bytes) element offset 5 (byte offset 20)`.
    #[cold]
    pub fn place(a: &Alloc, off: usize, elem: usize) -> String {
        format!("{} element offset {} (byte offset {off})", a.describe(), off / elem.max(1))
    }
}

impl Memory {
    /// Sets the name messages give an allocation (by any address inside it).
    pub fn label(&self, addr: u64, name: &str) -> Result<(), EmuError> {
        let (a, _) = self.find(addr, 0)?;
        *a.label.lock().unwrap() = Some(name.to_string());
        Ok(())
    }
}
