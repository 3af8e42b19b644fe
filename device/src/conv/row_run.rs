//! A run of output pixels along one row, as the backward-weight kernels that
//! slide an `x` window down a filter row take it (the direct kernel's row
//! segments, the depthwise kernel's chunks).

/// A run of `dY` pixels along x with its filter row inside the input.
pub(crate) struct RowRun {
    /// Offset of the run's first `dY` pixel.
    pub y_px: u32,
    /// Offset of the filter row's `x` row (column 0).
    pub x_row: u32,
    /// Input column of window entry 0 (wrapping below zero).
    pub ix0: u32,
    /// Pixels in the run (1 to the kernel's run length).
    pub len: u32,
}
