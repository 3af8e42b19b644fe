//! The per-element error bound a device result must meet, derived from how
//! the kernels compute (exact or rounded products, f32 accumulation, f32
//! epilogue, one rounding to the output type).
//!
//! # The rule
//!
//! A result passes iff all three tests pass:
//!
//! 1. **Per element, worst case.** Every output element is finite and
//!
//!    ```text
//!    |out - ref| <= E,   E = e + u_o * (|v| + e) + eta_o
//!    ```
//!
//!    where, without an epilogue, `v = ref = acc` and `e = r_acc * A`:
//!
//!    - `acc`: the float64 reference accumulator (the exact sum of the products
//!      of the stored input values, to ~1e-16);
//!    - `A = sum |products|`: the same pass run on absolute values
//!      ([`crate::reference::abs_values`]); this is what makes the bound rigorous,
//!      since cancellation can make `|acc|` arbitrarily smaller than the rounding
//!      errors of its terms;
//!    - `r_acc = (1 + e_p) * (1 + gamma_L) - 1 + L * 2^-149 / A`, with
//!      `gamma_L = 2uL / (1 - 2uL)`, `u = 2^-24` (f32 unit roundoff);
//!    - `u_o = 2^-(m_o + 1)` the unit roundoff of the output type (f32 `2^-24`,
//!      f16 `2^-11`, bf16 `2^-8`) and `eta_o` half its subnormal spacing.
//!
//!    With an epilogue, `(v, e)` are carried through its steps (below) and the
//!    output rounding is applied to the result.
//! 2. **Whole tensor, typical error.** The worst case grows like `L`, the
//!    signal of a wrong result only like `sqrt(L)`: at `L = 2*10^5` an all-zero
//!    f32 result is inside test 1. So the error over the whole tensor must also
//!    stay within what f32 accumulation typically does:
//!
//!    ```text
//!    ||out - ref||_2 <= ||s||_2,   s = e_t + u_o * (|v| + e_t) + eta_o,
//!    e_t = r_typ * A + r_bias * |acc| + L * 2^-149
//!    ```
//!
//!    with `r_typ = e_p + 2u sqrt(L)` (independent rounding errors add up like
//!    a random walk: Higham and Mary, *A new approach to probabilistic rounding
//!    error analysis*, SISC 2019) and `r_bias = u L` (adders that truncate
//!    drift by up to `u |partial sum|` per addition when partial sums keep one
//!    sign). `(v, e_t)` go through the epilogue like `(v, e)`. Calibration
//!    (`check::tests`, `tests/reference.rs`, the emulator suites): simulated
//!    f32 sums of `L = 10^3..10^6` random products use at most 0.37 of
//!    `||s||` (an adder that truncates after every addition, all-positive
//!    data); round-to-nearest at most 0.006 (random signs: 0.0001 at
//!    `L = 10^6`); the simulated kernels of `tests/reference.rs` (every type
//!    combination, sequential, reversed, pairwise and split-K sums, epilogues)
//!    at most 0.49, and every kernel of the bwd-weight, depthwise and
//!    bwd-data suites on the emulator at most 0.57, both where the output
//!    rounding dominates (short reductions, bf16 output, epilogues; there
//!    `s` is nearly the worst-case `E` and the rounding part of an error
//!    can never exceed it). An all-zero result at `L = 10^6` has
//!    `||ref|| / ||s|| = 6.9` and fails.
//! 3. **Exact where it must be.** When both inputs hold only integers of
//!    magnitude at most 256 ([`Init::Int`](crate::check::Init::Int) data,
//!    [`Tolerance::integer_data`]; the verify path detects it from the data) and
//!    `A <= 2^24`, every product and every partial sum, in any order and any
//!    split, is an integer an f32 holds: `e = e_t = 0`, and only the epilogue's
//!    and the output type's roundings are allowed. One element off by 1.0 fails
//!    at any `L`.
//!
//! # Derivation
//!
//! 1. **Products.** A term is `t = a * b` of stored inputs. The device
//!    multiplies in its compute type `c`; an operand stored in a wider type is
//!    first rounded to `c` (relative error `<= u_c`). The product is exact in
//!    f32 when `c` is f16 or bf16 (at most 11 + 11 significant bits `<= 24`);
//!    with f32 compute it may be rounded (`<= u`). So
//!    `|t_hat - t| <= e_p |t|`, `e_p = (1 + u_c)^r * (1 + u_m) - 1`, `r` the
//!    number of rounded operands, `u_m = u` for f32 compute else 0.
//!
//!    **TF32** ([`TypeConfig::F32Tf32`], opt-in): f32 tensors, both operands
//!    rounded to TF32 (10 mantissa bits, f32's exponent range) by
//!    `cvt.rna.tf32.f32` before NVIDIA's `mma.sync` `.tf32`, so `c` =
//!    [`DType::Tf32`], `u_c = 2^-11`, `r = 2`, and the product of two 11-bit
//!    significands is exact in f32 (`u_m = 0`): `e_p = (1 + 2^-11)^2 - 1 ~
//!    2^-10`, the f16 rule's product term on f32 data. Ties away from zero
//!    (`.rna`) and ties to even have the same bound `u_c`; the rounding
//!    itself is checked bit for bit by `tests/tf32.rs`, not by this bound.
//!    The accumulation, the epilogue and the f32 output rounding are f32's
//!    (steps 2-4). So the worst-case bound scales as `(2^-10 + 2^-23 L) A`
//!    and the typical one as `(2^-10 + 2^-23 sqrt(L)) A`: at the reduction
//!    lengths of real layers the operand rounding dominates, unlike exact f32
//!    (`e_p = 2^-24`). Integer data up to 256 is exact in TF32 (11 bits), so
//!    test 3 holds unchanged. On the emulator (sm_80, sm_90) the TF32 kernels
//!    use up to 0.35 of the worst-case bound and 0.094 of the typical one.
//! 2. **Accumulation.** However the kernel orders and groups the sum
//!    (sequential k-loop, matrix-instruction trees, split-K partials reduced in
//!    a fixed order or with atomics), if no product passes through more than
//!    `L` f32 additions, each with relative error `<= 2u`, then
//!    `|s_hat - sum t_hat| <= gamma_L * sum |t_hat|` (Higham, *Accuracy and
//!    Stability of Numerical Algorithms*, 2nd ed., eq. 3.5 with `u -> 2u`).
//!    The factor 2 covers adders that truncate instead of rounding (NVIDIA
//!    tensor cores do). Each operation can also lose up to `2^-149` to f32
//!    underflow: `L * 2^-149` in all. Combined:
//!    `|acc_dev - acc| <= r_acc * A`. `L` is the GEMM-K of the pass, an
//!    upper bound on terms per output ([`accum_len_bwd_data`],
//!    [`accum_len_bwd_weight`]); split-K into `kb` parts gives the chain
//!    `ceil(L / kb) + kb`. Zeros added for padding are exact and cost nothing.
//! 3. **Epilogue** (f32, each operation rounded, `d` the exact `D` value):
//!    - `Scale(a)`: `v' = a v`, `e' = |a| (e + u (|v| + e))`;
//!    - `Bilinear(a, b)`: `v' = a v + b d`, `e' = |a| e + 3u (|a| (|v| + e) + |b d|)`;
//!    - `Add`: `v' = v + d`, `e' = e + u (|v| + e + |d|)`;
//!    - `Relu`: `v' = max(v, 0)`, `e' = e` (1-Lipschitz);
//!    - `ReluMask`: `v' = v [d > 0]`, `e' = e [d > 0]`.
//! 4. **Output rounding** to the output type, round-to-nearest-even:
//!    `|out - v_hat| <= u_o |v_hat| + eta_o` and `|v_hat| <= |v| + e`, which
//!    gives `E` above. Overflow gives infinity, which fails. This term is
//!    sharp (just above a power of two a correct result can use 99% of the
//!    bound), so a kernel that converts by truncation (error up to `2 u_o`)
//!    fails, as it should.
//!
//! Nothing in test 1 is a tuned constant: a correct kernel that accumulates in f32
//! cannot fail it (the bound is worst-case). In the other direction the bound
//! is about `2uL * A`; with random inputs `A ~ L E|t|` while one wrong
//! filter tap changes an output by about `sqrt(terms per tap) * rms(t)`, so
//! wrong taps are caught element by element for GEMM-K up to ~10^5 (the
//! reference tests show this). Test 2 is statistical, with the margins
//! above; it catches results that are wrong everywhere by a little (zero,
//! scaled, a dropped split-K part) up to `L ~ 5*10^6` in f32. With
//! [`Init::Int`](crate::check::Init::Int) data test 3 makes a correct kernel exact
//! up to the output rounding, and any wrong term fails outright.
//!
//! Without `A` ([`expected`] given `None`), `A_i` is replaced by
//! `|acc_i| + max_j |acc_j|`: CK's `rtol * |ref| + atol` shape, not rigorous
//! under heavy cancellation. Prefer passing `A`.

