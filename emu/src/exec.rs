//! Launch execution: worker threads pull workgroups from a shared counter, in
//! the launch's order ([`crate::order`]); each
//! worker runs a workgroup's lanes as fibers and schedules them: a lane runs
//! until it waits at a barrier or a matrix instruction, or returns. A wave whose
//! lanes all wait at the same matrix instruction executes it; a workgroup whose
//! live lanes all wait at a barrier passes it. Anything else that blocks progress
//! is a violation.

use crate::fiber::{Fiber, LaneYielder, Outcome, Resume, Suspend};
use crate::lds::Lds;
use crate::matrix::wgmma::{self, Desc};
use crate::matrix::{self, MatrixOp, WgmmaOp};
use crate::memory::{Alloc, MemView};
use crate::order::Order;
use crate::{EmuArch, Launch, Violation};
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// A matrix instruction a lane issued: its operand registers (on the lane's stack,
/// valid while it is suspended).
#[derive(Clone, Copy)]
pub(crate) struct MmaCall {
    pub op: MatrixOp,
    pub a: *const u16,
    pub b: *const u16,
    pub c: *const f32,
    pub d: *mut f32,
}

/// A `wgmma.mma_async` a lane issued: descriptors (decoded without error by
/// `lane::wgmma`) and its accumulators (on the lane's stack, `op.regs()` long).
#[derive(Clone, Copy)]
pub(crate) struct WgmmaCall {
    pub op: WgmmaOp,
    pub desc_a: u64,
    pub desc_b: u64,
    pub c: *const f32,
    pub d: *mut f32,
}

impl WgmmaCall {
    /// What every lane of a warp must pass alike.
    fn key(&self) -> (WgmmaOp, u64, u64) {
        (self.op, self.desc_a, self.desc_b)
    }
}

/// The wave-collective matrix instruction a lane waits at.
#[derive(Clone, Copy)]
pub(crate) enum Call {
    Mma(MmaCall),
    Wgmma(WgmmaCall),
}

impl Call {
    fn mnemonic(&self) -> String {
        match self {
            Call::Mma(c) => c.op.mnemonic().to_string(),
            Call::Wgmma(c) => c.op.mnemonic(),
        }
    }
}

/// Per lane slot: what the lane's fiber and the scheduler exchange.
pub(crate) struct Slot {
    pub yielder: Cell<*const LaneYielder>,
    pub call: Cell<Option<Call>>,
    /// The mbarrier (LDS byte, parity) a blocked lane waits on.
    pub waits_on: Cell<Option<(usize, u32)>>,
}

/// One worker thread's state, reached by the running lane through [`current`].
/// Shared by the scheduler and the lanes (never at the same time): all mutation
/// goes through cells.
pub(crate) struct Worker {
    pub arch: EmuArch,
    pub block_id: Cell<[u32; 3]>,
    /// Lane running now.
    pub cur: Cell<u32>,
    pub slots: Box<[Slot]>,
    pub lds: UnsafeCell<Lds>,
    pub mem: MemView,
    /// Events that may unblock a waiting lane (mbarrier arrivals, copies,
    /// completed waits, lanes reaching a new point): a round of the
    /// scheduler without any, with lanes still waiting, is a deadlock.
    pub progress: Cell<u64>,
}

thread_local! {
    static CURRENT: Cell<*const Worker> = const { Cell::new(std::ptr::null()) };
}

/// The worker of the running lane.
#[inline]
pub(crate) fn current() -> &'static Worker {
    let p = CURRENT.get();
    if p.is_null() {
        outside_launch()
    }
    // SAFETY: set only while the worker lives (see `CurrentGuard`), on this thread.
    unsafe { &*p }
}

#[cold]
fn outside_launch() -> ! {
    panic!("convgrad_emu::lane: called outside an emulator launch (kernels run only through Emulator::launch)")
}

/// Called by a fiber when it starts running a lane.
pub(crate) fn set_yielder(y: &LaneYielder) {
    let w = current();
    w.slots[w.cur.get() as usize].yielder.set(y);
}

