//! Each emulated matrix instruction against a plain matrix product, with operands
//! distributed into lane registers by this file's own reading of
//! matrix-layouts.md (lane -> element, the direction opposite to the emulator's
//! tables), plus explicit table entries as the note states them.

mod common;
use common::*;
use convgrad_device::arch;
use convgrad_emu::EmuArch;
use convgrad_emu::lane;
use convgrad_emu::matrix::{MatrixOp, Slot};
use half::{bf16, f16};

/// (row, col) of element `e` of lane `l` for the A operand (M x K), B (K x N: (k, n)), C/D (M x N).
fn doc_a(op: MatrixOp, l: u32, e: u32) -> (u32, u32) {
    use MatrixOp::*;
    match op {
        // A[i][k]: lane = i + 32*floor(k/4), element = k mod 4.
        Mfma32x32x8F16 | Mfma32x32x8Bf16 => (l % 32, 4 * (l / 32) + e),
        Mfma16x16x16F16 | Mfma16x16x16Bf16 => (l % 16, 4 * (l / 16) + e),
        // gfx950: lane = i + 32*floor(k/8) resp. i + 16*floor(k/8), element = k mod 8.
        Mfma32x32x16F16 | Mfma32x32x16Bf16 => (l % 32, 8 * (l / 32) + e),
        Mfma16x16x32F16 | Mfma16x16x32Bf16 => (l % 16, 8 * (l / 16) + e),
        // Row i in lanes i and i+16, k = element index.
        Wmma16x16x16F16 | Wmma16x16x16Bf16 => (l % 16, e),
        // GFX12: row l % 16, k = 8*(l/16) + e (GPUOpen's laneWrapped / laneGroup).
        Wmma16x16x16Gfx12F16 | Wmma16x16x16Gfx12Bf16 => (l % 16, 8 * (l / 16) + e),
        // row = groupID for a0,a1,a4,a5, +8 for a2,a3,a6,a7; col = 2t + (e mod 2), +8 for a4..a7.
        Mma16x8x16F16 | Mma16x8x16Bf16 => {
            let (g, t) = (l >> 2, l % 4);
            (g + if matches!(e, 2 | 3 | 6 | 7) { 8 } else { 0 }, 2 * t + e % 2 + if e >= 4 { 8 } else { 0 })
        }
        // m16n8k8 .tf32 (e counts 32-bit elements): row = groupID for a0, a2,
        // +8 for a1, a3; col = t for a0, a1, t + 4 for a2, a3.
        Mma16x8x8Tf32 => {
            let (g, t) = (l >> 2, l % 4);
            (g + if e % 2 == 1 { 8 } else { 0 }, t + if e >= 2 { 4 } else { 0 })
        }
    }
}
fn doc_b(op: MatrixOp, l: u32, e: u32) -> (u32, u32) {
    use MatrixOp::*;
    match op {
        Mfma32x32x8F16 | Mfma32x32x8Bf16 => (4 * (l / 32) + e, l % 32),
        Mfma16x16x16F16 | Mfma16x16x16Bf16 => (4 * (l / 16) + e, l % 16),
        Mfma32x32x16F16 | Mfma32x32x16Bf16 => (8 * (l / 32) + e, l % 32),
        Mfma16x16x32F16 | Mfma16x16x32Bf16 => (8 * (l / 16) + e, l % 16),
        Wmma16x16x16F16 | Wmma16x16x16Bf16 => (e, l % 16),
        Wmma16x16x16Gfx12F16 | Wmma16x16x16Gfx12Bf16 => (8 * (l / 16) + e, l % 16),
        // k = 2t + (e mod 2) for b0,b1, +8 for b2,b3; n = groupID.
        Mma16x8x16F16 | Mma16x8x16Bf16 => (2 * (l % 4) + e % 2 + if e >= 2 { 8 } else { 0 }, l >> 2),
        // m16n8k8 .tf32: k = t for b0, t + 4 for b1; n = groupID.
        Mma16x8x8Tf32 => (l % 4 + if e == 1 { 4 } else { 0 }, l >> 2),
    }
}
fn doc_d(op: MatrixOp, l: u32, g: u32) -> (u32, u32) {
    use MatrixOp::*;
    match op {
        // Inverse: i = 8*floor(g/4) + 4*floor(lane/32) + (g mod 4); j = lane mod 32.
        Mfma32x32x8F16 | Mfma32x32x8Bf16 => (8 * (g / 4) + 4 * (l / 32) + g % 4, l % 32),
        // Inverse: i = 4*floor(lane/16) + g; j = lane mod 16.
        Mfma16x16x16F16 | Mfma16x16x16Bf16 => (4 * (l / 16) + g, l % 16),
        // gfx950's double-k shapes keep the C/D layout of 32x32x8 resp. 16x16x16.
        Mfma32x32x16F16 | Mfma32x32x16Bf16 => (8 * (g / 4) + 4 * (l / 32) + g % 4, l % 32),
        Mfma16x16x32F16 | Mfma16x16x32Bf16 => (4 * (l / 16) + g, l % 16),
        // Inverse: i = 2g + floor(lane/16), j = lane mod 16.
        Wmma16x16x16F16 | Wmma16x16x16Bf16 => (2 * g + l / 16, l % 16),
        // GFX12: row 8*(l/16) + g, column l % 16 (no even/odd split).
        Wmma16x16x16Gfx12F16 | Wmma16x16x16Gfx12Bf16 => (8 * (l / 16) + g, l % 16),
        // row = groupID for c0,c1, +8 for c2,c3; col = 2t + (e mod 2).
        Mma16x8x16F16 | Mma16x8x16Bf16 | Mma16x8x8Tf32 => ((l >> 2) + if g >= 2 { 8 } else { 0 }, 2 * (l % 4) + g % 2),
    }
}

