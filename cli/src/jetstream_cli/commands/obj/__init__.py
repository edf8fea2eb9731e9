"""`jetstream object ...`: natscli's Object Store verbs (add, put, get, ls, info, del) on
nats-py's object store client, with natscli's flags and output.

One module per job: `buckets` (add, ls, info, del), `transfer` (put, get); beside them `show`
renders a bucket and an object, `lookup` opens the bucket a command names. `register()` only
wires the verbs into the `object` group (natscli's aliases included) and the group into the
root.
"""

from __future__ import annotations

import click

from ...session import alias_group
from . import buckets, transfer

VERBS: tuple[click.Command, ...] = (
    buckets.add, transfer.put, transfer.get, buckets.ls, buckets.info, buckets.delete,
)


@alias_group("object", {"rm": "del", "show": "info", "i": "info"})
def obj() -> None:
    """Interacts with a JetStream based Object store"""


def register(cli: click.Group) -> None:
    for verb in VERBS:
        obj.add_command(verb)
    cli.add_command(obj)
