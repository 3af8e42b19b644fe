//! The padded pixel grid of the tap-shift kernel ([`super::bwd_data::tap_shift`])
//! and the copies that stage it in LDS.
//!
//! Images (`(n, z)` batch-major, a 1-tall z filter) are stacked on a grid of
//! `Hp` rows of `Wp` columns each (`div_halo`), padded by the filter's
//! dilated extent minus one per dim, so that at stride 1 every filter tap
//! `(y, x)` is one row shift `y * d * Wp + x * d` of the flattened grid. A
//! workgroup's tile is [`TapShiftPart::halo_rows`] grid image rows.
//!
//! At stride `s` (backward-weight) the result grid is dY's and `X` is staged
//! as phase grids: phase `(p, q)` holds pixel `(s*r + p - pad, s*c + q - pad)`
//! at grid position `(r, c)`. Tap `(y, x)`, with `y * d = s * qy + p` and
//! `x * d = s * qx + q`, reads phase `(p, q)` at the row shift `qy * Wp + qx`,
//! so every tap is again one shift, of a quarter-size grid at stride 2. The
//! grid is then padded by `(Y-1) * d / s` rows and `(X-1) * d / s` columns.
//!
//! [`TapShiftPart::halo_rows`]: convgrad_types::params::TapShiftPart::halo_rows

use crate::arch;
use crate::elem::Elem;
use crate::gemm::Tile;
use convgrad_types::params::ConvArgs;

/// A workgroup's place on the grid.
#[derive(Clone, Copy)]
pub struct Grid {
    /// First grid image row of the tile (over the stacked images).
    pub row0: u32,
    /// Images (`N * D`).
    pub images: u32,
}

impl Grid {
    /// The tile of `halo_rows` grid image rows numbered `tile`.
    #[inline(always)]
    pub fn tile(a: &ConvArgs, tile: u32) -> Grid {
        Grid { row0: tile * a.tap_shift.halo_rows, images: a.n * a.input[0] }
    }

    /// Flat grid row `m` of the tile -> `(n, z, image row, column)`, or none
    /// past the images.
    #[inline(always)]
    pub fn at(&self, a: &ConvArgs, m: u32) -> Option<[u32; 4]> {
        let (dr, x) = a.tap_shift.div_halo[1].divmod(m);
        let (b, r) = a.tap_shift.div_halo[0].divmod(self.row0 + dr);
        let (n, z) = a.div_in[0].divmod(b);
        (b < self.images).then_some([n, z, r, x])
    }

    /// Largest tap shift in flat rows.
    #[inline(always)]
    pub fn max_shift(a: &ConvArgs) -> u32 {
        let [y, x] = [1, 2].map(|d| steps(a, d, (a.filter[d] - 1) * a.dilation[d]));
        y * a.tap_shift.div_halo[1].div + x
    }

    /// Row shift of tap `(y, x)` (in its phase grid at a stride).
    #[inline(always)]
    pub fn shift(a: &ConvArgs, y: usize, x: usize) -> usize {
        let [y, x] = [(1, y), (2, x)].map(|(d, t)| steps(a, d, t as u32 * a.dilation[d]) as usize);
        y * a.tap_shift.div_halo[1].div as usize + x
    }

    /// Phase grid `p * Sx + q` that tap `(y, x)` reads (module docs; 0 at stride 1).
    #[inline(always)]
    pub fn phase(a: &ConvArgs, y: usize, x: usize) -> u32 {
        let [p, q] = [(1, y), (2, x)].map(|(d, t)| t as u32 * a.dilation[d] - steps(a, d, t as u32 * a.dilation[d]) * a.stride[d]);
        p * a.stride[2] + q
    }

    /// The window of phase grid `phase` of `X` over grid rows `0 .. limit`.
    #[inline(always)]
    pub fn x_window(a: &ConvArgs, phase: u32, limit: u32) -> Window {
        let (p, q) = (phase / a.stride[2], phase % a.stride[2]);
        let add = [p.wrapping_sub(a.lpad[1]), q.wrapping_sub(a.lpad[2])];
        Window { step: [a.stride[1], a.stride[2]], add, hw: [a.input[1], a.input[2]], limit }
    }
}

/// Whole grid steps of a dilated tap offset `o` along dim `d` (`o / stride`;
/// no division at stride 1, the tap-shift kernels' common case).
#[inline(always)]
fn steps(a: &ConvArgs, d: usize, o: u32) -> u32 {
    if a.stride[d] == 1 { o } else { o / a.stride[d] }
}

