"""``jetstream``: the settings the JetStream engine is started with.

``jetstream: true|enabled|disabled`` or a block (``store_dir``,
``max_memory_store``, ``max_file_store``, ``sync_interval`` or ``always``,
``domain``, ``limits { max_ack_pending, max_request_batch,
duplicate_window }``). As in nats-server, the entry turns JetStream on unless
it says otherwise (``enabled: false``). The one place a config file becomes
`JetStreamSettings`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from jetstream_server.config.errors import ConfigError, at_line
from jetstream_server.config.model import JetStreamLimits, JetStreamSettings
from jetstream_server.config.values import (
    as_bool,
    as_int,
    as_str,
    block_items,
    parse_duration,
    parse_size,
)

_JS_ON: Final = ("enable", "enabled")
_JS_OFF: Final = ("disable", "disabled")


def jetstream_block(value: object, key: str, base: JetStreamSettings) -> JetStreamSettings:
    """``jetstream: true|enabled|disabled`` or a block; as nats-server, the entry
    turns JetStream on unless it says otherwise (``enabled: false``)."""
    if isinstance(value, bool):
        return replace(base, enabled=value)
    if isinstance(value, str):
        if value.lower() not in _JS_ON + _JS_OFF:
            raise ConfigError(f"{key}: expected 'enabled' or 'disabled' for string value, got {value!r}")
        return replace(base, enabled=value.lower() in _JS_ON)
    items = block_items(value, key)
    out: dict[str, Any] = {"enabled": True}
    for k, v, line in items:
        with at_line(line):
            name = f"{key}.{k}"
            if k in ("store_dir", "store"):
                out["store_dir"] = as_str(v, name)
            elif k in ("max_memory_store", "max_mem", "max_memory"):
                out["max_memory_store"] = parse_size(v, name)
            elif k in ("max_file_store", "max_file", "max_store"):
                out["max_file_store"] = parse_size(v, name)
            elif k == "sync_interval":
                if isinstance(v, str) and v.lower() == "always":
                    out["sync_always"] = True
                else:
                    out["sync_interval_s"] = parse_duration(v, name)
            elif k == "sync_always":
                out["sync_always"] = as_bool(v, name)
            elif k == "domain":
                out["domain"] = as_str(v, name)
            elif k == "limits":
                out["limits"] = _jetstream_limits(v, name)
            elif k == "enabled":
                out["enabled"] = as_bool(v, name)
            else:
                raise ConfigError(f"unknown key {name}")
    return replace(base, **out)


def _jetstream_limits(value: object, key: str) -> JetStreamLimits:
    out: dict[str, int] = {}
    for k, v, line in block_items(value, key):
        name = f"{key}.{k}"
        with at_line(line):
            if k == "max_ack_pending":
                out["max_ack_pending"] = as_int(v, name)
            elif k == "max_request_batch":
                out["max_request_batch"] = as_int(v, name)
            elif k == "duplicate_window":
                if not isinstance(v, str):
                    raise ConfigError(f"{name}: expected a duration string like \"2m\"")
                out["duplicate_window_ns"] = int(parse_duration(v, name) * 1e9)
            else:
                raise ConfigError(f"unknown key {name}")
    return JetStreamLimits(**out)
