"""Fast (non-atomic) batch publish (ADR-50 "fast batch", nats-server 2.14, API level 4).

A publish whose reply subject ends in ``.$FI`` is part of a fast batch, named
by that reply: ``<inbox>.<batch id>.<flow>.<gap mode>.<batch seq>.<op>.$FI``
with `op` 0 start (seq 1), 1 append (seq > 1), 2 commit, 3 commit at end of
batch (the message itself is not stored; not at seq 1) and 4 ping; gap mode
``fail`` or ``ok``; `flow` the most messages the publisher lets go between two
flow acknowledgements (<= 0: 10). Each message is stored as it comes, like a
single publish (no all-or-nothing as with `allow_atomic`); the publisher hears:

- ``{"type":"ack","seq":S,"msgs":N}``: messages up to batch sequence S are
  stored, the next flow ack comes after N more (the first, ``seq`` 0, answers
  the first message); N ramps up to the publisher's `flow` (at most 500 shared
  by the stream's open batches);
- ``{"type":"gap","last_seq":E,"seq":S}``: messages E..S-1 never arrived (with
  ``fail`` the batch ends there, with ``ok`` it goes on);
- ``{"type":"err","seq":S,"error":{...}}``: message S was refused;
- at the commit, the pub ack of the last stored message with ``"batch"`` and
  ``"count"`` (the batch sequence committed).

Refusals of the batch itself (not allowed on the stream, a bad reply pattern,
an id over 64 bytes, an unknown batch not starting at 1, more than 1000 open
batches on a stream or 50,000 on the server) are pub ack errors, as are the
first message's own errors. A batch idle for 10 s is forgotten. A sequence
going back ends the batch without a gap report (nats-server's main branch,
TestJetStreamFastBatchPublishGapOkBackwardSeq; 2.15.1 still reports one); a
ping for a batch not open is refused as unknown (2.15.1).

This follows nats-server's server/stream.go (getFastBatch,
processJetStreamFastBatchMsg) and jetstream_batching.go (fastBatch*). Each
message is stored through the publish pipeline (publish.py) with no reply of
its own and an `on_persisted` callback: the pipeline calls it once the message
is persisted (after the group commit's fsync with `sync_always`), or with an
error when its sync failed, and that is when flow acks and the commit's pub
ack go out. Every answer goes through the pipeline (`send_ack`, `send`), in
pub_ack.py's JSON.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Final

from jetstream_server.core.clock import Clock, TimerHandle
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.pub_ack import dumps
from jetstream_server.jetstream.publish import PublishPipeline
from jetstream_server.jetstream.stream import PubAck, Stream
from jetstream_server.jetstream.versioning import REQUIRED_LEVEL_HEADER, required_level_refused

SUFFIX: Final = ".$FI"
OP_START, OP_APPEND, OP_COMMIT, OP_COMMIT_EOB, OP_PING = range(5)
MAX_BATCH_ID_LEN: Final = 64
MAX_INFLIGHT_PER_STREAM: Final = 1000
MAX_INFLIGHT_TOTAL: Final = 50_000
BATCH_TIMEOUT_S: Final = 10.0
DEFAULT_FLOW: Final = 10
MAX_FLOW: Final = 0xFFFF  # the publisher's flow is a uint16
MAX_ACK_MESSAGES: Final = 500
_MAX_SEQ: Final = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class FastOp:
    """One message's batch instruction, parsed from its reply subject."""

    batch_id: str
    seq: int
    flow: int
    gap_ok: bool
    op: int

    @property
    def commit(self) -> bool:
        return self.op in (OP_COMMIT, OP_COMMIT_EOB)


class Invalid:
    """A reply ending in ``.$FI`` that is not a valid batch pattern."""


