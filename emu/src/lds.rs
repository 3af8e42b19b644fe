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
    /// `wgmma` operand reads not yet retired ([`Lds::wgmma_hold`]).
    held: HeldReads,
}

/// LDS bytes `wgmma`s read that their warps have not yet retired with
/// `wgmma.wait_group`. The emulator executes a `wgmma` when it is issued,
/// but on the GPU it reads its operands any time until the wait: writing
/// such a byte (a lane's store or a TMA copy) before the wait is a race.
#[derive(Default)]
struct HeldReads {
    /// Per byte, the pending reads holding it.
    count: Vec<u16>,
    /// Per warp: element offsets (2 bytes each) of its uncommitted `wgmma`s.
    open: std::collections::HashMap<u32, Vec<u32>>,
    /// Per warp: its committed groups, oldest first.
    groups: std::collections::HashMap<u32, std::collections::VecDeque<Vec<u32>>>,
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
            held: HeldReads { count: vec![0; bytes], ..Default::default() },
        }
    }

    /// Warp `warp`'s `wgmma` read the 2-byte elements at `offs` (already
    /// checked by [`Lds::load`]): they stay held until the warp retires the
    /// group they are committed in.
    pub fn wgmma_hold(&mut self, warp: u32, offs: &[u32]) {
        for &o in offs {
            self.held.count[o as usize] += 1;
            self.held.count[o as usize + 1] += 1;
        }
        self.held.open.entry(warp).or_default().extend_from_slice(offs);
    }

    /// `wgmma.commit_group` of warp `warp`: its open reads become a group.
    pub fn wgmma_commit(&mut self, warp: u32) {
        let open = self.held.open.remove(&warp).unwrap_or_default();
        self.held.groups.entry(warp).or_default().push_back(open);
    }

    /// `wgmma.wait_group pending` of warp `warp`: all but its `pending`
    /// newest groups are done reading, which counts as a read now (for the
    /// TMA copies issued before: [`Lds::store_async`]).
    pub fn wgmma_wait(&mut self, warp: u32, pending: u32) {
        let Some(groups) = self.held.groups.get_mut(&warp) else { return };
        while groups.len() > pending as usize {
            let Some(g) = groups.pop_front() else { break };
            for o in g {
                for b in [o as usize, o as usize + 1] {
                    self.held.count[b] -= 1;
                    self.r_issued[b] = self.issued;
                }
            }
        }
    }

    /// An error if a `wgmma` still reads byte `b` (the writer `who`).
    fn check_held(&self, who: &str, off: usize, n: usize, b: usize) -> Result<(), String> {
        if self.held.count[b] == 0 {
            return Ok(());
        }
        let mut warps: Vec<u32> = self
            .held
            .groups
            .iter()
            .filter(|(_, gs)| gs.iter().any(|g| g.iter().any(|&o| (o as usize..o as usize + 2).contains(&b))))
            .map(|(&w, _)| w)
            .chain(self.held.open.iter().filter(|(_, g)| g.iter().any(|&o| (o as usize..o as usize + 2).contains(&b))).map(|(&w, _)| w))
            .collect();
        warps.sort_unstable();
        let warps: Vec<String> = warps.iter().map(u32::to_string).collect();
        Err(format!(
            "LDS data race: {who} writes bytes {off}..{} while a wgmma of warp {} still reads byte {b} (its group not yet retired by wgmma.wait_group)",
            off + n,
            warps.join(", ")
        ))
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
        // Reads of the last workgroup's wgmmas never waited for end with it.
        let (open, groups) = (std::mem::take(&mut self.held.open), std::mem::take(&mut self.held.groups));
        for o in open.into_values().chain(groups.into_values().flatten()).flatten() {
            self.held.count[o as usize] = 0;
            self.held.count[o as usize + 1] = 0;
        }
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
            self.check_held(&format!("lane {lane}"), off, n, b)?;
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
            self.check_held("a TMA copy", off, 16, b)?;
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
