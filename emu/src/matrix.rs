//! Matrix instructions and their lane layouts, from the vendors' documents
//! (`shared/notes/matrix-layouts.md`), never from the kernels' fragment code, so a
//! kernel with a wrong layout gets wrong numbers here.
//!
//! Registers are described per lane in LLVM vector element order: `a`, `b` hold
//! 16-bit elements (f16 or bf16 bits), `c`, `d` f32. [`execute`] runs one
//! instruction over a whole wave's registers, laid out lane-major.
//!
//! Hopper's `wgmma.mma_async` reads its operands from LDS, not registers: see
//! [`WgmmaOp`] and `lane::wgmma`.

mod mfma;
mod mfma_gfx950;
mod mma_sync;
pub(crate) mod wgmma;
mod wmma;
mod wmma_gfx12;

pub use wgmma::WgmmaOp;

use convgrad_types::instance::Family;

/// The emulated matrix instructions. Operand element counts per lane (a, b, c):
/// MFMA 32x32x8: 4, 4, 16; MFMA 16x16x16: 4, 4, 4; WMMA 16x16x16: 16, 16, 8;
/// GFX12 WMMA 16x16x16: 8, 8, 8; mma.sync m16n8k16: 8, 4, 4; gfx950 MFMA
/// 32x32x16: 8, 8, 16; gfx950 MFMA 16x16x32: 8, 8, 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatrixOp {
    /// `v_mfma_f32_32x32x8f16`.
    Mfma32x32x8F16,
    /// `v_mfma_f32_32x32x8bf16_1k`.
    Mfma32x32x8Bf16,
    /// `v_mfma_f32_16x16x16f16`.
    Mfma16x16x16F16,
    /// `v_mfma_f32_16x16x16bf16_1k`.
    Mfma16x16x16Bf16,
    /// `v_wmma_f32_16x16x16_f16`.
    Wmma16x16x16F16,
    /// `v_wmma_f32_16x16x16_bf16`.
    Wmma16x16x16Bf16,
    /// GFX12 (RDNA4) `v_wmma_f32_16x16x16_f16`.
    Wmma16x16x16Gfx12F16,
    /// GFX12 (RDNA4) `v_wmma_f32_16x16x16_bf16`.
    Wmma16x16x16Gfx12Bf16,
    /// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`.
    Mma16x8x16F16,
    /// `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`.
    Mma16x8x16Bf16,
    /// gfx950 `v_mfma_f32_32x32x16_f16`.
    Mfma32x32x16F16,
    /// gfx950 `v_mfma_f32_32x32x16_bf16`.
    Mfma32x32x16Bf16,
    /// gfx950 `v_mfma_f32_16x16x32_f16`.
    Mfma16x16x32F16,
    /// gfx950 `v_mfma_f32_16x16x32_bf16`.
    Mfma16x16x32Bf16,
    /// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`: 32-bit operands
    /// (each two 16-bit words in the register arrays, low word first).
    Mma16x8x8Tf32,
}

/// Where one matrix element lives: lane of the wave and element index in that
/// lane's operand vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slot {
    /// Lane in the wave.
    pub lane: u32,
    /// Element in the lane's operand vector (LLVM order, `e = 2g + h` for 16-bit).
    pub elem: u32,
}

/// The operand matrices of an instruction, for [`MatrixOp::slot`].
#[derive(Clone, Copy)]
enum Operand {
    A,
    B,
    D,
}

/// Per-lane operand element counts of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regs {
    /// 16-bit words of A per lane (a 32-bit TF32 element takes two,
    /// [`MatrixOp::words`]).
    pub a: usize,
    /// 16-bit words of B per lane.
    pub b: usize,
    /// f32 elements of C (and D) per lane.
    pub c: usize,
}

