//! Convolution ops as thin problem-to-GEMM mappings onto [`crate::gemm`],
//! plus the direct and tap-shift kernels for tiny per-group GEMMs.
//!
//! Each kernel module depends on the shared modules (this one: pixel
//! geometry, [`ChannelRows`]; [`epilogue`], [`filter_cols`], [`lanes`],
//! [`residues`], [`tap_grid`], [`tap_window`]) and on [`crate::gemm`], never on
//! another kernel.

// Kernel families: each kernel imports the shared modules below, never another kernel.
pub mod bwd_data;
pub mod bwd_weight;

// Shared by the kernels.
pub mod epilogue;
pub mod filter_cols;
pub mod pixel_blocks;
pub mod lanes;
pub mod residues;
pub mod row_run;
pub mod tap_grid;
pub mod tap_window;

use crate::arch;
use crate::elem::Elem;
use crate::gemm::Operand;
use convgrad_types::params::ConvArgs;

/// Whether `lanes` consecutive elements along `axis` from a multiple of
/// `lanes` are one aligned vector: unit stride there, every other stride a
/// multiple of `lanes`, and the axis length too (device buffers are at least
/// 16-byte aligned).
#[inline(always)]
pub fn vector_axis(s: &[u32; 6], axis: usize, len: u32, lanes: u32) -> bool {
    let mut ok = s[axis] == 1 && len.is_multiple_of(lanes);
    for (i, &st) in s.iter().enumerate() {
        if i != axis {
            ok &= st.is_multiple_of(lanes);
        }
    }
    ok
}

/// Splits a flat output-pixel index of batch-major `(n, do, ho, wo)` order.
#[inline(always)]
pub fn split_out_pixel(a: &ConvArgs, idx: u32) -> (u32, [u32; 3]) {
    let (t, wo) = a.div_out[2].divmod(idx);
    let (t, ho) = a.div_out[1].divmod(t);
    let (n, dd) = a.div_out[0].divmod(t);
    (n, [dd, ho, wo])
}

/// The input position of output pixel `o`'s window origin, `o * stride -
/// lpad` per dim, wrapping below zero (so one unsigned compare against the
/// input size checks both pads).
#[inline(always)]
pub fn window_origin(a: &ConvArgs, o: [u32; 3]) -> [u32; 3] {
    let (s, p) = (&a.stride, &a.lpad);
    [(o[0] * s[0]).wrapping_sub(p[0]), (o[1] * s[1]).wrapping_sub(p[1]), (o[2] * s[2]).wrapping_sub(p[2])]
}

/// The channels of `w` that backward-data's vector loads may read: `C`,
/// or up to a whole vector past it where `w` is a channel-packed copy
/// ([`flags::W_PADDED`](convgrad_types::params::flags::W_PADDED)).
#[inline(always)]
pub fn w_vec_channels(a: &ConvArgs, lanes: u32) -> u32 {
    if a.flags & convgrad_types::params::flags::W_PADDED != 0 { a.c.next_multiple_of(lanes) } else { a.c }
}

/// Whether pixels `(n, d, h, w)` of `n` images of spatial size `dims` lie
/// back to back under strides `s` (`n` at `s[1]`, `d, h, w` at `s[3..6]`):
/// then the batch-major pixel index `i` sits at `i * s[5]`, with no
/// division. Axes of length 1 may have any stride (their index is 0).
#[inline(always)]
pub fn pixels_flat(s: &[u32; 6], dims: &[u32; 3], n: u32) -> bool {
    let mut unit = s[5] as u64 * dims[2] as u64;
    let mut ok = true;
    for (len, st) in [(dims[1], s[4]), (dims[0], s[3]), (n, s[1])] {
        ok &= len == 1 || st as u64 == unit;
        unit *= len as u64;
    }
    ok
}

/// Moves `(n, [do, ho, wo])` to the next output pixel of batch-major order,
/// with carries instead of [`split_out_pixel`]'s divisions.
#[inline(always)]
pub fn next_out_pixel(a: &ConvArgs, n: &mut u32, o: &mut [u32; 3]) {
    o[2] += 1;
    if o[2] == a.output[2] {
        o[2] = 0;
        o[1] += 1;
        if o[1] == a.output[1] {
            o[1] = 0;
            next_out_depth(a, n, &mut o[0]);
        }
    }
}

/// Steps output depth `oz` on, carrying into image `n` past the last.
#[inline(always)]
pub fn next_out_depth(a: &ConvArgs, n: &mut u32, oz: &mut u32) {
    *oz += 1;
    if *oz == a.output[0] {
        *oz = 0;
        *n += 1;
    }
}

