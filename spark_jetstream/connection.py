"""Connection options shared by every part of the data source.

Parsed once on the driver from the Spark options (case-insensitive keys, as
Spark passes them) into a frozen, picklable `ConnectionOptions`; executors
rebuild their connections from it. Nothing here holds a socket.

Options: servers (comma-separated, default nats://127.0.0.1:4222), user,
password, token, credsFile, tls (true/false), tlsCaFile, tlsCertFile,
tlsKeyFile, connectTimeout (seconds, default 10).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_SERVERS = "nats://127.0.0.1:4222"
CONNECTION_OPTION_NAMES = (
    "servers",
    "user",
    "password",
    "token",
    "credsfile",
    "tls",
    "tlscafile",
    "tlscertfile",
    "tlskeyfile",
    "connecttimeout",
)


class OptionError(ValueError):
    """An invalid data source option; the message names the option."""


def lower_keys(options: Mapping[str, str]) -> dict[str, str]:
    """Spark option maps are case-insensitive; normalise to lower case."""
    return {str(k).lower(): str(v) for k, v in options.items()}


def parse_bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name.lower())
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name}: expected true or false, got {raw!r}")


def parse_float(options: Mapping[str, str], name: str, default: float, minimum: float = 0.0) -> float:
    raw = options.get(name.lower())
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise OptionError(f"option {name}: expected a number, got {raw!r}") from None
    if value < minimum:
        raise OptionError(f"option {name}: must be >= {minimum}, got {raw!r}")
    return value


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
    def from_options(cls, options: Mapping[str, str]) -> ConnectionOptions:
        opts = lower_keys(options)
        servers = tuple(s.strip() for s in opts.get("servers", DEFAULT_SERVERS).split(",") if s.strip())
        if not servers:
            raise OptionError("option servers: no server URL given")
        for url in servers:
            if "://" not in url:
                raise OptionError(
                    f"option servers: {url!r} is not a URL (expected nats://host:port or tls://host:port)"
                )
        if (opts.get("user") is None) != (opts.get("password") is None):
            raise OptionError("options user and password must be given together")
        for name in ("credsfile", "tlscafile", "tlscertfile", "tlskeyfile"):
            path = opts.get(name)
            if path and not Path(path).is_file():
                raise OptionError(f"option {name}: file not found: {path}")
        if (opts.get("tlscertfile") is None) != (opts.get("tlskeyfile") is None):
            raise OptionError("options tlsCertFile and tlsKeyFile must be given together")
        tls = parse_bool(opts, "tls", default=False) or any(
            opts.get(n) for n in ("tlscafile", "tlscertfile")
        ) or any(s.startswith("tls://") for s in servers)
        return cls(
            servers=servers,
            user=opts.get("user"),
            password=opts.get("password"),
            token=opts.get("token"),
            creds_file=opts.get("credsfile"),
            tls=tls,
            tls_ca_file=opts.get("tlscafile"),
            tls_cert_file=opts.get("tlscertfile"),
            tls_key_file=opts.get("tlskeyfile"),
            connect_timeout_s=parse_float(opts, "connectTimeout", 10.0, minimum=0.1),
        )

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.tls_ca_file)
        if self.tls_cert_file and self.tls_key_file:
            ctx.load_cert_chain(self.tls_cert_file, self.tls_key_file)
        return ctx

    def nats_py_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `nats.connect` (nats-py)."""
        kwargs: dict[str, Any] = {
            "servers": list(self.servers),
            "connect_timeout": self.connect_timeout_s,
            "max_reconnect_attempts": 3,
            "allow_reconnect": True,
        }
        if self.user is not None:
            kwargs["user"] = self.user
            kwargs["password"] = self.password
        if self.token is not None:
            kwargs["token"] = self.token
        if self.creds_file is not None:
            kwargs["user_credentials"] = self.creds_file
        tls = self.ssl_context()
        if tls is not None:
            kwargs["tls"] = tls
        return kwargs
