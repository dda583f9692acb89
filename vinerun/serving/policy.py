"""Model version policies: ``{"all": {}}``, ``{"latest": {"num_versions": N}}``, ``{"specific": {"versions": [...]}}``.

>>> VersionPolicy.parse({"latest": {"num_versions": 2}}).select([1, 2, 3])
[2, 3]
>>> VersionPolicy.parse('{"specific": {"versions": [1, 5]}}').select([1, 2, 3])
[1]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from vinerun.errors import VinerunError


class ConfigError(VinerunError, ValueError):
    """A server flag or config.json entry is invalid; the message names the flag or key."""


@dataclass(frozen=True)
class VersionPolicy:
    """Which of the version folders found are served (OVMS's default: the latest one)."""

    kind: str = "latest"
    num_versions: int = 1
    versions: tuple[int, ...] = field(default_factory=tuple)

    @classmethod
    def parse(cls, value: Any) -> VersionPolicy:
        """From a dict or its JSON text (``None`` = latest 1)."""
        if value is None or value == "":
            return cls()
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as e:
                raise ConfigError(f"model_version_policy is not valid JSON ({e}): {value!r}") from None
        if not isinstance(value, dict) or len(value) != 1:
            raise ConfigError(f"model_version_policy must be one of {{\"all\": {{}}}}, "
                              f"{{\"latest\": {{\"num_versions\": N}}}}, {{\"specific\": {{\"versions\": [..]}}}}; "
                              f"got {value!r}")
        (kind, body), = value.items()
        if not isinstance(body, dict):
            raise ConfigError(f"model_version_policy.{kind} must be an object, got {body!r}")
        if kind == "all":
            return cls("all")
        if kind == "latest":
            n = body.get("num_versions", 1)
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise ConfigError(f"model_version_policy.latest.num_versions must be an integer >= 1, got {n!r}")
            return cls("latest", num_versions=n)
        if kind == "specific":
            vs = body.get("versions")
            if not isinstance(vs, list) or not vs or not all(isinstance(v, int) and v > 0 for v in vs):
                raise ConfigError(f"model_version_policy.specific.versions must be a list of positive integers, "
                                  f"got {vs!r}")
            return cls("specific", versions=tuple(sorted(set(vs))))
        raise ConfigError(f"unknown model_version_policy {kind!r}; use all, latest or specific")

    def select(self, available: list[int]) -> list[int]:
        """The versions to serve out of those ``available``, ascending."""
        found = sorted(set(available))
        if self.kind == "all":
            return found
        if self.kind == "latest":
            return found[-self.num_versions:]
        return [v for v in found if v in self.versions]

    def to_json(self) -> dict[str, Any]:
        if self.kind == "all":
            return {"all": {}}
        if self.kind == "latest":
            return {"latest": {"num_versions": self.num_versions}}
        return {"specific": {"versions": list(self.versions)}}
