"""Float64 NumPy reference of the convolution backward passes (PyTorch shapes).

``x`` [N, G*C, *in], ``w`` [G*K, C, *f], ``dy`` [N, G*K, *out]; forward
``y[n, g*K+k, o] = sum_{c,f} x[n, g*C+c, o*s - p + f*d] * w[g*K+k, c, f]``.
Loops over the filter taps, a tensor contraction per tap; fine for the tiny
shapes of the CPU tests. Each function also returns the same sum over absolute
values (for error bounds).
"""

import itertools

import numpy as np


def _tap_slices(f, s, d, out):
    return tuple(slice(fi * di, fi * di + si * (oi - 1) + 1, si) for fi, si, di, oi in zip(f, s, d, out))


def bwd_weight(x, dy, w_shape, stride, padding, dilation, groups):
    x = x.astype(np.float64)
    dy = dy.astype(np.float64)
    nd = x.ndim - 2
    n, gc = x.shape[:2]
    gk = dy.shape[1]
    g = groups
    c, k = gc // g, gk // g
    out = dy.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    dw = np.zeros(w_shape)
    adw = np.zeros(w_shape)
    dyg = dy.reshape(n, g, k, *out)
    sp = "".join("xyz"[:nd])
    for f in itertools.product(*[range(v) for v in w_shape[2:]]):
        xs = xp[(slice(None), slice(None)) + _tap_slices(f, stride, dilation, out)].reshape(n, g, c, *out)
        eq = f"ngc{sp},ngk{sp}->gkc"
        dw[(slice(None), slice(None)) + f] = np.einsum(eq, xs, dyg).reshape(gk, c)
        adw[(slice(None), slice(None)) + f] = np.einsum(eq, np.abs(xs), np.abs(dyg)).reshape(gk, c)
    return dw, adw


def bwd_data(dy, w, x_shape, stride, padding, dilation, groups):
    dy = dy.astype(np.float64)
    w = w.astype(np.float64)
    nd = dy.ndim - 2
    n, gk = dy.shape[:2]
    g = groups
    c = w.shape[1]
    k = gk // g
    out = dy.shape[2:]
    padded = [n, g * c] + [i + 2 * p for i, p in zip(x_shape[2:], padding)]
    dxp = np.zeros(padded)
    adxp = np.zeros(padded)
    dyg = dy.reshape(n, g, k, *out)
    wg = w.reshape(g, k, c, *w.shape[2:])
    sp = "".join("xyz"[:nd])
    for f in itertools.product(*[range(v) for v in w.shape[2:]]):
        sl = (slice(None), slice(None)) + _tap_slices(f, stride, dilation, out)
        wt = wg[(slice(None), slice(None), slice(None)) + f]
        eq = f"ngk{sp},gkc->ngc{sp}"
        dxp[sl] += np.einsum(eq, dyg, wt).reshape(n, g * c, *out)
        adxp[sl] += np.einsum(eq, np.abs(dyg), np.abs(wt)).reshape(n, g * c, *out)
    crop = (slice(None), slice(None)) + tuple(slice(p, p + i) for p, i in zip(padding, x_shape[2:]))
    return dxp[crop], adxp[crop]


def broadcast_d(d, x_shape, groups):
    """A D tensor (bias [G*C], per-pixel [N, G, *sp], or full) as x_shape, float64."""
    d = np.asarray(d, dtype=np.float64)
    nd = len(x_shape) - 2
    if d.ndim == 1:
        return np.broadcast_to(d.reshape((1, -1) + (1,) * nd), x_shape)
    if tuple(d.shape) == tuple(x_shape):
        return d
    c = x_shape[1] // groups
    return np.repeat(d, c, axis=1)


def epilogue(v, av, steps, ds):
    """Applies a chain to conv result ``v`` (abs-sum ``av``); returns value and abs bound."""
    ds = list(ds)
    for s in steps:
        name, *a = s if isinstance(s, tuple) else (s,)
        name = name.replace("_", "-")
        if name == "add":
            d = ds.pop(0)
            v, av = v + d, av + np.abs(d)
        elif name == "add-relu":
            d = ds.pop(0)
            v, av = np.maximum(v + d, 0), av + np.abs(d)
        elif name == "relu-mask":
            d = ds.pop(0)
            v, av = v * (d > 0), av * (d > 0)
        elif name == "scale":
            v, av = a[0] * v, abs(a[0]) * av
        elif name == "bilinear":
            d = ds.pop(0)
            v, av = a[0] * v + a[1] * d, abs(a[0]) * av + abs(a[1]) * np.abs(d)
        else:
            raise ValueError(name)
    return v, av


# NumPy has no bfloat16: the tests keep its bits in uint16 arrays (``to_bf16``,
# ``from_bf16``) and name the dtype by this string.
BFLOAT16 = "bfloat16"

UNIT_ROUNDOFF = {np.dtype(np.float32): 2.0**-24, np.dtype(np.float16): 2.0**-11, BFLOAT16: 2.0**-8}
SMALLEST = {np.dtype(np.float32): 2.0**-149, np.dtype(np.float16): 2.0**-24, BFLOAT16: 2.0**-133}


def to_bf16(a):
    """The bfloat16 bits (uint16, same shape and memory order) of ``a``
    rounded to nearest even (finite values)."""
    u = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits):
    """The values of bfloat16 ``bits`` (uint16) as float64."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _dtype_key(dtype):
    return BFLOAT16 if isinstance(dtype, str) and dtype == BFLOAT16 else np.dtype(dtype)


def check(ours, ref, absref, terms, dtype, what):
    """Asserts every element finite and within the f32-accumulation bound.

    |ours - ref| <= 2 u(dtype) |ref| + 4 (terms + 2) 2^-24 absref + 2 smallest(dtype)

    ``terms``: summands per output element; ``absref`` the same sum over
    absolute values (float64): f32 accumulation in any order errs by at most
    (terms) 2^-24 absref, and the cast to ``dtype`` by u |ref|. ``dtype``: a
    NumPy float type or ``BFLOAT16`` (then ``ours`` holds the values, e.g.
    ``from_bf16`` of the bits).
    """
    ours = np.asarray(ours, dtype=np.float64)
    assert np.isfinite(ours).all(), f"{what}: {np.count_nonzero(~np.isfinite(ours))} non-finite elements (unwritten NaN poison?)"
    dt = _dtype_key(dtype)
    tol = 2 * UNIT_ROUNDOFF[dt] * np.abs(ref) + 4 * (terms + 2) * 2.0**-24 * absref + 2 * SMALLEST[dt]
    err = np.abs(ours - ref)
    bad = err > tol
    if bad.any():
        i = np.unravel_index(np.argmax(err - tol), err.shape)
        raise AssertionError(
            f"{what}: {np.count_nonzero(bad)} of {err.size} elements outside tolerance; worst at {i}: "
            f"ours {ours[i]!r} ref {ref[i]!r} tol {tol[i]!r}"
        )
