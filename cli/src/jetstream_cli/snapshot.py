"""`stream backup` / `stream restore`: nats-server's stream snapshot protocol, as natscli
(jsm.go) speaks it, into and out of a directory natscli can read and write.

Backup: `$JS.API.STREAM.SNAPSHOT.<stream>` with `{"deliver_subject", "no_consumers",
"chunk_size", "window_size", "jsck"}`; the server answers with the stream's config and
state, then sends the snapshot (an s2-compressed tar) in chunks to the deliver subject.
Each chunk carries a reply subject that is answered with an empty message (flow control);
an empty message with header `Status: 204` ends the snapshot, any other status is an
error. The directory receives `stream.tar.s2` (the chunks, as sent) and `backup.json`
(`{"config", "state"}`), natscli's layout.

Restore: `$JS.API.STREAM.RESTORE.<stream>` with `{"config", "state"}` answers a deliver
subject; the file is sent in 64 KiB requests (each answered empty, or with an error), then
an empty request, whose answer (after the server has restored) is a stream create answer.

A server without these APIs is reported in one line that says so; memory streams cannot be snapshotted (nats-server's rule, checked before asking).

Progress (`progress=True`, drawn only on a terminal, `jetstream_cli.progress`), as natscli
measures it: a backup counts the uncompressed bytes of the chunks received
(`framed_size.FramedSize`) against the stream's bytes in the server's answer (an estimate:
the tar's size differs a little from the messages' bytes), and marks it done at the end; a
restore counts the bytes sent against the file's size.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import click
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from .errors import STREAM_NOT_FOUND, ApiError, CliError
from .framed_size import FramedSize
from .jsapi import JsonDict
from .progress import BYTES, ProgressLine
from .session import Session
from .units import ibytes

DATA_FILE = "stream.tar.s2"
META_FILE = "backup.json"
DEFAULT_CHUNK = 128 * 1024
RESTORE_CHUNK = 64 * 1024
# Error codes meaning "this server has no such API" (nats-server: bad request / unknown).
_UNSUPPORTED_CODES = {10003, 10025}


def _unsupported(api: str, exc: Exception) -> CliError:
    return CliError(
        f"this server does not support stream snapshots ($JS.API.STREAM.{api}): {exc}; "
        "back up from a nats-server"
    )


def _echo(text: str) -> None:
    click.echo(text)


async def backup(s: Session, info: JsonDict, target: str, *, consumers: bool, check: bool,
                 chunk_size: int | None, window_size: int | None, progress: bool = False) -> None:
    name = info["config"]["name"]
    if info["config"].get("storage") == "memory":
        raise CliError("snapshot failed: memory streams do not support snapshots")
    directory = Path(target)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    inbox = s.nc.new_inbox()
    chunks: asyncio.Queue[Msg] = asyncio.Queue()

    async def on_chunk(msg: Msg) -> None:
        await chunks.put(msg)

    sub = await s.nc.subscribe(inbox, cb=on_chunk, pending_msgs_limit=-1,
                               pending_bytes_limit=-1)
    request: JsonDict = {"deliver_subject": inbox, "chunk_size": chunk_size or DEFAULT_CHUNK}
    if not consumers:
        request["no_consumers"] = True
    if window_size:
        request["window_size"] = window_size
    if check:
        request["jsck"] = True
    try:
        answer = await s.js.request(f"STREAM.SNAPSHOT.{name}", request)
    except ApiError as exc:
        await sub.unsubscribe()
        if exc.err_code in _UNSUPPORTED_CODES:
            raise _unsupported("SNAPSHOT", exc) from exc
        raise CliError(f"snapshot failed: {exc}") from exc
    except CliError as exc:
        await sub.unsubscribe()
        raise _unsupported("SNAPSHOT", exc) from exc

    expected = int((answer.get("state") or {}).get("bytes") or 0)
    _echo(f'Starting backup of Stream "{name}" with {ibytes(expected)}')
    if check:
        _echo("Health Check was requested, this can take a long time without progress reports\n")
    idle = max(5.0, s.opts.timeout)
    started = time.monotonic()
    received = count = 0
    unpacked = FramedSize()
    bar = ProgressLine(f"Backup {name}", expected, units=BYTES, enabled=progress)
    with open(directory / DATA_FILE, "wb") as data, bar:
        try:
            while True:
                try:
                    msg = await asyncio.wait_for(chunks.get(), idle)
                except asyncio.TimeoutError as exc:
                    raise CliError(
                        "snapshot failed: backup timed out after receiving no data for a long period"
                    ) from exc
                if not msg.data:
                    status = (msg.headers or {}).get("Status", "")
                    if status and "204" not in status:
                        description = (msg.headers or {}).get("Description", "")
                        raise CliError(f"snapshot failed: {status} {description}".rstrip())
                    bar.finish(done=max(expected, unpacked.uncompressed))
                    break
                if msg.reply:
                    await s.nc.publish(msg.reply, b"")
                data.write(msg.data)
                received += len(msg.data)
                count += 1
                unpacked.feed(msg.data)
                bar.update(unpacked.uncompressed)
        finally:
            await sub.unsubscribe()
    meta = {"config": answer.get("config"), "state": answer.get("state")}
    (directory / META_FILE).write_text(json.dumps(meta, indent=2))
    elapsed_ms = int((time.monotonic() - started) * 1000)
    _echo("")
    _echo(f'Received {ibytes(received)} compressed data in {count:,} chunks for stream "{name}" '
          f"in {elapsed_ms}ms, {ibytes(unpacked.uncompressed)} uncompressed")


async def restore(s: Session, directory: str, override: JsonDict | None, cluster: str | None,
                  tags: list[str], replicas: int, progress: bool = False) -> JsonDict:
    folder = Path(directory)
    try:
        request = json.loads((folder / META_FILE).read_text())
        size = os.path.getsize(folder / DATA_FILE)
    except OSError as exc:
        raise CliError(f"restore failed: {exc.strerror}: {exc.filename}") from exc
    except ValueError as exc:
        raise CliError(f"restore failed: invalid {META_FILE}: {exc}") from exc
    if not isinstance(request, dict) or not isinstance(request.get("config"), dict):
        raise CliError(f"restore failed: {META_FILE} holds no stream configuration")
    name = str(request["config"].get("name", ""))
    if override is not None:
        if override.get("name") != name:
            raise CliError("stream names may not be changed during restore")
        request["config"] = override
    if cluster or tags:
        request["config"]["placement"] = {k: v for k, v in (("cluster", cluster),
                                                            ("tags", tags)) if v}
    if replicas > 0:
        request["config"]["num_replicas"] = replicas
    if request["config"].get("storage") == "memory":
        raise CliError("restore failed: memory streams do not support snapshots")
    try:
        await s.js.stream_info(name)
        raise CliError(f'Stream "{name}" already exist')
    except ApiError as exc:
        if exc.err_code != STREAM_NOT_FOUND:
            raise
    try:
        answer = await s.js.request(f"STREAM.RESTORE.{name}", request)
    except ApiError as exc:
        if exc.err_code in _UNSUPPORTED_CODES:
            raise _unsupported("RESTORE", exc) from exc
        raise CliError(f"restore failed: {exc}") from exc
    except CliError as exc:
        raise _unsupported("RESTORE", exc) from exc
    deliver = str(answer.get("deliver_subject") or "")
    if not deliver:
        raise CliError("restore failed: the server gave no deliver subject")
    _echo(f'Starting restore of Stream "{name}" from file "{directory}"\n')
    started = time.monotonic()
    sent = 0
    bar = ProgressLine(f"Restore {name}", size, units=BYTES, enabled=progress)
    with open(folder / DATA_FILE, "rb") as data, bar:
        while chunk := data.read(RESTORE_CHUNK):
            reply = await _restore_request(s, deliver, chunk, s.opts.timeout)
            if reply.data:
                raise CliError(f"restore failed: {reply.data.decode('utf-8', 'replace')}")
            sent += len(chunk)
            bar.update(sent)
    final = await _restore_request(s, deliver, b"", 3600.0)
    try:
        result = json.loads(final.data)
    except ValueError as exc:
        raise CliError(f"restore failed: invalid final answer {final.data[:200]!r}") from exc
    if result.get("error"):
        error = result["error"]
        raise CliError(f"restore failed: {error.get('description')} ({error.get('err_code')})")
    if result.get("type") not in (None, "io.nats.jetstream.api.v1.stream_create_response"):
        raise CliError(f"restore failed: unexpected final answer of type {result.get('type')}")
    _echo("")
    _echo(f'Restored stream "{name}" in {round(time.monotonic() - started)}s ({ibytes(sent)} of '
          f"{ibytes(size)} sent)")
    _echo("")
    return await s.js.stream_info(name)


async def _restore_request(s: Session, subject: str, payload: bytes, timeout: float) -> Msg:
    try:
        return await s.nc.request(subject, payload, timeout=timeout)
    except NoRespondersError as exc:
        raise CliError("restore failed: the server stopped accepting restore data") from exc
    except NatsTimeoutError as exc:
        raise CliError(f"restore failed: no answer within {timeout:g}s") from exc
