//! Operations of the running lane (fiber). Called from `device/src/arch/emu.rs`.
//! Outside a launch they panic with a clear message.
//!
//! Every check failure ends the launch with an [`crate::EmuError::Violation`]
//! naming kernel, workgroup, lane, buffer and index. The fast paths take no lock
//! and allocate nothing; only barriers and matrix instructions switch fibers.

use crate::exec::{Call, MmaCall, WgmmaCall, current};
use crate::fiber::{Resume, Suspend, abort_lane, raise};
use crate::matrix::wgmma::Desc;
use crate::matrix::{MatrixOp, WgmmaOp};
use crate::memory::MemView;
use std::sync::atomic::{AtomicU32, Ordering};

/// Thread index in the workgroup.
#[inline]
pub fn thread_id() -> u32 {
    current().cur.get()
}

/// Workgroup index.
#[inline]
pub fn block_id() -> [u32; 3] {
    current().block_id.get()
}

/// Workgroup barrier: suspends until every live lane of the workgroup arrives.
/// Lanes that returned while others wait here are a barrier-divergence violation.
pub fn barrier() {
    wait(Suspend::Barrier)
}

/// Hands control to the scheduler until it resumes this lane.
fn wait(s: Suspend) {
    let w = current();
    let y = w.slots[w.cur.get() as usize].yielder.get();
    // SAFETY: set by the fiber running this lane; lives on its stack.
    match unsafe { &*y }.suspend(s) {
        Resume::Continue => {}
        _ => abort_lane(),
    }
}

/// Checked global load of one `T` at `p`: `p` must lie inside a live
/// allocation, be aligned for `T`, and every byte must have been written.
#[inline]
#[allow(clippy::not_unsafe_ptr_arg_deref)] // safe: `p` is checked against the live allocations first
pub fn global_load<T: Copy>(p: *const T) -> T {
    let (addr, n, al) = (p as u64, size_of::<T>(), align_of::<T>());
    match current().mem.lookup(addr, n) {
        // SAFETY: inside a live allocation, aligned.
        Some((a, off)) if a.is_written(off, n) && addr.is_multiple_of(al as u64) => unsafe { p.read() },
        _ => global_fault("read", addr, n, al),
    }
}

/// Checked global store (marks the bytes written).
#[inline]
#[allow(clippy::not_unsafe_ptr_arg_deref)] // safe: as `global_load`
pub fn global_store<T: Copy>(p: *mut T, v: T) {
    let (addr, n, al) = (p as u64, size_of::<T>(), align_of::<T>());
    match current().mem.lookup(addr, n) {
        Some((a, off)) if addr.is_multiple_of(al as u64) => {
            a.mark_written(off, n);
            // SAFETY: inside a live allocation, aligned.
            unsafe { p.write(v) }
        }
        _ => global_fault("write", addr, n, al),
    }
}

/// Atomic f32 add (atomic with respect to other workgroups running in parallel).
/// The target must have been written before (kernels zero their accumulators).
pub fn atomic_add_f32(p: *mut f32, v: f32) {
    atomic_rmw(p as u64, |x| (f32::from_bits(x) + v).to_bits());
}

/// Four f32 atomic adds to `p[0..4]` as one 16-byte vector (NVIDIA sm_90
/// `red.global.add.v4.f32`): `p` must be 16-byte aligned. Each element is
/// added atomically on its own, as on the GPU.
pub fn atomic_add_f32x4(p: *mut f32, v: [f32; 4]) {
    if !(p as u64).is_multiple_of(16) {
        global_fault("atomic add", p as u64, 16, 16)
    }
    for (i, x) in v.into_iter().enumerate() {
        atomic_add_f32(p.wrapping_add(i), x);
    }
}

/// `a * b + c` rounded once (`v_fma_f32`, `fma.rn.f32`). Here because the device
/// crate is `no_std` and `core` has no stable fused multiply-add.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

/// Packed f16 atomic add (`global_atomic_pk_add_f16`, `red.global.add.noftz.f16x2`):
/// adds `v[0]`, `v[1]` (f16 bits) to the two halves at `p`, each rounded to f16.
pub fn atomic_add_f16x2(p: *mut [u16; 2], v: [u16; 2]) {
    use half::f16;
    let add = |x: u16, y: u16| f16::from_f32(f16::from_bits(x).to_f32() + f16::from_bits(y).to_f32()).to_bits();
    atomic_rmw(p as u64, |x| pack(add(x as u16, v[0]), add((x >> 16) as u16, v[1])));
}