fn arch_of(op: MatrixOp) -> EmuArch {
    match op.family() {
        convgrad_types::instance::Family::Cdna => EmuArch::Gfx942,
        convgrad_types::instance::Family::Cdna4 => EmuArch::Gfx950,
        convgrad_types::instance::Family::Rdna3 => EmuArch::Gfx1100,
        convgrad_types::instance::Family::Rdna4 => EmuArch::Gfx1201,
        convgrad_types::instance::Family::Nvidia | convgrad_types::instance::Family::Hopper => EmuArch::Sm90,
    }
}

/// One wave: lane loads its registers (`args`: a, b, c, d pointers, op index), issues the op, stores D.
unsafe fn mma_kernel(args: *const u8) {
    unsafe {
        let w = args as *const u64;
        let (pa, pb, pc, pd) = (
            arch::ld(w, 0) as *const u16,
            arch::ld(w, 1) as *const u16,
            arch::ld(w, 2) as *const f32,
            arch::ld(w, 3) as *mut f32,
        );
        let op = MatrixOp::ALL[arch::ld(w, 4) as usize];
        let r = op.regs();
        let l = arch::thread_id() as usize;
        let (mut a, mut b, mut c, mut d) = ([0u16; 16], [0u16; 16], [0f32; 16], [0f32; 16]);
        for e in 0..r.a {
            a[e] = arch::ld(pa, l * r.a + e);
        }
        for e in 0..r.b {
            b[e] = arch::ld(pb, l * r.b + e);
        }
        for e in 0..r.c {
            c[e] = arch::ld(pc, l * r.c + e);
        }
        lane::mma(op, &a[..r.a], &b[..r.b], &c[..r.c], &mut d[..r.c]);
        for (e, &v) in d[..r.c].iter().enumerate() {
            arch::st(pd, l * r.c + e, v);
        }
    }
}

fn round16(op: MatrixOp, x: f32) -> (u16, f64) {
    if op.is_bf16() {
        let h = bf16::from_f32(x);
        (h.to_bits(), h.to_f64())
    } else {
        let h = f16::from_f32(x);
        (h.to_bits(), h.to_f64())
    }
}

