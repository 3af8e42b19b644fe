//! Wait states (issue #42, `src/exec/hazard.rs`): hand-made sequences of a writer,
//! `s_nop`s and a dependent instruction, encoded as the shipped code objects encode
//! them. Each rule must fail one wait state short of its count and pass at it.

mod common;
use common::Machine;
use convgrad_isa::Arch;
use convgrad_isa::exec::hazard::mfma_kind;

/// A CDNA wave with wait states checked, a buffer at v[0:1] (stores) and s[34:35] +
/// v15 (loads), v29 = 1.0 (compares).
fn machine(arch: Arch) -> Machine {
    let mut m = Machine::new(arch);
    m.wave.hazard.on = true;
    let base = m.mem.upload("D", &[0u8; 4096]);
    m.wave.sgpr[35] = (base >> 32) as u32;
    for l in 0..64 {
        m.set_v(0, l, base as u32);
        m.set_v(1, l, (base >> 32) as u32);
        m.set_v(15, l, 0);
        m.set_v(29, l, 1.0f32.to_bits());
        m.set_v(2, l, base as u32);
    }
    m
}

/// `v_mfma_f32_16x16x16f16 v[d:d+3], v[a:a+1], v[b:b+1], v[c:c+3]`.
fn mfma16(d: u32, a: u32, b: u32, c: u32) -> Vec<u32> {
    vec![
        0xD3CD_0000 | d,
        (256 + a) | (256 + b) << 9 | (256 + c) << 18,
    ]
}
/// `v_mfma_f32_32x32x8f16 v[d:d+15], v[a:a+1], v[b:b+1], v[c:c+15]`.
fn mfma32(d: u32, a: u32, b: u32, c: u32) -> Vec<u32> {
    vec![
        0xD3CC_0000 | d,
        (256 + a) | (256 + b) << 9 | (256 + c) << 18,
    ]
}
/// `v_mov_b32_e32 vd, vs`.
fn mov(d: u32, s: u32) -> Vec<u32> {
    vec![0x7E00_0200 | d << 17 | (256 + s)]
}
/// `k` wait states of `s_nop`.
fn gap(mut k: u32) -> Vec<Vec<u32>> {
    let mut v = Vec::new();
    while k > 0 {
        let n = k.min(16);
        v.push(vec![0xBF80_0000 | (n - 1)]);
        k -= n;
    }
    v
}

/// Runs `writer`, `k` wait states, `reader` for k = need - 1 (must fail naming
/// `rule`) and k = need (must pass).
fn rule(arch: Arch, writer: &[Vec<u32>], reader: &[Vec<u32>], need: u32, rule: &str) {
    let seq = |k: u32| {
        let mut s = writer.to_vec();
        s.extend(gap(k));
        s.extend(reader.iter().cloned());
        s
    };
    if need > 0 {
        let e = machine(arch).run(&seq(need - 1)).expect_err(&format!(
            "{arch} `{rule}`: {} wait states must fail",
            need - 1
        ));
        assert!(
            e.contains("wait-state hazard") && e.contains(&format!("`{rule}`")),
            "{arch} `{rule}`: {e}"
        );
        assert!(
            e.contains(&format!("{need} required")),
            "{arch} `{rule}`: {e}"
        );
    }
    let mut m = machine(arch);
    m.run(&seq(need))
        .unwrap_or_else(|e| panic!("{arch} `{rule}`: {need} wait states must pass: {e}"));
}

const BOTH: [Arch; 2] = [Arch::Gfx90a, Arch::Gfx942];

#[test]
fn mfma_pass_counts_and_xdl() {
    // SISchedule.td (SIDPFullSpeedModel / SIDPGFX940FullSpeedModel), is_gfx940_xdl.
    let k = |a, n| mfma_kind(a, n);
    assert_eq!(k(Arch::Gfx90a, "v_mfma_f32_16x16x16f16"), (8, true, false));
    assert_eq!(
        k(Arch::Gfx90a, "v_mfma_f32_32x32x8bf16_1k"),
        (16, true, false)
    );
    assert_eq!(k(Arch::Gfx90a, "v_mfma_f32_32x32x2f32"), (16, true, false));
    assert_eq!(k(Arch::Gfx942, "v_mfma_f32_16x16x16_f16"), (4, true, false));
    assert_eq!(
        k(Arch::Gfx942, "v_mfma_f32_16x16x16_bf16"),
        (4, true, false)
    );
    assert_eq!(k(Arch::Gfx942, "v_mfma_f32_32x32x8_f16"), (8, true, false));
    assert_eq!(k(Arch::Gfx942, "v_mfma_f32_16x16x4_f32"), (8, false, false));
    assert_eq!(
        k(Arch::Gfx942, "v_mfma_f32_32x32x2_f32"),
        (16, false, false)
    );
}

