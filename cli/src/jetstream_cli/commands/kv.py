"""`jetstream kv ...`: natscli's Key-Value verbs (add, put, get, del, watch, ls, info, history)
on nats-py's KV client, with natscli's flags and output.

A bucket is the stream `KV_<bucket>`; its information is shown from that stream's info.
`kv watch` runs until interrupted (Ctrl-C), printing
`[2006-01-02 15:04:05] PUT bucket > key: value` lines as natscli does.
"""

from __future__ import annotations

import asyncio
import base64
import string
import sys
from datetime import datetime, timezone
from typing import Any

import click
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import (
    BucketNotFoundError,
    KeyDeletedError,
    KeyNotFoundError,
    NoKeysError,
)
from nats.js.errors import NotFoundError as JsNotFoundError
from nats.js.kv import KeyValue

from ..errors import CliError
from ..jsapi import JsonDict
from ..prompts import confirm
from ..render import Columns, Nanos, Table, to_json
from ..session import Session, connection_options, group_with_aliases, out, run
from ..units import NANOS_PER_SECOND, GoTime, ibytes, parse_time
from ._shared import BYTES, DURATION, since_ns

_OPS = {None: "PUT", "DEL": "DELETE", "PURGE": "PURGE"}


def printable(value: bytes) -> str:
    """natscli's Base64IfNotPrintable."""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return base64.b64encode(value).decode()
    if all(ch in string.printable or ch.isprintable() for ch in text):
        return text
    return base64.b64encode(value).decode()


async def load_bucket(s: Session, bucket: str) -> KeyValue:
    try:
        return await s.nc.jetstream(timeout=s.opts.timeout).key_value(bucket)
    except (BucketNotFoundError, JsNotFoundError) as exc:
        raise CliError(f"bucket {bucket!r} not found") from exc


def format_status(info: JsonDict, bucket: str) -> str:
    """natscli's KV `showStatus` for the bucket's stream info."""
    cfg, state = info.get("config") or {}, info.get("state") or {}
    created = parse_time(info.get("created"))
    cols = Columns(f"Information for Key-Value Store Bucket {bucket} created "
                   f"{created.local() if created else ''}")
    cols.title("Configuration")
    cols.row("Bucket Name", bucket)
    cols.row("History Kept", int(cfg.get("max_msgs_per_subject") or 0))
    cols.row("Values Stored", int(state.get("messages") or 0))
    cols.row("Compressed", cfg.get("compression") == "s2")
    marker = int(cfg.get("subject_delete_marker_ttl") or 0)
    cols.row("Per-Key TTL Supported", marker > 0)
    cols.row_if("Limit Marker TTL", Nanos(marker), marker > 0)
    cols.row("Backing Store Kind", "JetStream")
    cols.row_if_not_empty("Description", cfg.get("description"))
    cols.row("Bucket Size", ibytes(int(state.get("bytes") or 0)))
    max_bytes = int(cfg.get("max_bytes", -1))
    cols.row("Maximum Bucket Size", "unlimited" if max_bytes == -1 else ibytes(max_bytes))
    max_size = int(cfg.get("max_msg_size", -1))
    cols.row("Maximum Value Size", "unlimited" if max_size == -1 else ibytes(max_size))
    max_age = int(cfg.get("max_age") or 0)
    cols.row("Maximum Age", "unlimited" if max_age <= 0 else Nanos(max_age))
    cols.row("JetStream Stream", cfg.get("name", ""))
    cols.row("Storage", {"file": "File", "memory": "Memory"}.get(cfg.get("storage", ""), ""))
    republish = cfg.get("republish")
    if republish:
        label = "Republishing Headers" if republish.get("headers_only") else "Republishing"
        cols.row(label, f"{republish.get('src')} to {republish.get('dest')}")
    metadata = {k: v for k, v in (cfg.get("metadata") or {}).items() if not k.startswith("_nats")}
    if metadata:
        cols.title("Metadata")
        cols.map_strings(metadata)
    return cols.render()


async def show_status(s: Session, bucket: str) -> None:
    click.echo(format_status(await s.js.stream_info(f"KV_{bucket}"), bucket), nl=False)


