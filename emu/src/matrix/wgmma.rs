//! NVIDIA Hopper `wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}`
//! with both operands in shared memory (LDS), described by 64-bit matrix
//! descriptors, no swizzling (PTX ISA, "Asynchronous warpgroup level matrix
//! multiply"; the canonical layouts are CuTe's `GMMA::Layout_*_INTER`).
//!
//! A warpgroup is 4 consecutive warps (threads `128g..128g+127`). A is 64 x 16
//! (M x K), B 16 x N (K x N), D 64 x N f32. Warp `w` (warp index in the workgroup
//! mod 4) owns rows `16w..16w+15` of D, so the emulator executes each warp's part
//! on its own when its 32 lanes have issued it: it reads those 16 rows of A and
//! all of B.
//!
//! Accumulators: lane `l`, slot `e` (`0..n/2`) holds D[row][col] with
//! `row = 16w + l/4 + 8*((e/2)%2)`, `col = 8*(e/4) + 2*(l%4) + e%2`
//! (the mma.sync m16n8 C layout repeated for each n8 block `e/4`).

use std::fmt;

/// One `wgmma.mma_async` variant: D (64 x n, f32) = A (64 x 16) * B (16 x n) + C,
/// A and B f16 or bf16 in LDS.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WgmmaOp {
    /// N: 8..=256, a multiple of 8.
    pub n: u32,
    /// A and B are bf16 (else f16).
    pub bf16: bool,
    /// A is MN-major (`imm-trans-a = 1`: 8 consecutive m of one k are contiguous); else K-major.
    pub tnsp_a: bool,
    /// B is MN-major (`imm-trans-b = 1`: 8 consecutive n of one k are contiguous); else K-major.
    pub tnsp_b: bool,
}

impl WgmmaOp {
    /// f32 accumulators per lane: `n / 2`.
    pub const fn regs(self) -> usize {
        self.n as usize / 2
    }
    /// FLOPs of one warp's part (a quarter of the warpgroup's instruction): `2*16*n*16`.
    pub const fn flops(self) -> u64 {
        2 * 16 * self.n as u64 * 16
    }
    /// PTX mnemonic with the transpose immediates, for messages.
    pub fn mnemonic(self) -> String {
        let t = if self.bf16 { "bf16" } else { "f16" };
        format!(
            "wgmma.mma_async.sync.aligned.m64n{}k16.f32.{t}.{t} (imm-trans-a {}, imm-trans-b {})",
            self.n, self.tnsp_a as u8, self.tnsp_b as u8
        )
    }
    /// Whether `n` is a valid N: a multiple of 8 in `8..=256`.
    pub(crate) fn check(self) -> Result<(), String> {
        if self.n == 0 || !self.n.is_multiple_of(8) || self.n > 256 {
            return Err(format!("wgmma with N = {}: N must be a multiple of 8 in 8..=256", self.n));
        }
        Ok(())
    }
    /// Converts one 16-bit operand element to f32 (exact).
    #[inline]
    fn to_f32(self, bits: u16) -> f32 {
        if self.bf16 { f32::from_bits((bits as u32) << 16) } else { half::f16::from_bits(bits).to_f32() }
    }
}

/// (row within the warp's 16 rows, column) of accumulator slot `e` of lane `l`.
pub(crate) const fn d_pos(l: u32, e: u32) -> (u32, u32) {
    (l / 4 + 8 * ((e / 2) % 2), 8 * (e / 4) + 2 * (l % 4) + e % 2)
}

/// A decoded shared-memory matrix descriptor. Bytes, LDS offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Desc {
    raw: u64,
    /// Start address, bits 0..13, `<< 4`.
    start: usize,
    /// Leading dimension byte offset, bits 16..29, `<< 4`.
    lbo: usize,
    /// Stride dimension byte offset, bits 32..45, `<< 4`.
    sbo: usize,
    /// Swizzle width in bytes (128, 64, 32), 0 without swizzling.
    swizzle: usize,
}

const FIELD: u64 = 0x3FFF;
/// Bits with a meaning: the three address fields, base offset (49..51), swizzle (62..63).
const KNOWN: u64 = FIELD | FIELD << 16 | FIELD << 32 | 7 << 49 | 3 << 62;

impl Desc {
    /// Decodes `raw`; base offsets and reserved bits are refused.
    pub fn decode(raw: u64) -> Result<Desc, String> {
        let swizzle = [0, 128, 64, 32][(raw >> 62) as usize];
        let base = (raw >> 49) & 7;
        if base != 0 {
            return Err(format!(
                "wgmma matrix descriptor {raw:#018x} has base offset {base} (bits 49..51); this emulator needs 0 (swizzle atoms aligned to their repeat)"
            ));
        }
        if raw & !KNOWN != 0 {
            return Err(format!(
                "wgmma matrix descriptor {raw:#018x} sets reserved bits {:#x}; they must be 0",
                raw & !KNOWN
            ));
        }
        let field = |at: u32| (((raw >> at) & FIELD) << 4) as usize;
        Ok(Desc { raw, start: field(0), lbo: field(16), sbo: field(32), swizzle })
    }

