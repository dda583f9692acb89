"""ONNX backend node tests (the installed ``onnx`` package's test data) through vinerun's ``GPU`` device.

The same cases, inputs, expected outputs and tolerances as the CPU suite (``tests/conformance``), compiled with
``INFERENCE_PRECISION_HINT=f32``; cases whose expected outputs are random draws (the suite's ``UNCOMPARABLE``)
are left out. Without a GPU (or with ``--stand-in``) the GPU plugin runs its plans on PyTorch's CPU device.

Prints ``passed X of Y``, the failures grouped by reason, and for each failure whether it is the GPU's own:

- ``also fails on CPU``: the CPU device fails the case too (``--no-cpu`` skips this check);
- ``GPU kernel``: the case passes when the named op runs on the host reference instead of its device kernel
  (found by re-running the case with one op type at a time forced to the host): listed by op for the kernel
  authors (``vinerun/plugins/gpu/kernels/``);
- ``GPU plugin``: fails on GPU, passes on CPU, and no single device kernel is to blame (graph passes, f16/f32
  handling, the plan, host<->device copies).

    python benchmarks/gpu/onnx_node_tests.py                     # all cases; the stand-in where no GPU
    python benchmarks/gpu/onnx_node_tests.py --only 'conv|pool'  # a regex on the test name
    python benchmarks/gpu/onnx_node_tests.py --sample 10 --json out.json
    python benchmarks/gpu/onnx_node_tests.py --jobs 8 --no-cpu          # on a GPU machine: 8 processes
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import onnx
import onnx.backend.test.loader
from onnx.backend.test.runner import Runner, _normalize_tensor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.conformance.onnx_backend import VinerunBackend  # noqa: E402
from tests.conformance.onnx_expected_failures import EXPECTED_FAILURES, UNCOMPARABLE  # noqa: E402
from vinerun.plugins.gpu import backend as gpu_backend  # noqa: E402


class GpuBackend(VinerunBackend):
    """The CPU harness's backend, compiling for ``GPU`` (f32 hint, as the CPU suite)."""

    device = "GPU"


class CpuBackend(VinerunBackend):
    device = "CPU"


@dataclass
class Outcome:
    name: str
    ops: list[str]
    passed: bool
    seconds: float
    reason: str = ""
    detail: str = ""
    #: "also fails on CPU", "GPU kernel", "GPU plugin" (failures only; "" when not classified)
    blame: str = ""
    #: the op types whose device kernels make the case fail (blame "GPU kernel")
    kernel_ops: list[str] = field(default_factory=list)
    exec_types: dict[str, str] = field(default_factory=dict)


def node_cases(only: str | None = None, sample: int = 1) -> list[Any]:
    """The node test cases the CPU suite runs (``UNCOMPARABLE`` left out), sorted by name; every ``sample``-th."""
    cases = sorted(onnx.backend.test.loader.load_model_tests(kind="node"), key=lambda c: c.name)
    cases = [c for c in cases if not any(re.search(p, c.name + "_cpu") for p, _ in UNCOMPARABLE)]
    if only:
        cases = [c for c in cases if re.search(only, c.name)]
    return cases[::sample]


def cpu_expected_failure(name: str) -> str | None:
    """The CPU suite's recorded reason when it expects ``name`` to fail."""
    for pattern, reason in EXPECTED_FAILURES:
        if re.search(pattern, name + "_cpu"):
            return reason
    return None


def _data_sets(case: Any) -> list[tuple[list[Any], list[Any]]]:
    """The case's (inputs, expected outputs) pairs, as onnx's runner feeds them (TensorProtos as arrays)."""
    return [([_normalize_tensor(x) for x in inputs], [_normalize_tensor(y) for y in expected])
            for inputs, expected in case.data_sets]


def _exec_types(rep: Any) -> dict[str, str]:
    """node type -> the kernels the GPU plan chose for it (``host_ref``: the NumPy reference on the host)."""
    plan = getattr(getattr(rep.compiled, "_impl", None), "plan", None)
    found: dict[str, set[str]] = defaultdict(set)
    for step in getattr(plan, "steps", []):
        found[step.node.type_name].add(step.kernel.exec_type)
    return {k: ",".join(sorted(v)) for k, v in sorted(found.items())}


