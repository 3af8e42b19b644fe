//! nvptx64: ids from `core::arch::nvptx`, dynamic shared memory through the
//! launch-sized workgroup memory, `bar.sync 0`, float atomics from the IR shim
//! (`device/shim/nvptx.ll`).

use core::arch::nvptx as a;

unsafe extern "C" {
    /// `cp.async.cg.shared.global [dst], [src], 16, valid ? 16 : 0`.
    fn convgrad_cp_async16_if(dst: *mut u8, src: *const u8, valid: bool);
    fn convgrad_cp_async_wait0();
    fn convgrad_cp_async_wait1();
    fn convgrad_cp_async_wait2();
    fn convgrad_cp_async_wait3();
    fn convgrad_f32_to_bf16(v: f32) -> u16;
    // Hopper only (generated into the sm_90a shim by xtask).
    fn convgrad_smem_addr(p: *const u8) -> u32;
    fn convgrad_wgmma_wait0();
    fn convgrad_wgmma_wait1();
    #[cfg(convgrad_wgmma)]
    fn convgrad_red_add_f32x4(p: *mut f32, a: f32, b: f32, c: f32, d: f32);
}

super::raw::shim_calls! {
    cp_async_commit => convgrad_cp_async_commit;
    /// Hopper only, as the rest of the warpgroup shim.
    wgmma_fence => convgrad_wgmma_fence;
    wgmma_commit => convgrad_wgmma_commit;
    fence_proxy_async => convgrad_fence_proxy_async;
}

/// Four 32-bit registers, as LLVM's `<4 x i32>`.
#[repr(simd)]
#[derive(Clone, Copy)]
struct U32x4([u32; 4]);

#[allow(improper_ctypes)]
unsafe extern "unadjusted" {
    fn convgrad_ldmatrix_x4(p: *const u8) -> U32x4;
    fn convgrad_ldmatrix_x4_trans(p: *const u8) -> U32x4;
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
pub fn arrival_fence() {}

/// One 16-byte reduction on Hopper; four scalar ones before it.
#[inline(always)]
pub unsafe fn atomic_add_f32x4(p: *mut f32, i: usize, v: [f32; 4]) {
    #[cfg(convgrad_wgmma)]
    unsafe {
        convgrad_red_add_f32x4(p.add(i), v[0], v[1], v[2], v[3])
    }
    #[cfg(not(convgrad_wgmma))]
    unsafe {
        super::raw::atomic_add_f32x4_each(p, i, v)
    }
}

#[inline(always)]
pub unsafe fn cp_async16<V: Copy + Default>(off: usize, src: Option<*const V>) {
    let dst = unsafe { super::raw::lds_base().add(off) };
    let (p, valid) = match src {
        Some(p) => (p as *const u8, true),
        None => (core::ptr::null(), false),
    };
    unsafe { convgrad_cp_async16_if(dst, p, valid) }
}
#[inline(always)]
pub fn cp_async_wait(pending: u32) {
    unsafe {
        match pending {
            0 => convgrad_cp_async_wait0(),
            1 => convgrad_cp_async_wait1(),
            2 => convgrad_cp_async_wait2(),
            _ => convgrad_cp_async_wait3(),
        }
    }
}
#[inline(always)]
pub unsafe fn ldmatrix_x4<const TRANS: bool>(row: impl Fn(usize, usize) -> usize) -> [u32; 4] {
    let l = thread_id() as usize % 32;
    let lds = super::raw::lds_base();
    let p = unsafe { lds.add(row(l / 8, l % 8)) };
    let r = unsafe { if TRANS { convgrad_ldmatrix_x4_trans(p) } else { convgrad_ldmatrix_x4(p) } };
    unsafe { core::mem::transmute::<U32x4, [u32; 4]>(r) }
}

#[inline(always)]
pub fn lds_window(off: usize) -> u32 {
    unsafe { convgrad_smem_addr(super::raw::lds_base().add(off)) }
}
#[inline(always)]
pub fn wgmma_wait(pending: u32) {
    unsafe {
        if pending == 0 { convgrad_wgmma_wait0() } else { convgrad_wgmma_wait1() }
    }
}

/// The hardware conversion (`cvt.rn.bf16.f32`).
#[inline(always)]
pub fn f32_to_bf16(v: f32) -> u16 {
    unsafe { convgrad_f32_to_bf16(v) }
}

pub use super::raw::{arrive, atomic_add_f32, ld, lds_ld, lds_st, st, trap};
