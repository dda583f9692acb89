"""Compile time on a device, cold and with ``CACHE_DIR`` already filled: read + compile + first inference, each in
a fresh process (nothing kept in memory between them), on the repo's ResNet-50 and BERT-style encoder.

    python benchmarks/gpu/cache_check.py                 # GPU (f16)
    python benchmarks/gpu/cache_check.py --device CPU
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np, vinerun as ov
sys.path.insert(0, {bench!r})
import model_zoo
spec = model_zoo.MODELS[{name!r}]
t1 = time.perf_counter()
core = ov.Core()
core.set_property({{"CACHE_DIR": {cache!r}}})
compiled = core.compile_model({path!r}, {device!r})
compiled(spec.inputs())
t2 = time.perf_counter()
print(json.dumps({{"seconds": t2 - t1, "import": t1 - t0, "cached": bool(compiled.get_property("LOADED_FROM_CACHE"))}}))
"""


def run_once(name: str, path: str, device: str, cache: str) -> dict:
    code = _CHILD.format(bench=str(HERE.parent), name=name, path=path, device=device, cache=cache)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise SystemExit(f"{name}: the child failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="GPU")
    ap.add_argument("--models", nargs="+", default=["resnet50", "bert"])
    args = ap.parse_args()
    sys.path.insert(0, str(HERE.parent))
    import model_zoo

    folder = tempfile.mkdtemp(prefix="vinerun_cache_check_")
    for name in args.models:
        path = model_zoo.MODELS[name].build(folder)
        cache = tempfile.mkdtemp(prefix="vinerun_cache_dir_")
        cold = run_once(name, path, args.device, cache)
        warm = run_once(name, path, args.device, cache)
        print(f"{name} on {args.device}: read+compile+first inference cold {cold['seconds']:.2f} s, with CACHE_DIR "
              f"filled {warm['seconds']:.2f} s (loaded from cache: {warm['cached']}; import vinerun "
              f"{warm['import']:.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
