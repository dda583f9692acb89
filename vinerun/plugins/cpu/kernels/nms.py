"""NonMaxSuppression on the CPU: the reference's greedy selection, vectorized over every (batch, class).

The reference (:mod:`vinerun.ops.nms`) walks each class's candidates in score order in Python and tests each one
against the boxes selected so far. Here every class of every batch is handled at once, in four array steps:

1. candidates: each class's boxes in the reference's order (a stable sort by descending score), cut at the score
   threshold and, while ``max_output_boxes_per_class`` is small, at a prefix of the ranks (doubled while a class
   has not selected its quota);
2. pairs: two candidates of one class can suppress each other only where they overlap (an IoU above a threshold
   >= 0 needs a positive intersection), so the pairs come from a sweep over the boxes sorted by their left edge
   (torchvision's batched NMS offsets each class's boxes apart, so almost no pairs cross classes);
3. edges: the IoU of each pair, in the reference's float64 arithmetic (the same numbers bit for bit), against the
   threshold; an edge runs from the higher-ranked box to the lower;
4. greedy: a box is kept iff no kept box of higher rank has an edge to it. That recursion has one solution (the
   reference's selection); sweeping ``keep = no kept source`` from all-kept reaches it in as many sweeps as the
   longest chain of edges, usually a handful; past :data:`_SWEEPS` a walk in rank order finishes.

The rest runs the reference: soft NMS (which the reference rejects), a negative IoU threshold (every pair
suppresses there, overlapping or not), and inputs whose overlapping pairs exceed :data:`_PAIR_BUDGET`.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Node
from vinerun.ops.nms import arguments, corners
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel

#: at most this many overlapping candidate pairs are materialized (16 bytes each, per index array)
_PAIR_BUDGET = 1 << 23
#: IoUs computed per chunk of pairs (bounds the float64 temporaries)
_CHUNK = 1 << 18
#: fixed-point sweeps before the walk in rank order decides
_SWEEPS = 64
#: the first rank prefix a class takes when ``max_output_boxes_per_class`` is below its candidate count
_MIN_PREFIX = 256


def overlapping_pairs(group: np.ndarray, x1: np.ndarray, x2: np.ndarray, budget: int
                      ) -> tuple[np.ndarray, np.ndarray] | None:
    """Index pairs ``(i, j)``, ``i != j``, of the same ``group`` whose ``[x1, x2)`` spans overlap (each pair once,
    plus pairs with a NaN edge), or None past ``budget`` pairs.

    Sorting by (group, x1), the boxes that start inside box ``a``'s span follow it up to the first one starting at
    or after its ``x2``: of two overlapping boxes, the one sorted later starts inside the earlier one.
    """
    n = group.size
    # every edge's place in one order of all edges, a right edge before a left edge of the same value, so that
    # ``x1[b] < x2[a]`` exactly where the place of b's left edge is below that of a's right edge
    edges = np.concatenate([x2, x1])
    place = np.empty(2 * n, np.int64)
    place[np.argsort(edges, kind="stable")] = np.arange(2 * n)
    start_key, end_key = group * (2 * n) + place[n:], group * (2 * n) + place[:n]
    perm = np.argsort(start_key, kind="stable")
    ends = np.searchsorted(start_key[perm], end_key[perm], side="left")
    counts = np.maximum(ends - np.arange(1, n + 1), 0)
    total = int(counts.sum())
    if total > budget:
        return None
    first = np.repeat(np.arange(n), counts)
    second = first + 1 + np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    return perm[first], perm[second]


def pair_iou_above(box: np.ndarray, area: np.ndarray, i: np.ndarray, j: np.ndarray, threshold: float) -> np.ndarray:
    """``iou(box[i], box[j]) > threshold`` as :func:`vinerun.ops.nms.iou` computes it (corner boxes, float64;
    ``threshold`` >= 0 or NaN, so pairs with no vertical overlap, of IoU 0, are out before the rest is computed)."""
    y1, x1, y2, x2 = np.ascontiguousarray(box.T)
    out = np.zeros(i.size, bool)
    for s in range(0, i.size, _CHUNK):
        a, b = i[s:s + _CHUNK], j[s:s + _CHUNK]
        h = np.minimum(y2[a], y2[b]) - np.maximum(y1[a], y1[b])
        live = np.flatnonzero(h > 0)
        a, b, h = a[live], b[live], h[live]
        w = np.maximum(np.minimum(x2[a], x2[b]) - np.maximum(x1[a], x1[b]), 0.0)
        inter = h * w
        union = area[a] + area[b] - inter
        ok = (area[a] > 0) & (area[b] > 0) & (union > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[s + live] = ok & (inter / np.where(ok, union, 1.0) > threshold)
    return out


def greedy_keep(n: int, source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Which of ``n`` ranked boxes greedy NMS keeps, given the suppression edges ``source -> target``
    (``source < target``): a box is kept iff no kept box has an edge to it."""
    keep = np.ones(n, bool)
    for _ in range(_SWEEPS):
        hit = np.zeros(n, bool)
        hit[target[keep[source]]] = True
        if np.array_equal(~hit, keep):
            return keep
        keep = ~hit
    by_source = np.argsort(source, kind="stable")
    source, target = source[by_source], target[by_source]
    bounds = np.searchsorted(source, np.arange(n + 1))
    suppressed = np.zeros(n, bool)
    for b in range(n):
        if not suppressed[b]:
            suppressed[target[bounds[b]:bounds[b + 1]]] = True
    return ~suppressed