INVALID: Final = Invalid()


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def parse_reply(reply: str | None) -> FastOp | Invalid | None:
    """The fast batch instruction of `reply`: None when it is not one at all,
    `INVALID` when it ends in ``.$FI`` but breaks the pattern (in nats-server's
    order of checks)."""
    if not reply or len(reply) <= len(SUFFIX) or not reply.endswith(SUFFIX):
        return None
    parts = reply[: -len(SUFFIX)].rsplit(".", 5)
    if len(parts) < 2 or not _digits(parts[-1]) or int(parts[-1]) > OP_PING:
        return INVALID
    op = int(parts[-1])
    if len(parts) < 3 or not _digits(parts[-2]):
        return INVALID
    seq = int(parts[-2])
    if seq == 0 or seq >= _MAX_SEQ:
        return INVALID
    if (seq == 1 and op == OP_COMMIT_EOB) or (op == OP_START and seq != 1) or (
        op == OP_APPEND and seq <= 1
    ):
        return INVALID
    if len(parts) < 4 or parts[-3] not in ("fail", "ok"):
        return INVALID
    if len(parts) < 5:
        return INVALID
    flow = int(parts[-4]) if _digits(parts[-4]) else 0
    flow = DEFAULT_FLOW if flow <= 0 else min(flow, MAX_FLOW)
    if len(parts) < 6:
        return INVALID
    return FastOp(parts[-5], seq, flow, parts[-3] == "ok", op)


def without_header(headers: bytes, name: str) -> bytes | None:
    """`headers` without the lines of `name` (exact case, as nats-server's
    removeHeaderIfPresent); None when no header is left."""
    key = name.encode() + b":"
    lines = headers.split(b"\r\n")
    kept = [line for i, line in enumerate(lines) if i == 0 or not line.startswith(key)]
    if len(kept) == len(lines):
        return headers
    block = b"\r\n".join(kept)
    return None if block.rstrip(b"\r\n") == lines[0] else block


@dataclass(slots=True)
class _Batch:
    max_ack_messages: int
    gap_ok: bool
    ack_messages: int = 1
    lseq: int = 0  # highest batch sequence received
    sseq: int = 0  # stream sequence of the last persisted message
    pseq: int = 0  # highest batch sequence persisted
    fseq: int = 0  # batch sequence of the last flow ack
    pending: int = 0  # stored, not yet persisted
    reply: str = ""
    commit: bool = False
    timer: TimerHandle | None = None
    active_ns: int = 0  # the last message (the idle timer re-arms from it)


