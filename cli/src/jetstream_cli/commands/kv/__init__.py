"""`jetstream kv ...`: natscli's Key-Value verbs (add, put, get, del, watch, ls, info, history)
on nats-py's KV client, with natscli's flags and output.

One module per job: `buckets` (add, ls, info), `keys` (put, get, del, history), `watch`;
beside them `show` renders a bucket's status and its entries, `lookup` opens the bucket a
command names. `register()` only wires the verbs into the `kv` group (natscli's aliases
included) and the group into the root.
"""

from __future__ import annotations

import click

from ...session import alias_group
from . import buckets, keys, watch

VERBS: tuple[click.Command, ...] = (
    buckets.add, keys.put, keys.get, keys.delete, watch.watch, buckets.ls, buckets.info,
    keys.history_,
)


@alias_group("kv", {"new": "add", "rm": "del", "list": "ls", "view": "info", "status": "info"})
def kv() -> None:
    """Interacts with a JetStream based Key-Value store"""


def register(cli: click.Group) -> None:
    for verb in VERBS:
        kv.add_command(verb)
    cli.add_command(kv)
