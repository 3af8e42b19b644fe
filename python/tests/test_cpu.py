"""CPU tests of convgrad_torch's native module: NumPy arrays through DLPack,
run on convgrad's emulator (gfx942 model). Needs neither a GPU nor torch.

Every test draws fresh random inputs (the seed is in the failure message),
poisons outputs with NaN before the call, checks every element finite and
within the bound of ``reference.check`` against a float64 reference:

    |ours - ref64| <= 2 u(dtype) |ref64| + 4 (terms + 2) 2^-24 sum|terms| + 2 smallest(dtype)

(u = 2^-24 for float32, 2^-11 for float16, 2^-8 for bfloat16; ``terms`` the
summands per element). NumPy has no bfloat16: those tests keep the bits in
uint16 arrays and pass them as DLPack capsules retyped (``bf16_capsule``).
"""

import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import reference as ref  # noqa: E402
from problems import ids, shapes  # noqa: E402

from convgrad_torch import _native as nat  # noqa: E402
import convgrad_torch  # noqa: E402


def rng():
    seed = int.from_bytes(os.urandom(4), "little")
    return np.random.default_rng(seed), seed


def in_format(a, channels_last):
    """A copy of ``a`` in contiguous or channels-last memory order (same shape)."""
    if not channels_last:
        return np.ascontiguousarray(a)
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 1, -1)), -1, 1)


def poisoned(shape, dtype, channels_last):
    return in_format(np.full(shape, np.nan, dtype=dtype), channels_last)


# (name, N, G, C, K, input spatial, filter, stride, padding, dilation), by dims.
PROBLEMS = [
    ("1d", 2, 2, 4, 4, (13,), (3,), (2,), (1,), (1,)),
    ("2d", 2, 1, 8, 8, (6, 7), (3, 3), (1, 1), (1, 1), (1, 1)),
    ("2d-stride2-grouped", 2, 2, 4, 8, (9, 8), (3, 3), (2, 2), (1, 0), (1, 1)),
    ("2d-depthwise-dil2", 1, 8, 1, 1, (8, 8), (3, 3), (1, 1), (2, 2), (2, 2)),
    ("2d-1x1-stride2", 2, 1, 16, 8, (7, 7), (1, 1), (2, 2), (0, 0), (1, 1)),
    ("3d", 1, 1, 4, 8, (4, 5, 5), (3, 3, 3), (1, 2, 1), (1, 1, 1), (1, 1, 1)),
]
IDS = ids(PROBLEMS)


def check_op(call, reference, shape_a, shape_b, shape_out, prob, channels_last, dtype, terms, what):
    """Runs ``call(a, b, out, ...)`` on random ``a``, ``b`` and a poisoned
    ``out`` in one memory format, and checks ``out`` against ``reference``."""
    r, seed = rng()
    g, s, p, d = prob[2], prob[7], prob[8], prob[9]
    a = in_format(r.standard_normal(shape_a).astype(dtype), channels_last)
    b = in_format(r.standard_normal(shape_b).astype(dtype), channels_last)
    out = poisoned(shape_out, dtype, channels_last)
    call(a, b, out, list(s), list(p), list(d), g)
    want, absv = reference(a, b, shape_out, s, p, d, g)
    ref.check(out, want, absv, terms, dtype, f"{what} (seed {seed})")


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("prob", PROBLEMS, ids=IDS)
def test_backward_weight(prob, channels_last, dtype):
    xs, ws, ys, out = shapes(prob)
    terms = prob[1] * int(np.prod(out))
    check_op(nat.conv_backward_weight, ref.bwd_weight, xs, ys, ws, prob, channels_last, dtype, terms, "dw")


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("prob", PROBLEMS, ids=IDS)
def test_backward_data(prob, channels_last, dtype):
    xs, ws, ys, _ = shapes(prob)
    terms = prob[4] * int(np.prod(prob[6]))
    check_op(nat.conv_backward_data, ref.bwd_data, ys, ws, xs, prob, channels_last, dtype, terms, "dx")


