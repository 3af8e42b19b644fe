//! `lane::wgmma` against a plain f64 product: kernels lay A and B out in LDS by
//! this file's own reading of the canonical no-swizzle layouts (CuTe
//! `GMMA::Layout_{K,MN}_INTER`), in every (tnsp_a, tnsp_b) combination with
//! padded and interleaved LBO/SBO, then check D through the documented
//! accumulator layout. Plus the violations wgmma raises.

mod common;
use common::*;
use convgrad_emu::matrix::{MatrixOp, WgmmaOp};
use convgrad_emu::{EmuArch, lane};
use half::{bf16, f16};

/// A shared-memory matrix descriptor: byte fields, no swizzle.
fn desc(start: usize, lbo: usize, sbo: usize) -> u64 {
    assert!([start, lbo, sbo].iter().all(|x| x.is_multiple_of(16)));
    (start as u64 >> 4) | (lbo as u64 >> 4) << 16 | (sbo as u64 >> 4) << 32
}

/// LDS byte of element (mn, k), evaluating the CuTe layouts in elements (T = 8):
/// K-major `((8,m),(T,2k)):((1T,SBO),(1,LBO))`, MN-major `((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))`.
fn layout(d: u64, mn_major: bool, mn: usize, k: usize) -> usize {
    let field = |at: u32| (((d >> at) & 0x3FFF) << 4) as usize;
    let (start, lbo_e, sbo_e) = (field(0), field(16) / 2, field(32) / 2);
    let elems = if mn_major {
        mn % 8 + sbo_e * (mn / 8) + 8 * (k % 8) + lbo_e * (k / 8)
    } else {
        8 * (mn % 8) + sbo_e * (mn / 8) + k % 8 + lbo_e * (k / 8)
    };
    start + 2 * elems
}

fn word(args: *const u8, i: usize) -> u64 {
    lane::global_load((args as *const u64).wrapping_add(i))
}

/// Args: A (64x16 bits, row-major), B (16xN), C and D (one 64xN f32 block per
/// warpgroup), N, flags (1: bf16, 2: tnsp_a, 4: tnsp_b), desc A, desc B, warpgroups.
unsafe fn wgmma_kernel(args: *const u8) {
    let (pa, pb) = (word(args, 0) as *const u16, word(args, 1) as *const u16);
    let (pc, pd) = (word(args, 2) as *const f32, word(args, 3) as *mut f32);
    let (n, flags, da, db) = (word(args, 4) as usize, word(args, 5), word(args, 6), word(args, 7));
    let op = WgmmaOp { n: n as u32, bf16: flags & 1 != 0, tnsp_a: flags & 2 != 0, tnsp_b: flags & 4 != 0 };
    let tid = lane::thread_id() as usize;
    let block = 128 * word(args, 8) as usize;
    // Each element is stored once, by whichever thread of the workgroup reaches it.
    for i in (tid..64 * 16).step_by(block) {
        lane::lds_store(layout(da, op.tnsp_a, i / 16, i % 16), lane::global_load(pa.wrapping_add(i)));
    }
    for i in (tid..16 * n).step_by(block) {
        lane::lds_store(layout(db, op.tnsp_b, i % n, i / n), lane::global_load(pb.wrapping_add(i)));
    }
    lane::barrier();
    let (g, w, l) = (tid / 128, (tid / 32) % 4, tid % 32);
    let at = |e: usize| g * 64 * n + (16 * w + l / 4 + 8 * ((e / 2) % 2)) * n + 8 * (e / 4) + 2 * (l % 4) + e % 2;
    let (mut c, mut d) = ([0f32; 128], [0f32; 128]);
    for (e, x) in c[..n / 2].iter_mut().enumerate() {
        *x = lane::global_load(pc.wrapping_add(at(e)));
    }
    lane::wgmma_fence();
    lane::wgmma(op, da, db, &c[..n / 2], &mut d[..n / 2]);
    lane::wgmma_commit();
    lane::wgmma_wait(0);
    for (e, &x) in d[..n / 2].iter().enumerate() {
        lane::global_store(pd.wrapping_add(at(e)), x);
    }
}

