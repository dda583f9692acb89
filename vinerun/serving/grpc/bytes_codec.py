"""KServe's BYTES wire form: each element is a 4-byte little-endian length followed by its bytes.

>>> raw = encode_bytes(np.array([b"ab", b""], dtype=object))
>>> raw
b'\\x02\\x00\\x00\\x00ab\\x00\\x00\\x00\\x00'
>>> decode_bytes(raw, 2, "x").tolist()
[b'ab', b'']
"""

from __future__ import annotations

import struct

import numpy as np

from vinerun.serving.errors import InvalidContentSize

_LEN = struct.Struct("<I")


def decode_bytes(raw: bytes, count: int, name: str) -> np.ndarray:
    """``count`` length-prefixed elements of ``raw`` as a flat object array of ``bytes``.

    Raises ``InvalidContentSize`` naming input ``name`` when ``raw`` is truncated or has bytes left over.
    """
    view = memoryview(raw)
    out = np.empty(count, dtype=object) if count <= len(raw) // _LEN.size else None
    if out is None:
        raise InvalidContentSize(f"Expected: {count} BYTES elements (at least {count * _LEN.size} bytes); "
                                 f"Actual: {len(raw)} bytes; input name: {name}")
    pos = 0
    for i in range(count):
        if pos + _LEN.size > len(raw):
            raise InvalidContentSize(f"BYTES element {i} of {count} is missing its 4-byte length; input name: {name}")
        (size,) = _LEN.unpack_from(view, pos)
        pos += _LEN.size
        if pos + size > len(raw):
            raise InvalidContentSize(f"BYTES element {i} declares {size} bytes but only {len(raw) - pos} remain; "
                                     f"input name: {name}")
        out[i] = bytes(view[pos:pos + size])
        pos += size
    if pos != len(raw):
        raise InvalidContentSize(f"{len(raw) - pos} bytes left after {count} BYTES elements; input name: {name}")
    return out


def as_bytes(value: object) -> bytes:
    """One BYTES element as ``bytes`` (``str`` is UTF-8 encoded)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)  # numpy.bytes_, bytearray, memoryview


def encode_bytes(array: np.ndarray) -> bytes:
    """The length-prefixed wire form of every element of ``array`` (row-major)."""
    parts = []
    for value in np.asarray(array, dtype=object).reshape(-1):
        data = as_bytes(value)
        parts += [_LEN.pack(len(data)), data]
    return b"".join(parts)