#[test]
fn valu_write_then_mfma_read() {
    for a in BOTH {
        rule(
            a,
            &[mov(38, 3)],
            &[mfma16(10, 38, 36, 10)],
            2,
            "valu-vgpr-mfma",
        );
    }
}

#[test]
fn valu_exec_write_then_mfma() {
    // v_cmpx_lt_f32_e32 vcc, 0, v29 (v29 = 1.0: EXEC stays full).
    for a in BOTH {
        rule(
            a,
            &[vec![0x7CA2_3A80]],
            &[mfma16(10, 38, 36, 10)],
            4,
            "valu-exec-mfma",
        );
    }
}

#[test]
fn mfma_result_read_by_valu() {
    rule(
        Arch::Gfx90a,
        &[mfma16(10, 38, 36, 10)],
        &[mov(3, 11)],
        11,
        "mfma-valu-read",
    );
    rule(
        Arch::Gfx942,
        &[mfma16(10, 38, 36, 10)],
        &[mov(3, 11)],
        7,
        "mfma-valu-read",
    );
    rule(
        Arch::Gfx90a,
        &[mfma32(40, 38, 36, 40)],
        &[mov(3, 55)],
        19,
        "mfma-valu-read",
    );
    rule(
        Arch::Gfx942,
        &[mfma32(40, 38, 36, 40)],
        &[mov(3, 55)],
        11,
        "mfma-valu-read",
    );
}

#[test]
fn mfma_result_read_by_a_store() {
    // flat_store_dword v[0:1], v12
    let store = vec![0xDC70_0000, 12 << 8];
    rule(
        Arch::Gfx90a,
        &[mfma16(10, 38, 36, 10)],
        std::slice::from_ref(&store),
        11,
        "mfma-mem-read",
    );
    rule(
        Arch::Gfx942,
        &[mfma16(10, 38, 36, 10)],
        &[store],
        7,
        "mfma-mem-read",
    );
}

#[test]
fn mfma_result_as_next_mfma_sources() {
    rule(
        Arch::Gfx90a,
        &[mfma16(10, 38, 36, 10)],
        &[mfma16(20, 10, 36, 20)],
        11,
        "mfma-srcab",
    );
    rule(
        Arch::Gfx942,
        &[mfma16(10, 38, 36, 10)],
        &[mfma16(20, 36, 12, 20)],
        7,
        "mfma-srcab",
    );
    // SrcC overlapping D partially; the same registers need none (back-to-back accumulation).
    rule(
        Arch::Gfx90a,
        &[mfma16(10, 38, 36, 10)],
        &[mfma16(20, 38, 36, 12)],
        8,
        "mfma-srcc-overlap",
    );
    rule(
        Arch::Gfx942,
        &[mfma16(10, 38, 36, 10)],
        &[mfma16(20, 38, 36, 12)],
        5,
        "mfma-srcc-overlap",
    );
    for a in BOTH {
        rule(
            a,
            &[mfma16(10, 38, 36, 10)],
            &[mfma16(10, 38, 36, 10)],
            0,
            "mfma-srcc-same",
        );
    }
}

#[test]
fn mfma_result_overwritten_and_srcc_overwritten() {
    rule(
        Arch::Gfx90a,
        &[mfma16(10, 38, 36, 10)],
        &[mov(11, 3)],
        11,
        "mfma-waw",
    );
    rule(
        Arch::Gfx942,
        &[mfma16(10, 38, 36, 10)],
        &[mov(11, 3)],
        7,
        "mfma-waw",
    );
    rule(
        Arch::Gfx90a,
        &[mfma16(20, 38, 36, 40)],
        &[mov(41, 3)],
        7,
        "srcc-war",
    );
    rule(
        Arch::Gfx942,
        &[mfma16(20, 38, 36, 40)],
        &[mov(41, 3)],
        3,
        "srcc-war",
    );
}

