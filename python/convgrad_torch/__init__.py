"""convgrad_torch: convgrad's convolution backward passes on PyTorch tensors.

Importing this package does not import torch: the native module
(``convgrad_torch._native``) takes any DLPack tensor (NumPy arrays included),
and the torch layer (``convgrad_torch.torch_ops``) is imported on first use of
one of its names below.
"""

from ._native import Unsupported, built_archs, EMULATOR_ARCH  # noqa: F401
from . import _native  # noqa: F401

__all__ = [
    "Unsupported",
    "built_archs",
    "conv_backward_data",
    "conv_backward_data_fused",
    "conv_backward_weight",
    "ConvFunction",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "convert_conv_modules",
    "layer_choices",
]

# Everything but these two lives in the torch layer.
_TORCH_NAMES = set(__all__) - {"Unsupported", "built_archs"}


def __getattr__(name):
    # PEP 562: the torch layer loads (and imports torch) only when asked for.
    if name in _TORCH_NAMES:
        from . import torch_ops

        return getattr(torch_ops, name)
    raise AttributeError(f"module 'convgrad_torch' has no attribute {name!r}")
