"""Training-step benchmark: PyTorch alone against PyTorch with convgrad's
convolution backward (``convgrad_torch.convert_conv_modules``), in one run.

For each model, batch, dtype, precision mode and memory format it builds the
model twice from the same weights, trains both with SGD on the same random
batch and reports the median step time of each (CUDA events around whole
steps, forward + loss + backward + optimizer step, after warm-up;
``cudnn.benchmark`` on, TF32 off), their ratio (PyTorch / convgrad: above 1.0
convgrad is faster), and, with ``--profile``, the convolution backward's host
time per step (CPU time of ``aten::convolution_backward`` or of convgrad's
``convgrad::conv_backward`` range) and its GPU time per step (the kernels
launched inside those ranges), from ``torch.profiler`` over a few steps.

Every configuration is also checked once: the convgrad model's gradient of
each convolution (grad_weight, and grad_input where the layer computes one)
against ``aten.convolution_backward`` on the same saved tensors, by the
rule of ``python/tests/test_cuda.py`` with a float32 aten call (TF32 off) as
the reference:

    max|ours - ref| <= max(4 * max|aten - ref|, floor(dtype) * max|ref|)
    floor: 2^-9 (float16), 2^-6 (bfloat16)

Modes: ``cast`` (the model and input in the dtype) and ``autocast`` (fp32
parameters, ``torch.autocast`` in the dtype, a GradScaler for float16).
Formats: ``cl`` (channels_last model and input) and ``nchw`` (contiguous).

    python3 benches/train_step.py --models resnet50,convnext_t --batches 32,64 \\
        --dtypes f16,bf16 --modes cast,autocast --formats cl,nchw --profile --json out.json
"""

import argparse
import copy
import json
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import convgrad_torch as cg

DT = {"f16": torch.float16, "bf16": torch.bfloat16}
FLOOR = {torch.float16: 2.0**-9, torch.bfloat16: 2.0**-6}


