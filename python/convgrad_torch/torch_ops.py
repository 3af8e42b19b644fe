"""The PyTorch layer of convgrad_torch (imports torch; loaded on first use).

Shapes are PyTorch's: input ``[N, G*C, *spatial]``, weight ``[G*K, C, *filter]``,
grad_output ``[N, G*K, *out]``, 1 to 3 spatial dimensions.

Memory formats (convgrad layout families):

- contiguous activations: ``NGCHW``; the weight may be contiguous (``GKCYX``) or
  channels_last (``GKYXC``), both run as they are;
- channels_last (``channels_last`` / ``channels_last_3d``, and the same order
  for 1-D) activations: ``NHWGC``; the weight must then be channels_last
  (``GKYXC``): a contiguous weight is converted with
  ``.contiguous(memory_format=channels_last)`` (a copy, for the call only);
- outputs allocated here are in the activations' format (a weight gradient of
  channels_last activations is channels_last); ``out=`` tensors are taken in
  either format the family allows.

Activation tensors in neither format (transposed or sliced views, expanded
gradients) raise ``ValueError`` naming the argument; the autograd function
makes them dense first. CUDA tensors run on PyTorch's current stream of their
device; outputs and workspaces (backward-weight's split-K workspace,
backward-data's channel-packed copies where K is not a multiple of 8) come
from PyTorch's caching allocator. CPU tensors run on convgrad's emulator (slow: small problems only).
``Unsupported`` (a ``RuntimeError``) means convgrad has no kernel for the
request; the autograd function then falls back to
``torch.ops.aten.convolution_backward``.
"""

import contextlib
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import _native, find_cache
from ._native import Unsupported

_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_FORWARD = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def _check_tensor(t, name):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in _DTYPES:
        raise TypeError(f"{name}: dtype {t.dtype} is not supported; expected float16, bfloat16 or float32")
    if t.device.type not in ("cpu", "cuda"):
        raise ValueError(f"{name}: device {t.device} is not supported; expected cpu or cuda")
    if not 3 <= t.dim() <= 5:
        raise ValueError(
            f"{name}: {t.dim()} dimensions (shape {list(t.shape)}); expected 3 to 5 "
            "(batch/channels plus 1 to 3 spatial dimensions)"
        )


def _same(ref, ref_name, t, name):
    if t.device != ref.device:
        raise ValueError(f"{name}: is on {t.device} but {ref_name} is on {ref.device}; all tensors must be on one device")
    if t.dtype != ref.dtype:
        raise TypeError(f"{name}: dtype {t.dtype} differs from {ref_name}'s {ref.dtype}")


def _per_dim(v, nd, name, least):
    """``v`` (an int or a sequence of ints) as ``nd`` ints, each at least ``least``."""
    v = [v] if isinstance(v, int) else list(v)
    if len(v) == 1:
        v = v * nd
    if len(v) != nd:
        raise ValueError(f"{name}: {len(v)} values for a {nd}-D convolution; give 1 or {nd}")
    for i in v:
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"{name}: {i!r} is not an int")
        if i < least:
            raise ValueError(f"{name}: {i} is less than {least}")
    return v


def _per_dims(nd, stride, padding, dilation):
    """``stride``, ``padding``, ``dilation`` as lists of ``nd`` values each (strides
    and dilations at least 1, padding at least 0)."""
    return _per_dim(stride, nd, "stride", 1), _per_dim(padding, nd, "padding", 0), _per_dim(dilation, nd, "dilation", 1)


def _check_groups(groups):
    if isinstance(groups, bool) or not isinstance(groups, int):
        raise TypeError(f"groups: {groups!r} is not an int")
    if groups < 1:
        raise ValueError(f"groups: {groups} is less than 1")


def _cl_perm(dim):
    return [0, *range(2, dim), 1]


def _cl_inverse(dim):
    return [0, dim - 1, *range(1, dim - 1)]


def is_channels_last(t):
    """Whether ``t`` is dense with dimension 1 innermost (any rank)."""
    return t.permute(_cl_perm(t.dim())).is_contiguous()


_CL_FORMATS = {4: torch.channels_last, 5: torch.channels_last_3d}


