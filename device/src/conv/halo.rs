//! The padded pixel grid of the tap-shift kernel ([`super::bwd_data_halo`])
//! and the copies that stage it in LDS.
//!
//! Images (`(n, z)` batch-major, a 1-tall z filter) are stacked on a grid of
//! `Hp` rows of `Wp` columns each (`div_halo`), padded by the filter's
//! dilated extent minus one per dim, so that at stride 1 every filter tap
//! `(y, x)` is one row shift `y * d * Wp + x * d` of the flattened grid. A
//! workgroup's tile is [`ConvArgs::halo_rows`] grid image rows.

use super::offset;
use crate::arch;
use crate::elem::Elem;
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
        Grid { row0: tile * a.halo_rows, images: a.n * a.input[0] }
    }

    /// Flat grid row `m` of the tile -> `(n, z, image row, column)`, or none
    /// past the images.
    #[inline(always)]
    pub fn at(&self, a: &ConvArgs, m: u32) -> Option<[u32; 4]> {
        let (dr, x) = a.div_halo[1].divmod(m);
        let (b, r) = a.div_halo[0].divmod(self.row0 + dr);
        let (n, z) = a.div_in[0].divmod(b);
        (b < self.images).then_some([n, z, r, x])
    }

    /// Largest tap shift in flat rows.
    #[inline(always)]
    pub fn max_shift(a: &ConvArgs) -> u32 {
        (a.filter[1] - 1) * a.dilation[1] * a.div_halo[1].div + (a.filter[2] - 1) * a.dilation[2]
    }

    /// Row shift of tap `(y, x)`.
    #[inline(always)]
    pub fn shift(a: &ConvArgs, y: usize, x: usize) -> usize {
        y * a.dilation[1] as usize * a.div_halo[1].div as usize + x * a.dilation[2] as usize
    }
}

/// A tensor staged on the grid: channels-last runs of `CH` (padded) per
/// group, `WN` groups from `g0`, `LANES` at a time.
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
    /// Copies flat grid rows `0 .. rows` of the tile into LDS rows `ld`
    /// elements long at byte offset `base`: row `m` holds the tensor at
    /// `pixel(m)` (`[n, z, y, x]`), zeros where it is none, and past `chans`
    /// and `groups`. 16-byte vectors along the channels.
    ///
    /// # Safety
    /// The pixels `pixel` yields lie in the tensor; the rows fit the LDS;
    /// `T::LANES` divides `chans` and the tensor's other strides.
    #[inline(always)]
    pub unsafe fn copy<const CH: usize, const WN: usize>(
        &self,
        rows: usize,
        ld: usize,
        base: usize,
        threads: usize,
        pixel: impl Fn(u32) -> Option<[u32; 4]>,
    ) {
        let per_group = CH / T::LANES;
        let per_row = WN * per_group;
        let mut idx = arch::thread_id() as usize;
        while idx < rows * per_row {
            let (m, v) = (idx / per_row, idx % per_row);
            let (gl, ch) = ((v / per_group) as u32, ((v % per_group) * T::LANES) as u32);
            let g = self.g0 + gl;
            let src = pixel(m as u32).filter(|_| (g < self.groups) & (ch < self.chans)).map(|[n, z, y, x]| {
                let o = offset(&self.s, [g, n, ch, z, y, x]);
                self.p.wrapping_add(o) as *const T::V16
            });
            unsafe { arch::cp_async16(base + (m * ld + v * T::LANES) * T::BYTES, src) };
            idx += threads;
        }
    }
}