impl MatrixOp {
    /// All instructions.
    pub const ALL: [MatrixOp; 15] = [
        MatrixOp::Mfma32x32x8F16,
        MatrixOp::Mfma32x32x8Bf16,
        MatrixOp::Mfma16x16x16F16,
        MatrixOp::Mfma16x16x16Bf16,
        MatrixOp::Wmma16x16x16F16,
        MatrixOp::Wmma16x16x16Bf16,
        MatrixOp::Wmma16x16x16Gfx12F16,
        MatrixOp::Wmma16x16x16Gfx12Bf16,
        MatrixOp::Mma16x8x16F16,
        MatrixOp::Mma16x8x16Bf16,
        MatrixOp::Mfma32x32x16F16,
        MatrixOp::Mfma32x32x16Bf16,
        MatrixOp::Mfma16x16x32F16,
        MatrixOp::Mfma16x16x32Bf16,
        MatrixOp::Mma16x8x8Tf32,
    ];

    /// `(m, n, k)`: D is m x n, the reduction is k deep.
    pub const fn shape(self) -> (u32, u32, u32) {
        use MatrixOp::*;
        match self {
            Mfma32x32x8F16 | Mfma32x32x8Bf16 => (32, 32, 8),
            Mfma16x16x16F16 | Mfma16x16x16Bf16 | Wmma16x16x16F16 | Wmma16x16x16Bf16 => (16, 16, 16),
            Wmma16x16x16Gfx12F16 | Wmma16x16x16Gfx12Bf16 => (16, 16, 16),
            Mma16x8x16F16 | Mma16x8x16Bf16 => (16, 8, 16),
            Mfma32x32x16F16 | Mfma32x32x16Bf16 => (32, 32, 16),
            Mfma16x16x32F16 | Mfma16x16x32Bf16 => (16, 16, 32),
            Mma16x8x8Tf32 => (16, 8, 8),
        }
    }
    /// Operand element counts per lane.
    pub const fn regs(self) -> Regs {
        use MatrixOp::*;
        match self {
            Mfma32x32x8F16 | Mfma32x32x8Bf16 => Regs { a: 4, b: 4, c: 16 },
            Mfma16x16x16F16 | Mfma16x16x16Bf16 => Regs { a: 4, b: 4, c: 4 },
            Wmma16x16x16F16 | Wmma16x16x16Bf16 => Regs { a: 16, b: 16, c: 8 },
            Wmma16x16x16Gfx12F16 | Wmma16x16x16Gfx12Bf16 => Regs { a: 8, b: 8, c: 8 },
            Mma16x8x16F16 | Mma16x8x16Bf16 => Regs { a: 8, b: 4, c: 4 },
            Mfma32x32x16F16 | Mfma32x32x16Bf16 => Regs { a: 8, b: 8, c: 16 },
            Mfma16x16x32F16 | Mfma16x16x32Bf16 => Regs { a: 8, b: 8, c: 4 },
            // 4 and 2 TF32 elements, two words each.
            Mma16x8x8Tf32 => Regs { a: 8, b: 4, c: 4 },
        }
    }
    /// 16-bit words per A/B element: 2 for the TF32 ops (f32 containers), else 1.
    pub const fn words(self) -> usize {
        if self.is_tf32() { 2 } else { 1 }
    }
    /// Whether A and B are TF32 (32-bit containers).
    pub const fn is_tf32(self) -> bool {
        matches!(self, MatrixOp::Mma16x8x8Tf32)
    }
    /// The GPU family that has this instruction.
    pub const fn family(self) -> Family {
        use MatrixOp::*;
        match self {
            Mfma32x32x8F16 | Mfma32x32x8Bf16 | Mfma16x16x16F16 | Mfma16x16x16Bf16 => Family::Cdna,
            Wmma16x16x16F16 | Wmma16x16x16Bf16 => Family::Rdna3,
            Wmma16x16x16Gfx12F16 | Wmma16x16x16Gfx12Bf16 => Family::Rdna4,
            Mma16x8x16F16 | Mma16x8x16Bf16 | Mma16x8x8Tf32 => Family::Nvidia,
            Mfma32x32x16F16 | Mfma32x32x16Bf16 | Mfma16x16x32F16 | Mfma16x16x32Bf16 => Family::Cdna4,
        }
    }
    /// Lanes that execute it together (wave64 for MFMA, 32 otherwise).
    pub const fn wave(self) -> u32 {
        self.family().wave()
    }
    /// Whether A and B are bf16 (else f16).
    pub const fn is_bf16(self) -> bool {
        use MatrixOp::*;
        matches!(
            self,
            Mfma32x32x8Bf16
                | Mfma16x16x16Bf16
                | Wmma16x16x16Bf16
                | Wmma16x16x16Gfx12Bf16
                | Mma16x8x16Bf16
                | Mfma32x32x16Bf16
                | Mfma16x16x32Bf16
        )
    }
    /// FLOPs of one wave-wide instruction: `2*m*n*k`.
    pub const fn flops(self) -> u64 {
        let (m, n, k) = self.shape();
        2 * m as u64 * n as u64 * k as u64
    }
    /// ISA mnemonic, for messages.
    pub const fn mnemonic(self) -> &'static str {
        use MatrixOp::*;
        match self {
            Mfma32x32x8F16 => "v_mfma_f32_32x32x8f16",
            Mfma32x32x8Bf16 => "v_mfma_f32_32x32x8bf16_1k",
            Mfma16x16x16F16 => "v_mfma_f32_16x16x16f16",
            Mfma16x16x16Bf16 => "v_mfma_f32_16x16x16bf16_1k",
            Wmma16x16x16F16 | Wmma16x16x16Gfx12F16 => "v_wmma_f32_16x16x16_f16",
            Wmma16x16x16Bf16 | Wmma16x16x16Gfx12Bf16 => "v_wmma_f32_16x16x16_bf16",
            Mma16x8x16F16 => "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
            Mma16x8x16Bf16 => "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
            Mfma32x32x16F16 => "v_mfma_f32_32x32x16_f16",
            Mfma32x32x16Bf16 => "v_mfma_f32_32x32x16_bf16",
            Mfma16x16x32F16 => "v_mfma_f32_16x16x32_f16",
            Mfma16x16x32Bf16 => "v_mfma_f32_16x16x32_bf16",
            Mma16x8x8Tf32 => "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        }
    }
    /// Where `A[i][k]` lives (for WMMA: the primary copy, lane i < 16).
    pub const fn a_slot(self, i: u32, k: u32) -> Slot {
        self.slot(Operand::A, i, k)
    }
    /// Where `B[k][j]` lives (for WMMA: the primary copy, lane j < 16).
    pub const fn b_slot(self, k: u32, j: u32) -> Slot {
        self.slot(Operand::B, k, j)
    }
    /// Where `C[i][j]` and `D[i][j]` live.
    pub const fn d_slot(self, i: u32, j: u32) -> Slot {
        self.slot(Operand::D, i, j)
    }
    /// Where element `(r, c)` of operand `m` lives, from the lane tables of
    /// the op's shape (both element types share them).
    const fn slot(self, m: Operand, r: u32, c: u32) -> Slot {
        use MatrixOp::*;
        let (a, b, d) = match self {
            Mfma32x32x8F16 | Mfma32x32x8Bf16 => (mfma::a32(r, c), mfma::b32(r, c), mfma::d32(r, c)),
            Mfma16x16x16F16 | Mfma16x16x16Bf16 => (mfma::a16(r, c), mfma::b16(r, c), mfma::d16(r, c)),
            Wmma16x16x16F16 | Wmma16x16x16Bf16 => (wmma::a(r, c), wmma::b(r, c), wmma::d(r, c)),
            Wmma16x16x16Gfx12F16 | Wmma16x16x16Gfx12Bf16 => (wmma_gfx12::a(r, c), wmma_gfx12::b(r, c), wmma_gfx12::d(r, c)),
            Mma16x8x16F16 | Mma16x8x16Bf16 => (mma_sync::a(r, c), mma_sync::b(r, c), mma_sync::d(r, c)),
            Mma16x8x8Tf32 => (mma_sync::a_tf32(r, c), mma_sync::b_tf32(r, c), mma_sync::d(r, c)),
            // gfx950: own A/B tables, C/D as 32x32x8 resp. 16x16x16.
            Mfma32x32x16F16 | Mfma32x32x16Bf16 => (mfma_gfx950::a32(r, c), mfma_gfx950::b32(r, c), mfma::d32(r, c)),
            Mfma16x16x32F16 | Mfma16x16x32Bf16 => (mfma_gfx950::a16(r, c), mfma_gfx950::b16(r, c), mfma::d16(r, c)),
        };
        match m {
            Operand::A => a,
            Operand::B => b,
            Operand::D => d,
        }
    }
    /// The second copy of `A[i][k]` for instructions that replicate operands (WMMA: lane i+16).
    pub const fn a_replica(self, i: u32, k: u32) -> Option<Slot> {
        self.replica(self.a_slot(i, k))
    }
    /// The second copy of `B[k][j]` (WMMA: lane j+16).
    pub const fn b_replica(self, k: u32, j: u32) -> Option<Slot> {
        self.replica(self.b_slot(k, j))
    }
    /// The second copy of the A or B element at `s`, if the op replicates them.
    const fn replica(self, s: Slot) -> Option<Slot> {
        match self {
            MatrixOp::Wmma16x16x16F16 | MatrixOp::Wmma16x16x16Bf16 => Some(wmma::replica(s)),
            _ => None,
        }
    }
    /// Converts one 16-bit operand element to f32 (exact).
    #[inline]
    pub fn to_f32(self, bits: u16) -> f32 {
        if self.is_bf16() { f32::from_bits((bits as u32) << 16) } else { half::f16::from_bits(bits).to_f32() }
    }
}

