"""The options of ``vinerun.quantize`` and ``vinerun.compress_weights``, named as NNCF names them.

>>> QuantizationPreset("mixed") is QuantizationPreset.MIXED
True
>>> IgnoredScope(names=["head/MatMul"], types=["Multiply"]).names
['head/MatMul']
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from vinerun.errors import VinerunError


class QuantizationError(VinerunError, ValueError):
    """``quantize`` / ``compress_weights`` were given something they cannot use; the message names it."""


class QuantizationPreset(StrEnum):
    """PERFORMANCE: symmetric activations and weights (fastest). MIXED: asymmetric activations, symmetric
    weights (better for activations not centred on zero, e.g. after a non-ReLU activation)."""

    PERFORMANCE = "performance"
    MIXED = "mixed"


class TargetDevice(StrEnum):
    """The device the quantized model is meant for; every value gives the CPU placement rules."""

    ANY = "ANY"
    CPU = "CPU"
    GPU = "GPU"
    NPU = "NPU"


class ModelType(StrEnum):
    """``TRANSFORMER`` leaves element-wise ops and normalisations in float, as NNCF's transformer scheme."""

    TRANSFORMER = "transformer"


class CompressWeightsMode(StrEnum):
    """Weight-only compression: the storage type of MatMul / embedding weights."""

    INT8_SYM = "int8_sym"
    INT8_ASYM = "int8_asym"
    INT4_SYM = "int4_sym"
    INT4_ASYM = "int4_asym"


class RangeEstimator(StrEnum):
    """How activation ranges are taken from the calibration statistics.

    MEAN_MINMAX (NNCF's default for per-tensor activations): the mean over samples of each sample's min / max.
    MINMAX: the min / max over every sample. MEAN_QUANTILE: the mean of each sample's 1e-4 / 1 - 1e-4 quantiles.
    """

    MINMAX = "minmax"
    MEAN_MINMAX = "mean_minmax"
    MEAN_QUANTILE = "mean_quantile"


@dataclass
class IgnoredScope:
    """Nodes that stay in float: by friendly name, by regular expression over names, or by op type.

    >>> scope = IgnoredScope(patterns=[r"head/.*"], types=["MatMul"])
    >>> scope.matches("head/fc", "Add"), scope.matches("body/fc", "MatMul"), scope.matches("x", "Add")
    (True, True, False)

    ``validate=True`` (the default, as NNCF) makes a name or type the model does not have an error.
    """

    names: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    validate: bool = True

    def matches(self, name: str, type_name: str) -> bool:
        """Whether a node with this friendly name and op type is ignored."""
        return (name in self.names or type_name in self.types
                or any(re.fullmatch(p, name) for p in self.patterns))

    def check(self, names: set[str], types: set[str]) -> None:
        """With ``validate``: raise naming every ignored name, pattern or type that matches nothing."""
        if not self.validate:
            return
        problems = [f"name '{n}'" for n in self.names if n not in names]
        problems += [f"pattern '{p}'" for p in self.patterns if not any(re.fullmatch(p, n) for n in names)]
        problems += [f"type '{t}'" for t in self.types if t not in types]
        if problems:
            raise QuantizationError(f"ignored_scope: {', '.join(problems)} matches no node of the model "
                                    "(pass IgnoredScope(..., validate=False) to allow this)")


@dataclass
class AdvancedQuantizationParameters:
    """Less common knobs of ``quantize``.

    ``activations_range_estimator``: see ``RangeEstimator``; ``quantile_outlier_prob``: the tail cut off by
    MEAN_QUANTILE; ``bias_correction_threshold``: a bias whose corrected value moves by more than this many
    times its own magnitude is left as it was (NNCF's rule); ``show_progress``: draw a progress bar (default: on a
    terminal).
    """

    activations_range_estimator: RangeEstimator = RangeEstimator.MEAN_MINMAX
    quantile_outlier_prob: float = 1e-4
    bias_correction_threshold: float = 2.0
    show_progress: bool | None = None


class DropType(StrEnum):
    """How ``quantize_with_accuracy_control`` measures the metric's drop: ABSOLUTE ``initial - quantized``;
    RELATIVE ``(initial - quantized) / |initial|``."""

    ABSOLUTE = "absolute"
    RELATIVE = "relative"


class RankingMode(StrEnum):
    """What ``quantize_with_accuracy_control`` ranks quantizer groups by (NNCF's two evaluator modes).

    OUTPUTS: the normalised mean square error of the model outputs against the float model's (NNCF's logits
    mode; smooth, needs one inference per ranking sample). METRIC: ``validation_fn`` on each ranking sample alone
    (NNCF's metric mode; the metric itself, but coarse for a 0 / 1 per-sample metric).
    """

    OUTPUTS = "outputs"
    METRIC = "metric"


@dataclass
class AdvancedAccuracyRestorerParameters:
    """Knobs of ``quantize_with_accuracy_control``'s search, named as NNCF names them.

    ``max_num_iterations``: most groups of quantizers tried (reverted and validated). ``ranking_subset_size``:
    the validation samples used to rank the groups, those where the quantized model's outputs differ most from the
    float model's. ``ranking``: see ``RankingMode``. ``show_progress``: draw progress bars (default: on a terminal).
    """

    max_num_iterations: int = 2**31 - 1
    ranking_subset_size: int = 300
    ranking: RankingMode = RankingMode.OUTPUTS
    show_progress: bool | None = None
