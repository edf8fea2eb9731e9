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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from jetstream_server.core.account_limits import AccountLimits
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
from jetstream_server.core.jwt import Claims, JwtError, decode
from jetstream_server.core.jwt_auth import JwtAccount, JwtAuth
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
from jetstream_server.core.subjects import is_subset_filter, is_valid_subject

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
class OperatorSettings:
    """Operator (JWT) mode: the trusted operator keys (the operators' own and
    signing keys) and the accounts of ``resolver_preload``."""

    trusted_keys: frozenset[str]
    accounts: tuple[JwtAccount, ...] = ()
    system_account: str | None = None


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
    operator: OperatorSettings | None = None

    @property
    def required(self) -> bool:
        return (
            self.operator is not None
            or self.token is not None
            or self.user is not None
            or bool(self.users)
            or bool(self.nkey_users)
        )

    def authenticator(self) -> Authenticator:
        """The core's decision function for these settings."""
        if self.operator is not None:
            return JwtAuth(
                self.operator.trusted_keys, {a.public_key: a for a in self.operator.accounts}
            )
        if self.users or self.nkey_users:
            return UsersAuth(self.users, self.nkey_users, self.no_auth_user)
        return StaticAuth(self.user, self.password, self.token)


GLOBAL_ACCOUNT: Final = "$G"
DEFAULT_SYSTEM_ACCOUNT: Final = "$SYS"


@dataclass(frozen=True, slots=True)
class Export:
    """``exports: [ { stream: s } | { service: s, response_type }, accounts: [...] ]``;
    `accounts` None: any account may import it."""

    kind: str  # "stream" or "service"
    subject: str
    accounts: tuple[str, ...] | None = None
    response_type: str = "singleton"  # services: singleton, stream or chunked


@dataclass(frozen=True, slots=True)
class Import:
    """``imports: [ { stream: { account, subject }, prefix | to } | { service: ..., to } ]``:
    `subject` in `account`, seen here as `local`."""

    kind: str
    account: str
    subject: str
    local: str


@dataclass(frozen=True, slots=True)
class AccountSettings:
    """One account of the ``accounts`` block: its name and its JetStream
    limits (None: no JetStream). Its users are in `AuthSettings.users` with
    `account` set to `name`."""

    name: str
    jetstream: AccountLimits | None = None
    nkey: str | None = None
    name_tag: str = ""  # an account JWT's name (operator mode)
    exports: tuple[Export, ...] = ()
    imports: tuple[Import, ...] = ()


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
    nats-server's defaults at start (75 % of memory, 75 % of the free disk).
    `enabled`: on for the Python API (`ServerConfig()`, `EmbeddedServer`); the
    command line turns it on only with ``-js`` or a ``jetstream`` config entry,
    as nats-server does."""

    enabled: bool = True
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
    accounts: tuple[AccountSettings, ...] = ()
    system_account: str | None = None  # None: $SYS (unless no_system_account)
    no_system_account: bool = False
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
            system_account=self.system_account_name,
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
        names = {a.name for a in self.accounts}
        if self.system_account and self.system_account not in names | {DEFAULT_SYSTEM_ACCOUNT}:
            raise ConfigError("error resolving system account: account missing")
        return self

    def account_jetstream(self) -> dict[str, AccountLimits]:
        """The accounts that have JetStream, with their limits: the global
        account when no account other than the system account is configured
        (nats-server's globalAccountOnly), else those that enable it."""
        system = self.system_account_name
        others = [a for a in self.accounts if a.name != system]
        if not others:
            return {GLOBAL_ACCOUNT: AccountLimits()}
        return {a.name: a.jetstream for a in self.accounts if a.jetstream is not None}

    @property
    def system_account_name(self) -> str | None:
        if self.system_account:
            return self.system_account
        return None if self.no_system_account else DEFAULT_SYSTEM_ACCOUNT


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
            elif k == "accounts":
                changes["accounts"], account_users = _accounts_block(value, key)
            elif k in _OPERATOR_KEYS:
                operator_claims = _operators(value, key)
            elif k in ("resolver", "account_resolver", "accounts_resolver"):
                resolver = _resolver(value)
            elif k == "resolver_preload":
                preload = _resolver_preload(value)
            elif k in ("system_account", "system"):
                changes["system_account"] = _as_str(value, key)
            elif k in ("no_system_account", "no_system", "no_sys_acc"):
                changes["no_system_account"] = _as_bool(value, key)
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
    if account_users != ((), ()):
        try:
            changes["auth"] = _with_account_users(changes.get("auth", cfg.auth), *account_users)
        except ConfigError as exc:
            raise ConfigError(f"{where('accounts')}{exc}", lines.get("accounts")) from None
    if operator_claims is not None:
        try:
            _operator_mode(changes, cfg, operator_claims, resolver, preload)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
    elif resolver is not None or preload:
        raise ConfigError(f"{source}: resolver and resolver_preload need an operator")
    return replace(cfg, **changes)


def _operators(value: object, key: str) -> list[Claims]:
    """``operator``: operator JWTs, each inline or in a file (as nats-server reads them)."""
    items = value if isinstance(value, list) else [value]
    out: list[Claims] = []
    for item in items:
        if not isinstance(item, str):
            raise ConfigError(f"error parsing operators: unsupported type {type(item).__name__}")
        text = item
        if not item.startswith("eyJ"):
            try:
                text = Path(item).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"error parsing operator JWT: {exc}") from None
            text = _jwt_in(text)
        try:
            out.append(decode(text.strip(), "operator"))
        except JwtError as exc:
            raise ConfigError(f"error parsing operator JWT: {exc}") from None
    return out


