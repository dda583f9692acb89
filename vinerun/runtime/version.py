"""``Version``: what ``Core.get_versions`` returns per device (OpenVINO's fields)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Version:
    """``major`` / ``minor`` / ``patch`` numbers, the full ``build_number`` string and a ``description``."""

    build_number: str
    description: str

    def _part(self, index: int) -> int:
        parts = self.build_number.split("-", 1)[0].split(".")
        return int(parts[index]) if index < len(parts) and parts[index].isdigit() else 0

    @property
    def major(self) -> int:
        return self._part(0)

    @property
    def minor(self) -> int:
        return self._part(1)

    @property
    def patch(self) -> int:
        return self._part(2)

    def __str__(self) -> str:
        return f"{self.description} {self.build_number}"

    def __repr__(self) -> str:
        return f"<Version: {self.build_number} {self.description}>"
