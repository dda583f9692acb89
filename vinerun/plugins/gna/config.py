"""The GNA device's properties (specs/gna.md §1): original keys, values, defaults and error texts.

One typed table (:data:`PLUGIN_TABLE`); legacy keys (``GNA_PRECISION``, ``GNA_EXEC_TARGET``...) are
translated to the current ones by :func:`canonical_config`; :func:`resolve` turns a configuration into
the :class:`GNAConfig` a compiled model uses (effective targets, per-input scale factors).

>>> values = PropertyValues(PLUGIN_TABLE)
>>> apply_config(values, {"GNA_DEVICE_MODE": "GNA_SW_FP32", "GNA_EXEC_TARGET": "GNA_TARGET_3_0"})
>>> cfg = resolve(values)
>>> cfg.mode.name, cfg.execution_target.name, cfg.compile_target.name
('SW_FP32', 'GNA_3_0', 'GNA_3_0')
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from vinerun import _version
from vinerun.errors import PropertyError
from vinerun.ir.types import Type
from vinerun.plugin_api.property_kinds import Bool, EnumOf, Float, Int, Kind, Str
from vinerun.plugin_api.property_table import SUPPORTED_PROPERTIES, Prop, PropertyTable, PropertyValues
from vinerun.properties import device, hint, log
from vinerun.properties.intel_gna import ExecutionMode, HWGeneration, PWLDesignAlgorithm

MODE = "GNA_DEVICE_MODE"
EXEC_TARGET = "GNA_HW_EXECUTION_TARGET"
COMPILE_TARGET = "GNA_HW_COMPILE_TARGET"
SCALE_FACTORS = "GNA_SCALE_FACTOR_PER_INPUT"
PRECISION = "INFERENCE_PRECISION_HINT"
NUM_REQUESTS = "PERFORMANCE_HINT_NUM_REQUESTS"
PWL_ALGORITHM = "GNA_PWL_DESIGN_ALGORITHM"
PWL_MAX_ERROR = "GNA_PWL_MAX_ERROR_PERCENT"

#: the target used when none is set: no GNA hardware to detect, so ``DeviceVersion::Default`` (2023)
DEFAULT_TARGET = HWGeneration.GNA_3_5
#: targets a configuration accepts
TARGETS = (HWGeneration.GNA_2_0, HWGeneration.GNA_3_0, HWGeneration.GNA_3_5)
MAX_REQUESTS = 127
#: legacy ``GNA_SCALE_FACTOR_<i>`` keys, i in 0..99
LEGACY_SCALE_KEYS = [f"GNA_SCALE_FACTOR_{i}" for i in range(100)]


def target_name(target: HWGeneration) -> str:
    """``GNA_TARGET_3_5``: the string OpenVINO's config and messages use."""
    return target.name.replace("GNA_", "GNA_TARGET_", 1)


class GNATable(PropertyTable):
    """A property table with the GNA plugin's unknown-key message and keys accepted but not listed."""

    def __init__(self, owner: str, props: Iterable[Prop], hidden: Iterable[str] = ()):
        super().__init__(owner, props)
        self.hidden = set(hidden)

    def supported(self) -> dict[str, str]:
        return {k: m for k, m in super().supported().items() if k not in self.hidden}

    def spec(self, key: str) -> Prop:
        if str(key) not in self.props:
            raise PropertyError(f"Incorrect GNA Plugin config. Key {key} not supported. "
                                f"Supported properties: {', '.join(sorted(self.supported()))}")
        return self.props[str(key)]


class Mode(EnumOf):
    """``GNA_DEVICE_MODE``: ``GNA_SW_EXACT``... (also ``SW_EXACT``, the enum, its int); legacy ``GNA_SW``."""

    def __init__(self) -> None:
        aliases = {f"GNA_{m.name}": m.name for m in ExecutionMode}
        aliases["GNA_SW"] = "AUTO"  # legacy "software, not exact": GNA_AUTO without hardware
        super().__init__(ExecutionMode, aliases=aliases)

    def bad_value(self, key: str, value: Any) -> PropertyError:
        return PropertyError(f"GNA device mode unsupported: {value}")


