//! How backward-weight splits its reduction (split-K), and the column
//! blocking of the direct kernels' thread columns. A leaf.

use convgrad_types::DescError;

/// How to split the reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitK {
    /// Chosen from the problem and the device's compute units (CK's rule).
    Auto,
    /// This many k-batches, 1 to [`MAX_SPLIT_K`] (0 or more is an error
    /// naming `split_k`); fewer run where the reduction has fewer K tiles
    /// or the kernel family caps its split (`BwdWeightPlan::k_batch` says
    /// how many run).
    Fixed(u32),
}

/// The largest fixed split-K: k-batches run along grid z, at most 65535.
pub const MAX_SPLIT_K: u32 = 65535;

/// Refuses a fixed split of 0 or past [`MAX_SPLIT_K`], naming `split_k`.
pub fn check_split(split: SplitK) -> Result<(), DescError> {
    match split {
        SplitK::Fixed(0) => Err(DescError::TooSmall { field: "split_k", value: 0, min: 1 }),
        SplitK::Fixed(n) if n > MAX_SPLIT_K => {
            Err(DescError::TooLarge { field: "split_k", value: n as u64, max: MAX_SPLIT_K as u64 })
        }
        _ => Ok(()),
    }
}

/// `(k_batch, tiles per batch)` of the tap-shift kernel for `tiles` row
/// tiles and `sets` group sets: one round of `per_cu` workgroups per compute
/// unit (a second, partial round costs as much as a whole one), or the
/// requested split.
pub(crate) fn tap_shift_split(tiles: usize, sets: usize, split: SplitK, per_cu: u32, compute_units: u32) -> (u32, u32) {
    let want = match split {
        SplitK::Auto => (per_cu as usize * compute_units.max(1) as usize / sets.max(1)).max(1),
        SplitK::Fixed(n) => n as usize,
    };
    let per = tiles.div_ceil(want.clamp(1, tiles.max(1)));
    (tiles.div_ceil(per).max(1) as u32, per as u32)
}

/// The direct kernel's column blocking for `cols` columns: `(columns per
/// workgroup, streams per workgroup, workgroups along the columns)`, with
/// the most of a workgroup's 256 threads busy (fewer blocks on a tie): 108
/// columns run as 3 blocks of 36 columns times 7 streams (252 threads), not
/// one of 108 times 2 (216); 384 as 3 of 128 times 2, not 256 + 128.
pub(crate) fn column_blocks(cols: u64) -> (u64, u64, u64) {
    let mut best = (0, 0, 0);
    let mut best_busy = 0;
    // Up to 8 blocks more than the fewest: enough to reach 98% busy for the
    // column counts of depthwise and 4-channel groups.
    for blocks in 1..=cols.div_ceil(256) + 8 {
        let cb = cols.div_ceil(blocks);
        if cb > 256 {
            continue;
        }
        let (streams, nb) = (256 / cb, cols.div_ceil(cb));
        // Busy threads per mille of the workgroups'.
        let busy = cols * streams * 1000 / (nb * 256);
        if busy > best_busy {
            (best, best_busy) = ((cb, streams, nb), busy);
        }
    }
    best
}
