"""Server configuration: the frozen `ServerConfig` and the nats-server config file format.

`ServerConfig` is built from defaults, then a config file (`-c`), then CLI
flags (flags win). One job per module:

- `model`: `ServerConfig` and the settings dataclasses it holds, with the
  cross-field checks (`ServerConfig.validate`);
- `syntax`: the config file syntax, text to nested mappings (with lines);
- `values`: sizes, durations, booleans, ``host:port`` as settings take them;
- `blocks`: each block or group of keys translated into its settings
  (`limits`, `authorization`, `accounts`, `operator`, `tls`, `websocket`,
  `jetstream`);
- `loader`: a file onto a `ServerConfig` (`load_config_file`,
  `config_from_mapping`);
- `errors`: `ConfigError`.

Every public name is importable from here. The file format is the subset of
nats-server's that this server honours:

    port: 4222            # `=`, `:` or whitespace separate key and value
    host = "127.0.0.1"    # or `listen: 127.0.0.1:4222`
    http_port 8222        // comments with # or //
    max_payload: 1MB      # sizes: 1024, 1KB, 1MB, 1GB (also K/M/G, KiB...)
    ping_interval: "2m"   # durations: "10s", "2m", "1h", "500ms" or seconds
    max_connections: 1000 # refused with -ERR 'maximum connections exceeded'
    max_subscriptions: 100
    http: "127.0.0.1:8222" # the monitor's host and port
    authorization { user: a, password: b }      # or { token: t }
    authorization {
      default_permissions { subscribe: "_INBOX.>" }
      users = [
        { user: alice, password: "$2a$11$...",  # bcrypt hashes need the bcrypt package
          permissions: { publish: { allow: ["orders.>"], deny: ["orders.secret"] },
                         subscribe: ["_INBOX.>", "orders.> workers"],
                         allow_responses: { max: 1, expires: "1m" } } }
        { nkey: UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4 }
      ]
    }
    no_auth_user: alice
    accounts {                                  # isolated subject spaces and JetStream
      ORDERS: { users: [ { user: o, password: p } ],
                jetstream: { max_mem: 1GB, max_file: 10GB, max_streams: 10, max_consumers: 100 } }
      OPS: { users: [ { user: ops, password: q } ], jetstream: enabled }
      SYS: { users: [ { user: sys, password: s } ] }
    }
    system_account: SYS    # default: $SYS, an account nobody logs in to
    # or operator (JWT) mode, instead of authorization/accounts:
    operator: /path/to/operator.jwt             # or the JWT itself
    resolver: MEMORY                            # the only resolver kept
    resolver_preload: { ACCOUNTPUBLICKEY...: eyJ0eXAiOiJKV1Qi... }
    tls { cert_file: ..., key_file: ..., ca_file: ..., verify: true,
          handshake_first: true }     # or "auto" / a fallback delay like "300ms"
    websocket { port: 8080, no_tls: true, compression: true }  # needs the wsproto package
    lame_duck_duration: "2m"      # SIGUSR2: clients closed over this (30s minimum)
    lame_duck_grace_period: "10s" # ... starting this long after lame duck mode begins
    jetstream { store_dir: ..., max_memory_store: 1GB, max_file_store: 10GB,
                sync_interval: "2m", sync_always: false, domain: hub,
                limits { max_ack_pending: 10000, max_request_batch: 1000,
                         duplicate_window: "1h" } }

Invariants: every key the file may hold is checked; an unknown key, a value
of the wrong kind or a syntax error raises `ConfigError` naming the key and
line; the checks and messages of nats-server's authorization parsing are
kept (`User entry requires a user`, `Can not have a token and a users
array`, ...). A bcrypt hash or an NKey user without the package it needs is
a `ConfigError` that names the package. Nothing here touches sockets.
Import contracts (setup.cfg) keep the parts apart: the syntax imports nothing
of the model or the server, the model knows no parser or block.
"""

from __future__ import annotations

from jetstream_server.config.blocks.tls import DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_S
from jetstream_server.config.errors import ConfigError
from jetstream_server.config.loader import config_from_mapping, load_config_file
from jetstream_server.config.model import (
    DEFAULT_AUTH_TIMEOUT_S,
    DEFAULT_HOST,
    DEFAULT_LAME_DUCK_DURATION_S,
    DEFAULT_LAME_DUCK_GRACE_PERIOD_S,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_PING_INTERVAL_S,
    DEFAULT_PORT,
    DEFAULT_SYSTEM_ACCOUNT,
    DEFAULT_WRITE_DEADLINE_S,
    MIN_LAME_DUCK_DURATION_S,
    AccountSettings,
    AuthSettings,
    Export,
    Import,
    JetStreamLimits,
    JetStreamSettings,
    OperatorSettings,
    ServerConfig,
    TlsSettings,
    WebSocketSettings,
)
from jetstream_server.config.syntax import Entries, parse_config_text
from jetstream_server.config.values import parse_duration, parse_size
from jetstream_server.core.auth import GLOBAL_ACCOUNT

__all__ = [
    "DEFAULT_AUTH_TIMEOUT_S",
    "DEFAULT_HOST",
    "DEFAULT_LAME_DUCK_DURATION_S",
    "DEFAULT_LAME_DUCK_GRACE_PERIOD_S",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_PING_INTERVAL_S",
    "DEFAULT_PORT",
    "DEFAULT_SYSTEM_ACCOUNT",
    "DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_S",
    "DEFAULT_WRITE_DEADLINE_S",
    "GLOBAL_ACCOUNT",
    "MIN_LAME_DUCK_DURATION_S",
    "AccountSettings",
    "AuthSettings",
    "ConfigError",
    "Entries",
    "Export",
    "Import",
    "JetStreamLimits",
    "JetStreamSettings",
    "OperatorSettings",
    "ServerConfig",
    "TlsSettings",
    "WebSocketSettings",
    "config_from_mapping",
    "load_config_file",
    "parse_config_text",
    "parse_duration",
    "parse_size",
]
