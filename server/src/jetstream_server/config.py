"""Server configuration: the frozen `ServerConfig` and the nats-server config file format.

`ServerConfig` is built from defaults, then a config file (`-c`), then CLI
flags (flags win). The file format is the subset of nats-server's that this
server honours:

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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from jetstream_server.core.auth import (
    Authenticator,
    NkeyUser,
    StaticAuth,
    User,
    UsersAuth,
    decode_user_key,
    is_bcrypt,
    require_bcrypt,
    require_nkeys,
)
from jetstream_server.core.permissions import (
    Permissions,
    ResponsePermission,
    SubjectPermission,
    split_queue_entry,
)
from jetstream_server.core.protocol import MAX_CONTROL_LINE_SIZE, MAX_PAYLOAD_SIZE
from jetstream_server.core.session import (
    DEFAULT_MAX_PENDING,
    DEFAULT_MAX_PINGS_OUT,
    SessionSettings,
)
from jetstream_server.core.subjects import is_valid_subject

DEFAULT_PORT: Final = 4222
DEFAULT_HOST: Final = "0.0.0.0"
DEFAULT_PING_INTERVAL_S: Final = 120.0
DEFAULT_WRITE_DEADLINE_S: Final = 10.0
DEFAULT_AUTH_TIMEOUT_S: Final = 2.0
DEFAULT_MAX_CONNECTIONS: Final = 64 * 1024
DEFAULT_LAME_DUCK_DURATION_S: Final = 120.0
DEFAULT_LAME_DUCK_GRACE_PERIOD_S: Final = 10.0
MIN_LAME_DUCK_DURATION_S: Final = 30.0
_MAX_INT32: Final = 2**31 - 1


class ConfigError(ValueError):
    """A bad configuration; the message names the key (and line, for files)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True, slots=True)
class AuthSettings:
    """Who may connect: one token or user, or a list of users and NKey users
    (each with permissions), and the ``no_auth_user``."""

    user: str | None = None
    password: str | None = None
    token: str | None = None
    users: tuple[User, ...] = ()
    nkey_users: tuple[NkeyUser, ...] = ()
    no_auth_user: str | None = None

    @property
    def required(self) -> bool:
        return (
            self.token is not None
            or self.user is not None
            or bool(self.users)
            or bool(self.nkey_users)
        )

    def authenticator(self) -> Authenticator:
        """The core's decision function for these settings."""
        if self.users or self.nkey_users:
            return UsersAuth(self.users, self.nkey_users, self.no_auth_user)
        return StaticAuth(self.user, self.password, self.token)


@dataclass(frozen=True, slots=True)
class TlsSettings:
    enabled: bool = False
    cert_file: str | None = None
    key_file: str | None = None
    ca_file: str | None = None
    verify: bool = False
    # `handshake_first`: TLS before INFO; with a fallback delay, a client that
    # sends nothing for that long gets INFO in clear text instead
    handshake_first: bool = False
    handshake_first_fallback_s: float = 0.0


@dataclass(frozen=True, slots=True)
class WebSocketSettings:
    """``websocket { ... }``: a listener for WebSocket clients (None: none)."""

    host: str | None = None  # None: the client listener's host
    port: int = 8080
    no_tls: bool = False
    tls: TlsSettings | None = None
    compression: bool = False
    handshake_timeout_s: float = 2.0


@dataclass(frozen=True, slots=True)
class JetStreamLimits:
    """``jetstream { limits { ... } }``: server-wide caps on consumers and
    streams (0: none). `duplicate_window_ns` caps a stream's dedup window."""

    max_ack_pending: int = 0
    max_request_batch: int = 0
    duplicate_window_ns: int = 0


@dataclass(frozen=True, slots=True)
class JetStreamSettings:
    """`max_memory_store` / `max_file_store`: -1 until the server computes
    nats-server's defaults at start (75 % of memory, 75 % of the free disk)."""

    store_dir: str | None = None
    max_memory_store: int = -1
    max_file_store: int = -1
    sync_interval_s: float = 120.0
    sync_always: bool = False
    domain: str | None = None
    limits: JetStreamLimits = field(default_factory=JetStreamLimits)


