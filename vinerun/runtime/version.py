"""``Version``: what ``Core.get_versions`` returns per device."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Version:
    build_number: str
    description: str

    def __str__(self) -> str:
        return f"{self.description} {self.build_number}"