use super::convert::{underflow_error, unit_roundoff};
use crate::reference::{DTensor, apply_chain};
use crate::types::epilogue::{EpiChain, MAX_STEPS, opcode};
use crate::types::{ConvProblem, DType, TensorDesc, TypeConfig};

const U: f64 = 1.0 / (1u64 << 24) as f64;
const F32_TINY: f64 = 1.401_298_464_324_817e-45; // 2^-149

/// What the error bound depends on: the output type, the stored types of the
/// two multiplied inputs, the type the device multiplies in, and the
/// accumulation length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tolerance {
    /// Type of the output tensor (`dx` or `dw`).
    pub out: DType,
    /// Stored types of the two inputs whose products are summed.
    pub inputs: [DType; 2],
    /// Type the device multiplies in (inputs wider than this are rounded to it).
    pub compute: DType,
    /// Longest chain of f32 additions a product passes through (at most the
    /// GEMM-K of the pass; see the module docs for split-K).
    pub accum_len: u64,
    /// Both inputs hold only integers of magnitude at most 256
    /// ([`Init::Int`](crate::check::Init::Int) data, see [`is_small_integer_data`]):
    /// every element whose sum of absolute products is at most `2^24` is then
    /// exact before the epilogue, whatever the order of the sum (test 3 of the rule).
    pub integer_data: bool,
}