class UNet2d(nn.Module):
    """A 2-D U-Net (Ronneberger et al.): 4 levels of two 3x3 conv + BN + ReLU,
    max-pool down, 2x2 transposed conv up, skip concatenation; 64 base channels."""

    def __init__(self, cin=3, classes=2, base=64, depth=4):
        super().__init__()

        def block(a, b):
            return nn.Sequential(
                nn.Conv2d(a, b, 3, padding=1, bias=False), nn.BatchNorm2d(b), nn.ReLU(inplace=True),
                nn.Conv2d(b, b, 3, padding=1, bias=False), nn.BatchNorm2d(b), nn.ReLU(inplace=True),
            )

        ch = [base * 2**i for i in range(depth + 1)]
        self.down = nn.ModuleList([block(cin, ch[0])] + [block(ch[i], ch[i + 1]) for i in range(depth)])
        self.up = nn.ModuleList([nn.ConvTranspose2d(ch[i + 1], ch[i], 2, stride=2) for i in reversed(range(depth))])
        self.dec = nn.ModuleList([block(ch[i] * 2, ch[i]) for i in reversed(range(depth))])
        self.head = nn.Conv2d(ch[0], classes, 1)

    def forward(self, x):
        skips = []
        for i, b in enumerate(self.down):
            x = b(x if i == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        skips.pop()
        for up, dec in zip(self.up, self.dec):
            x = dec(torch.cat([up(x), skips.pop()], 1))
        return self.head(x)


def make_model(name):
    """(model, input shape without batch, kind of target)."""
    import torchvision.models as tvm

    if name == "unet2d":
        return UNet2d(), (3, 256, 256), "seg"
    ctor = {
        "resnet50": tvm.resnet50,
        "resnext50": tvm.resnext50_32x4d,
        "mobilenet_v2": tvm.mobilenet_v2,
        "efficientnet_b0": tvm.efficientnet_b0,
        "convnext_t": tvm.convnext_tiny,
        # Odd channel counts (branches of 58, 116, 232): the channel pack's network.
        "shufflenet_v2": tvm.shufflenet_v2_x1_0,
    }[name]
    return ctor(weights=None), (3, 224, 224), "cls"


MODELS = ["resnet50", "resnext50", "mobilenet_v2", "efficientnet_b0", "convnext_t", "unet2d", "shufflenet_v2"]


class Setup:
    """One model prepared for training in one configuration."""

    def __init__(self, base, dtype, mode, fmt, convgrad, fastest=False):
        self.model = copy.deepcopy(base)
        if convgrad:
            cg.convert_conv_modules(self.model, fastest=fastest)
        self.model = self.model.cuda()
        if mode == "cast":
            self.model = self.model.to(dtype)
        if fmt == "cl":
            self.model = self.model.to(memory_format=torch.channels_last)
        self.dtype, self.mode = dtype, mode
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-3, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cuda", enabled=(mode == "autocast" and dtype == torch.float16))

    def loss(self, x, target, kind):
        with torch.autocast("cuda", dtype=self.dtype, enabled=self.mode == "autocast"):
            out = self.model(x)
            if kind == "cls":
                return F.cross_entropy(out.float(), target)
            return F.mse_loss(out.float(), target)

    def step(self, x, target, kind):
        self.opt.zero_grad(set_to_none=True)
        loss = self.loss(x, target, kind)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()


def batch(shape, n, kind, dtype, mode, fmt):
    x = torch.randn(n, *shape, device="cuda")
    if mode == "cast":
        x = x.to(dtype)
    if fmt == "cl":
        x = x.contiguous(memory_format=torch.channels_last)
    if kind == "cls":
        target = torch.randint(0, 1000, (n,), device="cuda")
    else:
        target = torch.randn(n, 2, *shape[1:], device="cuda")
    return x, target


def time_steps(setup, data, steps):
    times = []
    for _ in range(steps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        setup.step(*data)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return times


def profile(setup, data, steps, convgrad):
    """(host ms, GPU ms, calls) of the convolution backward per step: the
    autograd node of the convolution (PyTorch's ``ConvolutionBackward0``,
    convgrad's ``ConvFunctionBackward``), everything it runs included."""
    from torch.profiler import ProfilerActivity, profile as prof

    node = "ConvFunctionBackward" if convgrad else "ConvolutionBackward0"
    name = f"autograd::engine::evaluate_function: {node}"
    with prof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        for _ in range(steps):
            setup.step(*data)
        torch.cuda.synchronize()
    host = gpu = calls = 0.0
    for e in p.key_averages():
        if e.key == name:
            host += e.cpu_time_total / 1000
            gpu += e.device_time_total / 1000
            calls += e.count
    return host / steps, gpu / steps, calls / steps


def top_kernels(setup, data, steps, n=12):
    """The GPU time per step of the ``n`` most expensive kernels of a step."""
    from torch.profiler import ProfilerActivity, profile as prof

    with prof(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(steps):
            setup.step(*data)
        torch.cuda.synchronize()
    rows = [(e.device_time_total / 1000 / steps, e.count // steps, e.key) for e in p.key_averages() if e.device_time_total > 0]
    rows.sort(reverse=True)
    return rows[:n]


def check_grads(setup, data, kind):
    """Each convolution's gradients against aten's on the tensors it saw in
    one step: (layers, failures, worst err/tol). grad_weight is the
    parameter's gradient from the convgrad model's backward; grad_input is
    convgrad's for the same saved tensors through the same (cached) layer
    plan (the input's own gradient also sums the other uses of the tensor)."""
    from convgrad_torch import torch_ops

    saved = []

    def hook(mod, inp, out):
        rec = {"mod": mod, "x": inp[0], "need_x": inp[0].requires_grad}
        saved.append(rec)
        out.register_hook(lambda g: rec.__setitem__("dy", g))

    convs = [m for m in setup.model.modules() if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d))]
    hs = [m.register_forward_hook(hook) for m in convs]
    setup.opt.zero_grad(set_to_none=True)
    loss = setup.loss(*data)
    loss.backward()
    for h in hs:
        h.remove()
    worst, fails = 0.0, []
    for i, r in enumerate(saved):
        m, dy = r["mod"], r.get("dy")
        if dy is None or m.weight.grad is None:
            continue
        dt = dy.dtype
        x, w = r["x"].detach().to(dt), m.weight.detach().to(dt)
        nd = x.dim() - 2
        args = (m.stride, m.padding, m.dilation, False, [0] * nd, m.groups)
        need_x = r["need_x"]
        mask = [need_x, True, False]
        aten = torch.ops.aten.convolution_backward(dy, x, w, None, *args, mask)
        ref = torch.ops.aten.convolution_backward(dy.float(), x.float(), w.float(), None, *args, mask)
        pairs = [("dw", m.weight.grad, aten[1], ref[1])]
        if need_x:
            conf = (tuple(m.stride), tuple(m.padding), tuple(m.dilation), m.groups, False, m.fastest)
            dx, _ = torch_ops._backward(x, w, dy, conf, True, True)
            pairs.append(("dx", dx, aten[0], ref[0]))
        for what, ours, a, rf in pairs:
            ours = ours.float()
            if not torch.isfinite(ours).all():
                fails.append(f"layer {i} {what}: non-finite")
                continue
            err = (ours - rf).abs().max().item()
            tol = max(4 * (a.float() - rf).abs().max().item(), FLOOR[dt] * rf.abs().max().item())
            worst = max(worst, err / tol if tol > 0 else (0.0 if err == 0 else float("inf")))
            if err > tol:
                fails.append(f"layer {i} {what} {tuple(x.shape)}->{tuple(dy.shape)}: err {err:.3e} > tol {tol:.3e}")
    return len(saved), fails, worst


def run_config(name, n, dts, mode, fmt, args):
    base, shape, kind = make_model(name)
    dtype = DT[dts]
    from convgrad_torch import torch_ops

    torch_ops._LAYERS.clear()
    theirs = Setup(base, dtype, mode, fmt, convgrad=False)
    ours = Setup(base, dtype, mode, fmt, convgrad=True, fastest=args.fastest)
    x, target = batch(shape, n, kind, dtype, mode, fmt)
    data = (x, target, kind)
    for s in (theirs, ours):
        time_steps(s, data, args.warmup)
    t_pt, t_cg = [], []
    for _ in range(args.rounds):
        t_pt += time_steps(theirs, data, args.steps)
        t_cg += time_steps(ours, data, args.steps)
    row = {
        "model": name, "batch": n, "dtype": dts, "mode": mode, "format": fmt,
        "pytorch_ms": statistics.median(t_pt), "convgrad_ms": statistics.median(t_cg),
    }
    row["ratio"] = row["pytorch_ms"] / row["convgrad_ms"]
    layers, fails, worst = check_grads(ours, data, kind)
    row.update(check_layers=layers, check_failures=fails, check_worst=worst)
    ch = cg.layer_choices()
    row["convgrad_ops"] = [sum(c["cg_x"] for c in ch), sum(c["need_x"] for c in ch),
                           sum(c["cg_w"] for c in ch), sum(c["need_w"] for c in ch)]
    if args.profile:
        row["pt_bwd_host_ms"], row["pt_bwd_gpu_ms"], row["pt_bwd_calls"] = profile(theirs, data, 3, False)
        row["cg_bwd_host_ms"], row["cg_bwd_gpu_ms"], row["cg_bwd_calls"] = profile(ours, data, 3, True)
    if args.kernels:
        row["pt_kernels"] = top_kernels(theirs, data, 3)
        row["cg_kernels"] = top_kernels(ours, data, 3)
    del theirs, ours
    torch.cuda.empty_cache()
    return row


# Layers for --host-cost: (name, N, C, K, spatial, filter, stride, padding, groups).
HOST_LAYERS = [
    ("resnet50 layer1 3x3 64", 32, 64, 64, 56, 3, 1, 1, 1),
    ("resnet50 layer3 1x1 1024->256", 32, 1024, 256, 14, 1, 1, 0, 1),
    ("convnext dw 7x7 384", 32, 384, 384, 14, 7, 1, 3, 384),
]


def host_cost(calls):
    """Host microseconds per convolution backward (grad_input and
    grad_weight of one layer), f16 channels_last, with the GPU kept busy
    (a sleep kernel first) so that only the calling thread is timed: aten's
    ``convolution_backward``, convgrad's layer call, and each through
    autograd (``torch.autograd.grad`` on a retained graph)."""
    from convgrad_torch import torch_ops

    print(f"# host cost per backward call (dx and dW), {calls} calls, f16 channels_last")
    print(f"{'layer':<32}{'aten':>10}{'convgrad':>10}{'autograd aten':>15}{'autograd convgrad':>19}  (us)")
    for name, n, c, k, hw, f, st, pad, g in HOST_LAYERS:
        cl = torch.channels_last
        x = torch.randn(n, c, hw, hw, device="cuda", dtype=torch.float16).contiguous(memory_format=cl).requires_grad_(True)
        w = torch.randn(k, c // g, f, f, device="cuda", dtype=torch.float16).contiguous(memory_format=cl).requires_grad_(True)
        y_pt = F.conv2d(x, w, None, st, pad, 1, g)
        y_cg = cg.ConvFunction.apply(x, w, None, st, pad, 1, g, False)
        gy = torch.randn_like(y_pt)
        conf = ((st, st), (pad, pad), (1, 1), g, False, False)
        xd, wd = x.detach(), w.detach()
        ways = {
            "aten": lambda: torch.ops.aten.convolution_backward(
                gy, xd, wd, None, [st, st], [pad, pad], [1, 1], False, [0, 0], g, [True, True, False]),
            "convgrad": lambda: torch_ops._backward(xd, wd, gy, conf, True, True),
            "autograd aten": lambda: torch.autograd.grad(y_pt, (x, w), gy, retain_graph=True),
            "autograd convgrad": lambda: torch.autograd.grad(y_cg, (x, w), gy, retain_graph=True),
        }
        row = []
        for fn in ways.values():
            for _ in range(20):
                fn()
            torch.cuda.synchronize()
            torch.cuda._sleep(int(2e9))  # ~1 s of GPU work ahead of the calls
            t = time.perf_counter()
            for _ in range(calls):
                fn()
            row.append((time.perf_counter() - t) * 1e6 / calls)
            torch.cuda.synchronize()
        print(f"{name:<32}" + "".join(f"{v:>{wd_}.1f}" for v, wd_ in zip(row, (10, 10, 15, 19))), flush=True)



def layer_times(name, n, dts, fmt, iters=20, per_op=False):
    """Each convolution of one training step of ``name`` timed alone
    (grad_input + grad_weight, aten and convgrad, median of ``iters``), with
    CUDA events around one call on an idle GPU (how ``bench``'s peer timed
    until 2026-11-27) and with the GPU kept busy ahead of the start event
    (GPU time only); the sums per step, to set beside the profiler's in-step
    GPU time of the convolution backward."""
    from convgrad_torch import torch_ops

    base, shape, kind = make_model(name)
    dtype = DT[dts]
    ours = Setup(base, dtype, "cast", fmt, convgrad=True)
    data = batch(shape, n, kind, dtype, "cast", fmt)
    data = (*data, kind)
    saved = []

    def hook(mod, inp, out):
        rec = {"mod": mod, "x": inp[0].detach(), "need_x": inp[0].requires_grad}
        saved.append(rec)
        out.register_hook(lambda g: rec.__setitem__("dy", g.detach()))

    hs = [m.register_forward_hook(hook) for m in ours.model.modules() if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d))]
    ours.step(*data)
    for h in hs:
        h.remove()

    def timed(fn, busy):
        ts = []
        for _ in range(iters):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if busy:
                torch.cuda._sleep(1_000_000)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b))
        return statistics.median(ts)

    sums = [0.0] * 4
    rows = []
    for r in saved:
        m, x, dy = r["mod"], r["x"], r["dy"]
        w = m.weight.detach()
        nd = x.dim() - 2
        mask = [r["need_x"], True, False]
        conf = (tuple(m.stride), tuple(m.padding), tuple(m.dilation), m.groups, False, False)

        def aten():
            torch.ops.aten.convolution_backward(dy, x, w, None, m.stride, m.padding, m.dilation, False, [0] * nd, m.groups, mask)

        def conv():
            torch_ops._backward(x, w, dy, conf, r["need_x"], True)

        for f in (aten, conv):
            for _ in range(3):
                f()
        t = [timed(aten, False), timed(conv, False), timed(aten, True), timed(conv, True)]
        sums = [a + b for a, b in zip(sums, t)]
        if per_op:
            rows.append(op_times(m, x, w, dy, conf, r["need_x"], timed))
    print(f"# {name} {n} {dts} {fmt}: sum over its {len(saved)} convolutions of grad_input + grad_weight timed alone (ms)")
    print(f"#   idle GPU (host time included): aten {sums[0]:.2f}  convgrad {sums[1]:.2f}  ratio {sums[0] / sums[1]:.3f}x")
    print(f"#   busy GPU (GPU time only):      aten {sums[2]:.2f}  convgrad {sums[3]:.2f}  ratio {sums[2] / sums[3]:.3f}x", flush=True)
    if per_op:
        print_op_times(rows)


