"""What a snapshot holds, in nats-server 2.15's backup format (the `NATSARC1` archive).

`SnapshotContent(stream, include_consumers)` produces the S2-framed archive
lazily: `fill(budget)` encodes about `budget` uncompressed bytes of entries
(loading messages from the store as it goes), `take(n)` hands out compressed
bytes; so a snapshot of any size costs bounded memory (what was filled and not
taken) and each call bounded time. The
entries are nats-server's: `state.json` (the stream state at the start;
`consumer_count` = the consumer entries that follow), `consumers/<name>`
(`{"config", "state"}` with nats-server's consumer state JSON), every message
(subject, sequence, timestamp, headers + data) up to the last sequence at the
start, and the end sentinel. Messages stored after the start are not included
(nats-server's snapshot stops at the state it began with too).

`consumer_state_json` / `consumer_state_from_json` convert between this
server's `ConsumerState` and nats-server's JSON (`delivered`, `ack_floor`,
`pending` keyed by stream sequence, `redelivered`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from jetstream_server.core.gotime import rfc3339_ns
from jetstream_server.jetstream.consumer.consumer import Consumer
from jetstream_server.jetstream.consumer.store import ConsumerState
from jetstream_server.jetstream.stream import Stream
from jetstream_server.store.natsarc import MAGIC, encode_entry, end_entry
from jetstream_server.store.s2frame import FrameEncoder

STATE_ENTRY = "state.json"
CONSUMER_PREFIX = "consumers/"


def consumer_state_json(state: ConsumerState, last_seq: int) -> dict[str, Any]:
    """nats-server's ConsumerState JSON, bounded to the snapshot's last sequence."""
    out: dict[str, Any] = {
        "delivered": {
            "consumer_seq": state.delivered_consumer_seq,
            "stream_seq": min(state.delivered_stream_seq, last_seq),
        },
        "ack_floor": {
            "consumer_seq": state.ack_floor_consumer_seq,
            "stream_seq": min(state.ack_floor_stream_seq, last_seq),
        },
    }
    pending = {
        str(sseq): {"sequence": cseq, "ts": ts}
        for sseq, cseq, ts in state.pending
        if sseq <= last_seq
    }
    if pending:
        out["pending"] = pending
    redelivered = {str(sseq): n for sseq, n in state.redelivered if sseq <= last_seq}
    if redelivered:
        out["redelivered"] = redelivered
    return out


def _seq_pair(raw: Any, what: str) -> tuple[int, int]:
    if raw is None:
        return 0, 0
    if not isinstance(raw, dict):
        raise ValueError(f"consumer state {what} is not an object")
    cseq, sseq = raw.get("consumer_seq", 0), raw.get("stream_seq", 0)
    if not isinstance(cseq, int) or not isinstance(sseq, int) or cseq < 0 or sseq < 0:
        raise ValueError(f"consumer state {what} holds a bad sequence")
    return cseq, sseq


def consumer_state_from_json(raw: Any) -> ConsumerState:
    """This server's ConsumerState from nats-server's JSON; ValueError naming the problem."""
    if not isinstance(raw, dict):
        raise ValueError("consumer state is not an object")
    dc, ds = _seq_pair(raw.get("delivered"), "delivered")
    fc, fs = _seq_pair(raw.get("ack_floor"), "ack_floor")
    pending: list[tuple[int, int, int]] = []
    for key, value in (raw.get("pending") or {}).items():
        if not isinstance(value, dict):
            raise ValueError("consumer state pending entry is not an object")
        pending.append((int(key), int(value.get("sequence", 0)), int(value.get("ts", 0))))
    redelivered = [(int(k), int(v)) for k, v in (raw.get("redelivered") or {}).items()]
    return ConsumerState(
        delivered_consumer_seq=dc, delivered_stream_seq=ds,
        ack_floor_consumer_seq=fc, ack_floor_stream_seq=fs,
        pending=sorted(pending), redelivered=sorted(redelivered),
    )


def state_json(stream: Stream, consumers: int) -> dict[str, Any]:
    st = stream.store.state()
    out: dict[str, Any] = {
        "messages": st.msgs,
        "bytes": st.bytes,
        "first_seq": st.first_seq if st.msgs or st.last_seq else 0,
        "first_ts": rfc3339_ns(st.first_ts_ns if st.msgs else 0),
        "last_seq": st.last_seq,
        "last_ts": rfc3339_ns(st.last_ts_ns if st.last_seq else 0),
    }
    if st.num_subjects:
        out["num_subjects"] = st.num_subjects
    if st.num_deleted:
        out["num_deleted"] = st.num_deleted
    out["consumer_count"] = consumers
    return out


class SnapshotContent:
    """The compressed archive of one stream, produced on demand (module docstring)."""

    def __init__(self, stream: Stream, include_consumers: bool, now_ns: int) -> None:
        st = stream.store.state()
        self.stream = stream
        self.first_seq = st.first_seq
        self.last_seq = st.last_seq
        self._consumers: list[tuple[str, dict[str, Any]]] = []
        if include_consumers:
            for name, consumer in stream.consumers.items():
                if not isinstance(consumer, Consumer):
                    continue
                body = {"config": consumer.config.to_json(),
                        "state": consumer_state_json(consumer.snapshot(), self.last_seq)}
                self._consumers.append((name, body))
        self.state = state_json(stream, len(self._consumers))
        self._now_ns = now_ns
        self._encoder = FrameEncoder()
        self._entries = self._generate()
        self._raw = bytearray()
        self._out = bytearray()
        self._encoded = 0
        self.done = False

    def _generate(self) -> Iterator[bytes]:
        yield MAGIC + encode_entry(
            STATE_ENTRY, self._now_ns, 0, b"", json.dumps(self.state).encode()
        )
        for name, body in self._consumers:
            yield encode_entry(
                CONSUMER_PREFIX + name, self._now_ns, 0, b"", json.dumps(body).encode()
            )
        if self.last_seq:
            for msg in self.stream.store.iter_range(self.first_seq, self.last_seq):
                yield encode_entry(
                    msg.subject, msg.timestamp_ns, msg.seq, msg.headers or b"", msg.data
                )
        yield end_entry()

    @property
    def available(self) -> int:
        """Compressed bytes ready to be taken."""
        return len(self._out)

    def fill(self, budget: int) -> None:
        """Encode entries worth about `budget` uncompressed bytes (at least one entry);
        `done` once everything is encoded."""
        block = 64 << 10
        start = self._encoded
        while not self.done and self._encoded - start < budget:
            entry = next(self._entries, None)
            if entry is None:
                self.done = True
            else:
                self._raw += entry
                self._encoded += len(entry)
            if len(self._raw) >= block or (self.done and self._raw):
                cut = len(self._raw) if self.done else len(self._raw) - len(self._raw) % block
                self._out += self._encoder.encode(self._raw[:cut])
                del self._raw[:cut]

    def take(self, n: int) -> bytes:
        """Up to `n` of the compressed bytes ready."""
        out = bytes(self._out[:n])
        del self._out[:n]
        return out

    def read(self, n: int) -> bytes:
        """Up to `n` compressed bytes (fewer only at the end; b"" when everything was read)."""
        while len(self._out) < n and not self.done:
            self.fill(n)
        return self.take(n)
