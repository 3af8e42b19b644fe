//! Workgroups (and waves) run in a seeded, permuted order (`exec::Order`), so
//! communication between workgroups that only works in launch order is exposed.
//! Handmade gfx90a programs (words from llvm-mc 14, `-mcpu=gfx90a -show-encoding`).

use convgrad_isa::exec::{Launch, Memory, Order, Program, run};
use convgrad_isa::{Arch, Kernel, KernelDescriptor};

/// A kernel whose workgroup id x is in s2 (USER_SGPR_COUNT 2,
/// ENABLE_SGPR_WORKGROUP_ID_X) and whose buffer is s[0:1] = 0x1_0000_0000.
fn kernel(body: &[u32]) -> Kernel {
    let words: Vec<u32> = [&[0xBE80_0080u32, 0xBE81_0081][..], body].concat();
    let mut d = [0u8; 64];
    d[52] = 0x84;
    Kernel {
        name: "handmade".into(),
        entry: 0x1000,
        code: words.iter().flat_map(|w| w.to_le_bytes()).collect(),
        descriptor: KernelDescriptor::parse(&d).unwrap(),
        meta: Default::default(),
    }
}

/// Each workgroup takes a ticket (atomic add of 1 at byte 0, lane 0 only) and
/// stores it at 4 + 4 * workgroup id: the tickets are the order the workgroups ran in.
fn tickets(n: u32, order: Order) -> Vec<u32> {
    let body = [
        0xBEFE_0181, // s_mov_b64 exec, 1
        0x7E02_0280, // v_mov_b32_e32 v1, 0
        0x7E04_0281, // v_mov_b32_e32 v2, 1
        0xDD09_8000,
        0x0300_0201, // global_atomic_add v3, v1, v2, s[0:1] glc
        0xBF8C_0F70, // s_waitcnt vmcnt(0)
        0x7E08_0202, // v_mov_b32_e32 v4, s2
        0x2408_0882, // v_lshlrev_b32_e32 v4, 2, v4
        0xDC70_8004,
        0x0000_0304, // global_store_dword v4, v3, s[0:1] offset:4
        0xBF81_0000, // s_endpgm
    ];
    let p = Program::new(Arch::Gfx90a, &kernel(&body)).unwrap();
    let mut mem = Memory::new();
    let buf = mem.alloc("buf", 4 + 4 * n as usize);
    mem.write(buf, &[0; 4]).unwrap();
    let mut l = Launch::new(n, 64, vec![]);
    l.order = order;
    run(&p, &mut mem, &l).unwrap();
    mem.download(buf + 4, 4 * n as usize)
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn workgroups_run_in_a_seeded_permutation() {
    let n = 37;
    let ident: Vec<u32> = (0..n).collect();
    assert_eq!(tickets(n, Order::Sequential), ident);
    // Seeds = 0 mod 4: the last workgroup first.
    let rev: Vec<u32> = (0..n).rev().collect();
    assert_eq!(tickets(n, Order::Seeded(0)), rev);
    assert_eq!(tickets(n, Order::Seeded(8)), rev);
    // Other seeds: a permutation (every workgroup once), fixed by the seed, and
    // different seeds give different ones.
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    println!("seed {seed}");
    let a = tickets(n, Order::Seeded(seed));
    let mut sorted = a.clone();
    sorted.sort();
    assert_eq!(sorted, ident, "seed {seed}: not a permutation");
    assert_ne!(a, ident, "seed {seed}");
    assert_eq!(
        tickets(n, Order::Seeded(seed)),
        a,
        "seed {seed}: not reproducible"
    );
    assert_ne!(
        tickets(n, Order::Seeded(seed + 4)),
        a,
        "seeds {seed}, {}",
        seed + 4
    );
}

#[test]
fn communication_that_relies_on_launch_order_is_exposed() {
    // Workgroup g stores g at 4*g and, if g > 0, reads workgroup g-1's slot with no
    // synchronization at all: right only when workgroups run in launch order.
    let body = [
        0x7E08_0202, // v_mov_b32_e32 v4, s2
        0x2408_0882, // v_lshlrev_b32_e32 v4, 2, v4
        0x7E06_0202, // v_mov_b32_e32 v3, s2
        0xDC70_8000,
        0x0000_0304, // global_store_dword v4, v3, s[0:1]
        0xBF8C_0F70, // s_waitcnt vmcnt(0)
        0xBF06_8002, // s_cmp_eq_u32 s2, 0
        0xBF85_0003, // s_cbranch_scc1 to s_endpgm
        0xDC50_9FFC,
        0x0500_0004, // global_load_dword v5, v4, s[0:1] offset:-4
        0xBF8C_0F70, // s_waitcnt vmcnt(0)
        0xBF81_0000, // s_endpgm
    ];
    let p = Program::new(Arch::Gfx90a, &kernel(&body)).unwrap();
    let go = |order, cache| {
        let mut mem = Memory::new();
        mem.alloc("buf", 64);
        let mut l = Launch::new(16, 64, vec![]);
        l.order = order;
        l.cache_model = cache;
        run(&p, &mut mem, &l).map_err(|e| e.to_string())
    };
    go(Order::Sequential, false).unwrap();
    let e = go(Order::Seeded(4), false).unwrap_err();
    assert!(
        e.contains("never written") && e.contains("CONVGRAD_ISA_ORDER_SEED=4"),
        "{e}"
    );
    // The cache model calls it a race in any order.
    let e = go(Order::Sequential, true).unwrap_err();
    assert!(
        e.contains("race between workgroups") && e.contains("workgroup (0,0,0) wave 0"),
        "{e}"
    );
}
