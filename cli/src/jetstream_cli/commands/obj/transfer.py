"""The transfer verbs of `object`: `put` (a file, or stdin with `--name`, stored under its name;
asks before replacing an existing object unless `-f`) and `get` (written to the current
directory under its base name, or `-O FILE`; asks before replacing an existing file unless
`-f`).

`--progress/--no-progress` (natscli's flag, on by default): for an object above 20 KiB, as
natscli, a progress line on stderr (bytes moved of the object's size, rate, time left), drawn
only when stderr is a terminal. nats-py's object store moves the whole object in one call;
it reads the next chunk to put only once the previous one was published, and writes each
chunk it gets, which is where the bytes are counted (`SentCounter`, `ReceivedCounter`).
"""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from nats.js.api import ObjectMeta
from nats.js.errors import NotFoundError as JsNotFoundError
from nats.js.errors import ObjectNotFoundError

from ...errors import CliError
from ...progress import BYTES, ProgressLine
from ...prompts import confirm
from ...render import Nanos, cell
from ...session import Session, connection_options, out, run
from ...units import NANOS_PER_SECOND, ibytes
from .._shared import parse_headers
from .lookup import load_store
from .show import format_object

PROGRESS_ABOVE_BYTES = 20480  # natscli draws its progress bar for objects larger than this


class SentCounter(io.BytesIO):
    """The object's bytes for nats-py's `put`, which reads a chunk (in a worker thread) only
    after publishing the one before: each read reports the bytes published so far."""

    def __init__(self, data: bytes, on_sent: Callable[[int], None]) -> None:
        super().__init__(data)
        self._on_sent = on_sent

    def readinto(self, buffer: Any) -> int:
        self._on_sent(self.tell())
        return super().readinto(buffer)


class ReceivedCounter(io.BytesIO):
    """Where nats-py's `get` writes the chunks it receives: each write reports the total."""

    def __init__(self, on_received: Callable[[int], None]) -> None:
        super().__init__()
        self._on_received = on_received

    def write(self, data: Any) -> int:
        written = super().write(data)
        self._on_received(self.tell())
        return written


def _transfer_line(label: str, size: int, progress: bool) -> ProgressLine:
    return ProgressLine(label, size, units=BYTES, enabled=progress and size > PROGRESS_ABOVE_BYTES)


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
    run(ctx, lambda s: put_object(s, bucket, object_name, data, description, headers, force,
                                  progress))


async def put_object(s: Session, bucket: str, object_name: str, data: bytes,
                     description: str | None, headers: tuple[str, ...], force: bool,
                     progress: bool) -> None:
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
    with _transfer_line(f"Put {stored_name}", len(data), progress) as bar:
        info = await store.put(stored_name, SentCounter(data, bar.update), meta=meta)
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
    run(ctx, lambda s: get_object(s, bucket, file, output, force, progress))


async def get_object(s: Session, bucket: str, file: str, output: str | None, force: bool,
                     progress: bool) -> None:
    store = await load_store(s, bucket)
    started = time.monotonic()
    try:
        size = (await store.get_info(file)).size or 0
        with _transfer_line(f"Get {file}", size, progress) as bar:
            received = ReceivedCounter(bar.update)
            result = await store.get(file, writeinto=received)
    except (ObjectNotFoundError, JsNotFoundError) as exc:
        raise CliError(f"object {file!r} not found in bucket {bucket!r}") from exc
    if result.info.deleted:
        raise CliError("file has been deleted")
    target = Path(output or os.path.basename(result.info.name)).resolve()
    if target.exists() and not force and not confirm(
            f"Replace existing target file {target}", False):
        return
    data = received.getvalue() or result.data or b""  # a link's target comes in result.data
    target.write_bytes(data)
    elapsed = int((time.monotonic() - started) * NANOS_PER_SECOND)
    out(f"Wrote: {ibytes(len(data))} to {target} in {cell(Nanos(elapsed))}")
