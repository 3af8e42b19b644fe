//! A workgroup's LDS (shared memory) with a per-byte shadow that catches reads
//! of unwritten LDS and data races: two different lanes touching the same byte
//! in one barrier interval where at least one writes.
//!
//! Shadow tags are `epoch << 16 | lane`. Epochs never repeat on a worker (a new
//! workgroup or a barrier starts a new one), so the shadow needs no clearing
//! between workgroups: a tag older than the workgroup's first epoch means
//! "unwritten by this workgroup".

/// Reader tag lane meaning "more than one lane read it".
const MANY: u64 = 0xFFFF;
/// Writer tag lane of the asynchronous proxy (TMA copies): ordered against
/// its readers by the mbarrier they waited on, not by a barrier.
const ASYNC: u64 = 0xFFFE;

pub(crate) struct Lds {
    data: Vec<u8>,
    /// Last writer of each byte.
    w: Vec<u64>,
    /// Reader of each byte in the latest epoch it was read in (`MANY`: several).
    r: Vec<u64>,
    /// Current barrier interval.
    epoch: u64,
    /// First epoch of the running workgroup.
    start: u64,
    /// The workgroup's mbarriers.
    pub mbars: crate::tma::Mbars,
    /// TMA copies issued on this worker so far.
    issued: u32,
    /// `issued` when each byte was last read: a copy landing on bytes read
    /// after it was issued overwrote a stage in use.
    r_issued: Vec<u32>,
}

/// The lane of tag `tag` if it is of epoch `e` and not lane `me`: another
/// lane's access in the same barrier interval.
#[inline]
fn other_lane(tag: u64, e: u64, me: u64) -> Option<u64> {
    if tag >> 16 == e && tag & 0xFFFF != me { Some(tag & 0xFFFF) } else { None }
}

impl Lds {
    pub fn new(bytes: usize) -> Self {
        Lds {
            data: vec![crate::memory::POISON; bytes],
            w: vec![0; bytes],
            r: vec![0; bytes],
            epoch: 0,
            start: 0,
            mbars: Default::default(),
            issued: 0,
            r_issued: vec![0; bytes],
        }
    }

    /// A TMA copy is issued: its number, which it lands with.
    pub fn issue(&mut self) -> u32 {
        self.issued = self.issued.wrapping_add(1);
        self.issued
    }

    /// A new workgroup starts: everything reads as unwritten again.
    pub fn begin_workgroup(&mut self) {
        self.epoch += 1;
        self.start = self.epoch;
        self.mbars.clear();
    }

    /// A barrier released the workgroup: a new interval.
    pub fn barrier(&mut self) {
        self.epoch += 1;
    }

    /// Barriers passed by this workgroup so far.
    pub fn barriers(&self) -> u64 {
        self.epoch - self.start
    }

    /// Checked read of `n` bytes at `off` by `lane` into `out`.
    #[inline]
    pub fn load(&mut self, lane: u32, off: usize, out: *mut u8, n: usize, align: usize) -> Result<(), String> {
        let (e, me) = self.access("read", lane, off, n, align)?;
        for b in off..off + n {
            let w = self.w[b];
            if w >> 16 < self.start {
                return Err(self.unwritten(off, n, b));
            }
            if let Some(other) = other_lane(w, e, me).filter(|&o| o != ASYNC) {
                return Err(self.race(lane, "reads", off, n, b, "wrote", other));
            }
            let r = self.r[b];
            self.r_issued[b] = self.issued;
            self.r[b] = if r >> 16 != e {
                e << 16 | me
            } else if r & 0xFFFF != me {
                e << 16 | MANY
            } else {
                r
            };
        }
        // SAFETY: `out` is valid for `n` bytes (a `T` of the caller); bounds checked.
        unsafe { std::ptr::copy_nonoverlapping(self.data.as_ptr().add(off), out, n) };
        Ok(())
    }

