"""convgrad_torch on PyTorch CUDA tensors, against PyTorch.

Every result is compared with ``torch.ops.aten.convolution_backward`` in the
same dtype (``aten``) and with the same aten call on float64 copies of the
inputs (``ref64``). Tolerance rule, per output tensor:

    max|ours - ref64| <= max(4 * max|aten - ref64|, floor(dtype) * max|ref64|)

with floor = 2^-9 (float16), 2^-6 (bfloat16), 2^-18 (float32): ours may be at
most four times as far from the exact result as PyTorch's own kernel, and is
never held to less than a few units in the last place of the output type.
TF32 is switched off (``torch.backends.cudnn.allow_tf32 = False``) so that
float32 aten is a true float32 reference. Outputs are passed in with ``out=``
poisoned with NaN, and every element is checked finite. Fused epilogues are
compared with the same chain applied, unfused, to aten's result (in dtype)
and to ref64 (in float64).

Environment: ``CONVGRAD_TEST_DEVICE=cpu`` runs the same tests on CPU tensors
(convgrad's emulator; slow, use ``-k``); the stream tests need CUDA.
"""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

import convgrad_torch as cg  # noqa: E402
from convgrad_torch import torch_ops  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from problems import ids, shapes  # noqa: E402

DEVICE = os.environ.get("CONVGRAD_TEST_DEVICE", "cuda")
if DEVICE == "cuda" and not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False

FLOOR = {torch.float16: 2.0**-9, torch.bfloat16: 2.0**-6, torch.float32: 2.0**-18}
DTYPES = [torch.float16, torch.bfloat16, torch.float32]
DT_IDS = ["f16", "bf16", "f32"]


def check(what, ours, aten, ref64):
    ours64 = ours.double()
    assert torch.isfinite(ours64).all(), f"{what}: {int((~torch.isfinite(ours64)).sum())} non-finite elements"
    err = (ours64 - ref64).abs().max().item()
    err_aten = (aten.double() - ref64).abs().max().item()
    scale = ref64.abs().max().item()
    tol = max(4 * err_aten, FLOOR[ours.dtype] * scale)
    assert err <= tol, f"{what}: max|ours - ref64| = {err:.3e} > tol {tol:.3e} (aten {err_aten:.3e}, max|ref64| {scale:.3e})"


def fmt(t, channels_last):
    return torch_ops.to_channels_last(t) if channels_last else t.contiguous()


def nan_like(shape, dtype, channels_last):
    return fmt(torch.full(shape, float("nan"), dtype=dtype, device=DEVICE), channels_last)


def aten_bwd(dy, x, w, s, p, d, g, mask=(True, True, False)):
    nd = x.dim() - 2
    return torch.ops.aten.convolution_backward(dy, x, w, None, s, p, d, False, [0] * nd, g, list(mask))


# (name, N, G, C, K, input spatial, filter, stride, padding, dilation)
PROBLEMS = [
    ("2d", 4, 1, 32, 64, (14, 14), (3, 3), (1, 1), (1, 1), (1, 1)),
    ("2d-s2-pad0", 2, 1, 16, 32, (15, 15), (3, 3), (2, 2), (0, 0), (1, 1)),
    ("2d-grouped", 2, 4, 16, 16, (14, 14), (3, 3), (1, 1), (1, 1), (1, 1)),
    ("2d-depthwise-dil2", 2, 32, 1, 1, (16, 16), (3, 3), (1, 1), (2, 2), (2, 2)),
    ("2d-1x1-s2", 2, 1, 64, 32, (14, 14), (1, 1), (2, 2), (0, 0), (1, 1)),
    ("2d-odd", 3, 1, 5, 7, (9, 11), (5, 3), (1, 2), (2, 1), (1, 1)),
    # Squeeze-and-excitation: 1x1 images are dense in both memory formats.
    ("2d-se-1x1-image", 8, 1, 48, 1152, (1, 1), (1, 1), (1, 1), (0, 0), (1, 1)),
    ("1d", 4, 2, 8, 8, (33,), (5,), (2,), (2,), (1,)),
    ("3d", 2, 1, 8, 16, (6, 8, 8), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1)),
    ("3d-grouped-s2", 1, 2, 8, 8, (7, 7, 7), (3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1)),
]
IDS = ids(PROBLEMS)


def make(prob, dtype, channels_last, gen):
    """Random ``x``, ``w``, ``dy`` of ``prob`` and its stride, padding, dilation, groups."""
    *_, s, p, d = prob
    x, w, dy = (
        fmt(torch.randn(shape, generator=gen, device=DEVICE).to(dtype), channels_last) for shape in shapes(prob)[:3]
    )
    return x, w, dy, list(s), list(p), list(d), prob[2]


def gen():
    g = torch.Generator(device=DEVICE)
    g.seed()  # fresh inputs per test
    return g


