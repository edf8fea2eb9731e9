"""`jetstream object ...`: natscli's Object Store verbs (add, put, get, ls, info, del) on
nats-py's object store client, with natscli's flags and output.

A bucket is the stream `OBJ_<bucket>`. `object put BUCKET FILE` stores the file under its
name (or `--name`); `object get BUCKET NAME` writes it to the current directory under its
base name (or `-O FILE`), asking before it replaces an existing file unless `-f`.
"""

from __future__ import annotations

import base64
import os
import sys
import time
from pathlib import Path

import click
from nats.js.api import ObjectInfo, ObjectMeta, ObjectStoreConfig, StorageType
from nats.js.errors import BucketNotFoundError, ObjectNotFoundError
from nats.js.errors import NotFoundError as JsNotFoundError
from nats.js.object_store import ObjectStore

from ..errors import CliError
from ..jsapi import JsonDict
from ..prompts import confirm
from ..render import Columns, Nanos, Table, cell
from ..session import Session, connection_options, group_with_aliases, out, run
from ..units import NANOS_PER_SECOND, ibytes, parse_time
from ._shared import BYTES, DURATION, parse_headers, since_ns


async def load_store(s: Session, bucket: str) -> ObjectStore:
    try:
        return await s.nc.jetstream(timeout=s.opts.timeout).object_store(bucket)
    except (BucketNotFoundError, JsNotFoundError) as exc:
        raise CliError(f"object store bucket {bucket!r} not found") from exc


def format_bucket(info: JsonDict, bucket: str) -> str:
    cfg, state = info.get("config") or {}, info.get("state") or {}
    created = parse_time(info.get("created"))
    cols = Columns(f"Information for Object Store Bucket {bucket} created "
                   f"{created.local() if created else ''}")
    cols.title("Configuration")
    cols.row("Bucket Name", bucket)
    cols.row_if_not_empty("Description", cfg.get("description"))
    cols.row("Replicas", int(cfg.get("num_replicas") or 1))
    max_age = int(cfg.get("max_age") or 0)
    cols.row("TTL", "unlimited" if max_age == 0 else Nanos(max_age))
    cols.row("Sealed", bool(cfg.get("sealed")))
    cols.row("Size", ibytes(int(state.get("bytes") or 0)))
    max_bytes = int(cfg.get("max_bytes", -1))
    cols.row("Maximum Bucket Size", "unlimited" if max_bytes == -1 else ibytes(max_bytes))
    cols.row("Storage", {"file": "File", "memory": "Memory"}.get(cfg.get("storage", ""), ""))
    cols.row("Backing Store Kind", "JetStream")
    cols.row("JetStream Stream", cfg.get("name", ""))
    return cols.render()


def format_object(info: ObjectInfo) -> str:
    cols = Columns(f"Object information for {info.bucket} > {info.name}")
    cols.row_if_not_empty("Description", info.description)
    cols.row("Size", ibytes(int(info.size or 0)))
    mtime = parse_time(info.mtime)
    cols.row("Modification Time", mtime.local() if mtime else info.mtime or "")
    cols.row("Chunks", int(info.chunks or 0))
    if info.digest:
        algorithm, _, encoded = info.digest.partition("=")
        try:
            digest = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).hex()
        except ValueError:
            digest = encoded
        cols.row("Digest", f"{algorithm} {digest}")
    cols.row_if("Deleted", True, bool(info.deleted))
    if info.headers:
        cols.strings("Headers", [f"{k}: {v}" for k, v in info.headers.items()])
    return cols.render()


