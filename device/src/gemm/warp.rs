//! The warp-level multiply: one wave's `FR x FC` atoms over a reduction
//! range whose fragments lie in LDS. Every main loop that feeds the atoms
//! from registers ([`super::block`], [`super::multistage`], the tap-shift
//! kernels) multiplies through here; only where the fragments sit differs,
//! and that comes in as the loaders `a` and `b`.

use super::Tile;
use crate::atom::MmaAtom;

/// Accumulators of one lane: `FR x FC` atom fragments.
pub type Acc<At, const FR: usize, const FC: usize> = [[<At as MmaAtom>::C; FC]; FR];

/// Every atom of one `At::K` step: A fragment `fr` times B fragment `fc`
/// into `acc[fr][fc]`.
///
/// # Safety
/// The whole wave calls it together.
#[inline(always)]
pub unsafe fn mma_all<At: MmaAtom, const FR: usize, const FC: usize>(
    acc: &mut Acc<At, FR, FC>,
    af: &[At::A; FR],
    bf: &[At::B; FC],
) {
    for fr in 0..FR {
        for fc in 0..FC {
            unsafe { At::mma(&af[fr], &bf[fc], &mut acc[fr][fc]) };
        }
    }
}

/// Multiplies reductions `0 .. Tl::BK` into the accumulators, `At::K` at a
/// time: `a(fr, ks)` loads the wave's A fragment `fr` at `ks`, `b(ks)` its
/// `FC` B fragments.
///
/// The wave's A fragments load first, then its B fragments, then every
/// atom; with `A_EACH` the B fragments load first and each A fragment just
/// before its row of atoms, so that no array of A fragments stays live
/// (gfx1100 put one in scratch in the tap-shift kernel).
///
/// # Safety
/// The whole wave calls it together; the loaders read fragments in LDS.
#[inline(always)]
pub unsafe fn multiply<Tl: Tile, const FR: usize, const FC: usize, const A_EACH: bool>(
    acc: &mut Acc<Tl::At, FR, FC>,
    a: impl Fn(usize, usize) -> <Tl::At as MmaAtom>::A,
    b: impl Fn(usize) -> [<Tl::At as MmaAtom>::B; FC],
) {
    // The order is a constant: one loop or the other is generated.
    let mut ks = 0;
    if A_EACH {
        while ks < Tl::BK {
            let bf = b(ks);
            for (fr, row) in acc.iter_mut().enumerate() {
                let af = a(fr, ks);
                for (fc, c) in row.iter_mut().enumerate() {
                    unsafe { Tl::At::mma(&af, &bf[fc], c) };
                }
            }
            ks += Tl::At::K;
        }
    } else {
        while ks < Tl::BK {
            let mut af: [<Tl::At as MmaAtom>::A; FR] = [Default::default(); FR];
            for (fr, f) in af.iter_mut().enumerate() {
                *f = a(fr, ks);
            }
            let bf = b(ks);
            unsafe { mma_all::<Tl::At, FR, FC>(acc, &af, &bf) };
            ks += Tl::At::K;
        }
    }
}
