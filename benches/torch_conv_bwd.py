"""Times PyTorch/cuDNN convolution backward passes for `cargo xtask bench`.

Reads a JSON list of shapes from argv[1] and prints a JSON object whose "ms" is
a list of median milliseconds (one per shape, null where PyTorch cannot run it),
timed like the project's anchors: channels_last, cudnn.benchmark on, TF32 off,
CUDA events, median of `iters` after warm-up.

The GPU is kept busy while a timed call is queued (a sleep kernel and a
256 MiB fill ahead of the start event, the fill being the one our side
queues, so both start on the same cache state), so the events measure the GPU time of PyTorch's kernels,
not the host time PyTorch spends before launching them: on an idle GPU the
start event fires at once and the interval also holds the 20-60 us of host
work of `aten.convolution_backward`, which for small layers exceeds the
kernels themselves (2026-11-27: in a ResNet-50 training step cuDNN's
backward took 3.6 ms of GPU time where the per-layer times summed to about
twice that). `CONVGRAD_PEER_IDLE=1` times the old way (idle GPU).

Each shape has "op": "bwd-weight" (grad_weight only) or "bwd-data" (grad_input
only), both through `torch.ops.aten.convolution_backward` with the matching
output_mask. A bwd-data shape with "epilogue": "add-relu-bias" also adds a
per-channel bias to grad_input and applies ReLU, unfused (PyTorch's equivalent
of our fused add-relu on a G_C bias).
"""
import json
import os
import sys
import time

import torch

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

# About 0.5 ms at 1.98 GHz: longer than PyTorch's host work for one call.
SLEEP_CYCLES = 1_000_000
IDLE = os.environ.get("CONVGRAD_PEER_IDLE") == "1"
# The same 256 MiB fill `cargo xtask bench` queues ahead of each of our calls
# (xtask/src/bench.rs BUSY_BYTES), queued after the sleep: both sides start
# with the caches in the same state (L2 evicted, holding the fill's dirty
# lines), as in a training step where other layers ran in between. Before
# 2026-11-28 (session 35) only our side had it and the peer ran on a warm L2.
FILL_BYTES = 256 << 20
# Calls queued back to back per timed interval (xtask/src/bench.rs BATCH_ENV).
BATCH = int(os.environ.get("CONVGRAD_BENCH_BATCH", "1"))

# "f32-tf32" (our opt-in TF32 operands) is timed against cuDNN with TF32 allowed for
# that shape only; every other dtype keeps TF32 off. "bf16-f32" (bf16 tensors, f32
# weight gradient) has no PyTorch equivalent and gets null.
DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f32-tf32": torch.float32}
OPS = ("bwd-weight", "bwd-data")


def time_one(s, iters):
    op = s["op"]
    if op not in OPS:
        raise ValueError(f"op {op!r}: allowed {', '.join(OPS)}")
    epilogue = s.get("epilogue", "none")
    if epilogue not in ("none", "add-relu-bias") or (epilogue != "none" and op != "bwd-data"):
        raise ValueError(f"epilogue {epilogue!r} with op {op!r}: only bwd-data takes add-relu-bias")
    nd = len(s["filter"])
    dt = DT[s["dtype"]]
    torch.backends.cudnn.allow_tf32 = s["dtype"] == "f32-tf32"
    g, n, c, k = s["G"], s["N"], s["C"], s["K"]
    dev = "cuda"
    x = torch.randn([n, g * c] + s["input"], device=dev, dtype=dt)
    w = torch.randn([g * k, c] + s["filter"], device=dev, dtype=dt)
    mf = {1: None, 2: torch.channels_last, 3: torch.channels_last_3d}[nd]
    if mf is not None:
        x = x.contiguous(memory_format=mf)
        w = w.contiguous(memory_format=mf)
    pad = s["lpads"]
    y = torch.ops.aten.convolution(x, w, None, s["strides"], pad, s["dilations"], False, [0] * nd, g)
    dy = torch.randn_like(y)
    # grad_input only for bwd-data, grad_weight only for bwd-weight.
    mask = [op == "bwd-data", op == "bwd-weight", False]
    bias = torch.randn([1, g * c] + [1] * nd, device=dev, dtype=dt)

    def run():
        out = torch.ops.aten.convolution_backward(
            dy, x, w, None, s["strides"], pad, s["dilations"], False, [0] * nd, g, mask)
        if epilogue == "add-relu-bias":
            torch.relu_(out[0].add_(bias))
        return out

    for _ in range(5):
        run()
    torch.cuda.synchronize()
    times = []
    fill = None if IDLE else torch.empty(FILL_BYTES, device=dev, dtype=torch.uint8)
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        if not IDLE:
            torch.cuda._sleep(SLEEP_CYCLES)
            fill.zero_()
        a.record()
        for _ in range(BATCH):
            run()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / BATCH)
    times.sort()
    return times[len(times) // 2]


def describe(s):
    """One line naming a shape (for the progress lines on stderr)."""
    return (f"{s['op']} {s['dtype']} G{s['G']} N{s['N']} C{s['C']} K{s['K']} "
            f"in {'x'.join(map(str, s['input']))} filter {'x'.join(map(str, s['filter']))} "
            f"stride {s['strides']} dil {s['dilations']} pad {s['lpads']}/{s['rpads']}"
            + (f" epilogue {s['epilogue']}" if s.get("epilogue", "none") != "none" else ""))


def main():
    shapes = json.load(open(sys.argv[1]))
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    out = []
    start = time.monotonic()
    for i, s in enumerate(shapes):
        t = time.monotonic()
        if s["lpads"] != s["rpads"]:
            out.append(None)  # PyTorch has symmetric padding only
            note = "skipped (asymmetric padding)"
        elif s["dtype"] not in DT:
            out.append(None)
            note = f"skipped (no PyTorch dtype for {s['dtype']})"
        else:
            out.append(time_one(s, iters))
            note = f"{out[-1]:.4f} ms"
        # Progress on stderr (stdout is the one JSON line the caller parses).
        now = time.monotonic()
        print(f"torch_conv_bwd: shape {i + 1}/{len(shapes)} {describe(s)}: {note}, "
              f"{now - t:.1f} s ({now - start:.1f} s elapsed)", file=sys.stderr, flush=True)
    print(json.dumps({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                      "device": torch.cuda.get_device_name(), "ms": out}))


if __name__ == "__main__":
    main()
