//! Single instructions, encoded as the shipped code objects encode them, executed on
//! a hand-made wave and checked against the ISA guides' definitions.

mod common;
use common::{Machine, Rng};
use convgrad_isa::Arch;
use convgrad_isa::decode::decode_at;
use convgrad_isa::exec::{Lds, Memory};

#[test]
fn v_perm_b32_selects_bytes() {
    // v_perm_b32 v19, v1, v2, s2 with s2 = 0x05040100: bytes 0,1 of S1 then 0,1 of S0.
    let mut m = Machine::new(Arch::Gfx942);
    m.wave.sgpr[2] = 0x0504_0100;
    m.set(3, &[(1, 0xaabb_ccdd), (2, 0x1122_3344)]);
    m.exec(&[0xD1ED0013, 0x000A0501]);
    assert_eq!(m.v(19, 3), 0xccdd_3344);
    // Selector 12 gives 0x00, 13..15 give 0xff, 8..11 replicate sign bits.
    m.wave.sgpr[2] = 0x0c0d_0b08;
    m.set(0, &[(1, 0x8000_0000), (2, 0x0000_0000)]);
    m.exec(&[0xD1ED0013, 0x000A0501]);
    assert_eq!(m.v(19, 0), 0x00ff_ff00);
}

#[test]
fn sdwa_selects_the_high_half() {
    // v_cvt_f32_f16_sdwa v73, v32 src0_sel:WORD_1
    let mut m = Machine::new(Arch::Gfx942);
    m.set_v(
        32,
        5,
        (half::f16::from_f32(-2.5).to_bits() as u32) << 16 | 0x3c00,
    );
    m.exec(&[0x7E9216F9, 0x00050620]);
    assert_eq!(f32::from_bits(m.v(73, 5)), -2.5);
    // v_or_b32_sdwa v29, v28, v23 src0_sel:WORD_1 src1_sel:DWORD
    m.set(0, &[(28, 0xabcd_0000), (23, 0x0001_0000)]);
    m.exec(&[0x283A2EF9, 0x0605061C]);
    assert_eq!(m.v(29, 0), 0x0001_abcd);
}

#[test]
fn packed_f32_moves_and_mixed_fma() {
    // v_pk_mov_b32 v[110:111], v[112:113], v[114:115] op_sel:[1,0]: lo = v113, hi = v114.
    let mut m = Machine::new(Arch::Gfx942);
    m.set(7, &[(112, 1), (113, 2), (114, 3), (115, 4)]);
    m.exec(&[0xD3B3486E, 0x1802E570]);
    assert_eq!((m.v(110, 7), m.v(111, 7)), (2, 3));
    // v_fma_mix_f32 v30, v183, v91, v111 op_sel_hi:[0,1,0]: f32 * f16(lo) + f32.
    let (a, c) = (3.0f32.to_bits(), 10.0f32.to_bits());
    let b = 0xdead_0000 | half::f16::from_f32(0.5).to_bits() as u32;
    m.set(0, &[(183, a), (91, b), (111, c)]);
    m.exec(&[0xD3A0001E, 0x15BEB7B7]);
    assert_eq!(f32::from_bits(m.v(30, 0)), 11.5);
}

#[test]
fn carries_go_through_vcc() {
    // v_add_co_u32_e32 v6, vcc, 0x100, v6 then v_addc_co_u32_e32 v10, vcc, 0, v34, vcc.
    let mut m = Machine::new(Arch::Gfx90a);
    m.set(0, &[(6, 0xffff_ff80), (34, 7)]);
    m.set(1, &[(6, 0x10), (34, 7)]);
    m.exec(&[0x320C0CFF, 0x00000100]);
    assert_eq!((m.v(6, 0), m.v(6, 1)), (0x80, 0x110));
    assert_eq!(m.wave.vcc() & 3, 0b01);
    m.exec(&[0x38144480]);
    assert_eq!((m.v(10, 0), m.v(10, 1)), (8, 7));
    assert_eq!(m.wave.vcc() & 3, 0);
}

