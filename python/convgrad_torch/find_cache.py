"""Persistent choices of ``fastest``: what each layer shape measured, kept
across processes (like cuDNN's benchmark cache, but on disk).

``fastest=True`` times convgrad's and PyTorch's kernels on the first backward
of each layer shape. A training job restarts often (preemption, evaluation
runs, new epochs in a new process), and that timing costs one synchronising
step per shape each time. The winners are therefore stored in a JSON file per
machine setup and read back on the next start.

The file: ``$CONVGRAD_FIND_CACHE`` (a path; ``off``: no file), else
``$XDG_CACHE_HOME/convgrad`` (default ``~/.cache/convgrad``) /
``find-<setup>.json``. ``<setup>`` is a hash of what makes a measurement
stale: GPU name, CUDA driver, torch and cuDNN versions, convgrad_torch's
version and built architectures. Entries are keyed by the layer's
convolution, the ops needed, dtype, shapes and strides; each holds the GPU
milliseconds ``{"x" or "w": [convgrad, aten]}``. A file that does not parse
is ignored and rewritten (the cache only saves time; it never decides
correctness). Writes go through a temporary file and an atomic rename, and
merge with entries other processes stored meanwhile.
"""

import hashlib
import json
import os
import tempfile

VERSION = 1
_ENV = "CONVGRAD_FIND_CACHE"


def path(setup):
    """The cache file for ``setup`` (a string), or None where turned off."""
    explicit = os.environ.get(_ENV)
    if explicit is not None:
        return None if explicit.lower() in ("off", "none", "0", "") else explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(setup.encode()).hexdigest()[:16]
    return os.path.join(base, "convgrad", f"find-{digest}.json")


def load(file):
    """The entries of ``file`` (``{}`` where it is missing or does not parse)."""
    if file is None:
        return {}
    try:
        with open(file) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("entries"), dict):
        return {}
    return {k: v for k, v in data["entries"].items() if _valid(v)}


def _valid(times):
    """An entry is ``{"x"|"w": [float, float]}``."""
    return (
        isinstance(times, dict)
        and set(times) <= {"x", "w"}
        and all(isinstance(t, list) and len(t) == 2 and all(isinstance(v, (int, float)) for v in t) for t in times.values())
    )


def store(file, setup, key, times):
    """Adds ``key -> times`` to ``file`` (merged with what is there); errors
    writing the file are ignored (a read-only home only costs the timing)."""
    if file is None:
        return
    entries = load(file)
    entries[key] = {op: [float(a), float(b)] for op, (a, b) in times.items()}
    try:
        os.makedirs(os.path.dirname(file) or ".", exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".find-", dir=os.path.dirname(file) or ".")
        with os.fdopen(fd, "w") as f:
            json.dump({"version": VERSION, "setup": setup, "entries": entries}, f, indent=1, sort_keys=True)
        os.replace(tmp, file)
    except OSError:
        pass


def layer_key(conf, need_x, need_w, dtype, x, weight, gy):
    """The text key of one layer's choice (device-independent: the file is per GPU model)."""
    return repr((conf, need_x, need_w, str(dtype), tuple(x.shape), x.stride(),
                 tuple(weight.shape), weight.stride(), gy.stride()))