def to_channels_last(t):
    """``t`` dense with dimension 1 innermost (``channels_last`` for 4-D, ``channels_last_3d`` for 5-D)."""
    if is_channels_last(t):
        return t
    if t.dim() in _CL_FORMATS:
        return t.contiguous(memory_format=_CL_FORMATS[t.dim()])
    return t.permute(_cl_perm(t.dim())).contiguous().permute(_cl_inverse(t.dim()))


def _empty(shape, like, channels_last):
    shape = list(shape)
    if not channels_last:
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    perm = _cl_perm(len(shape))
    return torch.empty([shape[i] for i in perm], dtype=like.dtype, device=like.device).permute(_cl_inverse(len(shape)))


def _format(t, name):
    """True for channels_last, False for contiguous; ambiguous tensors (one
    channel or one pixel) count as contiguous; other layouts raise."""
    if t.is_contiguous():
        return False
    if is_channels_last(t):
        return True
    raise ValueError(
        f"{name}: shape {list(t.shape)} with strides {list(t.stride())} is neither contiguous nor channels_last; "
        "pass .contiguous() or .contiguous(memory_format=torch.channels_last)"
    )


def _stream(t):
    return torch.cuda.current_stream(t.device).cuda_stream if t.is_cuda else 0


def _on_device(t):
    # convgrad binds the device's primary context to the thread; entering and
    # leaving torch.cuda.device keeps PyTorch's notion of the current device right.
    return torch.cuda.device(t.device) if t.is_cuda else contextlib.nullcontext()


def _aligned(t):
    # convgrad's kernels load 16-byte vectors; a view with a storage offset may not be aligned.
    if t.is_cuda and t.data_ptr() % 16:
        return t.clone()
    return t


def _check_out(out, shape, ref, ref_name):
    _check_tensor(out, "out")
    _same(ref, ref_name, out, "out")
    if list(out.shape) != list(shape):
        raise ValueError(f"out: shape {list(out.shape)} differs from the result's {list(shape)}")
    if out.is_cuda and out.data_ptr() % 16:
        raise ValueError("out: data address is not 16-byte aligned (a view with a storage offset); pass an aligned tensor")


def _check_operands(a, a_name, b, b_name, shape, shape_name):
    """Checks the two input tensors of a backward call and the result's
    ``shape`` (as many dimensions as ``a``): returns ``(spatial dims, shape
    as a list)``."""
    _check_tensor(a, a_name)
    _check_tensor(b, b_name)
    _same(a, a_name, b, b_name)
    nd = a.dim() - 2
    shape = list(shape)
    if len(shape) != nd + 2:
        raise ValueError(f"{shape_name}: {shape} has {len(shape)} dimensions; {a_name} has {nd + 2}")
    return nd, shape


def conv_backward_data(
    grad_output, weight, input_shape, stride=1, padding=0, dilation=1, groups=1, *, epilogue=None, d_tensors=(), out=None
):
    """Gradient of a convolution with respect to its input (``grad_input``).

    ``epilogue`` / ``d_tensors``: a fused element-wise chain on the result, see
    :func:`conv_backward_data_fused`. ``out``: the result tensor (else allocated
    in ``grad_output``'s memory format). Where convgrad needs a workspace (e.g. 16-bit
    dtypes, ungrouped, whose grad_output channel count is not a multiple of 8:
    copies of grad_output and weight with those channels zero-padded), it
    comes from PyTorch's caching allocator on the current stream. Returns the result.
    """
    nd, input_shape = _check_operands(grad_output, "grad_output", weight, "weight", input_shape, "input_shape")
    _per_dims(nd, stride, padding, dilation)
    _check_groups(groups)
    cl = _format(grad_output, "grad_output")
    if out is not None and not cl and grad_output.is_contiguous() and is_channels_last(grad_output):
        cl = not out.is_contiguous() and is_channels_last(out)  # ambiguous grad_output: follow out
    if cl and not is_channels_last(weight):
        weight = to_channels_last(weight)
    elif not cl and not (weight.is_contiguous() or is_channels_last(weight)):
        weight = weight.contiguous()
    if out is None:
        out = _empty(input_shape, grad_output, cl)
    else:
        _check_out(out, input_shape, grad_output, "grad_output")
    ds = []
    for i, d in enumerate(d_tensors or ()):
        if not isinstance(d, torch.Tensor):
            raise TypeError(f"d_tensors[{i}]: expected a torch.Tensor, got {type(d).__name__}")
        _same(grad_output, "grad_output", d, f"d_tensors[{i}]")
        ds.append(d.detach())
    if out.numel() == 0 or grad_output.numel() == 0:
        return out.zero_()
    with _on_device(grad_output):
        _call_backward_data(grad_output, weight, out, nd, stride, padding, dilation, groups, epilogue, ds)
    return out


