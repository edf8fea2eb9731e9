"""What every command shares: the context flags, a connected session, logging lines.

`connection_options` adds natscli's context flags to a click command. On the root group
they also read the environment (`NATS_URL`, `NATS_USER`, `NATS_PASSWORD`, `NATS_TOKEN`,
`NATS_CREDS`, `NATS_CERT`, `NATS_KEY`, `NATS_CA`, `NATS_TIMEOUT`); on a command they only
override what was given (so `jetstream stream ls -s URL` works as in natscli, where flags
may follow the command). The values live in the click context's shared `meta`.

`run()` connects, runs one coroutine with a `Session` (connection + JetStream API) and
closes; `log()` prints natscli's `log.Printf` lines (`15:04:05 message`) on stderr.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields
from typing import Any, TypeVar

import click
from nats.aio.client import Client

from .connection import DEFAULT_URL, ConnectionOptions, connect
from .errors import CliError
from .jsapi import JetStreamApi
from .units import parse_duration

_META_KEY = "jetstream_cli.connection"
F = TypeVar("F", bound=Callable[..., Any])

# (flag declarations, field, environment variable, help)
_FLAGS: tuple[tuple[tuple[str, ...], str, str, str], ...] = (
    (("-s", "--server"), "servers", "NATS_URL", "NATS server urls"),
    (("--user",), "user", "NATS_USER", "Username or Token"),
    (("--password",), "password", "NATS_PASSWORD", "Password"),
    (("--token",), "token", "NATS_TOKEN", "Token"),
    (("--creds",), "creds", "NATS_CREDS", "User credentials"),
    (("--tlscert",), "tlscert", "NATS_CERT", "TLS public certificate"),
    (("--tlskey",), "tlskey", "NATS_KEY", "TLS private key"),
    (("--tlsca",), "tlsca", "NATS_CA", "TLS certificate authority chain"),
    (("--timeout",), "timeout", "NATS_TIMEOUT", "Time to wait on responses from NATS"),
)


def _store(field: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        if value is not None:
            ctx.meta.setdefault(_META_KEY, {})[field] = value

    return callback


def connection_options(root: bool = False) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        for decls, field, env, help_text in reversed(_FLAGS):
            func = click.option(
                *decls, field, envvar=env if root else None, default=None,
                expose_value=False, callback=_store(field), help=help_text,
                show_envvar=root, metavar="TIMEOUT" if field == "timeout" else None,
            )(func)
        return func

    return decorate


def options_from(ctx: click.Context) -> ConnectionOptions:
    given = dict(ctx.meta.get(_META_KEY, {}))
    timeout_text = given.pop("timeout", None)
    values: dict[str, Any] = {f.name: given[f.name] for f in fields(ConnectionOptions)
                              if f.name in given}
    values.setdefault("servers", DEFAULT_URL)
    if timeout_text is not None:
        try:
            values["timeout_ns"] = parse_duration(timeout_text)
        except ValueError as exc:
            raise CliError(f"--timeout: {exc}") from exc
        if values["timeout_ns"] <= 0:
            raise CliError("--timeout must be positive")
    return ConnectionOptions(**values)


@dataclass
class Session:
    nc: Client
    js: JetStreamApi
    opts: ConnectionOptions


def run(ctx: click.Context, work: Callable[[Session], Awaitable[int | None]]) -> None:
    """Connect, run `work`, close; a non-zero result becomes the exit status."""
    opts = options_from(ctx)

    async def main() -> int | None:
        nc = await connect(opts)
        try:
            return await work(Session(nc, JetStreamApi(nc, opts.timeout), opts))
        finally:
            if not nc.is_closed:
                await nc.close()

    code = asyncio.run(main())
    if code:
        ctx.exit(code)


class AliasGroup(click.Group):
    """A click group that also answers to natscli's aliases (`stream ls` = `stream list`,
    `pub` = `publish`, `consumer` = `con`, ...), set in `aliases`."""

    aliases: dict[str, str] = {}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        return (command.name if command is not None else name), command, rest


def alias_group(name: str, aliases: dict[str, str],
                **kwargs: Any) -> Callable[[Callable[..., Any]], AliasGroup]:
    """`click.group(name)` whose subcommands answer to `aliases`; a module's `register()`
    adds it to its parent and its commands to it."""
    def decorate(func: Callable[..., Any]) -> AliasGroup:
        group = click.group(name, cls=AliasGroup,
                            context_settings={"help_option_names": ["-h", "--help"]},
                            **kwargs)(func)
        assert isinstance(group, AliasGroup)
        group.aliases = aliases
        return group

    return decorate


def log(message: str) -> None:
    """natscli's `log.Printf` line: local time then the message, on stderr."""
    click.echo(f"{time.strftime('%H:%M:%S')} {message}", err=True)


def out(text: str = "") -> None:
    click.echo(text)
