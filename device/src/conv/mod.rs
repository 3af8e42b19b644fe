//! Convolution ops as thin problem-to-GEMM mappings onto [`crate::gemm`].

pub mod bwd_weight;
pub mod bwd_weight_direct;

use convgrad_types::params::ConvArgs;

/// Splits a flat output-pixel index of batch-major `(n, do, ho, wo)` order.
#[inline(always)]
pub fn split_out_pixel(a: &ConvArgs, idx: u32) -> (u32, [u32; 3]) {
    let (t, wo) = a.div_out[2].divmod(idx);
    let (t, ho) = a.div_out[1].divmod(t);
    let (n, dd) = a.div_out[0].divmod(t);
    (n, [dd, ho, wo])
}

/// Element offset from a canonical 6-axis index and strides.
#[inline(always)]
pub fn offset(s: &[u32; 6], i: [u32; 6]) -> usize {
    let mut o = 0usize;
    for a in 0..6 {
        o += s[a] as usize * i[a] as usize;
    }
    o
}

/// The kernel's argument block, read in place (uniform scalar loads on the
/// GPU rather than a private copy), after checking its layout signature.
///
/// # Safety
/// `args` must point to a `ConvArgs` in device memory that outlives the kernel.
#[inline(always)]
pub unsafe fn load_args<'a>(args: *const ConvArgs) -> &'a ConvArgs {
    // The emulator checks the whole block once (bounds, written).
    #[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
    let _: ConvArgs = unsafe { crate::arch::ld(args, 0) };
    let a = unsafe { &*args };
    if a.abi != ConvArgs::ABI {
        // Built from another version of convgrad-types than the host.
        crate::arch::trap();
    }
    a
}