def _jwt_in(text: str) -> str:
    """The JWT of a file that holds it alone or between nsc's BEGIN/END lines."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("eyJ"):
            return line
    return text


def _resolver(value: object) -> str:
    if isinstance(value, str) and re.fullmatch(r"(?i)\s*(MEM|MEMORY)\s*", value):
        return "MEMORY"
    raise ConfigError(
        f"resolver: only the MEMORY resolver (with resolver_preload) is supported by "
        f"this server, got {value!r}"
    )


def _resolver_preload(value: object) -> tuple[JwtAccount, ...]:
    if not isinstance(value, dict):
        raise ConfigError("preload should be a map of account_public_key:account_jwt")
    out: list[JwtAccount] = []
    for key, token in value.items():
        if not isinstance(token, str):
            raise ConfigError("preload map value should be a string JWT")
        try:
            claims = decode(token, "account")
        except JwtError:
            raise ConfigError("invalid account JWT") from None
        if claims.subject != key:
            raise ConfigError(f"resolver_preload: the JWT of {key} is for account {claims.subject}")
        out.append(JwtAccount(claims))
    return tuple(out)


def _operator_mode(
    changes: dict[str, Any],
    cfg: ServerConfig,
    operators: list[Claims],
    resolver: str | None,
    preload: tuple[JwtAccount, ...],
) -> None:
    """nats-server's validateTrustedOperators, then the accounts of the preload."""
    if resolver is None:
        raise ConfigError("operators require an account resolver to be configured")
    if changes.get("accounts"):
        raise ConfigError("operators do not allow Accounts to be configured directly")
    auth: AuthSettings = changes.get("auth", cfg.auth)
    if auth.users or auth.nkey_users or auth.user or auth.token:
        raise ConfigError("operators do not allow users to be configured directly")
    trusted: set[str] = set()
    op_system: str | None = None
    for op in operators:
        trusted.add(op.subject)
        trusted.update(k for k in op.nats.get("signing_keys") or () if isinstance(k, str))
        sys_key = op.nats.get("system_account")
        if isinstance(sys_key, str) and sys_key:
            op_system = sys_key
    system = changes.get("system_account", cfg.system_account)
    if system and op_system and system != op_system:
        raise ConfigError("system_account in config and operator JWT must be identical")
    system = system or op_system
    if not system:
        # nats-server (JetStream on, as it always is here) does not start either
        raise ConfigError(
            "Can't start JetStream: setting up internal jetstream subscriptions failed: "
            "system account not setup"
        )
    changes["system_account"] = system
    changes["auth"] = replace(
        auth, operator=OperatorSettings(frozenset(trusted), preload, system)
    )
    accounts = [
        AccountSettings(
            acc.public_key,
            _jwt_jetstream(acc.claims),
            name_tag=acc.claims.name,
            exports=_jwt_exports(acc.claims),
            imports=_jwt_imports(acc.claims),
        )
        for acc in preload
    ]
    changes["accounts"] = _authorized_imports(accounts)


