"""Which execution target runs a model compiled for which target (specs/gna.md §6, DOC23).

| Execution target \\ compiled for | 2.0 | 3.0 | 3.5 |
|---|---|---|---|
| GNA 2.0 | Supported | Not supported (incompatible layers emulated on CPU) | Not supported |
| GNA 3.0 | Partially | Supported | Not supported |
| GNA 3.5 | Partially | Partially | Supported |

"Not supported" raises :class:`~vinerun.errors.DeviceError` (at compile and at import); "Partially"
runs with a warning. The emulation keeps the compile target's arithmetic (its accumulator chunking
and limits), so such a model gives the same outputs, bit for bit, as on its own target.

>>> compatibility(HWGeneration.GNA_2_0, HWGeneration.GNA_3_5)
'Partially'
>>> try:
...     check_compatibility(HWGeneration.GNA_3_5, HWGeneration.GNA_2_0)
... except DeviceError as e:
...     print(str(e)[:70])
A model compiled for GNA_TARGET_3_5 is not supported on GNA_TARGET_2_0
"""

from __future__ import annotations

import logging

from vinerun.errors import DeviceError
from vinerun.plugins.gna.config import target_name
from vinerun.properties.intel_gna import HWGeneration

log = logging.getLogger("vinerun")

G20, G30, G35 = HWGeneration.GNA_2_0, HWGeneration.GNA_3_0, HWGeneration.GNA_3_5
SUPPORTED, PARTIALLY = "Supported", "Partially"
#: (compiled for, execution target) -> the DOC23 table's cell
TABLE: dict[tuple[HWGeneration, HWGeneration], str] = {
    (G20, G20): SUPPORTED, (G30, G20): "Not supported (incompatible layers emulated on CPU)",
    (G35, G20): "Not supported",
    (G20, G30): PARTIALLY, (G30, G30): SUPPORTED, (G35, G30): "Not supported",
    (G20, G35): PARTIALLY, (G30, G35): PARTIALLY, (G35, G35): SUPPORTED,
}


def compatibility(compiled_for: HWGeneration, execution: HWGeneration) -> str:
    """The table's cell for a model compiled for ``compiled_for`` run on ``execution``."""
    return TABLE[(compiled_for, execution)]


def check_compatibility(compiled_for: HWGeneration, execution: HWGeneration) -> str:
    """Raise for a "Not supported" pair; warn for "Partially"; returns the cell."""
    cell = compatibility(compiled_for, execution)
    if cell.startswith("Not supported"):
        raise DeviceError(f"A model compiled for {target_name(compiled_for)} is not supported on "
                          f"{target_name(execution)} (GNA compatibility table: {cell})")
    if cell == PARTIALLY:
        log.warning("GNA: a model compiled for %s runs on %s: partially supported (GNA compatibility table); "
                    "it keeps %s's arithmetic", target_name(compiled_for), target_name(execution),
                    target_name(compiled_for))
    return cell