    /// Checked write of the `n` bytes at `v` to `off` by `lane`.
    #[inline]
    pub fn store(&mut self, lane: u32, off: usize, v: *const u8, n: usize, align: usize) -> Result<(), String> {
        let (e, me) = self.access("write", lane, off, n, align)?;
        for b in off..off + n {
            if let Some(other) = other_lane(self.w[b], e, me) {
                return Err(self.race(lane, "writes", off, n, b, "wrote", other));
            }
            if let Some(other) = other_lane(self.r[b], e, me) {
                return Err(self.race(lane, "writes", off, n, b, "read", other));
            }
            self.w[b] = e << 16 | me;
        }
        // SAFETY: `v` is valid for `n` bytes (a `T` of the caller); bounds checked.
        unsafe { std::ptr::copy_nonoverlapping(v, self.data.as_mut_ptr().add(off), n) };
        Ok(())
    }

    /// A TMA copy's 16 bytes landing at `off` (the asynchronous proxy),
    /// issued as copy number `issued` ([`Lds::issue`]): a race with any
    /// lane's write to them in the same barrier interval, and with a read
    /// made after the copy was issued (a stage read while being rewritten).
    /// Reads before the issue are taken as ordered by the producer's wait
    /// on the stage's empty mbarrier (or a barrier): the model does not
    /// track which arrivals that wait stood for.
    pub fn store_async(&mut self, off: usize, v: &[u8; 16], issued: u32) -> Result<(), String> {
        let (e, _) = self.access("TMA write", ASYNC as u32, off, 16, 16)?;
        for b in off..off + 16 {
            let read_after = self.r_issued[b].wrapping_sub(issued) as i32 >= 0;
            for (tag, did, applies) in [(self.w[b], "wrote", true), (self.r[b], "read", read_after)] {
                if let Some(other) = other_lane(tag, e, ASYNC).filter(|&o| o != ASYNC && applies) {
                    return Err(format!(
                        "LDS data race: a TMA copy lands on bytes {off}..{} while lane {} {did} byte {b} in the same barrier interval (after barrier #{}) after the copy was issued: a stage rewritten while in use",
                        off + 16,
                        if other == MANY { "(several)".to_string() } else { other.to_string() },
                        self.barriers()
                    ));
                }
            }
            self.w[b] = e << 16 | ASYNC;
        }
        self.data[off..off + 16].copy_from_slice(v);
        Ok(())
    }

    /// Checks an access's bounds and alignment; returns the current epoch
    /// and `lane`'s tag part.
    #[inline]
    fn access(&self, kind: &str, lane: u32, off: usize, n: usize, align: usize) -> Result<(u64, u64), String> {
        self.bounds(kind, off, n, align)?;
        Ok((self.epoch, lane as u64))
    }

    /// Bounds and alignment of an `n`-byte LDS object at `off`.
    pub fn check_bounds(&self, off: usize, n: usize, align: usize) -> Result<(), String> {
        self.bounds("access", off, n, align)
    }

    #[inline]
    fn bounds(&self, kind: &str, off: usize, n: usize, align: usize) -> Result<(), String> {
        if off.checked_add(n).is_none_or(|end| end > self.data.len()) {
            return Err(format!(
                "LDS {kind} of {n} bytes at byte {off} beyond launch-sized LDS of {} bytes",
                self.data.len()
            ));
        }
        if !off.is_multiple_of(align) {
            return Err(format!("misaligned LDS {kind} of {n} bytes at byte {off} (needs {align}-byte alignment)"));
        }
        Ok(())
    }

    #[cold]
    fn unwritten(&self, off: usize, n: usize, b: usize) -> String {
        format!("read of unwritten LDS: {n} bytes at byte {off}; byte {b} was never written by this workgroup")
    }

    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn race(&self, lane: u32, verb: &str, off: usize, n: usize, b: usize, other_did: &str, other: u64) -> String {
        let who = if other == MANY { "several other lanes".to_string() } else { format!("lane {other}") };
        format!(
            "LDS data race: lane {lane} {verb} {n} bytes at byte {off}, but {who} {other_did} byte {b} in the same barrier interval (after barrier #{}; a barrier is missing between them)",
            self.barriers()
        )
    }
}
