//! Channel counts that fill no 16-byte vector, packed by a copy: the
//! pre-pass of both ops on odd channel counts (a detection head's `K` =
//! 255, ShuffleNet's 58 or 116). A leaf.
//!
//! With 255 channels of 2 bytes, a channels-last tensor's pixel rows start
//! 510 bytes apart: no row is 16-byte aligned, so the GEMMs gather the
//! operand element by element (0.27-0.31x cuDNN's time on YOLOv5's heads)
//! and no TMA map can describe it (its strides must be multiples of 16
//! bytes). The pack copies the tensor into the workspace, channels-last,
//! its channels zero padded to whole vectors (and rows past the source's
//! zeros, for a filter's `K`); the plan then runs the problem with the
//! padded channel count on the copies. The extra channels add zero
//! products: backward-data's sums are the same, and backward-weight's
//! stores skip the padding rows and columns of `dW` (`UnfoldPart::{rows,
//! valid}`). The copy is the small-C unfold kernel with no axis unfolded
//! (`convgrad_device::conv::bwd_weight::unfold`).

use super::error::OpError;
use super::launch::LaunchSpec;
use convgrad_types::instance::{self, Family, Op};
use convgrad_types::params::{ConvArgs, FastDiv, UnfoldPart};
use convgrad_types::{ConvProblem, DType, DescError, TensorDesc};

/// Elements of 2 bytes in a 16-byte vector.
pub(crate) const LANES: usize = 8;

/// Threads per workgroup of the copy (the kernel's).
const THREADS: usize = 256;

/// Whether `channels` of `dtype` fill no whole vectors: 2-byte types only
/// (f32's 4-lane vectors have their own narrow paths).
pub(crate) fn needs(dtype: DType, channels: usize) -> bool {
    dtype.bytes() == 2 && !channels.is_multiple_of(LANES)
}

/// `channels` rounded up to whole vectors.
pub(crate) fn padded(channels: usize) -> usize {
    channels.div_ceil(LANES) * LANES
}

/// One tensor copied into the workspace.
#[derive(Clone, Debug)]
pub struct PackCopy {
    /// The tensor copied (`dy`, `x` or `w`).
    pub tensor: &'static str,
    /// The copy's launch (`bwdw_unfold_*`).
    pub launch: LaunchSpec,
    /// Its argument block, addresses left zero.
    pub args_template: ConvArgs,
    /// The copy's descriptor, seen in the problem the kernels run.
    pub desc: TensorDesc,
    /// Byte offset of the copy in the workspace (a multiple of 16).
    pub offset: usize,
    /// Bytes of the copy (a multiple of 16).
    pub bytes: usize,
}

impl PackCopy {
    /// Device address of the copy in a workspace at `workspace`.
    pub fn at(&self, workspace: u64) -> u64 {
        workspace + self.offset as u64
    }
    /// The launch's argument block: it reads `src` and writes the copy.
    pub fn args(&self, src: u64, workspace: u64) -> ConvArgs {
        ConvArgs { x: src, w: self.at(workspace), ..self.args_template }
    }
}

/// Plans the copy of `src` (canonical axes `[G, rows, channels, d, h, w]`,
/// `G` = 1) into a packed channels-last `[rows_to][d][h][w][channels']`
/// at byte `offset` of the workspace: `channels'` the channels rounded up
/// to whole vectors, channels and rows past the source's zeros. Its
/// descriptor keeps `channels` (of the problem the kernels run) where
/// `keep_channels` says so, else `channels'`.
pub(crate) fn copy(
    tensor: &'static str,
    src: &TensorDesc,
    rows_to: usize,
    keep_channels: bool,
    offset: usize,
    dtype: DType,
    family: Family,
) -> Result<PackCopy, OpError> {
    let [g, rows, ch, d, h, w] = src.lengths;
    debug_assert!(g == 1 && rows <= rows_to && dtype.bytes() == 2);
    let cols = padded(ch);
    let elems = [rows_to, d, h, w, cols].iter().try_fold(1u64, |e, &l| e.checked_mul(l as u64));
    let elems = match elems {
        Some(e) if e < 1 << 31 => e as usize,
        _ => {
            let field = "channel-packed copy (elements; the pre-pass of odd channel counts)";
            return Err(DescError::TooLarge { field, value: elems.unwrap_or(u64::MAX), max: (1 << 31) - 1 }.into());
        }
    };
    let name = if dtype == DType::F16 { "bwdw_unfold_f16" } else { "bwdw_unfold_bf16" };
    let inst = instance::find(name).expect("the unfold instances exist");
    debug_assert_eq!(inst.op, Op::BwdWeightUnfold);
    let grid = (elems / LANES).div_ceil(THREADS) as u32;
    let launch = LaunchSpec { instance: inst, grid: [grid, 1, 1], block: inst.threads(family), lds_bytes: 0 };
    launch.check_grid()?;
    let fd = |v: usize| FastDiv::new(v as u32);
    let args_template = ConvArgs {
        abi: ConvArgs::ABI,
        x_strides: src.strides_u32(),
        input: [d, h, w].map(|v| v as u32),
        // Channel j of the copy is channel j of the source (no taps unfolded).
        div_c: fd(ch),
        div_x: fd(1),
        div_y: fd(1),
        unfold: UnfoldPart {
            valid: ch as u32,
            dims: 0,
            elems: elems as u32,
            rows: rows as u32,
            div_vecs: fd(cols / LANES),
            div_pix: [fd(d), fd(h), fd(w)],
        },
        ..Default::default()
    };
    let pixel = h * w * cols;
    let desc = TensorDesc {
        lengths: [1, rows_to, if keep_channels { ch } else { cols }, d, h, w],
        strides: [elems, d * pixel, 1, pixel, w * cols, cols],
    };
    let bytes = (elems * 2).div_ceil(16) * 16;
    Ok(PackCopy { tensor, launch, args_template, desc, offset, bytes })
}