/// Largest magnitude up to which every integer is an f32 (`2^24`): sums of
/// integer products below it are exact in any order.
pub const F32_EXACT_INT: f64 = (1u64 << 24) as f64;

/// Whether every value is an integer of magnitude at most 256 (so exact in
/// f16, bf16 and f32, and products of two of them are exact in f32): the
/// precondition of [`Tolerance::integer_data`].
pub fn is_small_integer_data(v: &[f64]) -> bool {
    v.iter().all(|&x| x.fract() == 0.0 && x.abs() <= 256.0)
}

/// GEMM-K of backward-data: `K * ZDot * YDot * XDot` with
/// `Dot = ceil(filter / (stride / gcd(stride, dilation)))`, the most terms
/// any input-gradient element sums (taps congruent modulo the stride).
pub fn accum_len_bwd_data(p: &ConvProblem) -> u64 {
    let mut l = p.k as u64;
    for a in 0..3 {
        let (s, d) = (p.strides[a], p.dilations[a]);
        let tilde = s / gcd(s, d);
        l *= p.filter[a].div_ceil(tilde) as u64;
    }
    l
}

/// Longest f32 addition chain of backward-weight, `GEMM-K = N * prod(out)`,
/// split into `split_k` parts (1 = no split): `ceil(GEMM-K / split_k) + split_k`
/// (just `GEMM-K` without split).
pub fn accum_len_bwd_weight(p: &ConvProblem, split_k: usize) -> u64 {
    split_len(p.n as u64 * p.output_pixels(), split_k)
}

