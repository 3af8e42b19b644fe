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

unsafe extern "C" {
    /// A device-scope relaxed float add (`atomicrmw fadd ... syncscope("agent")
    /// monotonic`; NVIDIA: `red.global.add.f32`), from the target's IR shim.
    fn convgrad_atomic_add_f32(p: *mut f32, v: f32);
    /// A device-scope acquire-release increment returning the old value
    /// (`atomicrmw add ... syncscope("agent") acq_rel`; NVIDIA:
    /// `fence.acq_rel.gpu; atom.global.add.u32; fence.acq_rel.gpu`).
    fn convgrad_arrive(p: *mut u32) -> u32;
}

#[inline(always)]
pub unsafe fn atomic_add_f32(p: *mut f32, i: usize, v: f32) {
    unsafe { convgrad_atomic_add_f32(p.add(i), v) }
}
#[inline(always)]
pub unsafe fn arrive(p: *mut u32, i: usize) -> u32 {
    unsafe { convgrad_arrive(p.add(i)) }
}

/// Four scalar atomics, for targets without a 16-byte f32 atomic (all but Hopper).
#[cfg(not(convgrad_wgmma))]
#[inline(always)]
pub unsafe fn atomic_add_f32x4_each(p: *mut f32, i: usize, v: [f32; 4]) {
    // Spelled out: a loop over `v` that LLVM leaves rolled indexes it in
    // scratch (local memory).
    unsafe {
        atomic_add_f32(p, i, v[0]);
        atomic_add_f32(p, i + 1, v[1]);
        atomic_add_f32(p, i + 2, v[2]);
        atomic_add_f32(p, i + 3, v[3]);
    }
}

/// Argument-less functions of the target's IR shim, each declared once with
/// its safe wrapper: `pub fn $name()` calls `$shim()`.
macro_rules! shim_calls {
    ($($(#[$doc:meta])* $name:ident => $shim:ident;)*) => {
        unsafe extern "C" {
            $($(#[$doc])* fn $shim();)*
        }
        $(
            #[inline(always)]
            pub fn $name() {
                unsafe { $shim() }
            }
        )*
    };
}
pub(super) use shim_calls;
