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

/// Stops the kernel (a bug: the emulator reports it with the lane).
#[inline(always)]
pub fn trap() -> ! {
    imp::trap()
}
