"""Text and binary encodings shared by the IR reader and writer.

- layer type names (``Const`` <-> ``Constant``, ``ReLU`` <-> ``Relu`` ...),
- port precisions (``FP32`` <-> ``Type.f32``),
- attribute values as the text of ``<data>`` attributes, by the op's declared ``Attr`` kind,
- constant tensors as bytes in the ``.bin`` (sub-byte types packed, strings with offsets).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.ir.shape import Dimension, PartialShape, as_partial_shape
from vinerun.ir.types import Type

#: IR layer type -> vinerun op type name, where they differ.
IR_TO_OP_TYPE = {"Const": "Constant", "ReLU": "Relu", "SoftMax": "Softmax", "PReLU": "PRelu"}
OP_TO_IR_TYPE = {v: k for k, v in IR_TO_OP_TYPE.items()}

_PRECISION_NAMES = {"f16": "FP16", "f32": "FP32", "f64": "FP64", "bf16": "BF16", "boolean": "BOOL",
                    "dynamic": "UNSPECIFIED"}
_PRECISION_ALIASES = {"FP16": "f16", "FP32": "f32", "FP64": "f64", "BF16": "bf16", "BOOL": "boolean",
                      "UNSPECIFIED": "dynamic", "BIN": "u1", "DYNAMIC": "dynamic", "UNDEFINED": "dynamic"}


def op_type_name(ir_type: str) -> str:
    return IR_TO_OP_TYPE.get(ir_type, ir_type)


def ir_type_name(op_type: str) -> str:
    return OP_TO_IR_TYPE.get(op_type, op_type)


def precision_name(t: Type) -> str:
    """``Type.f32`` -> ``"FP32"``, ``Type.i64`` -> ``"I64"`` (the port ``precision`` attribute)."""
    name = t.get_type_name()
    return _PRECISION_NAMES.get(name, name.upper())


def precision_type(text: str) -> Type:
    """Inverse of :func:`precision_name`; also accepts short names (``"f32"``)."""
    key = text.strip()
    return Type(_PRECISION_ALIASES.get(key.upper(), key.lower()))


# --- names ("a,b" with "\," escaping a comma inside a name) -------------------------------------
def split_names(text: str) -> list[str]:
    out, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] == ",":
            cur.append(",")
            i += 2
            continue
        if ch == ",":
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur).strip())
    return [n for n in out if n]


def join_names(names: set[str] | list[str]) -> str:
    return ",".join(n.replace(",", "\\,") for n in sorted(names))


# --- shapes ----------------------------------------------------------------------------------
def shape_text(shape: PartialShape) -> str:
    """``[1,3,?,2..5]`` -> ``"1,3,?,2..5"``; dynamic rank -> ``"..."``; a scalar -> ``""``."""
    if shape.rank.is_dynamic:
        return "..."
    return ",".join(d.to_string() for d in shape)


def parse_shape(text: str) -> PartialShape:
    text = text.strip()
    if text in ("...", "[...]"):
        return PartialShape.dynamic()
    body = text.strip("[]() ")
    if not body:
        return PartialShape([])
    return PartialShape([Dimension.parse(p) for p in body.replace(" ", "").split(",")])


def port_dim(d: Dimension) -> str:
    """A port ``<dim>``: static length, else -1 (ranges live only in Parameter's ``shape``)."""
    return str(d.get_length()) if d.is_static else "-1"


# --- attribute values ------------------------------------------------------------------------
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def parse_attr(kind: str, text: str) -> Any:
    """Parse the text of a ``<data>`` attribute for an ``Attr`` of ``kind``; raises ValueError."""
    if kind == "int":
        return int(text.strip())
    if kind == "ints":
        return [int(p) for p in _split(text)]
    if kind == "float":
        return float(text.strip())
    if kind == "floats":
        return [float(p) for p in _split(text)]
    if kind == "bool":
        low = text.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError(f"'{text}' is not a boolean")
    if kind == "strs":
        return _split(text)
    if kind == "type":
        return Type(text.strip() or "dynamic")
    if kind == "types":
        return [Type(p) for p in _split(text)]
    if kind == "shape":
        return parse_shape(text)
    return text  # str, any


def _float_text(v: float) -> str:
    return repr(float(v))


def attr_text(kind: str, value: Any) -> str:
    """Format an attribute value for a ``<data>`` attribute (inverse of :func:`parse_attr`)."""
    if kind == "bool":
        return "true" if value else "false"
    if kind == "int":
        return str(int(value))
    if kind == "float":
        return _float_text(value)
    if kind == "type":
        return Type(value).get_type_name()
    if kind == "shape":
        return shape_text(as_partial_shape(value))
    if kind in ("ints", "floats", "strs", "types") or isinstance(value, (list, tuple)):
        fmt = {"ints": lambda v: str(int(v)), "floats": _float_text,
               "types": lambda v: Type(v).get_type_name()}.get(kind, str)
        return ", ".join(fmt(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Type):
        return value.get_type_name()
    if isinstance(value, PartialShape):
        return shape_text(value)
    return str(value)


# --- constant tensors in the .bin ------------------------------------------------------------
def packed_size(et: Type, count: int) -> int:
    """Bytes that ``count`` elements of ``et`` take in the .bin (strings excluded)."""
    bits = et.get_bitwidth()
    return (count * bits + 7) // 8 if bits < 8 else count * et.get_size()


def decode_tensor(raw: bytes | memoryview, et: Type, shape: list[int]) -> np.ndarray:
    """Bytes from the .bin -> an array of ``et``'s dtype (copied, so it owns its memory)."""
    count = int(np.prod(shape, dtype=np.int64))
    name = et.get_type_name()
    if name == "string":
        return _decode_strings(bytes(raw), count).reshape(shape)
    buf = np.frombuffer(raw, dtype=np.uint8)
    if name == "u1":
        return np.unpackbits(buf, bitorder="big")[:count].reshape(shape).astype(np.uint8)
    if et.get_bitwidth() == 4:
        nib = np.empty(buf.size * 2, np.uint8)
        nib[0::2], nib[1::2] = buf & 0x0F, buf >> 4
        nib = nib[:count]
        if et.is_signed() and not et.is_real():
            vals = nib.astype(np.int8)
            vals[vals >= 8] -= 16
            return vals.astype(et.to_dtype()).reshape(shape)
        return nib.view(et.to_dtype()).reshape(shape) if et.is_real() else nib.astype(et.to_dtype()).reshape(shape)
    if et.get_bitwidth() == 2:
        crumbs = np.stack([(buf >> s) & 0x3 for s in (0, 2, 4, 6)], axis=1).reshape(-1)[:count]
        if et.is_signed():
            vals = crumbs.astype(np.int8)
            vals[vals >= 2] -= 4
            return vals.astype(et.to_dtype()).reshape(shape)
        return crumbs.astype(et.to_dtype()).reshape(shape)
    return np.frombuffer(raw, dtype=et.to_dtype(), count=count).reshape(shape).copy()


def encode_tensor(value: np.ndarray, et: Type) -> bytes:
    """An array -> its bytes in the .bin, packing sub-byte types as OpenVINO does."""
    name = et.get_type_name()
    if name == "string":
        return _encode_strings(value)
    flat = np.ascontiguousarray(value).reshape(-1)
    if name == "u1":
        return np.packbits(flat.astype(bool), bitorder="big").tobytes()
    if et.get_bitwidth() == 4:
        nib = (flat.view(np.uint8) if et.is_real() else flat.astype(np.int16)).astype(np.uint8) & 0x0F
        if nib.size % 2:
            nib = np.append(nib, np.uint8(0))
        return (nib[0::2] | (nib[1::2] << 4)).astype(np.uint8).tobytes()
    if et.get_bitwidth() == 2:
        cr = flat.astype(np.int16).astype(np.uint8) & 0x3
        cr = np.append(cr, np.zeros((-cr.size) % 4, np.uint8)).reshape(-1, 4)
        return (cr[:, 0] | (cr[:, 1] << 2) | (cr[:, 2] << 4) | (cr[:, 3] << 6)).astype(np.uint8).tobytes()
    return flat.astype(et.to_dtype(), copy=False).tobytes()


def _decode_strings(raw: bytes, count: int) -> np.ndarray:
    """Layout: int32 count, int32 begin offset, ``count`` int32 end offsets, then the bytes."""
    if len(raw) < 4:
        raise ValueError("string constant data is shorter than its header")
    n = int(np.frombuffer(raw, np.int32, 1)[0])
    if n != count:
        raise ValueError(f"string constant holds {n} strings, its shape says {count}")
    offsets = np.frombuffer(raw, np.int32, n + 1, offset=4)
    base = 4 * (n + 2)
    out = np.empty(n, dtype=object)
    for i in range(n):
        out[i] = raw[base + offsets[i]:base + offsets[i + 1]].decode("utf-8", errors="replace")
    return out


def _encode_strings(value: np.ndarray) -> bytes:
    items = [(v.decode() if isinstance(v, bytes) else str(v)).encode("utf-8") for v in np.asarray(value).reshape(-1)]
    ends = np.cumsum([len(b) for b in items], dtype=np.int64).astype(np.int32)
    header = np.concatenate([np.array([len(items), 0], np.int32), ends]).astype(np.int32)
    return header.tobytes() + b"".join(items)
