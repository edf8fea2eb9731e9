"""Connection settings (natscli's context flags) and connecting with nats-py.

Flags: `-s/--server` (also `NATS_URL`; comma-separated URLs; default
nats://127.0.0.1:4222), `--user` (a user without `--password` is a token, as in natscli),
`--password`, `--token`, `--creds` (a .creds file; needs the nkeys package),
`--tlscert/--tlskey/--tlsca`, `--timeout` (default 5s: connecting and every request).
They are accepted before the command (`jetstream -s URL stream ls`) and after it
(`jetstream stream ls -s URL`); a value given after the command wins.

`connect()` fails fast (no reconnect loop) with a `CliError` naming the URL and the cause,
and silences nats-py's own error callbacks so that nothing but that one line is printed.
"""

from __future__ import annotations

import importlib.util
import os
import ssl
from dataclasses import dataclass

import nats
from nats.aio.client import Client
from nats.errors import Error as NatsError

from . import __version__
from .errors import CliError
from .units import NANOS_PER_SECOND

DEFAULT_URL = "nats://127.0.0.1:4222"
DEFAULT_TIMEOUT_NS = 5 * NANOS_PER_SECOND


@dataclass(frozen=True, slots=True)
class ConnectionOptions:
    servers: str = DEFAULT_URL
    user: str | None = None
    password: str | None = None
    token: str | None = None
    creds: str | None = None
    tlscert: str | None = None
    tlskey: str | None = None
    tlsca: str | None = None
    timeout_ns: int = DEFAULT_TIMEOUT_NS

    @property
    def timeout(self) -> float:
        """The request timeout in seconds."""
        return self.timeout_ns / NANOS_PER_SECOND

    def server_list(self) -> list[str]:
        return [s.strip() for s in self.servers.split(",") if s.strip()]


def _tls_context(opts: ConnectionOptions) -> ssl.SSLContext | None:
    if not (opts.tlscert or opts.tlskey or opts.tlsca):
        return None
    for flag, path in (("--tlscert", opts.tlscert), ("--tlskey", opts.tlskey),
                       ("--tlsca", opts.tlsca)):
        if path is not None and not os.path.isfile(path):
            raise CliError(f"{flag}: no such file {path!r}")
    if bool(opts.tlscert) != bool(opts.tlskey):
        raise CliError("--tlscert and --tlskey must be given together")
    try:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=opts.tlsca)
        if opts.tlscert and opts.tlskey:
            context.load_cert_chain(opts.tlscert, opts.tlskey)
    except (ssl.SSLError, OSError) as exc:
        raise CliError(f"could not load the TLS files: {exc}") from exc
    return context


async def _quiet(*_args: object) -> None:
    """nats-py callbacks: the CLI reports failures itself, once."""


async def connect(opts: ConnectionOptions) -> Client:
    """A connected nats-py client, or `CliError` naming the server and the cause."""
    kwargs: dict[str, object] = {}
    if opts.user and opts.password is None and opts.token is None:
        kwargs["token"] = opts.user  # natscli: "Username or Token"
    elif opts.user:
        kwargs["user"] = opts.user
        kwargs["password"] = opts.password or ""
    if opts.token:
        kwargs["token"] = opts.token
    if opts.creds:
        if not os.path.isfile(opts.creds):
            raise CliError(f"--creds: no such file {opts.creds!r}")
        if importlib.util.find_spec("nkeys") is None:
            raise CliError("--creds needs the nkeys package: pip install 'jetstream-cli[nkeys]'")
        kwargs["user_credentials"] = opts.creds
    tls = _tls_context(opts)
    if tls is not None:
        kwargs["tls"] = tls
    servers = opts.server_list()
    if not servers:
        raise CliError("no server URL given (--server or NATS_URL)")
    failures: list[BaseException] = []

    async def remember(exc: Exception) -> None:
        failures.append(exc)

    try:
        return await nats.connect(
            servers,
            name=f"JetStream CLI Version {__version__}",
            connect_timeout=max(1, int(opts.timeout)),
            allow_reconnect=False,
            # nats-py treats 0 as "retry forever" on the first connect: 1 means one retry.
            max_reconnect_attempts=1,
            reconnect_time_wait=0.1,
            error_cb=remember,
            disconnected_cb=_quiet,
            closed_cb=_quiet,
            **kwargs,  # type: ignore[arg-type]
        )
    except (NatsError, OSError, TimeoutError, ssl.SSLError) as exc:
        cause_exc: BaseException = failures[-1] if failures else exc
        cause = str(cause_exc) or type(cause_exc).__name__
        raise CliError(f"could not connect to {', '.join(servers)}: {cause}") from exc