#[test]
fn gfx942_valu_forwarding() {
    // v_cmp_lt_f32_e32 vcc, 0, v29; v_cndmask_b32_e32 v11, 0, v28, vcc.
    let (cmp, sel) = (vec![0x7C82_3A80], vec![0x0016_3880]);
    rule(
        Arch::Gfx942,
        std::slice::from_ref(&cmp),
        std::slice::from_ref(&sel),
        2,
        "valu-sgpr-valu",
    );
    rule(Arch::Gfx90a, &[cmp], &[sel], 0, "valu-sgpr-valu");
    // v_rcp_iflag_f32_e32 v29, v29; v_mov_b32 v3, v29.
    let rcp = vec![0x7E3A_471D];
    rule(
        Arch::Gfx942,
        std::slice::from_ref(&rcp),
        &[mov(3, 29)],
        1,
        "trans-use",
    );
    rule(Arch::Gfx90a, &[rcp], &[mov(3, 29)], 0, "trans-use");
}

#[test]
fn valu_sgpr_write_then_vmem_read() {
    // v_readfirstlane_b32 s34, v0; global_load_dword v10, v15, s[34:35] offset:640.
    let rfl = vec![0x7E44_0500];
    let load = vec![0xDC50_8280, 0x0A22_000F];
    for a in BOTH {
        rule(
            a,
            std::slice::from_ref(&rfl),
            std::slice::from_ref(&load),
            5,
            "valu-sgpr-vmem",
        );
    }
}

#[test]
fn wide_store_data_overwritten() {
    // flat_store_dwordx4 v[0:1], v[4:7]; v_mov_b32 v5, v3.
    let st = vec![0xDC7C_0000, 4 << 8];
    rule(
        Arch::Gfx90a,
        std::slice::from_ref(&st),
        &[mov(5, 3)],
        1,
        "wide-store-data",
    );
    rule(Arch::Gfx942, &[st], &[mov(5, 3)], 2, "wide-store-data");
}

#[test]
fn nops_count_their_states_and_are_marked_needed() {
    let mut m = machine(Arch::Gfx90a);
    let mut seq = vec![mfma16(10, 38, 36, 10)];
    seq.push(vec![0xBF80_0009]); // s_nop 9: 10 wait states
    seq.push(mov(3, 11)); // needs 11: 10 + the s_nop... one short
    assert!(m.run(&seq).is_err());
    let mut m = machine(Arch::Gfx90a);
    seq.insert(1, mov(4, 5));
    m.run(&seq).unwrap();
    assert_eq!(m.counters.nop_wait_states, 10);
    assert_eq!(m.counters.nops_needed.get(&12), Some(&"mfma-valu-read"));
}

/// `v_mfma_f64_16x16x4f64 v[d:d+7], v[a:a+1], v[b:b+1], v[c:c+7]` (VOP3P opcode 0x6e).
fn dgemm16(d: u32, a: u32, b: u32, c: u32) -> Vec<u32> {
    vec![
        0xD3EE_0000 | d,
        (256 + a) | (256 + b) << 9 | (256 + c) << 18,
    ]
}

/// A DGEMM's inputs: v[50:51] = 1.0, v[52:53] = 2.0 (f64), v[60:69] = 0.
fn dgemm_inputs(m: &mut Machine) {
    for l in 0..64 {
        for (r, x) in [(50, 1.0f64), (52, 2.0)] {
            m.set_v(r, l, x.to_bits() as u32);
            m.set_v(r + 1, l, (x.to_bits() >> 32) as u32);
        }
        for r in 60..70 {
            m.set_v(r, l, 0);
        }
    }
}