class FastBatches:
    """The open fast batches of every stream (see module docstring); messages are
    stored and answered through `pipeline`."""

    def __init__(self, clock: Clock, pipeline: PublishPipeline) -> None:
        self.clock = clock
        self._pipeline = pipeline
        self._send = pipeline.send
        self._open: dict[str, dict[str, _Batch]] = {}
        self._total = 0

    def open_count(self, stream: str | None = None) -> int:
        if stream is not None:
            return len(self._open.get(stream, {}))
        return self._total

    def drop_stream(self, stream: str) -> None:
        """The stream went away or stopped allowing fast batches."""
        for batch_id in list(self._open.get(stream, {})):
            self._close(stream, batch_id)

    # -- receiving -----------------------------------------------------------------
    def publish(
        self, stream: Stream, subject: str, reply: str, headers: bytes | None, payload: bytes
    ) -> None:
        """One message whose reply ends in ``.$FI``."""
        op = parse_reply(reply)
        cfg = stream.config
        can_respond = not cfg.no_ack

        def refuse(error: Err, **fields: Any) -> None:
            if can_respond:
                self._pipeline.send_ack(stream, reply, PubAck(0, error=ApiError(error, **fields)))

        if cfg.sealed:
            return refuse(Err.STREAM_SEALED)
        limit = cfg.max_msg_size
        size = len(headers or b"")
        if limit >= 0 and (size > limit or len(payload) > limit - size):
            return refuse(Err.STREAM_MESSAGE_EXCEEDS_MAXIMUM)
        if not cfg.allow_batched:
            return refuse(Err.BATCH_PUBLISH_DISABLED)
        if not isinstance(op, FastOp):
            return refuse(Err.BATCH_PUBLISH_INVALID_PATTERN)
        if len(op.batch_id.encode()) > MAX_BATCH_ID_LEN:
            return refuse(Err.BATCH_PUBLISH_INVALID_BATCH_ID)
        batches = self._open.setdefault(stream.name, {})
        b = batches.get(op.batch_id)
        if b is None:
            if op.seq != 1 or op.op == OP_PING:  # nats-server 2.15.1: a ping opens nothing
                return refuse(Err.BATCH_PUBLISH_UNKNOWN_BATCH_ID)
            if len(batches) + 1 > MAX_INFLIGHT_PER_STREAM or self._total + 1 > MAX_INFLIGHT_TOTAL:
                return refuse(Err.BATCH_PUBLISH_TOO_MANY_INFLIGHT)
            b = batches[op.batch_id] = _Batch(op.flow, op.gap_ok)
            self._total += 1
            self._init_flow(stream.name, b)
        if headers and REQUIRED_LEVEL_HEADER.encode() in headers:
            if required_level_refused(headers):
                self._close(stream.name, op.batch_id)
                return refuse(Err.REQUIRED_API_LEVEL)
            headers = without_header(headers, REQUIRED_LEVEL_HEADER)  # nats-server: never stored
        if not b.commit:
            self._arm(stream.name, op.batch_id, b)
        if op.op == OP_PING:
            return self._ping(stream, op, reply, b)
        if b.commit:
            return None  # committing: the publisher waits for the pub ack
        b.lseq += 1
        if b.lseq != op.seq:
            if op.seq > b.lseq:
                self._send(reply, dumps({"type": "gap", "last_seq": b.lseq, "seq": op.seq}))
            if b.gap_ok and op.seq > b.lseq:
                b.lseq = op.seq
            else:  # a gap in fail mode, or a sequence going back: the batch ends
                b.lseq -= 1
                self._commit(stream, op.batch_id, b, reply)
                return None
        if op.commit:
            if op.op == OP_COMMIT_EOB:
                b.lseq -= 1
                if b.pending == 0:
                    b.pseq = b.lseq
            self._commit(stream, op.batch_id, b, reply)
            if op.op == OP_COMMIT_EOB:
                return None
        if op.seq == 1 and can_respond and not op.commit:
            self._send(reply, dumps({"type": "ack", "seq": 0, "msgs": b.ack_messages}))
        self._store(stream, subject, reply, headers, payload, op, b)
        return None

    def _ping(self, stream: Stream, op: FastOp, reply: str, b: _Batch) -> None:
        """A ping resends the flow ack; a sequence past what arrived is a gap."""
        send_flow = True
        if op.seq > b.lseq:
            self._send(reply, dumps({"type": "gap", "last_seq": b.lseq + 1, "seq": op.seq + 1}))
            if b.gap_ok:
                b.lseq = op.seq
                if b.pending == 0:
                    b.pseq = b.lseq
                send_flow = not self._check_flow(stream.name, b, reply)
            elif self._commit(stream, op.batch_id, b, reply):
                send_flow = False
        if send_flow:
            self._flow_ack(b, reply)

    def _store(
        self, stream: Stream, subject: str, reply: str, headers: bytes | None, payload: bytes,
        op: FastOp, b: _Batch,
    ) -> None:
        b.pending += 1
        persisted = functools.partial(self._persisted, stream, op, reply)
        ack = self._pipeline.ingest(stream, subject, None, headers, payload, on_persisted=persisted)
        if ack.msg is None:
            b.pending -= 1
            self._refused(stream, op, reply, b, ack)

    def _refused(self, stream: Stream, op: FastOp, reply: str, b: _Batch, ack: PubAck) -> None:
        """The message was a duplicate or refused by the stream's checks."""
        if ack.duplicate and ack.error is None:
            if b.pending == 0:
                b.pseq = op.seq
                self._check_flow(stream.name, b, reply)
            if not op.commit:
                return
        if not b.gap_ok and b.lseq == 1:  # the first message: answered as a single publish
            self._close(stream.name, op.batch_id)
            # nats-server answers this one even on a no_ack stream
            acks = self._pipeline.acks
            self._send(reply, acks.batch(stream.name, ack.seq, op.batch_id, op.seq, duplicate=True)
                       if ack.error is None else acks.error(stream.name, ack.error))
            return
        if ack.error is not None:
            self._send(reply, dumps({"type": "err", "seq": op.seq, "error": ack.error.to_json()}))
            if b.gap_ok and not op.commit:
                return
            b.lseq -= 1
            if b.pending == 0:
                b.pseq = b.lseq
        self._commit(stream, op.batch_id, b, reply)

    # -- persisted -------------------------------------------------------------------
    def _persisted(self, stream: Stream, op: FastOp, reply: str, ack: PubAck) -> None:
        """The pipeline's `on_persisted` of a stored message
        (fastBatchRegisterSequences): synced (`ack.msg`), or the sync failed (an
        error ack)."""
        b = self._open.get(stream.name, {}).get(op.batch_id)
        if b is None:
            return  # forgotten meanwhile (idle, or the stream stopped allowing batches)
        if b.pending > 0:
            b.pending -= 1
        if ack.error is not None:  # stored, then the sync failed: the batch ends here
            self._send(reply, dumps({"type": "err", "seq": op.seq, "error": ack.error.to_json()}))
            b.lseq = b.pseq
            self._commit(stream, op.batch_id, b, reply)
            return
        b.reply = reply
        b.sseq = ack.seq
        b.pseq = b.lseq if b.pending == 0 else op.seq
        if b.lseq == b.pseq and b.commit:
            self._close(stream.name, op.batch_id)
            self._batch_ack(stream, reply, b.sseq, op.batch_id, b.lseq)
            return
        self._check_flow(stream.name, b, reply)

    # -- flow control and commit -------------------------------------------------------
    def _init_flow(self, stream: str, b: _Batch) -> None:
        b.ack_messages = 1 if len(self._open.get(stream, {})) > 1 else min(
            MAX_ACK_MESSAGES, b.max_ack_messages
        )

    def _check_flow(self, stream: str, b: _Batch, reply: str) -> bool:
        """Send a flow ack when `ack_messages` more were persisted, adjusting
        the pace to the stream's number of open batches."""
        every = b.ack_messages
        if b.pseq < b.fseq + every:
            return False
        b.fseq += (b.pseq - b.fseq) // every * every
        target = min(max(MAX_ACK_MESSAGES // max(len(self._open.get(stream, {})), 1), 1),
                     b.max_ack_messages)
        if b.ack_messages < target:
            b.ack_messages = min(b.ack_messages * 2, target)
        elif b.ack_messages > target:
            b.ack_messages = max(b.ack_messages // 2, target)
        self._flow_ack(b, reply)
        return True

    def _flow_ack(self, b: _Batch, reply: str) -> None:
        if reply:
            self._send(reply, dumps({"type": "ack", "seq": b.fseq, "msgs": b.ack_messages}))

    def _commit(self, stream: Stream, batch_id: str, b: _Batch, reply: str) -> bool:
        """End the batch: the pub ack now when all of it is persisted (True),
        else when its last message is."""
        b.commit = True
        if b.timer is not None:
            b.timer.cancel()
            b.timer = None
        if b.lseq != b.pseq:
            return False
        self._close(stream.name, batch_id)
        self._batch_ack(stream, reply, b.sseq, batch_id, b.lseq)
        return True

    def _batch_ack(self, stream: Stream, reply: str, seq: int, batch_id: str, count: int) -> None:
        """The commit's pub ack (nats-server sends it even on a no_ack stream)."""
        if reply:
            self._send(reply, self._pipeline.acks.batch(stream.name, seq, batch_id, count))

    def _arm(self, stream: str, batch_id: str, b: _Batch) -> None:
        """The idle timeout starts again: noted, not a new timer per message."""
        b.active_ns = self.clock.now_ns()
        if b.timer is None:
            b.timer = self.clock.call_later(BATCH_TIMEOUT_S, lambda: self._idle(stream, batch_id))

    def _idle(self, stream: str, batch_id: str) -> None:
        b = self._open.get(stream, {}).get(batch_id)
        if b is None:
            return
        b.timer = None
        left = BATCH_TIMEOUT_S - (self.clock.now_ns() - b.active_ns) / 1e9
        if left > 0:
            b.timer = self.clock.call_later(left, lambda: self._idle(stream, batch_id))
        else:
            self._close(stream, batch_id)

    def _close(self, stream: str, batch_id: str) -> None:
        batches = self._open.get(stream)
        if not batches:
            return
        b = batches.pop(batch_id, None)
        if b is None:
            return
        self._total -= 1
        if b.timer is not None:
            b.timer.cancel()
            b.timer = None
        if not batches:
            del self._open[stream]

