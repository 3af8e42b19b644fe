"""What the CPU and CUDA tests share about their convolution problems: each
is a tuple ``(name, N, G, C, K, input spatial, filter, stride, padding,
dilation)``; the tensor shapes follow PyTorch's. Needs neither NumPy nor torch.
"""


def conv_out(inp, f, s, p, d):
    """Output spatial size of a convolution."""
    return [(i + 2 * pp - dd * (ff - 1) - 1) // ss + 1 for i, ff, ss, pp, dd in zip(inp, f, s, p, d)]


def shapes(prob):
    """Shapes of ``x`` [N, G*C, *in], ``w`` [G*K, C, *filter] and ``dy``
    [N, G*K, *out] of a problem, and its output spatial size."""
    _, n, g, c, k, inp, f, s, p, d = prob
    out = conv_out(inp, f, s, p, d)
    return (n, g * c, *inp), (g * k, c, *f), (n, g * k, *out), out


def ids(problems):
    """Test ids: the problems' names."""
    return [p[0] for p in problems]
