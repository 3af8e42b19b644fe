//! amdgcn: ids from `core::arch::amdgpu`, LDS through the launch-sized
//! workgroup memory, barrier and float atomics from the IR shim (`device/shim/amdgpu.ll`).

use core::arch::amdgpu as a;

unsafe extern "C" {
    /// `fence syncscope("workgroup") release; s_barrier; fence syncscope("workgroup") acquire`.
    fn convgrad_workgroup_barrier();
    /// `atomicrmw fadd ... syncscope("agent") monotonic`.
    fn convgrad_atomic_add_f32(p: *mut f32, v: f32);
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
pub unsafe fn ld<T: Copy>(p: *const T, i: usize) -> T {
    unsafe { *p.add(i) }
}
#[inline(always)]
pub unsafe fn st<T: Copy>(p: *mut T, i: usize, v: T) {
    unsafe { *p.add(i) = v }
}
#[inline(always)]
pub unsafe fn atomic_add_f32(p: *mut f32, i: usize, v: f32) {
    unsafe { convgrad_atomic_add_f32(p.add(i), v) }
}
#[inline(always)]
fn lds_base() -> *mut u8 {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<u8>()
}
#[inline(always)]
pub unsafe fn lds_ld<T: Copy>(off: usize) -> T {
    unsafe { *(lds_base().add(off) as *const T) }
}
#[inline(always)]
pub unsafe fn lds_st<T: Copy>(off: usize, v: T) {
    unsafe { *(lds_base().add(off) as *mut T) = v }
}
#[inline(always)]
pub fn trap() -> ! {
    core::intrinsics::abort()
}