struct CurrentGuard;
impl Drop for CurrentGuard {
    fn drop(&mut self) {
        CURRENT.set(std::ptr::null());
    }
}

/// What all workers of one launch share.
pub(crate) struct Shared<'a> {
    pub launch: &'a Launch<'a>,
    pub arch: EmuArch,
    pub allocs: Vec<Arc<Alloc>>,
    next: AtomicU64,
    /// Which workgroup each position of `next` runs.
    order: Order,
    /// Lowest linear workgroup index with a violation so far (`u64::MAX`:
    /// none): workgroups above it stop, those below still run, so the
    /// reported violation does not depend on thread timing.
    stop_at: AtomicU64,
    first: Mutex<Option<(u64, Violation)>>,
    pub flops: AtomicU64,
    pub workgroups: AtomicU64,
}

impl<'a> Shared<'a> {
    /// What the workers of `launch` share; `order_seed` picks the workgroup order.
    pub fn new(launch: &'a Launch<'a>, arch: EmuArch, allocs: Vec<Arc<Alloc>>, order_seed: u64) -> Self {
        let total = launch.grid.iter().map(|&g| g as u64).product();
        Shared {
            launch,
            arch,
            allocs,
            next: AtomicU64::new(0),
            order: Order::new(order_seed, total),
            stop_at: AtomicU64::new(u64::MAX),
            first: Mutex::new(None),
            flops: AtomicU64::new(0),
            workgroups: AtomicU64::new(0),
        }
    }
    pub fn total(&self) -> u64 {
        self.launch.grid.iter().map(|&g| g as u64).product()
    }
    /// The violation of the lowest-numbered workgroup that committed one.
    pub fn into_violation(self) -> Option<Violation> {
        self.first.into_inner().unwrap().map(|(_, v)| v)
    }
    /// Whether workgroup `i` need not run (on): a lower one has a violation.
    fn stopped(&self, i: u64) -> bool {
        i > self.stop_at.load(Relaxed)
    }
}

enum Stop {
    Violation(Violation),
    /// A lower-numbered workgroup has a violation.
    Aborted,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Fresh,
    Ready,
    Barrier,
    Mma,
    /// Waiting on an mbarrier phase (resumed each round to test it again).
    Blocked,
    /// At named barrier `id` for `threads` lanes.
    Named(u32, u32),
    Done,
}

/// Body of one worker thread.
pub(crate) fn worker_main(shared: &Shared<'_>) {
    let l = shared.launch;
    let block = l.block as usize;
    let worker = Worker {
        arch: shared.arch,
        block_id: Cell::new([0; 3]),
        cur: Cell::new(0),
        slots: (0..block)
            .map(|_| Slot { yielder: Cell::new(std::ptr::null()), call: Cell::new(None), waits_on: Cell::new(None) })
            .collect(),
        lds: UnsafeCell::new(Lds::new(l.lds_bytes)),
        mem: MemView::new(shared.allocs.clone()),
        progress: Cell::new(0),
    };
    CURRENT.set(&worker);
    let _guard = CurrentGuard;
    let wave = shared.arch.wave() as usize;
    let mut s = Sched {
        w: &worker,
        shared,
        fibers: (0..block).map(|_| Fiber::new()).collect(),
        state: vec![State::Fresh; block],
        wave,
        a: vec![0; wave * 16],
        b: vec![0; wave * 16],
        c: vec![0.0; wave * 16],
        d: vec![0.0; wave * 16],
        flops: 0,
    };
    let [gx, gy, _] = l.grid.map(|g| g as u64);
    let total = shared.total();
    let mut done = 0;
    loop {
        let pos = shared.next.fetch_add(1, Relaxed);
        if pos >= total {
            break;
        }
        let i = shared.order.at(pos);
        if shared.stopped(i) {
            continue;
        }
        let wg = [(i % gx) as u32, ((i / gx) % gy) as u32, (i / (gx * gy)) as u32];
        match s.run_workgroup(wg) {
            Ok(()) => done += 1,
            // Workgroups below the violating one may still be queued: go on.
            Err(Stop::Aborted) => continue,
            Err(Stop::Violation(v)) => {
                let mut first = shared.first.lock().unwrap();
                if first.as_ref().is_none_or(|&(at, _)| i < at) {
                    *first = Some((i, v));
                }
                shared.stop_at.fetch_min(i, Relaxed);
            }
        }
    }
    shared.flops.fetch_add(s.flops, Relaxed);
    shared.workgroups.fetch_add(done, Relaxed);
    // Fibers go back to the pool while the worker (their `current`) still lives.
    drop(s);
}

