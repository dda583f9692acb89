"""What every device implements: a plugin, its compiled models and their infer requests."""

from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.infer_request import ISyncInferRequest, ProfilingInfo
from vinerun.plugin_api.plugin import IPlugin
from vinerun.plugin_api.variable_state import VariableState

__all__ = ["ICompiledModel", "IPlugin", "ISyncInferRequest", "ProfilingInfo", "VariableState"]