def op_times(m, x, w, dy, conf, need_x, timed):
    """One layer's grad_input and grad_weight timed apart (GPU time only), with
    the kernels convgrad runs for each."""
    from convgrad_torch import torch_ops

    row = {"x": tuple(x.shape), "w": tuple(w.shape), "stride": tuple(m.stride), "groups": m.groups}
    for op, nx, nw in (("dx", True, False), ("dw", False, True)):
        if op == "dx" and not need_x:
            continue
        layer = torch_ops._layer(x, w, dy, conf, nx, nw)
        for _ in range(3):
            layer.run(x, w, dy, nx, nw)
            torch_ops._aten(x, w, dy, conf, nx, nw)
        ours = timed(lambda: layer.run(x, w, dy, nx, nw), True)
        theirs = timed(lambda: torch_ops._aten(x, w, dy, conf, nx, nw), True)
        what = layer.prepared.describe() if layer.prepared is not None else "aten"
        row[op] = (theirs, ours, what.replace("\n", " | "))
    return row


def print_op_times(rows):
    """The per-op table, largest deficit (our ms - aten's) first."""
    ops = [(r, op) for r in rows for op in ("dx", "dw") if op in r]
    ops.sort(key=lambda ro: ro[0][ro[1]][0] - ro[0][ro[1]][1])
    print(f"# per op, GPU time only, largest deficit first (ms)")
    print(f"{'op':<3}{'x':<22}{'w':<20}{'s':<3}{'g':>4}{'aten':>8}{'ours':>8}{'ratio':>7}  kernels")
    for r, op in ops:
        a, o, what = r[op]
        print(f"{op:<3}{str(r['x']):<22}{str(r['w']):<20}{r['stride'][0]:<3}{r['groups']:>4}"
              f"{a:8.3f}{o:8.3f}{a / o:7.2f}  {what[:150]}")
    for op in ("dx", "dw"):
        a = sum(r[op][0] for r in rows if op in r)
        o = sum(r[op][1] for r in rows if op in r)
        print(f"# {op}: aten {a:.3f} ms, convgrad {o:.3f} ms, ratio {a / o:.3f}x", flush=True)


