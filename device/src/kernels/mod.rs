//! Kernel entry points: one per instance of `convgrad_types::for_each_instance!`.
//!
//! On a GPU target each becomes `#[no_mangle] extern "gpu-kernel" fn <name>(args)`
//! for the families the build's `convgrad_family` cfg selects. On the host,
//! [`host::find`] hands the emulator the same code, per family.

pub mod smoke;

/// Element type in memory for a `TypeConfig` token: (activations, weight gradient).
macro_rules! in_ty {
    (F32) => { f32 };
    (F16) => { $crate::elem::F16 };
    (Bf16) => { $crate::elem::Bf16 };
    (Bf16F32) => { $crate::elem::Bf16 };
    (F32Tf32) => { f32 };
}
macro_rules! out_ty {
    (F32) => { f32 };
    (F16) => { $crate::elem::F16 };
    (Bf16) => { $crate::elem::Bf16 };
    (Bf16F32) => { f32 };
    (F32Tf32) => { f32 };
}
macro_rules! atom_ty {
    (Mfma32x32x8, $t:ident) => { $crate::atom::mfma::Mfma32x32x8<in_ty!($t)> };
    (Mfma16x16x16, $t:ident) => { $crate::atom::mfma::Mfma16x16x16<in_ty!($t)> };
    (Mfma32x32x16, $t:ident) => { $crate::atom::mfma_gfx950::Mfma32x32x16<in_ty!($t)> };
    (Mfma16x16x32, $t:ident) => { $crate::atom::mfma_gfx950::Mfma16x16x32<in_ty!($t)> };
    (Wmma16x16x16, $t:ident) => { $crate::atom::wmma::Wmma16x16x16<in_ty!($t)> };
    (Wmma16x16x16Gfx12, $t:ident) => { $crate::atom::wmma_gfx12::Wmma16x16x16Gfx12<in_ty!($t)> };
    (Mma16x8x16, $t:ident) => { $crate::atom::mma_sync::Mma16x8x16<in_ty!($t)> };
    (Mma16x8x8Tf32, $t:ident) => { $crate::atom::mma_sync::Mma16x8x8Tf32 };
    (Wgmma64x128x16, $t:ident) => { $crate::atom::wgmma::Wgmma64x128x16<in_ty!($t)> };
    (Wgmma64x64x16, $t:ident) => { $crate::atom::wgmma::Wgmma64x64x16<in_ty!($t)> };
    (Fma, $t:ident) => { $crate::atom::fma::Fma };
}

/// The tile type of an instance: `TileShape<atom, BM, BN, BK, WM, WN>`,
/// with the instance's ring of stages where it sets one.
macro_rules! tile_ty {
    ($atom:ident, $ty:ident, $bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal $(, $ring:literal)?) => {
        $crate::gemm::TileShape<atom_ty!($atom, $ty), $bm, $bn, $bk, $wm, $wn $(, $ring)?>
    };
}

/// A call of `conv::$kernel::kernel` for the instance's tile, with the
/// GEMM's atoms per wave ([`Tile::FR`](crate::gemm::Tile::FR), [`Tile::FC`](crate::gemm::Tile::FC)).
macro_rules! tiled {
    ($args:ident, $($kernel:ident)::+, $out:ty, $atom:ident, $ty:ident, $bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal $(, $ring:literal)?) => {{
        type Tl = tile_ty!($atom, $ty, $bm, $bn, $bk, $wm, $wn $(, $ring)?);
        $crate::conv::$($kernel)::+::kernel::<
            Tl,
            $out,
            { <Tl as $crate::gemm::Tile>::FR },
            { <Tl as $crate::gemm::Tile>::FC },
        >($args)
    }};
}

/// Backward-weight by tap shifts: one row of waves, the accumulators `BK / M`
/// (the `K` channels) by `BN / WN / N` (one group's `C` channels).
// (Unused in RDNA3 builds, which have no tap-shift instances.)
#[allow(unused_macros)]
macro_rules! weight_shifts {
    ($args:ident, $phased:literal, $ty:ident, $bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $atom:ident) => {{
        type Tl = tile_ty!($atom, $ty, $bm, $bn, $bk, $wm, $wn);
        type At = <Tl as $crate::gemm::Tile>::At;
        $crate::conv::bwd_weight::tap_shift::kernel::<
            Tl,
            out_ty!($ty),
            { <Tl as $crate::gemm::Tile>::BK / <At as $crate::atom::MmaAtom>::M },
            { <Tl as $crate::gemm::Tile>::FC },
            $phased,
        >($args)
    }};
}

