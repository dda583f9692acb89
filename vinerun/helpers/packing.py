"""``pack_data`` / ``unpack_data``: openvino's helpers to put u1, u2, u3, u4, u6, i4, nf4 or f4e2m1 values into a
uint8 array and back.

These follow openvino's Python helpers, whose bit order for 1-, 2- and 4-bit types is the reverse of the runtime's
(the first value goes into the most significant bits: ``pack_data([7, 8], Type.u4) == [0x78]``); u3 and u6 use the
runtime's layouts (see ``vinerun.ir.packing``). Use them in pairs; ``Tensor`` itself keeps the runtime's layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.ir import packing
from vinerun.ir.types import Type

_BIT_TYPES = ("u1", "u2", "u4", "i4", "nf4", "f4e2m1")


def _check(et: Type) -> None:
    if et.get_type_name() not in _BIT_TYPES + ("u3", "u6"):
        raise ValueError(f"pack_data / unpack_data take u1, u2, u3, u4, u6, i4, nf4 or f4e2m1, not {et}")


def pack_data(array: np.ndarray, type: Type) -> np.ndarray:  # noqa: A002 - openvino's parameter name
    """Values of ``type`` (integers that fit it) -> a packed uint8 array (zero-padded to whole bytes)."""
    et = Type(type)
    _check(et)
    if et.get_type_name() in ("u3", "u6"):
        return packing.pack(np.asarray(array).astype(np.uint8, casting="unsafe"), et).view(np.uint8)
    regular = np.int8 if et.get_type_name() == "i4" else np.uint8
    arr = np.asarray(array)
    cast = arr.astype(regular, casting="unsafe")
    if not np.array_equal(cast, arr):
        raise RuntimeError(f'The conversion of array "{arr}" to dtype "{np.dtype(regular)}" results in rounding')
    bits = et.get_bitwidth()
    flat = cast.reshape(-1).view(np.uint8)
    flat = np.concatenate([flat, np.zeros((-flat.size) % (8 // bits), np.uint8)])
    # each value's low ``bits`` bits, most significant first, one value after another
    bit_rows = (flat[:, None] >> np.arange(bits - 1, -1, -1)) & 1
    return np.packbits(bit_rows.reshape(-1).astype(np.uint8))


def unpack_data(array: np.ndarray, type: Type, shape: Any) -> np.ndarray:  # noqa: A002
    """A packed array (as ``pack_data`` makes) -> uint8 values of ``shape`` (int8 for i4, sign-extended)."""
    et = Type(type)
    _check(et)
    dims = [int(d) for d in shape]
    if et.get_type_name() in ("u3", "u6"):
        return packing.unpack(np.asarray(array), et, tuple(dims)).astype(np.uint8)
    bits = et.get_bitwidth()
    raw = np.unpackbits(np.ascontiguousarray(array).reshape(-1).view(np.uint8))
    if bits == 1:
        return np.resize(raw, dims)
    rows = raw.reshape(-1, bits)
    values = (rows * (1 << np.arange(bits - 1, -1, -1))).sum(axis=1).astype(np.uint8)
    if et.get_type_name() == "i4":
        values = values.astype(np.int8)
        values[values >= 8] -= 16
    return np.resize(values, dims)