def _call_backward_data(grad_output, weight, out, nd, stride, padding, dilation, groups, epilogue, ds):
    _native.conv_backward_data(
        _aligned(grad_output.detach()),
        _aligned(weight.detach()),
        out.detach(),
        *_per_dims(nd, stride, padding, dilation),
        groups,
        epilogue=epilogue,
        d_tensors=[d if d.data_ptr() == out.data_ptr() else _aligned(d) for d in ds],
        workspace=_workspace_alloc(grad_output.device) if grad_output.is_cuda else None,
        stream=_stream(grad_output),
    )


def _workspace_alloc(device):
    """An allocator of workspace bytes on ``device`` for one native call: from
    PyTorch's caching allocator on the current stream (the call's), so the
    memory is reused only by work queued after the call; contents not
    initialised (the backward-data workspace is overwritten by the call)."""
    return lambda nbytes: torch.empty(nbytes, dtype=torch.uint8, device=device)


def conv_backward_data_fused(
    grad_output, weight, input_shape, stride=1, padding=0, dilation=1, groups=1, *, epilogue, d_tensors=(), out=None
):
    """Backward-data with a fused multi-D epilogue, in one kernel.

    ``grad_input = epilogue(conv_transpose(grad_output, weight), *d_tensors)``:
    ``epilogue`` is a chain of steps applied to the f32 accumulator before the
    one write: a string joined by ``+`` or a list of steps, ``"pass"``,
    ``"add"`` (``v + D``), ``"add_relu"`` (``max(v + D, 0)``), ``"relu_mask"``
    (``v * (D > 0)``: ReLU's backward through a saved activation),
    ``("scale", s)`` and ``("bilinear", a, b)`` (``a v + b D``). Each step that
    reads a D takes the next tensor of ``d_tensors``; its layout follows from
    its shape: ``[G*C]`` a per-channel bias, ``[N, G, *spatial]`` (channels
    innermost) one value per pixel, the input's shape a full tensor
    (contiguous or channels_last). A D may be ``out`` itself (``"add"``:
    in-place accumulation into ``out``).

    Example, the backward of ``relu(conv(x)) + skip`` into the previous layer
    whose activation was ``a``: ``epilogue="relu_mask+add", d_tensors=[a, g_skip]``.
    """
    if not epilogue:
        raise ValueError("epilogue: give at least one step (see conv_backward_data for the plain op)")
    return conv_backward_data(
        grad_output, weight, input_shape, stride, padding, dilation, groups, epilogue=epilogue, d_tensors=d_tensors, out=out
    )


class _Workspaces:
    """One workspace per (device, stream), its contents tracked.

    convgrad says after each call from which byte on the workspace holds
    zeros (non-deterministic calls leave all they used zero; deterministic
    ones leave their per-split partials), and the next call on the same
    stream passes that on, so convgrad queues a memset only where a call
    needs zeros that are not there. One buffer per stream: calls on one
    stream run in order, so reusing it needs no synchronization. The buffer
    grows to the largest call's need and is kept (a few MB for a network).

    A layer's backward (``PreparedBackward.run``) puts backward-data's
    channel-packed copies at the start of the buffer and backward-weight's
    split-K workspace after them; the offset it returns is past the copies
    (their bytes are not zero afterwards), so it stays a true claim.
    """

    def __init__(self):
        self._bufs = {}  # (device index, stream) -> [tensor or None, zero_from or None]

    def get(self, device, stream):
        """(allocator for the native call, zero_from to pass, setter for the state it returns)."""
        entry = self._bufs.setdefault((device.index, stream), [None, 0])
        before = entry[1]

        def alloc(nbytes):
            if entry[0] is None or entry[0].numel() < nbytes:
                # From PyTorch's caching allocator, on the current stream. A
                # fresh buffer is all zero, so `before` stays a safe claim.
                entry[0] = torch.zeros(nbytes, dtype=torch.uint8, device=device)
            # Unknown until the call is known to have run.
            entry[1] = None
            return entry[0]

        def done(after):
            entry[1] = after

        return alloc, before, done

    def clear(self):
        self._bufs.clear()