/// As [`rule`], on a machine with DGEMM inputs.
fn rule64(arch: Arch, writer: &[Vec<u32>], reader: &[Vec<u32>], need: u32, id: &str) {
    let seq = |k: u32| {
        let mut s = writer.to_vec();
        s.extend(gap(k));
        s.extend(reader.iter().cloned());
        s
    };
    let run = |k: u32| {
        let mut m = machine(arch);
        dgemm_inputs(&mut m);
        m.run(&seq(k))
    };
    if need > 0 {
        let e = run(need - 1).expect_err(&format!(
            "{arch} `{id}`: {} wait states must fail",
            need - 1
        ));
        assert!(
            e.contains(&format!("`{id}`")) && e.contains(&format!("{need} required")),
            "{arch} `{id}`: {e}"
        );
    }
    run(need).unwrap_or_else(|e| panic!("{arch} `{id}`: {need} wait states must pass: {e}"));
}

#[test]
fn dgemm_rows() {
    // LLVM checkMAIHazards90A / checkMAIVALUHazards (DMFMA16x16*: 8-pass DGEMM).
    assert_eq!(
        mfma_kind(Arch::Gfx90a, "v_mfma_f64_16x16x4f64"),
        (8, false, true)
    );
    assert_eq!(
        mfma_kind(Arch::Gfx90a, "v_mfma_f64_4x4x4f64"),
        (4, false, true)
    );
    assert_eq!(
        mfma_kind(Arch::Gfx942, "v_mfma_f64_4x4x4_4b_f64"),
        (4, false, true)
    );
    let w = dgemm16(60, 50, 52, 60);
    // v_fma_f64 v[90:91], v[50:51], v[50:51], v[50:51] (VOP3 0x1cc).
    let fma = vec![
        0xD1CC_0000 | 90,
        (256 + 50) | (256 + 50) << 9 | (256 + 50) << 18,
    ];
    // flat_store_dword v[0:1], v61
    let store = vec![0xDC70_0000, 61 << 8];
    for a in BOTH {
        let w = std::slice::from_ref(&w);
        rule64(a, w, &[mov(90, 61)], 11, "dgemm-valu-read");
        rule64(a, w, std::slice::from_ref(&store), 18, "dgemm-mem-read");
        rule64(a, w, &[mov(62, 29)], 11, "dgemm-waw");
        rule64(a, w, &[mfma16(80, 60, 52, 80)], 11, "dgemm-srcab");
        // A DGEMM reading an overlapping SrcC; the same registers need none.
        rule64(a, w, &[dgemm16(70, 50, 52, 62)], 9, "dgemm-srcc-overlap");
        rule64(a, w, &[dgemm16(60, 50, 52, 60)], 0, "dgemm-srcc-overlap");
        // Any DGEMM then v_fma_f64, whatever the registers.
        rule64(a, w, std::slice::from_ref(&fma), 2, "dgemm-fma64");
    }
    // An XDL MFMA's D read as a DGEMM's SrcC: gfx90a 9 (8 passes), gfx942 passes + 1.
    rule64(
        Arch::Gfx90a,
        &[mfma16(60, 38, 36, 60)],
        &[dgemm16(70, 50, 52, 60)],
        9,
        "mfma-srcc-overlap-dgemm",
    );
    rule64(
        Arch::Gfx942,
        &[mfma16(60, 38, 36, 60)],
        &[dgemm16(70, 50, 52, 60)],
        5,
        "mfma-srcc-overlap",
    );
}

#[test]
fn dgemm_result_is_the_f64_product() {
    // D = C + A*B with A = 1.0, B = 2.0 over k = 4: every element 8.0, twice.
    let mut m = machine(Arch::Gfx90a);
    dgemm_inputs(&mut m);
    m.run(&[dgemm16(60, 50, 52, 60), dgemm16(60, 50, 52, 60)])
        .unwrap();
    for l in 0..64 {
        for e in 0..4 {
            let x = m.v(60 + 2 * e, l) as u64 | (m.v(61 + 2 * e, l) as u64) << 32;
            assert_eq!(f64::from_bits(x), 16.0, "lane {l} element {e}");
        }
    }
}