/// Which tensor pixel a grid row holds: grid position `(r, c)` of an image
/// holds pixel `(r * step[0] + add[0], c * step[1] + add[1])` (wrapping, so
/// a negative shift goes out of range), zero outside `[0, hw[0]) x [0,
/// hw[1])` and from flat tile row `limit` on.
#[derive(Clone, Copy)]
pub struct Window {
    /// Grid step to pixel step (the stride of a phase grid, else 1).
    pub step: [u32; 2],
    /// Shift from grid position to tensor pixel (rows, columns).
    pub add: [u32; 2],
    /// Tensor rows and columns.
    pub hw: [u32; 2],
    /// First flat tile row that is zeroed.
    pub limit: u32,
}

/// A tensor staged on the grid: channels-last runs of `CH` (padded) per
/// group, the tile's `WN` groups from `g0`, `LANES` at a time.
pub struct Staged<T> {
    /// Element pointer.
    pub p: *const T,
    /// Canonical strides.
    pub s: [u32; 6],
    /// Channels per group (the rest of `CH` is zeroed).
    pub chans: u32,
    /// First group.
    pub g0: u32,
    /// Groups.
    pub groups: u32,
}

impl<T: Elem> Staged<T> {
    /// Copies flat grid rows `0 .. rows` of tile `grid` into LDS rows `ld`
    /// elements long at byte offset `base`, row `m` holding the pixel
    /// [`Window`] `w` gives, zeros where none, and past `chans` and `groups`.
    /// 16-byte vectors along the channels, `padded` (`CH`, a constant of the
    /// tile `Tl`) per group, for the tile's `WN` groups; a thread keeps one
    /// vector slot and walks its rows `threads / slots` apart by carries (no
    /// divisions per row: they were most of the copy's instructions).
    ///
    /// # Safety
    /// The pixels lie in the tensor, of fewer than 2^31 elements; the rows fit the LDS; `T::LANES`
    /// divides `chans` and the tensor's other strides; `threads` (the
    /// workgroup's) is a multiple of the `WN * CH / T::LANES` vector slots.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn copy<Tl: Tile>(
        &self,
        a: &ConvArgs,
        grid: &Grid,
        w: Window,
        padded: usize,
        rows: usize,
        ld: usize,
        base: usize,
        threads: usize,
    ) {
        let per_group = padded / T::LANES;
        let slots = Tl::WN * per_group;
        let tid = arch::thread_id() as usize;
        let (v, step) = (tid % slots, (threads / slots) as u32);
        let (g, ch) = (self.g0 + (v / per_group) as u32, ((v % per_group) * T::LANES) as u32);
        let s = &self.s;
        // 32-bit offsets: the host keeps the tap-shift kernels to tensors
        // of fewer than 2^31 elements (64-bit products cost several
        // instructions each on NVIDIA).
        let lane_off = g * s[0] + ch * s[2];
        let chans_ok = (g < self.groups) & (ch < self.chans);
        let (hp, wp) = (&a.tap_shift.div_halo[0], &a.tap_shift.div_halo[1]);
        let mut m = (tid / slots) as u32;
        let (dr, mut c) = wp.divmod(m);
        let (mut b, mut r) = hp.divmod(grid.row0 + dr);
        let (sdr, sc) = wp.divmod(step);
        while (m as usize) < rows {
            let (n, z) = a.div_in[0].divmod(b);
            let (y, x) = (r.wrapping_mul(w.step[0]).wrapping_add(w.add[0]), c.wrapping_mul(w.step[1]).wrapping_add(w.add[1]));
            let inside = chans_ok & (m < w.limit) & (b < grid.images) & (y < w.hw[0]) & (x < w.hw[1]);
            let src = inside.then(|| {
                let o = lane_off + n * s[1] + z * s[3] + y * s[4] + x * s[5];
                self.p.wrapping_add(o as usize) as *const T::V16
            });
            unsafe { arch::cp_async16(base + (m as usize * ld + v * T::LANES) * T::BYTES, src) };
            m += step;
            c += sc;
            r += sdr;
            if c >= wp.div {
                c -= wp.div;
                r += 1;
            }
            while r >= hp.div {
                r -= hp.div;
                b += 1;
            }
        }
    }
}