def run_case(case: Any, backend: type[VinerunBackend]) -> tuple[bool, str, str, dict[str, str]]:
    """(passed, reason, detail, exec types): the case on ``backend``, compared as onnx's runner compares."""
    model, sets = case.model, _data_sets(case)
    stage = "compile"
    exec_types: dict[str, str] = {}
    try:
        rep = backend.prepare(model)
        exec_types = _exec_types(rep)
        for inputs, expected in sets:
            stage = "infer"
            outputs = list(rep.run(inputs))
            stage = "compare"
            Runner.assert_similar_outputs(expected, outputs, rtol=case.rtol, atol=case.atol)
    except Exception as exc:  # noqa: BLE001 - every failure is a finding to report
        return False, _reason(stage, exc), _first_lines(exc), exec_types
    return True, "", "", exec_types


def _first_lines(exc: BaseException, n: int = 6) -> str:
    return "\n".join(f"{type(exc).__name__}: {exc}".strip().splitlines()[:n])


def _reason(stage: str, exc: BaseException) -> str:
    """A grouping key: the stage and the error with its numbers and quoted names blanked out."""
    text = str(exc).strip()
    if stage == "compare" and isinstance(exc, AssertionError):
        if "incorrect shape" in text:
            return "wrong output shape"
        if "Items are not equal" in text and "dtype" in text.lower() or re.search(r"ACTUAL: dtype", text):
            return "wrong output element type"
        if "Mismatched elements" in text or "Not equal to tolerance" in text:
            return "wrong values (outside the case's rtol/atol)"
        if "Arrays are not equal" in text:
            return "wrong values (exact comparison)"
        return "wrong outputs: " + _blank(text.splitlines()[0] if text else "")
    first = text.splitlines()[0] if text else ""
    return f"{stage} error: {type(exc).__name__}: {_blank(first)}"[:160]


def _blank(text: str) -> str:
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    return re.sub(r"\d+(\.\d+)?", "N", text)


@contextlib.contextmanager
def host_for(op_types: set[str]) -> Iterator[None]:
    """Inside, the GPU plan runs nodes of ``op_types`` on the host reference, not their device kernels."""
    from vinerun.plugins.gpu import kernels, plan

    chosen = plan.select_kernel

    def select(node: Any, device: Any) -> Any:
        if node.type_name in op_types:
            return kernels.host_kernel(node, device)
        return chosen(node, device)

    plan.select_kernel = select
    try:
        yield
    finally:
        plan.select_kernel = chosen


def blame(case: Any, outcome: Outcome, check_cpu: bool) -> None:
    """Classify a GPU failure: also a CPU failure, one device kernel's, or the plugin's."""
    if check_cpu:
        passed, _, _, _ = run_case(case, CpuBackend)
        if not passed:
            outcome.blame = "also fails on CPU"
            return
    device_ops = sorted(op for op, ex in outcome.exec_types.items() if ex != "host_ref")
    if device_ops:
        with host_for(set(device_ops)):
            passed_on_host, _, _, _ = run_case(case, GpuBackend)
        if passed_on_host:
            culprits = []
            for op in device_ops:
                with host_for({op}):
                    if run_case(case, GpuBackend)[0]:
                        culprits.append(op)
            outcome.blame, outcome.kernel_ops = "GPU kernel", culprits or device_ops
            return
    outcome.blame = "GPU plugin"


def run_one(case: Any, check_cpu: bool) -> Outcome:
    """One case on GPU; a failure is classified (:func:`blame`)."""
    start = time.perf_counter()
    passed, reason, detail, exec_types = run_case(case, GpuBackend)
    ops = sorted({n.op_type for n in case.model.graph.node})
    outcome = Outcome(case.name, ops, passed, time.perf_counter() - start, reason, detail, exec_types=exec_types)
    if not passed:
        if not check_cpu and cpu_expected_failure(case.name):
            outcome.blame = "also fails on CPU"  # the CPU suite's xfail list says so
        else:
            blame(case, outcome, check_cpu)
    return outcome


_worker: dict[str, Any] = {}


def _init_worker(stand_in: bool, only: str | None, sample: int, check_cpu: bool) -> None:
    """A worker process: its own cases (loading them is cheaper than sending them) and the stand-in if asked."""
    import torch

    warnings.filterwarnings("ignore")
    if stand_in:
        torch.set_num_threads(1)
        _worker["stand_in"] = gpu_backend.stand_in()
        _worker["stand_in"].__enter__()
    _worker["cases"] = {c.name: c for c in node_cases(only, sample)}
    _worker["check_cpu"] = check_cpu


def _run_named(name: str) -> Outcome:
    return run_one(_worker["cases"][name], _worker["check_cpu"])


