"""``properties.log``: the log level of a device."""

from __future__ import annotations

from vinerun.properties._key import PropertyEnum, enum_of, name_keys, rw


class Level(PropertyEnum):
    """``LOG_LEVEL`` values; strings ``"LOG_NONE"`` ... ``"LOG_TRACE"`` are accepted too."""

    NO = -1
    ERR = 0
    WARNING = 1
    INFO = 2
    DEBUG = 3
    TRACE = 4


level = rw("LOG_LEVEL", enum_of(Level))

name_keys(globals())
