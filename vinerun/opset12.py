"""Op builders of OpenVINO's opset12 (``from vinerun import opset12 as ops``); see :mod:`vinerun.opsets`."""

from vinerun.opsets import module_hooks

__getattr__, __dir__ = module_hooks(12)
