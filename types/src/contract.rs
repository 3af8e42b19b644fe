//! Constants of the host-device contract: the kernels are spelled out for
//! them (each kernel module asserts the values it unrolls for) and the host
//! sizes grids and chooses kernels by them. Neither side restates them.

/// The direct backward-data kernel (and the lanes both direct kernels share).
pub mod bwd_data_direct {
    /// Lanes per thread on the channel-vector path of both direct kernels (or
    /// half as many, the host's choice): four, not a 16-byte vector of a
    /// 16-bit type, keeps each thread within 128 registers (at eight both
    /// kernels spilled on sm_90).
    pub const LANES: usize = 4;
    /// Pixels per thread on the channel-vector path: consecutive positions of
    /// one stride-slice row.
    pub const RUN: usize = 8;
    /// Widest shift between the taps one window serves: 2 covers 3-wide
    /// filters at stride 1 and 5-wide at stride 2.
    pub const HALO: usize = 2;
    /// `k`s per `dy` load on the channel-lane path where `dy`'s `k` run is
    /// contiguous (`vec_mode::DY_KVEC`).
    pub const KV: usize = 4;
}

/// The GEMM kernels' epilogue.
pub mod gemm_epilogue {
    /// Columns per run of the result (16-byte vectors of a 16-bit type): a
    /// run never straddles two channel rows of a y-folded backward-data
    /// problem, whose rows therefore hold a multiple of it.
    pub const RUN: usize = 8;
}

/// The depthwise column-strip backward-data kernel.
pub mod depthwise_strips {
    /// Groups per thread: half the direct kernel's lanes, so that three rows
    /// of accumulators, the weights and a window stay in registers.
    pub const VW: usize = super::bwd_data_direct::LANES / 2;
    /// Rows in flight: taps per stride class along y at most.
    pub const DEPTH: usize = 3;
}

/// The row-segment backward-data kernel (`bwdd_rows_*`).
pub mod bwd_data_rows {
    /// Pixels per image row of a tile: one warpgroup instruction's M.
    pub const SEG: usize = 64;
}

/// The direct backward-weight kernel.
pub mod bwd_weight_direct {
    /// Filter taps one thread accumulates on the channel-vector path (one row
    /// of a 3-wide filter): few accumulators keep a thread near 64 registers.
    pub const TAP_BLOCK: usize = 3;
    /// Output pixels per segment on the row path.
    pub const SEG: usize = 8;
}

/// The depthwise backward-weight kernel (filter rows with a sliding window).
pub mod bwd_weight_depthwise {
    /// Widest filter row (taps along x) it accumulates.
    pub const MAX_F: usize = 7;
    /// Output pixels per chunk on the sliding-window path (stride 1 or 2,
    /// dilation 1 along x): the unrolled step whose window is carried on.
    pub const CHUNK: usize = 4;
    /// Channels per thread (4 lanes; half as many where the groups are no
    /// multiple of 4).
    pub const LANES: usize = 4;
    /// Output pixels per chunk for a stride and dilation along x: [`CHUNK`]
    /// on the sliding-window path, else one (any stride and dilation).
    pub const fn chunk_pixels(stride: u32, dilation: u32) -> u32 {
        if dilation == 1 && (stride == 1 || stride == 2) { CHUNK as u32 } else { 1 }
    }
}
