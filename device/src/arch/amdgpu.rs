//! amdgcn: ids from `core::arch::amdgpu`, LDS through the launch-sized
//! workgroup memory, barrier and float atomics from the IR shim (`device/shim/amdgpu.ll`).

use core::arch::amdgpu as a;

super::raw::shim_calls! {
    /// `fence syncscope("workgroup") release; s_barrier; fence syncscope("workgroup") acquire`.
    barrier => convgrad_workgroup_barrier;
    /// `fence syncscope("agent") acq_rel`.
    arrival_fence => convgrad_fence_agent;
}

#[inline(always)]
pub fn thread_id() -> u32 {
    a::workitem_id_x()
}
#[inline(always)]
pub fn block_id() -> [u32; 3] {
    [a::workgroup_id_x(), a::workgroup_id_y(), a::workgroup_id_z()]
}

/// CDNA has no 16-byte f32 atomic.
pub use super::raw::atomic_add_f32x4_each as atomic_add_f32x4;
pub use super::raw::{arrive, atomic_add_f32, ld, lds_ld, lds_st, st, trap};

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
