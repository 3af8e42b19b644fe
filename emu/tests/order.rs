//! Workgroup order: each launch runs its workgroups in a different order
//! drawn from the emulator's seed, so a reduction through inter-workgroup
//! atomics differs bitwise from run to run (and a determinism test sees it),
//! while a fixed-order reduction stays bitwise identical.

mod common;
use common::*;
use convgrad_device::arch;
use convgrad_emu::{EmuArch, Emulator};

/// Pointer argument `i` of the argument block.
unsafe fn arg<T>(args: *const u8, i: usize) -> *mut T {
    unsafe { arch::ld(args as *const u64, i) as *mut T }
}

/// Workgroups in the reductions below.
const WGS: u32 = 48;

/// Each workgroup's lane 0 adds its value to `out[0]` atomically: a
/// deliberately order-dependent (non-deterministic) f32 reduction.
unsafe fn atomic_sum(args: *const u8) {
    unsafe {
        let (v, out) = (arg::<f32>(args, 0), arg::<f32>(args, 1));
        if arch::thread_id() == 0 {
            arch::atomic_add_f32(out, 0, arch::ld(v, arch::block_id()[0] as usize));
        }
    }
}

/// Workgroup 0 sums the values in index order: deterministic.
unsafe fn fixed_sum(args: *const u8) {
    unsafe {
        let (v, out) = (arg::<f32>(args, 0), arg::<f32>(args, 1));
        if arch::thread_id() == 0 {
            let mut s = 0.0f32;
            for i in 0..WGS as usize {
                s += arch::ld(v, i);
            }
            arch::st(out, 0, s);
        }
    }
}

/// Each workgroup takes a ticket: `tickets[wg]` = its place in the run order.
unsafe fn take_ticket(args: *const u8) {
    unsafe {
        let (counter, tickets) = (arg::<u32>(args, 0), arg::<u32>(args, 1));
        if arch::thread_id() == 0 {
            let t = arch::arrive(counter, 0);
            arch::st(tickets, arch::block_id()[0] as usize, t);
        }
    }
}

/// Values whose f32 sum depends on the order: random magnitudes over 2^-20..2^20.
fn values(seed: u64) -> Vec<f32> {
    let mut r = Rng(seed | 1);
    (0..WGS).map(|_| r.unit() * 2f32.powi((r.next() % 41) as i32 - 20)).collect()
}

/// A reduction kernel and its grid (in workgroups).
type Reduction = (convgrad_emu::KernelEntry, u32);
const ATOMIC: Reduction = (atomic_sum, WGS);
const FIXED: Reduction = (fixed_sum, 1);

/// One reduction of `values` by `kernel`, into a fresh zeroed output: its bits.
fn reduce(emu: &Emulator, (kernel, grid): Reduction, v: &[f32]) -> u32 {
    let vb = upload(emu, "v", v);
    let out = upload(emu, "out", &[0f32]);
    launch(emu, "reduce", kernel, [grid, 1, 1], 64, 0, args(emu, &[vb, out])).unwrap();
    let bits = download::<f32>(emu, out, 1)[0].to_bits();
    emu.free(vb).unwrap();
    emu.free(out).unwrap();
    bits
}

/// The bits of `runs` reductions, one launch each.
fn runs(emu: &Emulator, kernel: Reduction, v: &[f32], runs: usize) -> Vec<u32> {
    (0..runs).map(|_| reduce(emu, kernel, v)).collect()
}

/// The determinism test's question: are all runs bitwise equal?
fn bitwise_reproducible(bits: &[u32]) -> bool {
    bits.windows(2).all(|w| w[0] == w[1])
}

/// A deliberately non-deterministic reduction (f32 atomics across
/// workgroups) is caught by a run-to-run bitwise comparison, while the
/// fixed-order reduction of the same values passes it.
#[test]
fn nondeterministic_reduction_is_caught() {
    let emu = emu(EmuArch::Gfx942);
    let v = values(emu.seed());
    let atomic = runs(&emu, ATOMIC, &v, 8);
    assert!(!bitwise_reproducible(&atomic), "seed {:#x}: atomic f32 sums identical over 8 runs: {atomic:x?}", emu.seed());
    let fixed = runs(&emu, FIXED, &v, 8);
    assert!(bitwise_reproducible(&fixed), "seed {:#x}: fixed-order sum differs: {fixed:x?}", emu.seed());
}

/// The run order of the workgroups, from their tickets (one worker thread).
fn run_order(emu: &Emulator) -> Vec<u32> {
    let counter = upload(emu, "counter", &[0u32]);
    let tickets = alloc::<u32>(emu, "tickets", WGS as usize);
    launch(emu, "take_ticket", take_ticket, [WGS, 1, 1], 64, 0, args(emu, &[counter, tickets])).unwrap();
    let t = download::<u32>(emu, tickets, WGS as usize);
    let mut order = vec![0; WGS as usize];
    for (wg, &place) in t.iter().enumerate() {
        order[place as usize] = wg as u32;
    }
    order
}

/// With one worker thread the order is exactly the seed's: a seed repeats
/// its sequence of orders, launches of one emulator differ, and last-first
/// order comes up.
#[test]
fn a_seed_repeats_its_orders_and_orders_vary() {
    let seed = emu(EmuArch::Gfx1100).seed();
    let one = |s| Emulator::new_seeded(EmuArch::Gfx1100, s).with_threads(1);
    let (a, b) = (one(seed), one(seed));
    let orders: Vec<Vec<u32>> = (0..16).map(|_| run_order(&a)).collect();
    let again: Vec<Vec<u32>> = (0..16).map(|_| run_order(&b)).collect();
    assert_eq!(orders, again, "seed {seed:#x}: the same seed gave other orders");
    let distinct: std::collections::HashSet<_> = orders.iter().collect();
    assert!(distinct.len() >= 8, "seed {seed:#x}: only {} orders in 16 launches", distinct.len());
    let last_first: Vec<u32> = (0..WGS).rev().collect();
    let c = one(seed ^ 1);
    let reversed = orders.iter().chain(&(0..32).map(|_| run_order(&c)).collect::<Vec<_>>()).any(|o| *o == last_first);
    assert!(reversed, "seed {seed:#x}: no last-first order in 48 launches");
}
