//! Warp specialisation on the sm_90 model: a producer warp feeding consumer
//! warps through a ring of TMA stages guarded by full and empty mbarriers,
//! the consumers syncing among themselves on a named barrier. The waits
//! suspend a lane until another warp's arrival (or a copy) completes the
//! phase; a workgroup where every live lane waits and nothing happens is a
//! deadlock, reported with the mbarrier's state. Kernels go through
//! `convgrad_device::arch`, the layer real kernels use.

mod common;
use common::*;
use convgrad_device::arch::{self, tma};
use convgrad_emu::EmuArch;
use convgrad_types::params::TmaMap;

/// Stages of the ring, 32 f32 (128 bytes) each.
const STAGES: usize = 2;
const STAGE: usize = 128;
/// LDS bytes: the stages, then the full and the empty mbarriers, then 64
/// f32 the consumers exchange.
const FULL: usize = STAGES * STAGE;
const EMPTY: usize = FULL + 8 * STAGES;
const SWAP: usize = EMPTY + 8 * STAGES;
const LDS: usize = SWAP + 64 * 4;
/// Two consumer warps, then the producer warp.
const BLOCK: u32 = 96;

/// Argument `i` of the block: a 64-bit word.
unsafe fn word(args: *const u8, i: usize) -> u64 {
    unsafe { arch::ld(args as *const u64, i) }
}

/// How the producer breaks the protocol (`Ok`: it does not).
#[derive(Clone, Copy, PartialEq)]
enum Producer {
    Ok,
    /// Never waits on the empty barriers: refills a stage still in use.
    NoEmptyWait,
    /// Never issues anything: the consumers wait forever.
    Silent,
}

/// `args = [map, out, steps, producer]`: step `s` of the ring carries
/// elements `32s..32s+32` of the map's 1-D source; consumer thread `t`
/// (warp `w`, lane `l`) sums `src[32s + l] * (w + 1)` over the steps, then
/// adds its partner's sum (thread `t ^ 32`) through LDS after the consumers'
/// named barrier, and writes it to `out[t]`.
unsafe fn ring(args: *const u8) {
    let tid = arch::thread_id() as usize;
    let (map, out, steps) = unsafe { (word(args, 0) as *const tma::MapSlot, word(args, 1) as *mut f32, word(args, 2) as usize) };
    let producer = match unsafe { word(args, 3) } {
        0 => Producer::Ok,
        1 => Producer::NoEmptyWait,
        _ => Producer::Silent,
    };
    if tid == 0 {
        for s in 0..STAGES {
            unsafe {
                tma::mbar_init(FULL + 8 * s, 1);
                // Every consumer thread releases the stage after its read.
                tma::mbar_init(EMPTY + 8 * s, 64);
            }
        }
        tma::mbar_init_fence();
    }
    arch::barrier();
    if tid >= 64 {
        // The producer warp: one thread issues.
        if tid == 64 && producer != Producer::Silent {
            for step in 0..steps {
                let (s, ph) = (step % STAGES, (step / STAGES) as u32 & 1);
                unsafe {
                    if producer == Producer::Ok {
                        // Parity 1 of a fresh barrier passes: the first round is free.
                        tma::mbar_wait(EMPTY + 8 * s, ph ^ 1);
                    }
                    tma::mbar_expect_tx(FULL + 8 * s, STAGE as u32);
                    tma::tma_load(s * STAGE, FULL + 8 * s, map, [(32 * step) as i32, 0, 0, 0, 0], false);
                }
            }
        }
        return;
    }
    let (warp, lane) = (tid / 32, tid % 32);
    let mut acc = 0f32;
    for step in 0..steps {
        let (s, ph) = (step % STAGES, (step / STAGES) as u32 & 1);
        unsafe {
            tma::mbar_wait(FULL + 8 * s, ph);
            acc += arch::lds_ld::<f32>(s * STAGE + 4 * lane) * (warp + 1) as f32;
            tma::mbar_arrive(EMPTY + 8 * s);
        }
    }
    unsafe { arch::lds_st(SWAP + 4 * tid, acc) };
    tma::named_barrier(1, 64);
    let other: f32 = unsafe { arch::lds_ld(SWAP + 4 * (tid ^ 32)) };
    unsafe { arch::st(out, tid, acc + other) };
}

/// A map over `elems` f32 at `base` (rank 3, as the 3-D copy wants) in boxes of 32 (one stage), as a
/// filled argument-block slot uploaded to the emulator: its address.
fn map_1d(emu: &convgrad_emu::Emulator, base: u64, elems: usize) -> u64 {
    let map = TmaMap {
        magic: TmaMap::MAGIC,
        // Rank 3 (two dimensions of one element): the 3-D copy's.
        rank: 3,
        base,
        dims: [elems as u32, 1, 1, 1, 1],
        elem_bytes: 4,
        strides: [0; 4],
        boxes: [32, 1, 1, 1, 1],
        swizzle: 0,
        elem_strides: [1; 5],
        _pad: 0,
    };
    let mut slot = [0u64; 16];
    // SAFETY: a plain-data map into the 128-byte slot (it fits: asserted in convgrad_types).
    unsafe { std::ptr::copy_nonoverlapping((&raw const map).cast::<u8>(), slot.as_mut_ptr().cast::<u8>(), size_of::<TmaMap>()) };
    upload(emu, "map", &slot)
}

