//! Cross-check of the decoder against `llvm-objdump` on the shipped code objects:
//! every instruction of every kernel must agree on address, length and mnemonic, and
//! every register operand objdump prints must be one the decoder found.

mod common;

use convgrad_isa::decode::{Enc, Operand, Variant, decode_all};
use convgrad_isa::{Arch, Inst};
use std::collections::{BTreeSet, HashMap};
use std::process::Command;

struct Line {
    text: String,
    words: usize,
}

fn objdump(arch: Arch) -> HashMap<u64, Line> {
    let out = Command::new(common::llvm_objdump())
        .args(["-d", &format!("--mcpu={}", arch.name())])
        .arg(common::hsaco_path(arch))
        .output()
        .expect("running llvm-objdump");
    assert!(
        out.status.success(),
        "llvm-objdump failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut m = HashMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((text, tail)) = l.rsplit_once("// ") else {
            continue;
        };
        let Some((addr, words)) = tail.split_once(": ") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        let words = words
            .split_whitespace()
            .take_while(|w| w.len() == 8 && u32::from_str_radix(w, 16).is_ok())
            .count();
        m.insert(
            addr,
            Line {
                text: text.trim().to_string(),
                words,
            },
        );
    }
    m
}

/// The first register of each register operand printed by objdump.
fn printed_registers(arch: Arch, text: &str) -> Vec<Operand> {
    let mut out = Vec::new();
    let mut parts = text.splitn(2, char::is_whitespace);
    parts.next();
    let Some(rest) = parts.next() else { return out };
    for tok in rest.split([',', ' ']).filter(|t| !t.is_empty()) {
        if tok.contains(':') && !tok.contains('[') || tok == "::" {
            continue;
        }
        let t = tok.trim_start_matches(['-', '|']).trim_end_matches('|');
        let t = t.strip_prefix("abs(").unwrap_or(t).trim_end_matches(')');
        let t = t.trim_end_matches(".l").trim_end_matches(".h");
        let num = |s: &str| s.parse::<u16>().ok();
        let reg = match t {
            "vcc" | "vcc_lo" => Some(Operand::Sgpr(106)),
            "vcc_hi" => Some(Operand::Sgpr(107)),
            "exec" | "exec_lo" => Some(Operand::Sgpr(126)),
            "exec_hi" => Some(Operand::Sgpr(127)),
            "m0" => Some(Operand::Sgpr(if arch == Arch::Gfx1100 { 125 } else { 124 })),
            "null" => Some(Operand::Sgpr(124)),
            _ => {
                let (kind, body) = t.split_at(t.len().min(1));
                let first = body
                    .strip_prefix('[')
                    .map(|b| b.split(':').next().unwrap_or(""))
                    .unwrap_or(body);
                match (kind, num(first)) {
                    ("s", Some(n)) => Some(Operand::Sgpr(n as u8)),
                    ("v", Some(n)) => Some(Operand::Vgpr(n)),
                    ("a", Some(n)) => Some(Operand::Agpr(n)),
                    _ => None,
                }
            }
        };
        out.extend(reg);
    }
    out
}

fn decoded_registers(i: &Inst) -> BTreeSet<String> {
    let mut s: BTreeSet<String> = [i.dst, i.sdst, i.src[0], i.src[1], i.src[2], i.saddr]
        .iter()
        .map(|o| format!("{o:?}"))
        .collect();
    if let Some(y) = &i.vopd_y {
        for o in [y.dst, y.src[0], y.src[1]] {
            s.insert(format!("{o:?}"));
        }
    }
    // Implicit VCC of the 32-bit and SDWA forms.
    if matches!(i.variant, Variant::E32 | Variant::Sdwa) || i.enc == Enc::Vopd {
        s.insert(format!("{:?}", Operand::Sgpr(106)));
    }
    s
}

fn check_arch(arch: Arch) -> (usize, usize) {
    let co = common::load(arch);
    assert_eq!(co.arch, arch);
    assert!(!co.kernels.is_empty(), "{arch}: no kernels");
    let dis = objdump(arch);
    let (mut n, mut operand_checked) = (0usize, 0usize);
    let mut bad = Vec::new();
    for k in &co.kernels {
        let insts =
            decode_all(arch, &k.code, k.entry).unwrap_or_else(|e| panic!("{arch} {}: {e}", k.name));
        let mut covered = BTreeSet::new();
        for i in &insts {
            n += 1;
            covered.insert(i.addr);
            let Some(l) = dis.get(&i.addr) else {
                bad.push(format!(
                    "{arch} {} 0x{:x}: decoded {} but objdump has no instruction there",
                    k.name,
                    i.addr,
                    i.mnemonic()
                ));
                continue;
            };
            let theirs = l.text.split_whitespace().next().unwrap_or("");
            let mut ok = theirs == i.mnemonic() && l.words * 4 == i.len as usize;
            if let Some(y) = &i.vopd_y {
                let ty = l
                    .text
                    .split(":: ")
                    .nth(1)
                    .and_then(|t| t.split_whitespace().next())
                    .unwrap_or("");
                ok &= ty == y.name;
            }
            if !ok {
                bad.push(format!(
                    "{arch} {} 0x{:x}: objdump `{}` ({} bytes), decoder `{}` ({} bytes)",
                    k.name,
                    i.addr,
                    l.text,
                    l.words * 4,
                    i,
                    i.len
                ));
                continue;
            }
            let mine = decoded_registers(i);
            for r in printed_registers(arch, &l.text) {
                if !mine.contains(&format!("{r:?}")) {
                    bad.push(format!(
                        "{arch} {} 0x{:x}: objdump `{}` names {r:?}, decoder `{}`",
                        k.name, i.addr, l.text, i
                    ));
                }
            }
            operand_checked += 1;
        }
        // Every instruction objdump lists inside the kernel was decoded at that address.
        let end = k.entry + k.code.len() as u64;
        for (&a, l) in dis.iter().filter(|(a, _)| (k.entry..end).contains(*a)) {
            if !covered.contains(&a) {
                bad.push(format!(
                    "{arch} {} 0x{a:x}: objdump `{}` not decoded",
                    k.name, l.text
                ));
            }
        }
    }
    if !bad.is_empty() {
        let total = bad.len();
        bad.truncate(40);
        panic!(
            "{arch}: {total} disagreements with llvm-objdump, first ones:\n{}",
            bad.join("\n")
        );
    }
    println!(
        "{arch}: {n} instructions in {} kernels agree with llvm-objdump (mnemonic, length, {operand_checked} with register operands)",
        co.kernels.len()
    );
    (n, operand_checked)
}

