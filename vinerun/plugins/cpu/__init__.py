"""The CPU device: ATen/oneDNN kernels through PyTorch, NumPy reference for rare ops."""

from vinerun.plugins.cpu.plugin import CPUPlugin

__all__ = ["CPUPlugin"]
