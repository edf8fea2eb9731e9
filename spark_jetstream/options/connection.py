"""Connection options shared by every part of the data source.

Parsed once on the driver (with the read or write options, or alone by
`ConnectionOptions.from_options`) into a frozen, picklable
`ConnectionOptions`; executors open their connections from it
(`spark_jetstream.client`). Nothing here holds a socket or reads a
certificate. The options themselves are declared in `table.py`; this module
adds the rules that join them:
- credentials: user and password together; one way to authenticate with
  keys (credsFile, or nkeySeedFile with an optional userJwt); userJwt needs
  nkeySeedFile;
- TLS: certificate and key together; TLS implied by a tls:// URL or any TLS
  file;
- subjects: `domain` and `apiPrefix` exclude each other; both end in the one
  JetStream API prefix (`api_prefix`, `$JS.API` by default) every API subject
  is built from;
- retries: the backoff never exceeds its maximum, and one attempt's request
  timeout is not longer than the whole call may take.

Secrets never leave this object in text: `repr`/`str` show `***` for the
password, the token, the user JWT and the password or token inside a server
URL (`redact_url`), and `display_servers` is the server list for messages.
`pool_key` is what identifies a connection (servers, credentials, TLS, inbox
prefix, JetStream API prefix): two option sets with the same key may share a
pooled connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Final
from urllib.parse import unquote

from spark_jetstream.options.grammar import NS_PER_S, OptionError
from spark_jetstream.options.secrets import REDACTED, redact_url
from spark_jetstream.options.table import (
    DEFAULT_SERVERS,
    OPTIONS,
    Option,
    ParsedOptions,
    Scope,
    parse_options,
)

CONNECTION_OPTIONS: Final[tuple[Option, ...]] = tuple(o for o in OPTIONS if o.applies == Scope.ALL)
DEFAULT_API_PREFIX: Final = "$JS.API"
DEFAULT_INBOX_PREFIX: Final = "_INBOX"
_SECRET_FIELDS: Final = frozenset({"password", "token", "user_jwt"})


@dataclass(frozen=True)
class ConnectionOptions:
    servers: tuple[str, ...] = (DEFAULT_SERVERS,)
    user: str | None = None
    password: str | None = None
    token: str | None = None
    creds_file: str | None = None
    nkey_seed_file: str | None = None
    user_jwt: str | None = None
    tls: bool = False
    tls_ca_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    connect_timeout_s: float = 10.0
    inbox_prefix: str = DEFAULT_INBOX_PREFIX
    domain: str | None = None
    api_prefix: str = DEFAULT_API_PREFIX
    request_timeout_s: float = 10.0
    retry_timeout_s: float = 60.0
    retry_backoff_s: float = 0.1
    retry_backoff_max_s: float = 2.0

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> ConnectionOptions:
        """From connection options only (any other option is refused, naming it)."""
        return cls.from_parsed(parse_options(options, Scope.ALL, table=CONNECTION_OPTIONS))

    @classmethod
    def from_parsed(cls, values: ParsedOptions) -> ConnectionOptions:
        if (values["user"] is None) != (values["password"] is None):
            raise OptionError("options user and password must be given together")
        if (values["tlsCertFile"] is None) != (values["tlsKeyFile"] is None):
            raise OptionError("options tlsCertFile and tlsKeyFile must be given together")
        if values["credsFile"] is not None and values["nkeySeedFile"] is not None:
            raise OptionError(
                "options credsFile and nkeySeedFile exclude each other: a .creds file holds the "
                "user JWT and its seed (or give nkeySeedFile, with userJwt for JWT authentication)"
            )
        if values["userJwt"] is not None and values["nkeySeedFile"] is None:
            raise OptionError("option userJwt needs nkeySeedFile (the seed that signs the server's nonce)")
        if values["domain"] is not None and values["apiPrefix"] is not None:
            raise OptionError(
                "options domain and apiPrefix exclude each other: domain X means apiPrefix $JS.X.API"
            )
        backoff, backoff_max = values["retryBackoff"], values["retryBackoffMax"]
        if backoff > backoff_max:
            raise OptionError(
                f"option retryBackoff ({backoff / NS_PER_S:g}s) is larger than retryBackoffMax "
                f"({backoff_max / NS_PER_S:g}s)"
            )
        servers: tuple[str, ...] = values["servers"]
        tls = (
            values["tls"]
            or values["tlsCaFile"] is not None
            or values["tlsCertFile"] is not None
            or any(s.startswith("tls://") for s in servers)
        )
        domain = values["domain"]
        if domain is not None:
            api_prefix = f"$JS.{domain}.API"
        else:
            api_prefix = values["apiPrefix"] or DEFAULT_API_PREFIX
        return cls(
            servers=servers,
            user=values["user"],
            password=values["password"],
            token=values["token"],
            creds_file=values["credsFile"],
            nkey_seed_file=values["nkeySeedFile"],
            user_jwt=values["userJwt"],
            tls=bool(tls),
            tls_ca_file=values["tlsCaFile"],
            tls_cert_file=values["tlsCertFile"],
            tls_key_file=values["tlsKeyFile"],
            connect_timeout_s=values["connectTimeout"] / NS_PER_S,
            inbox_prefix=values["inboxPrefix"],
            domain=domain,
            api_prefix=api_prefix,
            request_timeout_s=values["requestTimeout"] / NS_PER_S,
            retry_timeout_s=values["retryTimeout"] / NS_PER_S,
            retry_backoff_s=backoff / NS_PER_S,
            retry_backoff_max_s=backoff_max / NS_PER_S,
        )

    # -- what may be shown --------------------------------------------------------
    @property
    def display_servers(self) -> str:
        """The server list for messages and logs, secrets redacted."""
        return ", ".join(redact_url(s) for s in self.servers)

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "servers":
                value = tuple(redact_url(s) for s in value)
            elif f.name in _SECRET_FIELDS and value is not None:
                value = REDACTED
            shown.append(f"{f.name}={value!r}")
        return f"ConnectionOptions({', '.join(shown)})"

    __str__ = __repr__

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every secret these options hold (for `secrets.redact_text`): passwords, tokens, the JWT."""
        found = [s for s in (self.password, self.token, self.user_jwt) if s]
        for url in self.servers:
            userinfo, at, _ = url.partition("://")[2].partition("/")[0].rpartition("@")
            if at:
                user, colon, password = userinfo.partition(":")
                found.append(password if colon else user)
                found.append(unquote(password if colon else user))
        return tuple(s for s in dict.fromkeys(found) if s)

    # -- connection identity --------------------------------------------------------
    @property
    def pool_key(self) -> tuple[Any, ...]:
        """What makes two connections interchangeable: same servers, credentials, TLS and subjects."""
        return (
            self.servers,
            self.user,
            self.password,
            self.token,
            self.creds_file,
            self.nkey_seed_file,
            self.user_jwt,
            self.tls,
            self.tls_ca_file,
            self.tls_cert_file,
            self.tls_key_file,
            self.inbox_prefix,
            self.api_prefix,
        )
