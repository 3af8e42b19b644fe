//! Host build: every operation is forwarded to the `convgrad-emu` simulated GPU,
//! which runs each lane as a fiber and checks every access.

use convgrad_emu::lane;

#[inline(always)]
pub fn thread_id() -> u32 {
    lane::thread_id()
}
#[inline(always)]
pub fn block_id() -> [u32; 3] {
    lane::block_id()
}
#[inline(always)]
pub fn barrier() {
    lane::barrier()
}
#[inline(always)]
pub unsafe fn ld<T: Copy>(p: *const T, i: usize) -> T {
    lane::global_load(p.wrapping_add(i))
}
#[inline(always)]
pub unsafe fn st<T: Copy>(p: *mut T, i: usize, v: T) {
    lane::global_store(p.wrapping_add(i), v)
}
#[inline(always)]
pub unsafe fn atomic_add_f32(p: *mut f32, i: usize, v: f32) {
    lane::atomic_add_f32(p.wrapping_add(i), v)
}
#[inline(always)]
pub unsafe fn atomic_add_f32x4(p: *mut f32, i: usize, v: [f32; 4]) {
    lane::atomic_add_f32x4(p.wrapping_add(i), v)
}
#[inline(always)]
pub unsafe fn arrive(p: *mut u32, i: usize) -> u32 {
    lane::atomic_inc_u32(p.wrapping_add(i))
}
#[inline(always)]
pub fn arrival_fence() {
    lane::fence_device()
}
#[inline(always)]
pub unsafe fn lds_ld<T: Copy>(off: usize) -> T {
    lane::lds_load(off)
}
#[inline(always)]
pub unsafe fn lds_st<T: Copy>(off: usize, v: T) {
    lane::lds_store(off, v)
}
#[inline(always)]
pub fn trap() -> ! {
    lane::trap()
}

pub use super::no_async::{cp_async_commit, cp_async_wait, cp_async16, ldmatrix_x4};

#[inline(always)]
pub fn lds_window(off: usize) -> u32 {
    off as u32
}
#[inline(always)]
pub fn wgmma_fence() {
    lane::wgmma_fence()
}
#[inline(always)]
pub fn wgmma_commit() {
    lane::wgmma_commit()
}
#[inline(always)]
pub fn wgmma_wait(pending: u32) {
    lane::wgmma_wait(pending)
}
/// The emulator's LDS has one view: nothing to order.
#[inline(always)]
pub fn fence_proxy_async() {}

pub use super::f32_to_bf16_soft as f32_to_bf16;
pub use lane::fma;
