"""OpenVINO's ``openvino.passes``: a pass :class:`Manager`, user passes (:class:`ModelPass`,
:class:`MatcherPass`, :class:`GraphRewrite`), the pattern language (:class:`WrapType`, :class:`AnyInput`,
:class:`Or`, :class:`Optional`, :class:`Matcher`) and ready passes (:class:`Serialize`,
:class:`ConstantFolding`, :class:`LowLatency2`), built on :mod:`vinerun.transformations`.

>>> from vinerun.passes import Manager, ConstantFolding
>>> manager = Manager()
>>> manager.register_pass(ConstantFolding())
>>> manager.run_passes(model)
"""

from vinerun.passes.builtin import ConstantFolding, LowLatency2, Serialize, Version
from vinerun.passes.graph_rewrite import BackwardGraphRewrite, GraphRewrite, MatcherPass
from vinerun.passes.manager import Manager
from vinerun.passes.model_pass import ModelPass, PassBase
from vinerun.passes.pattern import (
    AnyInput,
    Matcher,
    Optional,
    Or,
    Predicate,
    WrapType,
    consumers_count,
    has_static_dim,
    has_static_dims,
    has_static_rank,
    has_static_shape,
    rank_equals,
    shape_matches,
    type_matches,
    type_matches_any,
)

__all__ = ["AnyInput", "BackwardGraphRewrite", "ConstantFolding", "GraphRewrite", "LowLatency2",
           "Manager", "Matcher", "MatcherPass", "ModelPass", "Optional", "Or", "PassBase", "Predicate", "Serialize",
           "Version", "WrapType", "consumers_count", "has_static_dim", "has_static_dims",
           "has_static_rank", "has_static_shape", "rank_equals", "shape_matches", "type_matches",
           "type_matches_any"]
