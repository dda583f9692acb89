"""The bundled demo model that ``vinerun serve`` serves when given no model arguments.

``cnn/1/model.onnx`` is vinerun's small reference CNN (``vinerun.models.build_onnx("cnn")``, seeded
weights): input ``image`` FP32 [1,3,32,32] -> ``logits`` FP32 [1,10]. Regenerate it with
``python -m vinerun.serving.demo``; ``tests/serving/test_demo.py`` checks the shipped file matches.

>>> from vinerun.serving.demo import DEMO_MODEL, build_demo_bytes
>>> DEMO_MODEL.name
'model.onnx'
"""

from __future__ import annotations

from pathlib import Path

DEMO_NAME = "demo"
DEMO_MODEL = Path(__file__).resolve().parent / "cnn" / "1" / "model.onnx"


def build_demo_bytes() -> bytes:
    """The demo model's ONNX bytes, built from vinerun's own model builder (deterministic)."""
    from vinerun.models import build_onnx

    return build_onnx("cnn").SerializeToString()


def main(argv: list[str] | None = None) -> int:
    """Write the demo model file (``python -m vinerun.serving.demo``)."""
    DEMO_MODEL.parent.mkdir(parents=True, exist_ok=True)
    DEMO_MODEL.write_bytes(build_demo_bytes())
    print(f"wrote {DEMO_MODEL} ({DEMO_MODEL.stat().st_size} bytes)")
    return 0