def _value_arg(value: str | None) -> bytes:
    if value is not None:
        return value.encode()
    if sys.stdin.isatty():
        return b""
    return sys.stdin.buffer.read()


def register(cli: click.Group) -> None:
    @group_with_aliases(cli, "kv", {"new": "add", "rm": "del", "list": "ls", "view": "info",
                                     "status": "info"})
    def kv() -> None:
        """Interacts with a JetStream based Key-Value store"""

    @kv.command("add")
    @click.argument("bucket")
    @click.option("--description", help="A description for the bucket")
    @click.option("--history", type=click.IntRange(1, 64), default=1,
                  help="How many historic values to keep per key")
    @click.option("--storage", type=click.Choice(["file", "f", "memory", "m"]),
                  help="Storage backend to use (file, memory)")
    @click.option("--ttl", type=DURATION, default=0, help="How long to keep values for")
    @click.option("--replicas", type=int, default=1, help="How many replicas of the data to store")
    @click.option("--max-value-size", type=BYTES, default=None,
                  help="Maximum size for any single value")
    @click.option("--max-bucket-size", type=BYTES, default=None,
                  help="Maximum size for the bucket")
    @connection_options()
    @click.pass_context
    def add(ctx: click.Context, bucket: str, description: str | None, history: int,
            storage: str | None, ttl: int, replicas: int, max_value_size: int | None,
            max_bucket_size: int | None) -> None:
        """Adds a new KV Store Bucket"""

        async def work(s: Session) -> None:
            config = KeyValueConfig(
                bucket=bucket, description=description, history=history,
                ttl=ttl / NANOS_PER_SECOND if ttl else None,
                max_value_size=max_value_size if max_value_size is not None else None,
                max_bytes=max_bucket_size if max_bucket_size is not None else None,
                storage=StorageType.MEMORY if (storage or "f").startswith("m")
                else StorageType.FILE,
                replicas=replicas)
            try:
                await s.nc.jetstream(timeout=s.opts.timeout).create_key_value(config)
            except ValueError as exc:
                raise CliError(f"invalid bucket {bucket!r}: {exc}") from exc
            await show_status(s, bucket)

        run(ctx, work)

    @kv.command("put")
    @click.argument("bucket")
    @click.argument("key")
    @click.argument("value", required=False)
    @connection_options()
    @click.pass_context
    def put(ctx: click.Context, bucket: str, key: str, value: str | None) -> None:
        """Puts a value into a key"""
        data = _value_arg(value)

        async def work(s: Session) -> None:
            store = await load_bucket(s, bucket)
            await store.put(key, data)
            out(value or "")

        run(ctx, work)

    @kv.command("get")
    @click.argument("bucket")
    @click.argument("key")
    @click.option("--revision", type=int, default=0, help="Gets a specific revision")
    @click.option("--raw", is_flag=True, help="Show only the value string")
    @connection_options()
    @click.pass_context
    def get(ctx: click.Context, bucket: str, key: str, revision: int, raw: bool) -> None:
        """Gets a value for a key"""

        async def work(s: Session) -> None:
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

        run(ctx, work)

    @kv.command("del")
    @click.argument("bucket")
    @click.argument("key", required=False)
    @click.option("-f", "--force", is_flag=True, help="Act without confirmation")
    @connection_options()
    @click.pass_context
    def delete(ctx: click.Context, bucket: str, key: str | None, force: bool) -> None:
        """Deletes a key or the entire bucket"""
        async def work(s: Session) -> None:
            await load_bucket(s, bucket)
            if key is None:
                if not force and not confirm(f"Delete bucket {bucket}?", False):
                    out("Skipping delete")
                    return
                await s.nc.jetstream(timeout=s.opts.timeout).delete_key_value(bucket)
                return
            store = await load_bucket(s, bucket)
            if not force and not confirm(f"Delete key {bucket} > {key}?", False):
                out("Skipping delete")
                return
            await store.delete(key)

        run(ctx, work)

    @kv.command("watch")
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

        async def work(s: Session) -> None:
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
                    created = GoTime.parse(_iso(entry.created)) if entry.created else None
                    when = created.local() if created else ""
                    op = _OPS.get(entry.operation, str(entry.operation))
                    if op == "PUT":
                        out(f"[{when}] {op} {bucket} > {entry.key}: "
                            f"{(entry.value or b'').decode('utf-8', 'replace')}")
                    else:
                        out(f"[{when}] {op} {bucket} > {entry.key}")
                    sys.stdout.flush()
            finally:
                await asyncio.shield(watcher.stop())

        run(ctx, work)

    @kv.command("ls")
    @click.argument("bucket", required=False)
    @click.option("-n", "--names", is_flag=True, help="Show just the bucket names")
    @click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
    @connection_options()
    @click.pass_context
    def ls(ctx: click.Context, bucket: str | None, names: bool, as_json: bool) -> None:
        """List available buckets or the keys in a bucket"""

        async def work(s: Session) -> None:
            if bucket:
                store = await load_bucket(s, bucket)
                try:
                    keys = await store.keys()
                except (JsNotFoundError, NoKeysError):
                    keys = []
                if as_json:
                    out(to_json(keys))
                elif keys:
                    for k in keys:
                        out(k)
                elif not names:
                    out("No keys found in bucket")
                return
            infos = [i for i in await s.js.stream_list() if i["config"]["name"].startswith("KV_")]
            buckets = [i["config"]["name"][3:] for i in infos]
            if as_json:
                out(to_json(buckets))
                return
            if names:
                for name in buckets:
                    out(name)
                return
            if not infos:
                out("No Key-Value buckets found")
                return
            infos.sort(key=lambda i: int((i.get("state") or {}).get("bytes") or 0))
            table = Table("Key-Value Buckets", ["Bucket", "Description", "Created", "Size",
                                                "Values", "Last Update"])
            for info in infos:
                cfg, state = info["config"], info.get("state") or {}
                created = parse_time(info.get("created"))
                table.add_row(cfg["name"][3:], cfg.get("description", ""),
                              created.local() if created else "",
                              ibytes(int(state.get("bytes") or 0)),
                              f"{int(state.get('messages') or 0):,}",
                              Nanos(since_ns(info, state.get("last_ts"))))
            out(table.render())
            out()

        run(ctx, work)

    @kv.command("info")
    @click.argument("bucket")
    @connection_options()
    @click.pass_context
    def info(ctx: click.Context, bucket: str) -> None:
        """View the status of a KV store"""

        async def work(s: Session) -> None:
            await load_bucket(s, bucket)
            await show_status(s, bucket)

        run(ctx, work)

    @kv.command("history")
    @click.argument("bucket")
    @click.argument("key")
    @connection_options()
    @click.pass_context
    def history_(ctx: click.Context, bucket: str, key: str) -> None:
        """Shows the full history for a key"""

        async def work(s: Session) -> None:
            store = await load_bucket(s, bucket)
            try:
                entries = await store.history(key)
            except (KeyNotFoundError, JsNotFoundError) as exc:
                raise CliError(f"key {key!r} not found in bucket {bucket!r}") from exc
            table = Table(f"History for {bucket} > {key}",
                          ["Key", "Revision", "Op", "Created", "Length", "Value"])
            for entry in entries:
                created = GoTime.parse(_iso(entry.created)) if entry.created else None
                value = printable(entry.value or b"")
                table.add_row(entry.key, entry.revision, _OPS.get(entry.operation, "PUT"),
                              created.local() if created else "", len(entry.value or b""),
                              value if len(value) <= 40 else value[:15] + "..." + value[-15:])
            out(table.render())
            out()

        run(ctx, work)


def _iso(created: Any) -> str:
    """nats-py gives entry times as datetime (or nanoseconds); GoTime wants RFC 3339."""
    if isinstance(created, datetime):
        return created.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    if isinstance(created, (int, float)):
        moment = datetime.fromtimestamp(created / 1e9, timezone.utc)
        return moment.isoformat().replace("+00:00", "Z")
    return str(created)


async def _created(s: Session, bucket: str, revision: int | None) -> str:
    if not revision:
        return ""
    message = await s.js.msg_get(f"KV_{bucket}", {"seq": revision})
    moment = parse_time(message.get("time"))
    return moment.local() if moment else ""
