"""A small training loop whose convolution backward passes run on convgrad.

    python python/examples/train_loop.py [--steps 8] [--device cuda|cpu] [--channels-last]

A few conv layers (dense, strided, grouped, depthwise) learn to map random
images to a fixed random target with SGD. The model is an ordinary
``torch.nn`` model; ``convgrad_torch.convert_conv_modules`` makes its
``Conv2d`` layers use ``convgrad_torch.ConvFunction`` (forward: PyTorch,
backward: convgrad's backward-data and backward-weight on the current CUDA
stream). On a machine without CUDA it runs on the CPU, where convgrad's
kernels run on its emulator (slow, so the problem is small). At the end the
gradients of one step are compared with PyTorch's own backward.
"""

import argparse
import time

import torch

import convgrad_torch


def make_model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(32, 64, 3, stride=2, padding=1, groups=4),
        torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, padding=1, groups=64),  # depthwise
        torch.nn.ReLU(),
        torch.nn.Conv2d(64, 8, 1),
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    ap.add_argument("--channels-last", action="store_true")
    args = ap.parse_args()
    dev = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    size, batch = (32, 16) if dev.type == "cuda" else (12, 4)

    model = convgrad_torch.convert_conv_modules(make_model()).to(dev, dtype)
    reference = make_model().to(dev, dtype)
    reference.load_state_dict(model.state_dict())
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    x = torch.randn(batch, 3, size, size, device=dev, dtype=dtype).contiguous(memory_format=fmt)
    target = torch.randn(batch, 8, size // 2, size // 2, device=dev, dtype=dtype)

    # One step's gradients against PyTorch's backward.
    for m in (model, reference):
        torch.nn.functional.mse_loss(m(x).float(), target.float()).backward()
    worst = max(
        ((p.grad.float() - q.grad.float()).abs().max() / q.grad.float().abs().max().clamp_min(1e-12)).item()
        for p, q in zip(model.parameters(), reference.parameters())
    )
    print(f"device {dev} ({args.dtype}, {'channels_last' if args.channels_last else 'contiguous'}): "
          f"largest relative gradient difference to PyTorch's backward {worst:.2e}")
    model.zero_grad()

    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(args.steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x).float(), target.float())
        loss.backward()
        opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        print(f"step {step}: loss {loss.item():.5f} ({(time.perf_counter() - t0) * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
