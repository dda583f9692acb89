"""ClassTopKFusion: a detection head's per-class loop, exported unrolled, becomes one :class:`~.fused_ops.ClassTopK`.

torchvision's SSD post-process (SSD300, SSDlite) loops over the classes in Python, and the exporter writes the loop
out, once per class (90 for COCO)::

    score = scores[:, c]; keep = score > threshold; score = score[keep]; box = boxes[keep]
    score, idx = score.topk(min(k, score.numel())); box = box[idx]; label = full_like(score, c)

then concatenates the classes' scores, boxes and labels. Each class is ~8 plan steps of a few microseconds, ~790
in all; under THROUGHPUT streams they take turns holding the GIL. The fused node selects for every class at
once (one comparison and one top-k over the ``[anchors, classes]`` scores).

Matched, from the scores' Concat (axis 0): each input is output 0 of ``TopK(MaskedGather(s, m), k)`` (mode max,
sorted by value) with ``s = Gather(S, c, axis=1)`` of one 2-D ``S`` for all classes, ``m = Greater(s, t)`` with
one constant ``t``, ``k`` computed as ``min(K, len)`` of the TopK's input (:func:`_min_dims`) with one constant
``K``; its indices read only by ``Gather(MaskedGather(B, m), ., axis 0)`` (one ``B``), read only by the boxes'
Concat at the same position; its scores also read by ``Broadcast(label, ShapeOf(.))``, read only by the labels'
Concat at the same position. Nothing else reads the loop's values.
"""

from __future__ import annotations

from dataclasses import dataclass

from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.plugins.cpu.fused_ops import ClassTopK
from vinerun.transformations.pass_infra import InPlacePass, PassResult
from vinerun.transformations.shape_arithmetic import Dim, shape_value


@dataclass
class _Class:
    """One class's unrolled selection."""

    scores: Output  # S, [N, C]
    boxes: Output  # B
    column: int
    threshold: float
    k: int
    label: int
    label_type: str
    boxes_gather: Node  # its boxes, read by the boxes' Concat
    labels: Node  # its labels (the Broadcast), read by the labels' Concat
    nodes: list[Node]


def _scalar(node: Node, i: int) -> float | int | None:
    value = node.const_input(i)
    return None if value is None or value.size != 1 else value.reshape(-1)[0].item()


def _min_dims(value: Output, depth: int = 0) -> list[Dim] | None:
    """The dims whose minimum the single-element ``value`` is: ``ReduceMin`` over a shape computation, through
    Reshapes, Squeezes and Unsqueezes."""
    node = value.node
    if depth > 6:
        return None
    if node.type_name in ("Reshape", "Squeeze", "Unsqueeze"):
        return _min_dims(node.input_value(0), depth + 1)
    if node.type_name != "ReduceMin" or _scalar(node, 1) not in (0, -1):
        return None
    found = shape_value(node.input_value(0))
    return None if found is None or found[1] else found[0]


def _readers(out: Output) -> list[Node]:
    return [t.get_node() for t in out.get_target_inputs()]


def _only_reader(out: Output, kind: str) -> Node | None:
    readers = _readers(out)
    return readers[0] if len(readers) == 1 and readers[0].type_name == kind else None


