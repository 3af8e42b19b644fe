# One cuDNN backward-weight call, repeated, for ncu (-k on the wgrad kernel): N C K H F S.
import sys, torch
N, C, K, H, F, S = (int(v) for v in sys.argv[1:7])
dt = torch.float16
torch.backends.cudnn.benchmark = True
cl = torch.channels_last
x = torch.randn(N, C, H, H, device="cuda", dtype=dt).to(memory_format=cl)
w = torch.randn(K, C, F, F, device="cuda", dtype=dt).to(memory_format=cl)
Ho = (H - F) // S + 1
dy = torch.randn(N, K, Ho, Ho, device="cuda", dtype=dt).to(memory_format=cl)
for _ in range(12):
    torch.ops.aten.convolution_backward(dy, x, w, None, [S, S], [0, 0], [1, 1], False, [0, 0], 1, [False, True, False])
torch.cuda.synchronize()