def check_op(prob, dtype, channels_last, weight):
    """Backward-weight (``weight``) or backward-data of ``prob`` into a
    poisoned ``out=``, against aten in ``dtype`` and in float64."""
    g_ = gen()
    x, w, dy, s, p, d, g = make(prob, dtype, channels_last, g_)
    if weight:
        out = nan_like(w.shape, dtype, channels_last)
        r = cg.conv_backward_weight(x, dy, w.shape, s, p, d, g, out=out)
    else:
        out = nan_like(x.shape, dtype, channels_last)
        r = cg.conv_backward_data(dy, w, x.shape, s, p, d, g, out=out)
    assert r is out
    which = int(weight)
    mask = (not weight, weight, False)
    aten = aten_bwd(dy, x, w, s, p, d, g, mask)[which]
    ref = aten_bwd(dy.double(), x.double(), w.double(), s, p, d, g, mask)[which]
    what = "grad_weight" if weight else "grad_input"
    check(f"{what} (seed {g_.initial_seed()})", out, aten, ref)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("prob", PROBLEMS, ids=IDS)
def test_backward_data(prob, dtype, channels_last):
    check_op(prob, dtype, channels_last, weight=False)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("prob", PROBLEMS, ids=IDS)
def test_backward_weight(prob, dtype, channels_last):
    check_op(prob, dtype, channels_last, weight=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_allocated_outputs_and_weight_conversion(dtype):
    """No out=: results in the activations' format; a contiguous weight with
    channels_last activations is converted for the call."""
    g_ = gen()
    x, w, dy, s, p, d, g = make(PROBLEMS[2], dtype, True, g_)
    w = w.contiguous()
    dx = cg.conv_backward_data(dy, w, x.shape, s, p, d, g)
    dw = cg.conv_backward_weight(x, dy, w.shape, s, p, d, g)
    assert torch_ops.is_channels_last(dx) and torch_ops.is_channels_last(dw)
    adx, adw, _ = aten_bwd(dy, x, w, s, p, d, g)
    rdx, rdw, _ = aten_bwd(dy.double(), x.double(), w.double(), s, p, d, g)
    check("grad_input", dx, adx, rdx)
    check("grad_weight", dw, adw, rdw)


@pytest.mark.parametrize("deterministic", [False, True], ids=["atomic", "deterministic"])
@pytest.mark.parametrize("split_k", [None, 4])
def test_backward_weight_split_k(split_k, deterministic):
    g_ = gen()
    x, w, dy, s, p, d, g = make(("big-n", 32, 1, 16, 16, (28, 28), (3, 3), (1, 1), (1, 1), (1, 1)), torch.float16, True, g_)
    outs = []
    for _ in range(2):
        out = nan_like(w.shape, torch.float16, True)
        cg.conv_backward_weight(x, dy, w.shape, s, p, d, g, split_k=split_k, deterministic=deterministic, out=out)
        outs.append(out)
    _, aten, _ = aten_bwd(dy, x, w, s, p, d, g, (False, True, False))
    _, ref, _ = aten_bwd(dy.double(), x.double(), w.double(), s, p, d, g, (False, True, False))
    for o in outs:
        check("grad_weight", o, aten, ref)
    if deterministic:
        assert torch.equal(outs[0], outs[1]), "deterministic split-K differs between two runs"


# ---------------------------------------------------------------- fused multi-D


def _chain_ref(v, steps, ds):
    ds = list(ds)
    for st in steps:
        if st == "add":
            v = v + ds.pop(0)
        elif st == "add_relu":
            v = torch.clamp_min(v + ds.pop(0), 0)
        elif st == "relu_mask":
            v = v * (ds.pop(0) > 0)
    return v


def _bcast(dd, shape, g):
    nd = len(shape) - 2
    if dd.dim() == 1:
        return dd.reshape(1, -1, *([1] * nd)).expand(shape)
    if list(dd.shape) == list(shape):
        return dd
    return dd.repeat_interleave(shape[1] // g, dim=1)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize(
    "steps,kinds",
    [(["add_relu"], ["bias"]), (["relu_mask", "add"], ["pixel", "full"]), (["relu_mask"], ["full"])],
    ids=["bias-relu", "relumask-pixel-add-full", "relumask-full"],
)
@pytest.mark.parametrize("prob", [PROBLEMS[0], PROBLEMS[2], PROBLEMS[8]], ids=["2d", "2d-grouped", "3d"])
def test_backward_data_fused(prob, steps, kinds, dtype, channels_last):
    g_ = gen()
    x, w, dy, s, p, d, g = make(prob, dtype, channels_last, g_)
    ds = []
    for kind in kinds:
        if kind == "bias":
            ds.append(torch.randn(x.shape[1], generator=g_, device=DEVICE).to(dtype))
        elif kind == "pixel":
            ds.append(torch_ops.to_channels_last(torch.randn((x.shape[0], g, *x.shape[2:]), generator=g_, device=DEVICE).to(dtype)))
        else:
            ds.append(fmt(torch.randn(x.shape, generator=g_, device=DEVICE).to(dtype), channels_last))
    out = nan_like(x.shape, dtype, channels_last)
    cg.conv_backward_data_fused(dy, w, x.shape, s, p, d, g, epilogue=steps, d_tensors=ds, out=out)
    aten, _, _ = aten_bwd(dy, x, w, s, p, d, g, (True, False, False))
    ref, _, _ = aten_bwd(dy.double(), x.double(), w.double(), s, p, d, g, (True, False, False))
    aten = _chain_ref(aten, steps, [_bcast(t, x.shape, g) for t in ds])
    ref = _chain_ref(ref, steps, [_bcast(t.double(), x.shape, g) for t in ds])
    check(f"fused grad_input (seed {g_.initial_seed()})", out, aten, ref)


def test_backward_data_in_place_accumulate():
    g_ = gen()
    x, w, dy, s, p, d, g = make(PROBLEMS[0], torch.float32, True, g_)
    acc = fmt(torch.randn(x.shape, generator=g_, device=DEVICE), True)
    before = acc.clone()
    cg.conv_backward_data_fused(dy, w, x.shape, s, p, d, g, epilogue="add", d_tensors=[acc], out=acc)
    aten, _, _ = aten_bwd(dy, x, w, s, p, d, g, (True, False, False))
    ref, _, _ = aten_bwd(dy.double(), x.double(), w.double(), s, p, d, g, (True, False, False))
    check("accumulated grad_input", acc, aten + before, ref + before.double())


# ---------------------------------------------------------------- streams


@pytest.mark.skipif(DEVICE != "cuda", reason="streams need CUDA")
@pytest.mark.parametrize("op", ["data", "weight"])
def test_non_default_stream_ordering(op):
    """Work enqueued on a side stream before convgrad's launch (a sleep, then an
    in-place op producing the input) and after it (reading the result) is
    ordered with it: convgrad launches on the current stream, not its own."""
    g_ = gen()
    x, w, dy0, s, p, d, g = make(("2d", 8, 1, 64, 64, (28, 28), (3, 3), (1, 1), (1, 1), (1, 1)), torch.float16, True, g_)
    out = nan_like(x.shape if op == "data" else w.shape, torch.float16, True)
    # Warm-up on the default stream: the plan (and the module) are cached after it.
    if op == "data":
        cg.conv_backward_data(dy0, w, x.shape, s, p, d, g, out=out)
    else:
        cg.conv_backward_weight(x, dy0, w.shape, s, p, d, g, split_k=4, out=out)
    out.fill_(float("nan"))
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(1_000_000_000)  # keeps the stream busy for a while (~0.5 s)
        dy = dy0.clone()
        dy.mul_(2.0)  # the input is produced on this stream, after the sleep
        if op == "data":
            cg.conv_backward_data(dy, w, x.shape, s, p, d, g, out=out)
        else:
            cg.conv_backward_weight(x, dy, w.shape, s, p, d, g, split_k=4, out=out)
        result = out.clone()  # read on this stream, right after the launch
        out.fill_(float("nan"))  # and then overwritten: the clone must see convgrad's values
    assert not side.query(), "the host waited for the side stream (convgrad should only enqueue)"
    side.synchronize()
    dy2 = dy0 * 2
    mask = (True, False, False) if op == "data" else (False, True, False)
    a = aten_bwd(dy2, x, w, s, p, d, g, mask)
    r = aten_bwd(dy2.double(), x.double(), w.double(), s, p, d, g, mask)
    i = 0 if op == "data" else 1
    check(f"{op} result read on the side stream", result, a[i], r[i])


@pytest.mark.skipif(DEVICE != "cuda", reason="streams need CUDA")
def test_workspace_from_caching_allocator_is_stream_ordered():
    """Many back-to-back split-K calls on a side stream, sharing that stream's
    cached workspace (from PyTorch's allocator) across modes: results all right."""
    g_ = gen()
    x, w, dy, s, p, d, g = make(("ws", 16, 1, 32, 32, (28, 28), (3, 3), (1, 1), (1, 1), (1, 1)), torch.bfloat16, False, g_)
    side = torch.cuda.Stream()
    outs = []
    with torch.cuda.stream(side):
        for i in range(6):
            outs.append(cg.conv_backward_weight(x, dy, w.shape, s, p, d, g, split_k=4, deterministic=(i % 2 == 1)))
    side.synchronize()
    _, aten, _ = aten_bwd(dy, x, w, s, p, d, g, (False, True, False))
    _, ref, _ = aten_bwd(dy.double(), x.double(), w.double(), s, p, d, g, (False, True, False))
    for o in outs:
        check("grad_weight", o, aten, ref)


@pytest.mark.skipif(DEVICE != "cuda", reason="the cached workspace is CUDA's")
def test_cached_workspace_state_across_modes(monkeypatch):
    """Atomic and deterministic split-K calls of several split counts share one
    cached workspace per stream, whose contents (the offset from which it holds
    zeros) the wrapper threads from call to call: every result right. Then the
    wrapper is made to claim zeros after a deterministic call (a lie): the next
    atomic call must go wrong, which shows the tracked state keeps results right."""
    g_ = gen()
    x, w, dy, s, p, d, g = make(("ws-modes", 8, 1, 32, 32, (14, 14), (3, 3), (1, 1), (1, 1), (1, 1)), torch.float16, True, g_)
    _, aten, _ = aten_bwd(dy, x, w, s, p, d, g, (False, True, False))
    _, ref, _ = aten_bwd(dy.double(), x.double(), w.double(), s, p, d, g, (False, True, False))

    def call(k, det):
        out = nan_like(w.shape, torch.float16, True)
        cg.conv_backward_weight(x, dy, w.shape, s, p, d, g, split_k=k, deterministic=det, out=out)
        return out

    torch_ops._WORKSPACES.clear()
    for k, det in [(4, False), (4, False), (4, True), (4, False), (8, True), (2, True), (8, False), (2, False)]:
        check(f"split {k} deterministic={det}", call(k, det), aten, ref)
    real_get = torch_ops._WORKSPACES.get

    def lying_get(device, stream):
        alloc, _, done = real_get(device, stream)
        return alloc, 0, done

    monkeypatch.setattr(torch_ops._WORKSPACES, "get", lying_get)
    call(4, True)
    with pytest.raises(AssertionError):
        check("atomic call on a workspace wrongly said to be zero", call(4, False), aten, ref)
    torch_ops._WORKSPACES.clear()


# ---------------------------------------------------------------- autograd


@pytest.fixture(autouse=True)
def _private_find_cache(tmp_path, monkeypatch):
    """fastest's find cache goes to a file of the test, never the user's."""
    monkeypatch.setenv("CONVGRAD_FIND_CACHE", str(tmp_path / "find.json"))
    torch_ops._FIND.clear()
    yield
    torch_ops._FIND.clear()


def _model(seed, dtype, conv_cls):
    torch.manual_seed(seed)
    m = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=4),
        torch.nn.ReLU(),
        torch.nn.Conv2d(32, 32, 3, padding=2, dilation=2, groups=32, bias=False),
        torch.nn.ReLU(),
        torch.nn.Conv2d(32, 8, 1),
    )
    if conv_cls:
        cg.convert_conv_modules(m)
    return m.to(device=DEVICE, dtype=dtype)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