_WORKSPACES = _Workspaces()


def conv_backward_weight(
    input, grad_output, weight_shape, stride=1, padding=0, dilation=1, groups=1, *, split_k=None, deterministic=False, out=None
):
    """Gradient of a convolution with respect to its weight (``grad_weight``).

    ``split_k``: number of k-batches the reduction is split into (``None``:
    chosen by convgrad); ``deterministic``: fixed-order split-K sums (bitwise
    reproducible) instead of atomics. The split-K workspace comes from
    PyTorch's caching allocator, one per device and stream, its contents
    tracked so that a memset is queued only where a call needs zeros that are
    not there (see ``_Workspaces``). ``out``: the result (else allocated
    contiguous, or channels_last for channels_last activations). Returns the
    result.
    """
    nd, weight_shape = _check_operands(input, "input", grad_output, "grad_output", weight_shape, "weight_shape")
    _per_dims(nd, stride, padding, dilation)
    _check_groups(groups)
    if split_k is not None and (isinstance(split_k, bool) or not isinstance(split_k, int) or not 1 <= split_k <= 65535):
        raise ValueError(f"split_k: {split_k!r}; allowed None (chosen by convgrad) or an int from 1 to 65535")
    cl = _format(input, "input")
    if not cl:
        cl = _format(grad_output, "grad_output") and not grad_output.is_contiguous()
    if out is None:
        out = _empty(weight_shape, input, cl)
    else:
        _check_out(out, weight_shape, input, "input")
    if input.numel() == 0 or grad_output.numel() == 0:
        return out.zero_()
    stream = _stream(input)
    alloc, zero_from, done = _WORKSPACES.get(input.device, stream) if input.is_cuda else (None, None, None)
    with _on_device(input):
        _, zero_from_after = _native.conv_backward_weight(
            _aligned(input.detach()),
            _aligned(grad_output.detach()),
            out.detach(),
            *_per_dims(nd, stride, padding, dilation),
            groups,
            split_k=split_k,
            deterministic=deterministic,
            workspace=alloc,
            workspace_zero_from=zero_from,
            stream=stream,
        )
    if done is not None:
        done(zero_from_after)
    return out


def _dense_like(t, channels_last):
    return to_channels_last(t) if channels_last else t.contiguous()


def _is_dense(t, channels_last):
    """Whether ``t`` is dense in the format (channels_last or contiguous)."""
    return is_channels_last(t) if channels_last else t.is_contiguous()


def _raw_stream(device):
    """The current CUDA stream of ``device`` as an integer (no Python Stream object)."""
    return torch.cuda.current_stream(device).cuda_stream


if hasattr(torch._C, "_cuda_getCurrentRawStream"):

    def _raw_stream(device):  # noqa: F811 - the fast form where PyTorch has it
        return torch._C._cuda_getCurrentRawStream(device.index)


# Contiguous (NCHW) activations: the backward runs on channels_last copies of
# x and grad_output and copies grad_input back (see ``_Layer``). Off: the
# NGCHW kernels run on the tensors as they are.
NCHW_VIA_CHANNELS_LAST = os.environ.get("CONVGRAD_NCHW", "channels_last") != "native"