    /// LDS byte offset of element (`mn`, `k`): `mn` is the row m of A or column n of B.
    /// CuTe canonical layouts, T = 8 elements of 16 bits, c = swizzle width / 16:
    /// - no swizzle: K-major `((8,m),(T,2k)):((1T,SBO),(1,LBO))`, MN-major `((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))`;
    /// - swizzled: K-major `((8,m),(T,2k)):((cT,SBO),(1,T))`, MN-major `((T,c,m),(8,k)):((1,T,LBO),(cT,SBO))`,
    ///   then the 16-byte chunk bits of the address XORed with the row bits above
    ///   them (`Swizzle<log2 c, 4, 3>` on the absolute address).
    pub fn addr(&self, mn_major: bool, mn: u32, k: u32) -> usize {
        let (mn, k) = (mn as usize, k as usize);
        if self.swizzle == 0 {
            let core = if mn_major { (mn % 8) * 2 + (k % 8) * 16 } else { (mn % 8) * 16 + (k % 8) * 2 };
            return self.start + core + (mn / 8) * self.sbo + (k / 8) * self.lbo;
        }
        let (w, c) = (self.swizzle, self.swizzle / 16);
        let off = if mn_major {
            (mn % (8 * c)) * 2 + (mn / (8 * c)) * self.lbo + (k % 8) * w + (k / 8) * self.sbo
        } else {
            (mn % 8) * w + (mn / 8) * self.sbo + k * 2
        };
        let a = self.start + off;
        a ^ (((a >> 7) & (c - 1)) << 4)
    }
}

impl fmt::Display for Desc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "descriptor {:#018x}: start address {}, LBO {}, SBO {} bytes, swizzle {}",
            self.raw, self.start, self.lbo, self.sbo, self.swizzle
        )
    }
}

/// Reads warp `warp`'s operands from LDS: `a` gets rows `16*warp..16*warp+15` of A
/// (row-major 16 x 16), `b` all of B (row-major 16 x n). `load` reads the 16-bit
/// element at an LDS byte offset; its error is returned with the element and descriptor.
pub(crate) fn gather(
    op: WgmmaOp,
    warp: u32,
    (da, db): (&Desc, &Desc),
    a: &mut [u16],
    b: &mut [u16],
    mut load: impl FnMut(usize) -> Result<u16, String>,
) -> Result<(), String> {
    let major = |t: bool| if t { "MN-major" } else { "K-major" };
    let n = op.n;
    for i in 0..16 {
        for k in 0..16 {
            let m = 16 * warp + i;
            let at = da.addr(op.tnsp_a, m, k);
            a[(i * 16 + k) as usize] = load(at).map_err(|e| {
                format!("{}: A[{m}][{k}] at LDS byte {at} ({} {da}): {e}", op.mnemonic(), major(op.tnsp_a))
            })?;
        }
    }
    for k in 0..16 {
        for j in 0..n {
            let at = db.addr(op.tnsp_b, j, k);
            b[(k * n + j) as usize] = load(at).map_err(|e| {
                format!("{}: B[{k}][{j}] at LDS byte {at} ({} {db}): {e}", op.mnemonic(), major(op.tnsp_b))
            })?;
        }
    }
    Ok(())
}