def _jwt_exports(claims: Claims) -> tuple[Export, ...]:
    """An account JWT's exports that need no activation token."""
    out: list[Export] = []
    for e in claims.nats.get("exports") or ():
        if not isinstance(e, dict) or e.get("token_req"):
            continue
        kind, subject = e.get("type"), e.get("subject")
        if kind not in ("stream", "service") or not isinstance(subject, str):
            continue
        if not is_valid_subject(subject):
            continue
        response = str(e.get("response_type") or "singleton").lower()
        out.append(Export(kind, subject, None, response if response in ("stream", "chunked") else "singleton"))
    return tuple(out)


def _jwt_imports(claims: Claims) -> tuple[Import, ...]:
    """An account JWT's imports (``local_subject``; the deprecated ``to`` is a
    prefix for streams and the local subject for services)."""
    out: list[Import] = []
    for i in claims.nats.get("imports") or ():
        if not isinstance(i, dict):
            continue
        kind, subject, account = i.get("type"), i.get("subject"), i.get("account")
        if kind not in ("stream", "service") or not isinstance(subject, str) or not isinstance(account, str):
            continue
        local = i.get("local_subject") or ""
        to = i.get("to") or ""
        if not local and to:
            local = f"{to}.{subject}" if kind == "stream" else to
        local = local if isinstance(local, str) and local else subject
        if is_valid_subject(subject) and is_valid_subject(local):
            out.append(Import(kind, account, subject, local))
    return tuple(out)


def _authorized_imports(accounts: list[AccountSettings]) -> tuple[AccountSettings, ...]:
    """The accounts with only the imports their exporters allow: nats-server
    keeps an account whose JWT imports what it may not, and marks that import
    invalid (it carries nothing)."""
    out: list[AccountSettings] = []
    by_name = {a.name: a for a in accounts}
    for account in accounts:
        valid = tuple(
            imp
            for imp in account.imports
            if imp.account in by_name
            and any(
                exp.kind == imp.kind and is_subset_filter(imp.subject, exp.subject)
                for exp in by_name[imp.account].exports
            )
        )
        out.append(replace(account, imports=valid))
    return tuple(out)


def _unlimited(value: int) -> int:
    return value if value > 0 else -1


def _jwt_jetstream(claims: Claims) -> AccountLimits | None:
    """An account JWT's JetStream limits; None when it has no JetStream (both
    storage limits 0, as nats-server decides)."""
    limits = claims.nats.get("limits")
    if not isinstance(limits, dict):
        return None

    def num(name: str) -> int:
        value = limits.get(name, 0)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    if num("mem_storage") == 0 and num("disk_storage") == 0:
        return None
    return AccountLimits(
        max_memory=num("mem_storage"),
        max_storage=num("disk_storage"),
        # as nats-server takes them (INFO shows them so): streams and consumers
        # as given (0 limits nothing), the others -1 unless positive
        max_streams=num("streams"),
        max_consumers=num("consumer"),
        max_ack_pending=_unlimited(num("max_ack_pending")),
        memory_max_stream_bytes=_unlimited(num("mem_max_stream_bytes")),
        storage_max_stream_bytes=_unlimited(num("disk_max_stream_bytes")),
        max_bytes_required=bool(limits.get("max_bytes_required", False)),
    )