class _Layer:
    """What one layer's backward needs, decided once per shapes and strides.

    The first backward with a given (configuration, shapes, strides, dtype,
    device) makes the layouts dense in one format, checks everything and
    plans the ops in the native ``PreparedBackward``; the later ones look it
    up, redo only the (cached) layout decisions, allocate the outputs with
    their known strides and pass data addresses: no DLPack exchange, no plan
    lookup, nothing that synchronises.

    ``cg_x`` / ``cg_w``: whether convgrad computes grad_input / grad_weight;
    aten computes the others (where convgrad raised ``Unsupported``, or, with
    ``fastest``, where PyTorch's kernel took less GPU time when both were
    timed on the first backward: ``times`` holds the milliseconds,
    ``{"x" or "w": (convgrad, aten)}``).
    """

    __slots__ = ("prepared", "conf", "cg_x", "cg_w", "times", "from_cache", "cl", "w_cl", "copy",
                 "dx_strides", "dw_strides", "dx_contiguous", "dw_contiguous")

    def __init__(self, x, weight, gy, conf, need_x, need_w):
        self.conf = conf
        cl = not x.is_contiguous() and is_channels_last(x)
        # Gradients go back in the formats of the tensors they belong to.
        via_cl = not cl and NCHW_VIA_CHANNELS_LAST and x.shape[1] > 1
        self.dx_contiguous = need_x and via_cl
        self.cl = cl = cl or via_cl
        self.w_cl = cl or is_channels_last(weight) and not weight.is_contiguous()
        # Which of x, grad_output, weight need a copy into the layer's format
        # (the key fixes their strides, so this holds for every later call).
        self.copy = tuple(not _is_dense(t, c) for t, c in ((x, cl), (gy, cl), (weight, self.w_cl)))
        self.dx_strides = _empty(x.shape, x, cl).stride() if need_x else None
        self.dw_strides = _empty(weight.shape, weight, self.w_cl).stride() if need_w else None
        self.dw_contiguous = need_w and self.w_cl and weight.is_contiguous() and not is_channels_last(weight)
        self.times = None
        self.from_cache = False
        self.prepare(x, weight, gy, need_x, need_w)
        if conf[5] and self.prepared is not None and not torch.cuda.is_current_stream_capturing():
            self.choose(x, weight, gy, need_x, need_w)

    def prepare(self, x, weight, gy, cg_x, cg_w):
        """Plans convgrad's part: grad_input if ``cg_x``, grad_weight if ``cg_w``."""
        stride, padding, dilation, groups, deterministic, _ = self.conf
        self.prepared = None
        if cg_x or cg_w:
            xs, gys, ws = self.inputs(x, weight, gy)
            dx = torch.empty_strided(xs.shape, self.dx_strides, dtype=xs.dtype, device=xs.device) if cg_x else None
            dw = torch.empty_strided(ws.shape, self.dw_strides, dtype=ws.dtype, device=ws.device) if cg_w else None
            try:
                self.prepared = _native.PreparedBackward(
                    xs, ws, gys, dx, dw, stride, padding, dilation, groups,
                    deterministic=deterministic, stream=_raw_stream(xs.device),
                )
            except Unsupported:
                pass
        self.cg_x = cg_x and self.prepared is not None
        self.cg_w = cg_w and self.prepared is not None

    def choose(self, x, weight, gy, need_x, need_w):
        """Times each needed op on convgrad and on aten (GPU time, the layer's
        copies included) and keeps the faster; synchronises once. A choice
        measured before for this layer on this setup comes from the find
        cache (:mod:`convgrad_torch.find_cache`) instead."""
        file, setup = _find_file(x.device)
        key = find_cache.layer_key(self.conf, need_x, need_w, x.dtype, x, weight, gy)
        wanted = {op for op, want in (("x", need_x), ("w", need_w)) if want}
        times = _find_entries(file).get(key)
        self.from_cache = times is not None and set(times) == wanted
        if self.from_cache:
            times = {op: tuple(t) for op, t in times.items()}
        else:
            times = {}
            for op in sorted(wanted, reverse=True):  # "x" first, as before
                self.prepare(x, weight, gy, op == "x", op == "w")
                ours = _gpu_ms(lambda: self.run(x, weight, gy, op == "x", op == "w")) if self.prepared else float("inf")
                theirs = _gpu_ms(lambda: _aten(x, weight, gy, self.conf, op == "x", op == "w"))
                times[op] = (ours, theirs)
            if all(t[0] != float("inf") for t in times.values()):
                _find_entries(file)[key] = times
                find_cache.store(file, setup, key, times)
        self.times = times
        win = {op: t[0] < t[1] for op, t in times.items()}
        self.prepare(x, weight, gy, win.get("x", False), win.get("w", False))

    def inputs(self, x, weight, gy):
        """x, grad_output and the weight in the layer's formats, 16-byte aligned."""
        cx, cgy, cw = self.copy
        x = _aligned(_dense_like(x, self.cl) if cx else x)
        gy = _aligned(_dense_like(gy, self.cl) if cgy else gy)
        w = _aligned(_dense_like(weight, self.w_cl) if cw else weight)
        return x, gy, w

    def run(self, x, weight, gy, need_x, need_w):
        """(grad_input, grad_weight), None where not needed: convgrad's ops, then aten's."""
        dx = dw = None
        if self.cg_x or self.cg_w:
            dx, dw = self.run_convgrad(x, weight, gy)
        rest_x, rest_w = need_x and not self.cg_x, need_w and not self.cg_w
        if rest_x or rest_w:
            ax, aw = _aten(x, weight, gy, self.conf, rest_x, rest_w)
            dx, dw = (ax if rest_x else dx), (aw if rest_w else dw)
        return dx, dw

    def run_convgrad(self, x, weight, gy):
        x, gy, w = self.inputs(x, weight, gy)
        dev = x.device
        cg_x, cg_w = self.cg_x, self.cg_w
        dx = torch.empty_strided(x.shape, self.dx_strides, dtype=x.dtype, device=dev) if cg_x else None
        dw = torch.empty_strided(w.shape, self.dw_strides, dtype=w.dtype, device=dev) if cg_w else None
        stream = _raw_stream(dev)
        # Backward-data's channel-packed copies (where K is not a multiple of
        # 8), then backward-weight's split-K workspace: the prepared ops' need.
        need = self.prepared.workspace_bytes
        if need == 0:
            ws, nbytes, zero_from, done = 0, 0, None, None
        elif torch.cuda.is_current_stream_capturing():
            # Graph capture: a workspace of the graph's own pool, zeroed by
            # convgrad inside the graph where backward-weight needs zeros (so
            # every replay starts from zeros; the copies need none).
            buf = torch.empty(need, dtype=torch.uint8, device=dev)
            ws, nbytes, zero_from, done = buf.data_ptr(), need, None, None
        else:
            alloc, zero_from, done = _WORKSPACES.get(dev, stream)
            buf = alloc(need)
            ws, nbytes = buf.data_ptr(), buf.numel()
        after = self.prepared.run(
            x.data_ptr() if cg_w else 0,
            w.data_ptr() if cg_x else 0,
            gy.data_ptr(),
            dx.data_ptr() if cg_x else 0,
            dw.data_ptr() if cg_w else 0,
            ws, nbytes, zero_from, stream,
        )
        if done is not None:
            done(after)
        if self.dx_contiguous and cg_x:
            dx = dx.contiguous()
        if self.dw_contiguous and cg_w:
            dw = dw.contiguous()
        return dx, dw