#[test]
fn ds_two_address_forms_scale_offsets() {
    // ds_write2_b32 v1, v6, v7 offset1:16, then ds_read2_b32 v[102:103], v36 offset1:1.
    let mut m = Machine::new(Arch::Gfx942);
    m.wave.set_exec(1);
    m.set(0, &[(1, 8), (6, 0x1111), (7, 0x2222)]);
    m.exec(&[0xD81C1000, 0x00070601]);
    assert_eq!(&m.lds.data[8..12], &0x1111u32.to_le_bytes());
    assert_eq!(&m.lds.data[72..76], &0x2222u32.to_le_bytes());
    m.set_v(36, 0, 68);
    m.lds.data[68..72].copy_from_slice(&5u32.to_le_bytes());
    m.lds.written[68..72].fill(true);
    m.exec(&[0xD86E0100, 0x66000024]);
    assert_eq!((m.v(102, 0), m.v(103, 0)), (5, 0x2222));
}

#[test]
fn gfx11_true16_halves_and_cmpx() {
    let mut m = Machine::new(Arch::Gfx1100);
    // v_mov_b16_e32 v10.h, v6.h keeps v10.l.
    m.set(2, &[(6, 0xbeef_0000), (10, 0x0000_1234)]);
    m.exec(&[0x7F143986]);
    assert_eq!(m.v(10, 2), 0xbeef_1234);
    // v_cvt_f32_f16_e32 v95, v1.h
    m.set_v(1, 0, (half::f16::from_f32(0.25).to_bits() as u32) << 16);
    m.exec(&[0x7EBE1781]);
    assert_eq!(f32::from_bits(m.v(95, 0)), 0.25);
    // v_cmpx_gt_u32_e64 s66, v10: EXEC = lanes with s66 > v10; no SGPR is written.
    m.wave.sgpr[66] = 3;
    for l in 0..32 {
        m.set_v(10, l, l as u32);
    }
    let vcc = m.wave.sgpr[106];
    m.exec(&[0xD4CC007E, 0x00021442]);
    assert_eq!(m.wave.exec(), 0b111);
    assert_eq!(m.wave.sgpr[106], vcc);
}

#[test]
fn gfx11_carry_in_from_an_sgpr_and_vopd() {
    let mut m = Machine::new(Arch::Gfx1100);
    // v_add_co_ci_u32_e64 v32, null, 0, v11, s4: carry-in from s4 (wave32: one SGPR).
    m.wave.sgpr[4] = 0b10;
    m.set_v(11, 0, 5);
    m.set_v(11, 1, 5);
    m.exec(&[0xD5207C20, 0x00121680]);
    assert_eq!((m.v(32, 0), m.v(32, 1)), (5, 6));
    // v_dual_fmac_f32 v26, v84, v76 :: v_dual_fmac_f32 v27, v85, v77
    for (r, x) in [
        (84, 2.0f32),
        (76, 3.0),
        (26, 1.0),
        (85, 4.0),
        (77, 5.0),
        (27, -1.0),
    ] {
        m.set_v(r, 9, x.to_bits());
    }
    m.exec(&[0xC8009954, 0x1A1A9B55]);
    assert_eq!(
        (f32::from_bits(m.v(26, 9)), f32::from_bits(m.v(27, 9))),
        (7.0, 19.0)
    );
}

fn kernel(words: &[u32]) -> convgrad_isa::Kernel {
    convgrad_isa::Kernel {
        name: "handmade".into(),
        entry: 0x1000,
        code: words.iter().flat_map(|w| w.to_le_bytes()).collect(),
        descriptor: convgrad_isa::KernelDescriptor::parse(&[0; 64]).unwrap(),
        meta: Default::default(),
    }
}

