"""The kernel of an :class:`~vinerun.plugins.gpu.eltwise_chain.EltwiseChain`: the head's kernel (if any), then the
steps as one generated Triton kernel on CUDA (``triton_fused``), else each step's own device kernel in turn
(``eager_fused``). A Triton kernel that fails to compile on first use leaves the chain on the eager path."""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import torch

from vinerun.ir.node import Node
from vinerun.plugins.gpu import triton_codegen, tuning
from vinerun.plugins.gpu.kernels import GpuKernel, gpu_kernel, select_kernel

_log = logging.getLogger(__name__)


def _dense_alike(y: torch.Tensor, operands: list[torch.Tensor]) -> bool:
    """``y`` is dense (row-major or channels-last) and every full-size operand has its strides: the kernel can
    walk all of them as flat arrays."""
    dense = y.is_contiguous() or (y.dim() == 4 and y.is_contiguous(memory_format=torch.channels_last))
    return dense and all(o.numel() == 1 or o.stride() == y.stride() for o in operands)


def _triton_launch(node: Node, scalars: list[bool]) -> tuple[Any, str] | None:
    """(the launcher of the chain's generated kernel, its source's hash), or None without Triton or a generator
    for every step."""
    try:
        import triton  # noqa: F401 - ships with PyTorch's CUDA builds
    except ImportError:
        return None
    source = triton_codegen.generate([(s.node, s.position, s.operand is not None) for s in node.steps],
                                     ["scalar" if one else "full" for one in scalars])
    if source is None:
        return None
    return triton_codegen.launcher(triton_codegen.load(source)), hashlib.sha1(source.encode()).hexdigest()[:16]


def _timed(launch: Any, y: torch.Tensor, operands: list[torch.Tensor]) -> Any:
    """``time_of(params)``: the median of 10 launches into a scratch output, in seconds (CUDA events)."""
    scratch = torch.empty_like(y)

    def time_of(params: dict[str, int]) -> float:
        for _ in range(2):
            launch(y, operands, scratch, params)
        times = []
        for _ in range(10):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            launch(y, operands, scratch, params)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        return sorted(times)[5]

    return time_of


def _current_ops(node: Node, n_head: int) -> tuple[Node | None, list[Node]]:
    """The chain's head and steps as nodes reading the chain's inputs as they are now: a pass after the fusion (f16
    lowering) may have changed their types, which the detached originals do not see. Each is detached again at
    once, so that the graph never lists it as a consumer."""
    inputs = node.input_values()
    made: list[Node] = []
    head = node.head  # type: ignore[attr-defined]
    if head is not None:
        head = head.clone_with_new_inputs(inputs[:n_head])
        made.append(head)
    running = head.output(0) if head is not None else inputs[0]
    steps = []
    for s in node.steps:  # type: ignore[attr-defined]
        args = [running] if s.operand is None else [None, None]
        if s.operand is not None:
            args[s.position], args[1 - s.position] = running, inputs[s.operand]
        step = s.node.clone_with_new_inputs(args)
        steps.append(step)
        made.append(step)
        running = step.output(0)
    for n in made:
        n.detach()
    return head, steps


@gpu_kernel("EltwiseChain")
def eltwise_chain(node: Node, device: torch.device) -> GpuKernel | None:
    n_head = node.head_inputs  # type: ignore[attr-defined]
    head, step_nodes = _current_ops(node, n_head)
    head_kernel = select_kernel(head, device) if head is not None else None
    step_kernels = [select_kernel(n, device) for n in step_nodes]
    if (head_kernel is not None and head_kernel.host) or any(k.host for k in step_kernels):
        return None
    steps = node.steps  # type: ignore[attr-defined]
    operand_shapes = [node.get_input_partial_shape(s.operand) for s in steps if s.operand is not None]
    scalars = [sh.is_static and int(torch.Size(sh.to_shape()).numel()) == 1 for sh in operand_shapes]
    found = _triton_launch(node, scalars) if device.type == "cuda" else None
    launch, digest = found if found is not None else (None, "")
    store = tuning.current()
    params: dict[tuple, dict[str, int]] = {}  # (size, dtype) -> launch parameters
    prefix = f"{head_kernel.exec_type}+" if head_kernel is not None else ""
    kernel = GpuKernel(lambda x: x, prefix + ("triton_fused" if launch is not None else "eager_fused"))

    def eager(y: torch.Tensor, inputs: list[Any]) -> torch.Tensor:
        for s, k in zip(steps, step_kernels, strict=True):
            args: list[Any] = [None] * (2 if s.operand is not None else 1)
            args[s.position] = y
            if s.operand is not None:
                args[1 - s.position] = inputs[s.operand]
            y = k.fn(args)[0]
        return y

    def run(inputs: list[Any]) -> list[Any]:
        nonlocal launch
        y = head_kernel.fn(inputs[:n_head])[0] if head_kernel is not None else inputs[0]
        if launch is not None:
            operands = [inputs[s.operand] for s in steps if s.operand is not None]
            if _dense_alike(y, operands):
                out = y if head_kernel is not None else torch.empty_like(y)  # a head's output is ours to overwrite
                try:
                    key = (y.numel(), y.dtype)
                    if key not in params:
                        params[key] = triton_codegen.CANDIDATES[0]
                        if store is not None and not torch.cuda.is_current_stream_capturing():
                            name = f"{digest}:{y.numel()}:{y.dtype}:{torch.cuda.get_device_name(y.device)}"
                            params[key] = store.choose(name, triton_codegen.CANDIDATES, _timed(launch, y, operands))
                    launch(y, operands, out, params[key])
                    return [out]
                except Exception as e:  # noqa: BLE001 - a generator gap: eager from now on, and say so
                    _log.warning("Triton kernel of %s failed (%s); running its steps eagerly", node.friendly_name, e)
                    launch = None
                    kernel.exec_type = prefix + "eager_fused"
        return [eager(y, inputs)]

    kernel.fn = run
    return kernel