def _gpu_ms(fn, reps=3, calls=3):
    """GPU milliseconds of one ``fn()``: ``calls`` calls queued behind a sleep
    kernel (so host time is not counted) between two events, best of ``reps``."""
    fn()
    best = float("inf")
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1_000_000)
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        best = min(best, a.elapsed_time(b) / calls)
    return best


def _aten(x, weight, gy, conf, need_x, need_w):
    """PyTorch's (grad_input, grad_weight), None where not needed."""
    stride, padding, dilation, groups = conf[:4]
    nd = x.dim() - 2
    dx, dw, _ = torch.ops.aten.convolution_backward(
        gy, x, weight, None, stride, padding, dilation, False, [0] * nd, groups, [need_x, need_w, False]
    )
    return dx, dw


_LAYERS = {}
_FIND = {}  # device index -> (cache file, setup text); file -> its entries


def _find_file(device):
    """The find-cache file of ``device`` and the setup text it is keyed by."""
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _FIND:
        try:
            driver = torch._C._cuda_getDriverVersion()
        except Exception:  # noqa: BLE001 - older or other builds: the rest still keys it
            driver = "?"
        try:
            from importlib.metadata import version

            ours = version("convgrad_torch")
        except Exception:  # noqa: BLE001 - a source tree without metadata
            ours = "dev"
        setup = (f"{torch.cuda.get_device_name(idx)} | driver {driver} | torch {torch.__version__} | "
                 f"cudnn {torch.backends.cudnn.version()} | convgrad_torch {ours} | archs {sorted(_native.built_archs())}")
        _FIND[idx] = (find_cache.path(setup), setup)
    return _FIND[idx]


def _find_entries(file):
    """The entries of ``file``, read once per process."""
    key = ("entries", file)
    if key not in _FIND:
        _FIND[key] = find_cache.load(file)
    return _FIND[key]