class Target(EnumOf):
    """A GNA generation a model can be compiled for: 2.0, 3.0, 3.5, or unset (``""``)."""

    def __init__(self) -> None:
        aliases = {target_name(t): t.name for t in TARGETS} | {"": "UNDEFINED"}
        excluded = [t.name for t in HWGeneration if t not in TARGETS and t != HWGeneration.UNDEFINED]
        super().__init__(HWGeneration, aliases=aliases, exclude=excluded)
        self.allowed = "one of GNA_TARGET_2_0, GNA_TARGET_3_0, GNA_TARGET_3_5 or \"\" (unset)"

    def convert(self, key: str, value: Any) -> HWGeneration:
        target = super().convert(key, value)
        if target.name not in self.names:
            raise self.bad_value(key, value)
        return target  # type: ignore[return-value]

    def bad_value(self, key: str, value: Any) -> PropertyError:
        return PropertyError(f"Unsupported GNA target for {key}: {value!r}; expected {self.allowed}")


class GNAPrecision(Kind):
    """``inference_precision``: i16 or i8 (``I16``, ``Type.i8``, ``np.int8`` too)."""

    allowed = "i16 or i8"

    def convert(self, key: str, value: Any) -> Type:
        try:
            t = Type(value.strip().lower() if isinstance(value, str) else value)
        except (TypeError, ValueError):
            t = None
        if t not in (Type.i16, Type.i8):
            raise PropertyError(f"Unsupported precision of GNA hardware, should be i16 or i8, but was: {value}")
        return t


def check_scale_factor(value: float, what: str) -> float:
    if value == 0.0 or math.isinf(value):
        raise PropertyError(f"input scale factor of 0.0f or +-inf not supported ({what} = {value})")
    if math.isnan(value) or value < 0:
        raise PropertyError(f"{what}: an input scale factor must be a positive number, got {value}")
    return value


class ScaleFactor(Float):
    def convert(self, key: str, value: Any) -> float:
        return check_scale_factor(super().convert(key, value), key)


class ScaleFactors(Kind):
    """``scale_factors_per_input``: ``{input name: scale factor}``."""

    allowed = "a dict {input name: scale factor}"

    def convert(self, key: str, value: Any) -> dict[str, float]:
        if not isinstance(value, Mapping):
            raise self.bad_type(key, value)
        return {str(k): check_scale_factor(Float().convert(f"{key}[{k}]", v), f"{key}[{k}]")
                for k, v in value.items()}


class PwlMaxError(Float):
    """``pwl_max_error_percent``: the code accepts [0, 128]; the original message says 0-100."""

    def convert(self, key: str, value: Any) -> float:
        v = super().convert(key, value)
        if not 0.0 <= v <= 128.0:
            raise PropertyError(f"Invalid value of PWL max error percent: {value}. Supported values: 0 - 100")
        return v


class NumRequests(Int):
    """``hint::num_requests``: 1..127; 0 becomes 1 and more than 127 becomes 127, as in the plugin."""

    def __init__(self) -> None:
        super().__init__(0)

    def convert(self, key: str, value: Any) -> int:
        return min(max(super().convert(key, value), 1), MAX_REQUESTS)


class LibThreads(Int):
    """Legacy ``GNA_LIB_N_THREADS``: 1..127, anything else throws."""

    def __init__(self) -> None:
        super().__init__(None)

    def convert(self, key: str, value: Any) -> int:
        v = super().convert(key, value)
        if not 1 <= v <= MAX_REQUESTS:
            raise PropertyError(f"Unsupported accelerator lib number of threads: {value}, "
                                f"should be in range 1..{MAX_REQUESTS}")
        return v


LOG_LEVEL = EnumOf(log.Level, aliases={"LOG_NONE": "NO", "LOG_ERROR": "ERR", "LOG_WARNING": "WARNING",
                                       "LOG_INFO": "INFO", "LOG_DEBUG": "DEBUG", "LOG_TRACE": "TRACE"})

#: keys a compiled model can still change (DOC23)
MUTABLE_AFTER_COMPILE = [MODE, "PERFORMANCE_HINT", "LOG_LEVEL"]
#: keys that change what compilation produces (an imported blob keeps its own values of these)
COMPILE_KEYS = [COMPILE_TARGET, PRECISION, PWL_ALGORITHM, PWL_MAX_ERROR, "GNA_COMPACT_MODE", "GNA_FIRMWARE_MODEL_IMAGE"]
#: the input scale-factor keys: per input name, and the legacy per index
SCALE_KEYS = [SCALE_FACTORS, *LEGACY_SCALE_KEYS]

