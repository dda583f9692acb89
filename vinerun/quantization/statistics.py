"""Statistics of intermediate tensors over a calibration set, collected by running the model on vinerun's CPU
device with the tensors added as extra outputs.

Per tensor and per sample it keeps only reductions (min, max, absolute max, quantiles, per-channel means), so
memory does not grow with the tensor sizes.

>>> import numpy as np, vinerun as ov
>>> x = ov.opset1.parameter([1, 2], ov.Type.f32, name="x")
>>> r = ov.opset1.relu(x)
>>> model = ov.Model([r], [x])
>>> stats = collect_statistics(model, [r.output(0)], ov.Dataset([np.array([[-1.0, 3.0]], np.float32)]), 1)
>>> float(stats[0].max), float(stats[0].min)
(3.0, 0.0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vinerun.ir import Model, Output
from vinerun.quantization.dataset import Dataset
from vinerun.quantization.parameters import QuantizationError
from vinerun.tools.progress import ProgressBar


@dataclass
class StatisticRequest:
    """What to collect for one tensor: per-channel ranges along ``channel_axis`` (None: per tensor),
    quantiles with ``quantile`` > 0, and per-channel means along ``mean_axis`` (None: no means)."""

    output: Output
    channel_axis: int | None = None
    quantile: float = 0.0
    mean_axis: int | None = None


@dataclass
class TensorStatistics:
    """Per-sample reductions of one tensor; the properties aggregate them as NNCF's range estimators do."""

    request: StatisticRequest
    mins: list[np.ndarray] = field(default_factory=list)
    maxs: list[np.ndarray] = field(default_factory=list)
    abs_maxs: list[np.ndarray] = field(default_factory=list)
    q_lows: list[np.ndarray] = field(default_factory=list)
    q_highs: list[np.ndarray] = field(default_factory=list)
    q_abs: list[np.ndarray] = field(default_factory=list)
    means: list[np.ndarray] = field(default_factory=list)
    shape: tuple[int, ...] = ()

    def add(self, x: np.ndarray) -> None:
        """Reduce one sample's value of the tensor."""
        x = np.asarray(x, np.float32)
        if not self.shape:
            self.shape = x.shape
        req = self.request
        axes = None if req.channel_axis is None else tuple(a for a in range(x.ndim) if a != req.channel_axis % x.ndim)
        if x.size:
            self.mins.append(np.min(x, axis=axes))
            self.maxs.append(np.max(x, axis=axes))
            self.abs_maxs.append(np.max(np.abs(x), axis=axes))
            if req.quantile > 0:
                self.q_lows.append(np.quantile(x, req.quantile, axis=axes))
                self.q_highs.append(np.quantile(x, 1 - req.quantile, axis=axes))
                self.q_abs.append(np.quantile(np.abs(x), 1 - req.quantile, axis=axes))
        if req.mean_axis is not None:
            axis = req.mean_axis % x.ndim
            self.means.append(np.mean(x, axis=tuple(a for a in range(x.ndim) if a != axis)))

    def _need(self) -> None:
        if not self.mins:
            raise QuantizationError(f"no statistics for tensor '{_name(self.request.output)}' "
                                    "(the calibration set is empty or the tensor has no elements)")

    @property
    def min(self) -> np.ndarray:
        """Minimum over every sample (MINMAX)."""
        self._need()
        return np.min(self.mins, axis=0)

    @property
    def max(self) -> np.ndarray:
        self._need()
        return np.max(self.maxs, axis=0)

    @property
    def abs_max(self) -> np.ndarray:
        self._need()
        return np.max(self.abs_maxs, axis=0)

    @property
    def mean_min(self) -> np.ndarray:
        """Mean over samples of each sample's minimum (MEAN_MINMAX)."""
        self._need()
        return np.mean(self.mins, axis=0)

    @property
    def mean_max(self) -> np.ndarray:
        self._need()
        return np.mean(self.maxs, axis=0)

    @property
    def mean_abs_max(self) -> np.ndarray:
        self._need()
        return np.mean(self.abs_maxs, axis=0)

    @property
    def mean_quantiles(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Mean over samples of the low, high and absolute-high quantiles (MEAN_QUANTILE)."""
        self._need()
        return np.mean(self.q_lows, axis=0), np.mean(self.q_highs, axis=0), np.mean(self.q_abs, axis=0)

    @property
    def channel_mean(self) -> np.ndarray:
        """Mean over samples of the per-channel means."""
        return np.mean(self.means, axis=0)


def collect_statistics(model: Model, requests: list[StatisticRequest | Output], dataset: Dataset,
                       subset_size: int, show_progress: bool | None = None,
                       device: str = "CPU") -> list[TensorStatistics]:
    """Run ``model`` on the first ``subset_size`` items of ``dataset``; ``model`` is left as it was."""
    reqs = [r if isinstance(r, StatisticRequest) else StatisticRequest(r) for r in requests]
    stats = [TensorStatistics(r) for r in reqs]
    results_before = list(model.get_results())
    model.add_outputs([r.output for r in reqs])
    results = model.get_results()
    index = {(id(r.input_value(0).node), r.input_value(0).index): i for i, r in enumerate(results)}
    try:
        from vinerun.runtime.core import Core

        # f32 everywhere, as NNCF collects them: a bf16 CPU would otherwise round the statistics (and with them the
        # ranges and the bias corrections) to bf16
        request = Core().compile_model(model, device, {"INFERENCE_PRECISION_HINT": "f32"}).create_infer_request()
        length = dataset.get_length()
        total = min(subset_size, length) if length is not None else subset_size
        bar = ProgressBar(total, enabled=show_progress, unit="samples (statistics collection)")
        done = 0
        for sample in dataset.get_inference_data():
            if done >= subset_size:
                break
            try:
                request.infer(sample)
            except (ValueError, TypeError) as e:
                raise QuantizationError(f"calibration sample {done}: {e}") from e
            for st in stats:
                out = st.request.output
                st.add(request.get_output_tensor(index[(id(out.node), out.index)]).data)
            done += 1
            bar.update(done)
        bar.finish()
        if done == 0:
            raise QuantizationError("the calibration dataset gave no samples")
    finally:
        for r in model.get_results():
            if r not in results_before:
                model.remove_result(r)
    return stats


def _name(out: Output) -> str:
    names = out.get_names()
    return sorted(names)[0] if names else f"{out.node.friendly_name}:{out.index}"


def feed_names(sample: Any) -> list[str]:
    """The input names a sample gives (dict keys), for error messages."""
    return sorted(map(str, sample)) if isinstance(sample, dict) else []
