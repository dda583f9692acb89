"""Op builders of OpenVINO's opset8 (``from vinerun import opset8 as ops``); see :mod:`vinerun.opsets`."""

from vinerun.opsets import module_hooks

__getattr__, __dir__ = module_hooks(8)