fn check_product(op: MatrixOp, seed: u64) {
    let (m, n, k) = op.shape();
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let (r, wave) = (op.regs(), op.wave());
    let mut rng = Rng(seed);
    let am: Vec<(u16, f64)> = (0..m * k).map(|_| round16(op, rng.unit())).collect();
    let bm: Vec<(u16, f64)> = (0..k * n).map(|_| round16(op, rng.unit())).collect();
    let cm: Vec<f32> = (0..m * n).map(|_| rng.unit()).collect();
    let (mut a, mut b, mut c) = (vec![0u16; wave as usize * r.a], vec![0u16; wave as usize * r.b], vec![0f32; wave as usize * r.c]);
    for l in 0..wave {
        for e in 0..r.a as u32 {
            let (i, kk) = doc_a(op, l, e);
            a[(l as usize) * r.a + e as usize] = am[i as usize * k + kk as usize].0;
        }
        for e in 0..r.b as u32 {
            let (kk, j) = doc_b(op, l, e);
            b[(l as usize) * r.b + e as usize] = bm[kk as usize * n + j as usize].0;
        }
        for g in 0..r.c as u32 {
            let (i, j) = doc_d(op, l, g);
            c[(l as usize) * r.c + g as usize] = cm[i as usize * n + j as usize];
        }
    }
    let emu = emu(arch_of(op));
    let (pa, pb, pc) = (upload(&emu, "a", &a), upload(&emu, "b", &b), upload(&emu, "c", &c));
    let pd = alloc::<f32>(&emu, "d", c.len());
    let idx = MatrixOp::ALL.iter().position(|&o| o == op).unwrap() as u64;
    let args = args(&emu, &[pa, pb, pc, pd, idx]);
    let rep = launch(&emu, "mma_kernel", mma_kernel, [1, 1, 1], wave, 0, args).unwrap();
    assert_eq!(rep.matrix_flops, op.flops());
    let d: Vec<f32> = download(&emu, pd, c.len());
    for l in 0..wave {
        for g in 0..r.c as u32 {
            let (i, j) = doc_d(op, l, g);
            let (i, j) = (i as usize, j as usize);
            let want = cm[i * n + j] as f64 + (0..k).map(|kk| am[i * k + kk].1 * bm[kk * n + j].1).sum::<f64>();
            let got = d[l as usize * r.c + g as usize] as f64;
            assert!((got - want).abs() <= 1e-5 * (1.0 + want.abs()), "{op:?} D[{i}][{j}] (lane {l} reg {g}): {got} != {want}");
        }
    }
}

#[test]
fn every_op_matches_a_plain_product() {
    for (s, op) in MatrixOp::ALL.into_iter().enumerate() {
        for seed in 0..3 {
            let seed = 0x9e37_79b9_7f4a_7c15 ^ (s as u64 * 1000 + seed);
            if op.is_tf32() { check_product_tf32(op, seed) } else { check_product(op, seed) }
        }
    }
}

/// A TF32 op (32-bit operands, two words each, low word first) against a
/// float64 product of its operands as the tensor core reads them: the low
/// 13 mantissa bits ignored. Operands are full f32 values (not rounded by
/// `cvt`), so an emulator that used them unrounded is off by far more than
/// the f32 accumulation's 1e-6.
fn check_product_tf32(op: MatrixOp, seed: u64) {
    let (m, n, k) = op.shape();
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let (r, wave, words) = (op.regs(), op.wave(), op.words());
    let mut rng = Rng(seed);
    let tf32 = |x: f32| f32::from_bits(x.to_bits() & !0x1fff) as f64;
    let am: Vec<f32> = (0..m * k).map(|_| rng.unit()).collect();
    let bm: Vec<f32> = (0..k * n).map(|_| rng.unit()).collect();
    let cm: Vec<f32> = (0..m * n).map(|_| rng.unit()).collect();
    let (mut a, mut b, mut c) = (vec![0u16; wave as usize * r.a], vec![0u16; wave as usize * r.b], vec![0f32; wave as usize * r.c]);
    let put = |v: &mut [u16], at: usize, x: f32| (v[at], v[at + 1]) = (x.to_bits() as u16, (x.to_bits() >> 16) as u16);
    for l in 0..wave {
        for e in 0..(r.a / words) as u32 {
            let (i, kk) = doc_a(op, l, e);
            put(&mut a, l as usize * r.a + e as usize * words, am[i as usize * k + kk as usize]);
        }
        for e in 0..(r.b / words) as u32 {
            let (kk, j) = doc_b(op, l, e);
            put(&mut b, l as usize * r.b + e as usize * words, bm[kk as usize * n + j as usize]);
        }
        for g in 0..r.c as u32 {
            let (i, j) = doc_d(op, l, g);
            c[(l as usize) * r.c + g as usize] = cm[i as usize * n + j as usize];
        }
    }
    let emu = emu(arch_of(op));
    let (pa, pb, pc) = (upload(&emu, "a", &a), upload(&emu, "b", &b), upload(&emu, "c", &c));
    let pd = alloc::<f32>(&emu, "d", c.len());
    let idx = MatrixOp::ALL.iter().position(|&o| o == op).unwrap() as u64;
    let args = args(&emu, &[pa, pb, pc, pd, idx]);
    let rep = launch(&emu, "mma_kernel", mma_kernel, [1, 1, 1], wave, 0, args).unwrap();
    assert_eq!(rep.matrix_flops, op.flops());
    let d: Vec<f32> = download(&emu, pd, c.len());
    let (mut worst, mut unrounded_off) = (0f64, 0f64);
    for l in 0..wave {
        for g in 0..r.c as u32 {
            let (i, j) = doc_d(op, l, g);
            let (i, j) = (i as usize, j as usize);
            let want = cm[i * n + j] as f64 + (0..k).map(|kk| tf32(am[i * k + kk]) * tf32(bm[kk * n + j])).sum::<f64>();
            let full = cm[i * n + j] as f64 + (0..k).map(|kk| am[i * k + kk] as f64 * bm[kk * n + j] as f64).sum::<f64>();
            let got = d[l as usize * r.c + g as usize] as f64;
            worst = worst.max((got - want).abs() / (1.0 + want.abs()));
            unrounded_off = unrounded_off.max((full - want).abs() / (1.0 + want.abs()));
        }
    }
    assert!(worst <= 1e-6, "{op:?}: off the TF32 product by {worst:e}");
    // The check can tell: unrounded operands would be this far off.
    assert!(unrounded_off > 1e-4, "{op:?}: operands too close to TF32 for the check ({unrounded_off:e})");
}

