//! Smoke kernel: `D (M x N, f32) = A (M x K) * B (K x N)` (f16, row-major) for
//! exactly one atom, by one wave: global -> LDS -> barrier -> fragments
//! through the atom's layout -> one matrix instruction -> global.
//! Arguments: `ConvArgs { x: A, w: B, dy: D }`. Grid 1, block = wave, LDS = `(M + N) * K * 2`.

use crate::arch;
use crate::atom::MmaAtom;
use crate::conv::load_args;
#[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
use crate::elem::f16;
use convgrad_types::params::ConvArgs;

/// Kernel body.
///
/// # Safety
/// Launch contract above.
#[inline(always)]
pub unsafe fn run<At: MmaAtom<In = f16>>(args: *const ConvArgs) {
    let a = unsafe { load_args(args) };
    let (m, n, k) = (At::M, At::N, At::K);
    let lane = arch::thread_id() as usize;
    let (pa, pb) = (a.x as *const f16, a.w as *const f16);
    // A as [M][K], B transposed as [N][K] in LDS.
    let mut i = lane;
    while i < m * k {
        unsafe { arch::lds_st(i * 2, arch::ld(pa, i)) };
        i += At::WAVE;
    }
    let mut i = lane;
    while i < k * n {
        let (kk, j) = (i / n, i % n);
        unsafe { arch::lds_st((m * k + j * k + kk) * 2, arch::ld(pb, i)) };
        i += At::WAVE;
    }
    arch::barrier();
    let mut fa = At::A::default();
    let mut fb = At::B::default();
    for (s, v) in fa.as_mut().iter_mut().enumerate() {
        let (r, kk) = At::a_elem(lane, s);
        *v = unsafe { arch::lds_ld((r * k + kk) * 2) };
    }
    for (s, v) in fb.as_mut().iter_mut().enumerate() {
        let (kk, c) = At::b_elem(lane, s);
        *v = unsafe { arch::lds_ld((m * k + c * k + kk) * 2) };
    }
    let mut acc = At::C::default();
    unsafe { At::mma(&fa, &fb, &mut acc) };
    for (s, &v) in acc.as_ref().iter().enumerate() {
        let (r, c) = At::c_elem(lane, s);
        unsafe { arch::st(a.dy as *mut f32, r * n + c, v) };
    }
}