struct Sched<'a> {
    w: &'a Worker,
    shared: &'a Shared<'a>,
    fibers: Vec<Fiber>,
    state: Vec<State>,
    wave: usize,
    // One wave's operand registers, lane-major.
    a: Vec<u16>,
    b: Vec<u16>,
    c: Vec<f32>,
    d: Vec<f32>,
    flops: u64,
}

impl Sched<'_> {
    fn run_workgroup(&mut self, wg: [u32; 3]) -> Result<(), Stop> {
        self.w.block_id.set(wg);
        // SAFETY: no lane is running.
        unsafe { (*self.w.lds.get()).begin_workgroup() };
        self.state.fill(State::Fresh);
        let r = self.schedule();
        if r.is_err() {
            self.abandon();
        }
        r
    }

    fn schedule(&mut self) -> Result<(), Stop> {
        let l = self.shared.launch;
        let waves = self.state.len() / self.wave;
        loop {
            let before = self.w.progress.get();
            // Each wave runs until it waits at a barrier or returns, executing
            // its matrix instructions as they complete; lanes blocked on an
            // mbarrier test it again.
            for wv in 0..waves {
                let lanes = wv * self.wave..(wv + 1) * self.wave;
                loop {
                    for lane in lanes.clone() {
                        let input = match self.state[lane] {
                            State::Fresh => Resume::Run { entry: l.entry, args: l.args },
                            State::Ready | State::Blocked => Resume::Continue,
                            _ => continue,
                        };
                        self.step(lane, input)?;
                    }
                    if !self.try_mma(lanes.clone())? {
                        break;
                    }
                    self.w.progress.set(self.w.progress.get() + 1);
                }
            }
            let [x, y, z] = self.w.block_id.get().map(|v| v as u64);
            let [gx, gy, _] = self.shared.launch.grid.map(|g| g as u64);
            if self.shared.stopped(x + gx * (y + gy * z)) {
                return Err(Stop::Aborted);
            }
            let (mut at_barrier, mut done, mut blocked, mut named) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for (lane, st) in self.state.iter().enumerate() {
                match *st {
                    State::Barrier => at_barrier.push(lane),
                    State::Done => done.push(lane),
                    State::Blocked => blocked.push(lane),
                    State::Named(..) => named.push(lane),
                    State::Mma => return Err(self.stuck_mma(lane)),
                    State::Fresh | State::Ready => unreachable!(),
                }
            }
            if self.release_named(&named)? {
                continue;
            }
            if blocked.is_empty() && named.is_empty() {
                if at_barrier.is_empty() {
                    return Ok(());
                }
                if !done.is_empty() {
                    return Err(self.divergence(&at_barrier, &done));
                }
                // SAFETY: no lane is running.
                unsafe { (*self.w.lds.get()).barrier() };
                self.state.fill(State::Ready);
                continue;
            }
            // Lanes wait on mbarriers or named barriers: go round again while
            // anything happens, else nothing ever will.
            if self.w.progress.get() == before {
                return Err(self.deadlock(&blocked, &named, &at_barrier, &done));
            }
        }
    }

    /// Releases the lanes of every named barrier whose count has arrived
    /// (ordering LDS like the workgroup barrier); whether any was.
    fn release_named(&mut self, named: &[usize]) -> Result<bool, Stop> {
        let mut released = false;
        for id in 1..16 {
            let at: Vec<usize> = named.iter().copied().filter(|&l| matches!(self.state[l], State::Named(i, _) if i == id)).collect();
            let Some(&first) = at.first() else { continue };
            let State::Named(_, want) = self.state[first] else { unreachable!() };
            if let Some(&l) = at.iter().find(|&&l| self.state[l] != State::Named(id, want)) {
                let State::Named(_, other) = self.state[l] else { unreachable!() };
                return Err(self.violation(l, format!("named barrier {id}: lane {l} waits for {other} threads, lane {first} for {want}")));
            }
            if at.len() as u32 > want {
                return Err(self.violation(first, format!("named barrier {id}: {} lanes arrived for a count of {want}", at.len())));
            }
            if at.len() as u32 == want {
                for l in at {
                    self.state[l] = State::Ready;
                }
                released = true;
            }
        }
        if released {
            // SAFETY: no lane is running.
            unsafe { (*self.w.lds.get()).barrier() };
            self.w.progress.set(self.w.progress.get() + 1);
        }
        Ok(released)
    }

    /// Every live lane waits and a whole round changed nothing.
    fn deadlock(&self, blocked: &[usize], named: &[usize], at_barrier: &[usize], done: &[usize]) -> Stop {
        // SAFETY: no lane is running.
        let lds = unsafe { &*self.w.lds.get() };
        let mut what = String::from("deadlock: every live lane waits and none can go on");
        if let Some(&l) = blocked.first() {
            let (off, parity) = self.w.slots[l].waits_on.get().unwrap_or((0, 0));
            what += &format!("; {} wait on mbarrier phases ({}: parity {parity}, {})", lanes(blocked), l, lds.mbars.describe(off));
        }
        if let Some(&l) = named.first() {
            let State::Named(id, n) = self.state[l] else { unreachable!() };
            let count = named.iter().filter(|&&x| self.state[x] == State::Named(id, n)).count();
            what += &format!("; {} at named barrier {id} ({count} of {n} threads)", lanes(named));
        }
        if !at_barrier.is_empty() {
            what += &format!("; {} at the workgroup barrier", lanes(at_barrier));
        }
        if !done.is_empty() {
            what += &format!("; {} returned", lanes(done));
        }
        self.violation(blocked.first().or(named.first()).copied().unwrap_or(0), what)
    }

    /// Runs `lane` until it suspends.
    fn step(&mut self, lane: usize, input: Resume) -> Result<(), Stop> {
        self.w.cur.set(lane as u32);
        let retry = matches!(input, Resume::Continue) && self.state[lane] == State::Blocked;
        let out = self.fibers[lane].resume(input);
        // A lane that ran on to a new point is progress; one blocked again
        // at once after a retry is not.
        if !(retry && matches!(out, Suspend::Blocked)) {
            self.w.progress.set(self.w.progress.get() + 1);
        }
        self.state[lane] = match out {
            Suspend::Blocked => State::Blocked,
            Suspend::Named { id, threads } => State::Named(id, threads),
            Suspend::Barrier => State::Barrier,
            Suspend::Mma => State::Mma,
            Suspend::Done(Outcome::Finished | Outcome::Aborted) => State::Done,
            Suspend::Done(Outcome::Fault(what)) => {
                self.state[lane] = State::Done;
                return Err(self.violation(lane, what));
            }
        };
        Ok(())
    }

    /// Executes the wave's matrix instruction if all its lanes issued it.
    fn try_mma(&mut self, lanes: std::ops::Range<usize>) -> Result<bool, Stop> {
        if !self.state[lanes.clone()].iter().all(|&s| s == State::Mma) {
            return Ok(false);
        }
        let first = self.w.slots[lanes.start].call.get().unwrap();
        for lane in lanes.clone() {
            let call = self.w.slots[lane].call.get().unwrap();
            let what = match (first, call) {
                (Call::Mma(f), Call::Mma(c)) if f.op == c.op => continue,
                (Call::Wgmma(f), Call::Wgmma(c)) if f.key() == c.key() => continue,
                (Call::Wgmma(f), Call::Wgmma(c)) if f.op == c.op => format!(
                    "warp {} passes different wgmma descriptors: lane {lane} A {:#018x} B {:#018x}, lane {} A {:#018x} B {:#018x} (every lane of a warp must pass the same)",
                    lane / self.wave,
                    c.desc_a,
                    c.desc_b,
                    lanes.start,
                    f.desc_a,
                    f.desc_b
                ),
                _ => format!(
                    "wave {} mixes matrix instructions: lane {lane} issued {} while lane {} issued {}",
                    lane / self.wave,
                    call.mnemonic(),
                    lanes.start,
                    first.mnemonic()
                ),
            };
            return Err(self.violation(lane, what));
        }
        match first {
            Call::Mma(f) => self.exec_mma(lanes, f.op)?,
            Call::Wgmma(f) => self.exec_wgmma(lanes, f)?,
        }
        Ok(true)
    }

    /// Executes a wave's register-operand instruction (MFMA, WMMA, mma.sync).
    fn exec_mma(&mut self, lanes: std::ops::Range<usize>, op: MatrixOp) -> Result<(), Stop> {
        let r = op.regs();
        for (i, lane) in lanes.clone().enumerate() {
            let Some(Call::Mma(call)) = self.w.slots[lane].call.get() else { unreachable!() };
            // SAFETY: lengths were checked by `lane::mma`; the lane is suspended
            // inside it, so its operand registers are alive.
            unsafe {
                let a = std::slice::from_raw_parts(call.a, r.a);
                let b = std::slice::from_raw_parts(call.b, r.b);
                let c = std::slice::from_raw_parts(call.c, r.c);
                self.a[i * r.a..(i + 1) * r.a].copy_from_slice(a);
                self.b[i * r.b..(i + 1) * r.b].copy_from_slice(b);
                self.c[i * r.c..(i + 1) * r.c].copy_from_slice(c);
            }
        }
        let w = self.wave;
        let (a, b, c) = (&self.a[..w * r.a], &self.b[..w * r.b], &self.c[..w * r.c]);
        if let Err(e) = matrix::execute(op, a, b, c, &mut self.d[..w * r.c]) {
            return Err(self.violation(lanes.start + e.lane as usize, e.what));
        }
        for (i, lane) in lanes.clone().enumerate() {
            let Some(Call::Mma(call)) = self.w.slots[lane].call.take() else { unreachable!() };
            // SAFETY: as above; `d` is the lane's own output registers.
            unsafe { std::slice::from_raw_parts_mut(call.d, r.c) }.copy_from_slice(&self.d[i * r.c..(i + 1) * r.c]);
            self.state[lane] = State::Ready;
        }
        self.flops += op.flops();
        Ok(())
    }

    /// Executes one warp's part of a `wgmma.mma_async`: its 16 rows of A and all
    /// of B come from LDS through the checked loads, read on behalf of the warp's
    /// first lane (so the race and unwritten checks apply as to an LDS load of
    /// that lane).
    fn exec_wgmma(&mut self, lanes: std::ops::Range<usize>, call: WgmmaCall) -> Result<(), Stop> {
        let (op, h, n) = (call.op, call.op.regs(), call.op.n as usize);
        let warp = (lanes.start / self.wave % 4) as u32;
        // Checked by `lane::wgmma` before it suspended.
        let (da, db) = (Desc::decode(call.desc_a).unwrap(), Desc::decode(call.desc_b).unwrap());
        for (v, len) in [(&mut self.a, 256), (&mut self.b, 16 * n)] {
            v.resize(v.len().max(len), 0);
        }
        for v in [&mut self.c, &mut self.d] {
            v.resize(v.len().max(32 * h), 0.0);
        }
        // SAFETY: no lane is running.
        let lds = unsafe { &mut *self.w.lds.get() };
        let reader = lanes.start as u32;
        let mut offs = Vec::with_capacity(256 + 16 * n);
        let read = wgmma::gather(op, warp, (&da, &db), &mut self.a[..256], &mut self.b[..16 * n], |off| {
            let mut v = 0u16;
            offs.push(off as u32);
            lds.load(reader, off, (&raw mut v).cast(), 2, 2).map(|()| v)
        });
        let wv = lanes.start / self.wave;
        if let Err(what) = read {
            return Err(self.violation(lanes.start, format!("warp {wv} (warpgroup warp {warp}): {what}")));
        }
        // The operands stay in use until the warp's wgmma.wait_group.
        lds.wgmma_hold(wv as u32, &offs);
        for (i, lane) in lanes.clone().enumerate() {
            let Some(Call::Wgmma(call)) = self.w.slots[lane].call.get() else { unreachable!() };
            // SAFETY: `lane::wgmma` checked the length; the lane is suspended inside it.
            self.c[i * h..(i + 1) * h].copy_from_slice(unsafe { std::slice::from_raw_parts(call.c, h) });
        }
        wgmma::execute(op, &self.a[..256], &self.b[..16 * n], &self.c[..32 * h], &mut self.d[..32 * h]);
        for (i, lane) in lanes.clone().enumerate() {
            let Some(Call::Wgmma(call)) = self.w.slots[lane].call.take() else { unreachable!() };
            // SAFETY: as above; `d` is the lane's own accumulators.
            unsafe { std::slice::from_raw_parts_mut(call.d, h) }.copy_from_slice(&self.d[i * h..(i + 1) * h]);
            self.state[lane] = State::Ready;
        }
        self.flops += op.flops();
        Ok(())
    }

    /// A lane waits at a matrix instruction its whole wave never reaches.
    fn stuck_mma(&self, lane: usize) -> Stop {
        let wave = lane / self.wave;
        let lanes = wave * self.wave..(wave + 1) * self.wave;
        let call = self.w.slots[lane].call.get().unwrap();
        let other = lanes.clone().find(|&l| self.state[l] != State::Mma).unwrap();
        let where_ = if self.state[other] == State::Done { "has returned from the kernel" } else { "waits at a barrier" };
        self.violation(
            lane,
            format!(
                "lane {lane} issued {} but lane {other} of the same wave {where_}: a wave-collective matrix instruction needs all {} lanes of wave {wave}",
                call.mnemonic(),
                self.wave
            ),
        )
    }

    fn divergence(&self, at_barrier: &[usize], done: &[usize]) -> Stop {
        // SAFETY: no lane is running.
        let n = unsafe { (*self.w.lds.get()).barriers() } + 1;
        let lane = at_barrier[0];
        let what = format!(
            "barrier divergence: {} wait at the workgroup's barrier #{n} while {} returned from the kernel without reaching it",
            lanes(at_barrier),
            lanes(done)
        );
        self.violation(lane, what)
    }

    fn violation(&self, lane: usize, what: String) -> Stop {
        Stop::Violation(Violation {
            kernel: self.shared.launch.name.to_string(),
            workgroup: self.w.block_id.get(),
            lane: lane as u32,
            what,
        })
    }

    /// Unwinds every lane still inside the kernel so its fiber can be reused.
    fn abandon(&mut self) {
        for lane in 0..self.state.len() {
            for _ in 0..16 {
                if matches!(self.state[lane], State::Fresh | State::Done) {
                    break;
                }
                self.w.cur.set(lane as u32);
                self.state[lane] = match self.fibers[lane].resume(Resume::Abort) {
                    Suspend::Done(_) => State::Done,
                    _ => State::Barrier,
                };
            }
        }
        for s in self.w.slots.iter() {
            s.call.set(None);
        }
    }
}

/// `lanes 0..=31 (32 lanes)` or `lane 5`, for messages.
fn lanes(l: &[usize]) -> String {
    match l {
        [one] => format!("lane {one}"),
        _ if l.last().unwrap() - l[0] + 1 == l.len() => format!("lanes {}..={} ({} lanes)", l[0], l.last().unwrap(), l.len()),
        _ => format!("lane {} and {} other lanes", l[0], l.len() - 1),
    }
}