/// Packed bf16 atomic add (`global_atomic_pk_add_bf16`, `red.global.add.noftz.bf16x2`).
pub fn atomic_add_bf16x2(p: *mut [u16; 2], v: [u16; 2]) {
    use half::bf16;
    let add = |x: u16, y: u16| bf16::from_f32(bf16::from_bits(x).to_f32() + bf16::from_bits(y).to_f32()).to_bits();
    atomic_rmw(p as u64, |x| pack(add(x as u16, v[0]), add((x >> 16) as u16, v[1])));
}

fn pack(lo: u16, hi: u16) -> u32 {
    lo as u32 | (hi as u32) << 16
}

/// Atomic 32-bit increment; returns the old value (split-K arrival counters).
pub fn atomic_inc_u32(p: *mut u32) -> u32 {
    atomic_rmw(p as u64, |x| x.wrapping_add(1))
}

/// Device-scope fence: workgroups run on host threads, so a sequentially
/// consistent fence orders this lane's global accesses as the GPU's does.
pub fn fence_device() {
    std::sync::atomic::fence(Ordering::SeqCst);
}

/// Checked 32-bit compare-and-swap loop on host memory; returns the old value.
#[inline]
fn atomic_rmw(addr: u64, f: impl Fn(u32) -> u32) -> u32 {
    match current().mem.lookup(addr, 4) {
        Some((a, off)) if a.is_written(off, 4) && addr.is_multiple_of(4) => {
            // SAFETY: inside a live allocation, 4-aligned; every access to it
            // during the launch that may race is atomic or a kernel bug.
            let cell = unsafe { AtomicU32::from_ptr(addr as *mut u32) };
            let mut old = cell.load(Ordering::Relaxed);
            while let Err(now) = cell.compare_exchange_weak(old, f(old), Ordering::AcqRel, Ordering::Relaxed) {
                old = now;
            }
            old
        }
        _ => global_fault("atomic add", addr, 4, 4),
    }
}

/// Says what is wrong with a global access that failed the fast checks.
#[cold]
#[inline(never)]
fn global_fault(kind: &str, addr: u64, n: usize, align: usize) -> ! {
    let mem = &current().mem;
    let Some((a, off)) = mem.lookup(addr, n) else {
        raise(format!("out-of-bounds global {kind} of {n} bytes at {}", mem.locate(addr, n)))
    };
    let at = MemView::place(a, off, n);
    if !addr.is_multiple_of(align as u64) {
        raise(format!("misaligned global {kind} of {n} bytes at {at} (needs {align}-byte alignment)"))
    }
    let b = a.first_unwritten(off, n).unwrap_or(off);
    let hint = if kind == "atomic add" { " (zero accumulators before adding to them)" } else { " (buffers start poisoned)" };
    raise(format!(
        "{kind} of unwritten global memory: {n} bytes at {at}; byte offset {b} was never written by the host or a kernel{hint}"
    ))
}

/// Checked LDS load at byte offset `off`: inside the launch-sized LDS, aligned
/// for `T`, written before by this workgroup, no race with another lane's write
/// since the last barrier.
#[inline]
pub fn lds_load<T: Copy>(off: usize) -> T {
    let w = current();
    let mut v = std::mem::MaybeUninit::<T>::uninit();
    // SAFETY: no other reference to the LDS exists while this lane runs.
    let lds = unsafe { &mut *w.lds.get() };
    match lds.load(w.cur.get(), off, v.as_mut_ptr().cast(), size_of::<T>(), align_of::<T>()) {
        // SAFETY: all bytes of `v` were copied from written LDS.
        Ok(()) => unsafe { v.assume_init() },
        Err(what) => raise(what),
    }
}

/// Checked LDS store (see [`lds_load`] for the rules).
#[inline]
pub fn lds_store<T: Copy>(off: usize, v: T) {
    let w = current();
    // SAFETY: as in `lds_load`.
    let lds = unsafe { &mut *w.lds.get() };
    if let Err(what) = lds.store(w.cur.get(), off, (&raw const v).cast(), size_of::<T>(), align_of::<T>()) {
        raise(what)
    }
}

