"""The key verbs of `kv`: `put` (a value from the argument or stdin), `get` (natscli's
`BUCKET > KEY revision: N created @ TIME` and the value, or `--raw` bytes), `del` (a key, or
the whole bucket when no key is named; asks unless `-f`), `history` (every revision of a key
in natscli's table)."""

from __future__ import annotations

import sys

import click
from nats.js.errors import KeyDeletedError, KeyNotFoundError
from nats.js.errors import NotFoundError as JsNotFoundError

from ...errors import CliError
from ...prompts import confirm
from ...render import Table
from ...session import Session, connection_options, out, run
from ...units import parse_time
from .lookup import load_bucket
from .show import OPS, entry_time, printable


def _value_arg(value: str | None) -> bytes:
    if value is not None:
        return value.encode()
    if sys.stdin.isatty():
        return b""
    return sys.stdin.buffer.read()


@click.command("put")
@click.argument("bucket")
@click.argument("key")
@click.argument("value", required=False)
@connection_options()
@click.pass_context
def put(ctx: click.Context, bucket: str, key: str, value: str | None) -> None:
    """Puts a value into a key"""
    data = _value_arg(value)
    run(ctx, lambda s: put_value(s, bucket, key, data, value or ""))


async def put_value(s: Session, bucket: str, key: str, data: bytes, shown: str) -> None:
    store = await load_bucket(s, bucket)
    await store.put(key, data)
    out(shown)


@click.command("get")
@click.argument("bucket")
@click.argument("key")
@click.option("--revision", type=int, default=0, help="Gets a specific revision")
@click.option("--raw", is_flag=True, help="Show only the value string")
@connection_options()
@click.pass_context
def get(ctx: click.Context, bucket: str, key: str, revision: int, raw: bool) -> None:
    """Gets a value for a key"""
    run(ctx, lambda s: get_value(s, bucket, key, revision, raw))


async def get_value(s: Session, bucket: str, key: str, revision: int, raw: bool) -> None:
    store = await load_bucket(s, bucket)
    try:
        entry = await store.get(key, revision=revision or None)
    except KeyDeletedError as exc:
        raise CliError(f"key {key!r} was deleted") from exc
    except KeyNotFoundError as exc:
        raise CliError(f"key {key!r} not found in bucket {bucket!r}") from exc
    value = entry.value or b""
    if raw:
        sys.stdout.buffer.write(value)
        sys.stdout.flush()
        return
    created = await _created(s, bucket, entry.revision)
    out(f"{bucket} > {key} revision: {entry.revision} created @ {created}")
    out()
    shown = printable(value)
    if len(shown) > 120:
        out(f"Showing first 120 bytes of {len(shown):,}, use --raw for full data\n")
        shown = shown[:120]
    out(shown)
    out()


async def _created(s: Session, bucket: str, revision: int | None) -> str:
    if not revision:
        return ""
    message = await s.js.msg_get(f"KV_{bucket}", {"seq": revision})
    moment = parse_time(message.get("time"))
    return moment.local() if moment else ""


@click.command("del")
@click.argument("bucket")
@click.argument("key", required=False)
@click.option("-f", "--force", is_flag=True, help="Act without confirmation")
@connection_options()
@click.pass_context
def delete(ctx: click.Context, bucket: str, key: str | None, force: bool) -> None:
    """Deletes a key or the entire bucket"""
    if key is None:
        run(ctx, lambda s: delete_bucket(s, bucket, force))
    else:
        run(ctx, lambda s: delete_key(s, bucket, key, force))


async def delete_bucket(s: Session, bucket: str, force: bool) -> None:
    await load_bucket(s, bucket)
    if not force and not confirm(f"Delete bucket {bucket}?", False):
        out("Skipping delete")
        return
    await s.nc.jetstream(timeout=s.opts.timeout).delete_key_value(bucket)


async def delete_key(s: Session, bucket: str, key: str, force: bool) -> None:
    store = await load_bucket(s, bucket)
    if not force and not confirm(f"Delete key {bucket} > {key}?", False):
        out("Skipping delete")
        return
    await store.delete(key)


@click.command("history")
@click.argument("bucket")
@click.argument("key")
@connection_options()
@click.pass_context
def history_(ctx: click.Context, bucket: str, key: str) -> None:
    """Shows the full history for a key"""
    run(ctx, lambda s: show_history(s, bucket, key))


async def show_history(s: Session, bucket: str, key: str) -> None:
    store = await load_bucket(s, bucket)
    try:
        entries = await store.history(key)
    except (KeyNotFoundError, JsNotFoundError) as exc:
        raise CliError(f"key {key!r} not found in bucket {bucket!r}") from exc
    table = Table(f"History for {bucket} > {key}",
                  ["Key", "Revision", "Op", "Created", "Length", "Value"])
    for entry in entries:
        value = printable(entry.value or b"")
        table.add_row(entry.key, entry.revision, OPS.get(entry.operation, "PUT"),
                      entry_time(entry.created), len(entry.value or b""),
                      value if len(value) <= 40 else value[:15] + "..." + value[-15:])
    out(table.render())
    out()
