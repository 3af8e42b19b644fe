//! Lane fibers: one `corosensei` coroutine per lane slot of a worker, reused for
//! every workgroup the worker runs (a fiber loops: run the kernel for one lane,
//! report how it ended, wait for the next). Stacks are pooled across launches.
//!
//! A lane leaves its kernel early by unwinding: a check failure raises a
//! [`Fault`] payload, an aborted workgroup an [`AbortUnwind`]; both are caught at
//! the bottom of the fiber, as are the kernel's own panics.

use crate::KernelEntry;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Mutex, Once};

/// What the scheduler sends a fiber.
pub(crate) enum Resume {
    /// Run the kernel (the lane index is the worker's current lane).
    Run { entry: KernelEntry, args: u64 },
    /// Go on after a barrier or matrix instruction.
    Continue,
    /// Unwind out of the kernel: the workgroup is being abandoned.
    Abort,
    /// Return from the fiber for good.
    Exit,
}

/// Why a fiber handed control back.
pub(crate) enum Suspend {
    Barrier,
    Mma,
    /// Waiting for an mbarrier phase another lane's arrival (or a copy in
    /// flight) has still to complete: resumed to test it again.
    Blocked,
    /// At named barrier `id` (`bar.sync id, threads`).
    Named { id: u32, threads: u32 },
    Done(Outcome),
}

/// How a lane's kernel ended.
pub(crate) enum Outcome {
    Finished,
    /// A check failed, the kernel trapped or panicked: the violation text.
    Fault(String),
    Aborted,
}

pub(crate) type LaneYielder = Yielder<Resume, Suspend>;

struct Fault(String);
struct AbortUnwind;

/// Leaves the kernel with a violation (`what` names buffer and index).
#[cold]
#[inline(never)]
pub(crate) fn raise(what: String) -> ! {
    resume_unwind(Box::new(Fault(what)))
}

/// Leaves the kernel because its workgroup is abandoned.
#[cold]
pub(crate) fn abort_lane() -> ! {
    resume_unwind(Box::new(AbortUnwind))
}

static STACKS: Mutex<Vec<DefaultStack>> = Mutex::new(Vec::new());
const POOL_MAX: usize = 4096;

fn stack_bytes() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        std::env::var("CONVGRAD_EMU_STACK_KIB").ok().and_then(|s| s.parse::<usize>().ok()).unwrap_or(256) * 1024
    })
}

pub(crate) struct Fiber {
    co: Option<Coroutine<Resume, Suspend, (), DefaultStack>>,
}

impl Fiber {
    pub fn new() -> Fiber {
        install_panic_hook();
        let stack = STACKS.lock().unwrap().pop();
        let stack = stack.unwrap_or_else(|| DefaultStack::new(stack_bytes()).expect("emulator: cannot map a fiber stack"));
        Fiber { co: Some(Coroutine::with_stack(stack, lane_main)) }
    }

    /// Runs the lane until it suspends.
    #[inline]
    pub fn resume(&mut self, r: Resume) -> Suspend {
        IN_KERNEL.set(true);
        let s = self.co.as_mut().unwrap().resume(r);
        IN_KERNEL.set(false);
        match s {
            CoroutineResult::Yield(s) => s,
            CoroutineResult::Return(()) => unreachable!("lane fiber returned without Exit"),
        }
    }
}

impl Drop for Fiber {
    fn drop(&mut self) {
        let mut co = self.co.take().unwrap();
        // Every lane is parked at `Done` between workgroups (or not started): send it home.
        for _ in 0..16 {
            if co.done() {
                break;
            }
            let _ = co.resume(Resume::Exit);
        }
        if co.done() {
            let stack = co.into_stack();
            let mut pool = STACKS.lock().unwrap();
            if pool.len() < POOL_MAX {
                pool.push(stack);
            }
        }
    }
}

fn lane_main(y: &LaneYielder, mut input: Resume) {
    loop {
        let (entry, args) = match input {
            Resume::Run { entry, args } => (entry, args),
            Resume::Exit => return,
            Resume::Continue | Resume::Abort => {
                input = y.suspend(Suspend::Done(Outcome::Aborted));
                continue;
            }
        };
        crate::exec::set_yielder(y);
        // SAFETY: the launch promised `entry` is a kernel taking this argument block.
        let r = catch_unwind(AssertUnwindSafe(|| unsafe { entry(args as *const u8) }));
        let outcome = match r {
            Ok(()) => Outcome::Finished,
            Err(p) => classify(p),
        };
        input = y.suspend(Suspend::Done(outcome));
    }
}

fn classify(p: Box<dyn std::any::Any + Send>) -> Outcome {
    let p = match p.downcast::<Fault>() {
        Ok(f) => return Outcome::Fault(f.0),
        Err(p) => p,
    };
    if p.is::<AbortUnwind>() {
        return Outcome::Aborted;
    }
    let msg = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string payload)".into());
    let at = PANIC_AT.take().map(|l| format!(" at {l}")).unwrap_or_default();
    Outcome::Fault(format!("kernel panicked{at}: {msg}"))
}

thread_local! {
    /// True while a lane fiber runs on this thread.
    static IN_KERNEL: Cell<bool> = const { Cell::new(false) };
    /// Location of the last kernel panic, taken by `classify`.
    static PANIC_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Kernel panics become violations carrying their location, so the default hook's
/// report would only duplicate them: record the location instead. Other panics go
/// to the previous hook.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_KERNEL.get() {
                let loc = info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
                PANIC_AT.set(loc);
            } else {
                prev(info)
            }
        }));
    });
}
