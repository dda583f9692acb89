"""A minimal ctypes binding of oneDNN's C API (``libdnnl.so.3`` from the ``onednn-cpu-gomp`` wheel).

Why: ``torch.ops.mkldnn._convolution_pointwise`` builds a oneDNN primitive descriptor on every call, some
60-70 us on the 2-core CPUs measured, where a MobileNetV2 convolution computes in 20-300 us. Here the
primitive is created once per (layer, thread count) and a call only points two memory objects at the
input and output buffers and executes: a few microseconds. Only what the convolution kernel needs is
bound: f32 2-D forward-inference convolution with explicit (channels-last) strides, weights in the layout
the primitive picks (reordered once), bias, eltwise and sum post-ops.

:func:`library` returns None when the wheel is not installed; callers then keep the PyTorch path.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

_F32, _TAG_ANY, _CPU, _FWD_INFERENCE, _CONV_DIRECT, _IN_ORDER = 3, 1, 1, 96, 1, 1
_Q_WEIGHTS_MD, _Q_SCRATCHPAD_MD, _Q_IMPL_INFO, _SCRATCHPAD_USER = 131, 136, 8, 1
ARG_SRC, ARG_DST, ARG_WEIGHTS, ARG_BIAS, ARG_SCRATCHPAD = 1, 17, 33, 41, 80
_ALLOCATE = ctypes.c_void_p(-1 & 0xFFFFFFFFFFFFFFFF)
#: eltwise algorithm kinds (dnnl_alg_kind_t)
ELTWISE = {"relu": 0x20, "tanh": 0x21, "elu": 0x22, "logistic": 0x29, "gelu_tanh": 0x2B, "swish": 0x2C,
           "clip": 0x2E, "gelu_erf": 0x31, "hardswish": 0x34}

Dims = ctypes.c_int64 * 12


class _ExecArg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", ctypes.c_void_p)]


class DnnlError(RuntimeError):
    """A oneDNN call returned an error status."""


class Library:
    """The loaded library, one CPU engine and stream."""

    def __init__(self, path: str):
        lib = self.lib = ctypes.CDLL(path)
        for name in ("dnnl_memory_set_data_handle",):
            getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.dnnl_primitive_execute.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        lib.dnnl_primitive_desc_query_md.restype = ctypes.c_void_p
        lib.dnnl_primitive_desc_query_md.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        self.engine = ctypes.c_void_p()
        self.check(lib.dnnl_engine_create(ctypes.byref(self.engine), _CPU, 0), "engine_create")
        self._streams = threading.local()

    def check(self, status: int, what: str) -> None:
        if status != 0:
            raise DnnlError(f"oneDNN {what} failed with status {status}")

    def stream(self) -> ctypes.c_void_p:
        """This thread's stream (oneDNN streams are not meant to be shared across threads)."""
        s = getattr(self._streams, "s", None)
        if s is None:
            s = ctypes.c_void_p()
            self.check(self.lib.dnnl_stream_create(ctypes.byref(s), self.engine, _IN_ORDER), "stream_create")
            self._streams.s = s
        return s

    def md(self, dims: tuple[int, ...], strides: tuple[int, ...] | None) -> ctypes.c_void_p:
        """An f32 memory descriptor with explicit element strides, or ``any`` layout when strides is None."""
        md = ctypes.c_void_p()
        d = Dims(*dims)
        if strides is None:
            self.check(self.lib.dnnl_memory_desc_create_with_tag(ctypes.byref(md), len(dims), d, _F32, _TAG_ANY),
                       "memory_desc_create_with_tag")
        else:
            self.check(self.lib.dnnl_memory_desc_create_with_strides(ctypes.byref(md), len(dims), d, _F32,
                                                                     Dims(*strides)), "memory_desc_create")
        return md

    def memory(self, md: Any, handle: Any = None) -> ctypes.c_void_p:
        mem = ctypes.c_void_p()
        self.check(self.lib.dnnl_memory_create(ctypes.byref(mem), md, self.engine,
                                               _ALLOCATE if handle is None else ctypes.c_void_p(handle)),
                   "memory_create")
        return mem

    def execute(self, primitive: ctypes.c_void_p, args: Any, nargs: int) -> None:
        stream = self.stream()
        self.check(self.lib.dnnl_primitive_execute(primitive, stream, nargs, args), "primitive_execute")
        self.check(self.lib.dnnl_stream_wait(stream), "stream_wait")


