"""Utterance files of ``vinerun speech``: Kaldi binary ark and NumPy npz (specs/gna.md §7).

An utterance is a ``[frames, features]`` float matrix under a name. A Kaldi binary ark entry is
``key`` + ``" "`` + ``"\\0B"`` + ``"FM "`` (float32) or ``"DM "`` (float64) + ``"\\4"`` int32 rows +
``"\\4"`` int32 cols + the row-major data (little-endian); the reader also takes OpenVINO's C++
writer's form without the space after the key. An npz holds one array per utterance. Compressed
Kaldi matrices (``CM``) and text arks are refused with a message.

>>> import io, numpy as np
>>> buf = io.BytesIO()
>>> write_ark(buf, {"utt0": np.eye(2, dtype=np.float32)})
>>> _ = buf.seek(0)
>>> {k: v.shape for k, v in read_ark(buf).items()}
{'utt0': (2, 2)}
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

import numpy as np

from vinerun.errors import InputError

Utterances = dict[str, np.ndarray]
_TYPES = {b"FM ": np.dtype("<f4"), b"DM ": np.dtype("<f8")}


def _read_exact(f: BinaryIO, n: int, what: str, where: str) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise InputError(f"{where}: truncated ark, expected {n} bytes of {what}, got {len(data)}")
    return data


def _read_dim(f: BinaryIO, what: str, where: str) -> int:
    size = _read_exact(f, 1, f"the size byte of {what}", where)
    if size != b"\4":
        raise InputError(f"{where}: {what} must be a 4-byte integer (size byte {size!r})")
    (value,) = struct.unpack("<i", _read_exact(f, 4, what, where))
    if value < 0:
        raise InputError(f"{where}: negative {what} {value}")
    return value


def _read_key(f: BinaryIO, where: str) -> str | None:
    """The next key (None at the end of the file); leaves ``f`` after the ``\\0B`` marker."""
    key = bytearray()
    while True:
        ch = f.read(1)
        if not ch:
            if key.strip():
                raise InputError(f"{where}: truncated ark after key '{key.decode(errors='replace')}'")
            return None
        if ch in (b" ", b"\0"):
            if not key and ch == b" ":
                continue
            break
        if ch in (b"\n", b"\r", b"\t") and not key:
            continue
        key += ch
    if ch == b" ":
        ch = _read_exact(f, 1, "the binary marker", where)
    marker = _read_exact(f, 1, "the binary marker", where)
    if ch + marker != b"\0B":
        raise InputError(f"{where}: utterance '{key.decode(errors='replace')}' is not a Kaldi binary matrix "
                         "(expected '\\0B' after the key; text arks are not supported)")
    return key.decode("utf-8")


def read_ark(source: str | Path | BinaryIO) -> Utterances:
    """All utterances of a Kaldi binary ark, in file order, as float32 ``[rows, cols]`` arrays."""
    if isinstance(source, (str, Path)):
        with open(source, "rb") as f:
            return _read_ark(f, str(source))
    return _read_ark(source, "ark")


def _read_ark(f: BinaryIO, where: str) -> Utterances:
    out: Utterances = {}
    while (key := _read_key(f, where)) is not None:
        kind = _read_exact(f, 3, "the matrix type", where)
        if kind not in _TYPES:
            raise InputError(f"{where}: utterance '{key}' has matrix type {kind!r}; supported: 'FM ' (float32), "
                             "'DM ' (float64); compressed 'CM' matrices are not supported")
        rows, cols = _read_dim(f, "rows", where), _read_dim(f, "cols", where)
        dtype = _TYPES[kind]
        data = _read_exact(f, rows * cols * dtype.itemsize, f"utterance '{key}' data", where)
        out[key] = np.frombuffer(data, dtype).reshape(rows, cols).astype(np.float32)
    return out


def write_ark(target: str | Path | BinaryIO, utterances: Utterances) -> None:
    """Write float32 Kaldi binary matrices (``key \\0BFM \\4rows\\4cols data``)."""
    if isinstance(target, (str, Path)):
        with open(target, "wb") as f:
            write_ark(f, utterances)
        return
    for key, matrix in utterances.items():
        m = np.asarray(matrix, np.float32)
        m = m.reshape(m.shape[0], -1) if m.ndim != 2 else m
        dims = struct.pack("<bibi", 4, m.shape[0], 4, m.shape[1])
        target.write(key.encode("utf-8") + b" \0BFM " + dims)
        target.write(np.ascontiguousarray(m, "<f4").tobytes())


def read_utterances(path: str | Path) -> Utterances:
    """``.ark`` or ``.npz``, by extension."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"speech input file '{path}' does not exist")
    if path.suffix == ".ark":
        return read_ark(path)
    if path.suffix == ".npz":
        with np.load(path) as data:
            return {k: _matrix(np.asarray(data[k], np.float32), k, path) for k in data.files}
    raise InputError(f"speech file '{path}': unsupported extension '{path.suffix}' (use .ark or .npz)")


def _matrix(value: np.ndarray, key: str, path: Path) -> np.ndarray:
    if value.ndim == 1:
        return value.reshape(1, -1)
    if value.ndim != 2:
        raise InputError(f"{path}: utterance '{key}' must be [frames, features], got shape {list(value.shape)}")
    return value


def write_utterances(path: str | Path, utterances: Utterances) -> None:
    """``.ark`` or ``.npz``, by extension."""
    path = Path(path)
    if path.suffix == ".ark":
        write_ark(path, utterances)
    elif path.suffix == ".npz":
        np.savez(path, **{k: np.asarray(v, np.float32) for k, v in utterances.items()})
    else:
        raise InputError(f"speech output file '{path}': unsupported extension '{path.suffix}' (use .ark or .npz)")
