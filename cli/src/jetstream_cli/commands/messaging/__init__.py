"""`jetstream pub | sub | req | reply`: natscli's core NATS tools, top-level commands of the
root group.

One module per verb: `pub`, `sub` (with `stream_sub` for subscriptions that read a stream),
`request` (`req`), `reply`; `bodies` holds what `pub` and `req` share (stdin, templates).
`register()` only wires the commands into the root group.
"""

from __future__ import annotations

import click

from . import pub, reply, request, sub

COMMANDS: tuple[click.Command, ...] = (pub.pub, sub.sub, request.req, reply.reply)


def register(cli: click.Group) -> None:
    for command in COMMANDS:
        cli.add_command(command)