/// `cvt.rna.tf32.f32`: to nearest, ties away from zero, low 13 bits 0.
#[test]
fn cvt_rna_tf32_rounds_ties_away() {
    let f = |x: f32| f32::from_bits(lane::cvt_rna_tf32(x.to_bits()));
    let (u, h) = (2f32.powi(-10), 2f32.powi(-11)); // TF32 ulp at 1, half of it
    assert_eq!(f(1.0), 1.0);
    assert_eq!(f(1.0 + h / 2.0), 1.0); // below the tie: down
    assert_eq!(f(1.0 + h), 1.0 + u); // tie: away (ties-to-even would give 1.0)
    assert_eq!(f(-(1.0 + h)), -(1.0 + u));
    assert_eq!(f(1.0 + u + h), 1.0 + 2.0 * u); // tie from an odd mantissa: away (= even here)
    assert_eq!(f(1.0 + h + h / 4.0), 1.0 + u);
    assert_eq!(f(2.0 - h), 2.0); // carry into the exponent
    assert_eq!(f(f32::MAX), f32::INFINITY); // past TF32's largest: infinity
    assert_eq!(f(f32::INFINITY), f32::INFINITY);
    assert!(f(f32::NAN).is_nan());
    assert_eq!(f(0.0).to_bits(), 0);
    assert_eq!(f(-0.0).to_bits(), (-0.0f32).to_bits());
    // Subnormals keep 10 bits below the exponent too.
    let sub = f32::from_bits(0x0000_1800); // a tie at the subnormal TF32 quantum 2^-136
    assert_eq!(lane::cvt_rna_tf32(sub.to_bits()), 0x0000_2000);
    for b in [0x3f80_0fffu32, 0x3f80_1000, 0x3f80_1001, 0xbf80_1000, 0x4049_0fdb] {
        assert_eq!(lane::cvt_rna_tf32(b) & 0x1fff, 0, "{b:#x}");
    }
}

#[test]
fn explicit_entries_mma_sync_tf32() {
    let op = MatrixOp::Mma16x8x8Tf32;
    // lane 6: groupID 1, t 2.
    assert_eq!(op.a_slot(1, 2), s(6, 0)); // a0: row g, col t
    assert_eq!(op.a_slot(9, 2), s(6, 1)); // a1: row g+8, col t
    assert_eq!(op.a_slot(1, 6), s(6, 2)); // a2: row g, col t+4
    assert_eq!(op.a_slot(9, 6), s(6, 3)); // a3: row g+8, col t+4
    assert_eq!(op.b_slot(2, 1), s(6, 0)); // b0: k = t, n = g
    assert_eq!(op.b_slot(6, 1), s(6, 1)); // b1: k = t+4
    assert_eq!(op.d_slot(9, 5), s(6, 3)); // c3: row g+8, col 2t+1
    assert_eq!((op.words(), op.regs().a, op.regs().b), (2, 8, 4));
}

