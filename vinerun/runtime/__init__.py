"""The runtime: Core, CompiledModel, InferRequest and the plugin registry."""

from vinerun.runtime.async_queue import AsyncInferQueue
from vinerun.runtime.compiled_model import CompiledModel
from vinerun.runtime.core import Core, compile_model
from vinerun.runtime.infer_request import InferRequest
from vinerun.runtime.model_io import read_model, save_model, serialize
from vinerun.runtime.results import InferResult

__all__ = ["AsyncInferQueue", "CompiledModel", "Core", "InferRequest", "InferResult", "compile_model", "read_model",
           "save_model", "serialize"]
