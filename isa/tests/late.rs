//! Late memory results (`exec::late`): loads land at the `s_waitcnt` that covers
//! them, in the order the ISA guides give per counter; early reads, early
//! overwrites and reads of other waves' unreleased stores are errors. Handmade
//! gfx90a programs (words from llvm-mc 14, `-mcpu=gfx90a -show-encoding`).

use convgrad_isa::exec::{Launch, Memory, Order, Program, run};
use convgrad_isa::{Arch, Kernel, KernelDescriptor};

const S_MOV_S0_0: u32 = 0xBE80_0080;
const S_MOV_S1_1: u32 = 0xBE81_0081;
const V_MOV_V1_0: u32 = 0x7E02_0280;
/// global_load_dword v2, v1, s[0:1]
const LOAD_V2: [u32; 2] = [0xDC50_8000, 0x0200_0001];
/// global_load_dword v6, v1, s[0:1] offset:4
const LOAD_V6_4: [u32; 2] = [0xDC50_8004, 0x0600_0001];
/// v_mov_b32_e32 v3, v2
const MOV_V3_V2: u32 = 0x7E06_0302;
/// v_mov_b32_e32 v3, v6
const MOV_V3_V6: u32 = 0x7E06_0306;
/// v_mov_b32_e32 v2, 7
const MOV_V2_7: u32 = 0x7E04_0287;
const WAIT_VM0: u32 = 0xBF8C_0F70;
const WAIT_VM1: u32 = 0xBF8C_0F71;
const WAIT_LGKM0: u32 = 0xBF8C_C07F;
const WAIT_LGKM1: u32 = 0xBF8C_C17F;
/// global_store_dword v1, v3, s[0:1] offset:256
const STORE_V3_256: [u32; 2] = [0xDC70_8100, 0x0000_0301];
const ENDPGM: u32 = 0xBF81_0000;

fn kernel(words: &[u32]) -> Kernel {
    Kernel {
        name: "handmade".into(),
        entry: 0x1000,
        code: words.iter().flat_map(|w| w.to_le_bytes()).collect(),
        descriptor: KernelDescriptor::parse(&[0; 64]).unwrap(),
        meta: Default::default(),
    }
}

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// Runs `words` as one workgroup of `block` work-items on gfx90a over a 512-byte
/// buffer at 0x1_0000_0000 (s[0:1]) whose first 8 bytes are `init`; returns the
/// buffer or the error.
fn go(words: &[u32], block: u32, lds: u32, init: [u32; 2]) -> Result<Vec<u8>, String> {
    go_in(words, block, lds, init, Order::Sequential)
}

/// [`go`] with the waves (and workgroups) in `order`.
fn go_in(
    words: &[u32],
    block: u32,
    lds: u32,
    init: [u32; 2],
    order: Order,
) -> Result<Vec<u8>, String> {
    let p = Program::new(Arch::Gfx90a, &kernel(words)).unwrap();
    let mut mem = Memory::new();
    let buf = mem.alloc("buf", 512);
    assert_eq!(buf, 0x1_0000_0000, "the programs address the first buffer");
    let bytes: Vec<u8> = init.iter().flat_map(|w| w.to_le_bytes()).collect();
    mem.write(buf, &bytes).unwrap();
    let mut l = Launch::new(1, block, vec![]);
    l.dynamic_lds = lds;
    l.late_results = true;
    l.order = order;
    run(&p, &mut mem, &l).map_err(|e| e.to_string())?;
    Ok(mem.download(buf, 512))
}