def test_autograd_matches_pytorch(channels_last):
    seed = int(torch.randint(0, 2**31, ()).item())
    ours, theirs, exact = (_model(seed, t, c) for t, c in ((torch.float32, True), (torch.float32, False), (torch.float64, False)))
    assert isinstance(ours[0], cg.Conv2d)
    x = torch.randn(4, 3, 20, 20, device=DEVICE)
    if channels_last:
        ours, theirs = (m.to(memory_format=torch.channels_last) for m in (ours, theirs))
        x = x.contiguous(memory_format=torch.channels_last)
    grads_in = []
    for m, dt in ((ours, torch.float32), (theirs, torch.float32), (exact, torch.float64)):
        xi = x.to(dt).clone().requires_grad_(True)
        loss = (m(xi) ** 2).mean()
        loss.backward()
        grads_in.append(xi.grad)
    check("input.grad", grads_in[0], grads_in[1], grads_in[2])
    for (name, po), pt, pe in zip(ours.named_parameters(), theirs.parameters(), exact.parameters()):
        check(f"{name}.grad", po.grad, pt.grad, pe.grad)


def test_function_falls_back_on_unsupported(monkeypatch):
    """Where convgrad raises Unsupported, the autograd function uses aten."""

    def refuse(*a, **k):
        raise cg.Unsupported("test: refused")

    monkeypatch.setattr(torch_ops, "conv_backward_data", refuse)
    monkeypatch.setattr(torch_ops._native, "PreparedBackward", refuse)
    torch_ops._LAYERS.clear()
    m = _model(0, torch.float32, True)
    x = torch.randn(2, 3, 8, 8, device=DEVICE, requires_grad=True)
    m(x).sum().backward()
    assert torch.isfinite(x.grad).all()
    torch_ops._LAYERS.clear()


