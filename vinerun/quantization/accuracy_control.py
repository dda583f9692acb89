"""``vinerun.quantize_with_accuracy_control``: quantize, then give back to float the quantizers that cost the most
accuracy until the metric is within ``max_drop`` of the float model's, in the spirit of NNCF's function of that name.

The search (NNCF's ``QuantizationAccuracyRestorer``): validate the float and the quantized model; if the drop is
too large, rank the groups of quantizers (``quantizer_groups``) by how much reverting each one alone brings the
outputs back to the float model's on a ranking subset (the validation samples that differ most), then revert
groups best-first, validating after each, until the drop is within ``max_drop``. A revert that makes things worse
is undone once and the remaining groups are ranked again.

>>> import numpy as np, vinerun as ov
>>> x = ov.opset1.parameter([1, 4], ov.Type.f32, name="x")
>>> model = ov.Model([ov.opset1.matmul(x, np.eye(4, dtype=np.float32), False, False)], [x])
>>> data = ov.Dataset([np.random.default_rng(i).random((1, 4), np.float32) for i in range(8)])
>>> def validate(compiled, items):  # 1 - mean relative error
...     return 1.0 - float(np.mean([np.abs(compiled(s)[0] - s).mean() for s in items]))
>>> q = ov.quantize_with_accuracy_control(model, data, data, validate, max_drop=0.1)
>>> q.get_rt_info(["accuracy_control", "reverted_groups"]).astype(int)
0
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vinerun.ir import Model
from vinerun.quantization.dataset import Dataset
from vinerun.quantization.parameters import (
    AdvancedAccuracyRestorerParameters,
    AdvancedQuantizationParameters,
    DropType,
    IgnoredScope,
    ModelType,
    QuantizationError,
    QuantizationPreset,
    RankingMode,
    TargetDevice,
)
from vinerun.quantization.quantize import quantize
from vinerun.quantization.quantizer_groups import (
    QuantizerGroup,
    bias_values,
    find_quantizer_groups,
    freeze_names,
    revert_groups,
)
from vinerun.tools.progress import ProgressBar

log = logging.getLogger("vinerun.quantization")

#: ``validation_fn(compiled_model, items) -> metric`` (higher is better), or ``(metric, per-item values)``
ValidationFn = Callable[[Any, Iterable[Any]], Any]


@dataclass
class AccuracyControlReport:
    """What the search did; also stored in the returned model's rt_info under ``accuracy_control``."""

    initial_metric: float
    quantized_metric: float
    final_metric: float = float("nan")
    groups: int = 0
    reverted: list[QuantizerGroup] = field(default_factory=list)
    iterations: int = 0
    reached: bool = False

    @property
    def reverted_quantizers(self) -> int:
        """The number of FakeQuantize nodes the search removed."""
        return sum(len(g.quantizers) for g in self.reverted)


