//! Convolution ops as thin problem-to-GEMM mappings onto [`crate::gemm`],
//! plus the direct and tap-shift kernels for tiny per-group GEMMs.
//!
//! Each kernel module depends on the shared modules (this one: epilogue
//! stores, pixel geometry, [`ChannelRows`]; [`filter_cols`], [`halo`],
//! [`lanes`], [`residues`], [`tap_window`]) and on [`crate::gemm`], never on
//! another kernel.

// Kernels: each imports the shared modules below, never another kernel.
pub mod bwd_data;
pub mod bwd_data_direct;
pub mod bwd_data_dw;
pub mod bwd_data_halo;
pub mod bwd_weight;
pub mod bwd_weight_direct;
pub mod bwd_weight_halo;

// Shared by the kernels.
pub mod filter_cols;
pub mod halo;
pub mod lanes;
pub mod residues;
pub mod tap_window;

use crate::arch;
use crate::elem::Elem;
use crate::gemm::Operand;
use crate::gemm::block::RUN;
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

/// Writes `v` through the argument block's epilogue into the result tensor
/// `out` (strides `s`) at canonical index `idx`; the `D` tensors are read at
/// the same index with their own (possibly broadcast) strides. A `D` may be
/// the result tensor itself: each element is read before its only write.
///
/// # Safety
/// `out` and the `D` pointers must be valid for the index.
#[inline(always)]
pub unsafe fn store_result<Out: Elem>(a: &ConvArgs, out: u64, s: &[u32; 6], idx: [u32; 6], v: f32) {
    let v = a.epi.apply(v, |d| unsafe { arch::ld(a.d[d] as *const Out, offset(&a.d_strides[d], idx)).to_f32() });
    unsafe { arch::st(out as *mut Out, offset(s, idx), Out::from_f32(v)) }
}

/// Writes a run of `min(len, RUN)` consecutive elements along
/// canonical axis `AXIS`, from index `idx`, through the epilogue. A whole run
/// that is contiguous and aligned in the result goes out as 16-byte vectors,
/// its `D` values read by each `D`'s own strides (vectors, one broadcast
/// scalar, or element by element); any other run element by element
/// ([`store_result`]).
///
/// # Safety
/// As [`store_result`], for every element of the run.
#[inline(always)]
pub unsafe fn store_run<Out: Elem, const AXIS: usize>(
    a: &ConvArgs,
    out: u64,
    s: &[u32; 6],
    idx: [u32; 6],
    len: u32,
    v: [f32; RUN],
    bias: &mut BiasRun,
) {
    unsafe { store_run_at::<Out, AXIS>(a, out, s, offset(s, idx), || idx, len, v, bias) }
}

/// [`store_run`] with the run's offset `o` in `out` already known; `idx()`
/// (the run's canonical index) is computed only where a `D` tensor or an
/// element-wise store needs it.
///
/// # Safety
/// As [`store_run`]; `o` must be `offset(s, idx())`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn store_run_at<Out: Elem, const AXIS: usize>(
    a: &ConvArgs,
    out: u64,
    s: &[u32; 6],
    o: usize,
    idx: impl Fn() -> [u32; 6],
    len: u32,
    v: [f32; RUN],
    bias: &mut BiasRun,
) {
    let len = len.min(RUN as u32);
    if len as usize == RUN && s[AXIS] == 1 && o.is_multiple_of(RUN) {
        let r = a.epi.apply_run(v, |d| {
            let load = || unsafe { load_run::<Out, AXIS>(a.d[d] as *const Out, &a.d_strides[d], idx()) };
            if d != 0 || !bias.applies::<AXIS>(&a.d_strides[0]) {
                return load();
            }
            let i = idx();
            let key = [i[0], i[AXIS]];
            if bias.key != key {
                (bias.key, bias.v) = (key, load());
            }
            bias.v
        });
        unsafe { st_vectors::<Out>(out as *mut Out, o, r) };
        return;
    }
    let idx = idx();
    for_each_in_run(v, len, |e, x| {
        let mut i = idx;
        i[AXIS] += e;
        unsafe { store_result::<Out>(a, out, s, i, x) };
    });
}