def _class(score_out: Output) -> _Class | None:
    """The unrolled selection whose scores ``score_out`` is (the module docstring's pattern), or None."""
    topk = score_out.node
    if (topk.type_name != "TopK" or score_out.index != 0 or topk.mode != "max"  # type: ignore[attr-defined]
            or topk.sort != "value" or topk.get_input_partial_shape(0).rank != 1):  # type: ignore[attr-defined]
        return None
    chosen = topk.input_value(0)
    masked = chosen.node
    if masked.type_name != "MaskedGather":
        return None
    s, m = masked.input_value(0), masked.input_value(1)
    greater, column_of = m.node, s.node
    threshold = _scalar(greater, 1) if greater.type_name == "Greater" else None
    if threshold is None or greater.input_value(0) != s or column_of.type_name != "Gather":
        return None
    column, axis = _scalar(column_of, 1), _scalar(column_of, 2)
    scores = column_of.input_value(0)
    if (column is None or axis not in (1, -1) or column_of.batch_dims  # type: ignore[attr-defined]
            or scores.partial_shape.rank != 2):
        return None
    dims = _min_dims(topk.input_value(1))
    ks = [d for d in dims or [] if isinstance(d, int)]
    if dims is None or len(dims) != 2 or len(ks) != 1 or (chosen, 0) not in dims or ks[0] < 1:
        return None
    # the indices pick the boxes kept under the same mask
    pick = _only_reader(topk.output(1), "Gather")
    kept_boxes = pick.input_value(0).node if pick is not None else None
    if (pick is None or _scalar(pick, 2) != 0 or pick.input_value(1) != topk.output(1)
            or kept_boxes.type_name != "MaskedGather" or kept_boxes.input_value(1) != m):
        return None
    # the labels: Broadcast(label, ShapeOf(scores))
    shape_of = [r for r in _readers(score_out) if r.type_name == "ShapeOf"]
    labels = _only_reader(shape_of[0].output(0), "Broadcast") if len(shape_of) == 1 else None
    label = _scalar(labels, 0) if labels is not None else None
    if label is None or labels.input_value(1).node is not shape_of[0] or \
            not labels.get_output_element_type(0).is_integral():
        return None
    # nothing outside the loop reads its values
    if (sorted(r.type_name for r in _readers(s)) != ["Greater", "MaskedGather"]
            or sorted(n.type_name for n in _readers(m)) != ["MaskedGather", "MaskedGather"]
            or any(r.type_name not in ("TopK", "ShapeOf") for r in _readers(chosen))
            or _only_reader(kept_boxes.output(0), "Gather") is None):
        return None
    return _Class(scores, kept_boxes.input_value(0), int(column), float(threshold), ks[0], int(label),
                  labels.get_output_element_type(0).get_type_name(), pick, labels,
                  [column_of, greater, masked, topk, kept_boxes, pick, shape_of[0], labels])


def _fusion(concat: Node) -> tuple[list[_Class], Node, Node] | None:
    """(the classes, the boxes' Concat, the labels' Concat) where ``concat`` joins the classes' scores."""
    if concat.type_name != "Concat" or concat.axis != 0 or concat.get_input_size() < 2:  # type: ignore[attr-defined]
        return None
    classes = [_class(v) for v in concat.input_values()]
    if any(c is None for c in classes):
        return None
    first = classes[0]
    same = [(c.scores, c.boxes, c.threshold, c.k, c.label_type) for c in classes]  # type: ignore[union-attr]
    if any(s != same[0] for s in same):
        return None
    box_concat = _only_reader(first.boxes_gather.output(0), "Concat")  # type: ignore[union-attr]
    label_concat = _only_reader(first.labels.output(0), "Concat")  # type: ignore[union-attr]
    if box_concat is None or label_concat is None:
        return None
    for joined, part in ((box_concat, "boxes_gather"), (label_concat, "labels")):
        if joined.axis != 0 or [v.node for v in joined.input_values()] != [  # type: ignore[attr-defined]
                getattr(c, part) for c in classes]:
            return None
    return classes, box_concat, label_concat  # type: ignore[return-value]


class ClassTopKFusion(InPlacePass):
    """Replace an unrolled per-class score selection (the module docstring) with one ClassTopK.

    >>> ClassTopKFusion()(model).modified  # doctest: +SKIP
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            found = _fusion(node)
            if found is None:
                continue
            classes, box_concat, label_concat = found
            first = classes[0]
            fused = ClassTopK(first.scores, first.boxes, columns=[c.column for c in classes],
                              labels=[c.label for c in classes], threshold=first.threshold, k=first.k,
                              label_type=first.label_type, name=node.friendly_name)
            for i, joined in enumerate((node, box_concat, label_concat)):
                replace_output_update_name(joined.output(0), fused.output(i))
                joined.detach()
            for c in classes:
                for gone in c.nodes:
                    gone.detach()
            modified = True
        return PassResult(model, modified)

