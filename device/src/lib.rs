//! convgrad's GPU kernels, written once and compiled three ways:
//!
//! - `amdgcn-amd-amdhsa` (gfx90a, gfx942: MFMA; gfx1100: WMMA) into HSA code objects,
//! - `nvptx64-nvidia-cuda` (sm_80, sm_90: mma.sync) into PTX,
//! - the host, where [`arch`] forwards to the `convgrad-emu` simulated GPU.
//!
//! Layers, bottom up:
//! - [`arch`]: ids, barriers, LDS, global memory, atomics (the only target-specific code
//!   apart from the atoms);
//! - [`atom`]: one file per matrix instruction; its lane-to-element layout is data;
//! - [`gemm`]: the implicit-GEMM pipeline (block tile, LDS staging, warp tiles of atoms,
//!   split-K) over virtual A/B/C layouts;
//! - [`conv`]: each convolution op as a small problem-to-GEMM mapping;
//! - [`kernels`]: the `extern "gpu-kernel"` entry points, one per instance of
//!   `convgrad_types::for_each_instance!`.
#![no_std]
#![allow(internal_features)]
// Nightly features only where the crate is compiled for a GPU (by `cargo xtask
// build-kernels`, on the pinned nightly): the host (emulator) build is stable Rust, so
// crates depending on `convgrad` build on stable.
#![cfg_attr(any(target_arch = "amdgpu", target_arch = "nvptx64"), feature(f16, core_intrinsics))]
#![cfg_attr(
    any(target_arch = "amdgpu", target_arch = "nvptx64"),
    feature(
        abi_gpu_kernel,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem,
        link_llvm_intrinsics,
        repr_simd,
        simd_ffi
    )
)]
#![cfg_attr(target_arch = "amdgpu", feature(stdarch_amdgpu))]
#![cfg_attr(target_arch = "nvptx64", feature(stdarch_nvptx, abi_unadjusted))]

#[cfg(test)]
extern crate std;

pub mod arch;
pub mod atom;
pub mod conv;
pub mod elem;
pub mod gemm;
pub mod kernels;
mod unroll;

#[cfg(any(target_arch = "amdgpu", target_arch = "nvptx64"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    arch::trap()
}
