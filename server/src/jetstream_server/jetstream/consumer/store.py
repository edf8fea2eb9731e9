"""Durable consumer state on disk: `<stream dir>/obs/<consumer>/`.

Three files:
- `meta.json`: `{"config": <consumer config JSON>, "created": <ns>}`, written at
  create and on update (temp file, fsync, rename, fsync dir; a create or an
  update through the API defers the fsyncs to the disk thread with
  `defer_fsyncs` / `take_fsyncs` and answers once they are done);
- `o.dat`: the whole delivery state as JSON, replaced atomically: `gen` (its
  generation), `delivered` (consumer_seq, stream_seq), `ack_floor`
  (consumer_seq, stream_seq), `pending` ([stream_seq, consumer_seq,
  timestamp_ns] ...), `redelivered` ([stream_seq, count] ...), `dropped`
  (stream sequences that hit max_deliver);
- `o.log`: the changes since `o.dat`, appended one line per write:
  `<crc32 of the JSON, 8 hex digits> <JSON>\\n`, the JSON holding `g` (the
  generation of the `o.dat` it extends), `d` and `f` (delivered and ack floor
  now), `p` (pending entries added or changed), `u` (sequences no longer
  pending), `r` (redelivery counts set), `ru` (counts removed) and `x`
  (sequences dropped).

A write costs what changed, not the whole state: 50k pending acks cost one
short line per ack, not a 50k-entry file. Once the log outgrows twice the
state (and `LOG_MIN` bytes) the next write is a whole `o.dat` with the next
generation, and the log starts over; log lines of an older generation are
ignored, so a crash between the rename and the log's truncation is harmless.

Reading: `o.dat`, then each log line of its generation in order, stopping at
the first line whose checksum fails (a torn last append). A failed append is
cut off the log again; if even that fails the next write is a whole state.

Durability: every write is handed to the OS before it returns (survives a
process kill); with `sync` (the server's `sync_always`) it is fsynced too
(survives a power cut): a whole state at once, log lines by `begin_sync()`,
a job the consumer runs on the server's disk thread before it confirms the
acks of that loop turn (one fsync for all of them). Writes raise OSError on
failure: the caller confirms nothing it could not store (an ack sent as a
request gets no reply).

The JSON of `o.dat` and of the log lines is written by `core.compact_json` (orjson with the
`speedups` extra: the same bytes, a sixth of the CPU); it is read with the standard library.

Invariants: after a crash `o.dat` is the old or the new version, never a torn
one; a consumer directory without a readable `meta.json` is reported and
skipped, never deleted.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from jetstream_server.core import compact_json
from jetstream_server.jetstream.persistence import (
    fsync_dir,
    fsync_paths,
    make_dirs,
    missing_dirs,
    write_bytes_atomic,
    write_json_atomic,
)

logger = logging.getLogger(__name__)

OBS_DIR = "obs"
META_FILE = "meta.json"
STATE_FILE = "o.dat"
LOG_FILE = "o.log"
LOG_MIN: Final = 256 * 1024


@dataclass(slots=True)
class ConsumerState:
    delivered_consumer_seq: int = 0
    delivered_stream_seq: int = 0
    ack_floor_consumer_seq: int = 0
    ack_floor_stream_seq: int = 0
    pending: list[tuple[int, int, int]] = field(default_factory=list)
    redelivered: list[tuple[int, int]] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "delivered": [self.delivered_consumer_seq, self.delivered_stream_seq],
            "ack_floor": [self.ack_floor_consumer_seq, self.ack_floor_stream_seq],
            "pending": [list(p) for p in self.pending],
            "redelivered": [list(r) for r in self.redelivered],
            "dropped": list(self.dropped),
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ConsumerState:
        delivered = raw.get("delivered") or [0, 0]
        floor = raw.get("ack_floor") or [0, 0]
        return cls(
            delivered_consumer_seq=int(delivered[0]),
            delivered_stream_seq=int(delivered[1]),
            ack_floor_consumer_seq=int(floor[0]),
            ack_floor_stream_seq=int(floor[1]),
            pending=sorted((int(a), int(b), int(c)) for a, b, c in raw.get("pending") or []),
            redelivered=[(int(a), int(b)) for a, b in raw.get("redelivered") or []],
            dropped=sorted(int(s) for s in raw.get("dropped") or []),
        )


class _Replay:
    """A state being rebuilt from `o.dat` and log lines (dicts: each line costs
    what it changed)."""

    def __init__(self, state: ConsumerState) -> None:
        self.delivered = [state.delivered_consumer_seq, state.delivered_stream_seq]
        self.floor = [state.ack_floor_consumer_seq, state.ack_floor_stream_seq]
        self.pending = {p[0]: p for p in state.pending}
        self.redelivered = dict(state.redelivered)
        self.dropped = set(state.dropped)

    def apply(self, delta: dict[str, Any]) -> None:
        pending, redelivered = self.pending, self.redelivered
        for seq in delta.get("u") or ():
            pending.pop(int(seq), None)
        for seq, dseq, ts in delta.get("p") or ():
            pending[int(seq)] = (int(seq), int(dseq), int(ts))
        for seq in delta.get("ru") or ():
            redelivered.pop(int(seq), None)
        for seq, count in delta.get("r") or ():
            redelivered[int(seq)] = int(count)
        self.dropped.update(int(s) for s in delta.get("x") or ())
        if delta.get("d"):
            self.delivered = [int(delta["d"][0]), int(delta["d"][1])]
        if delta.get("f"):
            self.floor = [int(delta["f"][0]), int(delta["f"][1])]

    def state(self) -> ConsumerState:
        return ConsumerState(
            delivered_consumer_seq=self.delivered[0],
            delivered_stream_seq=self.delivered[1],
            ack_floor_consumer_seq=self.floor[0],
            ack_floor_stream_seq=self.floor[1],
            pending=sorted(self.pending.values()),
            redelivered=sorted(self.redelivered.items()),
            dropped=sorted(self.dropped),
        )


def encode_line(body: dict[str, Any]) -> bytes:
    data = compact_json.dumps(body)
    return b"%08x %s\n" % (zlib.crc32(data), data)


def decode_line(line: bytes) -> dict[str, Any] | None:
    """One log line's JSON, or None when it is torn or damaged."""
    if len(line) < 10 or line[8:9] != b" " or not line.endswith(b"\n"):
        return None
    data = line[9:-1]
    try:
        if int(line[:8], 16) != zlib.crc32(data):
            return None
        body = json.loads(data)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


