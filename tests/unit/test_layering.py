"""The import direction of DESIGN.md: each layer imports only from the layers above it."""

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "vinerun"

# layer -> packages it must never import (module-level or inside functions)
FORBIDDEN = {
    "errors": ["vinerun.ir", "vinerun.ops", "vinerun.frontends", "vinerun.plugins", "vinerun.runtime", "vinerun.tools"],
    "ir": ["vinerun.frontends", "vinerun.plugins", "vinerun.runtime", "vinerun.tools", "vinerun.transformations"],
    "ops": ["vinerun.frontends", "vinerun.plugins", "vinerun.runtime", "vinerun.tools"],
    "frontends": ["vinerun.transformations", "vinerun.preprocess", "vinerun.plugins", "vinerun.runtime",
                  "vinerun.tools"],
    "transformations": ["vinerun.frontends", "vinerun.plugins", "vinerun.runtime", "vinerun.tools"],
    "preprocess": ["vinerun.frontends", "vinerun.plugins", "vinerun.runtime", "vinerun.tools"],
    "plugin_api": ["vinerun.frontends", "vinerun.plugins", "vinerun.runtime", "vinerun.tools"],
    "plugins": ["vinerun.runtime", "vinerun.tools", "vinerun.frontends"],
    "runtime": ["vinerun.plugins", "vinerun.tools", "vinerun.virtual"],
    # virtual devices build on plugin_api and the Core's services (plugin.core), never on runtime or plugins
    "virtual": ["vinerun.runtime", "vinerun.plugins", "vinerun.tools", "vinerun.frontends", "vinerun.serving"],
    "serving": ["vinerun.plugins", "vinerun.virtual", "vinerun.tools"],
    # OpenVINO's openvino.passes: on transformations/ and the IR writer, never on devices or the runtime
    "passes": ["vinerun.plugins", "vinerun.virtual", "vinerun.runtime", "vinerun.tools", "vinerun.serving"],
}
NEVER = ["onnxruntime", "openvino", "onnx.reference"]


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def _files():
    return sorted(p for p in PKG.rglob("*.py"))


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(PKG)))
def test_imports_follow_the_layers(path):
    rel = path.relative_to(PKG)
    layer = rel.parts[0].removesuffix(".py")
    bad = []
    for name in _imports(path):
        if any(name == n or name.startswith(n + ".") for n in NEVER):
            bad.append(f"{name} (oracles are for tests only)")
        for forbidden in FORBIDDEN.get(layer, []):
            if name == forbidden or name.startswith(forbidden + "."):
                bad.append(name)
    if layer == "plugins" and len(rel.parts) > 2:
        own = f"vinerun.plugins.{rel.parts[1]}"
        bad += [n for n in _imports(path) if n.startswith("vinerun.plugins.") and not n.startswith(own)]
    assert not bad, f"{rel} imports {bad}, against the layering in DESIGN.md"