def _accounts_block(
    value: object, key: str
) -> tuple[tuple[AccountSettings, ...], tuple[tuple[User, ...], tuple[NkeyUser, ...]]]:
    """``accounts { NAME: { users, jetstream, default_permissions, nkey } }`` (or
    a list of names), with nats-server's checks and messages; the users come
    back with their account set."""
    if isinstance(value, list):
        names: list[str] = []
        for item in value:
            name = _as_str(item, key)
            if name == GLOBAL_ACCOUNT:
                raise ConfigError(f'"{name}" is a Reserved Account')
            if name in names:
                raise ConfigError(f"Duplicate Account Entry: {name}")
            names.append(name)
        return tuple(AccountSettings(n) for n in names), ((), ())
    accounts: list[AccountSettings] = []
    users: list[User] = []
    nkey_users: list[NkeyUser] = []
    lines = {str(k): n for k, n in getattr(value, "lines", {}).items()}
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected a block {{ ... }} or a list of names, got {value!r}")
    for name, body in value.items():
        name = str(name)
        try:
            if not isinstance(body, dict):
                raise ConfigError("Expected map entries for accounts")
            if name == GLOBAL_ACCOUNT:
                raise ConfigError(f'"{name}" is a Reserved Account')
            account, acc_users, acc_nkeys = _account_entry(name, body, f"{key}.{name}")
        except ConfigError as exc:
            raise _at(lines.get(name), exc) from None
        accounts.append(account)
        users.extend(acc_users)
        nkey_users.extend(acc_nkeys)
    _check_imports(accounts)
    return tuple(accounts), (tuple(users), tuple(nkey_users))


def _check_imports(accounts: list[AccountSettings]) -> None:
    """Every import names a defined account that exports it to the importer
    (nats-server's messages)."""
    by_name = {a.name: a for a in accounts}
    for account in accounts:
        for exp in account.exports:
            for other in exp.accounts or ():
                if other not in by_name:
                    raise ConfigError(f'"{other}" account not defined for {exp.kind} export')
        for imp in account.imports:
            exporter = by_name.get(imp.account)
            if exporter is None:
                raise ConfigError(f'"{imp.account}" account not defined for {imp.kind} import')
            if not any(
                exp.kind == imp.kind
                and is_subset_filter(imp.subject, exp.subject)
                and (exp.accounts is None or account.name in exp.accounts)
                for exp in exporter.exports
            ):
                raise ConfigError(
                    f'Error adding {imp.kind} import "{imp.subject}": {imp.kind} import not authorized'
                )


def _exports(value: object, key: str) -> tuple[Export, ...]:
    if not isinstance(value, list):
        raise ConfigError(f"Exports should be an array, got {type(value).__name__}")
    out: list[Export] = []
    for entry in value:
        if not isinstance(entry, dict):
            raise ConfigError(f"Export Items should be a map with type entry, got {type(entry).__name__}")
        kind = subject = None
        accounts: tuple[str, ...] | None = None
        response = "singleton"
        for k, v, line in _block_items(entry, key):
            try:
                if k in ("stream", "service"):
                    if kind is not None:
                        raise ConfigError(f'Detected {k} "{v}" but already saw a {kind}')
                    if not isinstance(v, str):
                        raise ConfigError(f"Expected {k} name to be string, got {type(v).__name__}")
                    if not is_valid_subject(v):
                        raise ConfigError(f'subject "{v}" is not a valid subject')
                    kind, subject = k, v
                elif k == "accounts":
                    if not isinstance(v, list) or not all(isinstance(a, str) for a in v):
                        raise ConfigError("Expected accounts to be an array of strings")
                    accounts = tuple(v)
                elif k in ("response", "response_type"):
                    low = str(v).lower()
                    kinds = {"single": "singleton", "singleton": "singleton", "stream": "stream",
                             "chunk": "chunked", "chunked": "chunked"}
                    if low not in kinds:
                        raise ConfigError(f'Unknown response type: "{v}"')
                    response = kinds[low]
                elif k in ("threshold", "response_threshold", "response_max_time", "response_time"):
                    parse_duration(v, k)
                else:
                    raise ConfigError(f"unknown key {key}.{k}")
            except ConfigError as exc:
                raise _at(line, exc) from None
        if kind is None or subject is None:
            raise ConfigError("Export Items should be a map with type entry")
        if kind == "stream" and response != "singleton":
            raise ConfigError("Detected response directive on non-service")
        out.append(Export(kind, subject, accounts, response))
    return tuple(out)


