"""The top-level scalar keys: one `ServerConfig` field each, through one converter.

`SCALAR_KEYS` maps a key (and its aliases) to the field it sets and the
converter that checks its value: sizes that must fit an int32
(``max_payload``, ``max_control_line``), ``max_connections`` (0 in a file
means none allowed, as in nats-server), durations, and the lame duck periods
with nats-server's minimum and messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from jetstream_server.config.errors import ConfigError
from jetstream_server.config.model import MIN_LAME_DUCK_DURATION_S
from jetstream_server.config.values import as_bool, as_int, as_str, parse_duration, parse_size
from jetstream_server.core.gotime import NS_PER_SECOND, format_duration

_MAX_INT32: Final = 2**31 - 1


def _int32_size(value: Any, key: str) -> int:
    size = parse_size(value, key)
    if size > _MAX_INT32:
        raise ConfigError(f"{key} value is too big")
    return size


def _lame_duck_duration(value: Any, key: str) -> float:
    seconds = parse_duration(value, key)
    if seconds < MIN_LAME_DUCK_DURATION_S:
        raise ConfigError(
            f"invalid lame_duck_duration of {format_duration(round(seconds * NS_PER_SECOND))}, minimum is 30 seconds"
        )
    return seconds


def _lame_duck_grace_period(value: Any, key: str) -> float:
    seconds = parse_duration(value, key)
    if seconds < 0:
        raise ConfigError("invalid lame_duck_grace_period, needs to be positive")
    return seconds


def _max_connections(value: Any, key: str) -> int:
    # nats-server: 0 in a config file means -1, and -1 refuses every connection
    count = as_int(value, key)
    return -1 if count == 0 else count


SCALAR_KEYS: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "max_payload": ("max_payload", _int32_size),
    "max_pending": ("max_pending", parse_size),
    "max_control_line": ("max_control_line", _int32_size),
    "max_connections": ("max_connections", _max_connections),
    "max_conn": ("max_connections", _max_connections),
    "max_subscriptions": ("max_subscriptions", as_int),
    "max_subs": ("max_subscriptions", as_int),
    "ping_interval": ("ping_interval_s", parse_duration),
    "ping_max": ("max_pings_out", as_int),
    "write_deadline": ("write_deadline_s", parse_duration),
    "auth_timeout": ("auth_timeout_s", parse_duration),
    "server_name": ("server_name", as_str),
    "debug": ("debug", as_bool),
    "trace": ("trace", as_bool),
    "lame_duck_duration": ("lame_duck_duration_s", _lame_duck_duration),
    "lame_duck_grace_period": ("lame_duck_grace_period_s", _lame_duck_grace_period),
    "loop_lag_warning": ("loop_lag_warning_s", parse_duration),  # bundled server only
}
