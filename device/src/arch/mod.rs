//! The architecture layer: everything a kernel does that is not plain arithmetic.
//!
//! One implementation per target: [`amdgpu`] and [`nvptx`] lower to the hardware,
//! `emu` forwards to the `convgrad-emu` simulated GPU, which checks every access
//! (bounds, LDS races, barrier divergence, reads of unwritten memory).
//! Kernels use 1-D workgroups and a 3-D grid.
//!
//! All memory access goes through [`ld`], [`st`], [`lds_ld`], [`lds_st`] and
//! [`atomic_add_f32`] so the emulator sees it; on the GPU they are plain
//! loads and stores that LLVM vectorises when `T` is an aligned vector.

#[cfg(any(target_arch = "amdgpu", target_arch = "nvptx64"))]
mod raw;

#[cfg(target_arch = "amdgpu")]
mod amdgpu;
#[cfg(target_arch = "amdgpu")]
use amdgpu as imp;

#[cfg(target_arch = "nvptx64")]
mod nvptx;
#[cfg(target_arch = "nvptx64")]
use nvptx as imp;

#[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
mod emu;

pub mod tma;
#[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
use emu as imp;

/// Thread index inside the (1-D) workgroup.
#[inline(always)]
pub fn thread_id() -> u32 {
    imp::thread_id()
}

/// Workgroup index in the grid, `[x, y, z]`.
#[inline(always)]
pub fn block_id() -> [u32; 3] {
    imp::block_id()
}

/// Workgroup barrier with LDS visibility (every thread must reach it).
#[inline(always)]
pub fn barrier() {
    imp::barrier()
}

/// Loads element `i` of global array `p`.
///
/// # Safety
/// `p + i` must lie in an allocation the kernel was given.
#[inline(always)]
pub unsafe fn ld<T: Copy>(p: *const T, i: usize) -> T {
    unsafe { imp::ld(p, i) }
}

/// Stores `v` to element `i` of global array `p`.
///
/// # Safety
/// As [`ld`].
#[inline(always)]
pub unsafe fn st<T: Copy>(p: *mut T, i: usize, v: T) {
    unsafe { imp::st(p, i, v) }
}

/// Atomically adds `v` to `p[i]` (device scope, relaxed).
///
/// # Safety
/// As [`ld`].
#[inline(always)]
pub unsafe fn atomic_add_f32(p: *mut f32, i: usize, v: f32) {
    unsafe { imp::atomic_add_f32(p, i, v) }
}

/// Atomically adds `v[e]` to `p[i + e]`, each element on its own (device
/// scope, relaxed): one `red.global.v4.f32.add` on Hopper, four scalar
/// atomics elsewhere.
///
/// # Safety
/// As [`ld`], for all four elements; `p + i` must be 16-byte aligned.
#[inline(always)]
pub unsafe fn atomic_add_f32x4(p: *mut f32, i: usize, v: [f32; 4]) {
    unsafe { imp::atomic_add_f32x4(p, i, v) }
}

/// A workgroup's arrival at a counter, by one thread between two workgroup
/// barriers, each thread having taken [`arrival_fence`] before the first:
/// device-scope acquire-release increment of `p[i]`, returning the old value.
/// What the workgroup wrote before the barrier is visible to the workgroup
/// that reads the counter's next value, and after the second barrier (and
/// [`arrival_fence`]) this workgroup sees what earlier arrivals wrote.
///
/// # Safety
/// As [`ld`].
#[inline(always)]
pub unsafe fn arrive(p: *mut u32, i: usize) -> u32 {
    unsafe { imp::arrive(p, i) }
}

/// Each thread's part of an [`arrive`], before the barrier that precedes it
/// and, in the workgroup that reads its partners' data, after the one that
/// follows it. NVIDIA: nothing (the arrival's `fence.acq_rel.gpu` is
/// cumulative over the barrier, as in CUTLASS's split-K semaphore). AMD: an
/// agent-scope fence, since a wave's release or acquire covers only its own
/// accesses.
#[inline(always)]
pub fn arrival_fence() {
    imp::arrival_fence()
}

/// Loads a `T` at byte offset `off` of the launch-sized LDS.
///
/// # Safety
/// `off` must be aligned for `T` and inside the LDS the kernel was launched with.
#[inline(always)]
pub unsafe fn lds_ld<T: Copy>(off: usize) -> T {
    unsafe { imp::lds_ld(off) }
}

/// Stores a `T` at byte offset `off` of the launch-sized LDS.
///
/// # Safety
/// As [`lds_ld`].
#[inline(always)]
pub unsafe fn lds_st<T: Copy>(off: usize, v: T) {
    unsafe { imp::lds_st(off, v) }
}

/// Starts copying 16 bytes from global `src` to LDS byte offset `off`
/// without waiting for them (NVIDIA `cp.async.cg`; elsewhere a plain load and
/// store), or zero-fills the 16 bytes when `src` is `None`. The copy belongs
/// to the current group: [`cp_async_commit`] closes it, [`cp_async_wait`]
/// waits for it.
///
/// # Safety
/// `src` must be a 16-byte aligned vector in an allocation the kernel was
/// given; `off` must be 16-byte aligned inside the launch's LDS.
#[inline(always)]
pub unsafe fn cp_async16<V: Copy + Default>(off: usize, src: Option<*const V>) {
    const { assert!(core::mem::size_of::<V>() == 16) };
    unsafe { imp::cp_async16(off, src) }
}