/// One warp's part: `a` its 16 rows of A (16 x 16), `b` all of B (16 x n), both
/// row-major 16-bit; `c`, `d` every lane's accumulators, lane-major (`l * n/2 + e`).
/// Same numerics as [`super::execute`] for mma.sync: the products of 16-bit inputs
/// are exact in f32, and each output is `C + p_0 + p_1 + ... + p_15`, summed in
/// that order in f32 (round to nearest even after every add).
///
/// # Panics
/// If a slice length does not match `op`.
pub(crate) fn execute(op: WgmmaOp, a: &[u16], b: &[u16], c: &[f32], d: &mut [f32]) {
    let (n, h) = (op.n as usize, op.regs());
    assert!(a.len() == 256 && b.len() == 16 * n && c.len() == 32 * h && d.len() == 32 * h, "wgmma::execute: lengths");
    let af: Vec<f32> = a.iter().map(|&x| op.to_f32(x)).collect();
    let bf: Vec<f32> = b.iter().map(|&x| op.to_f32(x)).collect();
    for l in 0..32 {
        for e in 0..h {
            let (i, j) = d_pos(l as u32, e as u32);
            let (i, j) = (i as usize, j as usize);
            let mut acc = c[l * h + e];
            for k in 0..16 {
                acc += af[i * 16 + k] * bf[k * n + j];
            }
            d[l * h + e] = acc;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn enc(start: usize, lbo: usize, sbo: usize) -> u64 {
        (start >> 4) as u64 | ((lbo >> 4) as u64) << 16 | ((sbo >> 4) as u64) << 32
    }

    #[test]
    fn descriptor_fields_and_refusals() {
        let d = Desc::decode(enc(0x3FFF0, 128, 0x3FFF0)).unwrap();
        assert_eq!((d.start, d.lbo, d.sbo), (0x3FFF0, 128, 0x3FFF0));
        for (bits, what) in [
            (1 << 49, "base offset 1"),
            (1 << 14, "reserved bits 0x4000"),
        ] {
            let e = Desc::decode(enc(16, 16, 16) | bits).unwrap_err();
            assert!(e.contains(what), "{e}");
        }
    }

    #[test]
    fn canonical_offsets() {
        let d = Desc::decode(enc(1024, 128, 256)).unwrap();
        // K-major: a row's 8 k are 16 contiguous bytes, 8 rows make a 128-byte core matrix.
        assert_eq!(d.addr(false, 0, 1), 1024 + 2);
        assert_eq!(d.addr(false, 1, 0), 1024 + 16);
        assert_eq!(d.addr(false, 0, 8), 1024 + 128);
        assert_eq!(d.addr(false, 9, 9), 1024 + 16 + 256 + 2 + 128);
        // MN-major: 8 m of one k contiguous.
        assert_eq!(d.addr(true, 1, 0), 1024 + 2);
        assert_eq!(d.addr(true, 0, 1), 1024 + 16);
        assert_eq!(d.addr(true, 8, 8), 1024 + 256 + 128);
    }

    #[test]
    fn swizzled_offsets() {
        // 128B, MN-major: 64 m contiguous (128 B) per k, 8 k per 1024-byte atom, chunk ^= k % 8.
        let d = Desc::decode(enc(2048, 4096, 1024) | 1 << 62).unwrap();
        assert_eq!(d.addr(true, 0, 0), 2048);
        assert_eq!(d.addr(true, 8, 0), 2048 + 16);
        // chunk 1 of k 1: 1 ^ 1 = 0.
        assert_eq!(d.addr(true, 8, 1), 2048 + 128);
        assert_eq!(d.addr(true, 0, 3), 2048 + 3 * 128 + 3 * 16);
        assert_eq!(d.addr(true, 64, 8), 2048 + 4096 + 1024);
        // 64B, K-major: a row's 32 k in 64 bytes, 8 rows per 512 bytes, chunk ^= (row / 2) % 4.
        let d = Desc::decode(enc(1024, 16, 512) | 2 << 62).unwrap();
        assert_eq!(d.addr(false, 0, 8), 1024 + 16);
        assert_eq!(d.addr(false, 2, 0), 1024 + 128 + 16);
        // row 3, chunk 1: 1 ^ (3 / 2) = 0.
        assert_eq!(d.addr(false, 3, 8), 1024 + 192);
        assert_eq!(d.addr(false, 8, 0), 1024 + 512);
    }

    #[test]
    fn accumulator_layout_is_a_bijection() {
        for n in [8u32, 48, 256] {
            let op = WgmmaOp { n, bf16: false, tnsp_a: false, tnsp_b: false };
            let s: HashSet<_> = (0..32).flat_map(|l| (0..op.regs() as u32).map(move |e| d_pos(l, e))).collect();
            assert_eq!(s.len(), 16 * n as usize);
            assert!(s.iter().all(|&(i, j)| i < 16 && j < n));
        }
        assert_eq!(d_pos(5, 6), (1 + 8, 8 + 2));
    }

    #[test]
    fn numerics_follow_mma_sync_order() {
        // C first, then k = 0..15 in f32: a large C swallows products an f64 sum would keep.
        let op = WgmmaOp { n: 8, bf16: false, tnsp_a: false, tnsp_b: false };
        let one = half::f16::from_f32(1.0).to_bits();
        let tiny = half::f16::from_f32(2f32.powi(-5)).to_bits();
        let (a, mut b) = (vec![one; 256], vec![tiny; 16 * 8]);
        b[0] = one; // k = 0, column 0: 1.0
        let c = vec![2f32.powi(20); 32 * 4];
        let mut d = vec![0f32; 32 * 4];
        execute(op, &a, &b, &c, &mut d);
        let mut want = 2f32.powi(20) + 1.0;
        for _ in 1..16 {
            want += 2f32.powi(-5);
        }
        assert_eq!(d[0], want); // lane 0 slot 0 is D[0][0]
        assert_eq!(want, 2f32.powi(20) + 1.0);
        assert_eq!(op.flops(), 2 * 16 * 8 * 16);
    }
}
