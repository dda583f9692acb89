"""``vinerun.quantize``: post-training 8-bit quantization, in the spirit of ``nncf.quantize``.

The result is a new Model with FakeQuantize nodes where NNCF places them for OpenVINO's CPU plugin, so vinerun's
and OpenVINO's low-precision transformations both run it in int8, and ``save_model`` writes IR either reads.

>>> import numpy as np, vinerun as ov
>>> x = ov.opset1.parameter([1, 3, 8, 8], ov.Type.f32, name="x")
>>> w = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
>>> conv = ov.opset1.convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1], name="conv")
>>> data = ov.Dataset([np.random.default_rng(i).random((1, 3, 8, 8), np.float32) for i in range(4)])
>>> q = ov.quantize(ov.Model([ov.opset1.relu(conv)], [x]), data)
>>> sorted(n.friendly_name for n in q.get_ordered_ops() if n.type_name == "FakeQuantize")
['conv/fq_weights_1', 'x/fq_output_0']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from vinerun.ir import Model
from vinerun.quantization.bias_correction import corrected_bias, find_bias_sites, set_bias
from vinerun.quantization.dataset import Dataset
from vinerun.quantization.graph import LINEAR_OPS, GraphInfo
from vinerun.quantization.insertion import insert_on, make_fake_quantize
from vinerun.quantization.parameters import (
    AdvancedQuantizationParameters,
    IgnoredScope,
    ModelType,
    QuantizationError,
    QuantizationPreset,
    RangeEstimator,
    TargetDevice,
)
from vinerun.quantization.placement import ActivationPoint, find_activation_points
from vinerun.quantization.ranges import ACTIVATION_LEVELS, WEIGHT_LEVELS, asymmetric_range, symmetric_range
from vinerun.quantization.statistics import StatisticRequest, TensorStatistics, collect_statistics
from vinerun.quantization.weights import quantize_weights


def quantize(model: Model, calibration_dataset: Dataset | Iterable[Any],
             preset: QuantizationPreset | str | None = None,
             target_device: TargetDevice | str = TargetDevice.ANY, subset_size: int = 300,
             fast_bias_correction: bool = True, model_type: ModelType | str | None = None,
             ignored_scope: IgnoredScope | None = None,
             advanced_parameters: AdvancedQuantizationParameters | None = None) -> Model:
    """Quantize ``model`` to 8 bits with statistics from the first ``subset_size`` calibration samples.

    ``preset``: PERFORMANCE (default; MIXED for ``model_type=TRANSFORMER``, as NNCF). ``ignored_scope``: layers
    left in float. ``fast_bias_correction``: shift biases so mean outputs match the float model. The input model
    is not changed.
    """
    if not isinstance(model, Model):
        raise QuantizationError(f"quantize expects a vinerun Model (Core().read_model), got {type(model).__name__}")
    if isinstance(subset_size, bool) or not isinstance(subset_size, int) or subset_size < 1:
        raise QuantizationError(f"subset_size must be a positive integer, got {subset_size!r}")
    dataset = calibration_dataset if isinstance(calibration_dataset, Dataset) else Dataset(calibration_dataset)
    model_type = _enum(ModelType, model_type, "model_type") if model_type is not None else None
    default = QuantizationPreset.MIXED if model_type == ModelType.TRANSFORMER else QuantizationPreset.PERFORMANCE
    preset = _enum(QuantizationPreset, preset, "preset") if preset is not None else default
    _enum(TargetDevice, target_device, "target_device")
    advanced = advanced_parameters or AdvancedQuantizationParameters()
    ignored = ignored_scope or IgnoredScope()

    work = model.clone()
    info = GraphInfo(work)
    ignored.check({n.friendly_name for n in info.ops}, {n.type_name for n in info.ops})
    points = find_activation_points(info, ignored, model_type)
    layers = [n for n in info.ops if n.type_name in LINEAR_OPS and info.weight_port(n) is not None
              and not ignored.matches(n.friendly_name, n.type_name)]
    sites = find_bias_sites(info, layers) if fast_bias_correction else []

    quantile = advanced.quantile_outlier_prob if advanced.activations_range_estimator == RangeEstimator.MEAN_QUANTILE \
        else 0.0
    requests = [StatisticRequest(p.output, 1 if p.per_channel else None, 0.0 if p.per_channel else quantile)
                for p in points]
    requests += [StatisticRequest(s.layer.input_value(s.act_port), None, 0.0, s.in_axis) for s in sites]
    stats = collect_statistics(work, requests, dataset, subset_size, advanced.show_progress)
    act_stats, site_stats = stats[:len(points)], stats[len(points):]

    weight_fqs = {fq.friendly_name: fq for fq in quantize_weights(info, layers)}
    for k, site in enumerate(sites):
        fq = weight_fqs.get(f"{site.layer.friendly_name}/fq_weights_{1 - site.act_port}")
        st_in = site_stats[k]
        if fq is None or not st_in.means:
            continue
        low, high = fq.const_input(1), fq.const_input(2)
        new = corrected_bias(site, info, st_in.channel_mean, st_in.shape, low, high, WEIGHT_LEVELS,
                             advanced.bias_correction_threshold)
        if new is not None:
            set_bias(site, new)

    for point, st in zip(points, act_stats, strict=True):
        low, high = activation_range(point, st, preset, advanced.activations_range_estimator)
        fq = make_fake_quantize(point.output, low, high, ACTIVATION_LEVELS, point.name)
        insert_on(point.output, point.consumers, fq)
    work.validate_nodes_and_infer_types()
    return work


def activation_range(point: ActivationPoint, st: TensorStatistics, preset: QuantizationPreset,
                     estimator: RangeEstimator) -> tuple[np.ndarray, np.ndarray]:
    """FakeQuantize limits of one activation quantizer (per-channel limits shaped ``[1, C, 1, ...]``)."""
    symmetric = preset == QuantizationPreset.PERFORMANCE
    if point.per_channel or estimator == RangeEstimator.MINMAX:
        lo, hi, habs = st.min, st.max, st.abs_max
    elif estimator == RangeEstimator.MEAN_QUANTILE:
        lo, hi, habs = st.mean_quantiles
    else:
        lo, hi, habs = st.mean_min, st.mean_max, st.mean_abs_max
    if symmetric:
        low, high = symmetric_range(lo, habs, ACTIVATION_LEVELS)
    else:
        low, high = asymmetric_range(lo, hi)
    if point.per_channel:
        shape = [1] * max(len(st.shape), 2)
        shape[1] = -1
        return low.reshape(shape), high.reshape(shape)
    return np.float32(low), np.float32(high)


def _enum(kind: type, value: Any, what: str) -> Any:
    try:
        return kind(value.value if hasattr(value, "value") else value)
    except ValueError:
        raise QuantizationError(f"{what}: '{value}' is not one of {[v.value for v in kind]}") from None