#: keys both the plugin (read-write) and its compiled models (read-only but for the three above) have
TUNABLE = [
    Prop(MODE, Mode(), ExecutionMode.SW_EXACT, doc="SW_EXACT = the bit-exact integer path; SW_FP32 = float"),
    Prop(EXEC_TARGET, Target(), HWGeneration.UNDEFINED, doc="unset = GNA_TARGET_3_5 (no hardware to detect)"),
    Prop(COMPILE_TARGET, Target(), HWGeneration.UNDEFINED, doc="unset = the execution target"),
    Prop(PRECISION, GNAPrecision(), Type.i16, doc="weight precision: i16 or i8"),
    Prop(SCALE_FACTORS, ScaleFactors(), {}, doc="input name -> scale factor (default 1.0)"),
    Prop(PWL_ALGORITHM, EnumOf(PWLDesignAlgorithm), PWLDesignAlgorithm.RECURSIVE_DESCENT),
    Prop(PWL_MAX_ERROR, PwlMaxError(), 1.0, doc="PWL design error bound, % of the function's range"),
    Prop("GNA_FIRMWARE_MODEL_IMAGE", Str(), ""),
    Prop("GNA_COMPACT_MODE", Bool(), True),
    Prop(NUM_REQUESTS, NumRequests(), 1, doc="1..127; forced to 1 with state layers"),
    Prop("PERFORMANCE_HINT", EnumOf(hint.PerformanceMode, aliases={"TPUT": "THROUGHPUT"}),
         hint.PerformanceMode.LATENCY),
    Prop("LOG_LEVEL", LOG_LEVEL, log.Level.NO),
    Prop("PERF_COUNT", Bool(), False, doc="report the estimated cycle counters"),
    Prop("EXCLUSIVE_ASYNC_REQUESTS", Bool(), False),
]

#: accepted but not listed in SUPPORTED_PROPERTIES (OpenVINO's legacy GNA keys)
HIDDEN = [
    Prop("SINGLE_THREAD", Bool(), True),
    Prop("GNA_FIRMWARE_MODEL_IMAGE_GENERATION", Str(), "", doc="deprecated; stored only"),
    *(Prop(k, ScaleFactor(), 1.0) for k in LEGACY_SCALE_KEYS),
]


def full_version() -> str:
    return f"vinerun {_version.__version__} GNA software emulation"


PLUGIN_TABLE = GNATable("GNA plugin", [
    Prop("AVAILABLE_DEVICES", default=lambda: ["GNA_SW"], mutability="RO"),
    Prop("OPTIMAL_NUMBER_OF_INFER_REQUESTS", default=1, mutability="RO"),
    Prop("RANGE_FOR_ASYNC_INFER_REQUESTS", default=(1, 1, 1), mutability="RO"),
    Prop("OPTIMIZATION_CAPABILITIES", default=lambda: ["INT16", "INT8", "EXPORT_IMPORT", "FP32"], mutability="RO"),
    Prop("FULL_DEVICE_NAME", default="GNA_SW", mutability="RO"),
    Prop("GNA_LIBRARY_FULL_VERSION", default=full_version, mutability="RO"),
    Prop("DEVICE_TYPE", default=device.Type.INTEGRATED, mutability="RO"),
    Prop("EXECUTION_DEVICES", default=lambda: ["GNA_SW_EXACT"], mutability="RO"),
    *TUNABLE,
    Prop("CACHE_DIR", Str(), "", doc="model cache directory (the Core's cache uses it)"),
    *HIDDEN,
], hidden=[p.name for p in HIDDEN])

COMPILED_TABLE = GNATable("GNA compiled model", [
    *(replace(p, mutability="RW" if p.name in MUTABLE_AFTER_COMPILE else "RO") for p in TUNABLE),
    Prop("NETWORK_NAME", mutability="RO"),
    Prop("OPTIMAL_NUMBER_OF_INFER_REQUESTS", default=1, mutability="RO"),
    Prop("EXECUTION_DEVICES", mutability="RO"),
    Prop("LOADED_FROM_CACHE", default=False, mutability="RO"),
])


def _uniform(key: str, value: Any) -> PWLDesignAlgorithm:
    uniform = Bool().convert(key, value)
    return PWLDesignAlgorithm.UNIFORM_DISTRIBUTION if uniform else PWLDesignAlgorithm.RECURSIVE_DESCENT


#: legacy key -> (current key, how its value converts to the current key's)
LEGACY: dict[str, tuple[str, Any]] = {
    "GNA_PRECISION": (PRECISION, lambda k, v: v),
    "GNA_EXEC_TARGET": (EXEC_TARGET, lambda k, v: v),
    "GNA_COMPILE_TARGET": (COMPILE_TARGET, lambda k, v: v),
    "GNA_PWL_UNIFORM_DESIGN": (PWL_ALGORITHM, _uniform),
    "GNA_LIB_N_THREADS": (NUM_REQUESTS, lambda k, v: LibThreads().convert(k, v)),
    "GNA_SCALE_FACTOR": ("GNA_SCALE_FACTOR_0", lambda k, v: v),
}