def _grads(m, x, dtype=None, scaler=None):
    """(input.grad, parameter grads) of ``(m(x)**2).mean()``, under autocast in ``dtype`` if given."""
    x = x.clone().requires_grad_(True)
    with torch.autocast(DEVICE, dtype=dtype or torch.float16, enabled=dtype is not None):
        loss = (m(x).float() ** 2).mean()
    (scaler.scale(loss) if scaler else loss).backward()
    grads = [p.grad for p in m.parameters()]
    if scaler:
        inv = 1.0 / scaler.get_scale()
        return x.grad * inv, [g * inv for g in grads]
    return x.grad, grads


@pytest.mark.skipif(DEVICE != "cuda", reason="autocast on CUDA")
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
def test_autocast_matches_pytorch(dtype, channels_last):
    """fp32 parameters under torch.autocast: the backward computes in the
    autocast dtype and returns fp32 gradients, as PyTorch's convolution does
    (gradient scaling included for float16); compared with PyTorch's own
    autocast run and with a float64 run of the same model."""
    seed = int(torch.randint(0, 2**31, ()).item())
    ours, theirs, exact = (_model(seed, t, c) for t, c in ((torch.float32, True), (torch.float32, False), (torch.float64, False)))
    x = torch.randn(4, 3, 20, 20, device=DEVICE)
    if channels_last:
        ours, theirs = (m.to(memory_format=torch.channels_last) for m in (ours, theirs))
        x = x.contiguous(memory_format=torch.channels_last)
    scaler = torch.amp.GradScaler(DEVICE) if dtype == torch.float16 else None
    gi_o, gp_o = _grads(ours, x, dtype, scaler)
    gi_t, gp_t = _grads(theirs, x, dtype, torch.amp.GradScaler(DEVICE) if scaler else None)
    gi_e, gp_e = _grads(exact, x.double())
    assert gi_o.dtype == torch.float32 and all(g.dtype == torch.float32 for g in gp_o)
    check(f"input.grad (seed {seed})", gi_o, gi_t, gi_e)
    for (name, _), go, gt, ge in zip(ours.named_parameters(), gp_o, gp_t, gp_e):
        check(f"{name}.grad (seed {seed})", go, gt, ge)


