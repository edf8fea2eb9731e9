"""Restoring a stream from a client's snapshot chunks, as nats-server 2.15 does.

The client sends the S2-compressed archive (content.py) in requests to the
deliver subject the RESTORE answer named; each is answered with an empty
message, or with a `stream_create_response` error when the data is bad; the
empty request that ends the upload is answered with the stream create
response (the stream info) or the error. Errors are nats-server's 10062
`restore failed: <what>`, naming the problem (bad S2 framing or checksum, a
bad archive entry, an entry bigger than `MAX_ENTRY`, sequences out of order, a
truncated backup, a stream that cannot be added: "error adding stream: ..."),
except the account's or the server's store limits, answered with their own
error (10047/10028), as nats-server does.

Nothing is visible while the data comes in: messages go into a private store
(for a file stream in a staging directory outside the streams directory),
and only a complete, checked backup becomes a stream (`adopt`, the engine's).
Any failure, and 5 s without a chunk (nats-server's stall limit), deletes
what was staged, so nothing half-created is left behind.

Bounded: work happens in loop turns of at most `TURN_RAW_BYTES` of entries
stored (a skipped gap counts `GAP_COST`), so a big restore never
stalls other clients. A chunk is decoded once fewer than `BACKLOG_BYTES` wait
to be stored, and answered once the backlog is below that again: the client,
which waits for each answer, is paced by the server, and memory holds about
one chunk's entries plus the decoders' buffers (one S2 chunk, one archive
entry). A sequence gap of any length is one `skip_msgs` (one marker record in the file
store), as nats-server's restore skips deleted sequences.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from jetstream_server.core.clock import TimerHandle
from jetstream_server.core.gotime import parse_rfc3339_ns
from jetstream_server.jetstream.consumer.config import ConsumerConfig
from jetstream_server.jetstream.consumer.consumer import Consumer
from jetstream_server.jetstream.consumer.delivery import ConsumerHost
from jetstream_server.jetstream.consumer.store import ConsumerState, ConsumerStore
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.persistence import ACCOUNT
from jetstream_server.jetstream.snapshot.content import (
    CONSUMER_PREFIX,
    STATE_ENTRY,
    consumer_state_from_json,
)
from jetstream_server.jetstream.stream import Stream
from jetstream_server.jetstream.stream_config import Storage, StreamConfig
from jetstream_server.store.base import StoreError, StreamStore
from jetstream_server.store.natsarc import ArchiveError, ArchiveReader, Entry
from jetstream_server.store.s2frame import FrameDecoder, S2Error

logger = logging.getLogger(__name__)

STALL_S: Final = 5.0
MAX_ENTRY: Final = 16 << 20
TURN_RAW_BYTES: Final = 32 << 10  # archive bytes stored per loop turn (~20 ms)
GAP_COST: Final = 64  # budget bytes a skipped gap (one marker record) counts for
GAP_SUBJECT: Final = "_restore_gap_"
BACKLOG_BYTES: Final = 1 << 20  # decoded, not yet stored: chunks are answered below this
MAX_QUEUED: Final = 64  # chunks received and not yet decoded
CREATE_RESPONSE: Final = "io.nats.jetstream.api.v1.stream_create_response"


@dataclass
class _Chunk:
    reply: str
    payload: bytes


class RestoreFailed(Exception):
    """The backup cannot be restored; the text says why."""


@dataclass
class StagedConsumer:
    name: str
    config: ConsumerConfig
    raw_config: dict[str, Any]
    state: ConsumerState


@dataclass
class Staged:
    """What a complete restore hands to the engine."""

    config: StreamConfig
    store: StreamStore
    directory: Path | None
    consumers: list[StagedConsumer] = field(default_factory=list)


class Transfer(Protocol):
    """A snapshot being sent or a restore being received; `close()` ends it now
    (the server stops), and it leaves the set it was registered in when it ends."""

    def close(self) -> None: ...


Adopt = Callable[[Staged], dict[str, Any]]  # -> the stream info; raises ApiError
RoomCheck = Callable[[Storage, int], None]  # (storage, more bytes) -> raises ApiError


class RestoreSession:
    """One restore in progress (module docstring)."""

    def __init__(self, host: ConsumerHost, config: StreamConfig, store: StreamStore,
                 staging: Path | None, deliver: str, adopt: Adopt, room: RoomCheck,
                 registry: set[Transfer] | None = None) -> None:
        self.host = host
        self._registry = registry if registry is not None else set()
        self.config = config
        self.store = store
        self.staging = staging
        self.deliver = deliver
        self._adopt = adopt
        self._room = room
        self._frames = FrameDecoder()
        self._archive = ArchiveReader(MAX_ENTRY)
        self._state: dict[str, Any] | None = None
        self._consumers_left = 0
        self._consumers: list[StagedConsumer] = []
        self._last_seq = 0
        self._last_ts = 0
        self._reserved = 0
        self._stored_bytes = 0
        self.received = 0
        self.closed = False
        self._sid: int | None = None
        self._stall: TimerHandle | None = None
        self._turn: TimerHandle | None = None
        self._queue: deque[_Chunk] = deque()  # received, not decoded yet
        self._entries: deque[Entry] = deque()  # decoded, not stored yet
        self._backlog = 0  # their bytes
        self._unanswered: deque[str] = deque()  # replies of decoded chunks
        self._final_reply: str | None = None
        self._failed: tuple[str, ApiError | None] | None = None
        self._discarded = False

    def start(self) -> None:
        self._sid = self.host.subscribe(self.deliver, self._on_chunk)
        self._registry.add(self)
        self._arm_stall()

    def close(self) -> None:
        if not self.closed:
            self._abort("the server is stopping")

    # -- the chunks ------------------------------------------------------------------
    def _on_chunk(self, subject: str, reply: str | None, headers: bytes | None,
                  payload: bytes) -> None:
        if self.closed:
            return
        if not reply:
            self._abort(f"restore of stream {self.config.name} needs a reply subject per chunk")
            return
        if self._failed is not None:  # every earlier chunk was answered: this one says why
            self._stop()
            self._answer_error(reply, *self._failed)
            return
        if len(self._queue) >= MAX_QUEUED:
            self._fail(reply, f"more than {MAX_QUEUED} chunks sent without waiting for answers")
            return
        self.received += len(payload)
        self._queue.append(_Chunk(reply, payload))
        self._arm_stall()
        self._schedule()

    def _schedule(self) -> None:
        if self._turn is None and not self.closed:
            self._turn = self.host.clock.call_later(0, self._work)

    def _work(self) -> None:
        """One bounded turn (module docstring): store entries (and fill gaps) worth at
        most `TURN_RAW_BYTES`, decode the next chunk while the backlog is small, answer
        the chunks decoded while it stays small, finish after the last one."""
        self._turn = None
        budget = TURN_RAW_BYTES
        try:
            while budget > 0 and not self.closed:
                if self._entries:
                    entry = self._entries[0]
                    cost, done = self._apply(entry, budget)
                    budget -= cost
                    if done:
                        self._entries.popleft()
                        self._backlog -= len(entry.payload)
                elif self._queue and self._backlog < BACKLOG_BYTES:
                    chunk = self._queue.popleft()
                    if not chunk.payload:
                        self._final_reply = chunk.reply
                        break
                    self._unanswered.append(chunk.reply)  # an error in it is answered there
                    for block in self._frames.feed(chunk.payload):
                        for entry in self._archive.feed(block):
                            self._entries.append(entry)
                            self._backlog += len(entry.payload)
                    budget -= len(chunk.payload)
                else:
                    break
        except (S2Error, ArchiveError, RestoreFailed, ValueError, StoreError, OSError) as exc:
            self._fail_at_next(str(exc), None)
            return
        except ApiError as exc:  # a store limit: nats-server answers its error as it is
            self._fail_at_next(exc.description, exc)
            return
        if self._backlog < BACKLOG_BYTES:
            while self._unanswered:
                self.host.publish(self._unanswered.popleft(), None, None, b"")
        if self._final_reply is not None and not self._entries and not self._queue:
            self._complete(self._final_reply)
            return
        if self._entries or (self._queue and self._backlog < BACKLOG_BYTES):
            self._schedule()
        self._arm_stall()

    def _fail_at_next(self, why: str, error: ApiError | None) -> None:
        """Answer the error to the oldest chunk not answered yet (or the next to come)."""
        reply = self._unanswered[0] if self._unanswered else self._final_reply
        if reply is None and self._queue:
            reply = self._queue[0].reply
        if reply is not None:
            self._fail(reply, why, error)
            return
        logger.warning("restore of stream %s failed: %s", self.config.name, why)
        self._failed = (why, error)
        self._discard()
        self._entries.clear()
        self._arm_stall()

    def _apply(self, entry: Entry, budget: int) -> tuple[int, bool]:
        """Apply one entry: (cost, done). A message or the end after a gap first
        skips the gap."""
        if self._state is None:
            self._begin(entry)
        elif self._consumers_left:
            self._consumer(entry)
        elif entry.end:
            # trailing deletes keep the stream's last sequence and time (state.json's)
            last_ts = parse_time((self._state or {}).get("last_ts"))
            if last_ts:
                self._last_ts = last_ts
            cost = self._pad_to(self._state_last_seq() + 1)
            return cost, self._last_seq >= self._state_last_seq()
        else:
            self._check_message(entry)
            cost = self._pad_to(entry.sequence)
            if self._last_seq < entry.sequence - 1:
                return cost, False
            self._message(entry)
            return cost + len(entry.payload) + 1, True
        return len(entry.payload) + 1, True

    def _begin(self, entry: Entry) -> None:
        if entry.name != STATE_ENTRY:
            raise RestoreFailed("expected state.json first")
        try:
            state = json.loads(entry.payload)
        except ValueError as exc:
            raise RestoreFailed(f"error in state.json: {exc}") from None
        if not isinstance(state, dict):
            raise RestoreFailed("error in state.json: not an object")
        for key in ("first_seq", "last_seq", "bytes", "consumer_count"):
            value = state.get(key, 0)
            if not isinstance(value, int) or value < 0:
                raise RestoreFailed(f"error in state.json: bad {key}")
        self._state = state
        self._consumers_left = int(state.get("consumer_count", 0))
        self._reserve(int(state.get("bytes", 0)))
        first = int(state.get("first_seq", 0))
        if first > 1:
            self.store.skip_to(first)
        self._last_seq = max(first - 1, 0)

    def _state_last_seq(self) -> int:
        return int((self._state or {}).get("last_seq", 0))

    def _reserve(self, size: int) -> None:
        if size > self._reserved:
            self._room(self.config.storage, size - self._reserved)
            self._reserved = size

    def _consumer(self, entry: Entry) -> None:
        self._consumers_left -= 1
        name = entry.name[len(CONSUMER_PREFIX):] if entry.name.startswith(CONSUMER_PREFIX) else ""
        if not entry.name.startswith(CONSUMER_PREFIX):
            raise RestoreFailed(f"expected consumer, found {entry.name!r}")
        if not name or name in (".", "..") or any(c in name for c in "/\\\x00*> "):
            raise RestoreFailed(f"consumer name {name!r} is not valid")
        try:
            body = json.loads(entry.payload)
        except ValueError as exc:
            raise RestoreFailed(f"failed to decode consumer {name!r} state: {exc}") from None
        if not isinstance(body, dict) or not isinstance(body.get("config"), dict):
            raise RestoreFailed(f"consumer {name!r} is missing config")
        if body.get("state") is None:
            raise RestoreFailed(f"consumer {name!r} is missing state")
        raw = dict(body["config"])
        raw.setdefault("name", name)
        try:
            config = ConsumerConfig.from_json(raw).with_defaults()
        except ApiError as exc:
            raise RestoreFailed(f"consumer {name!r}: {exc.description}") from None
        try:
            state = consumer_state_from_json(body["state"])
        except (ValueError, TypeError) as exc:
            raise RestoreFailed(f"consumer {name!r} state: {exc}") from None
        self._consumers.append(StagedConsumer(name, config, raw, state))

    def _check_message(self, entry: Entry) -> None:
        seq = entry.sequence
        if seq == 0:
            raise RestoreFailed("expected message sequence")
        if seq <= self._last_seq:
            raise RestoreFailed(f"message sequence {seq} out of order")
        if not entry.name:
            raise RestoreFailed(f"message sequence {seq} has no subject")
        if entry.header_size > len(entry.payload):
            raise RestoreFailed(f"failed to parse message sequence {seq}: invalid header length")

    def _message(self, entry: Entry) -> None:
        seq = entry.sequence
        headers = entry.payload[:entry.header_size] or None
        data = entry.payload[entry.header_size:]
        size = self.store.msg_size(entry.name, headers, data)
        self._stored_bytes += size
        self._reserve(self._stored_bytes)
        stored = self.store.store(entry.name, headers, data, entry.timestamp)
        if stored != seq:
            raise RestoreFailed(f"message sequence {seq} stored as {stored}")
        self._last_seq = seq
        self._last_ts = entry.timestamp

    def _pad_to(self, next_seq: int) -> int:
        """Move toward `next_seq` being the next sequence stored (the ones between stay
        deleted, in one skip); the cost."""
        gap = next_seq - self._last_seq - 1
        if gap <= 0:
            return 0
        if self.store.state().msgs == 0:
            self.store.skip_to(next_seq)
            self._last_seq = next_seq - 1
            return 1
        if gap > 1:
            self.store.skip_msgs(self._last_seq + 1, gap - 1)
        # the last one as a stored-and-removed placeholder: the stream's last time is the
        # one it had (the end's trailing deletes keep state.json's last_ts)
        seq = self.store.store(GAP_SUBJECT, None, b"", self._last_ts)
        self.store.remove(seq)
        self._last_seq += gap
        return GAP_COST

    # -- the end -----------------------------------------------------------------------
    def _complete(self, reply: str) -> None:
        if self._state is None or not self._archive.finished:
            why = "backup was truncated" if self._state is not None or self.received else \
                "no snapshot data received"
            self._fail(reply, why)
            return
        if self._frames.pending:
            self._fail(reply, "backup was truncated")
            return
        self._stop()
        staged = Staged(self.config, self.store, self.staging, self._consumers)
        try:
            self.store.sync()
            info = self._adopt(staged)
        except ApiError as exc:  # nats-server: "error adding stream: ..." (a wrapped error)
            self._discard()
            self._answer_error(reply, f"error adding stream: {exc.description} ({exc.err_code})")
            return
        except (StoreError, OSError, ValueError) as exc:
            self._discard()
            self._answer_error(reply, str(exc))
            return
        self.host.publish(reply, None, None,
                          json.dumps({"type": CREATE_RESPONSE, **info}).encode())
        logger.info("restored stream %s (%d bytes received)", self.config.name, self.received)

    def _fail(self, reply: str, why: str, error: ApiError | None = None) -> None:
        logger.warning("restore of stream %s failed: %s", self.config.name, why)
        self._stop()
        self._discard()
        self._answer_error(reply, why, error)

    def _answer_error(self, reply: str, why: str, error: ApiError | None = None) -> None:
        if error is None:
            error = ApiError(Err.STREAM_RESTORE, err=why)
        self.host.publish(reply, None, None, json.dumps(
            {"type": CREATE_RESPONSE, "error": error.to_json()}).encode())

    def _abort(self, why: str) -> None:
        logger.warning("restore of stream %s aborted: %s", self.config.name, why)
        self._stop()
        self._discard()

    def _stalled(self) -> None:
        self._stall = None
        if not self.closed:
            self._abort(f"restore for stream {self.config.name} is stalled")

    def _arm_stall(self) -> None:
        if self._stall is not None:
            self._stall.cancel()
        self._stall = self.host.clock.call_later(STALL_S, self._stalled)

    def _stop(self) -> None:
        self.closed = True
        self._registry.discard(self)
        self._queue.clear()
        self._entries.clear()
        self._unanswered.clear()
        for timer in (self._stall, self._turn):
            if timer is not None:
                timer.cancel()
        self._stall = self._turn = None
        if self._sid is not None:
            self.host.unsubscribe(self._sid)
            self._sid = None

    def _discard(self) -> None:
        if self._discarded:
            return
        self._discarded = True
        try:
            if self.staging is not None:
                self.store.close()
            else:
                self.store.destroy()
        except (StoreError, OSError) as exc:
            logger.warning("restore of stream %s: closing the staged store: %s",
                           self.config.name, exc)
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)


def persistent(consumer: StagedConsumer) -> bool:
    """Kept on disk with a file stream (durable, not `mem_storage`), as when created."""
    return consumer.config.is_durable and not consumer.config.mem_storage


def write_staged_consumers(staged: Staged, sync: bool, created_ns: int) -> None:
    """A file stream's durable consumers go to disk with it, where the engine reopens them."""
    if staged.directory is None:
        return
    for consumer in staged.consumers:
        if not persistent(consumer):
            continue
        store = ConsumerStore.for_stream(staged.directory, consumer.name, sync=sync)
        store.write_meta(consumer.config.to_json(), created_ns)
        store.write_state(consumer.state)
        store.close()


