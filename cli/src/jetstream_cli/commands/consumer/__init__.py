"""`jetstream consumer ...`: natscli's consumer verbs (add, ls, info, state, edit, rm, next,
report) with its flags, questions and output.

One module per job: `manage` (add, edit, ls, info, state, rm), `pull` (`next`: the pull),
`report`; beside them `config` builds a configuration from flags and questions, `flags`
declares the flags add and edit share, `show` renders a consumer's information, `lookup`
finds the stream and consumer a command names. `register()` only wires the verbs into the
`consumer` group (natscli's aliases included) and the group into the root.
"""

from __future__ import annotations

import click

from ...session import alias_group
from . import manage, pull, report

VERBS: tuple[click.Command, ...] = (
    manage.add, manage.edit, manage.ls, manage.info, manage.state, manage.rm, pull.next_,
    report.report,
)


@alias_group("consumer", {"create": "add", "new": "add", "list": "ls", "nfo": "info",
                          "update": "edit", "delete": "rm", "del": "rm"})
@click.option("-a", "--all", "show_all", is_flag=True,
              help="Operate on all streams including system ones")
@click.pass_context
def consumer(ctx: click.Context, show_all: bool) -> None:
    """JetStream consumer management"""
    ctx.meta["consumer.all"] = show_all


def register(cli: click.Group) -> None:
    for verb in VERBS:
        consumer.add_command(verb)
    cli.add_command(consumer)