/// Wave-collective matrix instruction: every lane of the wave calls it with its
/// operand registers; `a`, `b` hold 16-bit elements in the LLVM vector element
/// order, `c` and `d` f32 accumulators. Returns when the whole wave has issued it.
/// The instruction must belong to the emulated architecture and the slices must
/// have the lengths of [`MatrixOp::regs`].
pub fn mma(op: MatrixOp, a: &[u16], b: &[u16], c: &[f32], d: &mut [f32]) {
    let w = current();
    if !w.arch.executes(op) {
        raise(format!(
            "{} is not an instruction of {} (it runs on {:?} GPUs)",
            op.mnemonic(),
            w.arch.name(),
            op.family()
        ))
    }
    let r = op.regs();
    if (a.len(), b.len(), c.len(), d.len()) != (r.a, r.b, r.c, r.c) {
        raise(format!(
            "{} takes per lane a: {}, b: {}, c: {}, d: {} elements; got {}, {}, {}, {}",
            op.mnemonic(),
            r.a,
            r.b,
            r.c,
            r.c,
            a.len(),
            b.len(),
            c.len(),
            d.len()
        ))
    }
    let call = MmaCall { op, a: a.as_ptr(), b: b.as_ptr(), c: c.as_ptr(), d: d.as_mut_ptr() };
    w.slots[w.cur.get() as usize].call.set(Some(Call::Mma(call)));
    wait(Suspend::Mma)
}

/// One warp's part of a warpgroup `wgmma.mma_async` (D = A*B + C), executed when all 32 lanes of the warp called it.
///
/// `wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}` with A (64 x 16)
/// and B (16 x N) in LDS, described by the shared-memory matrix descriptors
/// `desc_a`, `desc_b`: start address `(d & 0x3FFF) << 4`, LBO `((d >> 16) & 0x3FFF) << 4`,
/// SBO `((d >> 32) & 0x3FFF) << 4` bytes, every other bit 0 (no swizzle, base offset 0).
/// Element (mn, k) (mn = row m of A, column n of B) lies at byte
/// `start + (mn%8)*16 + (mn/8)*SBO + (k%8)*2 + (k/8)*LBO` when K-major, and
/// `start + (mn%8)*2 + (mn/8)*SBO + (k%8)*16 + (k/8)*LBO` when MN-major
/// (`op.tnsp_a` / `op.tnsp_b`).
///
/// Warp `w` (warp index in the workgroup mod 4) of the warpgroup owns rows
/// `16w..16w+15` of D; lane `l`'s slot `e` of `c`/`d` (`n/2` each) is
/// D[16w + l/4 + 8*((e/2)%2)][8*(e/4) + 2*(l%4) + e%2]. The emulator executes a
/// warp's part as soon as its 32 lanes called it, reading its 16 rows of A and all
/// of B through the checked LDS loads (bounds, unwritten bytes, races), on behalf
/// of the warp's first lane. Numerics as mma.sync: exact products, f32 sum
/// `C + p_0 + ... + p_15` in that order.
///
/// Violations: an arch without wgmma (only sm_90 has it), a lane whose warpgroup
/// the workgroup does not fill (128 threads), a bad N, `c`/`d` not `n/2` long,
/// a swizzled or otherwise unsupported descriptor, lanes of one warp passing
/// different ops or descriptors, a warp mixing it with [`mma`], a lane of the warp
/// that never gets there, an LDS read out of bounds or of unwritten bytes.
pub fn wgmma(op: WgmmaOp, desc_a: u64, desc_b: u64, c: &[f32], d: &mut [f32]) {
    let w = current();
    if !w.arch.has_wgmma() {
        raise(format!("{} is not an instruction of {} (wgmma needs sm_90)", op.mnemonic(), w.arch.name()))
    }
    // A warp-specialised workgroup may hold a partial warpgroup (a producer
    // warp) that never issues wgmma: the issuing lane's warpgroup must be whole.
    let group_end = (w.cur.get() as usize / 128 + 1) * 128;
    if group_end > w.slots.len() {
        raise(format!(
            "{}: lane {} is in a warpgroup the workgroup's {} threads do not fill; wgmma needs whole warpgroups (128 threads)",
            op.mnemonic(),
            w.cur.get(),
            w.slots.len()
        ))
    }
    if let Err(what) = op.check() {
        raise(what)
    }
    if (c.len(), d.len()) != (op.regs(), op.regs()) {
        raise(format!(
            "{} takes per lane c: {n}, d: {n} elements (N/2); got {}, {}",
            op.mnemonic(),
            c.len(),
            d.len(),
            n = op.regs()
        ))
    }
    for (name, desc) in [("A", desc_a), ("B", desc_b)] {
        if let Err(what) = Desc::decode(desc) {
            raise(format!("{} operand {name}: {what}", op.mnemonic()))
        }
    }
    let call = WgmmaCall { op, desc_a, desc_b, c: c.as_ptr(), d: d.as_mut_ptr() };
    w.slots[w.cur.get() as usize].call.set(Some(Call::Wgmma(call)));
    wait(Suspend::Mma)
}

