"""Op builders of OpenVINO's opset14 (``from vinerun import opset14 as ops``); see :mod:`vinerun.opsets`."""

from vinerun.opsets import module_hooks

__getattr__, __dir__ = module_hooks(14)
