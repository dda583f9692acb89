"""``tensor_from_file``: a file's bytes as a u8 ``Tensor`` (e.g. IR weights for ``Core.read_model``)."""

from __future__ import annotations

import os

import numpy as np

from vinerun.ir import Tensor


def tensor_from_file(path: str | os.PathLike) -> Tensor:
    """A 1-D ``u8`` tensor holding the bytes of the file at ``path``."""
    return Tensor(np.fromfile(os.fspath(path), dtype=np.uint8))
