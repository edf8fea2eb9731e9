"""Atomic batch publish (ADR-50): all the messages of a batch are stored, or none.

A publish carrying ``Nats-Batch-Id`` (at most 64 bytes) and
``Nats-Batch-Sequence`` (1, 2, ... without gaps) to a stream with
`allow_atomic` is staged; the message with ``Nats-Batch-Commit: 1`` (stored
too) or ``Nats-Batch-Commit: eob`` (end of batch: not stored, the last staged
message gets ``Nats-Batch-Commit: 1``) commits the batch. Each staged message
with a reply gets an empty acknowledgement; the commit gets the pub ack of the
last message with ``"batch": <id>, "count": <messages stored>``. A gap, an
unknown batch that does not start at 1, a batch left idle for 10 s, more than
1000 messages, more than 50 open batches on a stream (1000 on the server),
a bad commit value or a consistency check failing at commit end the batch
with nats-server's error (server/stream.go processJetStreamAtomicBatchMsg).

`AtomicBatches.publish` takes each message: `stage` decides (staged, the
`Commit`, or refused); a commit is checked whole (`check_commit`), then each
message is stored through the publish pipeline's `accept` (publish.py), so the
per-message checks, limits and consumers are those of single publishes. A
message the store then fails takes back what the batch stored before it;
otherwise every message is settled in order through the pipeline (held for
the group commit with `sync_always`), the last with the batch's pub ack
(`BatchAck`, pub_ack.py). Staging is kept in memory: an uncommitted batch does
not survive a restart (nothing of it was acknowledged as stored).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from jetstream_server.core.clock import Clock, TimerHandle
from jetstream_server.core.headers import HeaderError, parse_headers
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.pub_ack import BatchAck
from jetstream_server.jetstream.publish import PublishPipeline
from jetstream_server.jetstream.stream import PubAck, Stream
from jetstream_server.jetstream.versioning import REQUIRED_LEVEL_HEADER, required_level_refused

BATCH_ID: Final = "Nats-Batch-Id"
BATCH_SEQ: Final = "Nats-Batch-Sequence"
BATCH_COMMIT: Final = "Nats-Batch-Commit"
MAX_BATCH_ID_LEN: Final = 64
MAX_BATCH_SIZE: Final = 1000
MAX_INFLIGHT_PER_STREAM: Final = 50
MAX_INFLIGHT_TOTAL: Final = 1000
BATCH_TIMEOUT_S: Final = 10.0

Message = tuple[str, bytes, bytes]  # subject, headers, payload


@dataclass(slots=True)
class _Staged:
    messages: list[Message] = field(default_factory=list)
    timer: TimerHandle | None = None


@dataclass(frozen=True, slots=True)
class Commit:
    """A batch ready to be stored: its messages in order (the last carries the commit)."""

    batch_id: str
    messages: list[Message]


def batch_id_of(headers: bytes | None) -> str:
    """The (non-empty) ``Nats-Batch-Id`` of a publish, or ""."""
    if not headers or BATCH_ID.encode() not in headers:
        return ""
    try:
        return parse_headers(headers).get(BATCH_ID) or ""
    except HeaderError:
        return ""


class AtomicBatches:
    """The open batches of every stream (see module docstring); commits are
    stored and answered through `pipeline`."""

    def __init__(self, clock: Clock, pipeline: PublishPipeline) -> None:
        self.clock = clock
        self._pipeline = pipeline
        self._open: dict[tuple[str, str], _Staged] = {}

    def open_count(self, stream: str | None = None) -> int:
        return sum(1 for key in self._open if stream is None or key[0] == stream)

    def drop_stream(self, stream: str) -> None:
        """The stream went away or stopped allowing atomic batches."""
        for key in [k for k in self._open if k[0] == stream]:
            self._close(key)

    def publish(
        self, stream: Stream, subject: str, reply: str | None, headers: bytes, payload: bytes
    ) -> None:
        """A message of an atomic batch: staged (an empty ack), or the whole batch
        stored and acknowledged once, or refused."""
        pipeline = self._pipeline
        try:
            commit = self.stage(stream, subject, headers, payload)
            if commit is None:
                if reply and not stream.config.no_ack:
                    pipeline.send(reply, b"")  # staged
                return
            now = self.clock.now_ns()
            check_commit(stream, commit, lambda msg_id: stream.is_duplicate(msg_id, now))
        except ApiError as exc:
            pipeline.send_ack(stream, reply, PubAck(0, error=exc))
            return
        acks: list[PubAck] = []
        for msg_subject, msg_headers, msg_payload in commit.messages:
            ack = pipeline.accept(stream, msg_subject, msg_headers, msg_payload)
            if ack.error is not None or ack.msg is None:
                # checked before, so only a store failure gets here: take back what was stored
                for stored in acks:
                    stream.store.remove(stored.seq)
                pipeline.send_ack(stream, reply, ack if ack.error is not None else PubAck(
                    0, error=ApiError(Err.ATOMIC_PUBLISH_CONTAINS_DUPLICATE_MESSAGE)))
                return
            acks.append(ack)
        for ack in acks[:-1]:
            pipeline.settle(stream, None, ack)
        pipeline.settle(stream, reply, BatchAck(acks[-1], commit.batch_id, len(acks)))

    def stage(self, stream: Stream, subject: str, headers: bytes, payload: bytes) -> Commit | None:
        """Stage one message of a batch: None while the batch is open, the `Commit`
        once it is complete; `ApiError` when the batch (or this message) is refused."""
        try:
            hdr = parse_headers(headers)
        except HeaderError:
            raise ApiError(Err.ATOMIC_PUBLISH_MISSING_SEQ) from None
        cfg = stream.config
        if cfg.sealed:
            raise ApiError(Err.STREAM_SEALED)
        limit = cfg.max_msg_size
        if limit >= 0 and (len(headers) > limit or len(payload) > limit - len(headers)):
            raise ApiError(Err.STREAM_MESSAGE_EXCEEDS_MAXIMUM)
        if not cfg.allow_atomic:
            raise ApiError(Err.ATOMIC_PUBLISH_DISABLED)
        batch_id = hdr.get(BATCH_ID) or ""
        if len(batch_id.encode()) > MAX_BATCH_ID_LEN:
            raise ApiError(Err.ATOMIC_PUBLISH_INVALID_BATCH_ID)
        raw_seq = hdr.get(BATCH_SEQ)
        if raw_seq is None or not raw_seq.isdigit():
            raise ApiError(Err.ATOMIC_PUBLISH_MISSING_SEQ)
        seq = int(raw_seq)
        commit_value = hdr.get(BATCH_COMMIT)
        eob = commit_value == "eob"
        key = (stream.name, batch_id)
        staged = self._open.get(key)
        if staged is None:
            if seq != 1:
                if seq - eob > MAX_BATCH_SIZE:
                    raise ApiError(Err.ATOMIC_PUBLISH_TOO_LARGE_BATCH, size=MAX_BATCH_SIZE)
                raise ApiError(Err.ATOMIC_PUBLISH_INCOMPLETE_BATCH)
            if self.open_count(stream.name) >= MAX_INFLIGHT_PER_STREAM or (
                len(self._open) >= MAX_INFLIGHT_TOTAL
            ):
                raise ApiError(Err.ATOMIC_PUBLISH_TOO_MANY_INFLIGHT)
            staged = self._open[key] = _Staged()
        if commit_value is not None and commit_value not in ("1", "eob"):
            self._close(key)
            raise ApiError(Err.ATOMIC_PUBLISH_INVALID_BATCH_COMMIT)
        if hdr.get(REQUIRED_LEVEL_HEADER) is not None and required_level_refused(headers):
            self._close(key)
            raise ApiError(Err.REQUIRED_API_LEVEL)
        if seq != len(staged.messages) + 1 or (seq == 1 and eob):
            self._close(key)
            raise ApiError(Err.ATOMIC_PUBLISH_INCOMPLETE_BATCH)
        if seq - eob > MAX_BATCH_SIZE:
            self._close(key)
            raise ApiError(Err.ATOMIC_PUBLISH_TOO_LARGE_BATCH, size=MAX_BATCH_SIZE)
        if commit_value is None:
            staged.messages.append((subject, headers, payload))
            self._arm(key, staged)
            return None
        self._close(key)
        messages = staged.messages
        if eob:
            last_subject, last_headers, last_payload = messages[-1]
            messages[-1] = (last_subject, _with_commit(last_headers), last_payload)
        else:
            messages.append((subject, headers, payload))
        return Commit(batch_id, messages)

    def _arm(self, key: tuple[str, str], staged: _Staged) -> None:
        if staged.timer is not None:
            staged.timer.cancel()
        staged.timer = self.clock.call_later(BATCH_TIMEOUT_S, lambda: self._close(key))

    def _close(self, key: tuple[str, str]) -> None:
        staged = self._open.pop(key, None)
        if staged is not None and staged.timer is not None:
            staged.timer.cancel()
            staged.timer = None


def _with_commit(headers: bytes) -> bytes:
    line = f"{BATCH_COMMIT}: 1\r\n\r\n".encode()
    return headers[:-2] + line if headers.endswith(b"\r\n\r\n") else headers + line


def check_commit(
    stream: Stream, commit: Commit, is_duplicate: Callable[[str], bool]
) -> None:
    """The checks nats-server runs over a whole batch before storing any of it
    (jetstream_batching.go checkMsgHeadersPreClusteredProposal), so that the
    batch is stored completely or not at all: unsupported headers, message ids
    repeated or already stored, a last-sequence expectation after the first
    message, and room in a discard-new stream."""
    seen: set[str] = set()
    for index, (_subject, headers, _payload) in enumerate(commit.messages):
        try:
            hdr = parse_headers(headers)
        except HeaderError:
            continue
        if hdr.get("Nats-Expected-Last-Msg-Id") is not None:
            raise ApiError(
                Err.ATOMIC_PUBLISH_UNSUPPORTED_HEADER_BATCH, header="Nats-Expected-Last-Msg-Id"
            )
        msg_id = hdr.get("Nats-Msg-Id") or ""
        if msg_id:
            if msg_id in seen or is_duplicate(msg_id):
                raise ApiError(Err.ATOMIC_PUBLISH_CONTAINS_DUPLICATE_MESSAGE)
            seen.add(msg_id)
        if index > 0 and hdr.get("Nats-Expected-Last-Sequence") is not None:
            raise ApiError(Err.STREAM_WRONG_LAST_SEQUENCE_CONSTANT)
    cfg = stream.config
    if cfg.discard == "new":
        state = stream.store.state()
        if cfg.max_msgs > 0 and state.msgs + len(commit.messages) > cfg.max_msgs:
            raise ApiError(Err.STREAM_STORE_FAILED, err="maximum messages exceeded")
        size = sum(len(s) + len(h) + len(p) for s, h, p in commit.messages)
        if cfg.max_bytes > 0 and state.bytes + size > cfg.max_bytes:
            raise ApiError(Err.STREAM_STORE_FAILED, err="maximum bytes exceeded")
