"""Decorators for writing op builders as OpenVINO's ``openvino.utils.decorators`` does: ``nameable_op``
(a ``name=`` keyword sets the friendly name), ``unary_op`` / ``binary_op`` (plain values become Constants)
and ``custom_preprocess_function`` (a preprocessing callback's Node becomes its Output)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from vinerun.ir.node import Node, Output
from vinerun.utils.types import as_node


def _set_node_friendly_name(node: Any, *, name: str | None = None) -> Any:
    if name is not None:
        node.friendly_name = name
    return node


def nameable_op(node_factory_function: Callable[..., Any]) -> Callable[..., Any]:
    """Set the name of the node the wrapped builder returns from its ``name`` keyword."""

    @wraps(node_factory_function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        node = node_factory_function(*args, **kwargs)
        return _set_node_friendly_name(node, name=kwargs.get("name"))

    return wrapper


def unary_op(node_factory_function: Callable[..., Any]) -> Callable[..., Any]:
    """Make the first argument a Constant when it is a plain value; set the name as ``nameable_op``."""

    @wraps(node_factory_function)
    def wrapper(input_value: Any, *args: Any, **kwargs: Any) -> Any:
        node = node_factory_function(as_node(input_value, name=kwargs.get("name")), *args, **kwargs)
        return _set_node_friendly_name(node, name=kwargs.get("name"))

    return wrapper


def binary_op(node_factory_function: Callable[..., Any]) -> Callable[..., Any]:
    """Make the first two arguments Constants when they are plain values; set the name."""

    @wraps(node_factory_function)
    def wrapper(left: Any, right: Any, *args: Any, **kwargs: Any) -> Any:
        name = kwargs.get("name")
        node = node_factory_function(as_node(left, name=name), as_node(right, name=name), *args, **kwargs)
        return _set_node_friendly_name(node, name=name)

    return wrapper


def custom_preprocess_function(custom_function: Callable[[Output], Any]) -> Callable[[Output], Output]:
    """Wrap a preprocessing step so that a Node it returns is passed on as its single Output."""

    @wraps(custom_function)
    def wrapper(output: Output) -> Output:
        result = custom_function(output)
        return result.output(0) if isinstance(result, Node) else result

    return wrapper


__all__ = ["binary_op", "custom_preprocess_function", "nameable_op", "unary_op"]