common::per_arch!(decoder_agrees_with_llvm_objdump, check_arch);

#[test]
fn code_objects_have_descriptors_and_metadata() {
    for arch in Arch::ALL {
        let co = common::load(arch);
        assert!(
            co.target
                .as_deref()
                .is_some_and(|t| t.contains(arch.name())),
            "{arch}: target {:?}",
            co.target
        );
        for k in &co.kernels {
            let d = &k.descriptor;
            assert_eq!(k.meta.name, k.name, "{arch}: metadata for {}", k.name);
            assert_eq!(
                d.kernarg_size, k.meta.kernarg_segment_size,
                "{arch} {}",
                k.name
            );
            assert_eq!(
                d.group_segment_fixed_size, k.meta.group_segment_fixed_size,
                "{arch} {}",
                k.name
            );
            assert_eq!(d.wave32(), k.meta.wavefront_size == 32, "{arch} {}", k.name);
            assert!(
                d.user_sgprs()
                    .contains(&convgrad_isa::code_object::UserSgpr::KernargSegmentPtr),
                "{arch} {}",
                k.name
            );
            assert!(!d.private_segment(), "{arch} {}: scratch", k.name);
        }
    }
}

/// GFX10 moved DS's swizzle and permutes and put consume/append/ordered_count
/// at 61-63; GFX11 kept that (RDNA3 guide). The words are llvm-mc 14's
/// encodings for gfx1030 (`-show-encoding`), which agree with the guide.
#[test]
fn gfx1100_ds_opcodes_follow_the_rdna3_guide() {
    let ds = |op: u32| {
        let w0: u32 = 0xd800_0000 | op << 18;
        let bytes: Vec<u8> = [w0, 0x0100_0002].iter().flat_map(|w| w.to_le_bytes()).collect();
        convgrad_isa::decode::decode_at(Arch::Gfx1100, &bytes, 0, 0).unwrap().mnemonic().to_string()
    };
    let want = [(53, "ds_swizzle_b32"), (61, "ds_consume"), (62, "ds_append"), (63, "ds_ordered_count"), (178, "ds_permute_b32"), (179, "ds_bpermute_b32")];
    for (op, name) in want {
        assert_eq!(ds(op), name, "gfx1100 DS opcode {op}");
    }
    // GFX9 keeps them at 61-63 (CDNA3 guide).
    let w0: u32 = 0xd800_0000 | 62 << 17;
    let bytes: Vec<u8> = [w0, 0x0100_0002].iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(convgrad_isa::decode::decode_at(Arch::Gfx942, &bytes, 0, 0).unwrap().mnemonic(), "ds_permute_b32");
}

/// MI300 has no unfused f32 multiply-add: VOP2 23/24 are `v_fmamk/fmaak_f32`
/// there (CDNA3 guide; llvm-project `llvm/test/MC/AMDGPU/gfx940_asm_features.s`
/// encodes them as 0x2e000702 / 0x30000702 with the literal after), while
/// gfx90a keeps `v_madmk/madak_f32` and has `v_mac_f32` at 22.
#[test]
fn mi300_vop2_has_the_fused_multiply_adds() {
    let first = |arch: Arch, w0: u32| {
        let bytes: Vec<u8> = [w0, 0x42c8_0000].iter().flat_map(|w| w.to_le_bytes()).collect();
        let i = convgrad_isa::decode::decode_at(arch, &bytes, 0, 0).ok()?;
        Some((i.name.to_string(), i.len))
    };
    assert_eq!(first(Arch::Gfx942, 0x2e00_0702), Some(("v_fmamk_f32".into(), 8)));
    assert_eq!(first(Arch::Gfx942, 0x3000_0702), Some(("v_fmaak_f32".into(), 8)));
    assert_eq!(first(Arch::Gfx90a, 0x2e00_0702), Some(("v_madmk_f32".into(), 8)));
    assert_eq!(first(Arch::Gfx942, 0x2c00_0702), None, "gfx942 has no v_mac_f32");
    assert_eq!(first(Arch::Gfx90a, 0x2c00_0702).map(|m| m.0), Some("v_mac_f32".into()));
}