class ConsumerStore:
    """The files of one durable consumer (see module docstring)."""

    def __init__(self, directory: Path, *, sync: bool = False) -> None:
        self.directory = directory
        self.sync = sync
        self._gen = 0
        self._log_fd = -1
        self._log_size = 0
        self._state_size = 0
        self._need_full = True  # until this store wrote a whole state itself
        self.unsynced = False  # log lines written and not fsynced yet (sync mode)
        # set by `defer_fsyncs()`: the files and directories whose fsyncs wait
        # for `take_fsyncs()` (a create's, run on the disk thread)
        self._deferred: list[Path] | None = None

    @classmethod
    def for_stream(cls, stream_dir: Path, name: str, *, sync: bool = False) -> ConsumerStore:
        return cls(stream_dir / OBS_DIR / name, sync=sync)

    def defer_fsyncs(self) -> None:
        """From now on writes leave their fsyncs (files, then directories) to
        the job `take_fsyncs()` returns: a create or an update writes on the
        loop and answers once that job ran on the disk thread."""
        if self._deferred is None:
            self._deferred = []

    def take_fsyncs(self) -> Callable[[], None] | None:
        """The deferred fsyncs as a job for any thread (raises OSError), and back
        to fsyncing inline; None when nothing waits."""
        paths, self._deferred = self._deferred, None
        if not paths:
            return None
        files = list(dict.fromkeys(p for p in paths if not p.is_dir()))
        dirs = sorted(set(paths) - set(files), key=lambda p: len(p.parts), reverse=True)
        return functools.partial(fsync_paths, files + dirs)

    def _make_dirs(self) -> None:
        if self._deferred is None:
            make_dirs(self.directory)
            return
        missing = missing_dirs(self.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        for created in missing:
            self._deferred.extend((created, created.parent))

    def write_meta(self, config: dict[str, Any], created_ns: int) -> None:
        self._make_dirs()
        meta = self.directory / META_FILE
        deferred = self._deferred
        write_json_atomic(meta, {"config": config, "created": created_ns}, sync=deferred is None)
        if deferred is not None:
            deferred.extend((meta, self.directory))

    # -- state -----------------------------------------------------------------
    @property
    def wants_full(self) -> bool:
        """Should the next write be a whole state (`write_state`) rather than a delta?"""
        return self._need_full or self._log_size > max(LOG_MIN, 2 * self._state_size)

    def write_state(self, state: ConsumerState) -> None:
        """Replace the whole state (next generation) and start the log over."""
        if not self.directory.exists():
            return  # deleted meanwhile
        gen = self._gen + 1
        body = state.to_json()
        body["gen"] = gen
        data = compact_json.dumps(body)
        deferred = self._deferred
        sync = self.sync and deferred is None
        write_bytes_atomic(self.directory / STATE_FILE, data, sync=sync)
        if self.sync and deferred is not None:
            deferred.extend((self.directory / STATE_FILE, self.directory))
        self._gen = gen
        self._state_size = len(data)
        self._close_log()
        fd = os.open(self.directory / LOG_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._log_fd = fd
        self._log_size = 0
        self._need_full = False
        self.unsynced = False
        if sync:
            fsync_dir(self.directory)

    def append_delta(self, delta: dict[str, Any]) -> None:
        """Append one change set to the log (after a `write_state`)."""
        if self._need_full or self._log_fd < 0:
            raise RuntimeError("append_delta before write_state")
        line = encode_line({"g": self._gen, **delta})
        fd = self._log_fd
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            try:
                os.ftruncate(fd, self._log_size)
            except OSError:
                self._need_full = True  # a torn line would hide every later one
            raise
        self._log_size += len(line)
        if self.sync:
            self.unsynced = True

    def begin_sync(self) -> Callable[[], None] | None:
        """The fsync of the log lines written so far, as a job for any thread
        (None when there are none). On its failure call `sync_failed()`."""
        if not self.unsynced or self._log_fd < 0:
            return None
        fd = os.dup(self._log_fd)
        self.unsynced = False
        return functools.partial(_fsync_close, fd)

    def sync_failed(self) -> None:
        """A `begin_sync()` job failed: what it covered may not be on disk; the
        next write is a whole state (fsynced)."""
        self._need_full = True

    def read_meta(self) -> tuple[dict[str, Any], int]:
        raw = json.loads((self.directory / META_FILE).read_text())
        return raw["config"], int(raw.get("created", 0))

    def read_state(self) -> ConsumerState:
        path = self.directory / STATE_FILE
        if not path.exists():
            return ConsumerState()
        try:
            raw = json.loads(path.read_text())
            state = ConsumerState.from_json(raw)
        except (ValueError, KeyError, TypeError) as exc:
            logger.warning("consumer state %s unreadable (%s): starting from the config", path, exc)
            return ConsumerState()
        gen = raw.get("gen", 0)
        replay = _Replay(state)
        applied = 0
        try:
            with open(self.directory / LOG_FILE, "rb") as fh:
                for line in fh:
                    delta = decode_line(line)
                    if delta is None:
                        logger.warning(
                            "consumer state log %s: damaged line after %d changes, "
                            "later lines ignored", self.directory / LOG_FILE, applied,
                        )
                        break
                    if delta.get("g") != gen:
                        continue
                    replay.apply(delta)
                    applied += 1
        except FileNotFoundError:
            pass
        except (ValueError, KeyError, TypeError) as exc:
            logger.warning("consumer state log in %s unreadable (%s)", self.directory, exc)
        return replay.state()

    def _close_log(self) -> None:
        if self._log_fd >= 0:
            os.close(self._log_fd)
            self._log_fd = -1

    def close(self) -> None:
        self._close_log()

    def destroy(self) -> None:
        self._close_log()
        shutil.rmtree(self.directory, ignore_errors=True)
        fsync_dir(self.directory.parent)


def _fsync_close(fd: int) -> None:
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def list_consumer_stores(stream_dir: Path | None, *, sync: bool = False) -> list[ConsumerStore]:
    """Every consumer directory under a stream that has a readable meta.json."""
    if stream_dir is None:
        return []
    root = stream_dir / OBS_DIR
    if not root.is_dir():
        return []
    out = []
    for entry in sorted(root.iterdir()):
        if not entry.is_dir():
            continue
        if not (entry / META_FILE).is_file():
            logger.warning("consumer directory %s has no %s: skipped", entry, META_FILE)
            continue
        out.append(ConsumerStore(entry, sync=sync))
    return out