/// Addition chain of a sum of `l` terms computed as `kb` partial sums that are
/// then added together: `ceil(l / kb) + kb`, or `l` when `kb <= 1`.
pub fn split_len(l: u64, kb: usize) -> u64 {
    if kb <= 1 {
        l
    } else {
        l.div_ceil(kb as u64) + kb as u64
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl Tolerance {
    /// A rule from its parts.
    pub fn new(out: DType, inputs: [DType; 2], compute: DType, accum_len: u64) -> Tolerance {
        Tolerance {
            out,
            inputs,
            compute,
            accum_len,
            integer_data: false,
        }
    }

    /// The same rule with [`Tolerance::integer_data`] set to `yes`.
    pub fn with_integer_data(self, yes: bool) -> Tolerance {
        Tolerance { integer_data: yes, ..self }
    }

    /// Backward-data with type combination `tc`: products of `dy` (activation
    /// type) and `w` (weight type) in `tc.compute()`, output `dx` in the
    /// activation type, `L` = [`accum_len_bwd_data`].
    pub fn bwd_data(tc: TypeConfig, p: &ConvProblem) -> Tolerance {
        Tolerance::new(
            tc.act(),
            [tc.act(), tc.wei()],
            tc.compute(),
            accum_len_bwd_data(p),
        )
    }

    /// Backward-weight with type combination `tc` and `split_k` parts:
    /// products of `x` and `dy` (activation type), output `dw` in the weight
    /// type, `L` = [`accum_len_bwd_weight`].
    pub fn bwd_weight(tc: TypeConfig, p: &ConvProblem, split_k: usize) -> Tolerance {
        Tolerance::new(
            tc.wei(),
            [tc.act(), tc.act()],
            tc.compute(),
            accum_len_bwd_weight(p, split_k),
        )
    }

    /// Relative error bound of one product, `e_p`.
    pub fn product_err(&self) -> f64 {
        let c = self.compute;
        let uc = unit_roundoff(c);
        let rounded = self
            .inputs
            .iter()
            .filter(|t| t.mantissa_bits() > c.mantissa_bits())
            .count();
        let um = if c == DType::F32 { U } else { 0.0 };
        (1.0 + uc).powi(rounded as i32) * (1.0 + um) - 1.0
    }

    /// `gamma_L = 2uL / (1 - 2uL)` (infinite when `2uL >= 1`: no bound).
    pub fn gamma(&self) -> f64 {
        let t = 2.0 * U * self.accum_len as f64;
        if t >= 1.0 {
            f64::INFINITY
        } else {
            t / (1.0 - t)
        }
    }

    /// `r_acc = (1 + e_p)(1 + gamma_L) - 1`, the accumulator's error relative to `A`.
    pub fn r_acc(&self) -> f64 {
        (1.0 + self.product_err()) * (1.0 + self.gamma()) - 1.0
    }

    /// `r_typ = e_p + 2u sqrt(L)`: the typical (not worst-case) error of the
    /// accumulator relative to `A` when rounding errors are independent
    /// (Higham and Mary 2019); the aggregate test's scale, with [`Tolerance::r_bias`].
    pub fn r_typ(&self) -> f64 {
        self.product_err() + 2.0 * U * (self.accum_len as f64).sqrt()
    }

    /// `r_bias = u L`: the accumulator's typical error relative to `|acc|`
    /// when the rounding errors do not cancel (truncating adders on partial
    /// sums of one sign drift by about `u |s_k|` per addition).
    pub fn r_bias(&self) -> f64 {
        U * self.accum_len as f64
    }

    /// The typical error `e_typ = r_typ A + r_bias |acc| + L 2^-149` of a
    /// correct accumulator (`acc` the exact sum, `abs` = `A`); 0 where the
    /// sum is exact ([`Tolerance::exact_at`]).
    pub fn typical_acc_err(&self, acc: f64, abs: f64) -> f64 {
        if self.exact_at(abs) {
            0.0
        } else {
            self.r_typ() * abs + self.r_bias() * acc.abs() + self.acc_floor()
        }
    }

    /// The worst-case error `e = r_acc A + L 2^-149` of a correct accumulator
    /// with sum of absolute products `abs`; 0 where the sum is exact
    /// ([`Tolerance::exact_at`]).
    pub fn worst_acc_err(&self, abs: f64) -> f64 {
        if self.exact_at(abs) { 0.0 } else { self.r_acc() * abs + self.acc_floor() }
    }

    /// Whether an element with sum of absolute products `abs` is exact in f32
    /// before the epilogue: integer data and `abs <= 2^24` (every product and
    /// every partial sum, in any order or split, is then an integer an f32 holds).
    pub fn exact_at(&self, abs: f64) -> bool {
        self.integer_data && abs <= F32_EXACT_INT
    }

    /// Absolute error floor of the accumulator from f32 underflow, `L * 2^-149`.
    pub fn acc_floor(&self) -> f64 {
        self.accum_len as f64 * F32_TINY
    }

    /// Unit roundoff of the output type, `u_o`.
    pub fn u_out(&self) -> f64 {
        unit_roundoff(self.out)
    }

    /// Absolute rounding error floor of the output type, `eta_o`.
    pub fn eta_out(&self) -> f64 {
        underflow_error(self.out)
    }

    /// The bound `E` for one element without epilogue: reference value `acc`,
    /// sum of absolute products `abs`.
    pub fn bound(&self, acc: f64, abs: f64) -> f64 {
        let e = self.worst_acc_err(abs);
        e + self.u_out() * (acc.abs() + e) + self.eta_out()
    }

    /// The rule in one line, with this problem's numbers, for printing.
    pub fn rule_text(&self) -> String {
        rule_text(self)
    }
}

/// The rule of `t` in words and numbers, e.g. for `verify`'s output.
pub fn rule_text(t: &Tolerance) -> String {
    let exact = if t.integer_data { "; integer data: e = 0 where A <= 2^24 (exact)" } else { "" };
    format!(
        "pass iff (1) every element finite and |out-ref| <= e + u_o*(|ref|+e) + eta_o, e = r_acc*A (A = sum|products|, \
         through the epilogue), r_acc = (1+e_p)(1+gamma_L)-1 = {:.3e} [L = {}, gamma_L = 2uL/(1-2uL), u = 2^-24, \
         e_p = {:.3e} ({} x {} products in {})], u_o = {:.3e} ({} output), eta_o = {:.1e}; \
         (2) ||out-ref||_2 <= ||s||_2, s = the same with e_typ = r_typ*A + u*L*|ref| in place of e, \
         r_typ = e_p + 2u*sqrt(L) = {:.3e}{exact}",
        t.r_acc(),
        t.accum_len,
        t.product_err(),
        t.inputs[0].name(),
        t.inputs[1].name(),
        t.compute.name(),
        t.u_out(),
        t.out.name(),
        t.eta_out(),
        t.r_typ(),
    )
}

/// What a device result is compared with: the expected values and, per
/// element, the largest allowed error. Both are laid out like the output
/// tensor (buffer of `desc.span()` elements; gaps of a strided view hold 0).
#[derive(Clone, Debug)]
pub struct Expected {
    /// Reference values (`chain(acc, D...)`).
    pub reference: Vec<f64>,
    /// Allowed error `E` per element (test 1, worst case).
    pub bound: Vec<f64>,
    /// Typical error `s` of a correct result per element (test 2 allows
    /// `||out - ref||_2 <= ||s||_2` over the tensor).
    pub typical: Vec<f64>,
}

/// Expected values and bounds for an output tensor `desc`, from the float64
/// accumulator `acc` (the pass without epilogue), the sums of absolute
/// products `abs` (the pass on absolute inputs; `None` for the non-rigorous
/// fallback, see the module docs), the epilogue `chain` and its `D` tensors.
///
/// `acc` and `abs` are laid out by `desc`. `reference` equals what
/// `reference::bwd_*_multi_d` writes for the same inputs.
pub fn expected(
    t: &Tolerance,
    desc: &TensorDesc,
    acc: &[f64],
    abs: Option<&[f64]>,
    chain: &EpiChain,
    ds: &[DTensor<'_>],
) -> Expected {
    let span = desc.span() as usize;
    assert!(
        acc.len() >= span && abs.is_none_or(|a| a.len() >= span),
        "check::expected: buffers shorter than the descriptor spans"
    );
    let fallback_scale = match abs {
        Some(_) => 0.0,
        None => {
            let mut m = 0.0f64;
            for_each_offset(desc, |_, o| m = m.max(acc[o].abs()));
            m
        }
    };
    // Without A nothing says the data are small integers: never exact.
    let t = &t.with_integer_data(t.integer_data && abs.is_some());
    let (u_o, eta) = (t.u_out(), t.eta_out());
    let mut reference = vec![0.0; span];
    let mut bound = vec![0.0; span];
    let mut typical = vec![0.0; span];
    for_each_offset(desc, |idx, o| {
        let a = match abs {
            Some(a) => a[o],
            None => acc[o].abs() + fallback_scale,
        };
        let dval = |i: usize| ds[i].0[ds[i].1.offset(*idx)];
        let (v, e) = through_chain(chain, acc[o], t.worst_acc_err(a), dval);
        let (_, s) = through_chain(chain, acc[o], t.typical_acc_err(acc[o], a), dval);
        debug_assert!(v.to_bits() == apply_chain(chain, acc[o], dval).to_bits() || v.is_nan());
        reference[o] = v;
        bound[o] = e + u_o * (v.abs() + e) + eta;
        typical[o] = s + u_o * (v.abs() + s) + eta;
    });
    Expected { reference, bound, typical }
}

/// Carries a value `v` and its error bound `e` through an f32 epilogue chain
/// (step 3 of the derivation).
fn through_chain(
    chain: &EpiChain,
    mut v: f64,
    mut e: f64,
    mut d: impl FnMut(usize) -> f64,
) -> (f64, f64) {
    for s in &chain.steps[..(chain.len as usize).min(MAX_STEPS)] {
        let (a, b) = (s.a as f64, s.b as f64);
        match s.op {
            opcode::PASS => {}
            opcode::SCALE => {
                e = a.abs() * (e + U * (v.abs() + e));
                v *= a;
            }
            opcode::BILINEAR => {
                let bd = b * d(s.d as usize);
                e = a.abs() * e + 3.0 * U * (a.abs() * (v.abs() + e) + bd.abs());
                v = a * v + bd;
            }
            opcode::ADD => {
                let dv = d(s.d as usize);
                e += U * (v.abs() + e + dv.abs());
                v += dv;
            }
            opcode::RELU => v = if v > 0.0 { v } else { 0.0 },
            opcode::RELU_MASK => {
                let keep = d(s.d as usize) > 0.0;
                if !keep {
                    v = 0.0;
                    e = 0.0;
                }
            }
            op => panic!(
                "check: epilogue opcode {op} has no error model (add it to check::tolerance)"
            ),
        }
    }
    (v, e)
}

/// Calls `f(canonical index, buffer offset)` for every logical element of
/// `d`, in canonical order (the last axis fastest).
pub(crate) fn for_each_offset(d: &TensorDesc, mut f: impl FnMut(&[usize; 6], usize)) {
    let l = d.lengths;
    if l.contains(&0) {
        return;
    }
    let mut idx = [0usize; 6];
    loop {
        f(&idx, d.offset(idx));
        // Next index: the last axis that is not at its end steps, the ones after it restart.
        let Some(a) = (0..6).rev().find(|&a| idx[a] + 1 < l[a]) else {
            return;
        };
        idx[a] += 1;
        idx[a + 1..].fill(0);
    }
}
