"""Test-only: the ``vinerun`` CLI with the GPU stand-in entered (``GPU`` runs on PyTorch's CPU device), for
``ServeProcess(..., cli="tests.serving.gpu_stand_in_cli")``. The product never lists the stand-in."""

from __future__ import annotations

import sys

from vinerun.plugins.gpu import backend
from vinerun.tools.cli import main

if __name__ == "__main__":
    with backend.stand_in():
        sys.exit(main(sys.argv[1:]))