def quantize_with_accuracy_control(
        model: Model, calibration_dataset: Dataset | Iterable[Any], validation_dataset: Dataset | Iterable[Any],
        validation_fn: ValidationFn, *, max_drop: float = 0.01, drop_type: DropType | str = DropType.ABSOLUTE,
        preset: QuantizationPreset | str | None = None, target_device: TargetDevice | str = TargetDevice.ANY,
        subset_size: int = 300, fast_bias_correction: bool = True, model_type: ModelType | str | None = None,
        ignored_scope: IgnoredScope | None = None,
        advanced_quantization_parameters: AdvancedQuantizationParameters | None = None,
        advanced_accuracy_restorer_parameters: AdvancedAccuracyRestorerParameters | None = None) -> Model:
    """``quantize`` ``model``, then revert the most harmful groups of quantizers to float until
    ``validation_fn``'s metric is at most ``max_drop`` below the float model's.

    ``validation_fn(compiled_model, items)``: the metric (higher is better) of a vinerun CPU compiled model
    (``INFERENCE_PRECISION_HINT=f32``, as NNCF compiles candidates) on ``items`` (raw items of
    ``validation_dataset``; ``Dataset.get_inference_data`` gives the model inputs). The quantization options are
    those of ``quantize``. The returned Model keeps FakeQuantize nodes for the quantizers that stay; its rt_info
    ``accuracy_control`` holds the metrics and what was reverted (also logged to the ``vinerun.quantization``
    logger).
    """
    if isinstance(max_drop, bool) or not isinstance(max_drop, (int, float)) or max_drop < 0:
        raise QuantizationError(f"max_drop must be a non-negative number, got {max_drop!r}")
    drop_type = _drop_type(drop_type)
    restorer = advanced_accuracy_restorer_parameters or AdvancedAccuracyRestorerParameters()
    validation = validation_dataset if isinstance(validation_dataset, Dataset) else Dataset(validation_dataset)
    show = restorer.show_progress
    named = model.clone()
    freeze_names(named)  # the groups find their nodes by name in the clones the search makes
    quantized = quantize(named, calibration_dataset, preset, target_device, subset_size, fast_bias_correction,
                         model_type, ignored_scope, advanced_quantization_parameters)
    evaluator = _Evaluator(validation, validation_fn, show)
    initial = evaluator.metric(model)
    current = evaluator.metric(quantized)
    report = AccuracyControlReport(initial, current, current)
    log.info("accuracy control: float metric %.6g, quantized %.6g (drop %.6g %s, max %g)", initial, current,
             _drop(initial, current, drop_type), drop_type.value, max_drop)
    if _drop(initial, current, drop_type) <= max_drop:
        report.reached = True
        return _finish(quantized, report)

    groups = find_quantizer_groups(quantized)
    report.groups = len(groups)
    ranker = _Ranker(evaluator, named, restorer, bias_values(named), show)
    ranked = ranker.rank(groups, quantized, [])
    best, best_drop, step_back = quantized, _drop(initial, current, drop_type), True
    while ranked and report.iterations < restorer.max_num_iterations:
        report.iterations += 1
        group = ranked.pop()
        candidate = ranker.revert(quantized, report.reverted + [group])
        metric = evaluator.metric(candidate)
        drop = _drop(initial, metric, drop_type)
        log.info("accuracy control: reverted %s -> metric %.6g (drop %.6g)", group, metric, drop)
        if drop <= max_drop or not ranked or drop <= best_drop or step_back:
            report.reverted.append(group)
            best, report.final_metric, step_back = candidate, metric, False
            if drop <= max_drop:
                report.reached = True
                break
            best_drop = drop
            continue
        # worse than before this revert: undo it and rank what is left on the current model (NNCF's step back)
        ranked.append(group)
        step_back, best_drop = True, drop
        ranked = ranker.rank(ranked, quantized, report.reverted)
    return _finish(best, report)


class _Evaluator:
    """Compiles candidates on vinerun's CPU and runs ``validation_fn`` / the model on the validation data."""

    def __init__(self, dataset: Dataset, validation_fn: ValidationFn, show: bool | None):
        self.dataset, self.fn, self.show = dataset, validation_fn, show
        self.items = list(dataset.get_data())
        if not self.items:
            raise QuantizationError("the validation dataset gave no items")

    def compile(self, model: Model) -> Any:
        """On the CPU with f32 outside the int8 layers (as NNCF's ``use_fp32_precision``): on a bf16 CPU the
        default precision would put bf16 noise into the float model's metric and every candidate's."""
        from vinerun.runtime.core import Core

        return Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})

    def metric(self, model: Model, indices: list[int] | None = None) -> float:
        """``validation_fn``'s metric of ``model`` on the validation items (all, or those at ``indices``)."""
        items = self.items if indices is None else [self.items[i] for i in indices]
        return _as_metric(self.fn(self.compile(model), items))

    def outputs(self, model: Model, indices: list[int]) -> list[list[np.ndarray]]:
        """The model's outputs on the validation items at ``indices``."""
        request = self.compile(model).create_infer_request()
        result = []
        for sample in self.dataset.get_inference_data(indices):
            request.infer(sample)
            result.append([np.array(request.get_output_tensor(k).data, np.float64)
                           for k in range(len(model.outputs))])
        return result


