//! RDNA4 (gfx1200, gfx1201) `v_wmma_f32_16x16x16_{f16,bf16}` lane tables
//! (wave32), from AMD GPUOpen's "Using the Matrix Cores of AMD RDNA 4
//! architecture GPUs" (lane group `l / 16`, 8 elements a lane, B, C and D row
//! major, A column major) and `shared/notes/matrix-layouts.md`. Unlike RDNA3
//! there are no replicas: every lane holds distinct elements.

use super::Slot;

/// `A[i][k]`: lane = i + 16*floor(k/8), element = k mod 8.
pub(super) const fn a(i: u32, k: u32) -> Slot {
    Slot {
        lane: i + 16 * (k / 8),
        elem: k % 8,
    }
}
/// `B[k][j]`: lane = j + 16*floor(k/8), element = k mod 8.
pub(super) const fn b(k: u32, j: u32) -> Slot {
    Slot {
        lane: j + 16 * (k / 8),
        elem: k % 8,
    }
}
/// `D[i][j]`: lane = j + 16*floor(i/8), element = i mod 8.
pub(super) const fn d(i: u32, j: u32) -> Slot {
    Slot {
        lane: j + 16 * (i / 8),
        elem: i % 8,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{MatrixOp, execute};

    /// Fills the registers lane by lane as the GPUOpen article indexes them
    /// (`laneWrapped = l % 16`, `laneGroup = l / 16`, 8 elements a lane) and
    /// checks that the instruction computes the plain matrix product.
    #[test]
    fn gfx12_wmma_is_the_matrix_product() {
        for op in [
            MatrixOp::Wmma16x16x16Gfx12F16,
            MatrixOp::Wmma16x16x16Gfx12Bf16,
        ] {
            // Small integers: exact in f16, bf16 and f32.
            let am = |i: usize, k: usize| ((3 * i + 5 * k) % 7) as f32 - 3.0;
            let bm = |k: usize, j: usize| ((2 * k + 7 * j) % 5) as f32 - 2.0;
            let cm = |i: usize, j: usize| (i * 16 + j) as f32;
            let bits = |x: f32| {
                if op.is_bf16() {
                    (x.to_bits() >> 16) as u16
                } else {
                    half::f16::from_f32(x).to_bits()
                }
            };
            let (mut a, mut b, mut c) = (vec![0u16; 256], vec![0u16; 256], vec![0f32; 256]);
            for l in 0..32 {
                let (wrapped, group) = (l % 16, l / 16);
                for e in 0..8 {
                    a[l * 8 + e] = bits(am(wrapped, 8 * group + e));
                    b[l * 8 + e] = bits(bm(8 * group + e, wrapped));
                    c[l * 8 + e] = cm(8 * group + e, wrapped);
                }
            }
            let mut d = vec![0f32; 256];
            execute(op, &a, &b, &c, &mut d).unwrap();
            for l in 0..32 {
                for e in 0..8 {
                    let (i, j) = (8 * (l / 16) + e, l % 16);
                    let want = cm(i, j) + (0..16).map(|k| am(i, k) * bm(k, j)).sum::<f32>();
                    assert_eq!(
                        d[l * 8 + e],
                        want,
                        "{op:?} D[{i}][{j}] in lane {l} element {e}"
                    );
                }
            }
        }
    }
}
