"""Connection options shared by every part of the data source.

Parsed once on the driver (with the read or write options, or alone by
`ConnectionOptions.from_options`) into a frozen, picklable
`ConnectionOptions`; executors open their connections from it
(`spark_jetstream.client`). Nothing here holds a socket or reads a
certificate. The options themselves (servers, user, password, token,
credsFile, tls, tlsCaFile, tlsCertFile, tlsKeyFile, connectTimeout) are
declared in `table.py`; this module adds the rules that join them: user and
password together, certificate and key together, TLS implied by a tls:// URL
or any TLS file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from spark_jetstream.options.grammar import NS_PER_S, OptionError
from spark_jetstream.options.table import (
    DEFAULT_SERVERS,
    OPTIONS,
    Option,
    ParsedOptions,
    Scope,
    parse_options,
)

CONNECTION_OPTIONS: Final[tuple[Option, ...]] = tuple(o for o in OPTIONS if o.applies == Scope.ALL)


@dataclass(frozen=True)
class ConnectionOptions:
    servers: tuple[str, ...] = (DEFAULT_SERVERS,)
    user: str | None = None
    password: str | None = None
    token: str | None = None
    creds_file: str | None = None
    tls: bool = False
    tls_ca_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    connect_timeout_s: float = 10.0

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
        servers: tuple[str, ...] = values["servers"]
        tls = (
            values["tls"]
            or values["tlsCaFile"] is not None
            or values["tlsCertFile"] is not None
            or any(s.startswith("tls://") for s in servers)
        )
        return cls(
            servers=servers,
            user=values["user"],
            password=values["password"],
            token=values["token"],
            creds_file=values["credsFile"],
            tls=bool(tls),
            tls_ca_file=values["tlsCaFile"],
            tls_cert_file=values["tlsCertFile"],
            tls_key_file=values["tlsKeyFile"],
            connect_timeout_s=values["connectTimeout"] / NS_PER_S,
        )
