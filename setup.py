"""The one compiled piece: the CPU plugin's native step loop (optional: without a C compiler vinerun installs
and runs the same segments from Python)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("vinerun.plugins.cpu._steploop", ["vinerun/plugins/cpu/_steploop.c"],
                             extra_compile_args=["-O2"], optional=True)])