class _Ranker:
    """Scores each group by the outputs (or metric) of the model with that group reverted, on a ranking subset."""

    def __init__(self, evaluator: _Evaluator, model: Model, params: AdvancedAccuracyRestorerParameters,
                 biases: dict[str, tuple[int, np.ndarray]], show: bool | None):
        self.evaluator, self.params, self.biases, self.show = evaluator, params, biases, show
        self.all = list(range(len(evaluator.items)))
        self.reference = evaluator.outputs(model, self.all)

    def revert(self, quantized: Model, groups: list[QuantizerGroup]) -> Model:
        return revert_groups(quantized, groups, self.biases)

    def rank(self, groups: list[QuantizerGroup], quantized: Model, reverted: list[QuantizerGroup]
             ) -> list[QuantizerGroup]:
        """``groups`` sorted by score, the most helpful last (popped first)."""
        current = self.revert(quantized, reverted) if reverted else quantized
        errors = [_nmse(r, a) for r, a in zip(self.reference, self.evaluator.outputs(current, self.all),
                                                strict=True)]
        subset = sorted(np.argsort(errors)[::-1][:self.params.ranking_subset_size].tolist())
        log.info("accuracy control: ranking %d groups of quantizers on %d validation samples", len(groups),
                 len(subset))
        bar = ProgressBar(len(groups), enabled=self.show, unit="quantizer groups ranked")
        scores = []
        for k, group in enumerate(groups):
            candidate = self.revert(quantized, reverted + [group])
            if self.params.ranking == RankingMode.METRIC:
                scores.append(self.evaluator.metric(candidate, subset))
            else:
                outs = self.evaluator.outputs(candidate, subset)
                scores.append(-float(np.mean([_nmse(self.reference[i], o) for i, o in zip(subset, outs,
                                                                                        strict=True)])))
            bar.update(k + 1)
        bar.finish()
        order = sorted(range(len(groups)), key=lambda k: scores[k])
        return [groups[k] for k in order]


def _finish(model: Model, report: AccuracyControlReport) -> Model:
    if report.reached and not report.reverted:
        report.final_metric = report.quantized_metric
    log.info("accuracy control: %s; reverted %d of %d groups (%d quantizers); metric %.6g (float %.6g)",
             "reached the required drop" if report.reached else "did not reach the required drop",
             len(report.reverted), report.groups, report.reverted_quantizers, report.final_metric,
             report.initial_metric)
    info = {"initial_metric": report.initial_metric, "quantized_metric": report.quantized_metric,
            "final_metric": report.final_metric, "groups": report.groups, "reverted_groups": len(report.reverted),
            "reverted_quantizers": report.reverted_quantizers, "reached": report.reached}
    for key, value in info.items():
        model.set_rt_info(str(value) if isinstance(value, bool) else value, ["accuracy_control", key])
    return model


def _drop(initial: float, current: float, drop_type: DropType) -> float:
    if drop_type == DropType.RELATIVE:
        return (initial - current) / abs(initial) if initial != 0 else float("inf") * (initial - current)
    return initial - current


def _nmse(reference: list[np.ndarray], approx: list[np.ndarray]) -> float:
    """NNCF's normalised MSE: ``|ref - approx|^2 / |ref|^2``, averaged over the outputs."""
    values = []
    for r, a in zip(reference, approx, strict=True):
        err = (r - a).ravel()
        values.append(float(err @ err) / max(float(r.ravel() @ r.ravel()), 1e-30))
    return float(np.mean(values))


def _as_metric(value: Any) -> float:
    metric = value[0] if isinstance(value, tuple) else value
    try:
        return float(metric)
    except (TypeError, ValueError):
        raise QuantizationError(f"validation_fn must return a number (or (number, values)), got "
                                f"{type(metric).__name__}") from None


def _drop_type(value: DropType | str) -> DropType:
    try:
        return DropType(value.value if isinstance(value, DropType) else value)
    except ValueError:
        raise QuantizationError(f"drop_type: '{value}' is not one of {[d.value for d in DropType]}") from None