fn word(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

#[test]
fn a_load_lands_at_its_wait() {
    let s = seed();
    let init = [s as u32, (s >> 32) as u32];
    let head = [S_MOV_S0_0, S_MOV_S1_1, V_MOV_V1_0, LOAD_V2[0], LOAD_V2[1]];
    // Waited for: v3 takes the loaded value.
    let ok: Vec<u32> = [&head[..], &[WAIT_VM0, MOV_V3_V2], &STORE_V3_256, &[ENDPGM]].concat();
    assert_eq!(word(&go(&ok, 64, 0, init).unwrap(), 256), init[0]);
    // Read before the wait: an error naming kernel, address, register and load.
    let early: Vec<u32> = [&head[..], &[MOV_V3_V2, WAIT_VM0], &STORE_V3_256, &[ENDPGM]].concat();
    let e = go(&early, 64, 0, init).unwrap_err();
    for want in [
        "handmade",
        "0x1014",
        "reads v2",
        "global_load_dword",
        "0x100c",
        "vmcnt",
    ] {
        assert!(e.contains(want), "missing `{want}` in: {e}");
    }
    // Overwriting the destination before the wait: the load could land after it.
    let waw: Vec<u32> = [&head[..], &[MOV_V2_7, WAIT_VM0, ENDPGM]].concat();
    let e = go(&waw, 64, 0, init).unwrap_err();
    assert!(e.contains("writes v2 while") && e.contains("vmcnt"), "{e}");
    // Without late results (the old model) the early read went through.
    let p = Program::new(Arch::Gfx90a, &kernel(&early)).unwrap();
    let mut mem = Memory::new();
    let buf = mem.alloc("buf", 512);
    let bytes: Vec<u8> = init.iter().flat_map(|w| w.to_le_bytes()).collect();
    mem.write(buf, &bytes).unwrap();
    let mut l = Launch::new(1, 64, vec![]);
    l.late_results = false;
    l.order = Order::Sequential;
    run(&p, &mut mem, &l).unwrap();
    assert_eq!(word(&mem.download(buf, 512), 256), init[0]);
}

#[test]
fn vmcnt_lands_in_issue_order() {
    let s = seed();
    let init = [s as u32, (s >> 32) as u32];
    let head = [
        S_MOV_S0_0,
        S_MOV_S1_1,
        V_MOV_V1_0,
        LOAD_V2[0],
        LOAD_V2[1],
        LOAD_V6_4[0],
        LOAD_V6_4[1],
        WAIT_VM1,
    ];
    // vmcnt(1) with two loads outstanding: the older (v2) is complete.
    let older: Vec<u32> = [&head[..], &[MOV_V3_V2], &STORE_V3_256, &[WAIT_VM0, ENDPGM]].concat();
    assert_eq!(word(&go(&older, 64, 0, init).unwrap(), 256), init[0]);
    // ... the younger (v6) is not.
    let younger: Vec<u32> = [&head[..], &[MOV_V3_V6, WAIT_VM0, ENDPGM]].concat();
    let e = go(&younger, 64, 0, init).unwrap_err();
    assert!(e.contains("reads v6") && e.contains("0x1014"), "{e}");
}

#[test]
fn a_complete_flat_load_completes_older_vector_loads() {
    let s = seed();
    let init = [s as u32, (s >> 32) as u32];
    // global_load v2 (older), then flat_load_dword v6, v[8:9] (FLAT counts in lgkmcnt
    // too): lgkmcnt(0) completes the FLAT load, so the older v2 (vmcnt returns in
    // order) is complete as well.
    let flat = [0x7E10_0280, 0x7E12_0281, 0xDC50_0000, 0x0600_0008];
    let prog = |wait: u32| {
        [
            &[S_MOV_S0_0, S_MOV_S1_1, V_MOV_V1_0, LOAD_V2[0], LOAD_V2[1]][..],
            &flat,
            &[wait, MOV_V3_V2],
            &STORE_V3_256,
            &[WAIT_VM0, ENDPGM],
        ]
        .concat()
    };
    assert_eq!(
        word(&go(&prog(WAIT_LGKM0), 64, 0, init).unwrap(), 256),
        init[0]
    );
    // lgkmcnt(1) guarantees nothing about the FLAT load (it counts there in no order).
    let e = go(&prog(WAIT_LGKM1), 64, 0, init).unwrap_err();
    assert!(e.contains("reads v2"), "{e}");
}

#[test]
fn scalar_loads_need_a_zero_count() {
    let s = seed();
    let init = [s as u32, (s >> 32) as u32];
    // s_load_dword s4, s[0:1], 0x0; s_load_dword s5, s[0:1], 0x4; wait; s_mov_b32 s6, s4
    let head = [S_MOV_S0_0, S_MOV_S1_1, 0xC002_0100, 0, 0xC002_0140, 4];
    let mov = 0xBE86_0004;
    // lgkmcnt(1): either load may still be out (SMEM returns out of order).
    let e = go(
        &[&head[..], &[WAIT_LGKM1, mov, WAIT_LGKM0, ENDPGM]].concat(),
        64,
        0,
        init,
    )
    .unwrap_err();
    assert!(
        e.contains("reads s4") && e.contains("s_load_dword") && e.contains("lgkmcnt"),
        "{e}"
    );
    go(
        &[&head[..], &[WAIT_LGKM0, mov, ENDPGM]].concat(),
        64,
        0,
        init,
    )
    .unwrap();
}

#[test]
fn lds_stores_must_complete_before_the_barrier() {
    // Each lane stores its id at 4*id; after the barrier every lane reads the other
    // wave's slot (4*id xor 256).
    let shl = 0x2402_0082; // v_lshlrev_b32_e32 v1, 2, v0
    let store = [0xD81A_0000, 0x0000_0001]; // ds_write_b32 v1, v0
    let xor = [0x2A02_02FF, 0x100]; // v_xor_b32_e32 v1, 0x100, v1
    let read = [0xD86C_0000, 0x0400_0001]; // ds_read_b32 v4, v1
    let barrier = 0xBF8A_0000;
    let tail = [&xor[..], &read, &[WAIT_LGKM0, ENDPGM]].concat();
    let ok = [&[shl][..], &store, &[WAIT_LGKM0, barrier], &tail].concat();
    go(&ok, 128, 512, [0, 0]).unwrap();
    let bad = [&[shl][..], &store, &[barrier], &tail].concat();
    let e = go(&bad, 128, 512, [0, 0]).unwrap_err();
    assert!(
        e.contains("LDS byte") && e.contains("not known to be complete"),
        "{e}"
    );
}

#[test]
fn global_stores_must_complete_before_the_barrier() {
    // Lane t stores t at 4*t; after the barrier it reads the other wave's slot,
    // 4*(t xor 64).
    let shl = 0x2402_0082; // v_lshlrev_b32_e32 v1, 2, v0
    let store = [0xDC70_8000, 0x0000_0001]; // global_store_dword v1, v0, s[0:1]
    let xor = [0x2A02_02FF, 0x100]; // v_xor_b32_e32 v1, 0x100, v1
    let load = [0xDC50_8000, 0x0500_0001]; // global_load_dword v5, v1, s[0:1]
    let barrier = 0xBF8A_0000;
    let prog = |wait: bool| {
        let mut w = vec![S_MOV_S0_0, S_MOV_S1_1, shl];
        w.extend(store);
        if wait {
            w.push(WAIT_VM0);
        }
        w.push(barrier);
        w.extend(xor);
        w.extend(load);
        w.extend([WAIT_VM0, ENDPGM]);
        w
    };
    go(&prog(true), 128, 0, [0, 0]).unwrap();
    let e = go(&prog(false), 128, 0, [0, 0]).unwrap_err();
    assert!(
        e.contains("stored by workgroup (0,0,0) wave 1") && e.contains("not known to be complete"),
        "{e}"
    );
}

#[test]
fn stores_of_an_ended_wave_stay_unreleased_to_later_workgroups() {
    // Two workgroups of one wave; workgroup g stores lane ids at 256*g + 4*lane;
    // workgroup 0 then ends, workgroup 1 reads workgroup 0's slots. (A wait for a
    // later load of workgroup 0 would complete its store too: vmcnt is in order.)
    // The workgroup id is in s2 (USER_SGPR_COUNT 2, ENABLE_SGPR_WORKGROUP_ID_X).
    let shl = 0x2402_0082; // v_lshlrev_b32_e32 v1, 2, v0
    let wg_off = [0xD1FD_0001u32, 0x0405_1002]; // v_lshl_add_u32 v1, s2, 8, v1
    let store = [0xDC70_8000, 0x0000_0001]; // global_store_dword v1, v0, s[0:1]
    let own = 0x2402_0082; // v_lshlrev_b32_e32 v1, 2, v0 (workgroup 0's slot)
    let load = [0xDC50_8000, 0x0500_0001]; // global_load_dword v5, v1, s[0:1]
    let prog = |wait: bool| {
        let mut w = vec![S_MOV_S0_0, S_MOV_S1_1, shl];
        w.extend(wg_off);
        w.extend(store);
        if wait {
            w.push(WAIT_VM0);
        }
        // s_cmp_eq_u32 s2, 0; s_cbranch_scc1 to s_endpgm
        w.extend([0xBF06_8002, 0xBF85_0004]);
        w.push(own);
        w.extend(load);
        w.extend([WAIT_VM0, ENDPGM]);
        w
    };
    let mut k = kernel(&prog(true));
    let mut d = [0u8; 64];
    d[52] = 0x84;
    k.descriptor = KernelDescriptor::parse(&d).unwrap();
    let p = Program::new(Arch::Gfx90a, &k).unwrap();
    let mut l = Launch::new(2, 64, vec![]);
    l.late_results = true;
    l.order = Order::Sequential;
    // Unfenced communication between workgroups: the cache model calls it a race
    // (`tests/cache.rs`); here only late results are under test.
    l.cache_model = false;
    let mut mem = Memory::new();
    let buf = mem.alloc("buf", 512);
    mem.write(buf, &[0; 512]).unwrap();
    run(&p, &mut mem, &l).unwrap();
    let got = mem.download(buf, 512);
    assert_eq!(
        word(&got, 256 + 4 * 5),
        5,
        "workgroup 1 stored at 256 + 4*lane"
    );
    k.code = prog(false).iter().flat_map(|w| w.to_le_bytes()).collect();
    let p = Program::new(Arch::Gfx90a, &k).unwrap();
    let e = run(&p, &mut mem, &l).unwrap_err().to_string();
    assert!(
        e.contains("workgroup (1,0,0)") && e.contains("stored by workgroup (0,0,0) wave 0"),
        "{e}"
    );
}