def _imports(value: object, key: str) -> tuple[Import, ...]:
    if not isinstance(value, list):
        raise ConfigError(f"Imports should be an array, got {type(value).__name__}")
    out: list[Import] = []
    for entry in value:
        if not isinstance(entry, dict):
            raise ConfigError(f"Import Items should be a map with type entry, got {type(entry).__name__}")
        kind = account = subject = prefix = to = None
        for k, v, line in _block_items(entry, key):
            try:
                if k in ("stream", "service"):
                    if kind is not None:
                        raise ConfigError(f"Detected {k} but already saw a {kind}")
                    if not isinstance(v, dict):
                        raise ConfigError(
                            f"{k.capitalize()} entry should be an account map, got {type(v).__name__}"
                        )
                    src = {str(a).lower(): b for a, b in v.items()}
                    account, subject = src.get("account"), src.get("subject")
                    if not isinstance(account, str) or not isinstance(subject, str):
                        raise ConfigError("Expect an account name and a subject")
                    if not is_valid_subject(subject):
                        raise ConfigError(f'subject "{subject}" is not a valid subject')
                    kind = k
                elif k == "prefix":
                    prefix = _as_str(v, k)
                elif k in ("to", "local_subject"):
                    to = _as_str(v, k)
                elif k in ("share", "allow_trace"):
                    _as_bool(v, k)
                else:
                    raise ConfigError(f"unknown key {key}.{k}")
            except ConfigError as exc:
                raise _at(line, exc) from None
        if kind is None or account is None or subject is None:
            raise ConfigError("Import Items should be a map with type entry")
        if prefix is not None and to is not None:
            raise ConfigError("Stream import can not have a 'prefix' and a 'to' property")
        if prefix is not None and kind == "service":
            raise ConfigError(f"unknown key {key}.prefix")
        local = to or (f"{prefix}.{subject}" if prefix else subject)
        if not is_valid_subject(local):
            raise ConfigError(f'subject "{local}" is not a valid subject')
        out.append(Import(kind, account, subject, local))
    return tuple(out)


def _account_entry(
    name: str, body: dict[str, Any], key: str
) -> tuple[AccountSettings, tuple[User, ...], tuple[NkeyUser, ...]]:
    limits: AccountLimits | None = None
    nkey: str | None = None
    exports: tuple[Export, ...] = ()
    imports: tuple[Import, ...] = ()
    users: tuple[User, ...] = ()
    nkey_users: tuple[NkeyUser, ...] = ()
    defaults: Permissions | None = None
    for k, v, line in _block_items(body, key):
        try:
            if k == "users":
                users, nkey_users = _users(v, f"{key}.{k}")
            elif k == "jetstream":
                limits = _account_jetstream(v, f"{key}.{k}")
            elif k == "default_permissions":
                defaults = _permissions(v, f"{key}.{k}")
            elif k == "exports":
                exports = _exports(v, f"{key}.{k}")
            elif k == "imports":
                imports = _imports(v, f"{key}.{k}")
            elif k == "nkey":
                nkey = _as_str(v, f"{key}.{k}")
                if len(nkey) != 56 or not nkey.startswith("A"):
                    raise ConfigError(f'Not a valid public nkey for an account: "{nkey}"')
            else:
                raise ConfigError(f"unknown key {key}.{k}")
        except ConfigError as exc:
            raise _at(line, exc) from None
    users = tuple(
        replace(u, account=name, permissions=u.permissions if u.permissions is not None else defaults)
        for u in users
    )
    nkey_users = tuple(
        replace(u, account=name, permissions=u.permissions if u.permissions is not None else defaults)
        for u in nkey_users
    )
    _check_packages(None, None, None, users, nkey_users)
    return AccountSettings(name, limits, nkey, exports=exports, imports=imports), users, nkey_users