def register(cli: click.Group) -> None:
    @group_with_aliases(cli, "object", {"rm": "del", "show": "info", "i": "info"})
    def obj() -> None:
        """Interacts with a JetStream based Object store"""

    @obj.command("add")
    @click.argument("bucket")
    @click.option("--ttl", type=DURATION, default=0, help="How long to keep objects for")
    @click.option("--replicas", type=int, default=1, help="How many replicas of the data to store")
    @click.option("--max-bucket-size", type=BYTES, default=None,
                  help="Maximum size for the bucket")
    @click.option("--description", help="A description for the bucket")
    @click.option("--storage", type=click.Choice(["file", "f", "memory", "m"]),
                  help="Storage backend to use (file, memory)")
    @connection_options()
    @click.pass_context
    def add(ctx: click.Context, bucket: str, ttl: int, replicas: int,
            max_bucket_size: int | None, description: str | None, storage: str | None) -> None:
        """Adds a new Object Store Bucket"""

        async def work(s: Session) -> None:
            config = ObjectStoreConfig(
                bucket=bucket, description=description,
                ttl=ttl / NANOS_PER_SECOND if ttl else None, max_bytes=max_bucket_size,
                storage=StorageType.MEMORY if (storage or "f").startswith("m")
                else StorageType.FILE, replicas=replicas)
            try:
                await s.nc.jetstream(timeout=s.opts.timeout).create_object_store(bucket, config)
            except ValueError as exc:
                raise CliError(f"invalid bucket {bucket!r}: {exc}") from exc
            click.echo(format_bucket(await s.js.stream_info(f"OBJ_{bucket}"), bucket), nl=False)

        run(ctx, work)

    @obj.command("put")
    @click.argument("bucket")
    @click.argument("file", required=False, type=click.Path(exists=True, dir_okay=False))
    @click.option("--name", help="Override the name supplied to the object store")
    @click.option("--description", help="Sets an optional description for the object")
    @click.option("-H", "--header", "headers", multiple=True,
                  help="Adds headers to the object using K:V format")
    @click.option("-f", "--force", is_flag=True, help="Act without confirmation")
    @click.option("--progress/--no-progress", default=True, help="Disable progress bars")
    @connection_options()
    @click.pass_context
    def put(ctx: click.Context, bucket: str, file: str | None, name: str | None,
            description: str | None, headers: tuple[str, ...], force: bool,
            progress: bool) -> None:
        """Puts a file into the store"""
        if not (name or file):
            raise CliError("--name is required when reading from stdin")
        object_name = str(name or file)
        data = Path(file).read_bytes() if file else sys.stdin.buffer.read()

        async def work(s: Session) -> None:
            store = await load_store(s, bucket)
            try:
                existing = await store.get_info(object_name)
            except (ObjectNotFoundError, JsNotFoundError):
                existing = None
            if existing is not None and not existing.deleted and not force:
                out(format_object(existing))
                if not confirm(f"Replace existing file {bucket} > {object_name}", False):
                    return
                out()
            stored_name = os.path.normpath(object_name)
            meta = ObjectMeta(name=stored_name, description=description,
                              headers=parse_headers(headers, 0) or None)
            info = await store.put(stored_name, data, meta=meta)
            out()
            out(format_object(info))

        run(ctx, work)

    @obj.command("get")
    @click.argument("bucket")
    @click.argument("file")
    @click.option("-O", "--output", help="Override the output file name")
    @click.option("-f", "--force", is_flag=True, help="Act without confirmation")
    @click.option("--progress/--no-progress", default=True, help="Disable progress bars")
    @connection_options()
    @click.pass_context
    def get(ctx: click.Context, bucket: str, file: str, output: str | None, force: bool,
            progress: bool) -> None:
        """Retrieves a file from the store"""

        async def work(s: Session) -> None:
            store = await load_store(s, bucket)
            started = time.monotonic()
            try:
                result = await store.get(file)
            except (ObjectNotFoundError, JsNotFoundError) as exc:
                raise CliError(f"object {file!r} not found in bucket {bucket!r}") from exc
            if result.info.deleted:
                raise CliError("file has been deleted")
            target = Path(output or os.path.basename(result.info.name)).resolve()
            if target.exists() and not force and not confirm(
                    f"Replace existing target file {target}", False):
                return
            data = result.data or b""
            target.write_bytes(data)
            elapsed = int((time.monotonic() - started) * NANOS_PER_SECOND)
            out(f"Wrote: {ibytes(len(data))} to {target} in {cell(Nanos(elapsed))}")

        run(ctx, work)

    @obj.command("ls")
    @click.argument("bucket", required=False)
    @click.option("-n", "--names", is_flag=True, help="When listing buckets, show just the bucket names")
    @connection_options()
    @click.pass_context
    def ls(ctx: click.Context, bucket: str | None, names: bool) -> None:
        """List buckets or contents of a specific bucket"""

        async def work(s: Session) -> None:
            if bucket:
                store = await load_store(s, bucket)
                try:
                    contents = await store.list(ignore_deletes=True)
                except JsNotFoundError:
                    contents = []
                if names:
                    for item in contents:
                        out(item.name)
                    return
                if not contents:
                    out("No entries found")
                    return
                table = Table("Bucket Contents", ["Name", "Size", "Time"])
                for item in contents:
                    mtime = parse_time(item.mtime)
                    table.add_row(item.name, ibytes(int(item.size or 0)),
                                  mtime.local() if mtime else item.mtime or "")
                out(table.render())
                out()
                return
            infos = [i for i in await s.js.stream_list() if i["config"]["name"].startswith("OBJ_")]
            if not infos:
                if not names:
                    out("No Object Store buckets found")
                return
            if names:
                for info in infos:
                    out(info["config"]["name"][4:])
                return
            infos.sort(key=lambda i: int((i.get("state") or {}).get("bytes") or 0))
            table = Table("Object Store Buckets", ["Bucket", "Description", "Created", "Size",
                                                   "Last Update"])
            for info in infos:
                cfg, state = info["config"], info.get("state") or {}
                created = parse_time(info.get("created"))
                table.add_row(cfg["name"][4:], cfg.get("description", ""),
                              created.local() if created else "",
                              ibytes(int(state.get("bytes") or 0)),
                              Nanos(since_ns(info, state.get("last_ts"))))
            out(table.render())
            out()

        run(ctx, work)

    @obj.command("info")
    @click.argument("bucket")
    @click.argument("file", required=False)
    @connection_options()
    @click.pass_context
    def info(ctx: click.Context, bucket: str, file: str | None) -> None:
        """Get information about a bucket or object"""

        async def work(s: Session) -> None:
            store = await load_store(s, bucket)
            if file:
                try:
                    out(format_object(await store.get_info(file)))
                except (ObjectNotFoundError, JsNotFoundError) as exc:
                    raise CliError(f"object {file!r} not found in bucket {bucket!r}") from exc
                return
            click.echo(format_bucket(await s.js.stream_info(f"OBJ_{bucket}"), bucket), nl=False)

        run(ctx, work)

    @obj.command("del")
    @click.argument("bucket")
    @click.argument("file", required=False)
    @click.option("-f", "--force", is_flag=True, help="Act without confirmation")
    @connection_options()
    @click.pass_context
    def delete(ctx: click.Context, bucket: str, file: str | None, force: bool) -> None:
        """Deletes a file or bucket from the store"""

        async def work(s: Session) -> None:
            store = await load_store(s, bucket)
            if file:
                if not force and not confirm(f"Delete {bucket} > {file}", False):
                    return
                try:
                    await store.delete(file)
                except (ObjectNotFoundError, JsNotFoundError) as exc:
                    raise CliError(f"object {file!r} not found in bucket {bucket!r}") from exc
                return
            if not force and not confirm(f"Delete bucket {bucket}?", False):
                return
            await s.nc.jetstream(timeout=s.opts.timeout).delete_object_store(bucket)

        run(ctx, work)