/// Direct (no launch) use of `matrix::execute` agrees with the doc too: identity A picks B.
#[test]
fn execute_identity_times_b() {
    let op = MatrixOp::Mfma16x16x16F16;
    let r = op.regs();
    let (mut a, mut b) = (vec![0u16; 64 * r.a], vec![0u16; 64 * r.b]);
    for l in 0..64u32 {
        for e in 0..4u32 {
            let (i, k) = doc_a(op, l, e);
            a[(l * 4 + e) as usize] = f16::from_f32(if i == k { 1.0 } else { 0.0 }).to_bits();
            let (k, j) = doc_b(op, l, e);
            b[(l * 4 + e) as usize] = f16::from_f32((k * 16 + j) as f32).to_bits();
        }
    }
    let c = vec![0f32; 64 * r.c];
    let mut d = vec![0f32; 64 * r.c];
    convgrad_emu::matrix::execute(op, &a, &b, &c, &mut d).unwrap();
    for l in 0..64u32 {
        for g in 0..4u32 {
            let (i, j) = doc_d(op, l, g);
            assert_eq!(d[(l * 4 + g) as usize], (i * 16 + j) as f32);
        }
    }
}

/// The emulator's tables and this file's reading of the note are inverse to each other.
#[test]
fn tables_invert_the_doc_direction() {
    for op in MatrixOp::ALL {
        let r = op.regs();
        let words = op.words() as u32;
        for l in 0..op.wave() {
            for e in 0..r.a as u32 / words {
                let (i, k) = doc_a(op, l, e);
                let s = op.a_slot(i, k);
                let ok = s == (Slot { lane: l, elem: e }) || op.a_replica(i, k) == Some(Slot { lane: l, elem: e });
                assert!(ok, "{op:?} A lane {l} elem {e}");
            }
            for e in 0..r.b as u32 / words {
                let (k, j) = doc_b(op, l, e);
                let ok = op.b_slot(k, j) == (Slot { lane: l, elem: e }) || op.b_replica(k, j) == Some(Slot { lane: l, elem: e });
                assert!(ok, "{op:?} B lane {l} elem {e}");
            }
            for g in 0..r.c as u32 {
                let (i, j) = doc_d(op, l, g);
                assert_eq!(op.d_slot(i, j), Slot { lane: l, elem: g }, "{op:?} D lane {l} reg {g}");
            }
        }
    }
}

fn s(lane: u32, elem: u32) -> Slot {
    Slot { lane, elem }
}

#[test]
fn explicit_entries_mfma_32x32x8() {
    for op in [MatrixOp::Mfma32x32x8F16, MatrixOp::Mfma32x32x8Bf16] {
        // A[i][k]: lane = i + 32*floor(k/4); element = k mod 4.
        assert_eq!(op.a_slot(0, 0), s(0, 0));
        assert_eq!(op.a_slot(7, 6), s(39, 2));
        assert_eq!(op.a_slot(31, 3), s(31, 3));
        // B[k][j]: lane = j + 32*floor(k/4).
        assert_eq!(op.b_slot(5, 10), s(42, 1));
        // D[i][j]: g = 4*floor(i/8) + (i mod 4); lane = j + 32*(floor(i/4) mod 2).
        assert_eq!(op.d_slot(13, 5), s(37, 5));
        assert_eq!(op.d_slot(4, 0), s(32, 0));
        assert_eq!(op.d_slot(8, 1), s(1, 4));
        assert_eq!(op.d_slot(31, 31), s(63, 15));
        assert_eq!(op.a_replica(0, 0), None);
    }
}

#[test]
fn explicit_entries_mfma_16x16x16() {
    for op in [MatrixOp::Mfma16x16x16F16, MatrixOp::Mfma16x16x16Bf16] {
        assert_eq!(op.a_slot(3, 9), s(35, 1)); // lane = i + 16*floor(k/4)
        assert_eq!(op.b_slot(15, 2), s(50, 3));
        assert_eq!(op.d_slot(9, 3), s(35, 1)); // g = i mod 4; lane = j + 16*floor(i/4)
        assert_eq!(op.d_slot(15, 15), s(63, 3));
    }
}