/// A bad operand found while executing an instruction, with the lane to blame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperandError {
    /// Lane of the wave.
    pub lane: u32,
    /// What is wrong.
    pub what: String,
}

// Largest operand matrices of any op: A 32x16 (16x32), B 16x32 (32x16), D 32x32 elements.
const MAX_A: usize = 32 * 16;
const MAX_D: usize = 32 * 32;

/// Executes `op` for a whole wave: `a`, `b`, `c`, `d` hold every lane's registers
/// lane-major (`a[lane * regs.a + e]`). Computes D = A*B + C in f32 (the products
/// of 16-bit inputs are exact in f32). Fails on WMMA replicas that differ.
///
/// # Panics
/// If a slice length is not `wave * regs`.
pub fn execute(op: MatrixOp, a: &[u16], b: &[u16], c: &[f32], d: &mut [f32]) -> Result<(), OperandError> {
    let (m, n, k) = op.shape();
    let r = op.regs();
    let w = op.wave() as usize;
    assert!(
        a.len() == w * r.a && b.len() == w * r.b && c.len() == w * r.c && d.len() == w * r.c,
        "matrix::execute: operand lengths do not match {op:?}"
    );
    check_replicas(op, a, b)?;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let t = gather(op);
    let mut am = [0f32; MAX_A];
    let mut bm = [0f32; MAX_A];
    let mut dm = [0f32; MAX_D];
    let cvt = |out: &mut [f32], src: &[u16], idx: &[u16]| {
        // The branch is hoisted out of the loops.
        if op.is_tf32() {
            out.iter_mut().zip(idx).for_each(|(x, &i)| {
                let i = i as usize;
                *x = tf32_operand(src[i] as u32 | (src[i + 1] as u32) << 16);
            });
        } else if op.is_bf16() {
            out.iter_mut().zip(idx).for_each(|(x, &i)| *x = f32::from_bits((src[i as usize] as u32) << 16));
        } else {
            out.iter_mut().zip(idx).for_each(|(x, &i)| *x = half::f16::from_bits(src[i as usize]).to_f32());
        }
    };
    cvt(&mut am, a, &t.a);
    cvt(&mut bm, b, &t.b);
    for (x, &i) in dm.iter_mut().zip(t.d.iter()) {
        *x = c[i as usize];
    }
    // Monomorphised per shape so the inner loop vectorises.
    match (m, n, k) {
        (32, 32, 8) => product::<32, 32, 8>(&am, &bm, &mut dm),
        (16, 16, 16) => product::<16, 16, 16>(&am, &bm, &mut dm),
        (16, 8, 16) => product::<16, 8, 16>(&am, &bm, &mut dm),
        (32, 32, 16) => product::<32, 32, 16>(&am, &bm, &mut dm),
        (16, 16, 32) => product::<16, 16, 32>(&am, &bm, &mut dm),
        (16, 8, 8) => product::<16, 8, 8>(&am, &bm, &mut dm),
        _ => unreachable!(),
    }
    for (&x, &i) in dm.iter().zip(t.d.iter()) {
        d[i as usize] = x;
    }
    Ok(())
}

