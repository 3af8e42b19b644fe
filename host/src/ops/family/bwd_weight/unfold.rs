//! Small-C inputs as wider channels, by a copy: backward-weight's stem path.
//!
//! An RGB stem's 3 channels of 2 bytes fill no 16-byte vector, so the GEMM
//! would gather `im2col(x)` element by element (ResNet-50's 7x7 stem ran at
//! a third of cuDNN's speed). For one output position, the filter's taps
//! along the trailing spatial axes and the channels are one run of `dW` in
//! memory, `(taps, c)`, c fastest. A pre-pass
//! (`convgrad_device::conv::bwd_weight::unfold`) writes that run of `x`
//! for every output position of those axes into a workspace copy `x'`,
//! zero padded to whole vectors; the plan then runs a problem with those
//! channels and a filter of 1 along the unfolded axes on `x'`, and its
//! stores skip the padding columns. [`along_x`](crate::ops::fold::along_x) is
//! the copy-free case (windows that tile the row); this one takes
//! overlapping windows and padding.

use convgrad_types::instance::{self, Op};
use convgrad_types::params::{ConvArgs, FastDiv, UnfoldPart};
use convgrad_types::{ConvProblem, TensorDesc, TypeConfig};

/// Canonical slots of the channels and the first spatial axis.
const C: usize = 2;
const SPATIAL: usize = 3;

/// Where 16-byte vectors of `x'` start in elements of 2 bytes.
pub(crate) const LANES: usize = 8;

/// The unfolded problem and what the pre-pass needs.
#[derive(Clone, Debug)]
pub(crate) struct Unfolded {
    /// The problem the kernels run: `C'` channels, filter 1 along the unfolded axes.
    pub problem: ConvProblem,
    /// `x'` (packed, channels-last) and `dW` seen in `problem`.
    pub x: TensorDesc,
    pub dw: TensorDesc,
    /// Spatial axes unfolded, counted from x.
    pub dims: usize,
    /// `C'`, and the channels of it that are not padding.
    pub cols: usize,
    pub valid: usize,
    /// Elements of `x'`.
    pub elems: usize,
}

/// Whether `p` should run unfolded, and the best unfolding: `G = 1`, 2-byte
/// activations, `C` less than a vector, a filter of several taps, `dW`
/// channels-last with the unfolded axes packed (a run of `dW` is then
/// `(taps, c)`). Among the axes counts, the least modelled cost: bytes of
/// `x'` written and read, `dy` read per 128 GEMM columns, and the GEMM's
/// multiply-adds at 50 flops a byte (measured H100/H200 GEMM throughput over
/// bandwidth). ResNet-50's 7x7 stem unfolds x only (`C'` = 24, 7 rows of
/// it); a 3x3 stem y and x (`C'` = 32 for 27 columns).
pub(crate) fn choose(p: &ConvProblem, types: TypeConfig, dw: &TensorDesc) -> Option<Unfolded> {
    let bytes = types.act().bytes();
    if p.g != 1 || bytes != 2 || p.c >= LANES || p.filter_taps() < 2 || dw.strides[C] != 1 {
        return None;
    }
    let o = p.output();
    let dy_bytes = (p.n * p.k) as f64 * p.output_pixels() as f64 * bytes as f64;
    let mut best: Option<(f64, Unfolded)> = None;
    for dims in 1..=p.ndim {
        let first = SPATIAL - dims;
        // A 1-tap axis adds nothing but a longer x'.
        if dims > 1 && p.filter[first] == 1 {
            continue;
        }
        // dW's run over the unfolded axes: each axis's stride the taps after it times C.
        let mut run = p.c;
        let mut packed = true;
        for i in (first..SPATIAL).rev() {
            packed &= p.filter[i] == 1 || dw.strides[SPATIAL + i] == run;
            run *= p.filter[i];
        }
        if !packed {
            continue;
        }
        let (valid, cols) = (run, run.div_ceil(LANES) * LANES);
        let mut f = *p;
        f.c = cols;
        for (i, &out) in o.iter().enumerate().skip(first) {
            f.input[i] = out;
            (f.filter[i], f.strides[i], f.dilations[i], f.lpads[i], f.rpads[i]) = (1, 1, 1, 0, 0);
        }
        let pixels: usize = f.n * f.input.iter().product::<usize>();
        let elems = pixels * cols;
        if elems >= 1 << 31 || f.validate().is_err() {
            continue;
        }
        let gemm_n = cols as f64 * f.filter_taps() as f64;
        let flops = 2.0 * (p.n * p.k) as f64 * p.output_pixels() as f64 * gemm_n;
        let cost = 2.0 * (elems * bytes) as f64 + dy_bytes * (gemm_n / 128.0).ceil() + flops / 50.0;
        if best.as_ref().is_some_and(|(c, _)| *c <= cost) {
            continue;
        }
        let mut xd = TensorDesc::strided(&f, convgrad_types::TensorRole::Input, [0; 6]);
        let mut s = 1;
        for a in [C, 5, 4, 3, 1, 0] {
            xd.strides[a] = s;
            s *= xd.lengths[a];
        }
        let mut wd = *dw;
        wd.lengths[C] = cols;
        for i in first..SPATIAL {
            // A 1-long axis addresses nothing (see `fold::desc`).
            (wd.lengths[SPATIAL + i], wd.strides[SPATIAL + i]) = (1, 0);
        }
        best = Some((cost, Unfolded { problem: f, x: xd, dw: wd, dims, cols, valid, elems }));
    }
    best.map(|(_, u)| u)
}

impl Unfolded {
    /// The pre-pass's instance for `types`.
    pub fn instance(types: TypeConfig) -> &'static instance::Instance {
        let name = if types.act() == convgrad_types::DType::F16 { "bwdw_unfold_f16" } else { "bwdw_unfold_bf16" };
        let i = instance::find(name).expect("the unfold instances exist");
        debug_assert_eq!(i.op, Op::BwdWeightUnfold);
        i
    }

    /// The pre-pass's argument block for the caller's problem `p` and `x`
    /// (addresses left zero: `x` at `a.x`, `x'` at `a.w`).
    pub fn args(&self, p: &ConvProblem, x: &TensorDesc) -> ConvArgs {
        let f = &self.problem;
        ConvArgs {
            x_strides: x.strides_u32(),
            div_c: FastDiv::new(p.c as u32),
            div_x: FastDiv::new(p.filter[2] as u32),
            div_y: FastDiv::new(p.filter[1] as u32),
            unfold: UnfoldPart {
                valid: self.valid as u32,
                dims: self.dims as u32,
                elems: self.elems as u32,
                rows: p.n as u32,
                div_vecs: FastDiv::new((self.cols / LANES) as u32),
                div_pix: f.input.map(|d| FastDiv::new(d as u32)),
            },
            ..crate::ops::launch::problem_args(p)
        }
    }

    /// Workgroups of the pre-pass: one thread per vector of `x'`.
    pub fn grid_x(&self) -> u32 {
        (self.elems / LANES).div_ceil(256) as u32
    }

    /// f32 workspace elements `x'` takes (whole 16-byte vectors).
    pub fn ws_elems(&self) -> usize {
        (self.elems * 2).div_ceil(16) * 4
    }
}
