//! The cache model (`exec::cache`, issue #42): a store by one workgroup read by
//! another, with and without the fences and scope bits each architecture needs
//! (LLVM AMDGPUUsage memory-model code sequences for agent scope), driven through
//! `Memory` as the executor drives it.

use convgrad_isa::Arch;
use convgrad_isa::exec::Memory;
use convgrad_isa::exec::cache::{Access, Bits, Cache};
use convgrad_isa::exec::memory::Fault;

/// Two workgroups (linear ids 0 and 1, one wave each: uids 1 and 2) placed on
/// different CUs (gfx942: XCDs 0 and 1; gfx1100: shader arrays 0 and 1), and a buffer with a counter at 0
/// and data at 4.
fn setup(arch: Arch) -> (Memory, u64) {
    let mut m = Memory::new();
    let buf = m.alloc("buf", 8);
    m.write(buf, &[0; 8]).unwrap();
    let mut c = Cache::new(arch, true);
    // Workgroup 1 is the fifth dispatched: on gfx1100 in another shader array.
    for (wg, uid, n) in [(0u32, 1u32, 1), (1, 2, 4)] {
        let dom = (0..n).map(|_| c.dispatch(wg)).last().unwrap();
        c.place_wave(uid, wg, [wg, 0, 0], 0, dom);
    }
    m.set_cache(Some(c));
    (m, buf)
}

fn access(wave: u32, name: &'static str, bits: Bits) -> Access {
    Access {
        wave,
        bits,
        atomic: name.contains("atomic"),
        immediate: false,
        pc: 0x100,
        name,
    }
}

const NONE: Bits = Bits::NONE;
const GLC: Bits = Bits::GLC;
const SC1: Bits = Bits::DLC;
const GLC_DLC: Bits = Bits::GLC_DLC;

fn fence(m: &mut Memory, uid: u32, name: &'static str, bits: Bits) {
    m.set_access(Some(access(uid, name, bits)));
    m.cache().unwrap().maintain(uid, name, bits);
}

/// A returning atomic add of 1 on the counter by wave `uid`.
fn bump(m: &mut Memory, buf: u64, uid: u32) {
    m.set_access(Some(access(uid, "global_atomic_add", GLC)));
    let mut b = [0u8; 4];
    m.load(buf, &mut b).unwrap();
    let v = u32::from_le_bytes(b) + 1;
    m.write(buf, &v.to_le_bytes()).unwrap();
    m.release(uid, buf, 4);
}

