//! Hopper's tensor memory accelerator (`cp.async.bulk.tensor`, tiled mode)
//! and the transaction-counting mbarriers that guard its copies.
//!
//! A copy reads its box from global memory when issued and lands in LDS
//! late: when a lane first waits on its mbarrier. Until then the stage
//! holds what it held before, so a kernel that reads a stage without
//! waiting reads stale or unwritten bytes (caught by the reference or the
//! unwritten-LDS check). The bytes land with the asynchronous proxy's tag
//! (`Lds::store_async`): readers ordered by the mbarrier do not race with
//! them, and a copy landing on bytes a lane read in the same barrier
//! interval is a race (a stage overwritten while in use).
//!
//! The mbarrier follows the PTX ISA ("mbarrier"): a phase completes when
//! its expected arrivals have arrived and its transaction count is back to
//! zero; `test_wait.parity(p)` succeeds once the phase of parity `p` has
//! completed, i.e. while the current phase's parity differs from `p`.
//! A wait whose phase has not completed suspends the lane
//! ([`crate::lane::mbar_wait`]) until another lane's arrival or copy
//! completes it: a producer warp and consumer warps (warp specialisation)
//! run as on the GPU. A workgroup whose every live lane waits and in which
//! nothing happened over a whole round of the scheduler is deadlocked (a
//! violation naming the mbarrier, its arrivals and bytes).

use convgrad_types::params::TmaMap;
use std::collections::HashMap;

/// One mbarrier's state.
#[derive(Default)]
pub(crate) struct Mbar {
    count: u32,
    arrived: u32,
    /// Bytes expected minus bytes landed, this phase.
    tx: i64,
    /// Phases completed.
    completed: u32,
    /// Copies in flight: (LDS offset, 16 bytes, the copy's issue number).
    pending: Vec<(usize, [u8; 16], u32)>,
    pending_bytes: i64,
}

/// The mbarriers of one workgroup, by LDS offset.
#[derive(Default)]
pub(crate) struct Mbars {
    by_off: HashMap<usize, Mbar>,
}

impl Mbars {
    pub fn clear(&mut self) {
        self.by_off.clear();
    }

    pub fn init(&mut self, off: usize, count: u32) -> Result<(), String> {
        if count == 0 {
            return Err(format!("mbarrier.init at LDS byte {off} with an arrival count of 0"));
        }
        self.by_off.insert(off, Mbar { count, ..Default::default() });
        Ok(())
    }

    fn get(&mut self, off: usize, what: &str) -> Result<&mut Mbar, String> {
        self.by_off.get_mut(&off).ok_or_else(|| format!("{what} on LDS byte {off}, where no mbarrier was initialised"))
    }

    /// `mbarrier.arrive.expect_tx`: one arrival, `bytes` more expected.
    pub fn arrive_expect_tx(&mut self, off: usize, bytes: u32) -> Result<(), String> {
        let m = self.get(off, "mbarrier.arrive.expect_tx")?;
        if m.arrived >= m.count {
            return Err(format!("mbarrier at LDS byte {off}: more than its {} arrivals in one phase", m.count));
        }
        m.arrived += 1;
        m.tx += bytes as i64;
        m.try_complete();
        Ok(())
    }

    /// `mbarrier.arrive`: one arrival, no transaction count.
    pub fn arrive(&mut self, off: usize) -> Result<(), String> {
        self.arrive_expect_tx(off, 0)
    }

    /// The state of `off`'s mbarrier, for a deadlock report.
    pub fn describe(&self, off: usize) -> String {
        match self.by_off.get(&off) {
            Some(m) => format!(
                "mbarrier at LDS byte {off}: {} phases completed, {} of {} arrivals, {} bytes expected and not landed",
                m.completed, m.arrived, m.count, m.tx - m.pending_bytes
            ),
            None => format!("LDS byte {off}: no mbarrier"),
        }
    }

    /// A copy whose bytes complete on the mbarrier at `off`.
    pub fn add_copy(&mut self, off: usize, chunks: Vec<(usize, [u8; 16])>, issued: u32) -> Result<(), String> {
        let m = self.get(off, "cp.async.bulk.tensor's complete_tx")?;
        m.pending_bytes += 16 * chunks.len() as i64;
        m.pending.extend(chunks.into_iter().map(|(at, v)| (at, v, issued)));
        Ok(())
    }

    /// Lands the copies in flight on `off`'s mbarrier (through `land`) and
    /// says whether the phase of parity `parity` has completed (`false`:
    /// not yet, the waiting lane suspends).
    pub fn wait(
        &mut self,
        off: usize,
        parity: u32,
        mut land: impl FnMut(usize, &[u8; 16], u32) -> Result<(), String>,
    ) -> Result<bool, String> {
        let m = self.get(off, "mbarrier.try_wait.parity")?;
        if m.completed & 1 != parity & 1 {
            return Ok(true);
        }
        for (at, bytes, issued) in std::mem::take(&mut m.pending) {
            land(at, &bytes, issued)?;
        }
        m.tx -= std::mem::take(&mut m.pending_bytes);
        m.try_complete();
        if m.tx < 0 {
            return Err(format!(
                "mbarrier at LDS byte {off}: {} bytes landed beyond the transaction count expected (arrive.expect_tx too small)",
                -m.tx
            ));
        }
        Ok(m.completed & 1 != parity & 1)
    }
}

