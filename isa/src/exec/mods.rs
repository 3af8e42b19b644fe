//! Which modifier fields an instruction sets, and the check that its handler
//! implemented every one of them.
//!
//! Handlers (through the shared readers in `valu.rs` and the packed readers in
//! `vop3p.rs`) mark a field as *used* when they consult it ([`super::Ctx::uses`]).
//! After an instruction has run, every field the encoding sets away from its default
//! ([`present`]) must have been used; a field no handler consulted would otherwise be
//! silently ignored, so it is an error naming the instruction and the field.

use crate::decode::{Enc, Inst, Operand, Variant};

/// abs of source k.
pub const fn abs(k: usize) -> u32 {
    1 << k
}
/// neg (VOP3P: neg_lo) of source k.
pub const fn neg(k: usize) -> u32 {
    1 << (3 + k)
}
/// VOP3P neg_hi of source k.
pub const fn neg_hi(k: usize) -> u32 {
    1 << (6 + k)
}
/// op_sel bit k (k = 3: the destination's half).
pub const fn opsel(k: usize) -> u32 {
    1 << (9 + k)
}
/// VOP3P op_sel_hi of source k.
pub const fn opsel_hi(k: usize) -> u32 {
    1 << (13 + k)
}
/// clamp.
pub const CLAMP: u32 = 1 << 16;
/// omod (output multiplier).
pub const OMOD: u32 = 1 << 17;
/// SDWA select / sign extension of source k (k = 0, 1).
pub const fn sdwa_src(k: usize) -> u32 {
    1 << (18 + k)
}
/// SDWA dst_sel / dst_unused.
pub const SDWA_DST: u32 = 1 << 20;
/// DS `gds`.
pub const GDS: u32 = 1 << 21;

/// The modifier fields `i` sets away from their defaults.
pub fn present(i: &Inst) -> u32 {
    let m = &i.mods;
    let mut p = 0;
    let bits = |v: u8, n: usize, f: fn(usize) -> u32| {
        (0..n)
            .filter(|&k| v >> k & 1 != 0)
            .map(f)
            .fold(0, |a, b| a | b)
    };
    let matrix = i.name.starts_with("v_mfma") || i.name.starts_with("v_wmma");
    match i.enc {
        Enc::Vop3 | Enc::Vop1 | Enc::Vop2 | Enc::Vopc => {
            p |= bits(m.abs, 3, abs) | bits(m.neg, 3, neg) | bits(m.opsel, 4, opsel);
            if m.clamp {
                p |= CLAMP;
            }
            if m.omod != 0 {
                p |= OMOD;
            }
            if let (Some(s), Variant::Sdwa) = (m.sdwa, i.variant) {
                p |= [(s.src0_abs, abs(0)), (s.src0_neg, neg(0))]
                    .into_iter()
                    .chain([(s.src1_abs, abs(1)), (s.src1_neg, neg(1))])
                    .filter(|x| x.0)
                    .fold(0, |a, x| a | x.1);
                if s.src0_sel != 6 || s.src0_sext {
                    p |= sdwa_src(0);
                }
                if i.enc != Enc::Vop1 && (s.src1_sel != 6 || s.src1_sext) {
                    p |= sdwa_src(1);
                }
                if i.enc != Enc::Vopc && (s.dst_sel != 6 || s.dst_unused != 0) {
                    p |= SDWA_DST;
                }
            }
        }
        Enc::Vop3p => {
            p |= bits(m.neg, 3, neg) | bits(m.neg_hi, 3, neg_hi) | bits(m.opsel, 4, opsel);
            if matrix {
                // MFMA: acc_cd sits in the clamp bit and the decoder already placed C/D
                // in AccVGPRs; op_sel_hi is not a field of VOP3P-MAI.
                if i.name.starts_with("v_wmma") && m.clamp {
                    p |= CLAMP;
                }
            } else {
                if m.clamp {
                    p |= CLAMP;
                }
                // Packed ops: op_sel_hi defaults to 1 for every source they have;
                // the mixed FMAs: 0 (f32 source). Elsewhere (v_accvgpr_*) the field
                // means nothing.
                for k in 0..3 {
                    let bit = m.opsel_hi >> k & 1;
                    let set = if i.name.starts_with("v_pk_") {
                        i.src[k] != Operand::None && bit == 0
                    } else {
                        i.name.starts_with("v_fma_mix") && bit == 1
                    };
                    if set {
                        p |= opsel_hi(k);
                    }
                }
            }
        }
        Enc::Ds if m.gds => p |= GDS,
        _ => {}
    }
    p
}

/// Names of the fields in `bits`.
pub fn describe(bits: u32) -> String {
    let mut v = Vec::new();
    for k in 0..3 {
        for (f, n) in [
            (abs(k), "abs"),
            (neg(k), "neg"),
            (neg_hi(k), "neg_hi"),
            (opsel(k), "op_sel"),
            (opsel_hi(k), "op_sel_hi"),
        ] {
            if bits & f != 0 {
                v.push(format!("{n} on src{k}"));
            }
        }
    }
    for (f, n) in [
        (opsel(3), "op_sel on the destination"),
        (CLAMP, "clamp"),
        (OMOD, "omod"),
        (sdwa_src(0), "SDWA src0_sel/sext"),
        (sdwa_src(1), "SDWA src1_sel/sext"),
        (SDWA_DST, "SDWA dst_sel/dst_unused"),
        (GDS, "gds"),
    ] {
        if bits & f != 0 {
            v.push(n.to_string());
        }
    }
    v.join(", ")
}

/// The error for the fields of `present` that the handler did not use, if any.
pub fn check(i: &Inst, present: u32, used: u32) -> Result<(), String> {
    let left = present & !used;
    if left == 0 {
        return Ok(());
    }
    Err(format!(
        "{} sets modifiers its semantics do not implement: {}",
        i.mnemonic(),
        describe(left)
    ))
}
