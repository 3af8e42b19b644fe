//! nvptx64: ids from `core::arch::nvptx`, dynamic shared memory through the
//! launch-sized workgroup memory, `bar.sync 0`, float atomics from the IR shim
//! (`device/shim/nvptx.ll`).

use core::arch::nvptx as a;

unsafe extern "C" {
    /// `atomicrmw fadd ... monotonic` (red.global.add.f32).
    fn convgrad_atomic_add_f32(p: *mut f32, v: f32);
}

#[inline(always)]
pub fn thread_id() -> u32 {
    unsafe { a::_thread_idx_x() as u32 }
}
#[inline(always)]
pub fn block_id() -> [u32; 3] {
    unsafe { [a::_block_idx_x() as u32, a::_block_idx_y() as u32, a::_block_idx_z() as u32] }
}
#[inline(always)]
pub fn barrier() {
    unsafe { a::_syncthreads() }
}
#[inline(always)]
pub unsafe fn atomic_add_f32(p: *mut f32, i: usize, v: f32) {
    unsafe { convgrad_atomic_add_f32(p.add(i), v) }
}

pub use super::raw::{ld, lds_ld, lds_st, st, trap};