/// Workgroup 0 stores 7 at `buf + 4` (`store` bits), waits for it, runs `release`,
/// bumps the counter; workgroup 1 bumps it, runs `acquire`, loads with `load`
/// bits. The load's result.
fn pass(
    arch: Arch,
    store: Bits,
    release: &[(&'static str, Bits)],
    acquire: &[(&'static str, Bits)],
    load: Bits,
) -> Result<u32, Fault> {
    let (mut m, buf) = setup(arch);
    m.set_access(Some(access(1, "global_store_dword", store)));
    m.write(buf + 4, &7u32.to_le_bytes()).unwrap();
    m.release(1, buf + 4, 4);
    for &(n, b) in release {
        fence(&mut m, 1, n, b);
    }
    bump(&mut m, buf, 1);
    bump(&mut m, buf, 2);
    for &(n, b) in acquire {
        fence(&mut m, 2, n, b);
    }
    m.set_access(Some(access(2, "global_load_dword", load)));
    let mut out = [0u8; 4];
    m.load(buf + 4, &mut out)?;
    Ok(u32::from_le_bytes(out))
}

fn stale(r: Result<u32, Fault>, why: &str) {
    match r {
        Err(Fault::Cache(m)) => assert!(m.contains(why), "{m}"),
        other => panic!("expected a cache-model error ({why}), got {other:?}"),
    }
}

const WBL2: (&str, Bits) = ("buffer_wbl2", SC1);
const INV: (&str, Bits) = ("buffer_inv", SC1);

#[test]
fn gfx942_needs_wbl2_sc1_and_buffer_inv_sc1() {
    let a = Arch::Gfx942;
    assert_eq!(pass(a, NONE, &[WBL2], &[INV], NONE).unwrap(), 7);
    // No write-back: dirty in XCD 0's L2.
    stale(pass(a, NONE, &[], &[INV], NONE), "dirty in the writer's L2");
    // A store with sc1 is written through.
    assert_eq!(pass(a, SC1, &[], &[INV], NONE).unwrap(), 7);
    // No invalidate: the reader's L1 may be stale; an sc1 load misses L1 and L2.
    stale(pass(a, NONE, &[WBL2], &[], NONE), "buffer_inv sc1");
    assert_eq!(pass(a, NONE, &[WBL2], &[], SC1).unwrap(), 7);
    // buffer_inv sc0 (workgroup scope) invalidates L1 only; sc0 on a load is no bypass.
    stale(
        pass(a, NONE, &[WBL2], &[("buffer_inv", GLC)], NONE),
        "L2 (per XCD)",
    );
    stale(pass(a, NONE, &[WBL2], &[], GLC), "vector L1");
}

#[test]
fn gfx90a_needs_buffer_wbinvl1_vol_or_glc() {
    let a = Arch::Gfx90a;
    assert_eq!(
        pass(a, NONE, &[], &[("buffer_wbinvl1_vol", NONE)], NONE).unwrap(),
        7
    );
    stale(pass(a, NONE, &[], &[], NONE), "buffer_wbinvl1_vol");
    assert_eq!(pass(a, NONE, &[], &[], GLC).unwrap(), 7);
    // buffer_wbl2 / buffer_invl2 act at system scope: not an L1 invalidate.
    stale(
        pass(a, NONE, &[], &[("buffer_invl2", NONE), WBL2], NONE),
        "vector L1",
    );
}

#[test]
fn gfx1100_needs_gl0_and_gl1_invalidates_or_glc_dlc() {
    let a = Arch::Gfx1100;
    let both = [("buffer_gl1_inv", NONE), ("buffer_gl0_inv", NONE)];
    assert_eq!(pass(a, NONE, &[], &both, NONE).unwrap(), 7);
    stale(pass(a, NONE, &[], &both[1..], NONE), "GL1");
    stale(pass(a, NONE, &[], &both[..1], NONE), "L0");
    assert_eq!(pass(a, NONE, &[], &[], GLC_DLC).unwrap(), 7);
    stale(pass(a, NONE, &[], &[], GLC), "buffer_gl1_inv");
}

#[test]
fn an_invalidate_before_the_acquire_does_not_count() {
    let (mut m, buf) = setup(Arch::Gfx942);
    m.set_access(Some(access(1, "global_store_dword", NONE)));
    m.write(buf + 4, &7u32.to_le_bytes()).unwrap();
    m.release(1, buf + 4, 4);
    fence(&mut m, 1, WBL2.0, WBL2.1);
    bump(&mut m, buf, 1);
    fence(&mut m, 2, INV.0, INV.1);
    bump(&mut m, buf, 2);
    m.set_access(Some(access(2, "global_load_dword", NONE)));
    stale(m.load(buf + 4, &mut [0; 4]).map(|_| 0), "buffer_inv sc1");
}

#[test]
fn unordered_workgroups_race() {
    for a in Arch::ALL {
        // A read without any atomic between the workgroups.
        let (mut m, buf) = setup(a);
        m.set_access(Some(access(1, "global_store_dword", NONE)));
        m.write(buf + 4, &7u32.to_le_bytes()).unwrap();
        m.release(1, buf + 4, 4);
        m.set_access(Some(access(2, "global_load_dword", GLC_DLC)));
        stale(
            m.load(buf + 4, &mut [0; 4]).map(|_| 0),
            "race between workgroups",
        );
        // Two workgroups storing the same bytes.
        m.set_access(Some(access(2, "global_store_dword", NONE)));
        match m.write(buf + 4, &[1; 4]) {
            Err(Fault::Cache(e)) => assert!(e.contains("global race"), "{e}"),
            other => panic!("{a}: expected a race, got {other:?}"),
        }
        // The writer's release atomic ran before its store completed.
        let (mut m, buf) = setup(a);
        m.set_access(Some(access(1, "global_store_dword", SC1)));
        m.write(buf + 4, &7u32.to_le_bytes()).unwrap();
        bump(&mut m, buf, 1);
        m.release(1, buf + 4, 4);
        bump(&mut m, buf, 2);
        m.set_access(Some(access(2, "global_load_dword", GLC_DLC)));
        stale(m.load(buf + 4, &mut [0; 4]).map(|_| 0), "race");
    }
}

#[test]
fn stale_atomic_sums_read_their_launch_start_value() {
    // Atomics are performed at the coherent point, but a plain load of their bytes
    // can still hit a stale line: it returns the value the launch began with.
    let (mut m, buf) = setup(Arch::Gfx942);
    m.set_access(Some(access(1, "global_atomic_add_f32", NONE)));
    m.write(buf + 4, &7u32.to_le_bytes()).unwrap();
    m.release(1, buf + 4, 4);
    bump(&mut m, buf, 1);
    bump(&mut m, buf, 2);
    m.set_access(Some(access(2, "global_load_dword", NONE)));
    let mut out = [9u8; 4];
    m.load(buf + 4, &mut out).unwrap();
    assert_eq!(out, [0; 4]);
    assert_eq!(m.cache().unwrap().stale_reads, 4);
    fence(&mut m, 2, INV.0, INV.1);
    m.set_access(Some(access(2, "global_load_dword", NONE)));
    m.load(buf + 4, &mut out).unwrap();
    assert_eq!(u32::from_le_bytes(out), 7);
}

/// One workgroup (linear id 0) with two waves, uids 1 and 3, on one CU.
fn setup_one_workgroup(arch: Arch) -> (Memory, u64) {
    let mut m = Memory::new();
    let buf = m.alloc("buf", 8);
    m.write(buf, &[0; 8]).unwrap();
    let mut c = Cache::new(arch, false);
    let dom = c.dispatch(0);
    c.place_wave(1, 0, [0, 0, 0], 0, dom);
    c.place_wave(3, 0, [0, 0, 0], 1, dom);
    m.set_cache(Some(c));
    (m, buf)
}

#[test]
fn waves_of_one_workgroup_race_in_global_memory_without_a_barrier() {
    for a in Arch::ALL {
        // Wave 0 stores (and waits); wave 1 reads the bytes: a race without a barrier.
        let (mut m, buf) = setup_one_workgroup(a);
        m.set_access(Some(access(1, "global_store_dword", NONE)));
        m.write(buf + 4, &7u32.to_le_bytes()).unwrap();
        m.release(1, buf + 4, 4);
        m.set_access(Some(access(3, "global_load_dword", GLC_DLC)));
        stale(
            m.load(buf + 4, &mut [0; 4]).map(|_| 0),
            "race between waves of one workgroup",
        );
        // Both store the same bytes: a race, naming the access.
        m.set_access(Some(access(3, "global_store_dword", NONE)));
        match m.write(buf + 4, &[1; 4]) {
            Err(Fault::Cache(e)) => assert!(
                e.contains("global race") && e.contains("same workgroup") && e.contains("0x100"),
                "{a}: {e}"
            ),
            other => panic!("{a}: expected a race, got {other:?}"),
        }
        // With an s_barrier after the store completed, both are ordered.
        let (mut m, buf) = setup_one_workgroup(a);
        m.set_access(Some(access(1, "global_store_dword", NONE)));
        m.write(buf + 4, &7u32.to_le_bytes()).unwrap();
        m.release(1, buf + 4, 4);
        m.cache().unwrap().barrier(0);
        m.set_access(Some(access(3, "global_load_dword", GLC_DLC)));
        let mut out = [0u8; 4];
        m.load(buf + 4, &mut out).unwrap();
        assert_eq!(u32::from_le_bytes(out), 7, "{a}");
        m.set_access(Some(access(3, "global_store_dword", NONE)));
        m.write(buf + 4, &[1; 4]).unwrap();
        // A barrier before the store completed does not order it.
        let (mut m, buf) = setup_one_workgroup(a);
        m.set_access(Some(access(1, "global_store_dword", NONE)));
        m.write(buf + 4, &7u32.to_le_bytes()).unwrap();
        m.cache().unwrap().barrier(0);
        m.release(1, buf + 4, 4);
        m.set_access(Some(access(3, "global_store_dword", NONE)));
        assert!(m.write(buf + 4, &[1; 4]).is_err(), "{a}");
        // Atomics of the two waves on the same bytes are not races.
        let (mut m, buf) = setup_one_workgroup(a);
        bump(&mut m, buf, 1);
        bump(&mut m, buf, 3);
    }
}