/// `D0`'s run at one `(group, channel run)`, kept across a thread's calls of
/// [`store_run`] when `D0` varies along nothing else (a per-channel bias): the
/// epilogue hands each thread the same channel run row after row
/// ([`crate::gemm::block::store_tile`]), so the bias is loaded once instead
/// of once per row. On its own it did not move CK example 38 on the H200
/// (fused 0.374 -> 0.373 ms): the cost there was the per-element opcode
/// dispatch ([`convgrad_types::epilogue::EpiStep::apply_run`]). It saves a
/// dependent load and the index arithmetic per run.
#[derive(Clone, Copy)]
pub struct BiasRun {
    key: [u32; 2],
    v: [f32; RUN],
}

impl BiasRun {
    /// Nothing loaded yet.
    #[inline(always)]
    pub fn new() -> BiasRun {
        BiasRun { key: [u32::MAX; 2], v: [0.0; RUN] }
    }
    /// Whether `D0` (strides `ds`) depends on the group and the `AXIS` index only.
    #[inline(always)]
    fn applies<const AXIS: usize>(&self, ds: &[u32; 6]) -> bool {
        let mut only = true;
        for (i, &st) in ds.iter().enumerate() {
            only &= i == 0 || i == AXIS || st == 0;
        }
        only
    }
}

impl Default for BiasRun {
    fn default() -> Self {
        Self::new()
    }
}

/// Calls `f(e, v[e])` for `e < min(len, RUN)`. The values shift through
/// registers: a rolled loop indexing `v` at run time would put it in scratch.
#[inline(always)]
pub fn for_each_in_run(v: [f32; RUN], len: u32, mut f: impl FnMut(u32, f32)) {
    let mut cur = v;
    for e in 0..(len as usize).min(RUN) as u32 {
        f(e, cur[0]);
        cur = core::array::from_fn(|i| if i + 1 < RUN { cur[i + 1] } else { 0.0 });
    }
}

/// A `D` tensor's values at a run along `AXIS` from `idx`.
#[inline(always)]
unsafe fn load_run<T: Elem, const AXIS: usize>(p: *const T, ds: &[u32; 6], idx: [u32; 6]) -> [f32; RUN] {
    let o = offset(ds, idx);
    match ds[AXIS] {
        1 if o.is_multiple_of(RUN) => {
            let mut out = [0.0; RUN];
            let mut e = 0;
            while e < RUN {
                let v: T::V16 = unsafe { arch::ld(p.wrapping_add(o + e) as *const T::V16, 0) };
                for (i, x) in v.as_ref().iter().enumerate() {
                    out[e + i] = x.to_f32();
                }
                e += T::LANES;
            }
            out
        }
        0 => [unsafe { arch::ld(p, o) }.to_f32(); RUN],
        st => core::array::from_fn(|e| unsafe { arch::ld(p, o + e * st as usize) }.to_f32()),
    }
}

/// Stores a run as 16-byte vectors at element offset `o` (a multiple of [`RUN`]).
#[inline(always)]
unsafe fn st_vectors<T: Elem>(p: *mut T, o: usize, v: [f32; RUN]) {
    let mut e = 0;
    while e < RUN {
        let mut w = T::V16::default();
        for (i, x) in w.as_mut().iter_mut().enumerate() {
            *x = T::from_f32(v[e + i]);
        }
        unsafe { arch::st(p.wrapping_add(o + e) as *mut T::V16, 0, w) };
        e += T::LANES;
    }
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
            o[0] += 1;
            if o[0] == a.output[0] {
                o[0] = 0;
                *n += 1;
            }
        }
    }
}

/// Offset of spatial position `v` (`[d, h, w]`) under the spatial strides
/// `s[3..6]`, wrapping: `v` may be a shifted or padded position whose
/// offset only makes sense added to another (a row's plus a column's).
#[inline(always)]
pub fn spatial_off(v: [u32; 3], s: &[u32; 6]) -> u32 {
    v[0].wrapping_mul(s[3]).wrapping_add(v[1].wrapping_mul(s[4])).wrapping_add(v[2].wrapping_mul(s[5]))
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
        vector_axis(self.strides, 2, self.rows, T::LANES as u32)
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
