"""``websocket { listen | host, port, no_tls, tls, compression, handshake_timeout }``.

nats-server's rule is kept: a listener without a ``tls`` block must say
``no_tls: true``.
"""

from __future__ import annotations

from typing import Any

from jetstream_server.config.blocks.tls import tls_block
from jetstream_server.config.errors import ConfigError, at_line
from jetstream_server.config.model import WebSocketSettings
from jetstream_server.config.values import (
    as_bool,
    as_int,
    as_str,
    block_items,
    parse_duration,
    split_hostport,
)


def websocket_block(value: object, key: str) -> WebSocketSettings:
    """nats-server's `websocket` block (the keys this server honours), with
    its rule that a listener without TLS must say `no_tls: true`."""
    out: dict[str, Any] = {}
    for k, v, line in block_items(value, key):
        with at_line(line):
            name = f"{key}.{k}"
            if k == "listen":
                host, port = split_hostport(v, name)
                if host:
                    out["host"] = host
                if port is not None:
                    out["port"] = port
            elif k == "port":
                out["port"] = as_int(v, name)
            elif k in ("host", "net"):
                out["host"] = as_str(v, name)
            elif k == "no_tls":
                out["no_tls"] = as_bool(v, name)
            elif k == "tls":
                out["tls"] = tls_block(v, name)
            elif k in ("compress", "compression"):
                out["compression"] = as_bool(v, name)
            elif k == "handshake_timeout":
                out["handshake_timeout_s"] = parse_duration(v, name)
            else:
                raise ConfigError(f"unknown key {name}")
    settings = WebSocketSettings(**out)
    if settings.tls is None and not settings.no_tls:
        raise ConfigError("websocket requires TLS configuration")
    return settings
