//! Alignment checks (`src/exec/align.rs`, issue #42): hand-made gfx942 kernels
//! whose one lane accesses LDS or global memory at an aligned and a misaligned
//! address; the misaligned one must stop the launch naming the kernel, the
//! instruction's address and the offset, unless `Launch::alignment` is off.

use convgrad_isa::exec::align::Check;
use convgrad_isa::exec::{Launch, Memory, Program, run};
use convgrad_isa::{Arch, Kernel, KernelDescriptor};

const ENTRY: u64 = 0x1000;
const S_ENDPGM: u32 = 0xBF81_0000;
/// `v_mov_b32_e32 v0, <inline constant>` (GFX9 VOP1 opcode 1).
fn v_mov_v0(imm: u32) -> u32 {
    assert!(imm <= 64);
    0x7E00_0200 | (128 + imm)
}
/// GFX9 DS word 0: opcode at 24:17, offset at 15:0.
fn ds(op: u32, offset: u32) -> u32 {
    0xD800_0000 | op << 17 | offset
}

fn kernel(words: &[u32]) -> Kernel {
    Kernel {
        name: "aligned_or_not".into(),
        entry: ENTRY,
        code: words.iter().flat_map(|w| w.to_le_bytes()).collect(),
        descriptor: KernelDescriptor::parse(&[0; 64]).unwrap(),
        meta: Default::default(),
    }
}

/// Runs `words` as one work-item with 64 bytes of LDS.
fn launch(words: &[u32], mem: &mut Memory, check: Check) -> Result<u64, String> {
    let p = Program::new(Arch::Gfx942, &kernel(words)).unwrap();
    let mut l = Launch::new(1, 1, vec![]);
    l.dynamic_lds = 64;
    l.alignment = check;
    run(&p, mem, &l)
        .map(|c| c.misaligned_lds + c.misaligned_global)
        .map_err(|e| e.to_string())
}

/// v0 = `base`; `ds_write_b64 v0, v[2:3] offset:off`; `ds_read_b64 v[4:5], v0 offset:off`.
fn lds_b64(base: u32, off: u32) -> Vec<u32> {
    vec![
        v_mov_v0(base),
        ds(77, off),
        0x0000_0200,
        ds(118, off),
        0x0400_0000,
        S_ENDPGM,
    ]
}

#[test]
fn misaligned_lds_b64_is_an_error_naming_kernel_pc_and_offset() {
    for (base, off) in [(0, 8), (8, 16), (4, 4)] {
        assert_eq!(
            launch(&lds_b64(base, off), &mut Memory::new(), Check::Lds),
            Ok(0)
        );
    }
    // 2 + 8 = 10 = 2 mod 8: the store (the instruction after v_mov, at +4) fails.
    let e = launch(&lds_b64(2, 8), &mut Memory::new(), Check::Lds).unwrap_err();
    assert!(
        e.contains("aligned_or_not")
            && e.contains("0x1004")
            && e.contains("ds_write_b64")
            && e.contains("LDS offset 0xa (= 2 mod 8)"),
        "{e}"
    );
    // 4 mod 8 is misaligned for 8 bytes as well (dword alignment is not enough).
    assert!(launch(&lds_b64(4, 8), &mut Memory::new(), Check::Lds).is_err());
    // Off: it runs, and both accesses are counted.
    assert_eq!(
        launch(&lds_b64(2, 8), &mut Memory::new(), Check::Off),
        Ok(2)
    );
}

#[test]
fn two_address_forms_check_each_element() {
    // ds_write2_b32 v0, v2, v3 offset1:1 (opcode 14), then ds_read2_b64 v[4:7], v0
    // offset1:1 (opcode 119): 4-byte elements need 4, 8-byte ones 8.
    let words = |base| {
        vec![
            v_mov_v0(base),
            ds(14, 0x0100),
            0x0003_0200,
            ds(14, 0x0302),
            0x0003_0200,
            ds(119, 0x0100),
            0x0400_0000,
            S_ENDPGM,
        ]
    };
    assert_eq!(launch(&words(8), &mut Memory::new(), Check::Lds), Ok(0));
    let e = launch(&words(4), &mut Memory::new(), Check::Lds).unwrap_err();
    assert!(
        e.contains("ds_read2_b64") && e.contains("(= 4 mod 8)"),
        "{e}"
    );
    let e = launch(&words(2), &mut Memory::new(), Check::Lds).unwrap_err();
    assert!(
        e.contains("ds_write2_b32") && e.contains("(= 2 mod 4)"),
        "{e}"
    );
}

#[test]
fn global_accesses_need_dword_alignment_when_strict() {
    // s[0:1] = buffer; global_load_dword v1, v0, s[0:1] offset:off (opcode 20),
    // global_load_ushort (opcode 18), global_load_dwordx2 v[1:2] (opcode 21).
    let words = |addr: u64, op: u32, off: u32| {
        vec![
            0xBE80_00FF,
            addr as u32,
            0xBE81_00FF,
            (addr >> 32) as u32,
            v_mov_v0(0),
            0xDC00_8000 | op << 18 | off,
            0x0100_0000,
            S_ENDPGM,
        ]
    };
    let mut mem = Memory::new();
    let a = mem.alloc("buf", 16);
    mem.write(a, &[7; 16]).unwrap();
    assert_eq!(launch(&words(a, 20, 4), &mut mem, Check::Strict), Ok(0));
    assert_eq!(launch(&words(a, 18, 2), &mut mem, Check::Strict), Ok(0));
    // global_load_dwordx2 (opcode 21) at 4 mod 8: dword alignment is enough.
    assert_eq!(launch(&words(a, 21, 4), &mut mem, Check::Strict), Ok(0));
    let e = launch(&words(a, 20, 2), &mut mem, Check::Strict).unwrap_err();
    assert!(
        e.contains("global_load_dword") && e.contains("(= 2 mod 4)"),
        "{e}"
    );
    // The default (LDS only) and off count it without stopping.
    assert_eq!(launch(&words(a, 20, 2), &mut mem, Check::Lds), Ok(1));
    assert_eq!(launch(&words(a, 20, 2), &mut mem, Check::Off), Ok(1));
}
