"""The settings model: `ServerConfig` and the frozen dataclasses it holds.

A `ServerConfig` is built from its defaults, then a config file (the
loader), then command-line flags (`jetstream_server.__main__`), or directly
in Python (`EmbeddedServer(**fields)`). Every settings class is a frozen,
slotted dataclass; a change is a new object (`dataclasses.replace`,
`ServerConfig.with_changes`).

`ServerConfig.validate` makes the cross-field checks nats-server makes
(``max_payload`` against ``max_pending``, the lame duck periods, the
``no_auth_user``, the system account) and raises `ConfigError` with
nats-server's messages. The model knows nothing of the file syntax or the
blocks that fill it in.

`JetStreamSettings` (and its `JetStreamLimits`) is what the JetStream
engine is started with; `config.blocks.jetstream` is the one place that
builds it from a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Final

from jetstream_server.config.errors import ConfigError
from jetstream_server.core.account_limits import AccountLimits
from jetstream_server.core.auth import (
    GLOBAL_ACCOUNT,
    Authenticator,
    NkeyUser,
    StaticAuth,
    User,
    UsersAuth,
)
from jetstream_server.core.gotime import NS_PER_SECOND, format_duration
from jetstream_server.core.jwt_auth import JwtAccount, JwtAuth
from jetstream_server.core.protocol import MAX_CONTROL_LINE_SIZE, MAX_PAYLOAD_SIZE
from jetstream_server.core.session import (
    DEFAULT_MAX_PENDING,
    DEFAULT_MAX_PINGS_OUT,
    SessionSettings,
)

DEFAULT_PORT: Final = 4222
DEFAULT_HOST: Final = "0.0.0.0"
DEFAULT_PING_INTERVAL_S: Final = 120.0
DEFAULT_WRITE_DEADLINE_S: Final = 10.0
DEFAULT_AUTH_TIMEOUT_S: Final = 2.0
DEFAULT_MAX_CONNECTIONS: Final = 64 * 1024
DEFAULT_LAME_DUCK_DURATION_S: Final = 120.0
DEFAULT_LAME_DUCK_GRACE_PERIOD_S: Final = 10.0
MIN_LAME_DUCK_DURATION_S: Final = 30.0


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
                f"lame duck grace period ({format_duration(round(self.lame_duck_grace_period_s * NS_PER_SECOND))}) should "
                "be strictly lower than lame duck duration "
                f"({format_duration(round(self.lame_duck_duration_s * NS_PER_SECOND))})"
            )
        _check_no_auth_user(self.auth)
        names = {a.name for a in self.accounts}
        if self.system_account and self.system_account not in names | {DEFAULT_SYSTEM_ACCOUNT}:
            raise ConfigError("error resolving system account: account missing")
        if self.auth.operator is not None and self.jetstream.enabled and not self.system_account_name:
            # JetStream's internal subscriptions live in the system account
            raise ConfigError(
                "Can't start JetStream: setting up internal jetstream subscriptions failed: "
                "system account not setup"
            )
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