@dataclass(frozen=True, slots=True)
class ServerConfig:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    http_port: int | None = None
    server_name: str | None = None
    max_payload: int = MAX_PAYLOAD_SIZE
    max_pending: int = DEFAULT_MAX_PENDING
    max_control_line: int = MAX_CONTROL_LINE_SIZE
    ping_interval_s: float = DEFAULT_PING_INTERVAL_S
    max_pings_out: int = DEFAULT_MAX_PINGS_OUT
    write_deadline_s: float = DEFAULT_WRITE_DEADLINE_S
    auth_timeout_s: float = DEFAULT_AUTH_TIMEOUT_S
    max_connections: int = DEFAULT_MAX_CONNECTIONS  # < 0: refuse every connection
    max_subscriptions: int = 0  # per connection; 0: unlimited
    http_host: str | None = None  # None: the client listener's host
    auth: AuthSettings = field(default_factory=AuthSettings)
    tls: TlsSettings = field(default_factory=TlsSettings)
    jetstream: JetStreamSettings = field(default_factory=JetStreamSettings)
    websocket: WebSocketSettings | None = None
    debug: bool = False
    trace: bool = False
    # lame duck mode (SIGUSR2): clients are closed over `duration`, after `grace_period`
    lame_duck_duration_s: float = DEFAULT_LAME_DUCK_DURATION_S
    lame_duck_grace_period_s: float = DEFAULT_LAME_DUCK_GRACE_PERIOD_S
    loop_lag_warning_s: float = 0.5  # a loop step longer than this logs a warning; 0: never

    def with_changes(self, **changes: Any) -> ServerConfig:
        return replace(self, **changes)

    def session_settings(self) -> SessionSettings:
        """The per-connection limits the client sessions get."""
        return SessionSettings(
            max_control_line=self.max_control_line,
            max_payload=self.max_payload,
            max_pending=self.max_pending,
            max_pings_out=self.max_pings_out,
            max_subscriptions=self.max_subscriptions,
            trace=self.trace,
        )

    def validate(self) -> ServerConfig:
        """Cross-field checks nats-server makes; raises `ConfigError`, returns self."""
        if self.max_payload > self.max_pending:
            raise ConfigError(
                f"max_payload ({self.max_payload}) cannot be higher than max_pending "
                f"({self.max_pending})"
            )
        if self.max_payload <= 0:
            raise ConfigError(f"max_payload: must be positive, got {self.max_payload}")
        if self.max_control_line <= 0:
            raise ConfigError(f"max_control_line: must be positive, got {self.max_control_line}")
        if not 0 <= self.port <= 65535 and self.port != -1:
            raise ConfigError(f"port: {self.port} is not a valid port")
        if self.http_port is not None and not 0 <= self.http_port <= 65535 and self.http_port != -1:
            raise ConfigError(f"http_port: {self.http_port} is not a valid port")
        if self.lame_duck_grace_period_s >= self.lame_duck_duration_s:
            raise ConfigError(
                f"lame duck grace period ({_go_duration(self.lame_duck_grace_period_s)}) should "
                "be strictly lower than lame duck duration "
                f"({_go_duration(self.lame_duck_duration_s)})"
            )
        _check_no_auth_user(self.auth)
        return self


# -- value helpers ---------------------------------------------------------------

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
_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


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
        parts = _DURATION_RE.findall(text)
        if parts and "".join(n + u for n, u in parts) == text:
            return sum(float(n) * _DURATION_UNITS[u] for n, u in parts)
    raise ConfigError(f"{key}: expected a duration like \"10s\" or \"2m\", got {value!r}")