_LIB: Library | None = None
_LOADED = False
_LOCK = threading.Lock()


def _find() -> str | None:
    try:
        dist = importlib.metadata.distribution("onednn-cpu-gomp")
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if str(f).endswith("libdnnl.so.3"):
            path = str(dist.locate_file(f))
            return path if os.path.exists(path) else None
    return None


def library() -> Library | None:
    """The binding, or None when ``onednn-cpu-gomp`` is missing or ``VINERUN_CPU_DNNL=0`` turns it off."""
    global _LIB, _LOADED
    with _LOCK:
        if not _LOADED:
            _LOADED = True
            path = _find() if os.environ.get("VINERUN_CPU_DNNL", "1") != "0" else None
            if path is not None:
                import torch  # noqa: F401 - its libgomp first, so that libdnnl shares the same OpenMP runtime

                try:
                    _LIB = Library(path)
                except (OSError, DnnlError):
                    _LIB = None
    return _LIB


class Conv2d:
    """One f32 2-D convolution primitive (channels-last src/dst) with bias and post-ops, per thread count.

    ``post_ops`` is a list of ``("eltwise", alg, alpha, beta)`` / ``("sum",)`` entries, in order.
    """

    def __init__(self, lib: Library, w: np.ndarray, bias: np.ndarray | None, groups: int,
                 in_shape: tuple[int, ...], out_shape: tuple[int, ...], strides: list[int],
                 dilations: list[int], pads_begin: list[int], pads_end: list[int], post_ops: list[tuple]):
        self.lib, self.post_ops = lib, post_ops
        n, c, h, wd = in_shape
        _, o, oh, ow = out_shape
        # the source as channels-last (between convolutions) or NCHW (a model input): one primitive each
        # oneDNN objects this layer made, destroyed when it is collected: (kind, handle)
        self._owned: list[tuple[str, ctypes.c_void_p]] = []
        weakref.finalize(self, _destroy, lib, self._owned)
        self.src_mds = {True: self._own("memory_desc", lib.md(in_shape, (h * wd * c, 1, wd * c, c))),
                        False: self._own("memory_desc", lib.md(in_shape, (c * h * wd, h * wd, wd, 1)))}
        self.dst_md = self._own("memory_desc", lib.md(out_shape, (oh * ow * o, 1, ow * o, o)))
        k = w.shape[2:]
        wdims = (o, c, *k) if groups == 1 else (groups, o // groups, c // groups, *k)
        self.w_plain = np.ascontiguousarray(w, np.float32).reshape(wdims)
        self.bias = None if bias is None else np.ascontiguousarray(bias, np.float32)
        self.geometry = (strides, [d - 1 for d in dilations], pads_begin, pads_end)
        self.wdims = wdims
        self._by_threads: dict[tuple[int, bool], tuple[Any, ...]] = {}
        self._lock = threading.Lock()
        # (thread id, key) -> the bound call (see :meth:`bound`)
        self._calls: dict[tuple[int, tuple[int, bool]], Callable[[int, int], None]] = {}
        self._weights: list[tuple[ctypes.c_void_p, ctypes.c_void_p]] = []  # (layout, reordered filters)

    def _own(self, kind: str, handle: ctypes.c_void_p) -> ctypes.c_void_p:
        self._owned.append((kind, handle))
        return handle

    def _attr(self) -> ctypes.c_void_p:
        lib = self.lib
        attr, po = ctypes.c_void_p(), ctypes.c_void_p()
        lib.check(lib.lib.dnnl_primitive_attr_create(ctypes.byref(attr)), "primitive_attr_create")
        lib.check(lib.lib.dnnl_post_ops_create(ctypes.byref(po)), "post_ops_create")
        self._own("primitive_attr", attr)
        self._own("post_ops", po)
        for op in self.post_ops:
            if op[0] == "sum":
                lib.check(lib.lib.dnnl_post_ops_append_sum(po, ctypes.c_float(1.0), 0, 0), "append_sum")
            else:
                lib.check(lib.lib.dnnl_post_ops_append_eltwise(po, op[1], ctypes.c_float(op[2]),
                                                               ctypes.c_float(op[3])), "append_eltwise")
        lib.check(lib.lib.dnnl_primitive_attr_set_post_ops(attr, po), "set_post_ops")
        # each thread passes its own scratchpad: the library's own is not safe for concurrent calls
        lib.check(lib.lib.dnnl_primitive_attr_set_scratchpad_mode(attr, _SCRATCHPAD_USER), "set_scratchpad_mode")
        return attr

    def _create(self, channels_last: bool) -> tuple[Any, ...]:
        """(primitive, weights memory, bias memory, impl name, scratchpad md) for a thread count and source
        layout."""
        lib = self.lib
        w_any = self._own("memory_desc", lib.md(self.wdims, None))
        b_md = self._own("memory_desc", lib.md((self.bias.shape[0],), (1,))) if self.bias is not None else None
        strides, dil, pl, pr = self.geometry
        pd = ctypes.c_void_p()
        lib.check(lib.lib.dnnl_convolution_forward_primitive_desc_create(
            ctypes.byref(pd), lib.engine, _FWD_INFERENCE, _CONV_DIRECT, self.src_mds[channels_last], w_any, b_md,
            self.dst_md,
            Dims(*strides), Dims(*dil), Dims(*pl), Dims(*pr), self._attr()), "convolution_primitive_desc_create")
        prim = ctypes.c_void_p()
        self._own("primitive_desc", pd)
        lib.check(lib.lib.dnnl_primitive_create(ctypes.byref(prim), pd), "primitive_create")
        self._own("primitive", prim)
        impl = ctypes.c_char_p()
        lib.lib.dnnl_primitive_desc_query(pd, _Q_IMPL_INFO, 0, ctypes.byref(impl))
        w_md = ctypes.c_void_p(lib.lib.dnnl_primitive_desc_query_md(pd, _Q_WEIGHTS_MD, 0))
        # primitives for other thread counts often want the same filter layout: share one reordered copy
        w_mem = next((mem for md, mem in self._weights if lib.lib.dnnl_memory_desc_equal(md, w_md)), None)
        if w_mem is None:
            w_mem = self._reordered(w_md)
            self._weights.append((w_md, w_mem))
        b_mem = self._own("memory", lib.memory(b_md, self.bias.ctypes.data)) if self.bias is not None else None
        scratch_md = ctypes.c_void_p(lib.lib.dnnl_primitive_desc_query_md(pd, _Q_SCRATCHPAD_MD, 0))
        return prim, w_mem, b_mem, (impl.value or b"").decode(), scratch_md

    def bound(self, key: tuple[int, bool]) -> Callable[[int, int], None]:
        """A call ``(src_ptr, dst_ptr)`` for (thread count, channels-last source) on this thread: memory objects
        and the stream are per thread, since a call points them at its own buffers."""
        prim, w_mem, b_mem, _, scratch_md = self.instance(key)
        lib = self.lib
        src = self._own("memory", lib.memory(self.src_mds[key[1]], 0))
        dst = self._own("memory", lib.memory(self.dst_md, 0))
        entries = [(ARG_SRC, src), (ARG_WEIGHTS, w_mem), (ARG_DST, dst)]
        if scratch_md.value:
            entries.append((ARG_SCRATCHPAD, self._own("memory", lib.memory(scratch_md))))  # this thread's
        if b_mem is not None:
            entries.append((ARG_BIAS, b_mem))
        args = (_ExecArg * len(entries))(*[_ExecArg(a, m.value) for a, m in entries])
        nargs, stream = len(entries), lib.stream()
        set_handle, execute = lib.lib.dnnl_memory_set_data_handle, lib.lib.dnnl_primitive_execute

        def run(src_ptr: int, dst_ptr: int) -> None:
            # OpenMP runtime: execution is synchronous, no stream wait needed
            if set_handle(src, src_ptr) or set_handle(dst, dst_ptr) or execute(prim, stream, nargs, args):
                raise DnnlError("oneDNN convolution execution failed")

        return run

    def __call__(self, key: tuple[int, bool], src_ptr: int, dst_ptr: int) -> None:
        """Run on the buffers at ``src_ptr`` / ``dst_ptr`` (the shapes given at creation; the destination
        channels-last, the source as ``key`` says)."""
        run = self._calls.get((threading.get_ident(), key))
        if run is None:
            run = self._calls[(threading.get_ident(), key)] = self.bound(key)
        run(src_ptr, dst_ptr)

    def _reordered(self, w_md: ctypes.c_void_p) -> ctypes.c_void_p:
        """The filters in the primitive's layout (a oneDNN-owned buffer), reordered once."""
        lib = self.lib
        plain = self.w_plain
        strides = tuple(s // plain.itemsize for s in plain.strides)
        src_md = self._own("memory_desc", lib.md(plain.shape, strides))
        src = self._own("memory", lib.memory(src_md, plain.ctypes.data))
        dst = self._own("memory", lib.memory(w_md))  # the reordered filters, in a oneDNN-allocated buffer
        rpd, rprim = ctypes.c_void_p(), ctypes.c_void_p()
        lib.check(lib.lib.dnnl_reorder_primitive_desc_create(ctypes.byref(rpd), src_md, lib.engine, w_md,
                                                            lib.engine, None), "reorder_primitive_desc_create")
        self._own("primitive_desc", rpd)
        lib.check(lib.lib.dnnl_primitive_create(ctypes.byref(rprim), rpd), "reorder_primitive_create")
        self._own("primitive", rprim)
        args = (_ExecArg * 2)(_ExecArg(ARG_SRC, src.value), _ExecArg(ARG_DST, dst.value))
        lib.execute(rprim, args, 2)
        return dst

    def instance(self, key: tuple[int, bool]) -> tuple[Any, ...]:
        inst = self._by_threads.get(key)
        if inst is None:
            with self._lock:
                inst = self._by_threads.get(key)
                if inst is None:
                    inst = self._by_threads[key] = self._create(key[1])
        return inst

    def impl_name(self, key: tuple[int, bool]) -> str:
        return self.instance(key)[3]

    def takes_nchw(self, threads: int) -> bool:
        """Whether oneDNN has an optimized primitive for an NCHW source (else callers make the source
        channels-last; its reference implementation, ``ref:any``, is a hundred times slower)."""
        try:
            return not self.impl_name((threads, False)).startswith("ref")
        except DnnlError:
            return False


# the order objects are destroyed in: users before what they use
_DESTROY_ORDER = ("primitive", "memory", "primitive_desc", "primitive_attr", "post_ops", "memory_desc")


def _destroy(lib: Library, owned: list[tuple[str, ctypes.c_void_p]]) -> None:
    """Destroy the oneDNN objects a layer made (its finalizer: runs when the layer is collected)."""
    for kind in _DESTROY_ORDER:
        fn = getattr(lib.lib, f"dnnl_{kind}_destroy")
        for k, handle in owned:
            if k == kind and handle:
                fn(handle)
    owned.clear()
