"""Sub-byte element types in memory: how OpenVINO packs u1, u2, u3, u4, u6, i4, nf4, f4e2m1 (and i2) into bytes.

The layouts are OpenVINO's runtime ones (what a ``Tensor`` of such a type holds, what ``.bin`` files store):
- u1: 8 elements a byte, the first in the most significant bit;
- 2- and 4-bit types: 4 (2) elements a byte, the first in the least significant bits;
- u3: 8 elements in 3 bytes: bits [1:0] of elements 0-3 then 4-7 (first element highest), then bit 2 of all 8;
- u6: 4 elements in 3 bytes: bits [3:0] of elements 0-1 then 2-3 (first element highest), then bits [5:4] of all 4.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.types import Type, storage_dtype


def is_packed(et: Type) -> bool:
    """Whether ``et``'s elements take less than a byte (so a tensor of it holds packed bytes)."""
    return 0 < et.get_bitwidth() < 8


def packed_dtype(et: Type) -> np.dtype:
    """The dtype of a packed buffer's bytes, as openvino shows them (int8 for i4, uint8 otherwise)."""
    return np.dtype(np.int8 if et.get_type_name() in ("i4", "i2") else np.uint8)


def packed_nbytes(et: Type, count: int) -> int:
    """Bytes that ``count`` elements of the sub-byte type ``et`` take."""
    bits = et.get_bitwidth()
    if bits == 3:
        return -(-count // 8) * 3
    if bits == 6:
        return -(-count // 4) * 3
    return -(-count * bits // 8)


def unpack(buf: np.ndarray, et: Type, shape: tuple[int, ...]) -> np.ndarray:
    """Packed bytes -> one element per item, in ``storage_dtype(et)`` (a new array)."""
    count = int(np.prod(shape, dtype=np.int64))
    b = np.ascontiguousarray(buf).reshape(-1).view(np.uint8)
    bits = et.get_bitwidth()
    if bits == 1:
        codes = np.unpackbits(b, bitorder="big")
    elif bits in (2, 4):
        per = 8 // bits
        mask = (1 << bits) - 1
        codes = np.stack([(b >> (bits * k)) & mask for k in range(per)], axis=1).reshape(-1)
    elif bits == 3:
        g = b[: len(b) // 3 * 3].reshape(-1, 3)
        low = np.concatenate([np.stack([(g[:, j] >> s) & 3 for s in (6, 4, 2, 0)], axis=1) for j in (0, 1)], axis=1)
        high = np.stack([(g[:, 2] >> s) & 1 for s in range(7, -1, -1)], axis=1)
        codes = (low | (high << 2)).reshape(-1)
    elif bits == 6:
        g = b[: len(b) // 3 * 3].reshape(-1, 3)
        low = np.stack([g[:, 0] >> 4, g[:, 0] & 15, g[:, 1] >> 4, g[:, 1] & 15], axis=1)
        high = np.stack([(g[:, 2] >> s) & 3 for s in (6, 4, 2, 0)], axis=1)
        codes = (low | (high << 4)).reshape(-1)
    else:
        raise ValueError(f"{et.get_type_name()} is not a packed type")
    codes = codes[:count].astype(np.uint8)
    dtype = storage_dtype(et)
    if et.is_real():  # f4e2m1: the code is the value's bit pattern
        return codes.view(dtype).reshape(shape)
    if et.is_signed():  # i4 / i2: two's complement in ``bits`` bits
        vals = codes.astype(np.int8)
        vals[vals >= 1 << (bits - 1)] -= np.int8(1 << bits)
        return vals.astype(dtype).reshape(shape)
    return codes.astype(dtype).reshape(shape)


def pack(values: np.ndarray, et: Type) -> np.ndarray:
    """One element per item -> packed bytes (``packed_dtype(et)``, ``packed_nbytes`` long)."""
    flat = np.ascontiguousarray(values).reshape(-1)
    bits = et.get_bitwidth()
    mask = (1 << bits) - 1
    if et.is_real():
        codes = flat.astype(storage_dtype(et)).view(np.uint8) & mask
    else:
        codes = (flat.astype(np.int64) & mask).astype(np.uint8)
    n = codes.size
    out = np.zeros(packed_nbytes(et, n), np.uint8)
    if bits == 1:
        out[:] = np.packbits(codes, bitorder="big")
    elif bits in (2, 4):
        per = 8 // bits
        c = np.concatenate([codes, np.zeros((-n) % per, np.uint8)]).reshape(-1, per)
        for k in range(per):
            out |= (c[:, k] << (bits * k)).astype(np.uint8)
    elif bits == 3:
        c = np.concatenate([codes, np.zeros((-n) % 8, np.uint8)]).reshape(-1, 8)
        low, high = c & 3, (c >> 2) & 1
        g = out.reshape(-1, 3)
        for j in (0, 1):
            g[:, j] = sum((low[:, 4 * j + k] << s).astype(np.uint8) for k, s in enumerate((6, 4, 2, 0)))
        g[:, 2] = sum((high[:, k] << (7 - k)).astype(np.uint8) for k in range(8))
    elif bits == 6:
        c = np.concatenate([codes, np.zeros((-n) % 4, np.uint8)]).reshape(-1, 4)
        low, high = c & 15, (c >> 4) & 3
        g = out.reshape(-1, 3)
        g[:, 0] = (low[:, 0] << 4) | low[:, 1]
        g[:, 1] = (low[:, 2] << 4) | low[:, 3]
        g[:, 2] = sum((high[:, k] << s).astype(np.uint8) for k, s in enumerate((6, 4, 2, 0)))
    else:
        raise ValueError(f"{et.get_type_name()} is not a packed type")
    return out.view(packed_dtype(et))