/// The value a TF32 matrix operand register holds as the tensor core reads
/// it: the f32 bit pattern with its low 13 mantissa bits ignored (PTX ISA,
/// `.tf32` operands of `mma`: the instruction reads the sign, the 8-bit
/// exponent and the top 10 mantissa bits). Kernels round with
/// `cvt.rna.tf32.f32` ([`crate::lane::cvt_rna_tf32`]) first, which leaves
/// those bits 0; an operand passed unrounded is truncated here.
#[inline]
pub fn tf32_operand(bits: u32) -> f32 {
    f32::from_bits(bits & !0x1fff)
}

/// Register indices (`lane * regs + elem`) of A (row-major m x k), B (k x n) and
/// D (m x n) for one op, computed once from the tables.
struct Gather {
    a: Vec<u16>,
    b: Vec<u16>,
    d: Vec<u16>,
}

fn gather(op: MatrixOp) -> &'static Gather {
    static TABLES: std::sync::OnceLock<Vec<Gather>> = std::sync::OnceLock::new();
    let all = TABLES.get_or_init(|| {
        MatrixOp::ALL
            .iter()
            .map(|&op| {
                let ((m, n, k), r) = (op.shape(), op.regs());
                // A and B elements take `words` 16-bit words each; D one f32.
                let words = op.words();
                let at = |s: Slot, regs: usize, words: usize| (s.lane as usize * regs + s.elem as usize * words) as u16;
                Gather {
                    a: (0..m).flat_map(|i| (0..k).map(move |kk| at(op.a_slot(i, kk), r.a, words))).collect(),
                    b: (0..k).flat_map(|kk| (0..n).map(move |j| at(op.b_slot(kk, j), r.b, words))).collect(),
                    d: (0..m).flat_map(|i| (0..n).map(move |j| at(op.d_slot(i, j), r.c, 1))).collect(),
                }
            })
            .collect()
    });
    &all[op as usize]
}

