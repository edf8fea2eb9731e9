"""`kv watch`: natscli's watcher. Runs until interrupted (Ctrl-C, exit status 130), printing
`[2006-01-02 15:04:05] PUT bucket > key: value` (or `DELETE` / `PURGE` without a value) for
each entry, history first with `--history`, only new writes with `--updates`."""

from __future__ import annotations

import asyncio
import sys

import click

from ...session import Session, connection_options, out, run
from .lookup import load_bucket
from .show import OPS, entry_time


@click.command("watch")
@click.argument("bucket")
@click.argument("key", default=">")
@click.option("--history", is_flag=True, help="Includes historic values")
@click.option("--deletes/--no-deletes", default=True, help="Includes deletes in watched values")
@click.option("--updates", is_flag=True, help="Only show new values written")
@connection_options()
@click.pass_context
def watch(ctx: click.Context, bucket: str, key: str, history: bool, deletes: bool,
          updates: bool) -> None:
    """Watch the bucket or a specific key for updated"""
    run(ctx, lambda s: watch_bucket(s, bucket, key, history, deletes, updates))


async def watch_bucket(s: Session, bucket: str, key: str, history: bool, deletes: bool,
                       updates: bool) -> None:
    store = await load_bucket(s, bucket)
    watcher = await store.watch(key, include_history=history, ignore_deletes=not deletes)
    initial = not updates
    try:
        async for entry in watcher:
            if entry is None:
                initial = True
                continue
            if not initial:
                continue
            when = entry_time(entry.created)
            op = OPS.get(entry.operation, str(entry.operation))
            if op == "PUT":
                out(f"[{when}] {op} {bucket} > {entry.key}: "
                    f"{(entry.value or b'').decode('utf-8', 'replace')}")
            else:
                out(f"[{when}] {op} {bucket} > {entry.key}")
            sys.stdout.flush()
    finally:
        await asyncio.shield(watcher.stop())
