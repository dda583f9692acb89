"""The layout compressed weights are kept in on the CPU (what :mod:`.kernels.compressed_matmul`'s C kernel reads),
and the NumPy code that packs and unpacks it (the reference of :mod:`.compressed_weights`'s ops).

A weight ``W`` [n, k] is ``(q - zp) * scale`` with ``q`` int8 or int4 and ``scale`` / ``zp`` per output column
and group of ``group`` consecutive k. It is stored unsigned (i8 / i4 as ``q + 128`` / ``q + 8``, the zero point
moved by as much) in panels of 16 columns, a 32-bit lane holding 4 consecutive k of one column (VNNI's
``vpdpbusd`` operand):

- 8 bits: ``[panels, k / 4, 16, 4]`` bytes;
- 4 bits: ``[panels, k / 8, 16, 4]`` bytes, the low nibble of byte ``b`` at k = 8j + b, the high one 8j + 4 + b;
- scales and zero points: f32 ``[panels, k / group, 16]``.

>>> w = pack_weights(np.arange(32 * 8, dtype=np.uint8).reshape(32, 8) % 16, 4)
>>> bool((unpack_rows(w, 4, 8, np.arange(32)) == np.arange(32 * 8).reshape(32, 8) % 16).all())
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PANEL = 16  # output columns per panel
#: what a signed weight type is shifted by to store it unsigned
OFFSET = {("i", 8): 128, ("u", 8): 0, ("i", 4): 8, ("u", 4): 0}


def _panels(n: int) -> int:
    return -(-n // PANEL)


def _pad_rows(a: np.ndarray, rows: int) -> np.ndarray:
    if a.shape[0] == rows:
        return a
    out = np.zeros((rows, *a.shape[1:]), a.dtype)
    out[:a.shape[0]] = a
    return out


def pack_weights(q: np.ndarray, bits: int) -> np.ndarray:
    """``q`` [n, k] (unsigned values of ``bits`` bits) in the panel layout (k a multiple of 8 for 4 bits, 4 for 8)."""
    n, k = q.shape
    p = _panels(n)
    q = _pad_rows(np.asarray(q, np.uint8), p * PANEL)
    if bits == 8:
        return np.ascontiguousarray(q.reshape(p, PANEL, k // 4, 4).transpose(0, 2, 1, 3))
    quads = q.reshape(p, PANEL, k // 8, 2, 4)
    return np.ascontiguousarray((quads[:, :, :, 0] | (quads[:, :, :, 1] << 4)).transpose(0, 2, 1, 3))


def unpack_rows(packed: np.ndarray, bits: int, k: int, rows: np.ndarray) -> np.ndarray:
    """The unsigned values of weight rows (output columns) ``rows`` (int array, any shape): ``[*rows.shape, k]``."""
    rows = np.asarray(rows, np.int64)
    lanes = packed[rows // PANEL, :, rows % PANEL, :]  # [*rows.shape, k / 4 or k / 8, 4]
    if bits == 8:
        return lanes.reshape(*rows.shape, k)
    both = np.stack([lanes & 0x0F, lanes >> 4], axis=-2)  # [..., k / 8, 2, 4]
    return both.reshape(*rows.shape, k)


def pack_params(a: np.ndarray) -> np.ndarray:
    """A per-(column, group) parameter [n, groups] as f32 ``[panels, groups, 16]``."""
    n, groups = a.shape
    a = _pad_rows(np.asarray(a, np.float32), _panels(n) * PANEL)
    return np.ascontiguousarray(a.reshape(-1, PANEL, groups).transpose(0, 2, 1))


def param_rows(packed: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The [*rows.shape, groups] parameters of weight rows ``rows`` from :func:`pack_params`' layout."""
    rows = np.asarray(rows, np.int64)
    return packed[rows // PANEL, :, rows % PANEL]


@dataclass(frozen=True)
class CompressedWeight:
    """A weight [n, k] as its integer values (signed or not, ``bits`` bits), per-(column, group) scales and
    optional zero points, before packing: what the pass reads out of a decompression subgraph."""

    q: np.ndarray  # [n, k] integers
    scale: np.ndarray  # [n, groups]
    zero_point: np.ndarray | None  # [n, groups]
    bits: int
    signed: bool

    @property
    def group(self) -> int:
        return self.q.shape[1] // self.scale.shape[1]

    def packed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(weights, scales, zero points) in the panel layout, the weights stored unsigned."""
        offset = OFFSET[("i" if self.signed else "u", self.bits)]
        unsigned = (self.q.astype(np.int16) + offset).astype(np.uint8)
        zp = np.zeros(self.scale.shape, np.float32) if self.zero_point is None else self.zero_point
        return (pack_weights(unsigned, self.bits), pack_params(self.scale),
                pack_params(np.asarray(zp, np.float32) + np.float32(offset)))


def dequantize_rows(packed: np.ndarray, scale: np.ndarray, zp: np.ndarray, bits: int, k: int,
                    rows: np.ndarray) -> np.ndarray:
    """Weight rows ``rows`` as f32 ``[*rows.shape, k]`` (the reference of both compressed ops)."""
    q = unpack_rows(packed, bits, k, rows).astype(np.float32)
    s, z = param_rows(scale, rows), param_rows(zp, rows)
    groups = s.shape[-1]
    q = q.reshape(*q.shape[:-1], groups, k // groups)
    return ((q - z[..., None]) * s[..., None]).reshape(*q.shape[:-2], k)
