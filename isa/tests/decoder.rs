//! Cross-check of the decoder against `llvm-objdump` on the shipped code objects:
//! every instruction of every kernel must agree on address, length and mnemonic, and
//! every register operand objdump prints must be one the decoder found.

mod common;

use convgrad_isa::decode::{Enc, Operand, Variant, decode_all};
use convgrad_isa::{Arch, Inst};
use std::collections::{BTreeMap, BTreeSet, HashMap};
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

/// Splits objdump's operand text into tokens at top-level spaces and commas
/// (brackets and parentheses keep theirs: `v[2:3]`, `op_sel:[0,1]`, `hwreg(...)`).
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut cur, mut depth) = (String::new(), 0i32);
    for ch in text.chars() {
        match ch {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            _ => {}
        }
        if depth == 0 && (ch == ' ' || ch == ',') {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(ch);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A bare keyword modifier (cache bits and flags) as objdump prints it.
fn is_flag(t: &str) -> bool {
    // GFX12 cache policy: `th:...`, `scope:...`.
    t.starts_with("th:") || t.starts_with("scope:") || matches!(
        t,
        "glc"
            | "slc"
            | "dlc"
            | "sc0"
            | "sc1"
            | "nt"
            | "gds"
            | "clamp"
            | "lds"
            | "tfe"
            | "offen"
            | "idxen"
            | "addr64"
    )
}

/// objdump's instruction, normalized: operands in order (register ranges by their
/// first register, `|x|` / `-x` / `sext(x)` / `.h` kept as written) and modifiers.
#[derive(Debug, PartialEq, Eq)]
struct Printed {
    ops: Vec<String>,
    mods: BTreeSet<String>,
    /// Trailing operands objdump may leave out (VOP3 source fields the
    /// instruction does not read are decoded anyway).
    optional: usize,
}

fn first_reg(t: &str) -> String {
    // v[2:5] -> v2, s[0:1] -> s0, a[0:15] -> a0, ttmp[..] likewise.
    match t.split_once('[') {
        Some((kind, rest)) => format!("{kind}{}", rest.split(':').next().unwrap_or("")),
        None => t.to_string(),
    }
}

/// One operand token: modifiers outside, the register or constant inside.
fn norm_op(t: &str) -> String {
    for (pre, post) in [
        ("-|", "|"),
        ("|", "|"),
        ("-", ""),
        ("sext(", ")"),
        ("abs(", ")"),
        ("neg(", ")"),
    ] {
        if let Some(inner) = t.strip_prefix(pre).and_then(|r| r.strip_suffix(post))
            && !inner.is_empty()
            && !(pre == "-" && inner.starts_with(|c: char| c.is_ascii_digit()))
        {
            return format!("{pre}{}{post}", norm_op(inner));
        }
    }
    if let Some(v) = t.strip_prefix("lit(").and_then(|r| r.strip_suffix(')')) {
        return v.to_string();
    }
    match t {
        "vcc" => "vcc_lo".into(),
        "exec" => "exec_lo".into(),
        _ => first_reg(t),
    }
}

fn printed(text: &str) -> Printed {
    let mut parts = text.splitn(2, char::is_whitespace);
    parts.next();
    let rest = parts.next().unwrap_or("").trim();
    let mut p = Printed {
        ops: Vec::new(),
        mods: BTreeSet::new(),
        optional: 0,
    };
    for t in tokens(rest) {
        let top_colon = t.contains(':') && !t.starts_with(['v', 's', 'a', 't', '-', '|'])
            || t.contains(":[")
            || t.contains("_sel:")
            || t.contains("_unused:");
        if is_flag(&t) || top_colon && !t.contains('[') || t.contains(":[") {
            p.mods.insert(t);
        } else {
            p.ops.push(norm_op(&t));
        }
    }
    p
}

/// The text of an operand as objdump prints it (first register of a range).
fn op_text(arch: Arch, o: Operand) -> String {
    match o {
        Operand::Sgpr(124) if arch.family().rdna() => "null".into(),
        Operand::Sgpr(125) if arch.family().rdna() => "m0".into(),
        Operand::Sgpr(124) => "m0".into(),
        Operand::Sgpr(n @ 108..=123) => format!("ttmp{}", n - 108),
        Operand::Inline(248) => "0.15915494".into(),
        Operand::Inline(c) if Operand::inline_float(c).is_some() => {
            format!("{:?}", Operand::inline_float(c).unwrap())
        }
        o => o.to_string(),
    }
}

/// What the decoder says objdump must print for `i` (with `nsrc` VALU sources,
/// where known).
fn expected(arch: Arch, i: &Inst, nsrc: Option<usize>) -> Printed {
    // GFX11 and GFX12 print alike except where `gfx12` says.
    let gfx11 = arch.family().rdna();
    let gfx12 = arch.gfx12();
    // objdump's `vcc` (wave64) is normalized to `vcc_lo` like wave32's.
    let vcc = "vcc_lo".to_string();
    let mut ops: Vec<String> = Vec::new();
    let mut mods = BTreeSet::new();
    let mut optional = 0;
    let m = &i.mods;
    let t = |o: Operand| op_text(arch, o);
    let some = |o: Operand| o != Operand::None;
    // Source k with its VOP3 / SDWA abs, neg and sext.
    let src = |k: usize| -> String {
        let mut s = t(i.src[k]);
        let (abs, neg, sext) = match (m.sdwa, k) {
            (Some(w), 0) if i.variant == Variant::Sdwa => (w.src0_abs, w.src0_neg, w.src0_sext),
            (Some(w), 1) if i.variant == Variant::Sdwa => (w.src1_abs, w.src1_neg, w.src1_sext),
            _ if i.enc == Enc::Vop3 => (m.abs >> k & 1 != 0, m.neg >> k & 1 != 0, false),
            _ => (false, false, false),
        };
        if sext {
            s = format!("sext({s})");
        }
        if abs {
            s = format!("|{s}|");
        }
        if neg {
            s = format!("-{s}");
        }
        s
    };
    let flag = |mods: &mut BTreeSet<String>, on: bool, name: &str| {
        if on {
            mods.insert(name.to_string());
        }
    };
    // Cache bits of the memory encodings.
    let cache = |mods: &mut BTreeSet<String>| match arch {
        Arch::Gfx1200 | Arch::Gfx1201 => {
            // GFX12: th (atomics: bit 0 = TH_ATOMIC_RETURN) and scope.
            let atomic = i.name.contains("atomic");
            match (atomic, m.th) {
                (_, 0) => {}
                (true, 1) => {
                    mods.insert("th:TH_ATOMIC_RETURN".into());
                }
                (_, t) => {
                    mods.insert(format!("th:{t}"));
                }
            }
            if m.scope != 0 {
                let s = ["SCOPE_CU", "SCOPE_SE", "SCOPE_DEV", "SCOPE_SYS"][m.scope as usize];
                mods.insert(format!("scope:{s}"));
            }
        }
        Arch::Gfx942 => {
            flag(mods, m.glc, "sc0");
            flag(mods, m.dlc, "sc1");
            flag(mods, m.slc, "nt");
        }
        _ => {
            flag(mods, m.glc, "glc");
            flag(mods, m.slc, "slc");
            flag(mods, m.dlc, "dlc");
        }
    };
    match i.enc {
        Enc::Sop1 | Enc::Sop2 | Enc::Sopc => {
            let no_dst = i.enc == Enc::Sopc
                || matches!(
                    i.name,
                    "s_setpc_b64" | "s_rfe_b64" | "s_set_gpr_idx_idx" | "s_cbranch_join"
                ) || i.name.starts_with("s_barrier_signal");
            let no_src = matches!(i.name, "s_getpc_b64");
            if !no_dst {
                ops.push(t(i.dst));
            }
            if i.name.starts_with("s_sendmsg_rtn") {
                let id = match i.src[0] {
                    Operand::Inline(c) => c as u32,
                    Operand::Sgpr(c) => c as u32,
                    Operand::Literal(v) => v,
                    _ => u32::MAX,
                };
                let names = [
                    "MSG_RTN_GET_DOORBELL",
                    "MSG_RTN_GET_DDID",
                    "MSG_RTN_GET_TMA",
                    "MSG_RTN_GET_REALTIME",
                    "MSG_RTN_SAVE_WAVE",
                    "MSG_RTN_GET_TBA",
                ];
                ops.push(
                    match id.checked_sub(128).and_then(|k| names.get(k as usize)) {
                        Some(n) => format!("sendmsg({n})"),
                        None => format!("sendmsg({id})"),
                    },
                );
            } else if !no_src {
                for o in [i.src[0], i.src[1]] {
                    if some(o) {
                        ops.push(t(o));
                    }
                }
            }
        }
        Enc::Sopk => {
            ops.push(t(i.dst));
            ops.push(format!("0x{:x}", i.imm as u16));
        }
        Enc::Sopp if i.name == "s_waitcnt" => {
            let v = i.imm as u16 as u32;
            let (vm, exp, lgkm, max) = if gfx11 {
                (v >> 10 & 0x3f, v & 7, v >> 4 & 0x3f, (63, 7, 63))
            } else {
                (
                    (v & 0xf) | (v >> 14 & 3) << 4,
                    v >> 4 & 7,
                    v >> 8 & 0xf,
                    (63, 7, 15),
                )
            };
            for (n, x, mx) in [
                ("vmcnt", vm, max.0),
                ("expcnt", exp, max.1),
                ("lgkmcnt", lgkm, max.2),
            ] {
                if x != mx {
                    ops.push(format!("{n}({x})"));
                }
            }
        }
        Enc::Sopp if i.name == "s_delay_alu" => {
            let v = i.imm as u16 as u32;
            let id = |x: u32| {
                [
                    "NO_DEP",
                    "VALU_DEP_1",
                    "VALU_DEP_2",
                    "VALU_DEP_3",
                    "VALU_DEP_4",
                    "TRANS32_DEP_1",
                    "TRANS32_DEP_2",
                    "TRANS32_DEP_3",
                    "FMA_ACCUM_CYCLE_1",
                    "SALU_CYCLE_1",
                    "SALU_CYCLE_2",
                    "SALU_CYCLE_3",
                ]
                .get(x as usize)
                .copied()
                .unwrap_or("?")
            };
            let skip = ["SAME", "NEXT", "SKIP_1", "SKIP_2", "SKIP_3", "SKIP_4"];
            let (id0, sk, id1) = (v & 0xf, v >> 4 & 7, v >> 7 & 0xf);
            if id0 != 0 {
                ops.push(format!("instid0({})", id(id0)));
            }
            if sk != 0 {
                ops.push("|".into());
                ops.push(format!(
                    "instskip({})",
                    skip.get(sk as usize).unwrap_or(&"?")
                ));
            }
            if id1 != 0 {
                ops.push("|".into());
                ops.push(format!("instid1({})", id(id1)));
            }
        }
        Enc::Sopp if gfx12 && (i.name.starts_with("s_wait_") && i.name != "s_wait_alu" || i.name == "s_barrier_wait") => {
            ops.push(format!("0x{:x}", i.imm as u16));
        }
        Enc::Sopp if matches!(i.name, "s_waitcnt_depctr" | "s_wait_alu") => {
            let v = i.imm as u16 as u32;
            for (name, sh, bits) in [
                ("depctr_hold_cnt", 7, 1),
                ("depctr_sa_sdst", 0, 1),
                ("depctr_va_vdst", 12, 4),
                ("depctr_va_sdst", 9, 3),
                ("depctr_va_ssrc", 8, 1),
                ("depctr_va_vcc", 1, 1),
                ("depctr_vm_vsrc", 2, 3),
            ] {
                let x = v >> sh & ((1 << bits) - 1);
                if x != (1 << bits) - 1 {
                    ops.push(format!("{name}({x})"));
                }
            }
        }
        Enc::Sopp if i.name == "s_sendmsg" => {
            ops.push(match i.imm {
                1 => "sendmsg(MSG_INTERRUPT)".into(),
                3 if gfx11 => "sendmsg(MSG_DEALLOC_VGPRS)".into(),
                v => format!("sendmsg({v})"),
            });
        }
        Enc::Sopp => {
            let has_imm = i.name.starts_with("s_branch")
                || i.name.starts_with("s_cbranch")
                || matches!(
                    i.name,
                    "s_nop"
                        | "s_sleep"
                        | "s_setprio"
                        | "s_trap"
                        | "s_setkill"
                        | "s_clause"
                        | "s_inst_prefetch"
                );
            if matches!(i.name, "s_clause" | "s_set_inst_prefetch_distance") {
                ops.push(format!("0x{:x}", i.imm as u16));
            } else if has_imm || i.imm != 0 {
                ops.push((i.imm as u16).to_string());
            }
        }
        Enc::Smem => {
            ops.push(t(i.dst));
            ops.push(t(i.src[0]));
            // GFX11: soffset NULL is no operand unless the offset is 0 too.
            let null = gfx11 && i.src[1] == Operand::Sgpr(124);
            // GFX12 prints the 0 offset instead.
            if null && i.imm == 0 && !gfx12 {
                ops.push("null".into());
            } else if some(i.src[1]) && !null {
                ops.push(t(i.src[1]));
                if i.imm != 0 {
                    mods.insert(format!("offset:0x{:x}", i.imm));
                }
            } else {
                ops.push(format!("0x{:x}", i.imm));
            }
            cache(&mut mods);
        }
        Enc::Ds => {
            let n = i.name;
            let store = n.contains("write") || n.contains("store");
            let two = n.contains("write2") || n.contains("store_2addr") || n.contains("cmpst");
            let returns = !store
                && (n.contains("read")
                    || n.contains("load")
                    || n.contains("rtn")
                    || n.contains("permute")
                    || n.contains("swizzle")
                    || n.contains("append")
                    || n.contains("consume"));
            let data = store || n.contains("atomic") || n.contains("_add") || n.contains("permute");
            if returns {
                ops.push(t(i.dst));
            }
            if !(n.contains("append") || n.contains("consume")) {
                ops.push(t(i.src[0]));
            }
            if data {
                ops.push(t(i.src[1]));
            }
            if two {
                ops.push(t(i.src[2]));
            }
            let two =
                i.name.contains("2addr") || i.name.contains("write2") || i.name.contains("read2");
            if two {
                let (o0, o1) = (i.imm & 0xff, i.imm >> 8 & 0xff);
                if o0 != 0 {
                    mods.insert(format!("offset0:{o0}"));
                }
                if o1 != 0 {
                    mods.insert(format!("offset1:{o1}"));
                }
            } else if i.imm != 0 {
                mods.insert(format!("offset:{}", i.imm));
            }
            flag(&mut mods, m.gds, "gds");
        }
        Enc::Flat if i.name == "global_inv" || i.name == "global_wb" || i.name == "global_wbinv" => {
            cache(&mut mods);
        }
        Enc::Flat => {
            let atomic = i.name.contains("atomic");
            let store = i.name.contains("store");
            if !store && (!atomic || m.glc) {
                ops.push(t(i.dst));
            }
            ops.push(t(i.src[0]));
            if store || atomic {
                ops.push(t(i.src[1]));
            }
            if m.seg != 0 {
                ops.push(if some(i.saddr) {
                    t(i.saddr)
                } else {
                    "off".into()
                });
            }
            if i.imm != 0 {
                mods.insert(format!("offset:{}", i.imm));
            }
            cache(&mut mods);
        }
        Enc::Mubuf => {
            cache(&mut mods);
        }
        _ => {
            // VALU.
            let cmpx11 = gfx11 && i.name.starts_with("v_cmpx");
            let carry_e32 = matches!(i.variant, Variant::E32 | Variant::Sdwa)
                && (i.name.contains("_co_") || i.name.contains("addc") || i.name.contains("subb"));
            if some(i.dst)
                && !(cmpx11 && i.enc == Enc::Vopc)
                && !(cmpx11 && i.variant == Variant::E64)
            {
                ops.push(t(i.dst));
            }
            if carry_e32
                && (i.name.contains("_co_u32")
                    || i.name.contains("_co_ci_")
                    || i.name.contains("addc")
                    || i.name.contains("subb"))
            {
                ops.push(vcc.clone());
            }
            if some(i.sdst) {
                ops.push(t(i.sdst));
            }
            let decoded = (0..3).filter(|&k| some(i.src[k])).count();
            let n = nsrc.unwrap_or(decoded).min(decoded);
            for k in 0..n {
                ops.push(src(k));
            }
            if matches!(i.enc, Enc::Vop3 | Enc::Vop3p) && nsrc.is_none() {
                optional = n.saturating_sub(1);
            }
            if matches!(i.name, "v_fmamk_f32" | "v_madmk_f32") {
                ops.insert(ops.len() - 1, format!("0x{:x}", i.imm as u32));
            }
            if matches!(i.name, "v_fmaak_f32" | "v_madak_f32") {
                ops.push(format!("0x{:x}", i.imm as u32));
            }
            let carry_in = i.name.contains("addc")
                || i.name.contains("subb")
                || i.name.contains("_ci_")
                || i.name == "v_cndmask_b32";
            if carry_in && matches!(i.variant, Variant::E32 | Variant::Sdwa) {
                ops.push(vcc.clone());
            }
            flag(&mut mods, m.clamp && i.enc != Enc::Vop3p, "clamp");
            match m.omod {
                1 => {
                    mods.insert("mul:2".into());
                }
                2 => {
                    mods.insert("mul:4".into());
                }
                3 => {
                    mods.insert("div:2".into());
                }
                _ => {}
            }
            let arr = |bits: u8, n: usize| {
                let v: Vec<String> = (0..n).map(|k| (bits >> k & 1).to_string()).collect();
                format!("[{}]", v.join(","))
            };
            if i.enc == Enc::Vop3 && m.opsel != 0 {
                // Sources, then the destination (bit 3).
                let bits = (m.opsel & ((1 << n) - 1)) | (m.opsel >> 3 & 1) << n;
                mods.insert(format!("op_sel:{}", arr(bits, n + 1)));
            }
            if i.enc == Enc::Vop3p {
                if i.name.starts_with("v_mfma") {
                    if m.neg_hi != 0 {
                        mods.insert(format!("cbsz:{}", m.neg_hi));
                    }
                    if m.opsel != 0 {
                        mods.insert(format!("abid:{}", m.opsel));
                    }
                    if m.neg != 0 {
                        mods.insert(format!("blgp:{}", m.neg));
                    }
                } else {
                    flag(&mut mods, m.clamp, "clamp");
                    let full = (1u8 << n) - 1;
                    if m.opsel & full != 0 {
                        mods.insert(format!("op_sel:{}", arr(m.opsel, n)));
                    }
                    let mix = i.name.starts_with("v_fma_mix");
                    let hi = m.opsel_hi & full;
                    if (mix && hi != 0) || (!mix && hi != full) {
                        mods.insert(format!("op_sel_hi:{}", arr(m.opsel_hi, n)));
                    }
                    if m.neg & full != 0 {
                        mods.insert(format!("neg_lo:{}", arr(m.neg, n)));
                    }
                    if m.neg_hi & full != 0 {
                        mods.insert(format!("neg_hi:{}", arr(m.neg_hi, n)));
                    }
                }
            }
            if let (Some(w), Variant::Sdwa) = (m.sdwa, i.variant) {
                let sel = |s: u8| {
                    [
                        "BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD",
                    ][s as usize % 7]
                };
                if i.enc != Enc::Vopc {
                    mods.insert(format!("dst_sel:{}", sel(w.dst_sel)));
                    mods.insert(format!(
                        "dst_unused:{}",
                        ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE"][w.dst_unused as usize % 3]
                    ));
                }
                mods.insert(format!("src0_sel:{}", sel(w.src0_sel)));
                if i.enc != Enc::Vop1 {
                    mods.insert(format!("src1_sel:{}", sel(w.src1_sel)));
                }
            }
        }
    }
    Printed {
        ops,
        mods,
        optional,
    }
}

/// Compares one decoded instruction with objdump's text; `None` when they agree.
fn compare(arch: Arch, i: &Inst, text: &str) -> Option<String> {
    let (x, y) = match text.split_once(" :: ") {
        Some((x, y)) => (x, Some(y)),
        None => (text, None),
    };
    let got = printed(x);
    let mut want = expected(arch, i, None);
    // VOP3/VOP3P source fields beyond the ones objdump prints are not operands:
    // take the sources objdump prints (only trailing ones may be missing).
    if want.ops.len() > got.ops.len() && want.ops.len() - got.ops.len() <= want.optional {
        let decoded = (0..3).filter(|&k| i.src[k] != Operand::None).count();
        want = expected(arch, i, Some(decoded - (want.ops.len() - got.ops.len())));
    }
    // true16 halves: objdump writes v1.l / v1.h where the decoder keeps op_sel bits.
    let strip = |v: &[String]| -> Vec<String> {
        v.iter()
            .map(|s| s.replace(".l", "").replace(".h", ""))
            .collect()
    };
    let mut got_ops = strip(&got.ops);
    let mut want_ops = want.ops.clone();
    if let Some(vy) = &i.vopd_y {
        // X half: as many sources as the operation has, K in place for fmamk/fmaak.
        want_ops = vec![op_text(arch, i.dst)];
        let nx = if i.name == "v_dual_mov_b32" { 1 } else { 2 };
        for k in 0..nx {
            want_ops.push(op_text(arch, i.src[k]));
        }
        if i.name == "v_dual_fmamk_f32" {
            want_ops.insert(want_ops.len() - 1, format!("0x{:x}", i.imm as u32));
        }
        if i.name == "v_dual_fmaak_f32" {
            want_ops.push(format!("0x{:x}", i.imm as u32));
        }
        let _ = vy;
    }
    if let (Some(y), Some(vy)) = (y, &i.vopd_y) {
        let py = printed(y);
        got_ops.extend(strip(&py.ops));
        want_ops.push(op_text(arch, vy.dst));
        let n = if vy.name == "v_dual_mov_b32" { 1 } else { 2 };
        for k in 0..n {
            want_ops.push(op_text(arch, vy.src[k]));
        }
        if matches!(vy.name, "v_dual_fmamk_f32") {
            want_ops.insert(want_ops.len() - 1, format!("0x{:x}", i.imm as u32));
        }
        if matches!(vy.name, "v_dual_fmaak_f32") {
            want_ops.push(format!("0x{:x}", i.imm as u32));
        }
    }
    if got_ops == want_ops && got.mods == want.mods {
        None
    } else {
        Some(format!(
            "operands {got_ops:?} / decoder {want_ops:?}; modifiers {:?} / decoder {:?}",
            got.mods, want.mods
        ))
    }
}

fn check_arch(arch: Arch) -> (usize, usize) {
    let co = common::load(arch);
    assert_eq!(co.arch, arch);
    assert!(!co.kernels.is_empty(), "{arch}: no kernels");
    let dis = objdump(arch);
    let (mut n, mut operand_checked) = (0usize, 0usize);
    let mut bad = Vec::new();
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
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
            if let Some(d) = compare(arch, i, &l.text) {
                *kinds.entry(i.mnemonic()).or_insert(0usize) += 1;
                if kinds[&i.mnemonic()] > 1 {
                    bad.push(String::new());
                    continue;
                }
                bad.push(format!(
                    "{arch} {} 0x{:x}: objdump `{}`, decoder `{}`: {d}",
                    k.name, i.addr, l.text, i
                ));
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
        // One example per mnemonic (the counts follow).
        bad.retain(|b| !b.is_empty());
        bad.truncate(60);
        bad.push(format!("by mnemonic: {kinds:?}"));
        panic!(
            "{arch}: {total} disagreements with llvm-objdump, first ones:\n{}",
            bad.join("\n")
        );
    }
    println!(
        "{arch}: {n} instructions in {} kernels agree with llvm-objdump (mnemonic, length, and {operand_checked} in every operand and modifier)",
        co.kernels.len()
    );
    (n, operand_checked)
}

common::per_arch!(decoder_agrees_with_llvm_objdump, check_arch);

/// GFX12 (RDNA4): the same comparison on the gfx1200 and gfx1201 objects.
mod decoder_agrees_with_llvm_objdump_gfx12 {
    #[test]
    fn gfx1200() {
        super::check_arch(convgrad_isa::Arch::Gfx1200);
    }
    #[test]
    fn gfx1201() {
        super::check_arch(convgrad_isa::Arch::Gfx1201);
    }
}

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
        let bytes: Vec<u8> = [w0, 0x0100_0002]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        convgrad_isa::decode::decode_at(Arch::Gfx1100, &bytes, 0, 0)
            .unwrap()
            .mnemonic()
            .to_string()
    };
    let want = [
        (53, "ds_swizzle_b32"),
        (61, "ds_consume"),
        (62, "ds_append"),
        (63, "ds_ordered_count"),
        (178, "ds_permute_b32"),
        (179, "ds_bpermute_b32"),
    ];
    for (op, name) in want {
        assert_eq!(ds(op), name, "gfx1100 DS opcode {op}");
    }
    // GFX9 keeps them at 61-63 (CDNA3 guide).
    let w0: u32 = 0xd800_0000 | 62 << 17;
    let bytes: Vec<u8> = [w0, 0x0100_0002]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    assert_eq!(
        convgrad_isa::decode::decode_at(Arch::Gfx942, &bytes, 0, 0)
            .unwrap()
            .mnemonic(),
        "ds_permute_b32"
    );
}

