"""Graph passes with a declared contract, and pipelines named by purpose.

>>> from vinerun.transformations import PassManager, ConstantFolding, DeadCodeElimination
>>> result = PassManager([ConstantFolding(), DeadCodeElimination()])(model)
>>> result.model is model, result.modified
(True, True)
"""

from vinerun.transformations.constant_folding import ConstantFolding, fold_values
from vinerun.transformations.dead_code import DeadCodeElimination, eliminate_dead_code
from vinerun.transformations.decompression import is_decompression
from vinerun.transformations.if_folding import FoldConstantIf
from vinerun.transformations.low_latency import LowLatency2
from vinerun.transformations.pass_infra import (
    FunctionalPass,
    InPlacePass,
    ModelPass,
    PassContractError,
    PassManager,
    PassResult,
    PostconditionError,
    PreconditionError,
    pass_fn,
)

Manager = PassManager  # OpenVINO's name (ov.passes.Manager)


def common_cleanup(check_graph: bool = False, keep_decompression: bool = False) -> PassManager:
    """The cleanup every device runs before choosing kernels: constant folding (Ifs on a constant condition
    become their taken branch), then dead code. ``keep_decompression``: weight dequantization subgraphs stay
    (a device with int8 or compressed-weight kernels takes them; see :mod:`.decompression`).

    The graph comparison that checks each pass's ``modified`` flag costs about as much as the
    passes themselves, so compilation skips it (the tests run these passes with it).
    """
    folding = ConstantFolding(keep=is_decompression if keep_decompression else None)
    return PassManager([folding, FoldConstantIf(), DeadCodeElimination()], check_graph=check_graph)


__all__ = ["ConstantFolding", "DeadCodeElimination", "FoldConstantIf", "FunctionalPass",
           "InPlacePass", "LowLatency2", "Manager", "ModelPass", "PassContractError", "PassManager", "PassResult",
           "PostconditionError", "PreconditionError", "common_cleanup", "eliminate_dead_code", "fold_values",
           "pass_fn"]
