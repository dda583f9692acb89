"""Op builders of OpenVINO's opset4 (``from vinerun import opset4 as ops``); see :mod:`vinerun.opsets`."""

from vinerun.opsets import module_hooks

__getattr__, __dir__ = module_hooks(4)
