"""Statistics and reports of ``vinerun benchmark``, worded and laid out as benchmark_app's.

>>> stats = Statistics([2.0, 1.0, 3.0], iterations=3, duration_s=0.006)
>>> stats.median_ms, stats.fps
(2.0, 500.0)
>>> summary_lines(stats, ["CPU"])[1]
'Count:            3 iterations'
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

REPORT_TYPES = ("no_counters", "average_counters", "detailed_counters")


def percentile(sorted_values: Sequence[float], percent: float) -> float:
    """Nearest-rank percentile of already sorted values (benchmark_app's definition)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(len(sorted_values) * percent / 100))
    return sorted_values[min(rank, len(sorted_values)) - 1]


@dataclass
class Statistics:
    """Latencies (ms) of every measured inference and the totals of the measuring loop."""

    latencies_ms: list[float]
    iterations: int
    duration_s: float
    batch: int = 1
    latency_percentile: int = 50

    def __post_init__(self) -> None:
        self.latencies_ms = sorted(self.latencies_ms)

    @property
    def median_ms(self) -> float:
        """The ``latency_percentile`` latency (the median by default)."""
        return percentile(self.latencies_ms, self.latency_percentile)

    @property
    def avg_ms(self) -> float:
        return sum(self.latencies_ms) / len(self.latencies_ms) if self.latencies_ms else 0.0

    @property
    def min_ms(self) -> float:
        return self.latencies_ms[0] if self.latencies_ms else 0.0

    @property
    def max_ms(self) -> float:
        return self.latencies_ms[-1] if self.latencies_ms else 0.0

    @property
    def fps(self) -> float:
        """Frames per second: batch * iterations / duration."""
        return self.batch * self.iterations / self.duration_s if self.duration_s > 0 else 0.0


def _latency(value_ms: float, avg_ms: float) -> str:
    return f"{value_ms * 1000:.2f} us" if avg_ms < 1.0 else f"{value_ms:.2f} ms"


def summary_lines(stats: Statistics, execution_devices: Sequence[str]) -> list[str]:
    """The closing block: Count, Duration, Latency (median/percentile, average, min, max), Throughput."""
    avg = stats.avg_ms
    head = "   Median:        " if stats.latency_percentile == 50 else f"   {stats.latency_percentile} percentile:     "
    return [
        f"Execution Devices:{list(execution_devices)}",
        f"Count:            {stats.iterations} iterations",
        f"Duration:         {stats.duration_s * 1000:.2f} ms",
        "Latency:",
        head + _latency(stats.median_ms, avg),
        f"   Average:       {_latency(avg, avg)}",
        f"   Min:           {_latency(stats.min_ms, avg)}",
        f"   Max:           {_latency(stats.max_ms, avg)}",
        f"Throughput:   {stats.fps:.2f} FPS",
    ]


def per_device_text(counts: dict[str, int]) -> str:
    """``{"CPU": 90, "GNA": 30}`` -> ``"CPU: 90 (75.0%), GNA: 30 (25.0%)"`` (AUTO/MULTI load balance)."""
    total = sum(counts.values()) or 1
    return ", ".join(f"{d}: {n} ({100 * n / total:.1f}%)" for d, n in counts.items())


# --- performance counters ------------------------------------------------------------------
@dataclass
class Counter:
    """One node's counters, times in milliseconds (from a ProfilingInfo, or averaged)."""

    name: str
    status: str
    node_type: str
    exec_type: str
    real_ms: float
    cpu_ms: float


def _status(value: Any) -> str:
    return str(getattr(value, "name", value)).split(".")[-1]


def counters(profiling_info: Sequence[Any]) -> list[Counter]:
    """``ProfilingInfo`` objects -> :class:`Counter` rows."""
    return [Counter(p.node_name, _status(p.status), p.node_type, p.exec_type,
                    p.real_time.total_seconds() * 1e3, p.cpu_time.total_seconds() * 1e3) for p in profiling_info]


def average_counters(per_request: Sequence[Sequence[Counter]]) -> list[Counter]:
    """Counters averaged over requests (by node name, in the first request's order)."""
    runs = [r for r in per_request if r]
    if not runs:
        return []
    out = []
    for row in runs[0]:
        same = [c for run in runs for c in run if c.name == row.name]
        out.append(Counter(row.name, row.status, row.node_type, row.exec_type,
                           sum(c.real_ms for c in same) / len(same), sum(c.cpu_ms for c in same) / len(same)))
    return out


def _cell(text: str, width: int = 20) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def counter_lines(rows: Sequence[Counter]) -> list[str]:
    """benchmark_app's per-layer table, then the totals over executed nodes."""
    lines = [f"{_cell(c.name):<21}{'Status.' + c.status:<21}layerType: {_cell(c.node_type):<21}"
             f"execType: {_cell(c.exec_type):<21}realTime (ms): {c.real_ms:<11.3f}cpuTime (ms): {c.cpu_ms:<10.3f}"
             for c in rows]
    executed = [c for c in rows if c.status == "EXECUTED"]
    lines.append(f"Total time:     {sum(c.real_ms for c in executed):.3f} milliseconds")
    lines.append(f"Total CPU time: {sum(c.cpu_ms for c in executed):.3f} milliseconds")
    return lines


# --- report files ----------------------------------------------------------------------------
def _node_dict(c: Counter) -> dict[str, str]:
    return {"name": c.name, "node_type": c.node_type, "status": f"Status.{c.status}", "real_time": f"{c.real_ms:.3f}",
            "cpu_time": f"{c.cpu_ms:.3f}", "exec_type": c.exec_type}


def _totals(rows: Sequence[Counter]) -> tuple[float, float]:
    executed = [c for c in rows if c.status == "EXECUTED"]
    return sum(c.real_ms for c in executed), sum(c.cpu_ms for c in executed)


def write_reports(folder: str, as_json: bool, report_type: str, sections: dict[str, dict[str, Any]],
                  per_request: Sequence[Sequence[Counter]] = ()) -> list[str]:
    """Write ``benchmark_report.{csv,json}`` (the sections) and, for the counter report types,
    ``benchmark_{average,detailed}_counters_report.{csv,json}``. Creates ``folder``. Returns the paths."""
    os.makedirs(folder or ".", exist_ok=True)
    ext = "json" if as_json else "csv"
    paths = [os.path.join(folder, f"benchmark_report.{ext}")]
    if as_json:
        with open(paths[0], "w", encoding="utf-8") as f:
            json.dump(sections, f, indent=4)
    else:
        with open(paths[0], "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, delimiter=";")
            for title, values in sections.items():
                w.writerow([title.replace("_", " ").capitalize()])
                w.writerows([k, v] for k, v in values.items())
                w.writerow([])
    if report_type == "no_counters" or not any(per_request):
        return paths
    kind = "average" if report_type == "average_counters" else "detailed"
    runs = [average_counters(per_request)] if kind == "average" else [list(r) for r in per_request]
    path = os.path.join(folder, f"benchmark_{kind}_counters_report.{ext}")
    if as_json:
        blocks = []
        for rows in runs:
            real, cpu = _totals(rows)
            blocks.append({"nodes": [_node_dict(c) for c in rows], "total_real_time": f"{real:.3f}",
                           "total_cpu_time": f"{cpu:.3f}"})
        doc: dict[str, Any] = {"report_type": kind}
        doc["avg_performance" if kind == "average" else "detailed_performance"] = (
            blocks[0] if kind == "average" else blocks)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=4)
    else:
        with open(path, "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, delimiter=";")
            for i, rows in enumerate(runs):
                if kind == "detailed":
                    w.writerow([f"Performance counters for infer request {i}"])
                w.writerow(["layerName", "execStatus", "layerType", "execType", "realTime (ms)", "cpuTime (ms)"])
                w.writerows([c.name, f"Status.{c.status}", c.node_type, c.exec_type, f"{c.real_ms:.3f}",
                             f"{c.cpu_ms:.3f}"] for c in rows)
                real, cpu = _totals(rows)
                w.writerow(["Total", "", "", "", f"{real:.3f}", f"{cpu:.3f}"])
                w.writerow([])
    paths.append(path)
    return paths
