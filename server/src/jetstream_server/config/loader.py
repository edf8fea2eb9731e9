"""A config file onto a `ServerConfig`: the top-level keys and their blocks.

`load_config_file` reads the file, `config.syntax` parses it and
`config_from_mapping` applies each top-level key through its block
(`config.blocks`) onto a base config (the defaults, or what the command
line started from). Every key the file may hold is known here; an unknown
key, a value of the wrong kind or a syntax error raises `ConfigError` as
``<file>:<line>: <message>``. Cross-field checks are the model's
(`ServerConfig.validate`), made by the caller once flags are applied too.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from jetstream_server.config.blocks.accounts import accounts_block, with_account_users
from jetstream_server.config.blocks.authorization import authorization_block
from jetstream_server.config.blocks.jetstream import jetstream_block
from jetstream_server.config.blocks.limits import SCALAR_KEYS
from jetstream_server.config.blocks.operator import (
    apply_operator_mode,
    operators_block,
    resolver_block,
    resolver_preload_block,
)
from jetstream_server.config.blocks.tls import tls_block
from jetstream_server.config.blocks.websocket import websocket_block
from jetstream_server.config.errors import ConfigError
from jetstream_server.config.model import ServerConfig
from jetstream_server.config.syntax import parse_config_text
from jetstream_server.config.values import as_bool, as_int, as_str, split_hostport
from jetstream_server.core.auth import NkeyUser, User
from jetstream_server.core.jwt import Claims
from jetstream_server.core.jwt_auth import JwtAccount

_OPERATOR_KEYS: Final = (
    "operator", "operators", "roots", "root", "root_operators", "root_operator",
)
_TOP_KEYS = {
    "port", "host", "net", "listen", "http_port", "http", "monitor_port", "max_payload",
    "max_pending", "max_control_line", "ping_interval", "ping_max", "write_deadline",
    "authorization", "tls", "jetstream", "server_name", "debug", "trace", "auth_timeout",
    "max_connections", "max_conn", "max_subscriptions", "max_subs", "no_auth_user",
    "accounts", "system_account", "system", "no_system_account", "no_system", "no_sys_acc",
    *_OPERATOR_KEYS, "resolver", "account_resolver", "accounts_resolver", "resolver_preload",
    "lame_duck_duration", "lame_duck_grace_period", "websocket", "ws",
    "loop_lag_warning",
}


def config_from_mapping(
    entries: dict[str, Any], base: ServerConfig | None = None, source: str = "<config>"
) -> ServerConfig:
    """Apply a parsed config file onto `base` (defaults when None)."""
    cfg = base or ServerConfig()
    lines: dict[str, int] = getattr(entries, "lines", {})

    def where(key: str) -> str:
        return f"{source}:{lines[key]}: " if key in lines else f"{source}: "

    changes: dict[str, Any] = {}
    account_users: tuple[tuple[User, ...], tuple[NkeyUser, ...]] = ((), ())
    operator_claims: list[Claims] | None = None
    resolver: str | None = None
    preload: tuple[JwtAccount, ...] = ()
    for key, value in entries.items():
        k = key.lower()
        try:
            if k not in _TOP_KEYS:
                raise ConfigError(f"unknown configuration key {key!r}")
            if k == "port":
                changes["port"] = as_int(value, key)
            elif k in ("host", "net"):
                changes["host"] = as_str(value, key)
            elif k == "listen":
                host, port = split_hostport(value, key)
                if host:
                    changes["host"] = host
                if port is not None:
                    changes["port"] = port
            elif k in ("http_port", "monitor_port"):
                changes["http_port"] = as_int(value, key)
            elif k == "http":
                host, port = split_hostport(value, key)
                if port is None:
                    raise ConfigError(f"{key}: expected host:port or port, got {value!r}")
                changes["http_port"] = port
                if host:
                    changes["http_host"] = host
            elif k in SCALAR_KEYS:
                field_name, convert = SCALAR_KEYS[k]
                changes[field_name] = convert(value, key)
            elif k == "authorization":
                auth, timeout = authorization_block(value, key)
                no_auth_user = changes.get("auth", cfg.auth).no_auth_user
                changes["auth"] = replace(auth, no_auth_user=no_auth_user)
                if timeout is not None:
                    changes["auth_timeout_s"] = timeout
            elif k == "no_auth_user":
                changes["auth"] = replace(
                    changes.get("auth", cfg.auth), no_auth_user=as_str(value, key)
                )
            elif k == "accounts":
                changes["accounts"], account_users = accounts_block(value, key)
            elif k in _OPERATOR_KEYS:
                operator_claims = operators_block(value, key)
            elif k in ("resolver", "account_resolver", "accounts_resolver"):
                resolver = resolver_block(value)
            elif k == "resolver_preload":
                preload = resolver_preload_block(value)
            elif k in ("system_account", "system"):
                changes["system_account"] = as_str(value, key)
            elif k in ("no_system_account", "no_system", "no_sys_acc"):
                changes["no_system_account"] = as_bool(value, key)
            elif k == "tls":
                changes["tls"] = tls_block(value, key)
            elif k in ("websocket", "ws"):
                changes["websocket"] = websocket_block(value, key)
            elif k == "jetstream":
                changes["jetstream"] = jetstream_block(value, key, cfg.jetstream)
        except ConfigError as exc:
            if exc.line is not None:
                raise ConfigError(f"{source}:{exc.line}: {exc}", exc.line) from None
            raise ConfigError(f"{where(key)}{exc}", lines.get(key)) from None
    if account_users != ((), ()):
        try:
            changes["auth"] = with_account_users(changes.get("auth", cfg.auth), *account_users)
        except ConfigError as exc:
            raise ConfigError(f"{where('accounts')}{exc}", lines.get("accounts")) from None
    if operator_claims is not None:
        try:
            apply_operator_mode(changes, cfg, operator_claims, resolver, preload)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
    elif resolver is not None or preload:
        raise ConfigError(f"{source}: resolver and resolver_preload need an operator")
    return replace(cfg, **changes)


def load_config_file(path: str | Path, base: ServerConfig | None = None) -> ServerConfig:
    """Read and validate a config file; `ConfigError` names the file, line and key."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {str(p)!r}: {exc.strerror}") from None
    return config_from_mapping(parse_config_text(text, str(p)), base, str(p))