/// The body of instance `name`: a call of the op's generic kernel function.
/// The tiled kernels take the tile type, the output element type and the
/// atoms per wave of their accumulators (`FR`, `FC`).
macro_rules! body {
    ($args:ident, BwdWeight, $ty:ident, $bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $atom:ident) => {
        tiled!($args, bwd_weight::gemm, out_ty!($ty), $atom, $ty, $bm, $bn, $bk, $wm, $wn)
    };
    ($args:ident, BwdData, $ty:ident, $bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $atom:ident) => {
        tiled!($args, bwd_data::gemm, in_ty!($ty), $atom, $ty, $bm, $bn, $bk, $wm, $wn)
    };
    ($args:ident, BwdDataTapShift, $ty:ident, $bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $atom:ident) => {
        tiled!($args, bwd_data::tap_shift, in_ty!($ty), $atom, $ty, $bm, $bn, $bk, $wm, $wn)
    };
    ($args:ident, BwdDataTma, $ty:ident, $bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $atom:ident $(, $ring:literal)?) => {
        tiled!($args, bwd_data::tma, in_ty!($ty), $atom, $ty, $bm, $bn, $bk, $wm, $wn $(, $ring)?)
    };
    ($args:ident, BwdWeightTma, $ty:ident, $bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $atom:ident $(, $ring:literal)?) => {
        tiled!($args, bwd_weight::tma, out_ty!($ty), $atom, $ty, $bm, $bn, $bk, $wm, $wn $(, $ring)?)
    };
    ($args:ident, BwdDataRows, $ty:ident, $bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $atom:ident) => {
        tiled!($args, bwd_data::rows, in_ty!($ty), $atom, $ty, $bm, $bn, $bk, $wm, $wn)
    };
    // Stride 1 and the phase grids of strides are separate kernels.
    ($args:ident, BwdWeightTapShift, $($rest:tt)*) => { weight_shifts!($args, false, $($rest)*) };
    ($args:ident, BwdWeightTapShiftPhased, $($rest:tt)*) => { weight_shifts!($args, true, $($rest)*) };
    ($args:ident, BwdDataDirect, $ty:ident, $($rest:tt)*) => {
        $crate::conv::bwd_data::direct::kernel::<in_ty!($ty), in_ty!($ty)>($args)
    };
    ($args:ident, BwdDataDepthwise, $ty:ident, $($rest:tt)*) => {
        $crate::conv::bwd_data::depthwise::kernel::<in_ty!($ty), in_ty!($ty)>($args)
    };
    ($args:ident, BwdWeightDirect, $ty:ident, $($rest:tt)*) => {
        $crate::conv::bwd_weight::direct::kernel::<in_ty!($ty), out_ty!($ty)>($args)
    };
    ($args:ident, BwdWeightDepthwise, $ty:ident, $($rest:tt)*) => { $crate::conv::bwd_weight::depthwise::kernel::<in_ty!($ty), out_ty!($ty)>($args) };
    ($args:ident, BwdWeightUnfold, $ty:ident, $($rest:tt)*) => { $crate::conv::bwd_weight::unfold::kernel::<in_ty!($ty)>($args) };
    ($args:ident, Smoke, $ty:ident, $bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $atom:ident) => {
        $crate::kernels::smoke::run::<atom_ty!($atom, F16)>($args)
    };
}

#[cfg(any(target_arch = "amdgpu", target_arch = "nvptx64"))]
mod gpu {
    use convgrad_types::params::ConvArgs;

    macro_rules! on_family {
        (Cdna, $i:item) => { #[cfg(convgrad_family = "cdna")] $i };
        // gfx950 builds (CDNA4) are CDNA builds with the double-k MFMA kernels.
        (Cdna4, $i:item) => { #[cfg(convgrad_cdna4)] $i };
        (Rdna3, $i:item) => { #[cfg(convgrad_family = "rdna3")] $i };
        (Rdna4, $i:item) => { #[cfg(convgrad_family = "rdna4")] $i };
        (Nvidia, $i:item) => { #[cfg(convgrad_family = "nvidia")] $i };
        // Hopper builds (sm_90a) are NVIDIA builds with the warpgroup kernels.
        (Hopper, $i:item) => { #[cfg(convgrad_wgmma)] $i };
    }

    macro_rules! gpu_kernel {
        // The instance's tile and atom (and ring, where it sets one) go on
        // as one token tree: a depth-0 variable may repeat with `$fam`.
        ($name:ident, [$($fam:ident),*], $op:ident, $($rest:tt)*) => {
            gpu_kernel!(@fams $name, $op, ($($rest)*), $($fam),*);
        };
        (@fams $name:ident, $op:ident, $rest:tt, $($fam:ident),*) => {
            $(
                on_family!($fam,
                    /// Kernel entry point (see `convgrad_types::instance::INSTANCES`).
                    #[unsafe(no_mangle)]
                    pub unsafe extern "gpu-kernel" fn $name(args: *const ConvArgs) {
                        unsafe { gpu_kernel!(@body args, $op, $rest) }
                    }
                );
            )*
        };
        (@body $args:ident, $op:ident, ($($rest:tt)*)) => {
            body!($args, $op, $($rest)*)
        };
    }

    convgrad_types::for_each_instance!(gpu_kernel);
}

/// Host (emulator) registry of the same kernels.
#[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
pub mod host {
    use convgrad_emu::KernelEntry;
    use convgrad_types::instance::{Family, INSTANCES};
    use convgrad_types::params::ConvArgs;

    macro_rules! host_match {
        ($family:ident, $want:ident, $found:ident, $name:ident, [$($fam:ident),*], $op:ident, $($rest:tt)*) => {
            if $found.is_none() && stringify!($name) == $want && [$(Family::$fam),*].iter().any(|&f| $family.runs(f)) {
                fn entry(p: *const u8) {
                    let args = p as *const ConvArgs;
                    unsafe { body!(args, $op, $($rest)*) }
                }
                $found = Some(entry as KernelEntry);
            }
        };
    }

    /// The host build of kernel `name` for `family`, if that family has it.
    pub fn find(family: Family, name: &str) -> Option<KernelEntry> {
        let mut found: Option<KernelEntry> = None;
        convgrad_types::for_each_instance!(host_match, family, name, found);
        found
    }

    /// Names of the kernels `family` has.
    pub fn names(family: Family) -> impl Iterator<Item = &'static str> {
        INSTANCES.iter().filter(move |i| i.on(family)).map(|i| i.name)
    }
}
