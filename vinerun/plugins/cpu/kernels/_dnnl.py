"""A minimal ctypes binding of oneDNN's C API (``libdnnl.so.3`` from the ``onednn-cpu-gomp`` wheel).

Why: ``torch.ops.mkldnn._convolution_pointwise`` builds a oneDNN primitive descriptor on every call, some
60-70 us on the 2-core CPUs measured, where a MobileNetV2 convolution computes in 20-300 us. Here the
primitive is created once per (layer, thread count) and a call only points two memory objects at the
input and output buffers and executes: a few microseconds. Only what the convolution kernel needs is
bound: f32 or bf16 2-D forward-inference convolution with explicit (channels-last) strides, weights in the
layout the primitive picks (reordered once), an f32 bias, eltwise and sum post-ops.

:func:`library` returns None when the wheel is not installed; callers then keep the PyTorch path.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

F32, BF16, S32, S8, U8 = 3, 2, 4, 5, 6  # dnnl_data_type_t
#: the oneDNN data type of a NumPy dtype name (the float types kernels compute in)
DATA_TYPES = {"float32": F32, "bfloat16": BF16}
#: the integer types of the int8 kernels (:mod:`.conv_int8`); a layout may hold any of these
INT_TYPES = {"int8": S8, "uint8": U8, "int32": S32}
LAYOUT_TYPES = {**DATA_TYPES, **INT_TYPES}
_TAG_ANY, _CPU, _FWD_INFERENCE, _CONV_DIRECT, _IN_ORDER = 1, 1, 96, 1, 1
_DECONV_DIRECT = 0xA  # dnnl_deconvolution_direct
_Q_WEIGHTS_MD, _Q_SCRATCHPAD_MD, _Q_IMPL_INFO, _SCRATCHPAD_USER = 131, 136, 8, 1
ARG_SRC, ARG_SRC_1, ARG_DST, ARG_WEIGHTS, ARG_BIAS, ARG_SCRATCHPAD = 1, 2, 17, 33, 41, 80
ARG_POST_OP_BASE = 32768  # DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE (oneDNN 3.x)
ARG_POST_OP_DW = 16384  # DNNL_ARG_ATTR_POST_OP_DW: or-ed with ARG_WEIGHTS / ARG_BIAS
ARG_ATTR_SCALES, ARG_ATTR_ZERO_POINTS = 4096, 8192  # or-ed with ARG_SRC / ARG_WEIGHTS / ARG_DST
_Q_EXEC_ARG_MD = 255
_ALLOCATE = ctypes.c_void_p(-1 & 0xFFFFFFFFFFFFFFFF)
#: eltwise algorithm kinds (dnnl_alg_kind_t)
ELTWISE = {"relu": 0x20, "tanh": 0x21, "elu": 0x22, "linear": 0x26, "soft_relu": 0x27, "logistic": 0x29,
           "gelu_tanh": 0x2B, "swish": 0x2C, "clip": 0x2E, "gelu_erf": 0x31, "round": 0x32, "mish": 0x33,
           "hardswish": 0x34}

Dims = ctypes.c_int64 * 12

try:  # the C step loop's buffer-protocol reader: ~0.05 us where NumPy's ``a.ctypes.data`` takes ~1 us
    from vinerun.plugins.cpu._steploop import address as data_address  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler
    def data_address(a: np.ndarray) -> int:
        """The address of ``a``'s first element."""
        return a.ctypes.data


class _ExecArg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", ctypes.c_void_p)]


@dataclass(frozen=True)
class DepthwisePostOp:
    """A 3x3 depthwise convolution run inside a 1x1 convolution's primitive (oneDNN's ``dw`` post-op): the 1x1
    output is consumed tile by tile while in cache instead of making a round trip through memory.

    ``weights``: f32 [C, 1, 1, 3, 3]; ``bias``: f32 [C]; ``stride`` 1 or 2; ``padding``: top and left (oneDNN
    derives the bottom and right ones from an output of ceil(input / stride)); ``post_ops``: eltwise entries
    applied to its output.
    """

    weights: np.ndarray
    bias: np.ndarray
    stride: int
    padding: int
    post_ops: tuple[tuple, ...] = ()


