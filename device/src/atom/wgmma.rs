//! NVIDIA Hopper `wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}`
//! (N = 128 or 64): one warpgroup (4 warps, 128 threads) multiplies a 64x16 A
//! tile by a 16xN B tile, both read from LDS through matrix descriptors, into
//! N/2 f32 accumulators per thread. It runs asynchronously: the pipeline
//! fences, commits and waits around it ([`crate::arch::wgmma_wait`]).
//!
//! Accumulator layout (PTX ISA, "Register fragments for wgmma .m64nNk16"):
//! warp `w` of the warpgroup holds rows `16w ..16w+15`; within it, lane `l`,
//! slot `e` holds row `16w + l/4 + 8*((e/2)%2)`, column `8*(e/4) + 2*(l%4) + e%2`
//! (the mma.sync m16n8 layout repeated along N).

use super::{CoreTile, Frag, LdsTile, MmaAtom};
use crate::arch;
use crate::elem::Elem;
use convgrad_types::instance::AtomKind;
use core::marker::PhantomData;

/// One thread's 64 accumulators of m64n128 (arrays this long have no `Default`).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct Acc64(pub [f32; 64]);
impl Default for Acc64 {
    #[inline(always)]
    fn default() -> Self {
        Acc64([0.0; 64])
    }
}
impl AsRef<[f32]> for Acc64 {
    fn as_ref(&self) -> &[f32] {
        &self.0
    }
}
impl AsMut<[f32]> for Acc64 {
    fn as_mut(&mut self) -> &mut [f32] {
        &mut self.0
    }
}
impl Frag<f32> for Acc64 {}

/// f16 or bf16 on the warpgroup instruction.
pub trait WgmmaInput: Elem {
    /// `acc[..N/2] += A * B` for the descriptors (`TA`/`TB`: MN-major operands).
    ///
    /// # Safety
    /// The whole warpgroup calls it with the same descriptors of LDS tiles;
    /// `acc` holds `N / 2` floats.
    unsafe fn wgmma<const N: usize, const TA: bool, const TB: bool>(da: u64, db: u64, acc: *mut f32);
}

/// The matrix descriptor of `t`: start address, leading and stride byte
/// offsets (16-byte units), swizzle mode (bits 62..63: 1 = 128 B, 2 = 64 B,
/// 3 = 32 B).
#[inline(always)]
fn descriptor(t: CoreTile) -> u64 {
    let field = |bytes: u32| ((bytes >> 4) & 0x3fff) as u64;
    let mode: u64 = match t.swizzle {
        128 => 1,
        64 => 2,
        32 => 3,
        _ => 0,
    };
    field(arch::lds_window(t.base)) | (field(t.lbo) << 16) | (field(t.sbo) << 32) | (mode << 62)
}

