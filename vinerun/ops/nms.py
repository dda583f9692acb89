"""NonMaxSuppression (opset9): greedy per-class box selection by score and IoU.

Inputs: ``boxes [B, N, 4]``, ``scores [B, C, N]``, and scalars ``max_output_boxes_per_class``,
``iou_threshold``, ``score_threshold`` (and ``soft_nms_sigma``, which must be 0 here).
A box is a candidate when its score exceeds ``score_threshold``; a candidate is dropped when its IoU
with an already selected box of the same class exceeds ``iou_threshold``.
Outputs: ``selected_indices [M, 3]`` (batch, class, box), ``selected_scores [M, 3]`` and
``valid_outputs [1]`` (M). Results are ordered by batch, class, then score unless
``sort_result_descending``, which orders all of them by score.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import UnsupportedOpError, ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type


def corners(boxes: np.ndarray, encoding: str) -> np.ndarray:
    """``[..., 4]`` boxes as (y_min, x_min, y_max, x_max); corner boxes may come in either diagonal order."""
    b = boxes.astype(np.float64)
    if encoding == "center":
        xc, yc, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=-1)
    y1, x1, y2, x2 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2), np.maximum(x1, x2)], axis=-1)


def iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """IoU of one corner box with each of ``others [K, 4]`` (0 where either area is 0)."""
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    h = np.clip(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]), 0, None)
    w = np.clip(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]), 0, None)
    inter = h * w
    union = area + areas - inter
    ok = (area > 0) & (areas > 0) & (union > 0)
    return np.where(ok, inter / np.where(ok, union, 1.0), 0.0)


def select_boxes(boxes: np.ndarray, scores: np.ndarray, max_per_class: int, iou_threshold: float,
                 score_threshold: float) -> list[tuple[int, float]]:
    """Greedy NMS for one (batch, class): ``[(box index, score), ...]`` by descending score."""
    order = [i for i in np.argsort(-scores, kind="stable") if scores[i] > score_threshold]
    selected: list[int] = []
    for i in order:
        if len(selected) >= max_per_class:
            break
        if selected and np.any(iou(boxes[i], boxes[selected]) > iou_threshold):
            continue
        selected.append(int(i))
    return [(i, float(scores[i])) for i in selected]


def arguments(inputs: list) -> tuple[int, float, float, float]:
    """The scalar inputs (absent or empty ones at their defaults): ``max_output_boxes_per_class``,
    ``iou_threshold``, ``score_threshold`` and ``soft_nms_sigma``."""

    def scalar(i: int, default: float) -> float:
        return float(np.asarray(inputs[i]).reshape(-1)[0]) if len(inputs) > i and inputs[i].size else default

    return int(scalar(2, 0)), scalar(3, 0.0), scalar(4, float("-inf")), scalar(5, 0.0)


@register_op
class NonMaxSuppression(Node):
    """Greedy NMS over ``boxes [B, N, 4]`` and ``scores [B, C, N]`` (see the module docstring)."""

    type_name, version, num_inputs = "NonMaxSuppression", "opset9", (2, 6)
    num_outputs = 3
    box_encoding = Attr("str", "corner")
    sort_result_descending = Attr("bool", True)
    output_type = Attr("type", Type.i64)

    def infer(self) -> list:
        if self.box_encoding not in ("corner", "center"):
            raise ValidationError(f"box_encoding must be 'corner' or 'center', got '{self.box_encoding}'")
        if self.output_type not in (Type.i32, Type.i64):
            raise ValidationError(f"output_type must be i32 or i64, got {self.output_type}")
        boxes, scores = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        if boxes.rank.is_static and (boxes.rank.get_length() != 3 or boxes[2].is_static and boxes[2] != 4):
            raise ValidationError(f"boxes must be [batch, num_boxes, 4], got {boxes}")
        if scores.rank.is_static and scores.rank.get_length() != 3:
            raise ValidationError(f"scores must be [batch, num_classes, num_boxes], got {scores}")
        score_type = self.get_input_element_type(1)
        return [(self.output_type, PartialShape([Dimension(), 3])), (score_type, PartialShape([Dimension(), 3])),
                (self.output_type, PartialShape([1]))]

    def evaluate(self, inputs: list) -> list:
        boxes, scores = inputs[0], inputs[1]
        max_per_class, iou_threshold, score_threshold, sigma = arguments(inputs)
        if sigma != 0.0:
            raise UnsupportedOpError("soft NMS (soft_nms_sigma != 0) is not supported")
        rows: list[tuple[int, int, int, float]] = []
        if boxes.shape[1] != scores.shape[2] or boxes.shape[0] != scores.shape[0]:
            raise ValidationError(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} do not match")
        decoded = corners(boxes, self.box_encoding)
        for b in range(scores.shape[0]):
            for c in range(scores.shape[1]):
                for i, s in select_boxes(decoded[b], scores[b, c].astype(np.float64), max_per_class,
                                         iou_threshold, score_threshold):
                    rows.append((b, c, i, s))
        if self.sort_result_descending:
            rows.sort(key=lambda r: -r[3])
        it = self.output_type.to_dtype()
        indices = np.array([r[:3] for r in rows], it).reshape(-1, 3)
        selected_scores = np.array([r for r in rows], np.float64).reshape(-1, 4)[:, [0, 1, 3]]
        return [indices, selected_scores.astype(scores.dtype), np.array([len(rows)], it)]
