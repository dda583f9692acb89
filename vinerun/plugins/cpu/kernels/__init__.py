"""CPU kernels: per op type, a factory that turns a node into a callable on host arrays.

A factory returns ``None`` when it cannot handle a node (a dtype or attribute it does not cover);
the node then runs its NumPy reference, and profiling says so (exec type ``ref``).
Modules in this package are imported automatically and register with ``@cpu_kernel``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vinerun.ir.node import Node
from vinerun.plugin_api.kernel_registry import KernelRegistry

KernelFn = Callable[[list[Any]], list[Any]]


#: the endings of exec types that say a kernel computes in another precision than f32
PRECISION_SUFFIXES = ("_bf16", "_int8")


@dataclass
class Kernel:
    """A compiled node: ``fn(inputs) -> outputs`` and the name profiling reports.

    ``native``: how the node runs inside a native segment (see :mod:`._native`), where the kernel offers it.
    ``impl``: the library implementation it runs, where it knows it (oneDNN's, e.g. ``brg:avx512_core_amx``).
    """

    fn: KernelFn
    exec_type: str
    native: Callable[[list[Any]], Any] | None = None
    impl: str = ""


def profiled_exec_type(kernel: Kernel) -> str:
    """The exec type profiling reports: the kernel's, with the implementation it runs in brackets before the
    precision suffix (``onednn_conv2d[brg:avx512_core_amx]_bf16``), as OpenVINO's name their ISA
    (``brgconv_avx512_amx_bf16``)."""
    if not kernel.impl:
        return kernel.exec_type
    name = kernel.exec_type
    suffix = next((s for s in PRECISION_SUFFIXES if name.endswith(s)), "")
    return f"{name[:len(name) - len(suffix)]}[{kernel.impl}]{suffix}"


Factory = Callable[[Node], Kernel | None]
_REGISTRY = KernelRegistry(__name__, __path__)
#: ``@cpu_kernel("Relu", ...)``: register a kernel factory for the given op type names
cpu_kernel = _REGISTRY.kernel


def reference_kernel(node: Node) -> Kernel:
    return Kernel(node.evaluate, "ref")


def select_kernel(node: Node) -> Kernel:
    """The first registered kernel that accepts ``node``, else the NumPy reference.

    A node computing in bf16 (its output 0 is bf16) reports it: its exec type ends in ``_bf16``.
    """
    kernel = next((k for k in (f(node) for f in _REGISTRY.for_type(node.type_name)) if k is not None), None)
    kernel = kernel or reference_kernel(node)
    if _computes_bf16(node) and not kernel.exec_type.endswith("_bf16"):
        kernel.exec_type += "_bf16"
    return kernel


def _computes_bf16(node: Node) -> bool:
    return node.get_output_size() > 0 and node.get_output_element_type(0).get_type_name() == "bf16"