def layer_choices():
    """What each planned layer runs: a list of dicts with the layer's input
    and weight shapes, dtype, whether convgrad computes grad_input (``cg_x``)
    and grad_weight (``cg_w``), and, for layers of ``fastest`` modules, the
    GPU milliseconds timed for each op (``times``: ``{"x" or "w": (convgrad,
    aten)}``) and whether they came from the find cache of an earlier process
    (``from_cache``, see :mod:`convgrad_torch.find_cache`)."""
    out = []
    for key, layer in _LAYERS.items():
        conf, need_x, need_w, dtype, _, x_shape, _, w_shape = key[:8]
        out.append({
            "x": tuple(x_shape), "w": tuple(w_shape), "dtype": str(dtype).replace("torch.", ""),
            "stride": conf[0], "groups": conf[3], "need_x": need_x, "need_w": need_w,
            "cg_x": layer.cg_x, "cg_w": layer.cg_w, "times": layer.times, "from_cache": layer.from_cache,
        })
    return out


def _layer(x, weight, gy, conf, need_x, need_w):
    key = (conf, need_x, need_w, x.dtype, x.device, x.shape, x.stride(), weight.shape, weight.stride(), gy.stride())
    layer = _LAYERS.get(key)
    if layer is None:
        with _on_device(x):
            layer = _LAYERS[key] = _Layer(x, weight, gy, conf, need_x, need_w)
    return layer


# Dynamo does not trace into the native call: under torch.compile the
# backward runs eagerly between the compiled regions (a graph break).
@torch.compiler.disable
def _backward(x, weight, gy, conf, need_x, need_w):
    """(grad_input, grad_weight) of one layer, None where not needed.
    ``conf``: (stride, padding, dilation, groups, deterministic, fastest)."""
    stride, padding, dilation, groups, deterministic, _ = conf
    if x.numel() == 0 or gy.numel() == 0 or weight.numel() == 0:
        # Zero-size tensors (N, C or K of 0): nothing to compute; PyTorch's
        # own backward gives the empty and zero gradients users expect.
        return _aten(x, weight, gy, conf, need_x, need_w)
    if x.is_cuda:
        layer = _layer(x, weight, gy, conf, need_x, need_w)
        if x.device.index == torch.cuda.current_device():
            return layer.run(x, weight, gy, need_x, need_w)
        with _on_device(x):
            return layer.run(x, weight, gy, need_x, need_w)
    # CPU tensors (the emulator): the checked DLPack path.
    cl = not x.is_contiguous() and is_channels_last(x)
    xd, gyd = _dense_like(x, cl), _dense_like(gy, cl)
    try:
        dx = conv_backward_data(gyd, weight, x.shape, stride, padding, dilation, groups) if need_x else None
        dw = None
        if need_w:
            dw = conv_backward_weight(xd, gyd, weight.shape, stride, padding, dilation, groups, deterministic=deterministic)
            if not weight.is_contiguous() and not is_channels_last(weight):
                dw = dw.contiguous()
        return dx, dw
    except Unsupported:
        return _aten(x, weight, gy, conf, need_x, need_w)


def _forward_key(x):
    """What decides a module's layer plan besides the module: the input's
    shape, strides, dtype and the autocast dtype."""
    return (x.shape, x.stride(), x.dtype, _autocast_dtype(x.device.type))


def _autocast_dtype(device_type):
    """The dtype autocast computes convolutions in on ``device_type``, or None where it is off."""
    if torch.is_autocast_enabled(device_type):
        return torch.get_autocast_dtype(device_type)
    return None


