"""What a GNA blob carries besides the graph, so that an imported model computes what the exported one did.

vinerun's blob holds the compiled graph (IR) and the read-write config the model was compiled with. That
is not enough for GNA: the legacy ``GNA_SCALE_FACTOR_<i>`` keys are not listed properties (so the blob
header drops them), defaults are not stored (so the importing Core's own ``set_property("GNA", ...)``
would fill them in), and the integer pipeline depends on the scale-factor propagation's settled
requantizations. A :class:`CompileRecord` keeps all of it, as JSON in the exported graph's model
``rt_info`` (key :data:`RT_KEY`):

- ``config``: every key that changes compilation (compile target, precision, PWL design, memory
  reuse, firmware image) with its value, set or default, and the scale-factor keys as they were given;
- ``input_scales``: the scale factor each input was quantized with, by input index;
- ``overrides``: the requantizations the propagation settled on (where an imported compile starts);
- ``state_scales`` / ``output_scales``: the int16 state and output scales (the GNAM header's);
- ``fingerprint``: a digest of every quantized table (``ExactBackend.fingerprint``), checked on import,
  so an import that would not compute bit for bit the same fails loudly instead of drifting.

As in the last Intel plugin (blob version >= 2.8), an imported model keeps the blob's scale factors:
ones given at import are ignored with a warning.

>>> rec = CompileRecord({"INFERENCE_PRECISION_HINT": "i8"}, [4096.0], {"memory:h": 2049.0}, {"h": 2049.0}, [2048.0])
>>> CompileRecord.from_text(rec.to_text()) == rec
True
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from vinerun.errors import BlobError
from vinerun.ir.model import Model

#: the model rt_info key of the exported graph that holds the record
RT_KEY = "vinerun_gna_compiled"
RECORD_VERSION = 1


@dataclass(frozen=True)
class CompileRecord:
    """The compile-time facts of a GNA compiled model (see the module docstring)."""

    config: dict[str, Any]
    input_scales: list[float]
    overrides: dict[str, float] = field(default_factory=dict)
    state_scales: dict[str, float] = field(default_factory=dict)
    output_scales: list[float] = field(default_factory=list)
    fingerprint: str = ""

    def to_text(self) -> str:
        """Compact JSON (floats written by ``repr``, so they read back exactly)."""
        return json.dumps({"version": RECORD_VERSION, **asdict(self)}, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str) -> CompileRecord:
        try:
            data = json.loads(text)
            if data.pop("version", None) != RECORD_VERSION:
                raise ValueError(f"record version is not {RECORD_VERSION}")
            return cls(config=dict(data["config"]), input_scales=[float(s) for s in data["input_scales"]],
                       overrides={str(k): float(v) for k, v in data.get("overrides", {}).items()},
                       state_scales={str(k): float(v) for k, v in data.get("state_scales", {}).items()},
                       output_scales=[float(s) for s in data.get("output_scales", [])],
                       fingerprint=str(data.get("fingerprint", "")))
        except (ValueError, KeyError, TypeError) as e:
            raise BlobError(f"GNA blob: its compile record cannot be read ({type(e).__name__}: {e})") from None


def attach(model: Model, record: CompileRecord) -> Model:
    """A clone of ``model`` carrying ``record`` (what ``export_graph`` hands to the blob writer)."""
    out = model.clone()
    out.rt_info[RT_KEY] = record.to_text()
    return out


def detach(model: Model) -> CompileRecord | None:
    """The record an imported graph carries (removed from its rt_info), or None."""
    text = model.rt_info.pop(RT_KEY, None)
    return None if text is None else CompileRecord.from_text(str(text))