def _as_bool(value: object, key: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ConfigError(f"{key}: expected true or false, got {value!r}")


def _as_int(value: object, key: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ConfigError(f"{key}: expected an integer, got {value!r}")


def _as_str(value: object, key: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise ConfigError(f"{key}: expected a string, got {value!r}")


# -- the config file lexer/parser ------------------------------------------------


class _Lexer:
    """Tokens of the nats-server config format: words, strings, `{ } [ ] = : ,`."""

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.pos = 0
        self.line = 1

    def error(self, message: str, line: int | None = None) -> ConfigError:
        return ConfigError(f"{self.source}:{line or self.line}: {message}")

    def _skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch == "\n":
                self.line += 1
                self.pos += 1
            elif ch in " \t\r;":
                self.pos += 1
            elif ch == "#" or text.startswith("//", self.pos):
                nl = text.find("\n", self.pos)
                self.pos = len(text) if nl < 0 else nl
            else:
                return

    def next(self) -> tuple[str, Any, int] | None:
        """(kind, value, line): kind is one of 'punct', 'str', 'word'; None at end."""
        self._skip()
        if self.pos >= len(self.text):
            return None
        text = self.text
        ch = text[self.pos]
        line = self.line
        if ch in "{}[]=:,":
            self.pos += 1
            return ("punct", ch, line)
        if ch in "\"'":
            end = self.pos + 1
            out = []
            while end < len(text) and text[end] != ch:
                if text[end] == "\\" and ch == '"' and end + 1 < len(text):
                    end += 1
                    out.append({"n": "\n", "t": "\t"}.get(text[end], text[end]))
                elif text[end] == "\n":
                    raise self.error("unterminated string")
                else:
                    out.append(text[end])
                end += 1
            if end >= len(text):
                raise self.error("unterminated string")
            self.pos = end + 1
            return ("str", "".join(out), line)
        end = self.pos
        while end < len(text) and text[end] not in " \t\r\n{}[]=,;#\"'" and not (
            text[end] == ":" and (end + 1 >= len(text) or text[end + 1] in " \t\r\n")
        ):
            if text.startswith("//", end):
                break
            end += 1
        word = text[self.pos : end]
        self.pos = end
        return ("word", word, line)

    def peek(self) -> tuple[str, Any, int] | None:
        pos, line = self.pos, self.line
        tok = self.next()
        self.pos, self.line = pos, line
        return tok


def _word_value(word: str) -> Any:
    low = word.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if re.fullmatch(r"-?\d+", word):
        return int(word)
    if re.fullmatch(r"-?\d+\.\d+", word):
        return float(word)
    return word


def _parse_value(lex: _Lexer) -> tuple[Any, int]:
    tok = lex.next()
    if tok is None:
        raise lex.error("value expected at end of file")
    kind, value, line = tok
    if kind == "str":
        return value, line
    if kind == "word":
        return _word_value(value), line
    if value == "{":
        return _parse_map(lex, closing=True), line
    if value == "[":
        items: list[Any] = []
        while True:
            nxt = lex.peek()
            if nxt is None:
                raise lex.error("unterminated array", line)
            if nxt[0] == "punct" and nxt[1] == "]":
                lex.next()
                return items, line
            if nxt[0] == "punct" and nxt[1] == ",":
                lex.next()
                continue
            items.append(_parse_value(lex)[0])
    raise lex.error(f"unexpected {value!r}", line)


class _Entries(dict[str, Any]):
    """A parsed block that remembers the line of each key."""

    lines: dict[str, int]


def _parse_map(lex: _Lexer, closing: bool) -> _Entries:
    out = _Entries()
    out.lines = {}
    while True:
        tok = lex.next()
        if tok is None:
            if closing:
                raise lex.error("missing '}'")
            return out
        kind, key, line = tok
        if kind == "punct" and key == "}" and closing:
            return out
        if kind == "punct" and key == ",":
            continue
        if kind == "punct":
            raise lex.error(f"unexpected {key!r}, expected a key", line)
        if kind == "word" and ":" in key:
            # `port:4222`, written without a space after the colon
            key, _, inline = key.partition(":")
            if inline:
                out[key] = _word_value(inline)
                out.lines[key] = line
                continue
            nxt = lex.peek()
            value, _ = _parse_value(lex)
            out[str(key)] = value
            out.lines[str(key)] = line
            continue
        nxt = lex.peek()
        if nxt is not None and nxt[0] == "punct" and nxt[1] in ("=", ":"):
            lex.next()
        elif nxt is None or nxt[2] != line and not (nxt[0] == "punct" and nxt[1] == "{"):
            raise lex.error(f"key {key!r} has no value", line)
        value, _ = _parse_value(lex)
        out[str(key)] = value
        out.lines[str(key)] = line
    # unreachable


def parse_config_text(text: str, source: str = "<config>") -> _Entries:
    """Parse the nats-server config syntax into nested dicts (no validation)."""
    return _parse_map(_Lexer(text, source), closing=False)


_TOP_KEYS = {
    "port", "host", "net", "listen", "http_port", "http", "monitor_port", "max_payload",
    "max_pending", "max_control_line", "ping_interval", "ping_max", "write_deadline",
    "authorization", "tls", "jetstream", "server_name", "debug", "trace", "auth_timeout",
    "max_connections", "max_conn", "max_subscriptions", "max_subs", "no_auth_user",
    "lame_duck_duration", "lame_duck_grace_period", "websocket", "ws",
    "loop_lag_warning",
}


def _split_hostport(value: str, key: str) -> tuple[str | None, int | None]:
    text = str(value)
    if text.isdigit():
        return None, int(text)
    host, sep, port = text.rpartition(":")
    if not sep:
        return text, None
    if not port.isdigit() and port != "-1":
        raise ConfigError(f"{key}: bad port in {value!r}")
    return host.strip("[]") or None, int(port)


# Top-level keys that set one ServerConfig field through one converter.
def _int32_size(value: Any, key: str) -> int:
    size = parse_size(value, key)
    if size > _MAX_INT32:
        raise ConfigError(f"{key} value is too big")
    return size


def _lame_duck_duration(value: Any, key: str) -> float:
    seconds = parse_duration(value, key)
    if seconds < MIN_LAME_DUCK_DURATION_S:
        raise ConfigError(
            f"invalid lame_duck_duration of {_go_duration(seconds)}, minimum is 30 seconds"
        )
    return seconds


def _lame_duck_grace_period(value: Any, key: str) -> float:
    seconds = parse_duration(value, key)
    if seconds < 0:
        raise ConfigError("invalid lame_duck_grace_period, needs to be positive")
    return seconds


def _go_duration(seconds: float) -> str:
    """A duration as Go prints one (``30s``, ``1m30s``, ``500ms``)."""
    if 0 < seconds < 1:
        return f"{seconds * 1000:g}ms"
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    out = f"{hours}h" if hours else ""
    if hours or minutes:
        out += f"{minutes}m"
    return out + f"{secs:g}s"


def _max_connections(value: Any, key: str) -> int:
    # nats-server: 0 in a config file means -1, and -1 refuses every connection
    count = _as_int(value, key)
    return -1 if count == 0 else count


_SCALAR_KEYS: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "max_payload": ("max_payload", _int32_size),
    "max_pending": ("max_pending", parse_size),
    "max_control_line": ("max_control_line", _int32_size),
    "max_connections": ("max_connections", _max_connections),
    "max_conn": ("max_connections", _max_connections),
    "max_subscriptions": ("max_subscriptions", _as_int),
    "max_subs": ("max_subscriptions", _as_int),
    "ping_interval": ("ping_interval_s", parse_duration),
    "ping_max": ("max_pings_out", _as_int),
    "write_deadline": ("write_deadline_s", parse_duration),
    "auth_timeout": ("auth_timeout_s", parse_duration),
    "server_name": ("server_name", _as_str),
    "debug": ("debug", _as_bool),
    "trace": ("trace", _as_bool),
    "lame_duck_duration": ("lame_duck_duration_s", _lame_duck_duration),
    "lame_duck_grace_period": ("lame_duck_grace_period_s", _lame_duck_grace_period),
    "loop_lag_warning": ("loop_lag_warning_s", parse_duration),  # bundled server only
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
    for key, value in entries.items():
        k = key.lower()
        try:
            if k not in _TOP_KEYS:
                raise ConfigError(f"unknown configuration key {key!r}")
            if k == "port":
                changes["port"] = _as_int(value, key)
            elif k in ("host", "net"):
                changes["host"] = _as_str(value, key)
            elif k == "listen":
                host, port = _split_hostport(value, key)
                if host:
                    changes["host"] = host
                if port is not None:
                    changes["port"] = port
            elif k in ("http_port", "monitor_port"):
                changes["http_port"] = _as_int(value, key)
            elif k == "http":
                host, port = _split_hostport(value, key)
                if port is None:
                    raise ConfigError(f"{key}: expected host:port or port, got {value!r}")
                changes["http_port"] = port
                if host:
                    changes["http_host"] = host
            elif k in _SCALAR_KEYS:
                field_name, convert = _SCALAR_KEYS[k]
                changes[field_name] = convert(value, key)
            elif k == "authorization":
                auth, timeout = _auth_block(value, key)
                no_auth_user = changes.get("auth", cfg.auth).no_auth_user
                changes["auth"] = replace(auth, no_auth_user=no_auth_user)
                if timeout is not None:
                    changes["auth_timeout_s"] = timeout
            elif k == "no_auth_user":
                changes["auth"] = replace(
                    changes.get("auth", cfg.auth), no_auth_user=_as_str(value, key)
                )
            elif k == "tls":
                changes["tls"] = _tls_block(value, key)
            elif k in ("websocket", "ws"):
                changes["websocket"] = _websocket_block(value, key)
            elif k == "jetstream":
                changes["jetstream"] = _jetstream_block(value, key, cfg.jetstream)
        except ConfigError as exc:
            if exc.line is not None:
                raise ConfigError(f"{source}:{exc.line}: {exc}", exc.line) from None
            raise ConfigError(f"{where(key)}{exc}", lines.get(key)) from None
    return replace(cfg, **changes)


def _block(value: object, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected a block {{ ... }}, got {value!r}")
    return {str(k).lower(): v for k, v in value.items()}


def _block_items(value: object, key: str) -> list[tuple[str, Any, int | None]]:
    """(lower-case key, value, line) of a block, for errors that name the line."""
    block = _block(value, key)
    lines = {str(k).lower(): n for k, n in getattr(value, "lines", {}).items()}
    return [(k, v, lines.get(k)) for k, v in block.items()]


def _at(line: int | None, exc: ConfigError) -> ConfigError:
    return exc if exc.line is not None else ConfigError(str(exc), line)


def _auth_block(value: object, key: str) -> tuple[AuthSettings, float | None]:
    """The credentials and the optional auth `timeout` (seconds), with
    nats-server's checks and messages."""
    items = _block_items(value, key)
    user = password = token = None
    timeout: float | None = None
    users: tuple[User, ...] | None = None
    nkey_users: tuple[NkeyUser, ...] = ()
    defaults: Permissions | None = None
    block_line: int | None = None
    for k, v, line in items:
        try:
            if k in ("user", "username"):
                user = _as_str(v, f"{key}.{k}")
            elif k in ("password", "pass"):
                password = _as_str(v, f"{key}.{k}")
            elif k == "token":
                token = _as_str(v, f"{key}.{k}")
            elif k == "timeout":
                timeout = parse_duration(v, f"{key}.{k}")
            elif k == "users":
                users, nkey_users = _users(v, f"{key}.{k}")
                block_line = line
            elif k in ("default_permission", "default_permissions", "permissions"):
                defaults = _permissions(v, f"{key}.{k}")
            else:
                raise ConfigError(f"unknown key {key}.{k}")
        except ConfigError as exc:
            raise _at(line, exc) from None
    if (user is not None or password is not None) and token is not None:
        raise ConfigError("Cannot have a user/pass and token")
    if users is not None:
        if user is not None:
            raise ConfigError("Can not have a single user/pass and a users array")
        if token is not None:
            raise ConfigError("Can not have a token and a users array")
    if (user is None) != (password is None):
        raise ConfigError(f"{key}: user and password go together")
    if defaults is not None:
        users = tuple(
            u if u.permissions is not None else replace(u, permissions=defaults)
            for u in users or ()
        )
        nkey_users = tuple(
            u if u.permissions is not None else replace(u, permissions=defaults)
            for u in nkey_users
        )
    try:
        _check_packages(user, password, token, users or (), nkey_users)
    except ConfigError as exc:
        raise _at(block_line, exc) from None
    return (
        AuthSettings(
            user=user, password=password, token=token, users=users or (), nkey_users=nkey_users
        ),
        timeout,
    )


def _check_packages(
    user: str | None,
    password: str | None,
    token: str | None,
    users: tuple[User, ...],
    nkey_users: tuple[NkeyUser, ...],
) -> None:
    """A bcrypt hash or an NKey user needs its package: say so at load time."""
    secrets = [s for s in (password, token, *(u.password for u in users)) if s]
    if any(is_bcrypt(s) for s in secrets):
        try:
            require_bcrypt()
        except ImportError as exc:
            raise ConfigError(str(exc)) from None
    if nkey_users:
        try:
            require_nkeys()
        except ImportError as exc:
            raise ConfigError(str(exc)) from None
        for u in nkey_users:
            if decode_user_key(u.public_key) is None:
                raise ConfigError("Not a valid public nkey for a user")


def _users(value: object, key: str) -> tuple[tuple[User, ...], tuple[NkeyUser, ...]]:
    if not isinstance(value, list):
        raise ConfigError(f"Expected users field to be an array, got {value!r}")
    users: list[User] = []
    nkey_users: list[NkeyUser] = []
    seen: set[str] = set()
    for entry in value:
        if not isinstance(entry, dict):
            raise ConfigError(f"Expected user entry to be a map/struct, got {entry!r}")
        name = password = nkey = None
        perms: Permissions | None = None
        for k, v, line in _block_items(entry, key):
            try:
                if k == "nkey":
                    nkey = _as_str(v, f"{key}.{k}")
                elif k in ("user", "username"):
                    name = _as_str(v, f"{key}.{k}")
                elif k in ("pass", "password"):
                    password = _as_str(v, f"{key}.{k}")
                elif k in ("permission", "permissions", "authorization"):
                    perms = _permissions(v, f"{key}.{k}")
                else:
                    raise ConfigError(f"unknown key {key}.{k}")
            except ConfigError as exc:
                raise _at(line, exc) from None
        if not nkey and not name:
            raise ConfigError("User entry requires a user")
        if nkey:
            if name or password:
                raise ConfigError("Nkey users do not take usernames or passwords")
            if nkey in seen:
                raise ConfigError(f'Duplicate nkey "{nkey}" detected')
            seen.add(nkey)
            nkey_users.append(NkeyUser(nkey, perms))
        else:
            assert name is not None
            if name in seen:
                raise ConfigError(f'Duplicate user "{name}" detected')
            seen.add(name)
            users.append(User(name, password or "", perms))
    return tuple(users), tuple(nkey_users)


def _permissions(value: object, key: str) -> Permissions:
    """``{ publish, subscribe, allow_responses }`` as nats-server parses it."""
    if not isinstance(value, dict):
        raise ConfigError(f"Expected permissions to be a map/struct, got {value!r}")
    publish = subscribe = None
    responses: ResponsePermission | None = None
    for k, v, line in _block_items(value, key):
        try:
            if k in ("pub", "publish", "import"):
                publish = _subject_permission(v, allow_queue=False)
            elif k in ("sub", "subscribe", "export"):
                subscribe = _subject_permission(v, allow_queue=True)
            elif k in ("publish_allow_responses", "allow_responses"):
                responses = _responses(v)
            else:
                raise ConfigError(f'Unknown field "{k}" parsing permissions')
        except ConfigError as exc:
            raise _at(line, exc) from None
    return Permissions(publish, subscribe, responses)


def _subject_permission(value: object, allow_queue: bool) -> SubjectPermission | None:
    if isinstance(value, dict):
        if not value:
            return None
        allow: tuple[str, ...] | None = None
        deny: tuple[str, ...] = ()
        for k, v, line in _block_items(value, "permissions"):
            try:
                if k == "allow":
                    allow = _perm_subjects(v, allow_queue) or None
                elif k == "deny":
                    deny = _perm_subjects(v, allow_queue)
                else:
                    raise ConfigError(
                        f'Unknown field name "{k}" parsing subject permissions, '
                        "only 'allow' or 'deny' are permitted"
                    )
            except ConfigError as exc:
                raise _at(line, exc) from None
        return SubjectPermission(allow, deny)
    # the old style: a subject or a list of subjects, all allowed
    return SubjectPermission(_perm_subjects(value, allow_queue) or None)


def _perm_subjects(value: object, allow_queue: bool) -> tuple[str, ...]:
    if isinstance(value, str):
        items: list[object] = [value]
    elif isinstance(value, list):
        items = list(value)
    else:
        raise ConfigError(
            "Expected subject permissions to be a subject, or array of subjects, "
            f"got {type(value).__name__}"
        )
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ConfigError("Subject in permissions array cannot be cast to string")
        if not is_valid_subject(item):
            parts = item.split()
            if not allow_queue or len(parts) != 2:
                raise ConfigError(f'subject "{item}" is not a valid subject')
            subject, queue = split_queue_entry(item)
            if not is_valid_subject(subject):
                raise ConfigError(f'subject "{subject}" is not a valid subject')
            if queue is None or not is_valid_subject(queue):
                raise ConfigError(f'queue "{queue}" is not a valid queue')
        out.append(item)
    return tuple(out)


def _responses(value: object) -> ResponsePermission | None:
    if isinstance(value, bool):
        return ResponsePermission() if value else None
    if not isinstance(value, dict):
        raise ConfigError("error parsing response permissions, expected a boolean or a map")
    defaults = ResponsePermission()
    max_msgs, expires_s = defaults.max_msgs, defaults.expires_s
    for k, v, line in _block_items(value, "allow_responses"):
        try:
            if k in ("max", "max_msgs", "max_messages", "max_responses"):
                # 0 keeps the default; a negative value means no limit
                max_msgs = _as_int(v, k) or max_msgs
            elif k in ("expires", "expiration", "ttl"):
                if not isinstance(v, str):
                    raise ConfigError("error parsing expires, not a duration string")
                expires_s = parse_duration(v, k) or expires_s
            else:
                raise ConfigError(f'Unknown field "{k}" parsing permissions')
        except ConfigError as exc:
            raise _at(line, exc) from None
    return ResponsePermission(max_msgs, expires_s)


def _check_no_auth_user(auth: AuthSettings) -> None:
    name = auth.no_auth_user
    if not name:
        return
    if not auth.users and not auth.nkey_users:
        raise ConfigError(f'no_auth_user: "{name}" present, but users/nkeys are not defined')
    if not any(u.name == name for u in auth.users) and not any(
        u.public_key == name for u in auth.nkey_users
    ):
        raise ConfigError(
            f'no_auth_user: "{name}" not present as user or nkey in authorization block '
            "or account configuration"
        )


def _tls_block(value: object, key: str) -> TlsSettings:
    items = _block_items(value, key)
    out: dict[str, Any] = {"enabled": True}
    for k, v, line in items:
        try:
            if k in ("cert_file", "key_file", "ca_file"):
                out[k] = _as_str(v, f"{key}.{k}")
            elif k == "verify":
                out["verify"] = _as_bool(v, f"{key}.{k}")
            elif k == "timeout":
                parse_duration(v, f"{key}.{k}")
            elif k in ("handshake_first", "first", "immediate"):
                out["handshake_first"], out["handshake_first_fallback_s"] = _handshake_first(v, k)
            else:
                raise ConfigError(f"unknown key {key}.{k}")
        except ConfigError as exc:
            raise _at(line, exc) from None
    if not out.get("cert_file") or not out.get("key_file"):
        raise ConfigError(f"{key}: cert_file and key_file are required")
    return TlsSettings(**out)


DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_S: Final = 0.05


def _websocket_block(value: object, key: str) -> WebSocketSettings:
    """nats-server's `websocket` block (the keys this server honours), with
    its rule that a listener without TLS must say `no_tls: true`."""
    out: dict[str, Any] = {}
    for k, v, line in _block_items(value, key):
        try:
            name = f"{key}.{k}"
            if k == "listen":
                host, port = _split_hostport(v, name)
                if host:
                    out["host"] = host
                if port is not None:
                    out["port"] = port
            elif k == "port":
                out["port"] = _as_int(v, name)
            elif k in ("host", "net"):
                out["host"] = _as_str(v, name)
            elif k == "no_tls":
                out["no_tls"] = _as_bool(v, name)
            elif k == "tls":
                out["tls"] = _tls_block(v, name)
            elif k in ("compress", "compression"):
                out["compression"] = _as_bool(v, name)
            elif k == "handshake_timeout":
                out["handshake_timeout_s"] = parse_duration(v, name)
            else:
                raise ConfigError(f"unknown key {name}")
        except ConfigError as exc:
            raise _at(line, exc) from None
    settings = WebSocketSettings(**out)
    if settings.tls is None and not settings.no_tls:
        raise ConfigError("websocket requires TLS configuration")
    return settings


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


def _jetstream_block(value: object, key: str, base: JetStreamSettings) -> JetStreamSettings:
    if isinstance(value, bool) or (isinstance(value, str) and value.lower() == "enabled"):
        return base
    items = _block_items(value, key)
    out: dict[str, Any] = {}
    for k, v, line in items:
        try:
            name = f"{key}.{k}"
            if k in ("store_dir", "store"):
                out["store_dir"] = _as_str(v, name)
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
                out["sync_always"] = _as_bool(v, name)
            elif k == "domain":
                out["domain"] = _as_str(v, name)
            elif k == "limits":
                out["limits"] = _jetstream_limits(v, name)
            elif k == "enabled":
                _as_bool(v, name)
            else:
                raise ConfigError(f"unknown key {name}")
        except ConfigError as exc:
            raise _at(line, exc) from None
    return replace(base, **out)


def _jetstream_limits(value: object, key: str) -> JetStreamLimits:
    out: dict[str, int] = {}
    for k, v, line in _block_items(value, key):
        name = f"{key}.{k}"
        try:
            if k == "max_ack_pending":
                out["max_ack_pending"] = _as_int(v, name)
            elif k == "max_request_batch":
                out["max_request_batch"] = _as_int(v, name)
            elif k == "duplicate_window":
                if not isinstance(v, str):
                    raise ConfigError(f"{name}: expected a duration string like \"2m\"")
                out["duplicate_window_ns"] = int(parse_duration(v, name) * 1e9)
            else:
                raise ConfigError(f"unknown key {name}")
        except ConfigError as exc:
            raise _at(line, exc) from None
    return JetStreamLimits(**out)


def load_config_file(path: str | Path, base: ServerConfig | None = None) -> ServerConfig:
    """Read and validate a config file; `ConfigError` names the file, line and key."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {str(p)!r}: {exc.strerror}") from None
    return config_from_mapping(parse_config_text(text, str(p)), base, str(p))
