//! Write-after-read races in global memory (`exec::war`, issue #42): a plain store
//! over bytes another wave read must be ordered after that read, by an `s_barrier`
//! inside a workgroup or a release/acquire between workgroups; driven through
//! `Memory` as the executor drives it, on every architecture.

use convgrad_isa::Arch;
use convgrad_isa::exec::Memory;
use convgrad_isa::exec::cache::{Access, Bits, Cache};
use convgrad_isa::exec::memory::Fault;

const NONE: Bits = Bits::NONE;
const GLC: Bits = Bits::GLC;

/// Workgroups 0 (waves uid 1 and 3) and 1 (uid 2), and an 8-byte buffer: a counter
/// at 0, data at 4.
fn setup(arch: Arch) -> (Memory, u64) {
    let mut m = Memory::new();
    let buf = m.alloc("buf", 8);
    m.write(buf, &[0; 8]).unwrap();
    let mut c = Cache::new(arch, false);
    let d0 = c.dispatch(0);
    c.place_wave(1, 0, [0, 0, 0], 0, d0);
    c.place_wave(3, 0, [0, 0, 0], 1, d0);
    let d1 = c.dispatch(1);
    c.place_wave(2, 1, [1, 0, 0], 0, d1);
    m.set_cache(Some(c));
    (m, buf)
}

fn access(wave: u32, name: &'static str, bits: Bits, pc: u64) -> Access {
    Access {
        wave,
        bits,
        atomic: name.contains("atomic"),
        immediate: false,
        pc,
        name,
    }
}

/// Wave `uid` loads the data word (at pc 0x200).
fn load(m: &mut Memory, buf: u64, uid: u32) {
    m.set_access(Some(access(uid, "global_load_dword", NONE, 0x200)));
    m.load(buf + 4, &mut [0; 4]).unwrap();
}

/// Wave `uid` stores the data word (at pc 0x300) and waits for it.
fn store(m: &mut Memory, buf: u64, uid: u32) -> Result<(), Fault> {
    m.set_access(Some(access(uid, "global_store_dword", NONE, 0x300)));
    m.write(buf + 4, &[1; 4])?;
    m.release(uid, buf + 4, 4);
    Ok(())
}

/// A returning atomic add on the counter by wave `uid` (a release and an acquire).
fn bump(m: &mut Memory, buf: u64, uid: u32) {
    m.set_access(Some(access(uid, "global_atomic_add", GLC, 0x400)));
    let mut b = [0u8; 4];
    m.load(buf, &mut b).unwrap();
    let v = u32::from_le_bytes(b) + 1;
    m.write(buf, &v.to_le_bytes()).unwrap();
    m.release(uid, buf, 4);
}

fn race(r: Result<(), Fault>, what: &[&str]) {
    match r {
        Err(Fault::Cache(e)) => {
            for w in what {
                assert!(e.contains(w), "`{w}` not in: {e}");
            }
        }
        other => panic!("expected a write-after-read race ({what:?}), got {other:?}"),
    }
}

#[test]
fn a_store_over_another_workgroups_read_needs_a_release_acquire() {
    for a in Arch::ALL {
        // Workgroup 1 reads, workgroup 0 overwrites: nothing orders them.
        let (mut m, buf) = setup(a);
        load(&mut m, buf, 2);
        race(
            store(&mut m, buf, 1),
            &["write-after-read race", "workgroup (1,0,0) wave 0", "global_load_dword", "0x200", "release/acquire"],
        );
        // The reader releases after its read (a returning atomic), the storer acquires it.
        let (mut m, buf) = setup(a);
        load(&mut m, buf, 2);
        bump(&mut m, buf, 2);
        bump(&mut m, buf, 1);
        store(&mut m, buf, 1).unwrap();
        // The storer's atomic came first: it acquired nothing of the reader's.
        let (mut m, buf) = setup(a);
        bump(&mut m, buf, 1);
        load(&mut m, buf, 2);
        bump(&mut m, buf, 2);
        race(store(&mut m, buf, 1), &["write-after-read race"]);
        // The reader's release atomic came before its read.
        let (mut m, buf) = setup(a);
        bump(&mut m, buf, 2);
        load(&mut m, buf, 2);
        bump(&mut m, buf, 1);
        race(store(&mut m, buf, 1), &["write-after-read race"]);
    }
}

#[test]
fn a_store_over_another_waves_read_needs_a_barrier() {
    for a in Arch::ALL {
        // Wave 1 of workgroup 0 reads, wave 0 overwrites without a barrier between.
        let (mut m, buf) = setup(a);
        load(&mut m, buf, 3);
        race(
            store(&mut m, buf, 1),
            &["write-after-read race", "workgroup (0,0,0) wave 1", "no `s_barrier`"],
        );
        // A barrier after the read orders it.
        let (mut m, buf) = setup(a);
        load(&mut m, buf, 3);
        m.cache().unwrap().barrier(0);
        store(&mut m, buf, 1).unwrap();
        // A wave's own read does not race with its store, but another wave's
        // earlier read still does.
        let (mut m, buf) = setup(a);
        load(&mut m, buf, 3);
        load(&mut m, buf, 1);
        race(store(&mut m, buf, 1), &["wave 1", "no `s_barrier`"]);
        let (mut m, buf) = setup(a);
        load(&mut m, buf, 1);
        store(&mut m, buf, 1).unwrap();
        // A barrier before the read does not order it.
        let (mut m, buf) = setup(a);
        m.cache().unwrap().barrier(0);
        load(&mut m, buf, 3);
        race(store(&mut m, buf, 1), &["no `s_barrier`"]);
    }
}

#[test]
fn atomics_neither_record_reads_nor_race_as_stores() {
    for a in Arch::ALL {
        // A CAS loop's shape: another workgroup reads, then both make atomics on
        // the same bytes with no order: atomics may overlap.
        let (mut m, buf) = setup(a);
        load(&mut m, buf, 2);
        m.set_access(Some(access(1, "global_atomic_cmpswap", GLC, 0x500)));
        let mut b = [0u8; 4];
        m.load(buf + 4, &mut b).unwrap();
        m.write(buf + 4, &[2; 4]).unwrap();
        // An atomic's read is not a read a later plain store must follow
        // (it is the write-after-write check's business).
        let (mut m, buf) = setup(a);
        bump(&mut m, buf, 3);
        m.set_access(Some(access(1, "global_store_dword", NONE, 0x300)));
        m.write(buf, &[0; 4]).unwrap();
    }
}