_ACCOUNT_JS_SIZES: Final = {
    "max_memory": "max_memory", "max_mem": "max_memory", "mem": "max_memory", "memory": "max_memory",
    "max_store": "max_storage", "max_file": "max_storage", "max_disk": "max_storage",
    "store": "max_storage", "disk": "max_storage",
    "max_streams": "max_streams", "streams": "max_streams",
    "max_consumers": "max_consumers", "consumers": "max_consumers",
    "mem_max_stream_bytes": "memory_max_stream_bytes",
    "memory_max_stream_bytes": "memory_max_stream_bytes",
    "disk_max_stream_bytes": "storage_max_stream_bytes",
    "store_max_stream_bytes": "storage_max_stream_bytes",
    "max_ack_pending": "max_ack_pending",
}


def _account_jetstream(value: object, key: str) -> AccountLimits | None:
    """An account's ``jetstream``: true/false, "enabled"/"disabled" or a limits block."""
    if isinstance(value, bool):
        return AccountLimits() if value else None
    if isinstance(value, str):
        low = value.lower()
        if low in ("enabled", "enable"):
            return AccountLimits()
        if low in ("disabled", "disable"):
            return None
        raise ConfigError(f"Expected 'enabled' or 'disabled' for string value, got '{value}'")
    if not isinstance(value, dict):
        raise ConfigError(
            f"Expected map, bool or string to define JetStream, got {type(value).__name__}"
        )
    out: dict[str, Any] = {}
    for k, v, line in _block_items(value, key):
        try:
            if k in _ACCOUNT_JS_SIZES:
                try:
                    out[_ACCOUNT_JS_SIZES[k]] = parse_size(v, k)
                except ConfigError:
                    raise ConfigError(f'Expected a parseable size for "{k}", got {v}') from None
            elif k in ("max_bytes_required", "max_stream_bytes", "max_bytes"):
                if not isinstance(v, bool):
                    raise ConfigError(f'Expected a parseable bool for "{k}", got {v}')
                out["max_bytes_required"] = v
            elif k == "cluster_traffic":
                if v not in ("system", "owner", ""):
                    raise ConfigError(f'Expected \'system\' or \'owner\' string value for "{k}", got {v}')
            else:
                raise ConfigError(f"unknown key {key}.{k}")
        except ConfigError as exc:
            raise _at(line, exc) from None
    return AccountLimits(**out)


def _with_account_users(
    auth: AuthSettings, users: tuple[User, ...], nkey_users: tuple[NkeyUser, ...]
) -> AuthSettings:
    """The authorization block's users plus the accounts' (names unique across both)."""
    if users or nkey_users:
        if auth.user is not None:
            raise ConfigError("Can not have a single user/pass and accounts")
        if auth.token is not None:
            raise ConfigError("Can not have a token and accounts")
    seen = {u.name for u in auth.users} | {u.public_key for u in auth.nkey_users}
    for u in users:
        if u.name in seen:
            raise ConfigError(f'Duplicate user "{u.name}" detected')
        seen.add(u.name)
    for k in nkey_users:
        if k.public_key in seen:
            raise ConfigError(f'Duplicate nkey "{k.public_key}" detected')
        seen.add(k.public_key)
    return replace(auth, users=auth.users + users, nkey_users=auth.nkey_users + nkey_users)


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


_JS_ON: Final = ("enable", "enabled")
_JS_OFF: Final = ("disable", "disabled")


def _jetstream_block(value: object, key: str, base: JetStreamSettings) -> JetStreamSettings:
    """``jetstream: true|enabled|disabled`` or a block; as nats-server, the entry
    turns JetStream on unless it says otherwise (``enabled: false``)."""
    if isinstance(value, bool):
        return replace(base, enabled=value)
    if isinstance(value, str):
        if value.lower() not in _JS_ON + _JS_OFF:
            raise ConfigError(f"{key}: expected 'enabled' or 'disabled' for string value, got {value!r}")
        return replace(base, enabled=value.lower() in _JS_ON)
    items = _block_items(value, key)
    out: dict[str, Any] = {"enabled": True}
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
                out["enabled"] = _as_bool(v, name)
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