/// `wgmma.fence.sync.aligned`: a no-op here. The emulator executes a wgmma when
/// its warp issues it (reading LDS and writing the accumulators at once), so no
/// ordering against register or LDS accesses is needed.
pub fn wgmma_fence() {
    let _ = current();
}

/// `wgmma.commit_group.sync.aligned`: the warp's wgmmas since its last commit
/// form a group, whose LDS operands stay held until [`wgmma_wait`] retires
/// it (acted on by the warp's first lane; every lane calls it).
pub fn wgmma_commit() {
    let w = current();
    let lane = w.cur.get();
    if lane.is_multiple_of(32) {
        lds_mut().wgmma_commit(lane / 32);
    }
}

/// `wgmma.wait_group.sync.aligned pending`: retires all but the `pending`
/// newest groups of the warp. The emulator executes each wgmma at issue time
/// but keeps its LDS operands held until here: a lane store or a TMA copy
/// writing them before is a race. Reading the accumulators before the wait
/// is not caught here (the GPU runs catch it).
pub fn wgmma_wait(pending: u32) {
    let w = current();
    let lane = w.cur.get();
    if lane.is_multiple_of(32) {
        lds_mut().wgmma_wait(lane / 32, pending);
    }
}

/// Aborts the kernel with a violation naming this lane.
pub fn trap() -> ! {
    let _ = current();
    raise("trap: the kernel called arch::trap()".into())
}

/// The LDS of the running workgroup, for the TMA and mbarrier operations.
fn lds_mut() -> &'static mut crate::lds::Lds {
    // SAFETY: no other reference to the LDS exists while this lane runs.
    unsafe { &mut *current().lds.get() }
}

/// Checks that the running arch has Hopper's TMA and mbarriers and that
/// `off` is an 8-byte slot inside the LDS.
fn mbar_slot(what: &str, off: usize) -> usize {
    let w = current();
    if !w.arch.has_wgmma() {
        raise(format!("{what} is not an instruction of {} (it needs sm_90)", w.arch.name()))
    }
    if let Err(e) = lds_mut().check_bounds(off, 8, 8) {
        raise(format!("{what}: {e}"))
    }
    off
}

/// `mbarrier.init.shared::cta.b64 [off], count`.
pub fn mbar_init(off: usize, count: u32) {
    let off = mbar_slot("mbarrier.init", off);
    if let Err(e) = lds_mut().mbars.init(off, count) {
        raise(e)
    }
}

/// `mbarrier.arrive.expect_tx.shared::cta.b64 _, [off], bytes`.
pub fn mbar_arrive_expect_tx(off: usize, bytes: u32) {
    let off = mbar_slot("mbarrier.arrive.expect_tx", off);
    if let Err(e) = lds_mut().mbars.arrive_expect_tx(off, bytes) {
        raise(e)
    }
    progressed();
}

/// `mbarrier.arrive.shared::cta.b64 _, [off]`: one arrival (a consumer
/// releasing a stage to the producer).
pub fn mbar_arrive(off: usize) {
    let off = mbar_slot("mbarrier.arrive", off);
    if let Err(e) = lds_mut().mbars.arrive(off) {
        raise(e)
    }
    progressed();
}

/// Something happened that may let a waiting lane go on (the scheduler's
/// deadlock test counts these).
fn progressed() {
    let w = current();
    w.progress.set(w.progress.get() + 1);
}

/// `mbarrier.try_wait.parity` in a loop until the phase of `parity` has
/// completed; lands the TMA copies in flight on it first (see the `tma`
/// module for the model). Until then the lane is suspended and tested again
/// after the other lanes have run (another warp's arrival may complete it).
pub fn mbar_wait(off: usize, parity: u32) {
    let off = mbar_slot("mbarrier.try_wait.parity", off);
    let mut blocked = false;
    loop {
        let lds = lds_mut();
        let mut mbars = std::mem::take(&mut lds.mbars);
        let r = mbars.wait(off, parity, |at, bytes, issued| lds.store_async(at, bytes, issued));
        lds.mbars = mbars;
        match r {
            Err(e) => raise(e),
            Ok(true) => {
                if blocked {
                    progressed();
                }
                return;
            }
            Ok(false) => {
                let w = current();
                w.slots[w.cur.get() as usize].waits_on.set(Some((off, parity)));
                blocked = true;
                wait(Suspend::Blocked);
            }
        }
    }
}