#[test]
fn setreg_rows() {
    // s_setreg_b32 hwreg(HW_REG_MODE, 0, 32), s5 (SOPK 18); s_getreg_b32 s6, the same (SOPK 17).
    let set = vec![0xB900_0000 | 5 << 16 | 0xF801];
    let get = vec![0xB880_0000 | 6 << 16 | 0xF801];
    // Another register (HW_REG_TRAPSTS, id 3): no dependency.
    let get_other = vec![0xB880_0000 | 6 << 16 | 0xF803];
    for a in BOTH {
        rule(
            a,
            std::slice::from_ref(&set),
            std::slice::from_ref(&get),
            2,
            "setreg-getreg",
        );
        rule(
            a,
            std::slice::from_ref(&set),
            std::slice::from_ref(&set),
            2,
            "setreg-setreg",
        );
        rule(
            a,
            std::slice::from_ref(&set),
            std::slice::from_ref(&get_other),
            0,
            "setreg-getreg",
        );
    }
    // The value round-trips through the field: bits 4..12 of MODE.
    let mut m = machine(Arch::Gfx942);
    m.wave.sgpr[5] = 0x1ab;
    let field = 1 | 4 << 6 | 7 << 11; // id 1, offset 4, size 8
    m.run(&[
        vec![0xB900_0000 | 5 << 16 | field],
        gap(2).remove(0),
        vec![0xB880_0000 | 6 << 16 | field],
    ])
    .unwrap();
    assert_eq!(m.wave.sgpr[6], 0xab);
    assert_eq!(m.wave.hwreg[1], 0xab << 4);
}

/// A gfx1100 wave32 with hazards on and v29 = 1.0.
fn gfx11() -> Machine {
    let mut m = Machine::new(Arch::Gfx1100);
    m.wave.hazard.on = true;
    for l in 0..32 {
        m.set_v(29, l, 1.0f32.to_bits());
    }
    m
}

#[test]
fn gfx1100_trans_use_needs_depctr_or_enough_valus() {
    // v_exp_f32 v5, v29 (GFX11 VOP1 37); v_mov_b32 v3, v5; s_waitcnt_depctr 0x0fff;
    // v_nop (VOP1 0); ds/vmem also expire it (not used here).
    let exp = vec![0x7E00_0000 | 5 << 17 | 37 << 9 | (256 + 29)];
    let vnop = vec![0x7E00_0000];
    let depctr = vec![0xBF88_0FFF];
    let seq = |between: Vec<Vec<u32>>| {
        let mut s = vec![exp.clone()];
        s.extend(between);
        s.push(mov(3, 5));
        s
    };
    for k in 0..=5 {
        let e = gfx11()
            .run(&seq(vec![vnop.clone(); k]))
            .expect_err("a trans result read within 5 VALUs must fail");
        assert!(e.contains("`gfx11-trans-use`"), "{e}");
    }
    gfx11().run(&seq(vec![vnop.clone(); 6])).unwrap();
    gfx11().run(&seq(vec![depctr.clone()])).unwrap();
    // s_nop does not help (not a VALU, no va_vdst wait).
    assert!(gfx11().run(&seq(gap(16))).is_err());
    // Two transcendentals in between expire it too (more than 1 TRANS).
    let exp2 = vec![0x7E00_0000 | 6 << 17 | 37 << 9 | (256 + 29)];
    gfx11().run(&seq(vec![exp2.clone(), exp2])).unwrap();
}

#[test]
fn gfx1100_wmma_result_as_next_wmma_source_needs_a_valu() {
    // v_wmma_f32_16x16x16_f16 v[d:d+7], v[a:a+7], v[b:b+7], v[c:c+7].
    let wmma = |d: u32, a: u32, b: u32, c: u32| {
        vec![
            0xCC40_4000 | d,
            (256 + a) | (256 + b) << 9 | (256 + c) << 18 | 3 << 27,
        ]
    };
    let first = wmma(0, 8, 16, 0);
    let e = gfx11()
        .run(&[first.clone(), wmma(24, 0, 16, 24)])
        .expect_err("WMMA D read as A at once must fail");
    assert!(e.contains("`gfx11-wmma`"), "{e}");
    let e = gfx11()
        .run(&[first.clone(), wmma(24, 8, 4, 24)])
        .expect_err("overlapping B");
    assert!(e.contains("`gfx11-wmma`"), "{e}");
    gfx11()
        .run(&[first.clone(), vec![0x7E00_0000], wmma(24, 0, 16, 24)])
        .unwrap();
    // Accumulating into the same D (as C) needs nothing.
    gfx11().run(&[first.clone(), wmma(0, 8, 16, 0)]).unwrap();
}