@pytest.mark.parametrize("deterministic", [False, True], ids=["atomic", "deterministic"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
def test_autograd_odd_k_shares_the_workspace(dtype, deterministic):
    """Layers whose K is not a multiple of 8 (29; a detection head's 255, on
    C = 29): backward-data runs on channel-packed copies of grad_output and
    the weight where its plan runs a GEMM kernel. On CUDA the prepared
    backward puts them at the start of the layer's workspace, backward-weight's
    split-K workspace after them, and the cached workspace's tracked contents
    stay true over several steps (atomic or deterministic split-K): gradients
    right at every step."""
    seed = int(torch.randint(0, 2**31, ()).item())

    def model(t, conv):
        torch.manual_seed(seed)
        m = torch.nn.Sequential(torch.nn.Conv2d(16, 29, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(29, 255, 1))
        if conv:
            cg.convert_conv_modules(m, deterministic=deterministic)
        return m.to(device=DEVICE, dtype=t).to(memory_format=torch.channels_last)

    torch_ops._LAYERS.clear()
    torch_ops._WORKSPACES.clear()
    ours, theirs, exact = model(dtype, True), model(dtype, False), model(torch.float64, False)
    gx = torch.Generator(device=DEVICE)
    gx.manual_seed(seed)
    for step in range(3):
        x = torch.randn(2, 16, 12, 12, generator=gx, device=DEVICE).contiguous(memory_format=torch.channels_last)
        grads = []
        for m, t in ((ours, dtype), (theirs, dtype), (exact, torch.float64)):
            m.zero_grad(set_to_none=True)
            xi = x.to(t).requires_grad_(True)
            (m(xi).double() ** 2).mean().backward()
            grads.append([xi.grad] + [q.grad for q in m.parameters()])
        names = ["input"] + [n for n, _ in ours.named_parameters()]
        for name, go, gt, ge in zip(names, *grads):
            check(f"step {step} {name}.grad (seed {seed})", go, gt, ge)
    if DEVICE == "cuda":
        layers = [v for v in torch_ops._LAYERS.values() if v.prepared is not None]
        assert len(layers) == 2 and all(v.cg_x and v.cg_w for v in layers), torch_ops.layer_choices()
        packed = [v for v in layers if "channel-packed" in v.prepared.describe().split("\n")[0]]
        assert packed, [v.prepared.describe() for v in layers]
        assert all(v.prepared.workspace_bytes > 0 for v in packed)
    torch_ops._LAYERS.clear()
    torch_ops._WORKSPACES.clear()


@pytest.mark.skipif(DEVICE != "cuda", reason="the prepared path is CUDA's")
def test_prepared_layer_is_reused_and_checks_addresses():
    """The second backward of a layer reuses its prepared plan; the native
    call refuses addresses that are misaligned or run past their allocation."""
    torch_ops._LAYERS.clear()
    m = _model(1, torch.float16, True).to(memory_format=torch.channels_last)
    x = torch.randn(2, 3, 16, 16, device=DEVICE, dtype=torch.float16).contiguous(memory_format=torch.channels_last)
    m(x).float().sum().backward()
    n = len(torch_ops._LAYERS)
    assert n == 4, n
    m(x).float().sum().backward()
    assert len(torch_ops._LAYERS) == n
    layer = next(iter(v for v in torch_ops._LAYERS.values() if v.prepared is not None))
    p = layer.prepared
    s = torch.cuda.current_stream().cuda_stream
    # A fresh segment of exactly 64 MiB (a multiple of the allocator's 2 MiB
    # rounding): its last 256 bytes are too few for any of the layer's tensors.
    torch.cuda.empty_cache()
    big = torch.empty(64 << 20, dtype=torch.uint8, device=DEVICE)
    a = big.data_ptr()
    with pytest.raises(ValueError, match=r"not 16-byte aligned"):
        p.run(a + 2, a + 2, a + 2, a + 2, a + 2, 0, 0, None, s)
    end = a + (64 << 20) - 256
    with pytest.raises(ValueError, match=r"run past the end of its allocation"):
        p.run(end, end, end, end, end, 0, 0, None, s)
    with pytest.raises(ValueError, match=r"overlaps"):
        p.run(*[a] * 5, 0, 0, None, s)
    with pytest.raises(ValueError, match=r"is not device memory"):
        p.run(*[16] * 5, 0, 0, None, s)
    torch_ops._LAYERS.clear()


def _check_fastest_grads(seed, x):
    """Model ``seed`` converted with fastest=True: its gradients at ``x``
    against PyTorch's own model in float32 and float64."""
    ours, theirs, exact = (_model(seed, t, c) for t, c in ((torch.float32, True), (torch.float32, False), (torch.float64, False)))
    cg.convert_conv_modules(ours, fastest=True)
    gi_o, gp_o = _grads(ours, x)
    gi_t, gp_t = _grads(theirs, x)
    gi_e, gp_e = _grads(exact, x.double())
    check(f"input.grad (seed {seed})", gi_o, gi_t, gi_e)
    for (name, _), go, gt, ge in zip(ours.named_parameters(), gp_o, gp_t, gp_e):
        check(f"{name}.grad (seed {seed})", go, gt, ge)


@pytest.mark.skipif(DEVICE != "cuda", reason="timing needs CUDA")
def test_fastest_times_both_and_matches_pytorch():
    """fastest=True: every layer's ops were timed on both libraries, the
    choice is the faster, and the gradients still match PyTorch's."""
    torch_ops._LAYERS.clear()
    seed = int(torch.randint(0, 2**31, ()).item())
    x = torch.randn(4, 3, 20, 20, device=DEVICE)
    _check_fastest_grads(seed, x)
    choices = cg.layer_choices()
    assert len(choices) == 4
    for c in choices:
        assert set(c["times"]) == ({"x"} if c["need_x"] else set()) | {"w"}, c
        for op, (t_cg, t_aten) in c["times"].items():
            assert c["cg_" + op] == (t_cg < t_aten), c
    torch_ops._LAYERS.clear()


@pytest.mark.skipif(DEVICE != "cuda", reason="timing needs CUDA")
def test_fastest_choices_persist_across_processes(tmp_path, monkeypatch):
    """The choices fastest=True timed are stored, and a new process (nothing
    planned, nothing read) takes them from the file without timing."""
    import json

    torch_ops._LAYERS.clear()
    seed = int(torch.randint(0, 2**31, ()).item())
    x = torch.randn(4, 3, 20, 20, device=DEVICE)
    first = cg.convert_conv_modules(_model(seed, torch.float32, True), fastest=True)
    _grads(first, x)
    timed = cg.layer_choices()
    assert timed and not any(c["from_cache"] for c in timed)
    stored = json.load(open(tmp_path / "find.json"))["entries"]
    assert len(stored) == len(timed)

    torch_ops._LAYERS.clear()
    torch_ops._FIND.clear()
    monkeypatch.setattr(torch_ops, "_gpu_ms", lambda *a, **k: pytest.fail("timed a layer the find cache holds"))
    _check_fastest_grads(seed, x)
    reused = cg.layer_choices()
    assert reused and all(c["from_cache"] for c in reused)
    pick = lambda cs: sorted((c["x"], c["w"], c["cg_x"], c["cg_w"]) for c in cs)  # noqa: E731
    assert pick(reused) == pick(timed)
    torch_ops._LAYERS.clear()


@pytest.mark.skipif(DEVICE != "cuda", reason="CUDA graphs")
def test_cuda_graph_capture_and_replay():
    """A training step of a converted model captured in a CUDA graph: each
    replay on fresh inputs gives the gradients of an eager PyTorch run
    (split-K workspaces come from the graph's pool and are zeroed in it)."""
    torch_ops._LAYERS.clear()
    seed = int(torch.randint(0, 2**31, ()).item())
    ours, theirs, exact = (_model(seed, t, c) for t, c in ((torch.float32, True), (torch.float32, False), (torch.float64, False)))
    static_x = torch.randn(8, 3, 20, 20, device=DEVICE)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):  # warm-up outside the graph (plans, cuDNN)
            ours.zero_grad(set_to_none=False)
            (ours(static_x) ** 2).mean().backward()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    ours.zero_grad(set_to_none=False)
    with torch.cuda.graph(graph):
        (ours(static_x) ** 2).mean().backward()
    for _ in range(2):
        x = torch.randn_like(static_x)
        static_x.copy_(x)
        for p in ours.parameters():
            p.grad.zero_()
        graph.replay()
        torch.cuda.synchronize()
        _, gt = _grads(theirs, x)
        _, ge = _grads(exact, x.double())
        for m in (theirs, exact):
            m.zero_grad(set_to_none=True)
        for (name, po), t, e in zip(ours.named_parameters(), gt, ge):
            check(f"{name}.grad after replay (seed {seed})", po.grad, t, e)
    torch_ops._LAYERS.clear()


@pytest.mark.skipif(DEVICE != "cuda", reason="torch.compile on CUDA")
def test_torch_compile_runs_the_model():
    """A converted model under torch.compile trains and matches eager PyTorch."""
    seed = int(torch.randint(0, 2**31, ()).item())
    ours, theirs, exact = (_model(seed, t, c) for t, c in ((torch.float32, True), (torch.float32, False), (torch.float64, False)))
    compiled = torch.compile(ours)
    x = torch.randn(4, 3, 20, 20, device=DEVICE)
    gi_o, _ = _grads(compiled, x)
    gi_t, _ = _grads(theirs, x)
    gi_e, _ = _grads(exact, x.double())
    check(f"input.grad (seed {seed})", gi_o, gi_t, gi_e)
    for (name, po), pt, pe in zip(ours.named_parameters(), theirs.parameters(), exact.parameters()):
        check(f"{name}.grad (seed {seed})", po.grad, pt.grad, pe.grad)


# ---------------------------------------------------------------- errors


def test_errors_name_the_argument():
    g_ = gen()
    x, w, dy, s, p, d, g = make(PROBLEMS[0], torch.float32, False, g_)
    with pytest.raises(TypeError, match=r"grad_output: dtype torch.float64 is not supported"):
        cg.conv_backward_data(dy.double(), w, x.shape, s, p, d, g)
    with pytest.raises(TypeError, match=r"weight: dtype torch.float16 differs from grad_output's torch.float32"):
        cg.conv_backward_data(dy, w.half(), x.shape, s, p, d, g)
    with pytest.raises(ValueError, match=r"grad_output: .* neither contiguous nor channels_last"):
        cg.conv_backward_data(dy.transpose(2, 3), w, x.shape, s, p, d, g)
    with pytest.raises(ValueError, match=r"out: "):
        cg.conv_backward_weight(x, dy, w.shape, s, p, d, g, out=torch.empty(3, device=DEVICE))
    with pytest.raises(ValueError, match=r"dw: shape .* expected \[G\*K, C, \*filter\]"):
        cg.conv_backward_weight(x, dy, [64, 31, 3, 3], s, p, d, g)
    # Conv arguments out of range name the argument (issue #38).
    for kw, pat in [
        (dict(stride=0), r"stride: 0 is less than 1"),
        (dict(dilation=[1, 0]), r"dilation: 0 is less than 1"),
        (dict(padding=-1), r"padding: -1 is less than 0"),
        (dict(groups=0), r"groups: 0 is less than 1"),
    ]:
        args = dict(stride=s, padding=p, dilation=d, groups=g) | kw
        with pytest.raises(ValueError, match=pat):
            cg.conv_backward_weight(x, dy, w.shape, **args)
        with pytest.raises(ValueError, match=pat):
            cg.conv_backward_data(dy, w, x.shape, **args)
    for bad in (0, -1, 65536, 2.0):
        with pytest.raises(ValueError, match=r"split_k: .* allowed None"):
            cg.conv_backward_weight(x, dy, w.shape, s, p, d, g, split_k=bad)
    with pytest.raises(TypeError, match=r"stride: True is not an int"):
        cg.conv_backward_data(dy, w, x.shape, True, p, d, g)
    if DEVICE == "cuda":
        with pytest.raises(ValueError, match=r"grad_output: is on cpu but input is on cuda"):
            cg.conv_backward_weight(x, dy.cpu(), w.shape, s, p, d, g)
        # The native layer names convgrad's tensors; a too small workspace.
        dw = torch.empty_like(w)
        with pytest.raises(ValueError, match=r"workspace: 16 bytes is too small"):
            cg._native.conv_backward_weight(
                x, dy, dw, s, p, d, g, split_k=4, workspace=torch.empty(16, dtype=torch.uint8, device=DEVICE),
                stream=torch.cuda.current_stream().cuda_stream,
            )
        with pytest.raises(ValueError, match=r"workspace: is on cpu but x is on cuda"):
            cg._native.conv_backward_weight(
                x, dy, dw, s, p, d, g, split_k=4, workspace=torch.empty(1 << 20, dtype=torch.uint8),
                stream=torch.cuda.current_stream().cuda_stream,
            )


def test_unsupported_is_a_runtime_error():
    x = torch.randn(1, 4, 5, 5, device=DEVICE)
    dy = torch.randn(1, 4, 1, 1, device=DEVICE)
    with pytest.raises(cg.Unsupported):
        cg.conv_backward_weight(x, dy, [4, 4, 3, 3], 2**31, 1, 1, 1)
    assert issubclass(cg.Unsupported, RuntimeError)


@pytest.mark.parametrize("empty", ["N", "C", "K"])
def test_zero_size_gives_pytorchs_gradients(empty):
    """#38: zero-size tensors (N, C or K of 0) through the autograd function
    and the functional API give what PyTorch gives: empty gradients, and zero
    gradients where the other operand is empty."""
    n, c, k = {"N": (0, 4, 4), "C": (2, 0, 4), "K": (2, 4, 0)}[empty]
    x = torch.randn(n, c, 6, 6, device=DEVICE, requires_grad=True)
    w = torch.randn(k, c, 3, 3, device=DEVICE, requires_grad=True)
    xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    try:
        torch.nn.functional.conv2d(xr, wr, None, 1, 1, 1, 1).sum().backward()
    except RuntimeError as e:
        pytest.skip(f"PyTorch itself refuses {empty}=0 here: {e}")
    cg.ConvFunction.apply(x, w, None, 1, 1, 1, 1).sum().backward()
    for ours, theirs in ((x.grad, xr.grad), (w.grad, wr.grad)):
        assert ours.shape == theirs.shape and torch.equal(ours, theirs), empty
    dy = torch.randn(n, k, 6, 6, device=DEVICE)
    assert torch.equal(cg.conv_backward_weight(x.detach(), dy, w.shape, 1, 1, 1, 1), torch.zeros_like(w))
    assert torch.equal(cg.conv_backward_data(dy, w.detach(), x.shape, 1, 1, 1, 1), torch.zeros_like(x))


@pytest.mark.skipif(DEVICE != "cuda", reason="CUDA handles")
def test_native_handles_are_checked():
    """#38: negative or non-tensor handles given to the native layer are
    errors naming the argument, before anything reaches the driver."""
    x, dy = torch.randn(2, 4, 5, 5, device=DEVICE), torch.randn(2, 4, 5, 5, device=DEVICE)
    w = torch.randn(4, 4, 3, 3, device=DEVICE)
    dw, dx = torch.empty_like(w), torch.empty_like(x)
    with pytest.raises(ValueError, match=r"^stream: -1 is out of range"):
        cg._native.conv_backward_data(dy, w, dx, 1, 1, 1, 1, stream=-1)
    with pytest.raises(TypeError, match=r"^workspace: expected a tensor supporting DLPack .* got int"):
        cg._native.conv_backward_weight(x, dy, dw, 1, 1, 1, 1, split_k=4, workspace=dw.data_ptr())
    prepared = cg._native.PreparedBackward(x, w, dy, dx, dw, 1, 1, 1, 1, stream=torch.cuda.current_stream().cuda_stream)
    with pytest.raises(ValueError, match=r"^dw: -\d+ is out of range; allowed: a data address"):
        prepared.run(x.data_ptr(), w.data_ptr(), dy.data_ptr(), dx.data_ptr(), -dw.data_ptr(), 0, 0, None, 0)


@pytest.mark.skipif(DEVICE != "cuda" or torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_two_devices_are_named():
    """#38: tensors, or a stream, of two CUDA devices in one call: an error naming both."""
    x = torch.randn(2, 4, 5, 5, device="cuda:0")
    dy = torch.randn(2, 4, 5, 5, device="cuda:1")
    with pytest.raises(ValueError, match=r"^grad_output: is on cuda:1 but input is on cuda:0"):
        cg.conv_backward_weight(x, dy, [4, 4, 3, 3], 1, 1, 1, 1)
    with pytest.raises(ValueError, match=r"^dy: is on cuda:1 but x is on cuda:0"):
        cg._native.conv_backward_weight(x, dy, torch.empty(4, 4, 3, 3, device="cuda:0"), 1, 1, 1, 1)
    w = torch.randn(4, 4, 3, 3, device="cuda:0")
    other = torch.cuda.Stream(device="cuda:1")
    with pytest.raises(ValueError, match=r"^stream: stream belongs to another device"):
        cg._native.conv_backward_data(x, w, torch.empty_like(x), 1, 1, 1, 1, stream=other.cuda_stream)