impl Mbar {
    fn try_complete(&mut self) {
        if self.arrived == self.count && self.tx == 0 {
            self.completed += 1;
            self.arrived = 0;
        }
    }
}

/// The problems of `m` as a map for a copy to LDS byte `dst`, if any.
pub(crate) fn check_map(m: &TmaMap, dst: usize) -> Result<(), String> {
    if m.magic != TmaMap::MAGIC {
        return Err("cp.async.bulk.tensor: the tensor map slot holds no map (the host did not fill it)".into());
    }
    let rank = m.rank as usize;
    if !(1..=5).contains(&rank) {
        return Err(format!("tensor map of rank {rank} (1 to 5)"));
    }
    if !matches!(m.elem_bytes, 1 | 2 | 4) || !m.base.is_multiple_of(16) {
        return Err(format!("tensor map: element of {} bytes, base {:#x} (needs 16-byte alignment)", m.elem_bytes, m.base));
    }
    for d in 0..rank {
        if m.boxes[d] == 0 || m.boxes[d] > 256 || m.dims[d] == 0 {
            return Err(format!("tensor map: dimension {d} of {} elements with a box of {}", m.dims[d], m.boxes[d]));
        }
        if m.step(d) > 8 || (d == 0 && m.step(0) != 1) {
            return Err(format!("tensor map: element stride {} in dimension {d} (1 to 8; 1 in dimension 0)", m.step(d)));
        }
        if d > 0 && !m.strides[d - 1].is_multiple_of(16) {
            return Err(format!("tensor map: stride of dimension {d} is {} bytes (a multiple of 16)", m.strides[d - 1]));
        }
    }
    let inner = m.boxes[0] * m.elem_bytes;
    if !inner.is_multiple_of(16) || (m.swizzle == 128 && inner > 128) || !matches!(m.swizzle, 0 | 128) {
        return Err(format!("tensor map: inner box of {inner} bytes with swizzle {} (a multiple of 16, at most the swizzle span)", m.swizzle));
    }
    if !dst.is_multiple_of(if m.swizzle == 128 { 1024 } else { 128 }) {
        return Err(format!("cp.async.bulk.tensor to LDS byte {dst}: needs 128-byte alignment (1024 with the 128-byte swizzle)"));
    }
    Ok(())
}

