"""Times PyTorch/cuDNN convolution backward passes for `cargo xtask bench`.

Reads a JSON list of shapes from argv[1] and prints a JSON list of median
milliseconds (one per shape), timed like the project's anchors: channels_last,
cudnn.benchmark on, TF32 off, CUDA events, median of `iters` after warm-up.
"""
import json
import sys

import torch

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def time_one(s, iters):
    nd = len(s["filter"])
    dt = DT[s["dtype"]]
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
    mask = [s["op"] == "bwd-data", s["op"] == "bwd-weight", False]

    def run():
        return torch.ops.aten.convolution_backward(
            dy, x, w, None, s["strides"], pad, s["dilations"], False, [0] * nd, g, mask)

    for _ in range(5):
        run()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    shapes = json.load(open(sys.argv[1]))
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    out = []
    for s in shapes:
        if s["lpads"] != s["rpads"]:
            out.append(None)  # PyTorch has symmetric padding only
            continue
        out.append(time_one(s, iters))
    print(json.dumps({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                      "device": torch.cuda.get_device_name(), "ms": out}))


if __name__ == "__main__":
    main()