/// Random 16-bit values in [-1, 1) and their exact values.
fn random16(rng: &mut Rng, bf: bool, len: usize) -> (Vec<u16>, Vec<f64>) {
    (0..len)
        .map(|_| {
            let x = rng.unit();
            if bf {
                let b = bf16::from_f32(x);
                (b.to_bits(), b.to_f64())
            } else {
                let h = f16::from_f32(x);
                (h.to_bits(), h.to_f64())
            }
        })
        .unzip()
}

/// One launch of `wgmma_kernel` with `warpgroups` x 128 threads, checked element by element.
fn check(op: WgmmaOp, warpgroups: usize, lds_bytes: usize, da: u64, db: u64, seed: u64) {
    let emu = emu(EmuArch::Sm90);
    let n = op.n as usize;
    let mut rng = Rng(seed);
    let (a, af) = random16(&mut rng, op.bf16, 64 * 16);
    let (b, bfv) = random16(&mut rng, op.bf16, 16 * n);
    let c: Vec<f32> = (0..warpgroups * 64 * n).map(|_| rng.unit()).collect();
    let flags = op.bf16 as u64 | (op.tnsp_a as u64) << 1 | (op.tnsp_b as u64) << 2;
    let (pa, pb, pc) = (upload(&emu, "a", &a), upload(&emu, "b", &b), upload(&emu, "c", &c));
    let pd = alloc::<f32>(&emu, "d", c.len());
    let args = args(&emu, &[pa, pb, pc, pd, n as u64, flags, da, db, warpgroups as u64]);
    let block = 128 * warpgroups as u32;
    let r = launch(&emu, "wgmma", wgmma_kernel, [1, 1, 1], block, lds_bytes, args)
        .unwrap_or_else(|e| panic!("{op:?}: {e}"));
    assert_eq!(r.matrix_flops, (warpgroups * 2 * 64 * n * 16) as u64);
    let d: Vec<f32> = download(&emu, pd, c.len());
    for g in 0..warpgroups {
        for i in 0..64 {
            for j in 0..n {
                let at = g * 64 * n + i * n + j;
                let (mut want, mut mag) = (c[at] as f64, c[at].abs() as f64);
                for k in 0..16 {
                    want += af[i * 16 + k] * bfv[k * n + j];
                    mag += (af[i * 16 + k] * bfv[k * n + j]).abs();
                }
                let got = d[at] as f64;
                assert!((got - want).abs() <= 1e-5 * mag, "{op:?} warpgroup {g} D[{i}][{j}] = {got}, want {want}");
            }
        }
    }
}

#[test]
fn every_layout_matches_a_plain_product() {
    // (tnsp_a, tnsp_b, n, warpgroups, LDS bytes, A (start, LBO, SBO), B (start, LBO, SBO)).
    // K-major core matrices (8 rows of 16 bytes) packed k-first, m-first, padded; MN-major likewise.
    #[rustfmt::skip]
    let cases = [
        (false, false, 64, 1, 8192, (0, 128, 256), (4096, 128, 256)),
        (false, false, 256, 1, 12288, (16, 144, 320), (2560, 4096, 128)),
        (false, true, 256, 1, 16384, (0, 1024, 128), (2048, 4096, 128)),
        (true, false, 8, 1, 4096, (0, 1088, 128), (2560, 256, 0)),
        (true, true, 120, 2, 8192, (0, 128, 256), (3072, 1920, 128)),
        (true, true, 16, 1, 4096, (64, 1024, 128), (2176, 128, 256)),
    ];
    for (s, &(tnsp_a, tnsp_b, n, wg, lds, (sa, la, ga), (sb, lb, gb))) in cases.iter().enumerate() {
        for bf16 in [false, true] {
            let op = WgmmaOp { n, bf16, tnsp_a, tnsp_b };
            check(op, wg, lds, desc(sa, la, ga), desc(sb, lb, gb), 17 + s as u64 * 2 + bf16 as u64);
        }
    }
}