#[test]
fn explicit_entries_mfma_gfx950() {
    for op in [MatrixOp::Mfma32x32x16F16, MatrixOp::Mfma32x32x16Bf16] {
        // A[i][k]: lane = i + 32*floor(k/8); element = k mod 8.
        assert_eq!(op.a_slot(7, 6), s(7, 6));
        assert_eq!(op.a_slot(7, 13), s(39, 5));
        assert_eq!(op.b_slot(15, 31), s(63, 7));
        // D as 32x32x8.
        assert_eq!(op.d_slot(13, 5), s(37, 5));
    }
    for op in [MatrixOp::Mfma16x16x32F16, MatrixOp::Mfma16x16x32Bf16] {
        // A[i][k]: lane = i + 16*floor(k/8); element = k mod 8.
        assert_eq!(op.a_slot(3, 9), s(19, 1));
        assert_eq!(op.a_slot(15, 31), s(63, 7));
        assert_eq!(op.b_slot(20, 2), s(34, 4));
        // D as 16x16x16.
        assert_eq!(op.d_slot(9, 3), s(35, 1));
    }
}

/// The double-k MFMAs are gfx950's alone; gfx950 keeps gfx942's.
#[test]
fn gfx950_shapes_only_on_gfx950() {
    for op in [MatrixOp::Mfma32x32x16F16, MatrixOp::Mfma16x16x32Bf16] {
        assert!(EmuArch::Gfx950.executes(op));
        assert!(!EmuArch::Gfx942.executes(op) && !EmuArch::Gfx90a.executes(op));
    }
    assert!(EmuArch::Gfx950.executes(MatrixOp::Mfma16x16x16F16));
    assert!(!EmuArch::Gfx950.executes(MatrixOp::Wmma16x16x16F16));
}

#[test]
fn explicit_entries_wmma() {
    for op in [MatrixOp::Wmma16x16x16F16, MatrixOp::Wmma16x16x16Bf16] {
        assert_eq!(op.a_slot(3, 9), s(3, 9));
        assert_eq!(op.a_replica(3, 9), Some(s(19, 9)));
        assert_eq!(op.b_slot(4, 11), s(11, 4));
        assert_eq!(op.b_replica(4, 11), Some(s(27, 4)));
        // D: g = floor(i/2); lane = 16*(i mod 2) + j.
        assert_eq!(op.d_slot(5, 7), s(23, 2));
        assert_eq!(op.d_slot(14, 0), s(0, 7));
    }
}

#[test]
fn explicit_entries_wmma_gfx12() {
    for op in [MatrixOp::Wmma16x16x16Gfx12F16, MatrixOp::Wmma16x16x16Gfx12Bf16] {
        // A and B: lane = row (column) + 16*floor(k/8), element k mod 8; no replicas.
        assert_eq!(op.a_slot(3, 9), s(19, 1));
        assert_eq!(op.a_replica(3, 9), None);
        assert_eq!(op.b_slot(4, 11), s(11, 4));
        assert_eq!(op.b_replica(4, 11), None);
        // D: lane = j + 16*floor(i/8), element i mod 8.
        assert_eq!(op.d_slot(5, 7), s(7, 5));
        assert_eq!(op.d_slot(14, 0), s(16, 6));
    }
}

#[test]
fn explicit_entries_mma_sync() {
    for op in [MatrixOp::Mma16x8x16F16, MatrixOp::Mma16x8x16Bf16] {
        // lane 6: groupID 1, t 2.
        assert_eq!(op.a_slot(1, 4), s(6, 0)); // a0: row g, col 2t
        assert_eq!(op.a_slot(9, 5), s(6, 3)); // a3: row g+8, col 2t+1
        assert_eq!(op.a_slot(1, 13), s(6, 5)); // a5: row g, col 2t+1+8
        assert_eq!(op.a_slot(9, 12), s(6, 6)); // a6: row g+8, col 2t+8
        assert_eq!(op.b_slot(5, 1), s(6, 1)); // b1: k = 2t+1, n = g
        assert_eq!(op.b_slot(12, 1), s(6, 2)); // b2: k = 2t+8
        assert_eq!(op.d_slot(1, 4), s(6, 0)); // c0: row g, col 2t
        assert_eq!(op.d_slot(9, 5), s(6, 3)); // c3: row g+8, col 2t+1
        assert_eq!(op.d_slot(15, 7), s(31, 3));
    }
}