/// MI300 has no unfused f32 multiply-add: VOP2 23/24 are `v_fmamk/fmaak_f32`
/// there (CDNA3 guide; llvm-project `llvm/test/MC/AMDGPU/gfx940_asm_features.s`
/// encodes them as 0x2e000702 / 0x30000702 with the literal after), while
/// gfx90a keeps `v_madmk/madak_f32` and has `v_mac_f32` at 22.
#[test]
fn mi300_vop2_has_the_fused_multiply_adds() {
    let first = |arch: Arch, w0: u32| {
        let bytes: Vec<u8> = [w0, 0x42c8_0000]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let i = convgrad_isa::decode::decode_at(arch, &bytes, 0, 0).ok()?;
        Some((i.name.to_string(), i.len))
    };
    assert_eq!(
        first(Arch::Gfx942, 0x2e00_0702),
        Some(("v_fmamk_f32".into(), 8))
    );
    assert_eq!(
        first(Arch::Gfx942, 0x3000_0702),
        Some(("v_fmaak_f32".into(), 8))
    );
    assert_eq!(
        first(Arch::Gfx90a, 0x2e00_0702),
        Some(("v_madmk_f32".into(), 8))
    );
    assert_eq!(
        first(Arch::Gfx942, 0x2c00_0702),
        None,
        "gfx942 has no v_mac_f32"
    );
    assert_eq!(
        first(Arch::Gfx90a, 0x2c00_0702).map(|m| m.0),
        Some("v_mac_f32".into())
    );
}