/// The 16-byte chunks of the box at `coords` for LDS byte `dst`, read
/// element by element through `read` (`None`: outside the tensor, zero).
pub(crate) fn gather(
    m: &TmaMap,
    dst: usize,
    coords: [i32; 5],
    mut read: impl FnMut(u64, usize) -> Result<[u8; 4], String>,
) -> Result<Vec<(usize, [u8; 16])>, String> {
    let rank = m.rank as usize;
    let eb = m.elem_bytes as usize;
    let total: usize = (0..rank).map(|d| m.box_elems(d) as usize).product();
    let mut chunks = Vec::with_capacity(total * eb / 16);
    let mut chunk = [0u8; 16];
    for i in 0..total {
        let (mut rest, mut addr, mut inside) = (i, m.base, true);
        for (d, &at) in coords.iter().enumerate().take(rank) {
            let b = m.box_elems(d) as usize;
            let c = at as i64 + (rest % b) as i64 * m.step(d) as i64;
            rest /= b;
            inside &= c >= 0 && c < m.dims[d] as i64;
            let stride = if d == 0 { eb as u64 } else { m.strides[d - 1] };
            addr = addr.wrapping_add((c.max(0) as u64).wrapping_mul(stride));
        }
        let lin = i * eb;
        if inside {
            let v = read(addr, eb)?;
            chunk[lin % 16..lin % 16 + eb].copy_from_slice(&v[..eb]);
        } else {
            chunk[lin % 16..lin % 16 + eb].fill(0);
        }
        if (lin + eb).is_multiple_of(16) {
            let at = dst + lin - lin % 16;
            // The 128-byte swizzle: address bits 4..6 take bits 7..9 (XOR).
            let at = if m.swizzle == 128 { at ^ (((at >> 7) & 7) << 4) } else { at };
            chunks.push((at, chunk));
        }
    }
    Ok(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map2d(dims: [u32; 2], boxes: [u32; 2], swizzle: u32) -> TmaMap {
        TmaMap {
            magic: TmaMap::MAGIC,
            rank: 2,
            base: 0x1000,
            dims: [dims[0], dims[1], 1, 1, 1],
            elem_bytes: 2,
            strides: [dims[0] as u64 * 2, 0, 0, 0],
            boxes: [boxes[0], boxes[1], 1, 1, 1],
            swizzle,
            elem_strides: [1; 5],
            _pad: 0,
        }
    }

    /// Element (x, y) of a 2-D f16 tensor at `base` reads back as `x + 1000 y`.
    fn read(m: &TmaMap) -> impl FnMut(u64, usize) -> Result<[u8; 4], String> + '_ {
        move |addr, _| {
            let e = (addr - m.base) / 2;
            let (x, y) = (e % m.dims[0] as u64, e / m.dims[0] as u64);
            let b = ((x + 1000 * y) as u16).to_le_bytes();
            Ok([b[0], b[1], 0, 0])
        }
    }

    fn at(chunks: &[(usize, [u8; 16])], byte: usize) -> u16 {
        let (off, c) = chunks.iter().find(|(o, _)| (*o..*o + 16).contains(&byte)).unwrap();
        u16::from_le_bytes([c[byte - off], c[byte - off + 1]])
    }

    #[test]
    fn boxes_land_swizzled_with_zeros_outside() {
        // Rows of 104 f16 (208 bytes, a 16-byte multiple); the box runs
        // past the last column and the last row.
        let m = map2d([104, 50], [64, 8], 128);
        check_map(&m, 2048).unwrap();
        let chunks = gather(&m, 2048, [60, 45, 0, 0, 0], read(&m)).unwrap();
        assert_eq!(chunks.len(), 64 * 8 * 2 / 16);
        for (y, x) in (0..8).flat_map(|y| (0..64).map(move |x| (y, x))) {
            let lin = 2048 + y * 128 + x * 2;
            let sw = lin ^ (((lin >> 7) & 7) << 4);
            let (gx, gy) = (60 + x, 45 + y);
            let want = if gx < 104 && gy < 50 { (gx + 1000 * gy) as u16 } else { 0 };
            assert_eq!(at(&chunks, sw), want, "box element ({x}, {y})");
        }
    }

    #[test]
    fn element_strides_read_every_eth_element() {
        // Rows 3, 5, 7, ... of a 20-row tensor (a box of 16 rows by 2): 8
        // rows, the last two past the edge; dimension 0 unstrided.
        let m = TmaMap { elem_strides: [1, 2, 1, 1, 1], ..map2d([64, 20], [64, 16], 128) };
        check_map(&m, 0).unwrap();
        assert_eq!(m.box_bytes(), 64 * 8 * 2);
        let chunks = gather(&m, 0, [0, 3, 0, 0, 0], read(&m)).unwrap();
        assert_eq!(chunks.len(), 64 * 8 * 2 / 16);
        for (r, x) in (0..8).flat_map(|r| (0..64).map(move |x| (r, x))) {
            let lin = r * 128 + x * 2;
            let sw = lin ^ (((lin >> 7) & 7) << 4);
            let gy = 3 + 2 * r;
            let want = if gy < 20 { (x + 1000 * gy) as u16 } else { 0 };
            assert_eq!(at(&chunks, sw), want, "box row {r} element {x}");
        }
        let bad = |e: [u32; 5]| check_map(&TmaMap { elem_strides: e, ..m }, 0).is_err();
        assert!(bad([1, 9, 1, 1, 1]), "stride past 8");
        assert!(bad([2, 1, 1, 1, 1]), "dimension 0 strided");
    }

    #[test]
    fn maps_that_break_the_rules_are_refused() {
        let good = map2d([64, 64], [64, 64], 128);
        assert!(check_map(&good, 1024).is_ok());
        assert!(check_map(&good, 128).is_err(), "swizzled box off its 1024-byte repeat");
        assert!(check_map(&map2d([64, 64], [128, 8], 128), 0).is_err(), "inner box past the swizzle span");
        assert!(check_map(&map2d([100, 64], [64, 8], 128), 0).is_err(), "row stride of 200 bytes");
        assert!(check_map(&TmaMap { magic: 0, ..good }, 0).is_err(), "unfilled slot");
        assert!(check_map(&TmaMap { base: 8, ..good }, 0).is_err(), "misaligned base");
    }

    #[test]
    fn phases_complete_on_arrival_and_bytes() {
        let mut b = Mbars::default();
        b.init(0, 1).unwrap();
        // Parity 1 before any phase completed: passes at once (PTX semantics).
        assert!(b.wait(0, 1, |_, _, _| Ok(())).unwrap());
        // Phase 0 without its arrival: not yet (the lane would suspend).
        assert!(!b.wait(0, 0, |_, _, _| Ok(())).unwrap());
        b.arrive_expect_tx(0, 32).unwrap();
        b.add_copy(0, vec![(0, [1; 16]), (16, [2; 16])], 1).unwrap();
        let mut landed = Vec::new();
        let done = b.wait(0, 0, |at, _, _| {
            landed.push(at);
            Ok(())
        });
        assert!(done.unwrap());
        assert_eq!(landed, [0, 16]);
        // Phase 1 has no arrival yet: not complete; a plain arrival completes it.
        assert!(!b.wait(0, 1, |_, _, _| Ok(())).unwrap());
        b.arrive(0).unwrap();
        assert!(b.wait(0, 1, |_, _, _| Ok(())).unwrap());
        // Too few bytes expected.
        b.arrive_expect_tx(0, 16).unwrap();
        b.add_copy(0, vec![(0, [1; 16]), (16, [2; 16])], 1).unwrap();
        assert!(b.wait(0, 0, |_, _, _| Ok(())).is_err());
    }
}