def canonical_key(key: str) -> str:
    return LEGACY[key][0] if key in LEGACY else key


def canonical_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with legacy keys replaced by the current ones."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        key = str(key)
        if key in LEGACY:
            new, convert = LEGACY[key]
            out[new] = convert(key, value)
        else:
            out[key] = value
    return out


def apply_config(values: PropertyValues, config: Mapping[str, Any]) -> None:
    """Validate and store ``config`` (nothing is stored if a value is bad), with the plugin's rules:
    setting the execution target sets the compile target too while that is unset; ``GNA_SW_FP32``
    takes one request."""
    config = canonical_config(config)
    trial = values.copy()
    trial.set(config)
    if (EXEC_TARGET in config and COMPILE_TARGET not in config
            and trial.get(COMPILE_TARGET) == HWGeneration.UNDEFINED):
        trial.set({COMPILE_TARGET: trial.get(EXEC_TARGET)})
    if trial.get(MODE) == ExecutionMode.SW_FP32 and trial.get(NUM_REQUESTS) > 1:
        raise PropertyError("GNA plugin does not support async mode on GNA_SW_FP32!")
    values.values, values.explicit = trial.values, trial.explicit


@dataclass(frozen=True)
class GNAConfig:
    """What compilation uses, resolved from a configuration."""

    mode: ExecutionMode = ExecutionMode.SW_EXACT
    execution_target: HWGeneration = DEFAULT_TARGET
    compile_target: HWGeneration = DEFAULT_TARGET
    precision: str = "i16"
    scale_factors: dict[str, float] = field(default_factory=dict)
    scale_factors_by_index: dict[int, float] = field(default_factory=dict)
    pwl_algorithm: PWLDesignAlgorithm = PWLDesignAlgorithm.RECURSIVE_DESCENT
    pwl_max_error_percent: float = 1.0
    num_requests: int = 1
    perf_count: bool = False

    def input_scale_factor(self, index: int, names: Iterable[str]) -> float:
        """The user's scale factor of input ``index`` (by one of its ``names``, else legacy index), else 1.0."""
        for name in names:
            if name in self.scale_factors:
                return self.scale_factors[name]
        return self.scale_factors_by_index.get(index, 1.0)


def effective_targets(values: PropertyValues) -> tuple[HWGeneration, HWGeneration]:
    """(execution, compile) targets: unset execution = the default; unset compile = execution."""
    exec_target = values.get(EXEC_TARGET)
    if exec_target == HWGeneration.UNDEFINED:
        exec_target = DEFAULT_TARGET
    compile_target = values.get(COMPILE_TARGET)
    if compile_target == HWGeneration.UNDEFINED:
        compile_target = exec_target
    return exec_target, compile_target


def resolve(values: PropertyValues) -> GNAConfig:
    exec_target, compile_target = effective_targets(values)
    by_index = {i: float(values.get(k)) for i, k in enumerate(LEGACY_SCALE_KEYS) if values.is_set(k)}
    return GNAConfig(
        mode=values.get(MODE), execution_target=exec_target, compile_target=compile_target,
        precision=values.get(PRECISION).get_type_name(), scale_factors=dict(values.get(SCALE_FACTORS)),
        scale_factors_by_index=by_index, pwl_algorithm=values.get(PWL_ALGORITHM),
        pwl_max_error_percent=float(values.get(PWL_MAX_ERROR)), num_requests=int(values.get(NUM_REQUESTS)),
        perf_count=bool(values.get("PERF_COUNT")))


def execution_devices(mode: ExecutionMode) -> list[str]:
    """What runs a request: there is no GNA hardware, so every mode but SW_FP32 runs the bit-exact path."""
    return ["GNA_SW_FP32"] if mode == ExecutionMode.SW_FP32 else ["GNA_SW_EXACT"]


def read(values: PropertyValues, key: str) -> Any:
    """A property value as the plugin or a compiled model reports it (targets resolved, legacy keys mapped)."""
    key = canonical_key(str(key))
    if key == SUPPORTED_PROPERTIES:
        return values.get(key)
    if key in (EXEC_TARGET, COMPILE_TARGET):
        values.table.spec(key)
        exec_target, compile_target = effective_targets(values)
        return exec_target if key == EXEC_TARGET else compile_target
    if key == "EXECUTION_DEVICES" and key not in values.computed:
        return execution_devices(values.get(MODE))
    return values.get(key)