/// `d += a * b` on row-major M x K, K x N, M x N blocks.
#[inline]
fn product<const M: usize, const N: usize, const K: usize>(a: &[f32], b: &[f32], d: &mut [f32]) {
    let (a, b, d) = (&a[..M * K], &b[..K * N], &mut d[..M * N]);
    for i in 0..M {
        let row: &mut [f32; N] = (&mut d[i * N..i * N + N]).try_into().unwrap();
        for kk in 0..K {
            let av = a[i * K + kk];
            let brow: &[f32; N] = (&b[kk * N..kk * N + N]).try_into().unwrap();
            for j in 0..N {
                row[j] += av * brow[j];
            }
        }
    }
}

/// WMMA reads one copy of each row of A / column of B; a kernel whose two copies
/// differ does not compute what it meant, so report the first difference.
fn check_replicas(op: MatrixOp, a: &[u16], b: &[u16]) -> Result<(), OperandError> {
    if op.a_replica(0, 0).is_none() {
        return Ok(());
    }
    let (m, n, k) = op.shape();
    let r = op.regs();
    // Operand `name`'s `what`s 0..count, each with its primary and replica
    // slot of reduction index kk (`at`), in registers `v` of `regs` a lane.
    let check = |name, what, count, v: &[u16], regs: usize, at: &dyn Fn(u32, u32) -> (Slot, Slot)| {
        for idx in 0..count {
            for kk in 0..k {
                let (p, q) = at(idx, kk);
                let (x, y) = (v[p.lane as usize * regs + p.elem as usize], v[q.lane as usize * regs + q.elem as usize]);
                if x != y {
                    return Err(replica_error(op, name, what, idx, kk, p, q, x, y));
                }
            }
        }
        Ok(())
    };
    check("A", "row", m, a, r.a, &|i, kk| (op.a_slot(i, kk), op.a_replica(i, kk).unwrap()))?;
    check("B", "column", n, b, r.b, &|j, kk| (op.b_slot(kk, j), op.b_replica(kk, j).unwrap()))
}