const OP: WgmmaOp = WgmmaOp { n: 8, bf16: false, tnsp_a: false, tnsp_b: false };

/// Issues `OP` with both descriptors `word(0)` on an LDS written with zeros (if any).
unsafe fn plain(args: *const u8) {
    let lds = word(args, 1) as usize;
    for i in (2 * lane::thread_id() as usize..lds).step_by(2 * 128) {
        lane::lds_store(i, 0u16);
    }
    lane::barrier();
    let d = word(args, 0);
    let mut acc = [0f32; 4];
    lane::wgmma(OP, d, d, &[0.0; 4], &mut acc);
}

fn run_plain(arch: EmuArch, block: u32, lds: usize, d: u64) -> convgrad_emu::Violation {
    let emu = emu(arch);
    let a = args(&emu, &[d, lds as u64]);
    violation(launch(&emu, "wgmma_bad", plain, [1, 1, 1], block, lds, a))
}

#[test]
fn base_offset_arch_shape_and_bounds_violations() {
    let v = run_plain(EmuArch::Sm90, 128, 0, desc(0, 128, 256) | 1 << 49);
    assert_eq!(v.lane, 0);
    assert_what(&v, &["operand A", "base offset 1"]);
    let v = run_plain(EmuArch::Sm80, 128, 0, desc(0, 128, 256));
    assert_what(&v, &["wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16", "is not an instruction of sm_80"]);
    let v = run_plain(EmuArch::Sm90, 64, 0, desc(0, 128, 256));
    assert_what(&v, &["64 threads do not fill", "whole warpgroups"]);
    // Warp 2 reads rows 32..47 of A: m-block 4 at 4*256 + ... lies past 1024 bytes.
    let v = run_plain(EmuArch::Sm90, 128, 1024, desc(0, 128, 256));
    assert_eq!(v.lane, 64);
    assert_what(
        &v,
        &[
            "warp 2 (warpgroup warp 2)",
            "A[32][0] at LDS byte 1024",
            "K-major",
            "start address 0, LBO 128, SBO 256 bytes",
            "beyond launch-sized LDS of 1024 bytes",
        ],
    );
    // LDS never written.
    let emu = emu(EmuArch::Sm90);
    let a = args(&emu, &[desc(0, 128, 256), 0]);
    let v = violation(launch(&emu, "wgmma_unwritten", plain, [1, 1, 1], 128, 4096, a));
    assert_what(&v, &["A[0][0]", "read of unwritten LDS"]);
}

