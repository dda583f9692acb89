"""``Extension``: the base class of the extensions ``Core.add_extension`` takes (OpenVINO's ``ov.Extension``).

vinerun runs Python only: an extension is a Python object registered with the Core. OpenVINO's C++
extension libraries (``core.add_extension("libcustom.so")``) cannot be loaded and raise ``NotSupportedError``.
"""

from __future__ import annotations


class Extension:
    """Base class of Core extensions. A subclass with nothing in it is a valid (empty) extension."""

    def __repr__(self) -> str:
        return "<Extension>"