/// Offset of spatial position `v` (`[d, h, w]`) under the spatial strides
/// `s[3..6]`, wrapping: `v` may be a shifted or padded position whose
/// offset only makes sense added to another (a row's plus a column's).
#[inline(always)]
pub fn spatial_off(v: [u32; 3], s: &[u32; 6]) -> u32 {
    v[0].wrapping_mul(s[3]).wrapping_add(v[1].wrapping_mul(s[4])).wrapping_add(v[2].wrapping_mul(s[5]))
}

/// Copies filter element `w[o]` (or, with `vec`, the 16-byte vector there)
/// into LDS at byte `at`, zeros where not `inside`: vectors asynchronously
/// (`cp.async` where the hardware has it), elements by a load and a store.
/// The tap-shift kernels stage their flipped filters with it.
///
/// # Safety
/// Where `inside`, `w[o ..]` is readable (a whole vector with `vec`); `at`
/// lies in the workgroup's LDS.
#[inline(always)]
pub unsafe fn copy_filter<T: Elem>(w: *const T, o: usize, inside: bool, vec: bool, at: usize) {
    if vec {
        let src = inside.then(|| w.wrapping_add(o) as *const T::V16);
        unsafe { arch::cp_async16(at, src) };
    } else {
        let v = if inside { unsafe { arch::ld(w, o) } } else { Default::default() };
        unsafe { arch::lds_st(at, v) };
    }
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

/// How a reduction index maps to an element offset, with a context the main
/// loop can advance (a plain `Fn(k) -> offset` recomputes it every time).
pub trait ColMap {
    /// The context of one reduction index.
    type C: Copy;
    /// Context of reduction index `k`.
    fn at(&self, k: u32) -> Self::C;
    /// Context of `k_next = k + delta` from `c`, the context of `k`.
    #[inline(always)]
    fn next(&self, c: &Self::C, k_next: u32, delta: u32) -> Self::C {
        let _ = (c, delta);
        self.at(k_next)
    }
    /// Element offset of a context.
    fn off(c: &Self::C) -> u32;
}

impl<F: Fn(u32) -> u32> ColMap for F {
    type C = u32;
    #[inline(always)]
    fn at(&self, k: u32) -> u32 {
        self(k)
    }
    #[inline(always)]
    fn off(c: &u32) -> u32 {
        *c
    }
}

/// A GEMM operand whose rows are the channels of one tensor (axis 2: `dY`'s
/// K in backward-weight, `W`'s C in backward-data) and whose reduction index
/// maps to an element offset through `col`.
pub struct ChannelRows<'a, T, F> {
    /// Element pointer.
    pub p: *const T,
    /// Offset of the group.
    pub g_off: u32,
    /// Tensor strides (canonical axes).
    pub strides: &'a [u32; 6],
    /// Number of channels (rows).
    pub rows: u32,
    /// Rows its vector loads may read (`rows`, or more where the tensor is
    /// a channel-packed copy padded with zeros).
    pub vec_rows: u32,
    /// Offset of reduction index `k`.
    pub col: F,
}

/// Row context of [`ChannelRows`]: the channel's offset, or none past the channels.
#[derive(Clone, Copy)]
pub struct ChannelRow(Option<u32>);

impl<T: Elem, F: ColMap> Operand for ChannelRows<'_, T, F> {
    type T = T;
    type Row = ChannelRow;
    type Col = F::C;
    #[inline(always)]
    fn rows_fast(&self) -> bool {
        self.strides[2] == 1
    }
    #[inline(always)]
    fn vec_ok(&self) -> bool {
        vector_axis(self.strides, 2, self.vec_rows, T::LANES as u32)
    }
    #[inline(always)]
    fn row(&self, row: u32) -> ChannelRow {
        ChannelRow((row < self.rows).then(|| self.g_off + row * self.strides[2]))
    }
    #[inline(always)]
    fn col(&self, k: u32) -> F::C {
        self.col.at(k)
    }
    #[inline(always)]
    fn col_next(&self, c: &F::C, k_next: u32, delta: u32) -> F::C {
        self.col.next(c, k_next, delta)
    }
    #[inline(always)]
    unsafe fn load(&self, r: &ChannelRow, c: &F::C) -> T {
        match r.0 {
            Some(o) => unsafe { arch::ld(self.p, (o + F::off(c)) as usize) },
            None => T::default(),
        }
    }
    #[inline(always)]
    fn vec_src(&self, r: &ChannelRow, c: &F::C) -> Option<*const T::V16> {
        r.0.map(|o| self.p.wrapping_add((o + F::off(c)) as usize) as *const T::V16)
    }
}
