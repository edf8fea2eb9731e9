"""The values of a parsed config file as settings take them.

Sizes (``1GB``, 1024-based), durations (Go's, or a number of seconds),
booleans, integers, strings, ``host:port`` and the entries of a block (with
the line of each key, when the parser recorded one). Each converter raises
`ConfigError` naming the key and what it expected; none knows the settings
model or the file syntax (a block is any mapping; its `lines`, if any, are
read by duck typing).
"""

from __future__ import annotations

import re
from typing import Any

from jetstream_server.config.errors import ConfigError
from jetstream_server.core.gotime import NS_PER_SECOND, DurationError, parse_duration_ns

_SIZE_RE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
_SIZE_UNITS = {
    "": 1,
    "B": 1,
    "K": 1024,
    "KB": 1024,
    "KIB": 1024,
    "M": 1024**2,
    "MB": 1024**2,
    "MIB": 1024**2,
    "G": 1024**3,
    "GB": 1024**3,
    "GIB": 1024**3,
    "T": 1024**4,
    "TB": 1024**4,
    "TIB": 1024**4,
}


def parse_size(value: object, key: str = "size") -> int:
    """Bytes from an int or a string like ``1GB``/``512MB``/``64K`` (1024-based)."""
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected a size, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        if m and m.group(2).upper() in _SIZE_UNITS:
            return int(float(m.group(1)) * _SIZE_UNITS[m.group(2).upper()])
    raise ConfigError(f"{key}: expected a size like 1024 or 1GB, got {value!r}")


def parse_duration(value: object, key: str = "duration") -> float:
    """Seconds from a number (seconds) or a Go-style duration string (``2m``, ``1h30m``)."""
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected a duration, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d+(\.\d+)?", text):
            return float(text)
        if text[:1] not in ("-", "+"):  # Go takes a sign; a config file's durations have none
            try:
                return parse_duration_ns(text) / NS_PER_SECOND
            except DurationError:
                pass
    raise ConfigError(f"{key}: expected a duration like \"10s\" or \"2m\", got {value!r}")


def as_bool(value: object, key: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ConfigError(f"{key}: expected true or false, got {value!r}")


def as_int(value: object, key: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ConfigError(f"{key}: expected an integer, got {value!r}")


def as_str(value: object, key: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise ConfigError(f"{key}: expected a string, got {value!r}")


def split_hostport(value: str, key: str) -> tuple[str | None, int | None]:
    text = str(value)
    if text.isdigit():
        return None, int(text)
    host, sep, port = text.rpartition(":")
    if not sep:
        return text, None
    if not port.isdigit() and port != "-1":
        raise ConfigError(f"{key}: bad port in {value!r}")
    return host.strip("[]") or None, int(port)


def as_block(value: object, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected a block {{ ... }}, got {value!r}")
    return {str(k).lower(): v for k, v in value.items()}


def block_items(value: object, key: str) -> list[tuple[str, Any, int | None]]:
    """(lower-case key, value, line) of a block, for errors that name the line."""
    block = as_block(value, key)
    lines = {str(k).lower(): n for k, n in getattr(value, "lines", {}).items()}
    return [(k, v, lines.get(k)) for k, v in block.items()]
