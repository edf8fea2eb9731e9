"""The verb groups of the `jetstream` command, one package or module each, each with
`register(cli)` that wires its commands into the root group. `REGISTRARS` is what `app`
registers: a new group (a new module here with its own `register`) is one more entry.
"""

from __future__ import annotations

from collections.abc import Callable

import click

from . import account, consumer, dashboard, kv, messaging, obj, server, stream

REGISTRARS: tuple[Callable[[click.Group], None], ...] = (
    stream.register, consumer.register, messaging.register, kv.register, obj.register,
    account.register, server.register, dashboard.register,
)