def run_all(cases: list[Any], check_cpu: bool = True, verbose: bool = False, jobs: int = 1,
            worker_args: tuple[Any, ...] = ()) -> list[Outcome]:
    """Every case, in this process or in ``jobs`` worker processes (spawned: CUDA does not survive a fork)."""
    def show(i: int, outcome: Outcome) -> None:
        if verbose or not outcome.passed:
            status = "ok" if outcome.passed else f"FAIL [{outcome.blame}] {outcome.reason}"
            print(f"[{i + 1}/{len(cases)}] {outcome.name}: {status} ({outcome.seconds:.2f} s)", flush=True)

    outcomes = []
    if jobs <= 1:
        for i, case in enumerate(cases):
            outcomes.append(run_one(case, check_cpu))
            show(i, outcomes[-1])
        return outcomes
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_init_worker, initargs=worker_args) as pool:
        for i, outcome in enumerate(pool.map(_run_named, [c.name for c in cases], chunksize=8)):
            outcomes.append(outcome)
            show(i, outcome)
    return outcomes


def report(outcomes: list[Outcome], device: str) -> str:
    passed = sum(o.passed for o in outcomes)
    lines = [f"device: {device}", f"passed {passed} of {len(outcomes)}"
             f" (onnx {onnx.__version__} node cases; those with random expected outputs left out)"]
    failures = [o for o in outcomes if not o.passed]
    by_blame: dict[str, list[Outcome]] = defaultdict(list)
    for o in failures:
        by_blame[o.blame or "unclassified"].append(o)
    lines.append("failures by cause: " + ", ".join(f"{k} {len(v)}" for k, v in sorted(by_blame.items())))
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for o in failures:
        groups[o.reason].append(o)
    lines.append("\nfailures by reason:")
    for reason, group in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"  {len(group):4d}  {reason}")
        for o in group:
            cpu = cpu_expected_failure(o.name)
            note = f"; CPU xfail: {cpu}" if cpu else ""
            lines.append(f"          {o.name} [{o.blame}{': ' + ','.join(o.kernel_ops) if o.kernel_ops else ''}]{note}")
    kernel_ops: dict[str, list[str]] = defaultdict(list)
    for o in failures:
        for op in o.kernel_ops:
            kernel_ops[op].append(o.name)
    lines.append("\nGPU kernel failures by op (the case passes with that op on the host reference):")
    for op, names in sorted(kernel_ops.items()):
        kinds = sorted({next((o.exec_types.get(op, "") for o in failures if o.name == n), "") for n in names})
        lines.append(f"  {op} ({'; '.join(kinds)}): {len(names)}: {' '.join(names)}")
    if not kernel_ops:
        lines.append("  none")
    plugin = [o for o in failures if o.blame == "GPU plugin"]
    lines.append("\nGPU plugin failures (pass on CPU, no single kernel to blame):")
    lines += [f"  {o.name} ({','.join(o.ops)}): {o.detail.splitlines()[0] if o.detail else o.reason}"
              for o in plugin] or ["  none"]
    slow = sorted(outcomes, key=lambda o: -o.seconds)[:5]
    lines.append("\nslowest: " + ", ".join(f"{o.name} {o.seconds:.1f} s" for o in slow))
    total = sum(o.seconds for o in outcomes)
    lines.append(f"time in cases: {total:.1f} s")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--stand-in", action="store_true",
                   help="run on the test-only stand-in (PyTorch's CPU device) even where a GPU exists; "
                        "automatic where none does")
    p.add_argument("--only", metavar="REGEX", help="only the cases whose name matches")
    p.add_argument("--sample", type=int, default=1, metavar="N", help="every N-th case (sorted by name)")
    p.add_argument("--no-cpu", action="store_true", help="do not re-run failures on CPU to tell GPU-only ones")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    p.add_argument("--json", metavar="FILE", help="write every outcome as JSON")
    p.add_argument("-v", "--verbose", action="store_true", help="a line per case, not only per failure")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    warnings.filterwarnings("ignore")
    stand_in = args.stand_in or not gpu_backend.has_gpu()
    cases = node_cases(args.only, args.sample)
    with gpu_backend.stand_in() if stand_in else contextlib.nullcontext():
        device = gpu_backend.devices()[0]
        name = "stand-in (PyTorch CPU device)" if stand_in else f"{device.kind}:{device.index}"
        if not stand_in:
            props = device.properties()
            name += f" {getattr(props, 'name', '')}"
        start = time.perf_counter()
        outcomes = run_all(cases, check_cpu=not args.no_cpu, verbose=args.verbose, jobs=args.jobs,
                           worker_args=(stand_in, args.only, args.sample, not args.no_cpu))
    print(report(outcomes, name))
    print(f"wall time: {time.perf_counter() - start:.1f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"device": name, "outcomes": [asdict(o) for o in outcomes]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
