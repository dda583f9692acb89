"""The GPU device: PyTorch's CUDA / XPU kernels (cuDNN, cuBLAS, SDPA), CUDA graphs, f16 by default."""

from vinerun.plugins.gpu.plugin import GPUPlugin

__all__ = ["GPUPlugin"]