/// One atom per instruction width: `$name<T>` is `m64n$n k16` with
/// accumulators `$acc`.
macro_rules! wgmma_atom {
    ($(#[$doc:meta])* $name:ident, $n:literal, $acc:ty, $kind:ident) => {
        $(#[$doc])*
        pub struct $name<T>(PhantomData<T>);

        impl<T: WgmmaInput> MmaAtom for $name<T> {
            const KIND: AtomKind = AtomKind::$kind;
            const M: usize = 64;
            const N: usize = $n;
            const K: usize = 16;
            const WAVE: usize = 128;
            const FROM_LDS: bool = true;
            type In = T;
            // No register operands: A and B stay in LDS.
            type A = [T; 0];
            type B = [T; 0];
            type C = $acc;
            type ARun = [T; 0];
            type BRun = [T; 0];
            fn a_elem(_lane: usize, _e: usize) -> (usize, usize) {
                (0, 0)
            }
            fn b_elem(_lane: usize, _e: usize) -> (usize, usize) {
                (0, 0)
            }
            #[inline(always)]
            fn c_elem(lane: usize, e: usize) -> (usize, usize) {
                c_elem(lane, e)
            }
            fn c_slot(i: usize, j: usize) -> (usize, usize) {
                let r = i % 16;
                (32 * (i / 16) + 4 * (r % 8) + (j % 8) / 2, 4 * (j / 8) + 2 * (r / 8) + j % 2)
            }
            unsafe fn load_a(_t: LdsTile, _i0: usize, _k0: usize, _lane: usize) -> [T; 0] {
                []
            }
            unsafe fn load_b(_t: LdsTile, _j0: usize, _k0: usize, _lane: usize) -> [T; 0] {
                []
            }
            unsafe fn mma(_a: &[T; 0], _b: &[T; 0], _c: &mut $acc) {
                arch::trap()
            }
            #[inline(always)]
            unsafe fn mma_lds(a: CoreTile, b: CoreTile, c: &mut $acc) {
                let (da, db, p) = (descriptor(a), descriptor(b), c.as_mut().as_mut_ptr());
                unsafe {
                    match (a.mn_major, b.mn_major) {
                        (false, false) => T::wgmma::<$n, false, false>(da, db, p),
                        (false, true) => T::wgmma::<$n, false, true>(da, db, p),
                        (true, false) => T::wgmma::<$n, true, false>(da, db, p),
                        (true, true) => T::wgmma::<$n, true, true>(da, db, p),
                    }
                }
            }
        }
    };
}

wgmma_atom!(
    /// `wgmma.mma_async ... m64n128k16.f32.{f16,bf16}` (operands in LDS).
    Wgmma64x128x16, 128, Acc64, Wgmma64x128x16
);
wgmma_atom!(
    /// `wgmma.mma_async ... m64n64k16.f32.{f16,bf16}` (operands in LDS): the
    /// tile for 64 channels per group.
    Wgmma64x64x16, 64, [f32; 32], Wgmma64x64x16
);

/// Row and column of accumulator slot `e` of warpgroup lane `lane` (any N).
#[inline(always)]
fn c_elem(lane: usize, e: usize) -> (usize, usize) {
    let (w, l) = (lane / 32, lane % 32);
    (16 * w + l / 4 + 8 * ((e / 2) % 2), 8 * (e / 4) + 2 * (l % 4) + e % 2)
}

#[cfg(target_arch = "nvptx64")]
mod hw {
    use super::*;
    use crate::elem::Bf16;
    /// The generated shims (`xtask/src/build/wgmma_shim.rs`) of one type:
    /// `convgrad_wgmma_m64n<N>k16_<ty>_<a><b>`.
    macro_rules! shim {
        ($t:ty, $([$n:literal, $kk:ident, $km:ident, $mk:ident, $mm:ident]),*) => {
            unsafe extern "C" {
                $(
                    fn $kk(da: u64, db: u64, acc: *mut f32);
                    fn $km(da: u64, db: u64, acc: *mut f32);
                    fn $mk(da: u64, db: u64, acc: *mut f32);
                    fn $mm(da: u64, db: u64, acc: *mut f32);
                )*
            }
            impl WgmmaInput for $t {
                #[inline(always)]
                unsafe fn wgmma<const N: usize, const TA: bool, const TB: bool>(da: u64, db: u64, p: *mut f32) {
                    unsafe {
                        match N {
                            $($n => match (TA, TB) {
                                (false, false) => $kk(da, db, p),
                                (false, true) => $km(da, db, p),
                                (true, false) => $mk(da, db, p),
                                (true, true) => $mm(da, db, p),
                            },)*
                            _ => arch::trap(),
                        }
                    }
                }
            }
        };
    }
    shim!(
        f16,
        [
            128,
            convgrad_wgmma_m64n128k16_f16_kk,
            convgrad_wgmma_m64n128k16_f16_km,
            convgrad_wgmma_m64n128k16_f16_mk,
            convgrad_wgmma_m64n128k16_f16_mm
        ],
        [
            64,
            convgrad_wgmma_m64n64k16_f16_kk,
            convgrad_wgmma_m64n64k16_f16_km,
            convgrad_wgmma_m64n64k16_f16_mk,
            convgrad_wgmma_m64n64k16_f16_mm
        ]
    );
    shim!(
        Bf16,
        [
            128,
            convgrad_wgmma_m64n128k16_bf16_kk,
            convgrad_wgmma_m64n128k16_bf16_km,
            convgrad_wgmma_m64n128k16_bf16_mk,
            convgrad_wgmma_m64n128k16_bf16_mm
        ],
        [
            64,
            convgrad_wgmma_m64n64k16_bf16_kk,
            convgrad_wgmma_m64n64k16_bf16_km,
            convgrad_wgmma_m64n64k16_bf16_mk,
            convgrad_wgmma_m64n64k16_bf16_mm
        ]
    );
}

#[cfg(target_arch = "amdgpu")]
mod hw {
    use super::*;
    use crate::elem::Bf16;
    // AMD has no warpgroup instruction; no AMD instance uses this atom.
    impl WgmmaInput for f16 {
        unsafe fn wgmma<const N: usize, const TA: bool, const TB: bool>(_da: u64, _db: u64, _acc: *mut f32) {
            arch::trap()
        }
    }
    impl WgmmaInput for Bf16 {
        unsafe fn wgmma<const N: usize, const TA: bool, const TB: bool>(_da: u64, _db: u64, _acc: *mut f32) {
            arch::trap()
        }
    }
}

#[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
mod emu {
    use super::*;
    use crate::elem::{Bf16, f16};
    use convgrad_emu::{lane, matrix::WgmmaOp};
    macro_rules! emu_wgmma {
        ($t:ty, $bf16:literal) => {
            impl WgmmaInput for $t {
                #[inline(always)]
                unsafe fn wgmma<const N: usize, const TA: bool, const TB: bool>(da: u64, db: u64, p: *mut f32) {
                    let op = WgmmaOp { n: N as u32, bf16: $bf16, tnsp_a: TA, tnsp_b: TB };
                    // SAFETY: the atom passes its N / 2 accumulators.
                    let acc = unsafe { core::slice::from_raw_parts_mut(p, N / 2) };
                    let mut c = [0.0f32; 64];
                    c[..N / 2].copy_from_slice(acc);
                    lane::wgmma(op, da, db, &c[..N / 2], acc);
                }
            }
        };
    }
    emu_wgmma!(f16, false);
    emu_wgmma!(Bf16, true);
}