#[test]
fn unknown_and_unimplemented_instructions_are_errors() {
    use convgrad_isa::exec::{Launch, Program, run};
    // SOPP opcode 127 does not exist: decoding names encoding, opcode and kernel.
    let e = Program::new(Arch::Gfx942, &kernel(&[0xBFFF_0000]))
        .err()
        .expect("decode error")
        .to_string();
    assert!(
        e.contains("handmade") && e.contains("SOPP opcode 127"),
        "{e}"
    );
    // s_sendmsg_rtn_b64 decodes but has no semantics (no shipped kernel uses
    // it): running it names it.
    let p = Program::new(Arch::Gfx1100, &kernel(&[0xBE804D80, 0xBFB00000])).unwrap();
    assert_eq!(
        p.unimplemented().keys().collect::<Vec<_>>(),
        ["s_sendmsg_rtn_b64"]
    );
    let e = run(&p, &mut Memory::new(), &Launch::new(1, 32, vec![]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("handmade") && e.contains("unimplemented instruction s_sendmsg_rtn_b64"),
        "{e}"
    );
}

#[test]
fn integer_clamp_saturates() {
    // v_sub_nc_u32_e64 v13, v14, 1 clamp (gfx1100's `max(n, 1) - 1`): 0 - 1 stays 0, 5 - 1 is 4.
    let mut m = Machine::new(Arch::Gfx1100);
    m.set_v(14, 0, 0);
    m.set_v(14, 1, 5);
    m.exec(&[0xD526_800D, 0x0001_030E]);
    assert_eq!((m.v(13, 0), m.v(13, 1)), (0, 4));
}

#[test]
fn lds_races_between_barriers_are_errors() {
    // Wave 0 writes bytes 0..4; wave 1 reading them before a barrier is a race,
    // after one it is ordered. A wave reading its own write is ordered by program.
    let mut lds = Lds::new(64);
    let mut out = [0u8; 4];
    lds.set_wave(0);
    lds.write(0, &[1, 2, 3, 4]).unwrap();
    lds.read(0, &mut out).unwrap();
    lds.set_wave(1);
    let e = lds.read(2, &mut out[..2]).unwrap_err();
    assert!(
        e.contains("LDS race") && e.contains("wave 1 reads byte 2") && e.contains("wave 0 wrote"),
        "{e}"
    );
    lds.barrier();
    lds.read(0, &mut out).unwrap();
    assert_eq!(out, [1, 2, 3, 4]);
    // Wave 0 overwriting what wave 1 read in this interval is a race too, and so
    // are two waves writing one byte.
    lds.set_wave(0);
    let e = lds.write(1, &[9]).unwrap_err();
    assert!(e.contains("wave 0 writes byte 1, which wave 1 read"), "{e}");
    lds.write(8, &[5]).unwrap();
    lds.set_wave(1);
    assert!(
        lds.write(8, &[6])
            .unwrap_err()
            .contains("which wave 0 wrote")
    );
}

impl Rng {
    /// A finite f32 of moderate magnitude (random sign, exponent and mantissa).
    fn f32(&mut self) -> f32 {
        f32::from_bits(self.f32_bits())
    }
    /// A finite, non-zero f16 (bits).
    fn f16(&mut self) -> u16 {
        loop {
            let h = self.next() as u16;
            if h & 0x7c00 != 0x7c00 && h & 0x7fff != 0 {
                return h;
            }
        }
    }
}

/// The exactly rounded (nearest even) f16 of `a * b + c` for finite f16 inputs,
/// in integer arithmetic: every f16 is a multiple of 2^-24, so the exact result is
/// an integer N times 2^-48.
fn exact_fma_f16(a: u16, b: u16, c: u16) -> u16 {
    // (sign * mantissa, exponent) with value = m * 2^e, e >= -24.
    let parts = |h: u16| -> (i128, i32) {
        let e = ((h >> 10) & 31) as i32;
        let f = (h & 0x3ff) as i128;
        let (m, e) = if e == 0 {
            (f, -24)
        } else {
            (f | 0x400, e - 25)
        };
        (if h >> 15 != 0 { -m } else { m }, e)
    };
    let (ma, ea) = parts(a);
    let (mb, eb) = parts(b);
    let (mc, ec) = parts(c);
    let n = ma * mb * (1i128 << (ea + eb + 48)) + mc * (1i128 << (ec + 48));
    if n == 0 {
        // An exact zero sum of non-zero terms is +0 under round to nearest.
        let pa = (a ^ b) >> 15 != 0;
        return if pa && c >> 15 != 0 { 0x8000 } else { 0 };
    }
    let (neg, mag) = (n < 0, n.unsigned_abs());
    // The quantum of f16 at this magnitude, in units of 2^-48: 2^(top - 10), at
    // least the subnormal step 2^-24.
    let top = 127 - mag.leading_zeros() as i32 - 48;
    let q = (top - 10).max(-24) + 48;
    let unit = 1u128 << q;
    let (whole, rest) = (mag >> q, mag & (unit - 1));
    let half = unit / 2;
    let r = if rest > half || rest == half && whole & 1 == 1 {
        whole + 1
    } else {
        whole
    };
    let v = r as f64 * 2f64.powi(q - 48);
    let bits = if v >= 65520.0 {
        0x7c00
    } else {
        half::f16::from_f64(v).to_bits()
    };
    bits | if neg { 0x8000 } else { 0 }
}

#[test]
fn exact_fma_reference_is_sound() {
    // The reference against values worked by hand: 1 * 1 + 1 = 2; 0.5 * -2 + 0.25.
    assert_eq!(exact_fma_f16(0x3c00, 0x3c00, 0x3c00), 0x4000);
    assert_eq!(exact_fma_f16(0x3800, 0xc000, 0x3400), 0xba00);
    // 2049 is halfway between 2048 and 2050: nearest even is 2048 (0x6800);
    // 2051 rounds to 2052 (0x6802).
    assert_eq!(exact_fma_f16(0x6800, 0x3c00, 0x3c00), 0x6800);
    assert_eq!(exact_fma_f16(0x6801, 0x3c00, 0x3c00), 0x6802);
}

#[test]
fn v_pk_fma_f16_rounds_once() {
    let mut m = Machine::new(Arch::Gfx942);
    // Issue #42's case: 0x30fb * 0x3633 + 0xbbe9 is 0xbb6d fused, 0xbb6e rounded twice.
    assert_eq!(exact_fma_f16(0x30fb, 0x3633, 0xbbe9), 0xbb6d);
    let plain = [0xD38E_4003, 0x1C12_0501]; // v_pk_fma_f16 v3, v1, v2, v4
    m.set(0, &[(1, 0x30fb), (2, 0x3633), (4, 0xbbe9)]);
    m.exec(&plain);
    assert_eq!(m.v(3, 0) & 0xffff, 0xbb6d);
    // Random halves in every lane, both results against the exact reference.
    let mut rng = Rng::new("v_pk_fma_f16");
    let mut differ_from_two_roundings = 0;
    for _ in 0..64 {
        let mut want = Vec::new();
        for l in 0..64 {
            let h: Vec<u16> = (0..6).map(|_| rng.f16()).collect();
            m.set(
                l,
                &[
                    (1, h[0] as u32 | (h[1] as u32) << 16),
                    (2, h[2] as u32 | (h[3] as u32) << 16),
                    (4, h[4] as u32 | (h[5] as u32) << 16),
                ],
            );
            let lo = exact_fma_f16(h[0], h[2], h[4]);
            let hi = exact_fma_f16(h[1], h[3], h[5]);
            let f = |x: u16| half::f16::from_bits(x).to_f32();
            if half::f16::from_f32(f(h[0]).mul_add(f(h[2]), f(h[4]))).to_bits() != lo {
                differ_from_two_roundings += 1;
            }
            want.push(lo as u32 | (hi as u32) << 16);
        }
        m.exec(&plain);
        for (l, w) in want.iter().enumerate() {
            assert_eq!(m.v(3, l), *w, "lane {l}");
        }
    }
    println!("{differ_from_two_roundings} of 4096 low results differ from f32 fma then f16");
    // op_sel:[1,0,1] op_sel_hi:[0,1,0] neg_lo:[1,0,0] neg_hi:[0,0,1]:
    // lo = fma(-S0.hi, S1.lo, S2.hi), hi = fma(S0.lo, S1.hi, -S2.lo).
    for l in 0..64 {
        let h: Vec<u16> = (0..6).map(|_| rng.f16()).collect();
        m.set(
            l,
            &[
                (1, h[0] as u32 | (h[1] as u32) << 16),
                (2, h[2] as u32 | (h[3] as u32) << 16),
                (4, h[4] as u32 | (h[5] as u32) << 16),
            ],
        );
        m.exec(&[0xD38E_2C03, 0x3412_0501]);
        let lo = exact_fma_f16(h[1] ^ 0x8000, h[2], h[5]);
        let hi = exact_fma_f16(h[0], h[3], h[4] ^ 0x8000);
        assert_eq!(m.v(3, l), lo as u32 | (hi as u32) << 16, "lane {l}");
    }
}

#[test]
fn v_cndmask_b32_e64_applies_abs_and_neg() {
    let mut m = Machine::new(Arch::Gfx942);
    let mut rng = Rng::new("v_cndmask_b32_e64");
    // v_cndmask_b32_e64 v5, -v1, |v2|, s[4:5] and v5, |v1|, -v2, s[4:5]:
    // D = mask[lane] ? S1 : S0, with the modifiers on the sign bit.
    type Sign = fn(u32) -> u32;
    let cases: [([u32; 2], Sign, Sign); 2] = [
        (
            [0xD100_0205, 0x2012_0501],
            |a| a ^ 0x8000_0000,
            |b| b & 0x7fff_ffff,
        ),
        (
            [0xD100_0105, 0x4012_0501],
            |a| a & 0x7fff_ffff,
            |b| b ^ 0x8000_0000,
        ),
    ];
    for (words, f0, f1) in cases {
        let mask = rng.next();
        m.wave.sgpr[4] = mask as u32;
        m.wave.sgpr[5] = (mask >> 32) as u32;
        let src: Vec<(u32, u32)> = (0..64).map(|_| (rng.u32(), rng.u32())).collect();
        for (l, &(a, b)) in src.iter().enumerate() {
            m.set(l, &[(1, a), (2, b)]);
        }
        m.exec(&words);
        for (l, &(a, b)) in src.iter().enumerate() {
            let want = if mask >> l & 1 != 0 { f1(b) } else { f0(a) };
            assert_eq!(m.v(5, l), want, "lane {l}, mask bit {}", mask >> l & 1);
        }
    }
}

/// A VALU instruction and its definition in the guide's pseudocode, on lane values
/// (S0, S1, S2) -> D.
struct Case {
    asm: &'static str,
    words: [u32; 2],
    len: usize,
    f: fn(u32, u32, u32) -> u32,
    /// S0 and S1 play different roles: the random inputs must tell them apart.
    ordered: bool,
}

fn f(x: u32) -> f32 {
    f32::from_bits(x)
}

/// VOP2 (`v3, v1, v2`) and VOP3 (`v3, v1, v2, v4`) instructions on gfx90a, words from
/// llvm-mc 14 (`-mcpu=gfx90a -show-encoding`), definitions from the CDNA2 guide.
fn cases() -> Vec<Case> {
    let e32 = |asm, w, f, ordered| Case {
        asm,
        words: [w, 0],
        len: 1,
        f,
        ordered,
    };
    let e64 = |asm, w, f, ordered| Case {
        asm,
        words: [w, 0x0412_0501],
        len: 2,
        f,
        ordered,
    };
    vec![
        e32(
            "v_lshrrev_b32_e32",
            0x2006_0501,
            |a, b, _| b >> (a & 31),
            true,
        ),
        e32(
            "v_lshlrev_b32_e32",
            0x2406_0501,
            |a, b, _| b << (a & 31),
            true,
        ),
        e32(
            "v_ashrrev_i32_e32",
            0x2206_0501,
            |a, b, _| ((b as i32) >> (a & 31)) as u32,
            true,
        ),
        e32(
            "v_sub_u32_e32",
            0x6a06_0501,
            |a, b, _| a.wrapping_sub(b),
            true,
        ),
        e32(
            "v_subrev_u32_e32",
            0x6c06_0501,
            |a, b, _| b.wrapping_sub(a),
            true,
        ),
        e32(
            "v_sub_f32_e32",
            0x0406_0501,
            |a, b, _| (f(a) - f(b)).to_bits(),
            true,
        ),
        e32(
            "v_subrev_f32_e32",
            0x0606_0501,
            |a, b, _| (f(b) - f(a)).to_bits(),
            true,
        ),
        e32("v_xor_b32_e32", 0x2a06_0501, |a, b, _| a ^ b, false),
        e32(
            "v_max_i32_e32",
            0x1a06_0501,
            |a, b, _| (a as i32).max(b as i32) as u32,
            false,
        ),
        e32("v_min_u32_e32", 0x1c06_0501, |a, b, _| a.min(b), false),
        e32(
            "v_mul_u32_u24_e32",
            0x1006_0501,
            |a, b, _| (a & 0xff_ffff).wrapping_mul(b & 0xff_ffff),
            false,
        ),
        e32(
            "v_mul_i32_i24_e32",
            0x0c06_0501,
            |a, b, _| ((((a << 8) as i32 >> 8) as i64) * (((b << 8) as i32 >> 8) as i64)) as u32,
            false,
        ),
        e32(
            "v_sub_co_u32_e32",
            0x3406_0501,
            |a, b, _| a.wrapping_sub(b),
            true,
        ),
        e32(
            "v_subrev_co_u32_e32",
            0x3606_0501,
            |a, b, _| b.wrapping_sub(a),
            true,
        ),
        e64(
            "v_bfe_u32",
            0xD1C8_0003,
            |a, b, c| {
                let w = c & 31;
                (a >> (b & 31)) & if w == 0 { 0 } else { (1u32 << w) - 1 }
            },
            true,
        ),
        e64("v_bfi_b32", 0xD1CA_0003, |a, b, c| (a & b) | (!a & c), true),
        e64(
            "v_alignbit_b32",
            0xD1CE_0003,
            |a, b, c| (((a as u64) << 32 | b as u64) >> (c & 31)) as u32,
            true,
        ),
        e64(
            "v_alignbyte_b32",
            0xD1CF_0003,
            |a, b, c| (((a as u64) << 32 | b as u64) >> (8 * (c & 3))) as u32,
            true,
        ),
        e64(
            "v_lshl_add_u32",
            0xD1FD_0003,
            |a, b, c| (a << (b & 31)).wrapping_add(c),
            true,
        ),
        e64(
            "v_add_lshl_u32",
            0xD1FE_0003,
            |a, b, c| a.wrapping_add(b) << (c & 31),
            false,
        ),
        e64(
            "v_lshl_or_b32",
            0xD200_0003,
            |a, b, c| (a << (b & 31)) | c,
            true,
        ),
        e64(
            "v_mad_u32_u24",
            0xD1C3_0003,
            |a, b, c| (a & 0xff_ffff).wrapping_mul(b & 0xff_ffff).wrapping_add(c),
            false,
        ),
        e64(
            "v_med3_i32",
            0xD1D7_0003,
            |a, b, c| {
                let mut v = [a as i32, b as i32, c as i32];
                v.sort();
                v[1] as u32
            },
            false,
        ),
        Case {
            asm: "v_mul_hi_u32",
            words: [0xD286_0003, 0x0002_0501],
            len: 2,
            f: |a, b, _| ((a as u64 * b as u64) >> 32) as u32,
            ordered: false,
        },
        // v_fma_f32 v3, -v1, |v2|, v4: one rounding of -S0 * |S1| + S2.
        Case {
            asm: "v_fma_f32",
            words: [0xD1CB_0203, 0x2412_0501],
            len: 2,
            f: |a, b, c| (-f(a)).mul_add(f(b).abs(), f(c)).to_bits(),
            ordered: true,
        },
    ]
}

#[test]
fn valu_ops_follow_the_guide_with_operands_in_order() {
    let mut m = Machine::new(Arch::Gfx90a);
    let mut rng = Rng::new("valu ops");
    for case in cases() {
        let float = case.asm.contains("_f32");
        let ins: Vec<[u32; 3]> = (0..64)
            .map(|_| {
                if float {
                    [
                        rng.f32().to_bits(),
                        rng.f32().to_bits(),
                        rng.f32().to_bits(),
                    ]
                } else {
                    [rng.u32(), rng.u32(), rng.u32()]
                }
            })
            .collect();
        for (l, x) in ins.iter().enumerate() {
            m.set(l, &[(1, x[0]), (2, x[1]), (4, x[2])]);
        }
        let inst = m.exec(&case.words[..case.len]);
        assert_eq!(inst.mnemonic(), case.asm.split(' ').next().unwrap());
        let mut told_apart = false;
        for (l, x) in ins.iter().enumerate() {
            let want = (case.f)(x[0], x[1], x[2]);
            assert_eq!(m.v(3, l), want, "{}: lane {l}, sources {x:08x?}", case.asm);
            told_apart |= (case.f)(x[1], x[0], x[2]) != want;
        }
        // A handler with S0 and S1 swapped would have failed above.
        assert!(
            !case.ordered || told_apart,
            "{}: inputs cannot tell S0 from S1",
            case.asm
        );
    }
}

#[test]
fn subtract_with_borrow_sets_vcc_per_lane() {
    // v_sub_co_u32_e32: VCC = S1 > S0 (borrow); v_subrev_co_u32_e32: VCC = S0 > S1.
    let mut m = Machine::new(Arch::Gfx90a);
    let mut rng = Rng::new("borrow");
    let ins: Vec<(u32, u32)> = (0..64).map(|_| (rng.u32(), rng.u32())).collect();
    for (l, &(a, b)) in ins.iter().enumerate() {
        m.set(l, &[(1, a), (2, b)]);
    }
    m.exec(&[0x3406_0501]);
    let want: u64 = ins
        .iter()
        .enumerate()
        .map(|(l, &(a, b))| ((b > a) as u64) << l)
        .sum();
    assert_eq!(m.wave.vcc(), want);
    m.exec(&[0x3606_0501]);
    let want: u64 = ins
        .iter()
        .enumerate()
        .map(|(l, &(a, b))| ((a > b) as u64) << l)
        .sum();
    assert_eq!(m.wave.vcc(), want);
}

#[test]
fn unimplemented_modifiers_are_errors() {
    use convgrad_isa::exec::{Launch, Program, run};
    let mut m = Machine::new(Arch::Gfx90a);
    let decode = |words: &[u32]| {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        decode_at(Arch::Gfx90a, &bytes, 0, 0).unwrap()
    };
    for (words, name, what) in [
        // v_pk_add_f16 v3, v1, v2 clamp
        (&[0xD38F_C003u32, 0x1802_0501][..], "v_pk_add_f16", "clamp"),
        // v_cvt_f16_f32_e64 v3, v1 mul:2
        (&[0xD14A_0003, 0x0800_0101], "v_cvt_f16_f32_e64", "omod"),
        // v_lshrrev_b32_e64 v3, -v1, v2 (an integer op: neg means nothing to it)
        (
            &[0xD110_0003, 0x2002_0501],
            "v_lshrrev_b32_e64",
            "neg on src0",
        ),
        // v_bfe_u32 v3, |v1|, v2, v4
        (&[0xD1C8_0103, 0x0412_0501], "v_bfe_u32", "abs on src0"),
    ] {
        let i = decode(words);
        assert_eq!(i.mnemonic(), name);
        let e = m.try_exec(&i).unwrap_err();
        assert!(e.contains(name) && e.contains(what), "{name}: {e}");
    }
    // Implemented ones pass: clamp on an integer add and on a float add, omod on a multiply.
    for words in [
        [0xD134_8003u32, 0x0002_0501],
        [0xD101_8003, 0x0002_0501],
        [0xD105_0003, 0x1002_0501],
    ] {
        m.try_exec(&decode(&words)).unwrap();
    }
    // Through a launch the error names the kernel and the address.
    let p = Program::new(
        Arch::Gfx90a,
        &kernel(&[0xD38F_C003, 0x1802_0501, 0xBF81_0000]),
    )
    .unwrap();
    let e = run(&p, &mut Memory::new(), &Launch::new(1, 64, vec![]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("handmade") && e.contains("0x1000") && e.contains("clamp"),
        "{e}"
    );
}
