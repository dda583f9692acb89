"""The CPU plugin's own C kernels (``csrc/``) as :class:`~._dnnl.Primitive` objects: a subclass describes its
parameter block; a binding passes the kernel's entry point as the execute function, so the kernel takes a
primitive's place in a native segment's step table or in a Python call alike.

:func:`available` is False where the extension was not built (no C compiler at install time): callers keep
their oneDNN paths.
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Any

from vinerun.plugins.cpu.kernels._dnnl import ARG_DST, ARG_SRC, ELTWISE, Binding, Library, Primitive, _ExecArg

try:
    import torch  # noqa: F401 - its libgomp first: the extension's OpenMP must be the one torch and oneDNN share

    from vinerun.plugins.cpu.kernels import _ckernels  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler
    _ckernels = None

_ACT_NONE, _ACT_RELU, _ACT_CLIP = 0, 1, 2


class Api(ctypes.Structure):
    """``dnnl_api`` of csrc/ckernels.h: the oneDNN functions a kernel calls."""

    _fields_ = [("get_handle", ctypes.c_void_p), ("set_handle", ctypes.c_void_p), ("execute", ctypes.c_void_p)]

    @classmethod
    def of(cls, lib: Library) -> Api:
        fns = lib.lib
        return cls(*(ctypes.cast(f, ctypes.c_void_p).value for f in (
            fns.dnnl_memory_get_data_handle, fns.dnnl_memory_set_data_handle, fns.dnnl_primitive_execute)))


class Activation(ctypes.Structure):
    """``activation`` of csrc/ckernels.h: none, ReLU or a clip, applied in a kernel's epilogue."""

    _fields_ = [("kind", ctypes.c_int64), ("lo", ctypes.c_float), ("hi", ctypes.c_float)]


def available() -> bool:
    """Whether the C kernels were built."""
    return _ckernels is not None


@functools.cache
def amx_ready() -> bool:
    """Whether the C kernels use AMX tiles here: built with them, on a CPU that has them, with Linux's grant of
    the tile state to this process (asked once). ``VINERUN_CPU_AMX=0`` keeps them on their AVX-512 paths (to
    compare the two)."""
    return _ckernels is not None and os.environ.get("VINERUN_CPU_AMX", "1") != "0" and _ckernels.amx_ready()


def entry_point(name: str) -> int:
    """The address of the C function ``name`` in the extension (its table in csrc/ckernels.c)."""
    if _ckernels is None:
        raise RuntimeError("the CPU plugin's C kernels are not built (no C compiler at install time)")
    return _ckernels.entry_points()[name]


def activation(op: tuple | None) -> Activation | None:
    """A oneDNN-style eltwise post-op as an epilogue activation (None: one the C epilogues do not have)."""
    if op is None:
        return Activation(_ACT_NONE, 0.0, 0.0)
    if op[0] == "eltwise" and op[1] == ELTWISE["relu"] and op[2] == 0.0:
        return Activation(_ACT_RELU, 0.0, 0.0)
    if op[0] == "eltwise" and op[1] == ELTWISE["clip"]:
        return Activation(_ACT_CLIP, op[2], op[3])
    return None


class CKernel(Primitive):
    """A C kernel: a subclass sets ``entry`` (its name in the extension) and gives :meth:`_params` (its parameter
    block for a key); its runtime buffers are ``src_md`` and ``dst_md``, or what :meth:`_runtime` lists (the C
    side reads them in that order)."""

    entry = ""
    src_md: ctypes.c_void_p
    dst_md: ctypes.c_void_p

    def __init__(self, lib: Library):
        super().__init__(lib)
        self._entry = entry_point(self.entry)

    def _runtime(self, key: Any) -> list[tuple[int, ctypes.c_void_p]]:
        return [(ARG_SRC, self.src_md), (ARG_DST, self.dst_md)]

    def _params(self, key: Any) -> tuple[ctypes.Structure, Any]:
        """(the parameter block, anything it points into that must live as long)."""
        raise NotImplementedError

    def _create(self, key: Any) -> tuple[Any, ...]:
        return None, [], self.impl(key), None

    def impl(self, key: Any) -> str:
        """The implementation name profiling reports."""
        return self.entry

    def binding(self, key: Any) -> Binding:
        self.instance(key)
        params, keep = self._params(key)
        runtime = self._runtime(key)
        memories = [self._own("memory", self.lib.memory(md, 0)) for _, md in runtime]
        args = (_ExecArg * len(runtime))(*[_ExecArg(arg, m.value) for (arg, _), m in zip(runtime, memories,
                                                                                          strict=True)])
        return Binding(ctypes.c_void_p(ctypes.addressof(params)), memories, args, self._entry, (params, keep))