/// A plan's copies and the problem its kernels run on them.
#[derive(Clone, Debug)]
pub struct Packed {
    /// The problem the kernels run: the caller's with its odd channel
    /// counts padded to whole vectors.
    pub problem: ConvProblem,
    /// The copies, back to back from the workspace's start.
    pub copies: Vec<PackCopy>,
}

impl Packed {
    /// The copy of `tensor`, if the plan packs it.
    pub fn copy(&self, tensor: &str) -> Option<&PackCopy> {
        self.copies.iter().find(|c| c.tensor == tensor)
    }
    /// Workspace bytes the copies take.
    pub fn bytes(&self) -> usize {
        self.copies.last().map_or(0, |c| c.offset + c.bytes)
    }
    /// The copy of `tensor` at `workspace`, else `addr` (the caller's tensor).
    pub fn addr(this: Option<&Self>, tensor: &str, addr: u64, workspace: u64) -> u64 {
        this.and_then(|k| k.copy(tensor)).map_or(addr, |c| c.at(workspace))
    }
}

/// `" ; dy, w packed (K' = 256 for 255)"`: what a plan packs, for `describe`.
pub(crate) fn describe(copies: &[PackCopy], what: &[(&str, usize, usize)]) -> String {
    let tensors: Vec<&str> = copies.iter().map(|c| c.tensor).collect();
    let mut notes: Vec<String> = what.iter().filter(|(_, a, b)| a != b).map(|(n, a, b)| format!("{n}' = {a} for {b}")).collect();
    notes.push(copies[0].launch.instance.name.to_string());
    format!(" ; {} channel-packed first ({})", tensors.join(", "), notes.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy's descriptor is packed channels-last with the channels (and
    /// rows) padded, its bytes whole 16-byte vectors; the launch covers one
    /// thread per vector; a copy past 2^31 elements is refused by name.
    #[test]
    fn copy_is_packed_and_padded() {
        // dy of a 1x1 head: 2 images, K = 255, 3x5 pixels, channels-last.
        let src = TensorDesc { lengths: [1, 2, 255, 1, 3, 5], strides: [0, 3825, 1, 3825, 1275, 255] };
        let c = copy("dy", &src, 2, false, 64, DType::F16, Family::Hopper).unwrap();
        assert_eq!(c.desc.lengths, [1, 2, 256, 1, 3, 5]);
        assert_eq!(c.desc.strides, [7680, 3840, 1, 3840, 1280, 256]);
        assert_eq!((c.offset, c.bytes), (64, 7680 * 2));
        assert_eq!(c.launch.grid[0] as usize, (7680 / LANES).div_ceil(THREADS));
        let u = &c.args_template.unfold;
        assert_eq!((u.valid, u.rows, u.dims, u.elems), (255, 2, 0, 7680));
        // w of K = 13 rows padded to 16, C = 100 kept in the descriptor (columns padded to 104).
        let w = TensorDesc { lengths: [1, 13, 100, 1, 3, 3], strides: [0, 900, 1, 900, 300, 100] };
        let c = copy("w", &w, 16, true, 0, DType::Bf16, Family::Cdna).unwrap();
        assert_eq!(c.desc.lengths, [1, 16, 100, 1, 3, 3]);
        assert_eq!(c.desc.strides[..3], [16 * 9 * 104, 9 * 104, 1]);
        assert_eq!(c.args_template.unfold.rows, 13);
        let huge = TensorDesc { lengths: [1, 1 << 16, 255, 1, 128, 1], strides: [0, 255 * 128, 1, 0, 255, 255] };
        let e = copy("dy", &huge, 1 << 16, false, 0, DType::F16, Family::Hopper).unwrap_err();
        assert!(e.to_string().contains("channel-packed copy"), "{e}");
    }

    #[test]
    fn needs_only_two_byte_odd_counts() {
        assert!(needs(DType::F16, 255) && needs(DType::Bf16, 58) && !needs(DType::F16, 64) && !needs(DType::F32, 255));
        assert_eq!((padded(255), padded(58), padded(64)), (256, 64, 64));
    }
}