def select(box: np.ndarray, area: np.ndarray, scores: np.ndarray, num_classes: int, max_per_class: int,
           iou_threshold: float, score_threshold: float) -> tuple[np.ndarray, np.ndarray] | None:
    """Greedy NMS of every row of ``scores [G, N]`` (row ``g`` is batch ``g // num_classes``) over
    ``box [B * N, 4]`` corners and their ``area``: the selected (row, box) pairs, by row then selection order,
    or None where the pairs exceed the budget."""
    groups, n = scores.shape
    max_per_class = min(max_per_class, n)
    order = np.argsort(-scores, axis=1, kind="stable")
    candidates = (np.take_along_axis(scores, order, axis=1) > score_threshold).sum(axis=1)  # a prefix (NaN last)
    limit = candidates.copy() if max_per_class >= n else np.minimum(candidates, max(4 * max_per_class, _MIN_PREFIX))
    rows, picks = [], []
    pending = np.flatnonzero(candidates)
    while pending.size:
        lengths = limit[pending]
        offsets = np.cumsum(lengths) - lengths
        group = np.repeat(pending, lengths)
        rank = np.arange(group.size) - np.repeat(offsets, lengths)
        flat = (group // num_classes) * n + order[group, rank]  # the candidate's box in box[B * N]
        b = box[flat]
        pairs = overlapping_pairs(group, b[:, 1], b[:, 3], _PAIR_BUDGET)
        if pairs is None:
            return None
        i, j = pairs
        hit = pair_iou_above(box, area, flat[i], flat[j], iou_threshold)
        i, j = i[hit], j[hit]
        keep = greedy_keep(group.size, np.minimum(i, j), np.maximum(i, j))
        kept = np.cumsum(keep)  # the selection count within the row, at each candidate
        kept_before = np.concatenate([[0], kept])[offsets]
        chosen = keep & (kept - np.repeat(kept_before, lengths) <= max_per_class)
        count = kept[offsets + lengths - 1] - kept_before
        done = (count >= max_per_class) | (lengths == candidates[pending])
        final = chosen & np.repeat(done, lengths)
        rows.append(group[final])
        picks.append(flat[final] % max(n, 1))
        pending = pending[~done]
        limit[pending] = np.minimum(candidates[pending], 2 * limit[pending])
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    row, pick = np.concatenate(rows), np.concatenate(picks)
    by_row = np.argsort(row, kind="stable")  # later rounds' rows after earlier ones: back to row order
    return row[by_row], pick[by_row]


@cpu_kernel("NonMaxSuppression")
def non_max_suppression(node: Node) -> Kernel | None:
    encoding, descending = node.box_encoding, bool(node.sort_result_descending)
    index_dtype, reference = node.output_type.to_dtype(), node.evaluate

    def run(inputs: list) -> list:
        boxes, scores = np.asarray(inputs[0]), np.asarray(inputs[1])
        max_per_class, iou_threshold, score_threshold, sigma = arguments(inputs)
        if (boxes.ndim != 3 or scores.ndim != 3 or boxes.shape[2] != 4 or sigma != 0.0 or iou_threshold < 0
                or boxes.shape[:2] != (scores.shape[0], scores.shape[2])):
            return reference(inputs)  # its errors, soft NMS, and a threshold every pair passes
        batches, classes, n = scores.shape
        box = corners(boxes, encoding).reshape(-1, 4)
        area = (box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1])
        wide = scores.astype(np.float64).reshape(batches * classes, n)
        if max_per_class <= 0 or wide.size == 0:
            row, pick = np.zeros(0, np.int64), np.zeros(0, np.int64)
        else:
            selected = select(box, area, wide, classes, max_per_class, iou_threshold, score_threshold)
            if selected is None:
                return reference(inputs)
            row, pick = selected
        chosen = wide[row, pick]
        if descending:
            by_score = np.argsort(-chosen, kind="stable")
            row, pick, chosen = row[by_score], pick[by_score], chosen[by_score]
        indices = np.stack([row // max(classes, 1), row % max(classes, 1), pick], axis=1).astype(index_dtype)
        selected_scores = np.stack([row // max(classes, 1), row % max(classes, 1), chosen], axis=1)
        return [indices, selected_scores.astype(np.float64).astype(scores.dtype),
                np.array([row.size], index_dtype)]

    return Kernel(run, "vectorized_nms")