#[cold]
#[allow(clippy::too_many_arguments)]
fn replica_error(op: MatrixOp, m: &str, what: &str, idx: u32, k: u32, p: Slot, q: Slot, x: u16, y: u16) -> OperandError {
    OperandError {
        lane: q.lane,
        what: format!(
            "{} operand {m} replicas differ: {what} {idx} element k={k} is {x:#06x} in lane {} but {y:#06x} in lane {} (lanes {} and {} must hold the same {what})",
            op.mnemonic(),
            p.lane,
            q.lane,
            p.lane,
            q.lane
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn tables_are_bijections() {
        for op in MatrixOp::ALL {
            let (m, n, k) = op.shape();
            let (r, w) = (op.regs(), op.wave());
            let a: HashSet<_> = (0..m).flat_map(|i| (0..k).map(move |kk| op.a_slot(i, kk))).collect();
            let b: HashSet<_> = (0..k).flat_map(|kk| (0..n).map(move |j| op.b_slot(kk, j))).collect();
            let d: HashSet<_> = (0..m).flat_map(|i| (0..n).map(move |j| op.d_slot(i, j))).collect();
            // Replicated ops use half the wave for the primary copy.
            let rep = if op.a_replica(0, 0).is_some() { 2 } else { 1 };
            let words = op.words();
            assert_eq!(a.len() * rep * words, (w as usize) * r.a, "{op:?} A");
            assert_eq!(b.len() * rep * words, (w as usize) * r.b, "{op:?} B");
            assert_eq!(d.len(), (w as usize) * r.c, "{op:?} D");
            assert!(a.iter().all(|s| s.lane < w / rep as u32 && (s.elem as usize) * words < r.a), "{op:?} A range");
            assert!(b.iter().all(|s| s.lane < w / rep as u32 && (s.elem as usize) * words < r.b), "{op:?} B range");
            assert!(d.iter().all(|s| s.lane < w && (s.elem as usize) < r.c), "{op:?} D range");
        }
    }

    #[test]
    fn flops_and_regs() {
        assert_eq!(MatrixOp::Mfma32x32x8F16.flops(), 16384);
        assert_eq!(MatrixOp::Mma16x8x16Bf16.flops(), 4096);
        for op in MatrixOp::ALL {
            let (m, n, k) = op.shape();
            let (r, w) = (op.regs(), op.wave() as usize);
            let rep = if op.a_replica(0, 0).is_some() { 2 } else { 1 };
            assert_eq!(w * r.a, (m * k) as usize * rep * op.words());
            assert_eq!(w * r.b, (k * n) as usize * rep * op.words());
            assert_eq!(w * r.c, (m * n) as usize);
        }
    }
}
