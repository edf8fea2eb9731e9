"""The bucket verbs of `object`: `add` (a bucket, shown with natscli's information), `ls` (the
buckets, or the objects of one), `info` (a bucket or an object), `del` (an object, or the
whole bucket when no object is named; asks unless `-f`). A bucket is the stream
`OBJ_<bucket>`."""

from __future__ import annotations

import click
from nats.js.api import ObjectStoreConfig, StorageType
from nats.js.errors import NotFoundError as JsNotFoundError
from nats.js.errors import ObjectNotFoundError

from ...errors import CliError
from ...prompts import confirm
from ...render import Nanos, Table
from ...session import Session, connection_options, out, run
from ...units import NANOS_PER_SECOND, ibytes, parse_time
from .._shared import BYTES, DURATION, since_ns
from .lookup import load_store
from .show import format_bucket, format_object


@click.command("add")
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
    config = ObjectStoreConfig(
        bucket=bucket, description=description,
        ttl=ttl / NANOS_PER_SECOND if ttl else None, max_bytes=max_bucket_size,
        storage=StorageType.MEMORY if (storage or "f").startswith("m") else StorageType.FILE,
        replicas=replicas)
    run(ctx, lambda s: add_bucket(s, bucket, config))


async def add_bucket(s: Session, bucket: str, config: ObjectStoreConfig) -> None:
    try:
        await s.nc.jetstream(timeout=s.opts.timeout).create_object_store(bucket, config)
    except ValueError as exc:
        raise CliError(f"invalid bucket {bucket!r}: {exc}") from exc
    await show_bucket_info(s, bucket)


async def show_bucket_info(s: Session, bucket: str) -> None:
    click.echo(format_bucket(await s.js.stream_info(f"OBJ_{bucket}"), bucket), nl=False)


@click.command("ls")
@click.argument("bucket", required=False)
@click.option("-n", "--names", is_flag=True, help="When listing buckets, show just the bucket names")
@connection_options()
@click.pass_context
def ls(ctx: click.Context, bucket: str | None, names: bool) -> None:
    """List buckets or contents of a specific bucket"""
    if bucket:
        run(ctx, lambda s: list_objects(s, bucket, names))
    else:
        run(ctx, lambda s: list_buckets(s, names))


async def list_objects(s: Session, bucket: str, names: bool) -> None:
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


async def list_buckets(s: Session, names: bool) -> None:
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


@click.command("info")
@click.argument("bucket")
@click.argument("file", required=False)
@connection_options()
@click.pass_context
def info(ctx: click.Context, bucket: str, file: str | None) -> None:
    """Get information about a bucket or object"""
    run(ctx, lambda s: show_info(s, bucket, file))


async def show_info(s: Session, bucket: str, file: str | None) -> None:
    store = await load_store(s, bucket)
    if file:
        try:
            out(format_object(await store.get_info(file)))
        except (ObjectNotFoundError, JsNotFoundError) as exc:
            raise CliError(f"object {file!r} not found in bucket {bucket!r}") from exc
        return
    await show_bucket_info(s, bucket)


@click.command("del")
@click.argument("bucket")
@click.argument("file", required=False)
@click.option("-f", "--force", is_flag=True, help="Act without confirmation")
@connection_options()
@click.pass_context
def delete(ctx: click.Context, bucket: str, file: str | None, force: bool) -> None:
    """Deletes a file or bucket from the store"""
    run(ctx, lambda s: delete_object_or_bucket(s, bucket, file, force))


async def delete_object_or_bucket(s: Session, bucket: str, file: str | None, force: bool) -> None:
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
