"""The transfer verbs of `object`: `put` (a file, or stdin with `--name`, stored under its name;
asks before replacing an existing object unless `-f`) and `get` (written to the current
directory under its base name, or `-O FILE`; asks before replacing an existing file unless
`-f`).

`--progress/--no-progress` is accepted as natscli accepts it; no progress bar is drawn yet
(nats-py's object store moves the whole object in one call here).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click
from nats.js.api import ObjectMeta
from nats.js.errors import NotFoundError as JsNotFoundError
from nats.js.errors import ObjectNotFoundError

from ...errors import CliError
from ...prompts import confirm
from ...render import Nanos, cell
from ...session import Session, connection_options, out, run
from ...units import NANOS_PER_SECOND, ibytes
from .._shared import parse_headers
from .lookup import load_store
from .show import format_object


@click.command("put")
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
    run(ctx, lambda s: put_object(s, bucket, object_name, data, description, headers, force))


async def put_object(s: Session, bucket: str, object_name: str, data: bytes,
                     description: str | None, headers: tuple[str, ...], force: bool) -> None:
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


@click.command("get")
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
    run(ctx, lambda s: get_object(s, bucket, file, output, force))


async def get_object(s: Session, bucket: str, file: str, output: str | None, force: bool) -> None:
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
