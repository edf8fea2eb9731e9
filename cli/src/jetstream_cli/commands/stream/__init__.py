"""`jetstream stream ...`: natscli's stream verbs (add, ls, info, edit, rm, purge, get, view,
report, backup, restore, state, rmm) with its flags, questions and output.

One module per job: `manage` (add, ls, info, state, edit, rm, purge), `messages` (get, rmm,
view), `report`, `backup` (backup, restore); beside them `config` builds a configuration from
flags and questions, `flags` declares the flags add and edit share, `show` renders a stream's
information, `lookup` finds the stream a command names. `register()` only wires the verbs into
the `stream` group (natscli's aliases included) and the group into the root.
"""

from __future__ import annotations

import click

from ...session import alias_group
from . import backup, manage, messages, report

VERBS: tuple[click.Command, ...] = (
    manage.add, manage.ls, manage.info, manage.state, manage.edit, manage.rm, manage.purge,
    messages.get, messages.rmm, messages.view, report.report, backup.backup, backup.restore,
)


@alias_group("stream", {"create": "add", "new": "add", "list": "ls", "l": "ls", "nfo": "info",
                        "i": "info", "update": "edit", "delete": "rm", "del": "rm",
                        "snapshot": "backup"})
@click.option("-a", "--all", "show_all", is_flag=True,
              help="When listing or selecting streams show all streams including system ones")
@click.pass_context
def stream(ctx: click.Context, show_all: bool) -> None:
    """JetStream stream management"""
    ctx.meta["stream.all"] = show_all


def register(cli: click.Group) -> None:
    for verb in VERBS:
        stream.add_command(verb)
    cli.add_command(stream)