def test_backward_data_nchw_with_channels_last_weight():
    """Contiguous activations with a channels_last weight: the NGCHW/GKYXC family."""
    r, seed = rng()
    prob = PROBLEMS[2]  # 2d-stride2-grouped
    xs, ws, ys, out = shapes(prob)
    g, s, p, d = prob[2], prob[7], prob[8], prob[9]
    dy = r.standard_normal(ys).astype(np.float32)
    w = in_format(r.standard_normal(ws).astype(np.float32), True)
    dx = poisoned(xs, np.float32, False)
    nat.conv_backward_data(dy, w, dx, list(s), list(p), list(d), g)
    want, absx = ref.bwd_data(dy, w, xs, s, p, d, g)
    ref.check(dx, want, absx, prob[4] * 9, np.float32, f"dx (seed {seed})")


@pytest.mark.parametrize("deterministic", [False, True], ids=["atomic", "deterministic"])
@pytest.mark.parametrize("split_k", [None, 3])
def test_backward_weight_split_k(split_k, deterministic):
    r, seed = rng()
    n, c, k, hw = 4, 8, 8, 9
    x = r.standard_normal((n, c, hw, hw)).astype(np.float16)
    dy = r.standard_normal((n, k, hw, hw)).astype(np.float16)
    dw = poisoned((k, c, 3, 3), np.float16, False)
    # A byte workspace the size check passes; the emulator uses its own scratch.
    calls = []

    def alloc(nbytes):
        calls.append(nbytes)
        return np.zeros(nbytes, dtype=np.uint8)

    desc, _ = nat.conv_backward_weight(
        x, dy, dw, 1, 1, 1, 1, split_k=split_k, deterministic=deterministic, workspace=alloc
    )
    if split_k == 3:
        assert "k_batch 1 " not in desc, desc
    want, absw = ref.bwd_weight(x, dy, dw.shape, (1, 1), (1, 1), (1, 1), 1)
    ref.check(dw, want, absw, n * hw * hw, np.float16, f"dw (seed {seed}, {desc})")


# ---------------------------------------------------------------- odd channel counts


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_DL_UINT, _DL_BFLOAT = 1, 4


def bf16_capsule(bits):
    """A DLPack capsule of the uint16 array ``bits`` (NumPy's export: its
    memory, shape and strides, writable) with the dtype retyped to bfloat16.
    A capsule is consumed by one import: make one per call."""
    cap = bits.__dlpack__()  # unversioned: the DLManagedTensor starts with its DLTensor
    t = _DLTensor.from_address(_capsule_pointer(cap, b"dltensor"))
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (_DL_UINT, 16, 1), "expected NumPy's uint16 export"
    t.dtype.code = _DL_BFLOAT
    return cap


def rand_typed(r, shape, dtype, channels_last):
    """Random values in ``dtype`` (bfloat16: its bits) in one memory format."""
    v = r.standard_normal(shape).astype(np.float32)
    return in_format(ref.to_bf16(v) if dtype == ref.BFLOAT16 else v.astype(dtype), channels_last)


def poisoned_typed(shape, dtype, channels_last):
    if dtype == ref.BFLOAT16:
        return in_format(np.full(shape, 0xFFFF, dtype=np.uint16), channels_last)  # a bfloat16 NaN
    return poisoned(shape, dtype, channels_last)


def arg(a, dtype):
    """What the native call takes for array ``a`` of ``dtype``."""
    return bf16_capsule(a) if dtype == ref.BFLOAT16 else a


def values(a, dtype):
    """The values of array ``a`` of ``dtype`` (float64 for bfloat16)."""
    return ref.from_bf16(a) if dtype == ref.BFLOAT16 else a


def test_bf16_capsule_round_trip():
    """The bfloat16 test plumbing: the rounding, the decoding and the import
    (a dtype the native module names in its errors)."""
    v = np.array([1.0, -2.5, 3.14159, 1e-3, 65504.0, 1.00390625], np.float32)
    bits = ref.to_bf16(v)
    assert list(ref.from_bf16(bits)[:2]) == [1.0, -2.5]
    assert np.all(np.abs(ref.from_bf16(bits) - v) <= 2.0**-8 * np.abs(v))
    assert ref.from_bf16(ref.to_bf16(np.float32(1.00390625))) == 1.0  # a tie goes to even
    x = rand_typed(np.random.default_rng(0), (2, 4, 5, 5), ref.BFLOAT16, False)
    w = rand_typed(np.random.default_rng(1), (4, 4, 3, 3), np.float16, False)
    with pytest.raises(TypeError, match=r"w: dtype float16 differs from dy's bfloat16"):
        nat.conv_backward_data(bf16_capsule(x), w, bf16_capsule(np.empty_like(x)), 1, 1, 1, 1)


