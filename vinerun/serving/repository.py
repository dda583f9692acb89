"""The model repository: ``<base_path>/<N>/`` version folders holding ``.onnx`` or ``.xml`` + ``.bin``.

>>> scan_versions("/models/resnet")            # doctest: +SKIP
{1: '/models/resnet/1/model.onnx', 3: '/models/resnet/3/model.xml'}
"""

from __future__ import annotations

from pathlib import Path

from vinerun.serving.policy import ConfigError

MODEL_SUFFIXES = (".xml", ".onnx")


def model_file(version_dir: Path) -> Path | None:
    """The model file in a version folder (``.xml`` with its ``.bin``, else ``.onnx``); ``None`` if none.

    Two candidates of the same kind are ambiguous and raise ``ConfigError`` naming them.
    """
    for suffix in MODEL_SUFFIXES:
        found = sorted(p for p in version_dir.glob(f"*{suffix}") if p.is_file())
        if suffix == ".xml":
            found = [p for p in found if p.with_suffix(".bin").is_file()]
        if len(found) > 1:
            raise ConfigError(f"version folder {version_dir} holds several {suffix} models: "
                              f"{', '.join(p.name for p in found)}")
        if found:
            return found[0]
    return None


def scan_versions(base_path: str) -> dict[int, str]:
    """``{version: model file}`` for every positive-integer folder of ``base_path`` that holds a model.

    ``base_path`` may also be a single ``.onnx`` / ``.xml`` file, served as version 1.
    """
    base = Path(base_path)
    if base.is_file():
        if base.suffix not in MODEL_SUFFIXES:
            raise ConfigError(f"model_path {base_path!r} is a file but not .onnx or .xml")
        return {1: str(base)}
    if not base.is_dir():
        raise ConfigError(f"model path {base_path!r} does not exist")
    versions: dict[int, str] = {}
    for child in base.iterdir():
        if not child.is_dir() or not child.name.isdigit() or int(child.name) <= 0:
            continue
        path = model_file(child)
        if path is not None:
            versions[int(child.name)] = str(path)
    return versions
