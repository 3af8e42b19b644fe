//! Memory access on real GPUs (amdgcn and nvptx alike): plain loads and stores
//! through flat pointers, LDS through the launch-sized workgroup memory. LLVM
//! infers the address spaces and vectorises `T` that are aligned vectors.

#[inline(always)]
pub unsafe fn ld<T: Copy>(p: *const T, i: usize) -> T {
    unsafe { *p.add(i) }
}
#[inline(always)]
pub unsafe fn st<T: Copy>(p: *mut T, i: usize, v: T) {
    unsafe { *p.add(i) = v }
}
#[inline(always)]
pub fn lds_base() -> *mut u8 {
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
