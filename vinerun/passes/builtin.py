"""Ready-made passes of OpenVINO's ``openvino.passes``: ``Serialize`` (write IR), ``ConstantFolding`` and
``LowLatency2``, each on top of the matching piece of vinerun."""

from __future__ import annotations

import enum
import os
from typing import Any

from vinerun.passes.model_pass import ModelPass


class Version(enum.IntEnum):
    """The IR version ``Serialize`` writes."""

    UNSPECIFIED = 0
    IR_V10 = 10
    IR_V11 = 11


def _incompatible(cls: str, signature: str, args: tuple, kwargs: dict[str, Any]) -> TypeError:
    """The error OpenVINO's bindings raise for arguments that fit no constructor."""
    shown = ", ".join(repr(a) for a in args)
    if kwargs:
        shown += ("; " if shown else "") + "kwargs: " + ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return TypeError(f"__init__(): incompatible constructor arguments. The following argument types are "
                     f"supported:\n    1. {cls}({signature})\n\nInvoked with: {shown}")


class Serialize(ModelPass):
    """Write the model as OpenVINO IR: ``Serialize(path_to_xml, path_to_bin, version=None)``."""

    _SIGNATURE = "path_to_xml: object, path_to_bin: object, version: object = None"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__()
        names = ["path_to_xml", "path_to_bin", "version"]
        bound = dict(zip(names, args, strict=False))
        if len(args) > len(names) or set(kwargs) - set(names) or set(bound) & set(kwargs):
            raise _incompatible("Serialize", self._SIGNATURE, args, kwargs)
        bound.update(kwargs)
        if "path_to_xml" not in bound or "path_to_bin" not in bound:
            raise _incompatible("Serialize", self._SIGNATURE, args, kwargs)
        self.path_to_xml = os.fsdecode(bound["path_to_xml"])
        self.path_to_bin = os.fsdecode(bound["path_to_bin"])
        version = bound.get("version")
        if isinstance(version, str):
            version = {"IR_V10": Version.IR_V10, "IR_V11": Version.IR_V11, "UNSPECIFIED": Version.UNSPECIFIED}.get(
                version.upper())
            if version is None:
                raise ValueError(f"Serialize: unknown IR version {bound['version']!r}")
        self.version = Version.UNSPECIFIED if version is None else Version(version)
        if self.version == Version.IR_V10:
            raise NotImplementedError("Serialize: vinerun writes IR v11 only (Version.IR_V10 is not supported)")

    def get_name(self) -> str:
        return getattr(self, "_name", None) or "ov::pass::Serialize"

    def run_on_model(self, model: Any) -> bool:
        from vinerun.frontends.openvino_ir import write_ir

        write_ir(model, self.path_to_xml, self.path_to_bin, compress_to_fp16=False)
        return False


class ConstantFolding(ModelPass):
    """Replace every node whose inputs are all constants by the Constants it computes."""

    def get_name(self) -> str:
        return getattr(self, "_name", None) or "ov::pass::ConstantFolding"

    def run_on_model(self, model: Any) -> bool:
        from vinerun.transformations import ConstantFolding as Folding
        from vinerun.transformations import DeadCodeElimination

        modified = Folding().run(model, check_graph=False).modified
        if modified:
            DeadCodeElimination().run(model, check_graph=False)  # folded subgraphs leave no dangling nodes
        return modified


class LowLatency2(ModelPass):
    """Make TensorIterator / Loop bodies stateful single steps (``use_const_initializer`` as OpenVINO's)."""

    def __init__(self, use_const_initializer: bool = True):
        super().__init__()
        self.use_const_initializer = use_const_initializer

    def get_name(self) -> str:
        return getattr(self, "_name", None) or "ov::pass::LowLatency2"

    def run_on_model(self, model: Any) -> bool:
        from vinerun.transformations import LowLatency2 as Pass

        return Pass(self.use_const_initializer).run(model, check_graph=False).modified
