"""Streaming a snapshot to its client, paced by the client's acks, as nats-server does.

nats-server (jetstream_api.go `streamSnapshot`): chunk size clamped to
1 KiB..1 MiB (default 128 KiB), window 1 KiB..32 MiB (default 8 MiB, at least
one chunk); `window / chunk` chunks may be unacknowledged. Each full chunk goes
to the deliver subject with the reply `$JS.SNAPSHOT.ACK.<stream>.<id>.<len>.<n>`;
any message on that ack prefix frees one slot. The last, partial chunk has no
reply. Then an empty message ends the snapshot: header `NATS/1.0 204` when any
full chunk was sent (none at all otherwise, nats-server's quirk), `408 No Flow
Response` when no ack came for 5 s, `408 No Interest` when the deliver subject
lost its subscribers (checked at each turn and when the ack wait ends; nats-server
is told at once), `500 <error>` when reading the stream failed.

Bounded work per loop turn: a turn encodes at most `TURN_RAW_BYTES` of
messages (sending every full chunk that makes) and then schedules the next
turn with `clock.call_later(0)`, so a big snapshot never stalls other
clients; memory is a chunk plus what `SnapshotContent` buffers.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any, Final

from jetstream_server.core.clock import TimerHandle
from jetstream_server.jetstream.consumer.delivery import ConsumerHost
from jetstream_server.jetstream.snapshot.content import SnapshotContent

logger = logging.getLogger(__name__)

DEFAULT_CHUNK: Final = 128 * 1024
DEFAULT_WINDOW: Final = 8 * 1024 * 1024
ACK_TIMEOUT_S: Final = 5.0
INTEREST_WAIT_S: Final = 2.0
TURN_RAW_BYTES: Final = 64 << 10  # uncompressed bytes encoded per loop turn (~20 ms)
FILL_STEP: Final = 16 << 10

HDR_OK: Final = b"NATS/1.0 204\r\n\r\n"
HDR_NO_FLOW: Final = b"NATS/1.0 408 No Flow Response\r\n\r\n"
HDR_NO_INTEREST: Final = b"NATS/1.0 408 No Interest\r\n\r\n"


def clamp_sizes(chunk_size: int, window_size: int) -> tuple[int, int]:
    chunk = min(max(1024, chunk_size or DEFAULT_CHUNK), 1024 * 1024)
    window = min(max(1024, window_size or DEFAULT_WINDOW), 32 * 1024 * 1024)
    return chunk, max(window, chunk)


class SnapshotSender:
    """Sends one snapshot (module docstring); `start()` once, it ends by itself."""

    def __init__(self, host: ConsumerHost, stream_name: str, content: SnapshotContent,
                 deliver: str, chunk_size: int, window_size: int,
                 registry: set[Any] | None = None) -> None:
        self.host = host
        self._registry = registry if registry is not None else set()
        self.content = content
        self.deliver = deliver
        self.chunk, window = clamp_sizes(chunk_size, window_size)
        self.slots = window // self.chunk
        self.ack_prefix = f"$JS.SNAPSHOT.ACK.{stream_name}.{secrets.token_hex(11)}"
        self.index = 1
        self.sent_full = False
        self.finished = False
        self.error = ""
        self._sid: int | None = None
        self._ack_timer: TimerHandle | None = None
        self._turn: TimerHandle | None = None

    def start(self) -> None:
        self._sid = self.host.subscribe(self.ack_prefix + ".>", self._on_ack)
        self._registry.add(self)
        if self.host.has_interest(self.deliver):
            self._schedule()
        else:  # nats-server allows the receiver about 2 s to subscribe
            self._turn = self.host.clock.call_later(INTEREST_WAIT_S, self._turn_now)

    def _on_ack(self, subject: str, reply: str | None, headers: bytes | None,
                payload: bytes) -> None:
        if self.finished:
            return
        self.slots += 1
        self._schedule()

    def _schedule(self) -> None:
        if self._turn is None and not self.finished:
            self._turn = self.host.clock.call_later(0, self._turn_now)

    def _turn_now(self) -> None:
        self._turn = None
        if self.finished:
            return
        if not self.host.has_interest(self.deliver):
            self._finish(HDR_NO_INTEREST, "no interest")
            return
        budget = TURN_RAW_BYTES
        content = self.content
        try:
            while self.slots > 0:
                if content.available >= self.chunk:
                    self._send_chunk(content.take(self.chunk))
                    continue
                if content.done:
                    rest = content.take(self.chunk)
                    if rest:
                        self.host.publish(self.deliver, None, None, rest)
                    self._finish(HDR_OK if self.sent_full else None, "")
                    return
                if budget <= 0:
                    break
                content.fill(min(budget, FILL_STEP))
                budget -= FILL_STEP
        except Exception as exc:  # the store failed (stream deleted meanwhile, I/O error)
            logger.warning("snapshot of stream %s failed: %s", self.content.stream.name, exc)
            text = str(exc).replace("\r", " ").replace("\n", " ")
            self._finish(f"NATS/1.0 500 {text}\r\n\r\n".encode(), text)
            return
        if self.slots > 0:
            self._schedule()

    def _send_chunk(self, data: bytes) -> None:
        self.slots -= 1
        reply = f"{self.ack_prefix}.{len(data)}.{self.index}"
        self.index += 1
        self.sent_full = True
        self.host.publish(self.deliver, reply, None, data)
        self._arm_ack_timer()

    def _arm_ack_timer(self) -> None:
        if self._ack_timer is not None:
            self._ack_timer.cancel()
        self._ack_timer = self.host.clock.call_later(ACK_TIMEOUT_S, self._no_flow)

    def _no_flow(self) -> None:
        self._ack_timer = None
        if self.finished:
            return
        if not self.host.has_interest(self.deliver):  # the receiver went away meanwhile
            self._finish(HDR_NO_INTEREST, "no interest")
        else:
            self._finish(HDR_NO_FLOW, "no flow response")

    def close(self) -> None:
        """The server is stopping: the receiver gets nothing more (nor a final message)."""
        if not self.finished:
            self._end()

    def _end(self) -> None:
        self.finished = True
        self._registry.discard(self)
        for timer in (self._ack_timer, self._turn):
            if timer is not None:
                timer.cancel()
        self._ack_timer = self._turn = None
        if self._sid is not None:
            self.host.unsubscribe(self._sid)
            self._sid = None

    def _finish(self, header: bytes | None, error: str) -> None:
        self._end()
        self.error = error
        self.host.publish(self.deliver, None, header, b"")
        if error:
            logger.warning("snapshot of stream %s ended: %s", self.content.stream.name, error)
        else:
            logger.info("snapshot of stream %s sent (%d chunks)", self.content.stream.name,
                        self.index - 1)
