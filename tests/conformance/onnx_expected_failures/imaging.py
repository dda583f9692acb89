"""Known failures in the imaging area (resize, vision, quantization, signal processing): none at present."""

EXPECTED_FAILURES: list[tuple[str, str]] = []
