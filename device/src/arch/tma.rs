//! Hopper's tensor memory accelerator and mbarriers (`sm_90`): what the TMA
//! main loop ([`crate::gemm::tma`]) needs. One thread issues a whole box
//! copy; its bytes complete on an mbarrier in LDS that the consumers wait on.
//!
//! NVIDIA Hopper builds call the IR shim (`xtask/src/build/wgmma_shim.rs`,
//! inline PTX); the emulator models the copies and the phases
//! (`convgrad_emu::lane::tma_load`); other targets have no TMA instance and
//! trap.

/// One tensor map slot of the argument block ([`convgrad_types::params::ConvArgs::tma`]).
pub type MapSlot = [u64; 16];

#[cfg(all(target_arch = "nvptx64", convgrad_wgmma))]
mod imp {
    use super::MapSlot;
    unsafe extern "C" {
        fn convgrad_mbar_init(bar: u32, count: u32);
        fn convgrad_mbar_init_fence();
        fn convgrad_mbar_expect_tx(bar: u32, bytes: u32);
        fn convgrad_mbar_wait(bar: u32, parity: u32);
        fn convgrad_mbar_arrive(bar: u32);
        fn convgrad_bar_sync(id: u32, threads: u32);
        fn convgrad_tma_load_3d(dst: u32, bar: u32, map: *const MapSlot, c0: i32, c1: i32, c2: i32);
        fn convgrad_tma_load_5d(dst: u32, bar: u32, map: *const MapSlot, c0: i32, c1: i32, c2: i32, c3: i32, c4: i32);
    }
    #[inline(always)]
    fn smem(off: usize) -> u32 {
        crate::arch::lds_window(off)
    }
    #[inline(always)]
    pub unsafe fn mbar_init(off: usize, count: u32) {
        unsafe { convgrad_mbar_init(smem(off), count) }
    }
    #[inline(always)]
    pub fn mbar_init_fence() {
        unsafe { convgrad_mbar_init_fence() }
    }
    #[inline(always)]
    pub unsafe fn mbar_expect_tx(off: usize, bytes: u32) {
        unsafe { convgrad_mbar_expect_tx(smem(off), bytes) }
    }
    #[inline(always)]
    pub unsafe fn mbar_wait(off: usize, parity: u32) {
        unsafe { convgrad_mbar_wait(smem(off), parity) }
    }
    #[inline(always)]
    pub unsafe fn mbar_arrive(off: usize) {
        unsafe { convgrad_mbar_arrive(smem(off)) }
    }
    #[inline(always)]
    pub fn named_barrier(id: u32, threads: u32) {
        unsafe { convgrad_bar_sync(id, threads) }
    }
    #[inline(always)]
    pub unsafe fn load(dst: usize, bar: usize, map: *const MapSlot, c: [i32; 5], rank5: bool) {
        if rank5 {
            unsafe { convgrad_tma_load_5d(smem(dst), smem(bar), map, c[0], c[1], c[2], c[3], c[4]) }
        } else {
            unsafe { convgrad_tma_load_3d(smem(dst), smem(bar), map, c[0], c[1], c[2]) }
        }
    }
}

#[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
mod imp {
    use super::MapSlot;
    use convgrad_emu::lane;
    #[inline(always)]
    pub unsafe fn mbar_init(off: usize, count: u32) {
        lane::mbar_init(off, count)
    }
    #[inline(always)]
    pub fn mbar_init_fence() {}
    #[inline(always)]
    pub unsafe fn mbar_expect_tx(off: usize, bytes: u32) {
        lane::mbar_arrive_expect_tx(off, bytes)
    }
    #[inline(always)]
    pub unsafe fn mbar_wait(off: usize, parity: u32) {
        lane::mbar_wait(off, parity)
    }
    #[inline(always)]
    pub unsafe fn mbar_arrive(off: usize) {
        lane::mbar_arrive(off)
    }
    #[inline(always)]
    pub fn named_barrier(id: u32, threads: u32) {
        lane::named_barrier(id, threads)
    }
    #[inline(always)]
    pub unsafe fn load(dst: usize, bar: usize, map: *const MapSlot, c: [i32; 5], rank5: bool) {
        lane::tma_load(dst, bar, map as *const u8, c, if rank5 { 5 } else { 3 })
    }
}

