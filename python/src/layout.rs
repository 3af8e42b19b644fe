//! PyTorch tensor shapes and strides to convgrad's canonical descriptors.
//!
//! PyTorch: activations `[N, G*C, *spatial]`, weights `[G*K, C, *filter]`.
//! convgrad: six canonical axes, activations `(G, N, C, D, H, W)`, weights
//! `(G, K, C, Z, Y, X)`, spatial right-aligned (unused slots length 1).
//! The merged channel axis splits as `G` (stride `C * s`) outside `C`
//! (stride `s`), which is how both PyTorch memory formats store it.
//!
//! Accepted memory orders (dense, outermost first; size-1 axes may have any stride):
//! - activations contiguous (`N C *sp`): `NGCHW`; channels-last (`N *sp C`): `NHWGC`;
//! - weights contiguous (`K C *f`): `GKCYX`; channels-last (`K *f C`): `GKYXC`.
//!
//! Families: contiguous activations with a contiguous weight are
//! `NgchwGkcyxNgkhw`, with a channels-last weight `NgchwGkyxcNgkhw`;
//! channels-last activations need a channels-last weight (`NhwgcGkyxcNhwgk`).

use crate::dlpack::Tensor;
use crate::errors;
use convgrad::types::layout::AXES;
use convgrad::types::{ConvLayout, ConvProblem, TensorDesc, TensorRole};
use pyo3::PyResult;

/// The two memory orders of a PyTorch tensor convgrad takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Row-major in PyTorch's dimension order (`torch.contiguous_format`).
    Contiguous,
    /// Channel dimension (dim 1) innermost (`torch.channels_last[_3d]`).
    ChannelsLast,
}

impl Order {
    /// PyTorch dimensions from outermost to innermost.
    pub fn dims(self, rank: usize) -> Vec<usize> {
        match self {
            Order::Contiguous => (0..rank).collect(),
            Order::ChannelsLast => std::iter::once(0).chain(2..rank).chain(std::iter::once(1)).collect(),
        }
    }
    /// Name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Order::Contiguous => "contiguous",
            Order::ChannelsLast => "channels_last",
        }
    }
}

/// Whether `t` is dense in `order`: the innermost axis has stride 1 and
/// each axis steps over the whole of the axes inside it. Axes of length 1
/// are skipped (PyTorch gives them arbitrary strides).
pub fn is_dense(t: &Tensor, order: Order) -> bool {
    let mut expect = 1isize;
    for &d in order.dims(t.shape.len()).iter().rev() {
        if t.shape[d] != 1 && t.strides[d] != expect {
            return false;
        }
        expect *= t.shape[d] as isize;
    }
    true
}

/// The orders `t` is dense in (both when ambiguous, e.g. one channel).
pub fn orders(t: &Tensor) -> Vec<Order> {
    [Order::Contiguous, Order::ChannelsLast].into_iter().filter(|&o| is_dense(t, o)).collect()
}

/// The error for a tensor in neither accepted order.
pub fn layout_error(t: &Tensor, what: &str) -> pyo3::PyErr {
    errors::value(
        &t.name,
        format!(
            "shape {:?} with strides {:?} (elements) is neither contiguous nor channels_last; \
             convgrad takes dense {what} tensors in one of those two memory formats \
             (a transposed or sliced view must be copied with .contiguous(...) first)",
            t.shape, t.strides
        ),
    )
}

/// The layout family of activations in `act` order with a weight in `wei` order.
pub fn family(act: Order, wei: Order) -> Option<ConvLayout> {
    match (act, wei) {
        (Order::Contiguous, Order::Contiguous) => Some(ConvLayout::NgchwGkcyxNgkhw),
        (Order::Contiguous, Order::ChannelsLast) => Some(ConvLayout::NgchwGkyxcNgkhw),
        (Order::ChannelsLast, Order::ChannelsLast) => Some(ConvLayout::NhwgcGkyxcNhwgk),
        (Order::ChannelsLast, Order::Contiguous) => None,
    }
}

/// The activation order of a family.
pub fn act_order(l: ConvLayout) -> Order {
    match l {
        ConvLayout::NhwgcGkyxcNhwgk | ConvLayout::GnhwcGkyxcGnhwk => Order::ChannelsLast,
        _ => Order::Contiguous,
    }
}

/// Picks the family from the activation tensors `acts` and the weight `w`,
/// or says which tensor is in the wrong format.
///
/// Where the tensors are dense in both orders (1x1 spatial, as in
/// squeeze-and-excitation blocks; one channel), channels-last wins: its
/// kernels read channel vectors, while the contiguous family's read along
/// pixels, which a 1x1 image does not have (EfficientNet-B0's SE backward-data
/// took 120-200 us in that family against 6-10 us for cuDNN, H200).
pub fn choose_family(acts: &[&Tensor], w: &Tensor) -> PyResult<ConvLayout> {
    let mut act_ok = vec![Order::ChannelsLast, Order::Contiguous];
    for t in acts {
        let o = orders(t);
        if o.is_empty() {
            return Err(layout_error(t, "activation"));
        }
        let both: Vec<Order> = act_ok.iter().copied().filter(|x| o.contains(x)).collect();
        if both.is_empty() {
            return Err(errors::value(
                &t.name,
                format!(
                    "memory format {} does not match {}'s {}; pass all activation tensors in one memory format",
                    o[0].name(),
                    acts[0].name,
                    act_ok[0].name()
                ),
            ));
        }
        act_ok = both;
    }
    let w_ok = orders(w);
    if w_ok.is_empty() {
        return Err(layout_error(w, "weight"));
    }
    // Prefer a weight order that fits, keeping the activations' first choice.
    for &a in &act_ok {
        for &wo in &w_ok {
            if let Some(l) = family(a, wo) {
                return Ok(l);
            }
        }
    }
    Err(errors::value(
        &w.name,
        "with channels_last activations the weight must be channels_last too (GKYXC); \
         convert it with .contiguous(memory_format=torch.channels_last)",
    ))
}

/// The canonical descriptor of activation or weight tensor `t` (PyTorch
/// shape) for `p` in family `l`: the tensor's real element strides on every
/// axis longer than 1, the family's packed strides on the others.
pub fn desc(t: &Tensor, p: &ConvProblem, l: ConvLayout, role: TensorRole) -> TensorDesc {
    let mut d = TensorDesc::packed(p, l, role);
    let real = canonical_strides(t, p, role);
    for ((st, &len), &r) in d.strides.iter_mut().zip(&d.lengths).zip(&real) {
        if len > 1 {
            *st = r;
        }
    }
    d
}

/// The six canonical strides of a PyTorch-shaped tensor for `role`
/// (0 for unused spatial slots).
pub fn canonical_strides(t: &Tensor, p: &ConvProblem, role: TensorRole) -> [usize; AXES] {
    let s: Vec<usize> = t.strides.iter().map(|&x| x as usize).collect();
    // Inner part of the merged dim 0 (weights: K) or dim 1 (activations: C).
    let mut out = [0usize; AXES];
    match role {
        TensorRole::Weight => {
            out[0] = p.k * s[0];
            out[1] = s[0];
            out[2] = s[1];
        }
        TensorRole::Input | TensorRole::Output => {
            let inner = if role == TensorRole::Input { p.c } else { p.k };
            out[0] = inner * s[1];
            out[1] = s[0];
            out[2] = s[1];
        }
    }
    let first = AXES - p.ndim;
    out[first..].copy_from_slice(&s[2..2 + p.ndim]);
    out
}
