"""Estimated GNA cycle counters: a stated cost model, since software has no hardware counters.

The hardware reported two counters in cycles (specs/gna.md §5); no cycle model was published. This
estimate is ``cycles = ceil(MACs / MACs_per_cycle) + ceil(activations / PWL_per_cycle)`` per layer,
with the generation's compute engines (GNA library capabilities):

* GNA 2.0: 6 engines x 8 int16 MACs = 48 MACs/cycle (int8 weights are not faster); 6 PWL outputs/cycle
  (assumed: one per engine).
* GNA 3.0 / 3.5: 8 engines x 8 int16 (16 int8) MACs = 64 (128 int8) MACs/cycle; 16 activation engines.
  3.5 is assumed equal to 3.0 (no figure found).

At 400 MHz (Core; 200 MHz on Atom) ``seconds = cycles / f``. Stalls (memory) are not modelled: the
stall counter is 0. Both counters carry "(estimate)" in their names.

>>> estimate_cycles(model, HWGeneration.GNA_3_0, "i16").total   # doctest: +SKIP
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.plugin_api.infer_request import ProfilingInfo
from vinerun.properties.intel_gna import HWGeneration

FREQUENCY_HZ = {"CORE": 400e6, "ATOM": 200e6}
TOTAL_COUNTER = "1.1 Total scoring time in HW (estimate)"
STALL_COUNTER = "1.2 Stall scoring time in HW (estimate)"


@dataclass(frozen=True)
class EngineModel:
    """Throughput of one generation: MACs per cycle by weight precision, PWL outputs per cycle."""

    macs_per_cycle: dict[str, int]
    pwl_per_cycle: int

    def describe(self, target: HWGeneration, precision: str) -> str:
        return (f"estimate: vinerun cost model, {target.name}: {self.macs_per_cycle[precision]} {precision} "
                f"MACs/cycle, {self.pwl_per_cycle} PWL outputs/cycle; cycles, 400 MHz on Core")


ENGINES = {
    HWGeneration.GNA_2_0: EngineModel({"i16": 48, "i8": 48}, 6),
    HWGeneration.GNA_3_0: EngineModel({"i16": 64, "i8": 128}, 16),
    HWGeneration.GNA_3_5: EngineModel({"i16": 64, "i8": 128}, 16),
}

PWL_OPS = {"Sigmoid", "Tanh", "Relu", "PRelu", "SoftSign", "Exp", "Log", "Power", "Clamp", "Abs", "Sign",
           "FakeQuantize"}


def _shape(node: Node, index: int = 0, output: bool = True) -> list[int]:
    ps = node.get_output_partial_shape(index) if output else node.input_value(index).get_partial_shape()
    return [d.get_length() if d.is_static else 1 for d in ps]


def layer_macs(node: Node) -> int:
    """Multiply-accumulates of one layer as GNA runs it (affine, diagonal, convolution, cells)."""
    t = node.type_name
    if t == "MatMul":
        a = _shape(node, 0, output=False)
        k = a[-2] if node.get_attributes().get("transpose_a") and len(a) > 1 else a[-1]
        return math.prod(_shape(node)) * k
    if t in ("Add", "Subtract", "Multiply"):
        return math.prod(_shape(node))
    if t == "Convolution":
        w = _shape(node, 1, output=False)
        return math.prod(_shape(node)) * math.prod(w[1:])
    if t in ("LSTMCell", "GRUCell", "LSTMSequence"):
        x, h = _shape(node, 0, output=False), _shape(node, 1, output=False)
        gates = 3 if t == "GRUCell" else 4
        return x[0] * gates * h[-1] * (x[-1] + h[-1]) + x[0] * 3 * h[-1]
    return 0


def layer_activations(node: Node) -> int:
    if node.type_name in PWL_OPS:
        return math.prod(_shape(node))
    if node.type_name in ("LSTMCell", "GRUCell", "LSTMSequence"):
        h = _shape(node, 1, output=False)
        return h[0] * h[-1] * (3 if node.type_name == "GRUCell" else 5)
    return 0


@dataclass(frozen=True)
class CycleEstimate:
    total: int
    stall: int
    macs: int
    description: str

    def seconds(self, platform: str = "CORE") -> float:
        return self.total / FREQUENCY_HZ[platform]

    def profiling_info(self) -> list[ProfilingInfo]:
        """The two counters as the plugin reported them: cycles in the ``real_time`` microseconds field."""
        return [ProfilingInfo(TOTAL_COUNTER, "GNA", self.description, "EXECUTED",
                              timedelta(microseconds=self.total)),
                ProfilingInfo(STALL_COUNTER, "GNA", self.description, "EXECUTED",
                              timedelta(microseconds=self.stall))]


def estimate_cycles(model: Model, target: HWGeneration, precision: str = "i16") -> CycleEstimate:
    """Estimated cycles of one inference of ``model`` on ``target``."""
    engine = ENGINES[target]
    per_cycle = engine.macs_per_cycle[precision]
    total = macs = 0
    for node in model.get_ordered_ops():
        m = layer_macs(node)
        macs += m
        total += math.ceil(m / per_cycle) + math.ceil(layer_activations(node) / engine.pwl_per_cycle)
    return CycleEstimate(total, 0, macs, engine.describe(target, precision))
