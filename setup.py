"""The compiled pieces (optional: without a C compiler vinerun installs and runs without them): the CPU plugin's
native step loop, and its own C kernels (Winograd convolution, matrix-vector product, attention, LSTM steps,
NCHW image inputs to channels-last), built with OpenMP."""

from setuptools import Extension, setup

KERNELS = "vinerun/plugins/cpu/kernels/csrc"

setup(ext_modules=[
    Extension("vinerun.plugins.cpu._steploop", ["vinerun/plugins/cpu/_steploop.c"], extra_compile_args=["-O2"],
              optional=True),
    Extension("vinerun.plugins.cpu.kernels._ckernels",
              [f"{KERNELS}/{name}.c"
               for name in ("ckernels", "scratch", "amx", "winograd", "gemv", "attention", "lstm", "planes")],
              depends=[f"{KERNELS}/ckernels.h"], extra_compile_args=["-O3", "-fopenmp", "-Wno-psabi"],
              extra_link_args=["-fopenmp"], optional=True),
    Extension("vinerun.plugins.cpu.kernels._compressed", [f"{KERNELS}/compressed_matmul.c"],
              extra_compile_args=["-O3", "-fopenmp", "-Wno-psabi"], extra_link_args=["-fopenmp"], optional=True),
])