@dataclass
class Binding:
    """A primitive ready to execute: its memory objects for the runtime buffers (in :meth:`Primitive._runtime`
    order, to point at buffers) and the argument array of every buffer (constants and scratchpad included).

    ``execute``: the address of a function with ``dnnl_primitive_execute``'s signature that runs it, 0 for that
    one (a kernel of our own passes its entry point and parameter block as ``primitive``); ``keep``: objects the
    binding's addresses point into.
    """

    primitive: ctypes.c_void_p
    memories: list[ctypes.c_void_p]
    args: ctypes.Array
    execute: int = 0
    keep: Any = None


#: the C type of an execute function (``dnnl_primitive_execute`` or a kernel of our own)
EXECUTE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)


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

    def md(self, dims: tuple[int, ...], strides: tuple[int, ...] | None, dtype: int = F32) -> ctypes.c_void_p:
        """A memory descriptor (``dtype``: :data:`F32` or :data:`BF16`) with explicit element strides, or
        ``any`` layout when strides is None."""
        md = ctypes.c_void_p()
        d = Dims(*dims)
        if strides is None:
            self.check(self.lib.dnnl_memory_desc_create_with_tag(ctypes.byref(md), len(dims), d, dtype, _TAG_ANY),
                       "memory_desc_create_with_tag")
        else:
            self.check(self.lib.dnnl_memory_desc_create_with_strides(ctypes.byref(md), len(dims), d, dtype,
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


class Primitive:
    """A oneDNN primitive made once per key (e.g. thread count and a layout variant), run on raw addresses.

    A subclass gives :meth:`_descriptor` (the primitive descriptor for a key and the attributes),
    :meth:`_runtime` (the (argument, memory descriptor) pairs of the buffers every call passes, in call order)
    and may give :meth:`_constants` (arguments fixed at creation: reordered weights, a bias). ``post_ops``:
    ``("eltwise", alg, alpha, beta)``, ``("sum",)`` or ``("binary", alg, layout or md)`` entries, in order;
    a binary post-op's second operand is a runtime argument (:meth:`binary_args`).
    """

    def __init__(self, lib: Library, post_ops: list[tuple] | None = None,
                 scales: dict[int, tuple[int, np.ndarray]] | None = None, zero_points: dict[int, int] | None = None):
        self.lib = lib
        self.scales = {arg: (mask, np.ascontiguousarray(v, np.float32).reshape(-1))
                       for arg, (mask, v) in (scales or {}).items()}
        self.zero_points = {arg: np.array([zp], np.int32) for arg, zp in (zero_points or {}).items() if zp}
        # oneDNN objects this primitive made, destroyed when it is collected: (kind, handle)
        self._owned: list[tuple[str, ctypes.c_void_p]] = []
        weakref.finalize(self, _destroy, lib, self._owned)
        # a binary post-op's operand may come as a layout (dims, strides, type): its memory descriptor here; or
        # as a constant array (``("binary", alg, array)``: a bias added after a requantization)
        self._binary_constants: dict[int, np.ndarray] = {}
        self.post_ops = []
        for i, op in enumerate(post_ops or ()):
            if op[0] == "binary" and isinstance(op[2], np.ndarray):
                operand = self._binary_constants[i] = np.ascontiguousarray(op[2], np.float32)
                op = ("binary", op[1], self.md(operand.shape, tuple(s // 4 for s in operand.strides)))
            elif op[0] == "binary" and isinstance(op[2], tuple):
                op = ("binary", op[1], self.md(*op[2]))
            self.post_ops.append(op)
        self._instances: dict[Any, tuple[Any, ...]] = {}
        self._lock = threading.Lock()
        # (thread id, key) -> the bound call (see :meth:`bound`)
        self._calls: dict[tuple[int, Any], Callable[..., None]] = {}
        self._packed: list[tuple[ctypes.c_void_p, ctypes.c_void_p]] = []  # (layout, reordered weights)

    def _own(self, kind: str, handle: ctypes.c_void_p) -> ctypes.c_void_p:
        self._owned.append((kind, handle))
        return handle

    def md(self, dims: tuple[int, ...], strides: tuple[int, ...] | None, dtype: int = F32) -> ctypes.c_void_p:
        """A memory descriptor this primitive owns (``strides`` None: the ``any`` layout)."""
        return self._own("memory_desc", self.lib.md(tuple(dims), strides, dtype))

    def _descriptor(self, key: Any, attr: ctypes.c_void_p) -> ctypes.c_void_p:
        raise NotImplementedError

    def _runtime(self, key: Any) -> list[tuple[int, ctypes.c_void_p]]:
        raise NotImplementedError

    def _constants(self, pd: ctypes.c_void_p) -> list[tuple[int, ctypes.c_void_p]]:
        del pd
        return []

    def binary_args(self) -> list[tuple[int, ctypes.c_void_p]]:
        """The runtime (argument, memory descriptor) pairs of the binary post-ops' second operands."""
        return [(ARG_POST_OP_BASE * (i + 1) | ARG_SRC_1, op[2]) for i, op in enumerate(self.post_ops)
                if op[0] == "binary" and i not in self._binary_constants]

    def _attr(self) -> ctypes.c_void_p:
        lib = self.lib
        attr, po = ctypes.c_void_p(), ctypes.c_void_p()
        lib.check(lib.lib.dnnl_primitive_attr_create(ctypes.byref(attr)), "primitive_attr_create")
        lib.check(lib.lib.dnnl_post_ops_create(ctypes.byref(po)), "post_ops_create")
        self._own("primitive_attr", attr)
        self._own("post_ops", po)
        for op in self.post_ops:
            if op[0] == "sum":
                scale, zp, dt = op[1:] if len(op) > 1 else (1.0, 0, 0)
                lib.check(lib.lib.dnnl_post_ops_append_sum(po, ctypes.c_float(scale), ctypes.c_int32(zp), dt),
                          "append_sum")
            elif op[0] == "binary":
                lib.check(lib.lib.dnnl_post_ops_append_binary(po, op[1], op[2]), "append_binary")
            elif op[0] == "depthwise":  # (kind, weights type, bias type, destination type, kernel, stride, pad)
                lib.check(lib.lib.dnnl_post_ops_append_dw(po, *op[1:4], *(ctypes.c_int64(v) for v in op[4:])),
                          "append_dw")
            else:
                lib.check(lib.lib.dnnl_post_ops_append_eltwise(po, op[1], ctypes.c_float(op[2]),
                                                               ctypes.c_float(op[3])), "append_eltwise")
        lib.check(lib.lib.dnnl_primitive_attr_set_post_ops(attr, po), "set_post_ops")
        for arg, (mask, _) in self.scales.items():
            lib.check(lib.lib.dnnl_primitive_attr_set_scales_mask(attr, arg, mask), "set_scales_mask")
        for arg in self.zero_points:
            lib.check(lib.lib.dnnl_primitive_attr_set_zero_points_mask(attr, arg, 0), "set_zero_points_mask")
        # each thread passes its own scratchpad: the library's own is not safe for concurrent calls
        lib.check(lib.lib.dnnl_primitive_attr_set_scratchpad_mode(attr, _SCRATCHPAD_USER), "set_scratchpad_mode")
        return attr

    def _create(self, key: Any) -> tuple[Any, ...]:
        """(primitive, constant arguments, impl name, scratchpad md) for ``key``."""
        lib = self.lib
        pd = self._own("primitive_desc", self._descriptor(key, self._attr()))
        prim = ctypes.c_void_p()
        lib.check(lib.lib.dnnl_primitive_create(ctypes.byref(prim), pd), "primitive_create")
        self._own("primitive", prim)
        scratch_md = ctypes.c_void_p(lib.lib.dnnl_primitive_desc_query_md(pd, _Q_SCRATCHPAD_MD, 0))
        return prim, self._constants(pd) + self._quantization_constants(), _impl_of(lib, pd), scratch_md

    def _quantization_constants(self) -> list[tuple[int, ctypes.c_void_p]]:
        """The memories of the scales, zero points and constant binary operands (constants of the primitive,
        like its weights)."""
        out = []
        for i, operand in self._binary_constants.items():
            md = self.post_ops[i][2]
            out.append((ARG_POST_OP_BASE * (i + 1) | ARG_SRC_1,
                        self._own("memory", self.lib.memory(md, operand.ctypes.data))))
        for arg, (_, values) in self.scales.items():
            md = self.md((values.size,), (1,))
            out.append((ARG_ATTR_SCALES | arg, self._own("memory", self.lib.memory(md, values.ctypes.data))))
        for arg, zp in self.zero_points.items():
            md = self.md((1,), (1,), S32)
            out.append((ARG_ATTR_ZERO_POINTS | arg, self._own("memory", self.lib.memory(md, zp.ctypes.data))))
        return out

    def instance(self, key: Any) -> tuple[Any, ...]:
        inst = self._instances.get(key)
        if inst is None:
            with self._lock:
                inst = self._instances.get(key)
                if inst is None:
                    inst = self._instances[key] = self._create(key)
        return inst

    def planned_impl(self, key: Any) -> str:
        """The implementation oneDNN would pick for ``key``, from its descriptor alone (no primitive made, no
        weights packed)."""
        return _impl_of(self.lib, self._own("primitive_desc", self._descriptor(key, self._attr())))

    def impl_name(self, key: Any) -> str:
        """oneDNN's implementation for ``key``, e.g. ``brgconv_1x1:avx512_core_bf16`` (made now if new)."""
        return self.instance(key)[2]

    def binding(self, key: Any) -> Binding:
        """The primitive for ``key`` with memory objects of its own for the runtime buffers (and a scratchpad):
        one per thread and user, since a call points them at its buffers."""
        prim, constants, _, scratch_md = self.instance(key)
        lib = self.lib
        mems = [self._own("memory", lib.memory(md, 0)) for _, md in self._runtime(key)]
        entries = [(arg, mem) for (arg, _), mem in zip(self._runtime(key), mems, strict=True)] + constants
        if scratch_md.value:
            entries.append((ARG_SCRATCHPAD, self._own("memory", lib.memory(scratch_md))))  # this thread's
        args = (_ExecArg * len(entries))(*[_ExecArg(a, m.value) for a, m in entries])
        return Binding(prim, mems, args)

    def bound(self, key: Any) -> Callable[..., None]:
        """A call ``(*addresses)`` for ``key`` on this thread (memory objects and the stream are per thread)."""
        b = self.binding(key)
        prim, mems, args, nargs = b.primitive, b.memories, b.args, len(b.args)
        lib = self.lib
        stream = lib.stream()
        set_handle, execute = lib.lib.dnnl_memory_set_data_handle, lib.lib.dnnl_primitive_execute
        if b.execute:
            execute = EXECUTE(b.execute)
        name = type(self).__name__

        def run(*addresses: int) -> None:
            # OpenMP runtime: execution is synchronous, no stream wait needed
            for mem, address in zip(mems, addresses):  # noqa: B905 - callers pass one address per buffer
                if set_handle(mem, address):
                    raise DnnlError(f"oneDNN {name}: setting a buffer failed")
            if execute(prim, stream, nargs, args):
                raise DnnlError(f"oneDNN {name} execution failed")

        run.binding = b  # type: ignore[attr-defined] - what its addresses point into lives as long as the call
        if len(mems) != 2:
            return run
        src, dst = mems

        def run2(src_ptr: int, dst_ptr: int) -> None:  # the common case, without the loop (~0.4 us a call)
            if set_handle(src, src_ptr) or set_handle(dst, dst_ptr) or execute(prim, stream, nargs, args):
                raise DnnlError(f"oneDNN {name} execution failed")

        run2.binding = b  # type: ignore[attr-defined]
        return run2

    def __call__(self, key: Any, src: int, dst: int, *more: int) -> None:
        """Run on the buffers at the given addresses (those of :meth:`_runtime`, in order)."""
        run = self._calls.get((threading.get_ident(), key))
        if run is None:
            run = self._calls[(threading.get_ident(), key)] = self.bound(key)
        if more:
            run(src, dst, *more)
        else:
            run(src, dst)  # most primitives: no argument packing (a convolution call is ~12 us in all)

    def prepacked(self, plain: np.ndarray, pd: ctypes.c_void_p) -> ctypes.c_void_p:
        """The constant weights ``plain`` in the layout ``pd`` wants, reordered once per layout: primitives for
        other thread counts often want the same one and share the copy."""
        lib = self.lib
        w_md = ctypes.c_void_p(lib.lib.dnnl_primitive_desc_query_md(pd, _Q_WEIGHTS_MD, 0))
        w_mem = next((mem for md, mem in self._packed if lib.lib.dnnl_memory_desc_equal(md, w_md)), None)
        if w_mem is None:
            w_mem = self.reordered(plain, w_md)
            self._packed.append((w_md, w_mem))
        return w_mem

    def reordered(self, plain: np.ndarray, md: ctypes.c_void_p) -> ctypes.c_void_p:
        """``plain`` (f32 or int8, any strides) in the layout and type of ``md``, in a oneDNN-owned buffer (done
        once)."""
        lib = self.lib
        plain = np.asarray(plain, np.int8 if plain.dtype == np.int8 else np.float32)
        if any(s <= 0 or s % plain.itemsize for s in plain.strides):  # oneDNN takes positive element strides
            plain = np.ascontiguousarray(plain)
        src_md = self.md(plain.shape, tuple(s // plain.itemsize for s in plain.strides), LAYOUT_TYPES[plain.dtype.name])
        src = self._own("memory", lib.memory(src_md, plain.ctypes.data))
        dst = self._own("memory", lib.memory(md))
        rpd, rprim = ctypes.c_void_p(), ctypes.c_void_p()
        # made and run at one thread (oneDNN sizes a reorder when it is made): a thread's first parallel region
        # gives it a GNU OpenMP team, and once the process holds more team threads than cores every team stops
        # spinning between regions and waits for a wake-up in each (2 cores: a small convolution 10 -> 56 us,
        # MobileNetV2 4.7 -> 8 ms on a stream thread after one compile-time reorder here): only threads that
        # run inference get teams
        from vinerun.plugins.cpu.thread_governor import omp_threads  # it imports torch: after the library

        with omp_threads(1):
            lib.check(lib.lib.dnnl_reorder_primitive_desc_create(ctypes.byref(rpd), src_md, lib.engine, md,
                                                                lib.engine, None), "reorder_primitive_desc_create")
            self._own("primitive_desc", rpd)
            lib.check(lib.lib.dnnl_primitive_create(ctypes.byref(rprim), rpd), "reorder_primitive_create")
            self._own("primitive", rprim)
            args = (_ExecArg * 2)(_ExecArg(ARG_SRC, src.value), _ExecArg(ARG_DST, dst.value))
            lib.execute(rprim, args, 2)
        return dst


class Conv2d(Primitive):
    """One 2-D convolution (channels-last destination, or NCHW with ``plain_dst``; the source channels-last or
    NCHW, the key's second item) with an f32 bias and post-ops, per thread count.

    ``dtype`` (:data:`F32` or :data:`BF16`) is that of the source, filters and destination. Keys are
    ``(threads, channels_last_source)``; a call passes ``(src, dst)`` addresses. With ``depthwise`` (a 1x1
    convolution only) the destination is the depthwise convolution's output, ``out_shape``.
    """

    def __init__(self, lib: Library, w: np.ndarray, bias: np.ndarray | None, groups: int,
                 in_shape: tuple[int, ...], out_shape: tuple[int, ...], strides: list[int],
                 dilations: list[int], pads_begin: list[int], pads_end: list[int], post_ops: list[tuple],
                 dtype: int = F32, plain_dst: bool = False, depthwise: DepthwisePostOp | None = None,
                 types: tuple[int, int] | None = None, **quantization: Any):
        if depthwise is not None:
            post_ops = [*post_ops, ("depthwise", dtype, F32, dtype, 3, depthwise.stride, depthwise.padding),
                        *depthwise.post_ops]
        # a bf16 depthwise convolution on an AMX CPU runs oneDNN's brdgmm_dw: 15-35% faster than its jit_dw on
        # MobileNetV2's layers there (1 and 2 threads; f32 is the other way round). This oneDNN's brdgmm_dw takes no
        # f32 bias with bf16 data, so the bias comes as a first binary post-op (the same sum, before the others).
        from vinerun.plugins.cpu.device_info import has_amx_bf16  # the plugin's package: not at this module's import

        self.prefers_brdgmm = groups > 1 and groups == in_shape[1] == out_shape[1] and dtype == BF16 and has_amx_bf16()
        if self.prefers_brdgmm and bias is not None:
            from vinerun.plugins.cpu.kernels._dnnl_ops import BINARY_ADD  # it imports this module

            post_ops = [("binary", BINARY_ADD, np.asarray(bias, np.float32).reshape(1, -1, 1, 1)), *post_ops]
            bias = None
        super().__init__(lib, post_ops, **quantization)
        # ``types``: (source, destination) of an int8 convolution (``dtype`` is then its weights' S8)
        src_type, dst_type = types or (dtype, dtype)
        self.dtype = dtype
        n, c, h, wd = in_shape
        _, o, oh, ow = out_shape
        self.src_mds = {True: self.md(in_shape, (h * wd * c, 1, wd * c, c), src_type),
                        False: self.md(in_shape, (c * h * wd, h * wd, wd, 1), src_type)}
        dst_strides = (o * oh * ow, oh * ow, ow, 1) if plain_dst else (oh * ow * o, 1, ow * o, o)
        self.dst_md = self.md(out_shape, dst_strides, dst_type)
        self.dw_post_op = depthwise
        # the convolution's own output: with a depthwise post-op, the 1x1 output (same size as its input)
        self.conv_dst_md = self.dst_md if depthwise is None else self.md((n, o, h, wd), (h * wd * o, 1, wd * o, o),
                                                                         dtype)
        k = w.shape[2:]
        self.wdims = (o, c, *k) if groups == 1 else (groups, o // groups, c // groups, *k)
        self.depthwise = groups > 1 and groups == c == o
        self.w_plain = np.ascontiguousarray(w, np.int8 if dtype == S8 else np.float32).reshape(self.wdims)
        self.bias = None if bias is None else np.ascontiguousarray(bias, np.float32)
        self.geometry = (strides, [d - 1 for d in dilations], pads_begin, pads_end)

    def _descriptor(self, key: tuple[int, bool], attr: ctypes.c_void_p) -> ctypes.c_void_p:
        pd = self._first_descriptor(key, attr)
        # depthwise: oneDNN lists brdgmm_dw first, but its jit_dw runs MobileNetV2's depthwise layers 5-30% faster
        # on AMD EPYC (f32 and bf16, channels-last, 2 and 1 threads) and f32 ones on AMX Xeons: there bf16 takes
        # brdgmm_dw (see __init__)
        if self.prefers_brdgmm and _impl_of(self.lib, pd).startswith("brdgmm_dw:"):
            return pd
        if self.depthwise and not self._advance_to(pd, "jit_dw:"):
            self._own("primitive_desc", pd)  # no jit_dw: this pd stopped at the last one; start again
            pd = self._first_descriptor(key, attr)
        return pd

    def _advance_to(self, pd: ctypes.c_void_p, prefix: str) -> bool:
        """Step ``pd`` through oneDNN's implementations to the first named ``prefix*``; False if none is."""
        lib = self.lib
        while True:
            if _impl_of(lib, pd).startswith(prefix):
                return True
            if lib.lib.dnnl_primitive_desc_next_impl(pd) != 0:
                return False

    #: oneDNN's primitive (``dnnl_<kind>_forward_primitive_desc_create``) and algorithm
    kind, algorithm = "convolution", _CONV_DIRECT

    def _first_descriptor(self, key: tuple[int, bool], attr: ctypes.c_void_p) -> ctypes.c_void_p:
        lib = self.lib
        w_any = self.md(self.wdims, None, self.dtype)
        b_md = self.md((self.bias.shape[0],), (1,)) if self.bias is not None else None
        strides, dil, pl, pr = self.geometry
        pd = ctypes.c_void_p()
        create = getattr(lib.lib, f"dnnl_{self.kind}_forward_primitive_desc_create")
        lib.check(create(ctypes.byref(pd), lib.engine, _FWD_INFERENCE, self.algorithm, self.src_mds[key[1]], w_any,
                         b_md, self.conv_dst_md, Dims(*strides), Dims(*dil), Dims(*pl), Dims(*pr), attr),
                  f"{self.kind}_primitive_desc_create")
        return pd

    def _runtime(self, key: tuple[int, bool]) -> list[tuple[int, ctypes.c_void_p]]:
        return [(ARG_SRC, self.src_mds[key[1]]), (ARG_DST, self.dst_md)]

    def _constants(self, pd: ctypes.c_void_p) -> list[tuple[int, ctypes.c_void_p]]:
        lib = self.lib
        out = [(ARG_WEIGHTS, self.prepacked(self.w_plain, pd))]
        if self.bias is not None:
            b_md = self.md((self.bias.shape[0],), (1,))
            out.append((ARG_BIAS, self._own("memory", lib.memory(b_md, self.bias.ctypes.data))))
        dw = self.dw_post_op
        if dw is not None:
            query = lib.lib.dnnl_primitive_desc_query_md
            w_md = ctypes.c_void_p(query(pd, _Q_EXEC_ARG_MD, ARG_POST_OP_DW | ARG_WEIGHTS))
            b_md = ctypes.c_void_p(query(pd, _Q_EXEC_ARG_MD, ARG_POST_OP_DW | ARG_BIAS))
            out.append((ARG_POST_OP_DW | ARG_WEIGHTS, self.reordered(dw.weights, w_md)))
            out.append((ARG_POST_OP_DW | ARG_BIAS, self._own("memory", lib.memory(b_md, dw.bias.ctypes.data))))
        return out

    def takes_nchw(self, threads: int) -> bool:
        """Whether oneDNN has an optimized primitive for an NCHW source (else callers make the source
        channels-last; its reference implementation, ``ref:any``, is a hundred times slower)."""
        try:
            return not self.impl_name((threads, False)).startswith("ref")
        except DnnlError:
            return False


class Deconv2d(Conv2d):
    """One 2-D transposed convolution (``ConvolutionBackpropData``) as oneDNN's deconvolution, laid out, keyed and
    called as :class:`Conv2d`. ``w`` is ``[O, C, kh, kw]`` (``[G, O / G, C / G, kh, kw]`` flattened over the groups
    for a grouped one), the transpose of OpenVINO's ``[C, O, kh, kw]``; ``pads_end`` less the output padding."""

    kind, algorithm = "deconvolution", _DECONV_DIRECT

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.depthwise = False


class PrimitiveCache:
    """Primitives made on demand, one per key (a combination of input layouts, a row count), at most ``limit``
    of them; a key ``make`` declines (None) or oneDNN has only its reference implementation for maps to None,
    and callers take their other path. Thread-safe."""

    def __init__(self, make: Callable[[Any], Primitive | None], limit: int):
        self._make, self._limit = make, limit
        self._made: dict[Any, Primitive | None] = {}
        self._lock = threading.Lock()

    def get(self, key: Any) -> Primitive | None:
        if key in self._made:  # made (or declined) already: no lock on the calls that follow
            return self._made[key]
        with self._lock:
            if key not in self._made and len(self._made) < self._limit:
                import torch  # imported by library() already: a lookup

                op = self._make(key)
                self._made[key] = op if op is not None and optimized_impl(op, torch.get_num_threads()) else None
            return self._made.get(key)


def _impl_of(lib: Library, pd: ctypes.c_void_p) -> str:
    """The name of the implementation a primitive descriptor stands at, e.g. ``brgconv_1x1:avx512_core``."""
    impl = ctypes.c_char_p()
    lib.lib.dnnl_primitive_desc_query(pd, _Q_IMPL_INFO, 0, ctypes.byref(impl))
    return (impl.value or b"").decode()


def optimized_impl(primitive: Primitive, key: Any) -> str | None:
    """The implementation oneDNN picks for ``key`` (made now), or None where it has none or only its reference
    one (``ref:any``, e.g. bf16 on a CPU without AVX-512): callers then keep their PyTorch path."""
    try:
        impl = primitive.impl_name(key)
    except DnnlError:
        return None
    return None if impl.startswith("ref") else impl


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