/// Closes the current group of [`cp_async16`] copies (may be empty).
#[inline(always)]
pub fn cp_async_commit() {
    imp::cp_async_commit()
}

/// Waits until at most `pending` (0 to 3, a constant after inlining) of this
/// thread's committed groups are still in flight. Other threads' copies become
/// visible only after a [`barrier`] that follows their own wait.
#[inline(always)]
pub fn cp_async_wait(pending: u32) {
    imp::cp_async_wait(pending)
}

/// `ldmatrix.sync.aligned.m8n8.x4(.trans).b16` (warp32): four 8x8 matrices of
/// 16-bit elements from LDS, one 32-bit register each. `row(i, r)` is the byte
/// offset of row `r` (16 contiguous bytes) of matrix `i`, a function of `i` and
/// `r` alone (uniform over the warp). Lane `l` receives elements
/// `(l/4, 2*(l%4) .. +1)` of each matrix, or with `TRANS` elements
/// `(2*(l%4) .. +1, l/4)`, low half first.
///
/// # Safety
/// Every lane of the warp must call it together; the rows must lie in LDS.
#[inline(always)]
pub unsafe fn ldmatrix_x4<const TRANS: bool>(row: impl Fn(usize, usize) -> usize) -> [u32; 4] {
    unsafe { imp::ldmatrix_x4::<TRANS>(row) }
}

/// Address of LDS byte `off` in the shared-memory window, as the warpgroup
/// instructions' descriptors take it (the emulator: the offset itself).
#[inline(always)]
pub fn lds_window(off: usize) -> u32 {
    imp::lds_window(off)
}

/// `wgmma.fence`: orders this thread's accumulator and LDS accesses before
/// the warpgroup instructions that follow.
#[inline(always)]
pub fn wgmma_fence() {
    imp::wgmma_fence()
}

/// Closes the group of warpgroup instructions issued since the last one.
#[inline(always)]
pub fn wgmma_commit() {
    imp::wgmma_commit()
}

/// Waits until at most `pending` (0 or 1) committed groups of warpgroup
/// instructions are in flight: their accumulators are then defined and the
/// LDS they read may be overwritten.
#[inline(always)]
pub fn wgmma_wait(pending: u32) {
    imp::wgmma_wait(pending)
}

/// `fence.proxy.async.shared::cta`: this thread's LDS writes (stores and
/// `cp.async` copies) become visible to the warpgroup instructions, which read
/// LDS through the asynchronous proxy.
#[inline(always)]
pub fn fence_proxy_async() {
    imp::fence_proxy_async()
}

/// `a * b + c` rounded once, as `v_fma_f32` / `fma.rn.f32`: the intrinsic on GPU
/// targets, the emulator's (std `mul_add`) on the host, where `core` has no stable fma.
#[cfg(any(target_arch = "amdgpu", target_arch = "nvptx64"))]
pub use core::intrinsics::fmaf32 as fma;
#[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
pub use imp::fma;

/// `v` as bf16 bits, rounded to nearest even (NaN stays NaN). NVIDIA has an
/// instruction for it; elsewhere it is [`f32_to_bf16_soft`]. The epilogue
/// converts every output element: the integer sequence made the bf16
/// kernels clearly slower than f16 on epilogue-bound 1x1 shapes.
#[inline(always)]
pub fn f32_to_bf16(v: f32) -> u16 {
    imp::f32_to_bf16(v)
}

/// [`f32_to_bf16`] in integer arithmetic (gfx90a/gfx942 and RDNA3 have no
/// conversion instruction).
#[inline(always)]
pub fn f32_to_bf16_soft(v: f32) -> u16 {
    let b = v.to_bits();
    if v.is_nan() {
        return ((b >> 16) as u16) | 0x40;
    }
    // Round to nearest, ties to even.
    (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// Targets without asynchronous copies or matrix loads (AMD, the emulator):
/// synchronous copies, and matrix loads done lane by lane with plain LDS
/// loads (each lane reads what the instruction would hand it, so no lane
/// needs another's address: exact for the emulator's checks).
#[cfg(not(target_arch = "nvptx64"))]
mod no_async {
    use super::{ld, lds_ld, lds_st, thread_id};

    #[inline(always)]
    pub unsafe fn cp_async16<V: Copy + Default>(off: usize, src: Option<*const V>) {
        let v = match src {
            Some(p) => unsafe { ld(p, 0) },
            None => V::default(),
        };
        unsafe { lds_st(off, v) }
    }
    #[inline(always)]
    pub fn cp_async_commit() {}
    #[inline(always)]
    pub fn cp_async_wait(_pending: u32) {}
    #[inline(always)]
    pub unsafe fn ldmatrix_x4<const TRANS: bool>(row: impl Fn(usize, usize) -> usize) -> [u32; 4] {
        let l = thread_id() as usize % 32;
        core::array::from_fn(|i| unsafe {
            if TRANS {
                let lo: u16 = lds_ld(row(i, 2 * (l % 4)) + 2 * (l / 4));
                let hi: u16 = lds_ld(row(i, 2 * (l % 4) + 1) + 2 * (l / 4));
                lo as u32 | (hi as u32) << 16
            } else {
                lds_ld::<u32>(row(i, l / 4) + 4 * (l % 4))
            }
        })
    }
}

/// Stops the kernel (a bug: the emulator reports it with the lane).
#[inline(always)]
pub fn trap() -> ! {
    imp::trap()
}
