"""OpenVINO's ``layout_helpers``: which dimension of a Layout is the batch, channels, depth, height
or width, and the layout recorded on a model input or output."""

from __future__ import annotations

from typing import Any

from vinerun.ir.layout import Layout

_AXES = {"batch": "N", "channels": "C", "depth": "D", "height": "H", "width": "W"}


def _index(layout: Layout, what: str) -> int:
    name = _AXES[what]
    if not layout.has_name(name):
        raise RuntimeError(f"{name} dimension index is not defined in layout {layout.to_string()}")
    return layout.get_index_by_name(name)


def has_batch(layout: Layout) -> bool:
    return layout.has_name("N")


def has_channels(layout: Layout) -> bool:
    return layout.has_name("C")


def has_depth(layout: Layout) -> bool:
    return layout.has_name("D")


def has_height(layout: Layout) -> bool:
    return layout.has_name("H")


def has_width(layout: Layout) -> bool:
    return layout.has_name("W")


def batch_idx(layout: Layout) -> int:
    return _index(layout, "batch")


def channels_idx(layout: Layout) -> int:
    return _index(layout, "channels")


def depth_idx(layout: Layout) -> int:
    return _index(layout, "depth")


def height_idx(layout: Layout) -> int:
    return _index(layout, "height")


def width_idx(layout: Layout) -> int:
    return _index(layout, "width")


def get_layout(port: Any) -> Layout:
    """The layout of a model input (its Parameter's) or output (its Result's); empty when none was set."""
    node = port.get_node()
    layout = getattr(node, "layout", None)
    if isinstance(layout, Layout):
        return layout
    value = node.get_rt_info().get("layout")
    return value if isinstance(value, Layout) else Layout(str(value)) if value else Layout()


def set_layout(port: Any, layout: Layout | str) -> None:
    """Record ``layout`` on a model input's Parameter or a model output's Result."""
    node = port.get_node()
    layout = layout if isinstance(layout, Layout) else Layout(layout)
    if node.type_name in ("Parameter", "Result"):
        node.layout = layout
    else:
        node.get_rt_info()["layout"] = layout


__all__ = ["batch_idx", "channels_idx", "depth_idx", "get_layout", "has_batch", "has_channels", "has_depth",
           "has_height", "has_width", "height_idx", "set_layout", "width_idx"]