def fmt_row(r):
    s = (f"{r['model']:<16}{r['batch']:>5} {r['dtype']:<5}{r['mode']:<9}{r['format']:<5}"
         f"{r['pytorch_ms']:>9.2f}{r['convgrad_ms']:>9.2f}{r['ratio']:>8.3f}x")
    if "cg_bwd_host_ms" in r:
        pc, cc = max(r["pt_bwd_calls"], 1), max(r["cg_bwd_calls"], 1)
        s += (f"  host/call {1000 * r['pt_bwd_host_ms'] / pc:6.1f} {1000 * r['cg_bwd_host_ms'] / cc:6.1f} us"
              f"  bwd GPU/step {r['pt_bwd_gpu_ms']:6.2f} {r['cg_bwd_gpu_ms']:6.2f} ms")
    ops = r.get("convgrad_ops")
    if ops:
        s += f"  convgrad runs (of layer shapes) dx {ops[0]}/{ops[1]} dW {ops[2]}/{ops[3]}"
    s += f"  check {r['check_layers']} layers {'ok' if not r['check_failures'] else 'FAIL ' + str(len(r['check_failures']))} (worst {r['check_worst']:.2f} of tol)"
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batches", default="16,32,64,128")
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--modes", default="cast,autocast")
    ap.add_argument("--formats", default="cl,nchw")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per round and path")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds of each path")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="host and GPU time of the conv backward per step")
    ap.add_argument("--kernels", action="store_true", help="the top kernels of each path")
    ap.add_argument("--json", help="write the rows here (after each configuration)")
    ap.add_argument("--budget-s", type=float, default=0, help="stop starting configurations after this many seconds")
    ap.add_argument("--fastest", action="store_true",
                    help="convert with fastest=True (per layer and op, the faster of convgrad and PyTorch)")
    ap.add_argument("--layer-times", metavar="MODEL",
                    help="time each convolution of MODEL alone (first batch, dtype, format of the lists) first")
    ap.add_argument("--per-op", action="store_true",
                    help="with --layer-times: each layer's grad_input and grad_weight apart, with the kernels")
    ap.add_argument("--host-cost", type=int, default=0, metavar="CALLS",
                    help="time the host cost of CALLS backward calls per layer first")
    args = ap.parse_args()
    for m in filter(None, args.models.split(",")):
        if m not in MODELS:
            sys.exit(f"--models: unknown model {m!r}; allowed {', '.join(MODELS)}")
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"# torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}, "
          f"convgrad archs {cg.built_archs()}")
    print(f"# {' '.join(sys.argv[1:])}")
    if args.host_cost:
        host_cost(args.host_cost)
    if args.layer_times:
        first = lambda v: v.split(",")[0]  # noqa: E731
        layer_times(args.layer_times, int(first(args.batches)), first(args.dtypes), first(args.formats),
                    per_op=args.per_op)
    if not args.models:
        return
    print(f"{'model':<16}{'batch':>5} {'dtype':<5}{'mode':<9}{'fmt':<5}{'pytorch':>9}{'convgrad':>9}{'ratio':>9}  (ms per step)")
    rows, t0 = [], time.time()
    for name in args.models.split(","):
        for n in map(int, args.batches.split(",")):
            for dts in args.dtypes.split(","):
                for mode in args.modes.split(","):
                    for fmt in args.formats.split(","):
                        if args.budget_s and time.time() - t0 > args.budget_s:
                            print(f"# budget of {args.budget_s} s spent: stopped before {name} {n} {dts} {mode} {fmt}")
                            break
                        try:
                            r = run_config(name, n, dts, mode, fmt, args)
                        except Exception as e:  # noqa: BLE001 - a failed configuration is a row, not the end
                            r = {"model": name, "batch": n, "dtype": dts, "mode": mode, "format": fmt, "error": repr(e)}
                            print(f"{name:<16}{n:>5} {dts:<5}{mode:<9}{fmt:<5} ERROR {e!r}", flush=True)
                            torch.cuda.empty_cache()
                        else:
                            print(fmt_row(r), flush=True)
                            for k in ("pt_kernels", "cg_kernels"):
                                for ms, cnt, key in r.get(k, []):
                                    print(f"    {k[:2]} {ms:8.3f} ms {cnt:4d}x {key[:110]}")
                            for f in r["check_failures"][:5]:
                                print(f"    {f}")
                        rows.append(r)
                        if args.json:
                            with open(args.json, "w") as f:
                                json.dump(rows, f, indent=1)
    ok = [r for r in rows if "ratio" in r]
    if ok:
        g = statistics.geometric_mean([r["ratio"] for r in ok])
        worst = min(ok, key=lambda r: r["ratio"])
        print(f"# geomean {g:.3f}x over {len(ok)} configurations; worst {worst['ratio']:.3f}x "
              f"({worst['model']} {worst['batch']} {worst['dtype']} {worst['mode']} {worst['format']})")
    bad = [r for r in rows if "error" in r or r.get("check_failures")]
    if bad:
        print(f"# {len(bad)} configurations failed or did not match aten")
        sys.exit(1)


if __name__ == "__main__":
    main()