/// Runs `ring` over `steps` steps of fresh values with `producer`: the
/// expected and the downloaded outputs, or the violation's text.
fn run(steps: usize, producer: Producer, seed: u64) -> Result<(Vec<f32>, Vec<f32>), String> {
    let emu = emu(EmuArch::Sm90);
    let mut rng = Rng(seed);
    // Small integers: every sum is exact in f32, in any order.
    let src: Vec<f32> = (0..32 * steps).map(|_| (rng.next() % 17) as f32 - 8.0).collect();
    let map_at = map_1d(&emu, upload(&emu, "src", &src), src.len());
    let out = alloc::<f32>(&emu, "out", 64);
    let mode = match producer {
        Producer::Ok => 0,
        Producer::NoEmptyWait => 1,
        Producer::Silent => 2,
    };
    let a = args(&emu, &[map_at, out, steps as u64, mode]);
    launch(&emu, "ring", ring, [1, 1, 1], BLOCK, LDS, a).map_err(|e| e.to_string())?;
    let sum = |w: usize, l: usize| -> f32 { (0..steps).map(|s| src[32 * s + l] * (w + 1) as f32).sum() };
    let want = (0..64).map(|t| sum(t / 32, t % 32) + sum(1 - t / 32, t % 32)).collect();
    Ok((want, download(&emu, out, 64)))
}

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn producer_warp_feeds_consumer_warps_through_the_ring() {
    for (steps, seed) in [(1, 11), (2, 12), (7, 13), (16, 14)] {
        let (want, got) = run(steps, Producer::Ok, seed).unwrap_or_else(|e| panic!("{steps} steps: {e}"));
        assert_eq!(got, want, "{steps} steps");
    }
}

#[test]
fn a_producer_that_skips_the_empty_barrier_is_caught() {
    // Step 2 refills stage 0 while the consumers may still read step 0's
    // values: its arrival on the full barrier comes in a phase that already
    // has its one arrival.
    let e = run(4, Producer::NoEmptyWait, 21).map(|_| ()).unwrap_err();
    assert!(e.contains("mbarrier") && e.contains("arrivals in one phase"), "{e}");
}

#[test]
fn consumers_waiting_on_a_silent_producer_deadlock() {
    let e = run(3, Producer::Silent, 31).map(|_| ()).unwrap_err();
    assert!(e.contains("deadlock") && e.contains(&format!("mbarrier at LDS byte {FULL}")) && e.contains("0 of 1 arrivals"), "{e}");
}

/// A lane that reads a stage after a copy into it was issued (and before it
/// landed) races with the copy: lane 1 issues stage 0's copy, then lets
/// lane 0 go on (an arrival on a "go" barrier) and waits for its "done";
/// lane 0 reads the stage and arrives on "done"; the copy lands at lane 1's
/// wait on the full barrier, on bytes lane 0 read after the issue.
#[test]
fn a_read_of_a_stage_after_its_copy_was_issued_is_a_race() {
    const GO: usize = SWAP;
    const DONE: usize = SWAP + 8;
    unsafe fn k(args: *const u8) {
        let tid = arch::thread_id() as usize;
        let map = unsafe { word(args, 0) as *const tma::MapSlot };
        if tid == 0 {
            unsafe {
                tma::mbar_init(FULL, 1);
                tma::mbar_init(GO, 1);
                tma::mbar_init(DONE, 1);
                arch::lds_st(0, 1f32);
            }
            tma::mbar_init_fence();
        }
        arch::barrier();
        unsafe {
            match tid {
                0 => {
                    tma::mbar_wait(GO, 0);
                    let _: f32 = arch::lds_ld(0);
                    tma::mbar_arrive(DONE);
                }
                1 => {
                    tma::mbar_expect_tx(FULL, STAGE as u32);
                    tma::tma_load(0, FULL, map, [0; 5], false);
                    tma::mbar_arrive(GO);
                    tma::mbar_wait(DONE, 0);
                    tma::mbar_wait(FULL, 0);
                }
                _ => {}
            }
        }
    }
    let emu = emu(EmuArch::Sm90);
    let a = args(&emu, &[map_1d(&emu, upload(&emu, "src", &[2f32; 32]), 32)]);
    let v = violation(launch(&emu, "late_read", k, [1, 1, 1], 32, LDS, a));
    assert_what(&v, &["LDS data race: a TMA copy lands on bytes 0..16", "lane 0 read byte 0", "after the copy was issued"]);
}
