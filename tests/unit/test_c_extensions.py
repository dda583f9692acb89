"""The optional C extensions are built wherever a C compiler is: a compile error in one of them would otherwise
only switch the kernels off (setuptools skips an optional extension that fails), and their tests would skip."""

from __future__ import annotations

import shutil
import sysconfig

import pytest

from vinerun.plugins.cpu import native_segment
from vinerun.plugins.cpu.kernels import _ckernel


def compiler() -> str | None:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc)


@pytest.mark.skipif(compiler() is None, reason="no C compiler: the extensions are optional")
def test_the_step_loop_and_the_kernels_are_built():
    assert native_segment._steploop is not None, "the native step loop was not built: see the install's output"
    assert _ckernel.available(), "the C kernels were not built (csrc/*.c failed to compile?): see the install's output"
    assert set(_ckernel._ckernels.entry_points()) == {"winograd", "gemv", "attention", "lstm_steps", "planes"}