/// `barrier.sync.aligned id, threads`: waits until `threads` lanes (whole
/// warps) have arrived at named barrier `id` (1 to 15; 0 is the
/// workgroup's [`barrier`]). Orders LDS like [`barrier`] (the race model
/// has one interval count for the workgroup, so it orders the lanes that
/// are not at this barrier too: a limit of the model).
pub fn named_barrier(id: u32, threads: u32) {
    let w = current();
    if !w.arch.has_wgmma() {
        raise(format!("named barrier {id}: modelled for sm_90 only ({} has none here)", w.arch.name()))
    }
    let block = w.slots.len() as u32;
    let wave = w.arch.wave();
    if !(1..16).contains(&id) || threads == 0 || !threads.is_multiple_of(wave) || threads > block {
        raise(format!(
            "bar.sync {id}, {threads}: id must be 1 to 15 and the count a multiple of {wave} up to the workgroup's {block} threads"
        ))
    }
    wait(Suspend::Named { id, threads })
}

/// `cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
/// [dst], [map, coords], [mbar]`: the box of the [`TmaMap`] at `map` (a
/// [`convgrad_types::params::ConvArgs::tma`] slot) at `coords`, to LDS byte
/// `dst`, its bytes completing on the mbarrier at `mbar`. Elements outside
/// the tensor read as zero; every element inside must be written memory.
/// The instruction names its dimensions (`.3d`, `.5d`: `dims`), which must
/// be the map's rank (coordinates past them are ignored).
///
/// [`TmaMap`]: convgrad_types::params::TmaMap
pub fn tma_load(dst: usize, mbar: usize, map: *const u8, coords: [i32; 5], dims: u32) {
    use convgrad_types::params::TmaMap;
    let mbar = mbar_slot("cp.async.bulk.tensor", mbar);
    let m: TmaMap = global_load(map as *const TmaMap);
    if let Err(e) = crate::tma::check_map(&m, dst) {
        raise(e)
    }
    if m.rank != dims {
        raise(format!("cp.async.bulk.tensor.{dims}d on a tensor map of rank {}", m.rank))
    }
    let bytes = m.box_bytes() as usize;
    if let Err(e) = lds_mut().check_bounds(dst, bytes, 16) {
        raise(format!("cp.async.bulk.tensor: {e}"))
    }
    let mem = &current().mem;
    let read = |addr: u64, n: usize| -> Result<[u8; 4], String> {
        match mem.lookup(addr, n) {
            Some((a, off)) if a.is_written(off, n) => {
                let mut v = [0u8; 4];
                // SAFETY: inside a live allocation, written.
                unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, v.as_mut_ptr(), n) };
                Ok(v)
            }
            Some(_) => Err(format!("cp.async.bulk.tensor reads unwritten global memory at {}", mem.locate(addr, n))),
            None => Err(format!("cp.async.bulk.tensor reads outside every allocation: {}", mem.locate(addr, n))),
        }
    };
    let chunks = match crate::tma::gather(&m, dst, coords, read) {
        Ok(c) => c,
        Err(e) => raise(e),
    };
    let lds = lds_mut();
    let issued = lds.issue();
    if let Err(e) = lds.mbars.add_copy(mbar, chunks, issued) {
        raise(e)
    }
    progressed();
}

/// NVIDIA's `cvt.rna.tf32.f32` on f32 bits `b`: rounded to TF32 (10 mantissa
/// bits) to nearest, ties away from zero (PTX ISA, `cvt`: `.rna` is "round to
/// nearest, ties away from zero"), as an f32 bit pattern with its low 13 bits
/// 0. Values past the largest TF32 round to infinity; NaN gives the canonical
/// NaN. Exact for every input (integer arithmetic on the bits).
pub fn cvt_rna_tf32(b: u32) -> u32 {
    if f32::from_bits(b).is_nan() {
        return f32::NAN.to_bits();
    }
    // Adding half a TF32 ulp to the magnitude carries into the kept bits
    // exactly when the dropped part is at least half (ties away from zero);
    // a carry out of the mantissa bumps the exponent, up to infinity.
    (b.wrapping_add(0x1000)) & !0x1fff
}