#[test]
fn operand_and_wave_violations() {
    let emu = emu(EmuArch::Sm90);
    let go = |name: &str, k: unsafe fn(*const u8)| violation(launch(&emu, name, k, [1, 1, 1], 128, 0, 0));
    unsafe fn short_c(_: *const u8) {
        lane::wgmma(OP, 0, 0, &[0.0; 3], &mut [0.0; 4]);
    }
    assert_what(&go("short_c", short_c), &["takes per lane c: 4, d: 4 elements (N/2); got 3, 4"]);
    unsafe fn bad_n(_: *const u8) {
        lane::wgmma(WgmmaOp { n: 12, ..OP }, 0, 0, &[0.0; 6], &mut [0.0; 6]);
    }
    assert_what(&go("bad_n", bad_n), &["N = 12", "multiple of 8 in 8..=256"]);
    unsafe fn other_desc(_: *const u8) {
        // In warp 0: a warp that agrees would run first and fail on the empty LDS.
        let d = if lane::thread_id() == 5 { desc(16, 0, 0) } else { 0 };
        lane::wgmma(OP, 0, d, &[0.0; 4], &mut [0.0; 4]);
    }
    let v = go("other_desc", other_desc);
    assert_eq!(v.lane, 5);
    assert_what(
        &v,
        &["warp 0 passes different wgmma descriptors: lane 5 A 0x0000000000000000 B 0x0000000000000001", "lane 0 A"],
    );
    unsafe fn other_op(_: *const u8) {
        let op = WgmmaOp { tnsp_b: lane::thread_id() == 3, ..OP };
        lane::wgmma(op, 0, 0, &[0.0; 4], &mut [0.0; 4]);
    }
    assert_what(&go("other_op", other_op), &["wave 0 mixes matrix instructions: lane 3 issued", "imm-trans-b 1"]);
    unsafe fn mixed(_: *const u8) {
        let mut d = [0f32; 4];
        if lane::thread_id() == 7 {
            lane::mma(MatrixOp::Mma16x8x16F16, &[0; 8], &[0; 4], &[0.0; 4], &mut d);
        } else {
            lane::wgmma(OP, 0, 0, &[0.0; 4], &mut d);
        }
    }
    let v = go("mixed", mixed);
    assert_eq!(v.lane, 7);
    assert_what(&v, &["lane 7 issued mma.sync.aligned.m16n8k16", "while lane 0 issued wgmma.mma_async"]);
    // Every warp lacks lane 3, so none executes and the first waiting lane is blamed.
    unsafe fn partial(_: *const u8) {
        if lane::thread_id() % 32 != 3 {
            lane::wgmma(OP, 0, 0, &[0.0; 4], &mut [0.0; 4]);
        }
    }
    assert_what(
        &go("partial", partial),
        &["issued wgmma.mma_async", "lane 3 of the same wave has returned from the kernel"],
    );
}

/// A wgmma's LDS operands stay in use until its warp's `wgmma.wait_group`
/// retires the group: a store to them before is a race even though the
/// emulator executed the wgmma when it was issued. Args: LDS bytes, flags
/// (1: wait for the group before the store, 2: a second group committed
/// after, waited down to 1 pending: the first group retired).
unsafe fn overwrite_operand(args: *const u8) {
    let (lds, flags) = (word(args, 0) as usize, word(args, 1));
    for i in (2 * lane::thread_id() as usize..lds).step_by(2 * 128) {
        lane::lds_store(i, 0u16);
    }
    lane::barrier();
    let d = desc(0, 128, 256);
    let mut acc = [0f32; 4];
    lane::wgmma_fence();
    lane::wgmma(OP, d, d, &[0.0; 4], &mut acc);
    lane::wgmma_commit();
    if flags & 2 != 0 {
        // The second group reads bytes 2048.. only (A and B at 2048).
        let d2 = desc(2048, 128, 256);
        lane::wgmma(OP, d2, d2, &[0.0; 4], &mut acc);
        lane::wgmma_commit();
        lane::wgmma_wait(1);
    } else if flags & 1 != 0 {
        lane::wgmma_wait(0);
    }
    lane::barrier();
    if lane::thread_id() == 0 {
        // Row 0 of A (read by warp 0's wgmma).
        lane::lds_store(0, 1u16);
    }
    lane::wgmma_wait(0);
}

#[test]
fn operands_are_held_until_wait_group() {
    let emu = emu(EmuArch::Sm90);
    let run = |flags: u64| {
        let a = args(&emu, &[4096, flags]);
        launch(&emu, "overwrite_operand", overwrite_operand, [1, 1, 1], 128, 4096, a)
    };
    let v = violation(run(0));
    assert_eq!(v.lane, 0);
    assert_what(&v, &["LDS data race: lane 0 writes bytes 0..2", "wgmma of warp 0", "wgmma.wait_group"]);
    run(1).expect("the store after wgmma.wait_group 0 is ordered");
    run(2).expect("wgmma.wait_group 1 retired the first group");
}