class ConvFunction(torch.autograd.Function):
    """A convolution whose backward runs on convgrad.

    Forward: ``torch.nn.functional.conv{1,2,3}d``. Backward: convgrad's
    backward-data and backward-weight (bias: a sum over grad_output), falling
    back to ``torch.ops.aten.convolution_backward`` where convgrad raises
    :class:`Unsupported`. ``ConvFunction.apply(x, weight, bias, stride,
    padding, dilation, groups, deterministic, fastest)``; ``fastest``: on the
    first backward of each shape, time convgrad's and PyTorch's kernel for
    grad_input and for grad_weight and keep the faster of each (see
    :func:`convert_conv_modules`).

    Under ``torch.autocast`` it computes as PyTorch's convolution does: the
    input, weight and bias cast to the autocast dtype, the gradients returned
    in the dtypes of the tensors they belong to (an fp32 parameter gets an
    fp32 gradient).

    On CUDA the backward of each layer is planned once per shapes and
    strides (``_Layer``) and costs a dictionary lookup, the output
    allocations and one native call afterwards.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, stride, padding, dilation, groups, deterministic=False, fastest=False):
        nd = x.dim() - 2
        # ``fastest``: a bool, or the calling module's (maybe empty) skip set.
        fast = isinstance(fastest, set) or bool(fastest)
        ctx.conf = (*(tuple(v) for v in _per_dims(nd, stride, padding, dilation)), groups, deterministic, fast)
        # A module's set of inputs on which PyTorch won both ops (see _ConvgradConv).
        ctx.skip = (fastest, _forward_key(x)) if isinstance(fastest, set) else None
        ctx.has_bias = bias is not None
        ctx.dtypes = (x.dtype, weight.dtype, bias.dtype if bias is not None else None)
        dt = _autocast_dtype(x.device.type)
        if dt is not None:
            x, weight = x.to(dt), weight.to(dt)
            bias = bias.to(dt) if bias is not None else None
        ctx.save_for_backward(x, weight)
        with torch.autocast(x.device.type, enabled=False) if dt is not None else contextlib.nullcontext():
            return _FORWARD[nd](x, weight, bias, stride, padding, dilation, groups)

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        gy = grad_output if grad_output.dtype == x.dtype else grad_output.to(x.dtype)
        dx, dw = _backward(x, weight, gy, ctx.conf, need_x, need_w)
        if ctx.skip is not None and x.is_cuda:
            layer = _layer(x, weight, gy, ctx.conf, need_x, need_w)
            if not (layer.cg_x or layer.cg_w):
                ctx.skip[0].add(ctx.skip[1])
        x_dt, w_dt, b_dt = ctx.dtypes
        if dx is not None and dx.dtype != x_dt:
            dx = dx.to(x_dt)
        if dw is not None and dw.dtype != w_dt:
            dw = dw.to(w_dt)
        db = None
        if ctx.has_bias and need_b:
            db = grad_output.sum(dim=[0, *range(2, grad_output.dim())], dtype=torch.float32).to(b_dt)
        return dx, dw, db, None, None, None, None, None, None


class _ConvgradConv:
    """Forward of ``nn.ConvNd`` through :class:`ConvFunction` (zero padding given as numbers)."""

    deterministic = False
    fastest = False

    def forward(self, x):
        if self.padding_mode != "zeros" or isinstance(self.padding, str):
            return super().forward(x)
        fastest = False
        if self.fastest:
            # Inputs on which PyTorch's kernels won both ops take PyTorch's
            # own convolution (no Python autograd function at all).
            skip = self.__dict__.setdefault("_convgrad_skip", set())
            if _forward_key(x) in skip:
                return super().forward(x)
            fastest = skip
        return ConvFunction.apply(
            x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups, self.deterministic,
            fastest,
        )


class Conv1d(_ConvgradConv, nn.Conv1d):
    """``torch.nn.Conv1d`` with convgrad's backward."""


class Conv2d(_ConvgradConv, nn.Conv2d):
    """``torch.nn.Conv2d`` with convgrad's backward."""


class Conv3d(_ConvgradConv, nn.Conv3d):
    """``torch.nn.Conv3d`` with convgrad's backward."""


_SWAP = {nn.Conv1d: Conv1d, nn.Conv2d: Conv2d, nn.Conv3d: Conv3d}


def convert_conv_modules(model, deterministic=False, fastest=False):
    """Makes every ``nn.Conv{1,2,3}d`` of ``model`` (exact type) use convgrad's backward, in place
    (modules converted before take the new options).

    ``deterministic``: fixed-order split-K sums for grad_weight.
    ``fastest``: like ``torch.backends.cudnn.benchmark`` choosing among
    cuDNN's algorithms, the first backward of each layer shape (CUDA) times
    convgrad's and PyTorch's kernels for grad_input and for grad_weight (GPU
    time, with the layer's layout copies) and keeps the faster of each; that
    first step synchronises once per shape. The choices are kept on disk and
    reused by later processes on the same setup (GPU, driver, torch, cuDNN,
    convgrad versions; ``CONVGRAD_FIND_CACHE=path`` or ``off``, see
    :mod:`convgrad_torch.find_cache`). :func:`layer_choices` tells what
    each layer runs. Off (the default): convgrad runs every op it supports.
    """
    for m in model.modules():
        new = _SWAP.get(type(m))
        if new is not None:
            m.__class__ = new
        if isinstance(m, _ConvgradConv):  # converted now or before: the options apply
            m.deterministic = deterministic
            m.fastest = fastest
    return model
