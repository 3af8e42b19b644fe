//! CDNA4 (gfx950) double-k MFMA lane tables, wave64:
//! `v_mfma_f32_32x32x16_{f16,bf16}` and `v_mfma_f32_16x16x32_{f16,bf16}`.
//!
//! Sources: LLVM `IntrinsicsAMDGPU.td` (`llvm.amdgcn.mfma.f32.32x32x16.f16`
//! and `.16x16x32.f16`: `<8 x half>` / `<8 x bfloat>` A and B, `<16 x float>`
//! resp. `<4 x float>` C), `shared/notes/matrix-layouts.md` ("gfx950 only")
//! and Triton's gfx950 MFMA dot operands (`kWidth = 8`): a lane holds 8
//! consecutive k of one row of A (column of B), the lane group `l / 32`
//! (resp. `l / 16`) picking the 8-run. C/D keep the layouts of 32x32x8 and
//! 16x16x16 (same accumulator widths).

use super::Slot;

/// 32x32x16 `A[i][k]`: lane = i + 32*floor(k/8), element = k mod 8.
pub(super) const fn a32(i: u32, k: u32) -> Slot {
    Slot {
        lane: i + 32 * (k / 8),
        elem: k % 8,
    }
}
/// 32x32x16 `B[k][j]`: lane = j + 32*floor(k/8), element = k mod 8.
pub(super) const fn b32(k: u32, j: u32) -> Slot {
    Slot {
        lane: j + 32 * (k / 8),
        elem: k % 8,
    }
}
/// 16x16x32 `A[i][k]`: lane = i + 16*floor(k/8), element = k mod 8.
pub(super) const fn a16(i: u32, k: u32) -> Slot {
    Slot {
        lane: i + 16 * (k / 8),
        elem: k % 8,
    }
}
/// 16x16x32 `B[k][j]`: lane = j + 16*floor(k/8), element = k mod 8.
pub(super) const fn b16(k: u32, j: u32) -> Slot {
    Slot {
        lane: j + 16 * (k / 8),
        elem: k % 8,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{MatrixOp, execute};

    /// Fills the registers lane by lane as the sources above index them
    /// (row/column `l % m`, k run `8 * (l / m)`) and the accumulators as
    /// 32x32x8 / 16x16x16 do, and checks the plain matrix product.
    #[test]
    fn gfx950_mfma_is_the_matrix_product() {
        for op in MatrixOp::ALL
            .into_iter()
            .filter(|o| o.family() == convgrad_types::instance::Family::Cdna4)
        {
            let (m, _, k) = op.shape();
            let (m, k) = (m as usize, k as usize);
            let c_regs = op.regs().c;
            // Small integers: exact in f16, bf16 and f32.
            let am = |i: usize, k: usize| ((3 * i + 5 * k) % 7) as f32 - 3.0;
            let bm = |k: usize, j: usize| ((2 * k + 7 * j) % 5) as f32 - 2.0;
            let cm = |i: usize, j: usize| (i * m + j) as f32;
            let bits = |x: f32| {
                if op.is_bf16() {
                    (x.to_bits() >> 16) as u16
                } else {
                    half::f16::from_f32(x).to_bits()
                }
            };
            // D[i][j] of accumulator slot g of lane l.
            let d_ij = |l: usize, g: usize| {
                if m == 32 {
                    (8 * (g / 4) + 4 * (l / 32) + g % 4, l % 32)
                } else {
                    (4 * (l / 16) + g, l % 16)
                }
            };
            let (mut a, mut b) = (vec![0u16; 64 * 8], vec![0u16; 64 * 8]);
            let (mut c, mut d) = (vec![0f32; 64 * c_regs], vec![0f32; 64 * c_regs]);
            for l in 0..64 {
                for e in 0..8 {
                    a[l * 8 + e] = bits(am(l % m, 8 * (l / m) + e));
                    b[l * 8 + e] = bits(bm(8 * (l / m) + e, l % m));
                }
                for g in 0..c_regs {
                    let (i, j) = d_ij(l, g);
                    c[l * c_regs + g] = cm(i, j);
                }
            }
            execute(op, &a, &b, &c, &mut d).unwrap();
            for l in 0..64 {
                for g in 0..c_regs {
                    let (i, j) = d_ij(l, g);
                    let want = cm(i, j) + (0..k).map(|q| am(i, q) * bm(q, j)).sum::<f32>();
                    assert_eq!(
                        d[l * c_regs + g],
                        want,
                        "{op:?} D[{i}][{j}] in lane {l} slot {g}"
                    );
                }
            }
        }
    }
}
