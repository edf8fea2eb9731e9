"""`jetstream server ...`: natscli's server verbs; today `server check connection | jetstream`
(`checks`, rendering in `result`). `register()` only wires the checks into the `check` group,
`check` into `server` and `server` into the root.
"""

from __future__ import annotations

import click

from ...session import alias_group
from . import checks


@alias_group("server", {})
def server() -> None:
    """Server information"""


@alias_group("check", {"conn": "connection", "js": "jetstream"})
def check() -> None:
    """Health check for NATS servers"""


def register(cli: click.Group) -> None:
    check.add_command(checks.connection)
    check.add_command(checks.jetstream)
    server.add_command(check)
    cli.add_command(server)
