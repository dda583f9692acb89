"""Prometheus metrics with OVMS's ``ovms_*`` names, labels and histogram buckets.

Counters are written under their exact OVMS names (``ovms_requests_success``, no ``_total``).

>>> m = ServingMetrics()
>>> m.request("KServe", "REST", "ModelInfer", "m", "1", ok=True)
>>> b'ovms_requests_success{api="KServe",interface="REST",method="ModelInfer",name="m",version="1"} 1.0' in m.render()
True
"""

from __future__ import annotations

import bisect
import math
import threading
from collections import defaultdict
from collections.abc import Iterable

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.utils import floatToGoString

from vinerun.serving.config import DEFAULT_METRICS

#: OVMS's buckets: floor(10 * 1.8^i) microseconds, i = 0..32
BUCKETS: tuple[int, ...] = tuple(math.floor(10 * 1.8 ** i) for i in range(33))

_HELP = {
    "ovms_requests_success": "Number of successful requests to a model or a DAG.",
    "ovms_requests_fail": "Number of failed requests to a model or a DAG.",
    "ovms_request_time_us": "Processing time of requests to a model or a DAG.",
    "ovms_inference_time_us": "Inference execution time in the OpenVINO backend.",
    "ovms_wait_for_infer_req_time_us": "Request waiting time in the scheduling queue.",
    "ovms_streams": "Number of OpenVINO execution streams.",
    "ovms_current_requests": "Number of inference requests currently in process.",
    "ovms_infer_req_queue_size": "Inference request queue size (nireq).",
    "ovms_infer_req_active": "Number of currently consumed inference request from the processing queue.",
}
_KIND = {"ovms_requests_success": "counter", "ovms_requests_fail": "counter", "ovms_request_time_us": "histogram",
         "ovms_inference_time_us": "histogram", "ovms_wait_for_infer_req_time_us": "histogram",
         "ovms_streams": "gauge", "ovms_current_requests": "gauge", "ovms_infer_req_queue_size": "gauge",
         "ovms_infer_req_active": "gauge"}
_LABELS = {"ovms_requests_success": ("api", "interface", "method", "name", "version"),
           "ovms_requests_fail": ("api", "interface", "method", "name", "version"),
           "ovms_request_time_us": ("interface", "name", "version")}
Labels = tuple[str, ...]


class _Histogram:
    def __init__(self) -> None:
        self.counts = [0] * len(BUCKETS)
        self.total = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        i = bisect.bisect_left(BUCKETS, value)
        if i < len(BUCKETS):
            self.counts[i] += 1
        self.total += 1
        self.sum += value


class ServingMetrics:
    """The server's metric families; ``enabled`` limits which are served (``--metrics_list``).

    >>> ServingMetrics(["ovms_streams"]).enabled
    {'ovms_streams'}
    """

    def __init__(self, enabled: Iterable[str] | None = None) -> None:
        self.enabled = set(enabled or DEFAULT_METRICS)
        self._values: dict[str, dict[Labels, float]] = defaultdict(lambda: defaultdict(float))
        self._hists: dict[str, dict[Labels, _Histogram]] = defaultdict(lambda: defaultdict(_Histogram))
        self._lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    # --- recording ---------------------------------------------------------------------
    def request(self, api: str, interface: str, method: str, name: str, version: str, ok: bool) -> None:
        key = "ovms_requests_success" if ok else "ovms_requests_fail"
        with self._lock:
            self._values[key][(api, interface, method, name, version)] += 1

    def observe(self, family: str, labels: Labels, microseconds: float) -> None:
        with self._lock:
            self._hists[family][labels].observe(microseconds)

    def add(self, family: str, labels: Labels, delta: float) -> None:
        with self._lock:
            self._values[family][labels] += delta

    def set(self, family: str, labels: Labels, value: float) -> None:
        with self._lock:
            self._values[family][labels] = value

    def remove(self, family: str, labels: Labels) -> None:
        with self._lock:
            self._values[family].pop(labels, None)

    # --- exposition --------------------------------------------------------------------
    def collect(self) -> Iterable[Metric]:
        with self._lock:
            for family in sorted(self.enabled):
                kind = _KIND[family]
                names = _LABELS.get(family, ("name", "version"))
                metric = Metric(family, _HELP[family], kind)
                if kind == "histogram":
                    for labels, h in self._hists[family].items():
                        base = dict(zip(names, labels, strict=True))
                        running = 0
                        for bound, count in zip(BUCKETS, h.counts, strict=True):
                            running += count
                            metric.add_sample(f"{family}_bucket", {**base, "le": str(bound)}, running)
                        metric.add_sample(f"{family}_bucket", {**base, "le": "+Inf"}, h.total)
                        metric.add_sample(f"{family}_count", base, h.total)
                        metric.add_sample(f"{family}_sum", base, h.sum)
                else:
                    for labels, value in self._values[family].items():
                        metric.add_sample(family, dict(zip(names, labels, strict=True)), value)
                yield metric

    def render(self) -> bytes:
        """The Prometheus text exposition, with counters under their exact OVMS names.

        (``prometheus_client.generate_latest`` would rename ``# TYPE ovms_requests_success`` to
        ``ovms_requests_success_total``; OVMS and its dashboards use the bare name.)
        """
        lines = []
        for metric in self.collect():
            lines.append(f"# HELP {metric.name} {metric.documentation}")
            lines.append(f"# TYPE {metric.name} {metric.type}")
            for sample in metric.samples:
                labels = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(sample.labels.items()))
                lines.append(f"{sample.name}{{{labels}}} {floatToGoString(sample.value)}")
        return ("\n".join(lines) + "\n").encode()


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')
