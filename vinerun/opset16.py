"""Op builders of OpenVINO's opset16 (``from vinerun import opset16 as ops``); see :mod:`vinerun.opsets`."""

from vinerun.opsets import module_hooks

__getattr__, __dir__ = module_hooks(16)
