"""The bucket verbs of `kv`: `add` (a bucket, shown with natscli's status), `ls` (the buckets,
or the keys of one), `info` (a bucket's status). A bucket is the stream `KV_<bucket>`."""

from __future__ import annotations

import click
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import NoKeysError
from nats.js.errors import NotFoundError as JsNotFoundError

from ...errors import CliError
from ...render import Nanos, Table, to_json
from ...session import Session, connection_options, out, run
from ...units import NANOS_PER_SECOND, ibytes, parse_time
from .._shared import BYTES, DURATION, since_ns
from .lookup import load_bucket
from .show import show_status


@click.command("add")
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
    config = KeyValueConfig(
        bucket=bucket, description=description, history=history,
        ttl=ttl / NANOS_PER_SECOND if ttl else None,
        max_value_size=max_value_size if max_value_size is not None else None,
        max_bytes=max_bucket_size if max_bucket_size is not None else None,
        storage=StorageType.MEMORY if (storage or "f").startswith("m") else StorageType.FILE,
        replicas=replicas)
    run(ctx, lambda s: add_bucket(s, bucket, config))


async def add_bucket(s: Session, bucket: str, config: KeyValueConfig) -> None:
    try:
        await s.nc.jetstream(timeout=s.opts.timeout).create_key_value(config)
    except ValueError as exc:
        raise CliError(f"invalid bucket {bucket!r}: {exc}") from exc
    await show_status(s, bucket)


@click.command("ls")
@click.argument("bucket", required=False)
@click.option("-n", "--names", is_flag=True, help="Show just the bucket names")
@click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
@connection_options()
@click.pass_context
def ls(ctx: click.Context, bucket: str | None, names: bool, as_json: bool) -> None:
    """List available buckets or the keys in a bucket"""
    if bucket:
        run(ctx, lambda s: list_keys(s, bucket, names, as_json))
    else:
        run(ctx, lambda s: list_buckets(s, names, as_json))


async def list_keys(s: Session, bucket: str, names: bool, as_json: bool) -> None:
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


async def list_buckets(s: Session, names: bool, as_json: bool) -> None:
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
    table = Table("Key-Value Buckets", ["Bucket", "Description", "Created", "Size", "Values",
                                        "Last Update"])
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


@click.command("info")
@click.argument("bucket")
@connection_options()
@click.pass_context
def info(ctx: click.Context, bucket: str) -> None:
    """View the status of a KV store"""
    run(ctx, lambda s: show_bucket(s, bucket))


async def show_bucket(s: Session, bucket: str) -> None:
    await load_bucket(s, bucket)
    await show_status(s, bucket)
