"""The `jetstream` command: natscli's command tree and its one-line errors.

Every failure the user can cause (an unknown stream, a bad flag value, a server that is
down, a closed stdin while a question is asked) ends as one line on stderr,
`jetstream: error: <what went wrong>`, and exit status 1, as natscli's `nats: error: ...`.
Interrupting a long-running command (`sub`, `reply`, `kv watch`) exits with 130 quietly.
"""

from __future__ import annotations

import sys

import click
from nats.errors import Error as NatsError

from . import __version__
from .commands import account, consumer, dashboard, kv, messaging, obj, server, stream
from .errors import CliError
from .session import AliasGroup, connection_options


@click.group(cls=AliasGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="jetstream")
@connection_options(root=True)
def cli() -> None:
    """NATS Utility: manage JetStream streams, consumers, Key-Value and Object stores on any
    NATS server, with the verbs and flags of the `nats` CLI."""


for module in (stream, consumer, messaging, kv, obj, account, server, dashboard):
    module.register(cli)
# natscli's aliases of the top-level commands.
cli.aliases = {"str": "stream", "st": "stream", "s": "stream", "con": "consumer", "c": "consumer",
               "obs": "consumer", "publish": "pub", "subscribe": "sub", "request": "req",
               "obj": "object", "a": "account"}


def main(argv: list[str] | None = None) -> None:
    try:
        # Without standalone mode click returns the status of `ctx.exit(status)`.
        status = cli.main(args=argv, prog_name="jetstream", standalone_mode=False)
        sys.exit(status if isinstance(status, int) else 0)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.NoArgsIsHelpError as exc:
        # A group without its command: show what it offers, as natscli does.
        click.echo(exc.format_message(), err=True)
        sys.exit(2)
    except click.Abort:
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except click.ClickException as exc:
        click.echo(f"jetstream: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code if exc.exit_code else 1)
    except (CliError, NatsError, OSError) as exc:
        message = str(exc) or type(exc).__name__
        click.echo(f"jetstream: error: {message}", err=True)
        sys.exit(1)