/// Every atom's `c_slot` inverts its `c_elem` over the whole accumulator
/// (the tap-shift kernel reads its sums back through it).
#[test]
fn atom_c_slot_inverts_c_elem() {
    use convgrad_device::atom::MmaAtom;
    use convgrad_device::atom::{fma, mfma, mfma_gfx950, mma_sync, wgmma, wmma, wmma_gfx12};
    use convgrad_device::elem::Bf16;
    fn check<At: MmaAtom>(name: &str) {
        let len = core::mem::size_of::<At::C>() / 4;
        let mut seen = std::collections::HashSet::new();
        for lane in 0..At::WAVE {
            for e in 0..len {
                let (i, j) = At::c_elem(lane, e);
                assert_eq!(At::c_slot(i, j), (lane, e), "{name}: element ({i}, {j})");
                assert!(seen.insert((i, j)), "{name}: ({i}, {j}) twice");
            }
        }
    }
    check::<fma::Fma>("fma");
    check::<mfma::Mfma32x32x8<Bf16>>("mfma32");
    check::<mfma::Mfma16x16x16<Bf16>>("mfma16");
    check::<mfma_gfx950::Mfma32x32x16<Bf16>>("mfma32k16");
    check::<mfma_gfx950::Mfma16x16x32<Bf16>>("mfma16k32");
    check::<mma_sync::Mma16x8x16<Bf16>>("mma16x8");
    check::<mma_sync::Mma16x8x8Tf32>("mma16x8k8tf32");
    check::<wmma::Wmma16x16x16<Bf16>>("wmma16");
    check::<wmma_gfx12::Wmma16x16x16Gfx12<Bf16>>("wmma12");
    check::<wgmma::Wgmma64x128x16<Bf16>>("wgmma64x128");
    check::<wgmma::Wgmma64x64x16<Bf16>>("wgmma64x64");
}

/// The NVIDIA atoms hold accumulator columns in pairs: elements `2s` and
/// `2s + 1` of a lane are `(i, j)` and `(i, j + 1)` with `j` even. The
/// epilogue (`store_tile_rows`) stores each pair as one 8-byte LDS store.
#[test]
fn nvidia_atoms_hold_column_pairs() {
    use convgrad_device::atom::MmaAtom;
    use convgrad_device::atom::{mma_sync, wgmma};
    use convgrad_device::elem::Bf16;
    fn check<At: MmaAtom>(name: &str) {
        let len = core::mem::size_of::<At::C>() / 4;
        assert_eq!(len % 2, 0, "{name}: odd fragment");
        for lane in 0..At::WAVE {
            for s in (0..len).step_by(2) {
                let (i, j) = At::c_elem(lane, s);
                assert_eq!(j % 2, 0, "{name}: lane {lane} element {s} at odd column {j}");
                assert_eq!(At::c_elem(lane, s + 1), (i, j + 1), "{name}: lane {lane} element {}", s + 1);
            }
        }
    }
    check::<mma_sync::Mma16x8x16<Bf16>>("mma16x8");
    check::<mma_sync::Mma16x8x8Tf32>("mma16x8k8tf32");
    check::<wgmma::Wgmma64x128x16<Bf16>>("wgmma64x128");
    check::<wgmma::Wgmma64x64x16<Bf16>>("wgmma64x64");
}

/// The device's TF32 atom maps its A and B slots to the elements the
/// emulator's (independent) table puts there.
#[test]
fn tf32_atom_layout_matches_the_table() {
    use convgrad_device::atom::MmaAtom;
    use convgrad_device::atom::mma_sync::Mma16x8x8Tf32 as At;
    let op = MatrixOp::Mma16x8x8Tf32;
    for lane in 0..32 {
        for e in 0..4 {
            let (i, k) = At::a_elem(lane, e);
            assert_eq!(op.a_slot(i as u32, k as u32), s(lane as u32, e as u32), "A lane {lane} slot {e}");
        }
        for e in 0..2 {
            let (k, j) = At::b_elem(lane, e);
            assert_eq!(op.b_slot(k as u32, j as u32), s(lane as u32, e as u32), "B lane {lane} slot {e}");
        }
    }
}