def _staging_root(store_dir: str | os.PathLike[str], account: str) -> Path:
    return Path(store_dir) / "jetstream" / account / "restores"


def restore_staging_dir(store_dir: str | os.PathLike[str], name: str, account: str = ACCOUNT) -> Path:
    """A fresh staging directory, beside (never inside) the streams directory."""
    return _staging_root(store_dir, account) / f"{name}.{secrets.token_hex(8)}"


def clear_stale_staging(store_dir: str | os.PathLike[str], account: str = ACCOUNT) -> None:
    """At start: restores cut off by a stop or a crash left their staged data; drop it
    (it never was a stream)."""
    root = _staging_root(store_dir, account)
    if root.is_dir():
        logger.warning("dropping the data of unfinished stream restores in %s", root)
        shutil.rmtree(root, ignore_errors=True)


def adopt_consumers(host: ConsumerHost, stream: Stream, consumers: list[StagedConsumer]) -> None:
    """Consumers kept in memory only (a memory stream's, ephemerals), created with their
    restored state; an ephemeral one starts its inactivity clock now, as with nats-server."""
    for staged in consumers:
        if stream.directory is not None and persistent(staged):
            continue  # reopened from disk
        consumer = Consumer(host, stream, staged.config, name=staged.name, state=staged.state)
        stream.consumers[staged.name] = consumer
        host.clock.call_later(0, consumer.kick)


def parse_time(text: Any) -> int:
    """An RFC 3339 time of state.json in ns (0 when absent or unreadable)."""
    if not isinstance(text, str) or not text:
        return 0
    try:
        return parse_rfc3339_ns(text)
    except ValueError:
        return 0
