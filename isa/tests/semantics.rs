//! Single instructions, encoded as the shipped code objects encode them, executed on
//! a hand-made wave and checked against the ISA guides' definitions.

use convgrad_isa::Arch;
use convgrad_isa::decode::{Inst, decode_at};
use convgrad_isa::exec::{Counters, Ctx, Flow, Lds, Memory, Wave, handler};

struct Machine {
    arch: Arch,
    wave: Wave,
    lds: Lds,
    mem: Memory,
    counters: Counters,
}

impl Machine {
    fn new(arch: Arch) -> Machine {
        let lanes = if arch == Arch::Gfx1100 { 32 } else { 64 };
        let mut wave = Wave::new(lanes, 0, arch.is_cdna());
        wave.set_exec(u64::MAX);
        Machine {
            arch,
            wave,
            lds: Lds::new(1024),
            mem: Memory::new(),
            counters: Counters::default(),
        }
    }
    fn v(&self, r: usize, lane: usize) -> u32 {
        self.wave.vgpr[r * self.wave.lanes + lane]
    }
    fn set_v(&mut self, r: usize, lane: usize, x: u32) {
        let lanes = self.wave.lanes;
        self.wave.vgpr[r * lanes + lane] = x;
    }
    /// Sets `(register, value)` pairs of one lane.
    fn set(&mut self, lane: usize, regs: &[(usize, u32)]) {
        for &(r, x) in regs {
            self.set_v(r, lane, x);
        }
    }
    /// Decodes `words` and executes the instruction.
    fn exec(&mut self, words: &[u32]) -> Inst {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let inst = decode_at(self.arch, &bytes, 0, 0).unwrap();
        assert_eq!(inst.len as usize, bytes.len(), "{inst}");
        let h = handler(inst.name).unwrap_or_else(|| panic!("no semantics for {}", inst.name));
        let mut c = Ctx {
            arch: self.arch,
            family: self.arch.family(),
            wave: &mut self.wave,
            lds: &mut self.lds,
            mem: &mut self.mem,
            counters: &mut self.counters,
            wg: [0; 3],
        };
        assert_eq!(h(&mut c, &inst), Ok(Flow::Next), "{inst}");
        inst
    }
}

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
    assert!(e.contains("LDS race") && e.contains("wave 1 reads byte 2") && e.contains("wave 0 wrote"), "{e}");
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
    assert!(lds.write(8, &[6]).unwrap_err().contains("which wave 0 wrote"));
}