/// The comparison is not vacuous: decodes altered the way a wrong field position
/// would alter them (two sources swapped, an offset, a cache bit, a modifier, a
/// destination) all disagree with objdump's text of the instruction.
fn comparison_catches_altered_decodes(arch: Arch) {
    let co = common::load(arch);
    let dis = objdump(arch);
    let mut caught: BTreeMap<&str, usize> = BTreeMap::new();
    for k in co.kernels.iter().take(4) {
        for i in decode_all(arch, &k.code, k.entry).unwrap() {
            let Some(l) = dis.get(&i.addr) else { continue };
            if compare(arch, &i, &l.text).is_some() {
                continue; // reported by decoder_agrees_with_llvm_objdump
            }
            let mut alts: Vec<(&str, Inst)> = Vec::new();
            if i.src[0] != Operand::None && i.src[1] != Operand::None && i.src[0] != i.src[1] {
                let mut a = i.clone();
                a.src.swap(0, 1);
                alts.push(("swapped sources", a));
            }
            if matches!(i.enc, Enc::Flat | Enc::Ds | Enc::Smem) {
                let mut a = i.clone();
                a.imm += 4;
                alts.push(("offset", a));
            }
            if matches!(i.enc, Enc::Flat | Enc::Smem) {
                let mut a = i.clone();
                a.mods.glc = !a.mods.glc;
                alts.push(("cache bit", a));
            }
            if i.enc == Enc::Vop3 {
                let mut a = i.clone();
                a.mods.neg ^= 1;
                alts.push(("neg", a));
            }
            let valu = matches!(i.enc, Enc::Vop1 | Enc::Vop2 | Enc::Vop3 | Enc::Vop3p);
            if let (Operand::Vgpr(r), true) = (i.dst, valu || i.name.contains("load")) {
                let mut a = i.clone();
                a.dst = Operand::Vgpr(r ^ 1);
                alts.push(("destination", a));
            }
            for (what, a) in alts {
                assert!(
                    compare(arch, &a, &l.text).is_some(),
                    "{arch} 0x{:x} `{}`: {what} altered, still agrees: `{a}`",
                    i.addr,
                    l.text
                );
                *caught.entry(what).or_default() += 1;
            }
        }
    }
    for what in ["swapped sources", "offset", "destination"] {
        assert!(
            caught.get(what).copied().unwrap_or(0) > 0,
            "{arch}: no {what} case tried"
        );
    }
    println!("{arch}: altered decodes caught: {caught:?}");
}

common::per_arch!(
    comparison_is_not_vacuous,
    comparison_catches_altered_decodes
);
