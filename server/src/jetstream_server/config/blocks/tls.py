"""``tls { cert_file, key_file, ca_file, verify, handshake_first }``.

A block turns TLS on; ``cert_file`` and ``key_file`` are required.
``handshake_first`` takes nats-server's values: a boolean, ``auto`` (a 50 ms
fallback to the plain INFO) or a fallback duration. The files are read when
the server starts (`app.tls`), not here.
"""

from __future__ import annotations

from typing import Any, Final

from jetstream_server.config.errors import ConfigError, at_line
from jetstream_server.config.model import TlsSettings
from jetstream_server.config.values import as_bool, as_str, block_items, parse_duration

DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_S: Final = 0.05


def tls_block(value: object, key: str) -> TlsSettings:
    items = block_items(value, key)
    out: dict[str, Any] = {"enabled": True}
    for k, v, line in items:
        with at_line(line):
            if k in ("cert_file", "key_file", "ca_file"):
                out[k] = as_str(v, f"{key}.{k}")
            elif k == "verify":
                out["verify"] = as_bool(v, f"{key}.{k}")
            elif k == "timeout":
                parse_duration(v, f"{key}.{k}")
            elif k in ("handshake_first", "first", "immediate"):
                out["handshake_first"], out["handshake_first_fallback_s"] = _handshake_first(v, k)
            else:
                raise ConfigError(f"unknown key {key}.{k}")
    if not out.get("cert_file") or not out.get("key_file"):
        raise ConfigError(f"{key}: cert_file and key_file are required")
    return TlsSettings(**out)


def _handshake_first(value: object, key: str) -> tuple[bool, float]:
    """nats-server's `handshake_first`: a bool, "true"/"on", "false"/"off",
    "auto" (50 ms fallback) or a fallback duration."""
    if isinstance(value, bool):
        return value, 0.0
    if not isinstance(value, str):
        raise ConfigError(
            f"field {key!r} should be a boolean or a string, got {type(value).__name__}"
        )
    text = value.lower()
    if text in ("true", "on"):
        return True, 0.0
    if text in ("false", "off"):
        return False, 0.0
    if text in ("auto", "auto_fallback"):
        return True, DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_S
    try:
        return True, parse_duration(value, key)
    except ConfigError:
        raise ConfigError(f"field {key!r}'s value {value!r} is invalid") from None