#[cfg(any(target_arch = "amdgpu", all(target_arch = "nvptx64", not(convgrad_wgmma))))]
mod imp {
    use super::MapSlot;
    use crate::arch::trap;
    pub unsafe fn mbar_init(_off: usize, _count: u32) {
        trap()
    }
    pub fn mbar_init_fence() {
        trap()
    }
    pub unsafe fn mbar_expect_tx(_off: usize, _bytes: u32) {
        trap()
    }
    pub unsafe fn mbar_wait(_off: usize, _parity: u32) {
        trap()
    }
    pub unsafe fn mbar_arrive(_off: usize) {
        trap()
    }
    pub fn named_barrier(_id: u32, _threads: u32) {
        trap()
    }
    pub unsafe fn load(_dst: usize, _bar: usize, _map: *const MapSlot, _c: [i32; 5], _rank5: bool) {
        trap()
    }
}

/// Initialises the mbarrier at LDS byte `off` (8-byte aligned) for `count`
/// arrivals per phase.
///
/// # Safety
/// `off` must be an 8-byte slot inside the launch's LDS that nothing else uses.
#[inline(always)]
pub unsafe fn mbar_init(off: usize, count: u32) {
    unsafe { imp::mbar_init(off, count) }
}

/// `fence.mbarrier_init.release.cluster`: the initialisations become visible
/// to the copies (the asynchronous proxy); a barrier then makes them visible
/// to the workgroup.
#[inline(always)]
pub fn mbar_init_fence() {
    imp::mbar_init_fence()
}

/// Arrives on the mbarrier at `off`, expecting `bytes` more to land on it
/// this phase.
///
/// # Safety
/// `off` must hold an initialised mbarrier.
#[inline(always)]
pub unsafe fn mbar_expect_tx(off: usize, bytes: u32) {
    unsafe { imp::mbar_expect_tx(off, bytes) }
}

/// Waits until the phase of parity `parity` of the mbarrier at `off` has
/// completed (its copies have landed and are visible to this thread).
///
/// # Safety
/// As [`mbar_expect_tx`].
#[inline(always)]
pub unsafe fn mbar_wait(off: usize, parity: u32) {
    unsafe { imp::mbar_wait(off, parity) }
}

/// Arrives on the mbarrier at `off` without a transaction count (a consumer
/// releasing a stage to the producer warp).
///
/// # Safety
/// As [`mbar_expect_tx`].
#[inline(always)]
pub unsafe fn mbar_arrive(off: usize) {
    unsafe { imp::mbar_arrive(off) }
}

/// `barrier.sync id, threads`: waits for `threads` threads (whole warps) at
/// named barrier `id` (1 to 15), so the consumer warpgroups of a
/// warp-specialised loop sync without the producer warp (the workgroup's
/// [`crate::arch::barrier`] is barrier 0, all threads).
#[inline(always)]
pub fn named_barrier(id: u32, threads: u32) {
    imp::named_barrier(id, threads)
}

/// Copies the box at coordinates `c` (the first three where not `rank5`)
/// of the tensor map in `map`, whose rank the instruction names (3 or 5,
/// `rank5`), to LDS byte
/// `dst`, its bytes completing on the mbarrier at `bar`.
///
/// # Safety
/// `map` must be a filled slot of the argument block; `dst` must be aligned
/// to 1024 bytes (the 128-byte swizzle) with the box inside the LDS; `bar`
/// as [`mbar_expect_tx`].
#[inline(always)]
pub unsafe fn tma_load(dst: usize, bar: usize, map: *const MapSlot, c: [i32; 5], rank5: bool) {
    unsafe { imp::load(dst, bar, map, c, rank5) }
}