# (name, N, G, C, K, input spatial, filter, stride, padding, dilation): K (the
# output channels) not a multiple of 8, so where 16-bit backward-data runs a
# GEMM kernel it runs on channel-packed copies of dy and w in its workspace.
ODD_K = [
    ("k13-3x3", 2, 1, 16, 13, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1)),
    ("k13-1x1", 2, 1, 16, 13, (6, 6), (1, 1), (1, 1), (0, 0), (1, 1)),
    ("k29-3x3", 2, 1, 16, 29, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1)),
    ("k255-3x3", 2, 1, 16, 255, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1)),
    ("k255-1x1", 2, 1, 16, 255, (6, 6), (1, 1), (1, 1), (0, 0), (1, 1)),
]
# Those the emulator's plans run channel-packed (K = 13 takes the direct
# kernel, which reads dy as it is): the tests check that they do, so that
# they keep covering the workspace.
ODD_K_PACKED = {"k29-3x3", "k255-3x3", "k255-1x1"}


@pytest.mark.parametrize("dtype", [np.float16, ref.BFLOAT16], ids=["f16", "bf16"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("workspace", ["scratch", "callable"])
@pytest.mark.parametrize("prob", ODD_K, ids=ids(ODD_K))
def test_backward_data_odd_k(prob, workspace, channels_last, dtype):
    """Backward-data where K fills no 16-byte vector: the workspace (emulator
    scratch on CPU tensors, whether none or an allocator is given) holds the
    channel-packed copies; an allocator is called once with the need, and
    only where the plan packs."""
    r, seed = rng()
    xs, ws, ys, _ = shapes(prob)
    g, s, p, d = prob[2], prob[7], prob[8], prob[9]
    dy = rand_typed(r, ys, dtype, channels_last)
    w = rand_typed(r, ws, dtype, channels_last)
    dx = poisoned_typed(xs, dtype, channels_last)
    calls = []

    def alloc(nbytes):
        calls.append(nbytes)
        return np.empty(nbytes, dtype=np.uint8)

    kw = {"workspace": alloc} if workspace == "callable" else {}
    desc = nat.conv_backward_data(arg(dy, dtype), arg(w, dtype), arg(dx, dtype), list(s), list(p), list(d), g, **kw)
    packed = "channel-packed" in desc
    assert packed == (prob[0] in ODD_K_PACKED), f"the plan changed (update ODD_K_PACKED): {desc}"
    if workspace == "callable":
        assert calls == ([calls[0]] if packed else []) and (not packed or calls[0] > 0), calls
    want, absx = ref.bwd_data(values(dy, dtype), values(w, dtype), xs, s, p, d, g)
    terms = prob[4] * int(np.prod(prob[6]))
    ref.check(values(dx, dtype), want, absx, terms, dtype, f"dx (seed {seed}, {desc})")


def test_backward_data_odd_k_workspace_checked():
    """A given workspace is checked as backward-weight's is: large enough,
    overlapping no tensor; a plan that needs none calls no allocator."""
    r, _ = rng()
    prob = ODD_K[3]  # k255-3x3: packed
    xs, ws, ys, _ = shapes(prob)
    dy = r.standard_normal(ys).astype(np.float16)
    w = r.standard_normal(ws).astype(np.float16)
    dx = np.empty(xs, np.float16)
    with pytest.raises(ValueError, match=r"workspace: 16 bytes is too small: this call needs \d+ bytes of workspace"):
        nat.conv_backward_data(dy, w, dx, 1, 1, 1, 1, workspace=np.zeros(16, np.uint8))
    big = np.zeros(1 << 18, np.uint8)  # a workspace that holds dy
    dy_in = big[: dy.nbytes].view(np.float16).reshape(ys)
    dy_in[...] = dy
    with pytest.raises(ValueError, match=r"workspace: overlaps the input dy in memory"):
        nat.conv_backward_data(dy_in, w, dx, 1, 1, 1, 1, workspace=big)
    with pytest.raises(ValueError, match=r"workspace: must be a contiguous tensor"):
        nat.conv_backward_data(dy, w, dx, 1, 1, 1, 1, workspace=lambda n: np.zeros(2 * n, np.uint8)[::2])
    # f32 (or K a multiple of 8): no workspace, the allocator is not called.
    calls = []
    f32 = [a.astype(np.float32) for a in (dy, w, dx)]
    desc = nat.conv_backward_data(*f32, 1, 1, 1, 1, workspace=lambda n: calls.append(n))
    assert calls == [] and "channel-packed" not in desc, desc


@pytest.mark.parametrize("dtype", [np.float16, ref.BFLOAT16], ids=["f16", "bf16"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
def test_backward_weight_odd_c_odd_k(channels_last, dtype):
    """Backward-weight with C and K filling no 16-byte vector (x and dy
    channel-packed where the plan does so: dy always here, x channels-last),
    split-K workspace from an allocator."""
    r, seed = rng()
    prob = ("c13-k29", 2, 1, 13, 29, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1))
    xs, ws, ys, out = shapes(prob)
    g, s, p, d = prob[2], prob[7], prob[8], prob[9]
    x = rand_typed(r, xs, dtype, channels_last)
    dy = rand_typed(r, ys, dtype, channels_last)
    dw = poisoned_typed(ws, dtype, channels_last)

    def alloc(nbytes):
        return np.empty(nbytes, dtype=np.uint8)

    desc, _ = nat.conv_backward_weight(
        arg(x, dtype), arg(dy, dtype), arg(dw, dtype), list(s), list(p), list(d), g, workspace=alloc
    )
    assert "channel-packed" in desc, desc
    want, absw = ref.bwd_weight(values(x, dtype), values(dy, dtype), ws, s, p, d, g)
    ref.check(values(dw, dtype), want, absw, prob[1] * int(np.prod(out)), dtype, f"dw (seed {seed}, {desc})")


# ---------------------------------------------------------------- fused multi-D


def _fused_case(r, dtype, channels_last, steps, d_kinds, groups=2):
    n, c, k, h, w_ = 2, 4, 4, 6, 6
    g = groups
    xs, ws, ys = (n, g * c, h, w_), (g * k, c, 3, 3), (n, g * k, h, w_)
    dy = in_format(r.standard_normal(ys).astype(dtype), channels_last)
    w = in_format(r.standard_normal(ws).astype(dtype), channels_last)
    ds = []
    for kind in d_kinds:
        if kind == "bias":
            ds.append(r.standard_normal(g * c).astype(dtype))
        elif kind == "pixel":
            ds.append(in_format(r.standard_normal((n, g, h, w_)).astype(dtype), True))
        elif kind == "full":
            ds.append(in_format(r.standard_normal(xs).astype(dtype), channels_last))
        elif kind == "full-other":
            ds.append(in_format(r.standard_normal(xs).astype(dtype), not channels_last))
    return xs, ws, dy, w, ds, g


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize(
    "steps,d_kinds",
    [
        (["add-relu"], ["bias"]),
        (["relu-mask", "add"], ["pixel", "full"]),
        ("relu_mask+add", ["full-other", "bias"]),
        ([("bilinear", 0.5, -2.0), ("scale", 3.0)], ["full"]),
    ],
    ids=["bias-relu", "relumask-pixel-add-full", "relumask-other-add-bias", "bilinear-scale"],
)
def test_backward_data_fused(steps, d_kinds, channels_last, dtype):
    r, seed = rng()
    xs, ws, dy, w, ds, g = _fused_case(r, dtype, channels_last, steps, d_kinds)
    dx = poisoned(xs, dtype, channels_last)
    nat.conv_backward_data(dy, w, dx, 1, 1, 1, g, epilogue=steps, d_tensors=ds)
    v, av = ref.bwd_data(dy, w, xs, (1, 1), (1, 1), (1, 1), g)
    chain = steps.split("+") if isinstance(steps, str) else steps
    want, absx = ref.epilogue(v, av, chain, [ref.broadcast_d(d, xs, g) for d in ds])
    ref.check(dx, want, absx, ws[0] // g * 9 + 2, dtype, f"dx (seed {seed})")


def test_backward_data_in_place_accumulate():
    """D0 is dx itself: dx += conv_transpose(dy, w)."""
    r, seed = rng()
    xs, ws, dy, w, _, g = _fused_case(r, np.float32, True, None, [])
    dx = in_format(r.standard_normal(xs).astype(np.float32), True)
    before = dx.astype(np.float64)
    nat.conv_backward_data(dy, w, dx, 1, 1, 1, g, epilogue="add", d_tensors=[dx])
    v, av = ref.bwd_data(dy, w, xs, (1, 1), (1, 1), (1, 1), g)
    ref.check(dx, v + before, av + np.abs(before), ws[0] // g * 9 + 1, np.float32, f"dx (seed {seed})")


# ---------------------------------------------------------------- errors


def _small(dtype=np.float32):
    r, _ = rng()
    x = r.standard_normal((2, 4, 5, 5)).astype(dtype)
    dy = r.standard_normal((2, 4, 5, 5)).astype(dtype)
    w = r.standard_normal((4, 4, 3, 3)).astype(dtype)
    return x, dy, w


def test_import_without_torch():
    assert "torch" not in sys.modules or sys.modules["torch"] is not None
    assert issubclass(convgrad_torch.Unsupported, RuntimeError)
    assert "gfx942" == convgrad_torch.EMULATOR_ARCH


def test_error_dtype():
    x, dy, w = _small()
    with pytest.raises(TypeError, match=r"dy: dtype float64 is not supported; expected float16, bfloat16 or float32"):
        nat.conv_backward_data(dy.astype(np.float64), w, np.empty_like(x), 1, 1, 1, 1)
    with pytest.raises(TypeError, match=r"x: dtype int32"):
        nat.conv_backward_weight(x.astype(np.int32), dy, np.empty_like(w), 1, 1, 1, 1)


def test_error_mixed_dtypes():
    x, dy, w = _small()
    with pytest.raises(TypeError, match=r"w: dtype float16 differs from dy's float32"):
        nat.conv_backward_data(dy, w.astype(np.float16), np.empty_like(x), 1, 1, 1, 1)


def test_error_not_a_tensor():
    x, dy, w = _small()
    with pytest.raises(TypeError, match=r"dw: expected a tensor"):
        nat.conv_backward_weight(x, dy, [1.0, 2.0], 1, 1, 1, 1)
    with pytest.raises(TypeError, match=r"dx: expected a tensor .* got None"):
        nat.conv_backward_data(dy, w, None, 1, 1, 1, 1)


def test_error_layout():
    x, dy, w = _small()
    # A transposed view (H and W swapped) is neither contiguous nor channels_last.
    xt = np.ascontiguousarray(x).transpose(0, 1, 3, 2)
    with pytest.raises(ValueError, match=r"x: shape .* neither contiguous nor channels_last"):
        nat.conv_backward_weight(xt, dy, np.empty_like(w), 1, 1, 1, 1)
    # A sliced view.
    big = np.zeros((2, 8, 5, 5), np.float32)
    with pytest.raises(ValueError, match=r"dx: shape .* neither contiguous nor channels_last"):
        nat.conv_backward_data(dy, w, big[:, ::2], 1, 1, 1, 1)
    # Mixed activation formats.
    with pytest.raises(ValueError, match=r"dy: memory format channels_last does not match x's contiguous"):
        nat.conv_backward_weight(x, in_format(dy, True), np.empty_like(w), 1, 1, 1, 1)
    # channels_last activations with a contiguous weight.
    with pytest.raises(ValueError, match=r"w: with channels_last activations the weight must be channels_last"):
        nat.conv_backward_data(in_format(dy, True), w, in_format(np.empty_like(x), True), 1, 1, 1, 1)


def test_error_shapes():
    x, dy, w = _small()
    with pytest.raises(ValueError, match=r"dw: shape \[4, 3, 3, 3\]: expected \[G\*K, C, \*filter\]"):
        nat.conv_backward_weight(x, dy, np.empty((4, 3, 3, 3), np.float32), 1, 1, 1, 1)
    with pytest.raises(ValueError, match=r"dy: spatial shape \[5, 5\] is not the convolution's output \[3, 3\]"):
        nat.conv_backward_weight(x, dy, np.empty_like(w), 2, 1, 1, 1)
    with pytest.raises(ValueError, match=r"x: channels 4 \(dimension 1\) is not divisible by groups=3"):
        nat.conv_backward_weight(x, dy, np.empty_like(w), 1, 1, 1, 3)
    with pytest.raises(ValueError, match=r"stride: 3 values for a 2-D convolution"):
        nat.conv_backward_weight(x, dy, np.empty_like(w), [1, 1, 1], 1, 1, 1)
    with pytest.raises(ValueError, match=r"dx: 3 dimensions"):
        nat.conv_backward_data(dy, w, np.empty((2, 4, 5), np.float32), 1, 1, 1, 1)
    with pytest.raises(ValueError, match=r"padding: -1 is negative"):
        nat.conv_backward_data(dy, w, np.empty_like(x), 1, -1, 1, 1)


def test_error_workspace_too_small():
    r, _ = rng()
    x = r.standard_normal((4, 8, 9, 9)).astype(np.float16)
    dy = r.standard_normal((4, 8, 9, 9)).astype(np.float16)
    dw = np.empty((8, 8, 3, 3), np.float16)
    with pytest.raises(ValueError, match=r"workspace: 16 bytes is too small: this call needs \d+ bytes"):
        nat.conv_backward_weight(x, dy, dw, 1, 1, 1, 1, split_k=3, workspace=np.zeros(16, np.uint8))
    with pytest.raises(ValueError, match=r"split_k: must be at least 1"):
        nat.conv_backward_weight(x, dy, dw, 1, 1, 1, 1, split_k=0)


@pytest.mark.parametrize(
    "empty", ["N", "C", "spatial"],
)
def test_error_zero_size(empty):
    """#38: a zero-size tensor (N, C or a spatial size of 0) is an error naming
    it (the torch layer returns PyTorch's empty / zero gradients before this)."""
    x, dy, w = _small()
    if empty == "N":
        x, dy = x[:0], dy[:0]
    elif empty == "C":
        x, w = x[:, :0], w[:, :0]
    else:
        x, dy = x[:, :, :0], dy[:, :, :0]
    pattern = r"^(x|dy|dw|w|dx): shape \[[\d, ]*\] has an empty dimension"
    with pytest.raises(ValueError, match=pattern):
        nat.conv_backward_weight(x, dy, np.empty_like(w), 1, 1, 1, 1)
    with pytest.raises(ValueError, match=pattern):
        nat.conv_backward_data(dy, w, np.empty_like(x), 1, 1, 1, 1)


def test_error_handles_and_negative_ints():
    """#38: a stream handle with CPU tensors, a negative stream / split_k /
    workspace_zero_from and an integer workspace are errors naming the
    argument (not pyo3's unnamed OverflowError). PreparedBackward's integer
    addresses are CUDA's: test_cuda.py::test_native_handles_are_checked."""
    x, dy, w = _small()
    dw, dx = np.empty_like(w), np.empty_like(x)
    with pytest.raises(ValueError, match=r"^stream: 0x1234 given with CPU tensors, which .* take no stream; pass 0"):
        nat.conv_backward_data(dy, w, dx, 1, 1, 1, 1, stream=0x1234)
    for kw, arg in [({"stream": -1}, "stream"), ({"split_k": -2}, "split_k"), ({"workspace_zero_from": -1}, "workspace_zero_from")]:
        with pytest.raises(ValueError, match=rf"^{arg}: -\d is out of range; allowed: "):
            nat.conv_backward_weight(x, dy, dw, 1, 1, 1, 1, **kw)
    with pytest.raises(TypeError, match=r"^workspace: expected a tensor supporting DLPack \(__dlpack__\), got int"):
        nat.conv_backward_weight(x, dy, dw, 1, 1, 1, 1, workspace=0x7000)


def test_error_overlap_and_read_only():
    x, dy, w = _small()
    with pytest.raises(ValueError, match=r"dx: overlaps the input dy"):
        nat.conv_backward_data(dy, w, dy, 1, 1, 1, 1)
    dx = np.empty_like(x)
    dx.flags.writeable = False
    with pytest.raises(ValueError, match=r"dx: "):
        nat.conv_backward_data(dy, w, dx, 1, 1, 1, 1)


def test_error_epilogue():
    x, dy, w = _small()
    dx = np.empty_like(x)
    with pytest.raises(ValueError, match=r"d_tensors: the epilogue .* reads 1 D tensor\(s\), 0 given"):
        nat.conv_backward_data(dy, w, dx, 1, 1, 1, 1, epilogue="add")
    with pytest.raises(ValueError, match=r"epilogue: unknown step `gelu`"):
        nat.conv_backward_data(dy, w, dx, 1, 1, 1, 1, epilogue=["gelu"])
    with pytest.raises(ValueError, match=r"d_tensors\[0\]: shape \[3\] is none of the D layouts"):
        nat.conv_backward_data(dy, w, dx, 1, 1, 1, 1, epilogue="add", d_tensors=[np.zeros(3, np.float32)])
    with pytest.raises(ValueError, match=r"d_tensors\[0\]: overlaps dx without being dx itself"):
        nat.conv_backward_data(dy, w, dx, 1, 1, 1, 1, epilogue="add", d_tensors=[dx.reshape(-1)[:4]])


def test_unsupported_is_runtime_error():
    """A problem outside the kernels' limits raises convgrad_torch.Unsupported (a RuntimeError)."""
    x, dy, w = _small()
    dy1 = np.zeros((2, 4, 1, 1), np.float32)
    with pytest.raises(convgrad_torch.Unsupported, match=r"strides\[0\]"):
        nat.conv_backward_weight(x, dy1, np.empty_like(w), [2**31, 2**31], 1, 1, 1)
    with pytest.raises(RuntimeError):
        nat.conv_backward_weight(x, dy1, np.empty_like(w), [2**31, 2**31], 1, 1, 1)


# Runs in a child process (the plan cache reads CONVGRAD_FIND once per
# process): both ops on a channels-last float16 problem, checked as above.
_FIND_CHILD = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import reference as ref
from problems import shapes
from convgrad_torch import _native as nat

prob = ("2d", 2, 1, 8, 8, (6, 7), (3, 3), (1, 1), (1, 1), (1, 1))
xs, ws, ys, out = shapes(prob)
g, s, p, d = prob[2], prob[7], prob[8], prob[9]
r = np.random.default_rng(int(sys.argv[2]))
cl = lambda a: np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 1, -1)), -1, 1)
x, w, dy = (cl(r.standard_normal(sh).astype(np.float16)) for sh in (xs, ws, ys))
dw, dx = cl(np.full(ws, np.nan, np.float16)), cl(np.full(xs, np.nan, np.float16))
nat.conv_backward_weight(x, dy, dw, list(s), list(p), list(d), g)
want, absv = ref.bwd_weight(x, dy, ws, s, p, d, g)
ref.check(dw, want, absv, prob[1] * int(np.prod(out)), np.float16, "dw")
nat.conv_backward_data(dy, w, dx, list(s), list(p), list(d), g)
want, absv = ref.bwd_data(dy, w, xs, s, p, d, g)
ref.check(dx, want, absv, prob[4] * 9, np.float16, "dx")
"""


def _find_child(mode, cache):
    """Runs ``_FIND_CHILD`` with ``CONVGRAD_FIND=mode`` and the find cache
    ``cache`` (``dir/find.json``: runtime find's file is ``dir/find.kernels.json``)."""
    r, seed = rng()
    env = dict(os.environ, CONVGRAD_FIND=mode, CONVGRAD_FIND_CACHE=str(cache))
    here = os.path.dirname(os.path.abspath(__file__))
    got = subprocess.run(
        [sys.executable, "-c", _FIND_CHILD, here, str(seed)], env=env, capture_output=True, text=True, timeout=600
    )
    assert got.returncode == 0, f"CONVGRAD_FIND={mode} (seed {seed}):\n{got.stdout}\n{got.stderr}"


def test_runtime_find_plans_on_the_launch_stream(tmp_path):
    """CONVGRAD_FIND through the extension (planning on the stream the op is
    launched on: the emulator's here, torch's current stream on CUDA):
    ``1`` measures both ops, stores them and still computes the right
    gradients; ``reuse`` plans from the file and writes nothing; ``off``
    writes no file."""
    cache = tmp_path / "find.json"
    kernels = tmp_path / "find.kernels.json"
    _find_child("1", cache)
    stored = json.loads(kernels.read_text())
    entries = [e for sec in stored["sections"] if sec["setup"]["backend"] == "Emulator" for e in sec["entries"]]
    assert sorted({e["op"] for e in entries}) == ["bwd-data", "bwd-weight"], stored
    assert all(e["arch"] == convgrad_torch.EMULATOR_ARCH for e in entries), stored
    before = kernels.read_bytes()
    _find_child("reuse", cache)
    assert kernels.read_bytes() == before
    _find_child("off", tmp_path / "off.json")
    assert not (tmp_path / "off.kernels.json").exists()
