//! amdgcn: ids from `core::arch::amdgpu`, LDS through the launch-sized
//! workgroup memory, barrier and float atomics from the IR shim (`device/shim/amdgpu.ll`).

use core::arch::amdgpu as a;

unsafe extern "C" {
    /// `fence syncscope("workgroup") release; s_barrier; fence syncscope("workgroup") acquire`.
    fn convgrad_workgroup_barrier();
    /// `atomicrmw fadd ... syncscope("agent") monotonic`.
    fn convgrad_atomic_add_f32(p: *mut f32, v: f32);
    /// `atomicrmw add ... syncscope("agent") acq_rel`.
    fn convgrad_arrive(p: *mut u32) -> u32;
    /// `fence syncscope("agent") acq_rel`.
    fn convgrad_fence_agent();
}

#[inline(always)]
pub fn thread_id() -> u32 {
    a::workitem_id_x()
}
#[inline(always)]
pub fn block_id() -> [u32; 3] {
    [a::workgroup_id_x(), a::workgroup_id_y(), a::workgroup_id_z()]
}
#[inline(always)]
pub fn barrier() {
    unsafe { convgrad_workgroup_barrier() }
}
#[inline(always)]
pub unsafe fn atomic_add_f32(p: *mut f32, i: usize, v: f32) {
    unsafe { convgrad_atomic_add_f32(p.add(i), v) }
}

#[inline(always)]
pub unsafe fn arrive(p: *mut u32, i: usize) -> u32 {
    unsafe { convgrad_arrive(p.add(i)) }
}
#[inline(always)]
pub fn arrival_fence() {
    unsafe { convgrad_fence_agent() }
}

/// Four scalar atomics: CDNA has no 16-byte f32 atomic.
#[inline(always)]
pub unsafe fn atomic_add_f32x4(p: *mut f32, i: usize, v: [f32; 4]) {
    // Spelled out: a loop over `v` that LLVM leaves rolled indexes it in scratch.
    unsafe {
        atomic_add_f32(p, i, v[0]);
        atomic_add_f32(p, i + 1, v[1]);
        atomic_add_f32(p, i + 2, v[2]);
        atomic_add_f32(p, i + 3, v[3]);
    }
}

pub use super::raw::{ld, lds_ld, lds_st, st, trap};

pub use super::no_async::{cp_async_commit, cp_async_wait, cp_async16, ldmatrix_x4};

// AMD has no warpgroup instructions: no AMD kernel uses these (they exist so
// the shared pipeline code compiles for every target).
#[inline(always)]
pub fn lds_window(off: usize) -> u32 {
    off as u32
}
#[inline(always)]
pub fn wgmma_fence() {}
#[inline(always)]
pub fn wgmma_commit() {}
#[inline(always)]
pub fn wgmma_wait(_pending: u32) {}
#[inline(always)]
pub fn fence_proxy_async() {}

pub use super::f32_to_bf16_soft as f32_to_bf16;
