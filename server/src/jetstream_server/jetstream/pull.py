"""Pull requests (`CONSUMER.MSG.NEXT`): parsing, the waiting queue, status frames.

A pull request body is empty (batch 1), a bare integer (the batch) or JSON
`{"batch", "expires" (ns), "max_bytes", "no_wait", "idle_heartbeat" (ns)}`.
`parse_pull_request` returns a `PullRequest` or raises `PullRequestError`
carrying the status line nats-server sends back (the request is then not
queued). `WaitingQueue` keeps the requests in arrival order (FIFO, as
nats-server serves them), bounded by `max_waiting`.

Status frames are header-only messages to the request's reply subject:
`404 No Messages`, `408 Request Timeout` (with `Nats-Pending-Messages` and
`Nats-Pending-Bytes`), `409 Message Size Exceeds MaxBytes`,
`409 Exceeded MaxWaiting`, `409 Consumer Deleted`, `100 Idle Heartbeat`.

Invariants: a request in the queue has `remaining > 0`; its timers are
cancelled when it leaves the queue (`WaitingRequest.close`).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from jetstream_server.core.clock import TimerHandle
from jetstream_server.core.headers import status_headers

NO_MESSAGES: Final = status_headers(404, "No Messages")
CONSUMER_DELETED: Final = status_headers(409, "Consumer Deleted")
EXCEEDED_MAX_WAITING: Final = status_headers(409, "Exceeded MaxWaiting")
MAX_BYTES_EXCEEDED: Final = status_headers(409, "Message Size Exceeds MaxBytes")
IDLE_HEARTBEAT: Final = status_headers(100, "Idle Heartbeat")


def request_timeout(pending_msgs: int, pending_bytes: int) -> bytes:
    return status_headers(
        408,
        "Request Timeout",
        Nats_Pending_Messages=str(pending_msgs),
        Nats_Pending_Bytes=str(pending_bytes),
    )


class PullRequestError(ValueError):
    """A pull request refused before queueing; `status` is the frame to send back
    (`400 Bad Request - <reason>` unless given)."""

    def __init__(self, status: bytes | None, message: str) -> None:
        super().__init__(message)
        self.status = status if status is not None else status_headers(400, f"Bad Request - {message}")


@dataclass(frozen=True, slots=True)
class PullRequest:
    batch: int = 1
    expires_ns: int = 0
    max_bytes: int = 0
    no_wait: bool = False
    idle_heartbeat_ns: int = 0


def _int_field(body: dict[str, object], key: str) -> int:
    value = body.get(key, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise PullRequestError(None, f"pull request field {key!r} must be an integer, got {value!r}")
    return value


def parse_pull_request(payload: bytes) -> PullRequest:
    """Parse a `CONSUMER.MSG.NEXT` body (also the text after `+NXT `)."""
    text = payload.strip()
    if not text:
        return PullRequest()
    if text[:1] != b"{":
        try:
            batch = int(text)
        except ValueError:
            raise PullRequestError(None, f"bad pull request body {text[:64]!r}") from None
        return PullRequest(batch=max(batch, 1))
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise PullRequestError(None, f"pull request is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise PullRequestError(None, "pull request must be a JSON object")
    no_wait = body.get("no_wait", False)
    if not isinstance(no_wait, bool):
        raise PullRequestError(None, "pull request field 'no_wait' must be a boolean")
    request = PullRequest(
        batch=max(_int_field(body, "batch"), 1),
        expires_ns=max(_int_field(body, "expires"), 0),
        max_bytes=max(_int_field(body, "max_bytes"), 0),
        no_wait=no_wait,
        idle_heartbeat_ns=max(_int_field(body, "idle_heartbeat"), 0),
    )
    if request.idle_heartbeat_ns and request.expires_ns and (
        request.idle_heartbeat_ns * 2 > request.expires_ns
    ):
        raise PullRequestError(
            status_headers(400, "Bad Request - heartbeat value too large"),
            "idle_heartbeat * 2 must not exceed expires",
        )
    return request


@dataclass(slots=True, eq=False)
class WaitingRequest:
    """One queued pull request and what it has received so far."""

    reply: str
    request: PullRequest
    received_ns: int
    remaining: int = 0
    bytes_left: int = 0
    delivered: int = 0
    expire_timer: TimerHandle | None = None
    heartbeat_timer: TimerHandle | None = None
    last_sent_ns: int = 0
    extra: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.remaining = self.request.batch
        self.bytes_left = self.request.max_bytes
        self.last_sent_ns = self.received_ns

    @property
    def expires_at_ns(self) -> int:
        return self.received_ns + self.request.expires_ns if self.request.expires_ns else 0

    def pending_bytes(self) -> int:
        return self.bytes_left if self.request.max_bytes else 0

    def close(self) -> None:
        for timer in (self.expire_timer, self.heartbeat_timer):
            if timer is not None:
                timer.cancel()
        self.expire_timer = None
        self.heartbeat_timer = None


class WaitingQueue:
    """Pull requests waiting for messages, oldest first."""

    def __init__(self, max_waiting: int) -> None:
        self.max_waiting = max_waiting
        self._requests: OrderedDict[int, WaitingRequest] = OrderedDict()
        self._next_id = 0

    def __len__(self) -> int:
        return len(self._requests)

    def __iter__(self) -> Iterator[WaitingRequest]:
        return iter(list(self._requests.values()))

    @property
    def full(self) -> bool:
        return len(self._requests) >= self.max_waiting > 0

    def add(self, waiting: WaitingRequest) -> None:
        self._next_id += 1
        waiting.extra["id"] = self._next_id
        self._requests[self._next_id] = waiting

    def peek(self) -> WaitingRequest | None:
        for waiting in self._requests.values():
            return waiting
        return None

    def remove(self, waiting: WaitingRequest) -> None:
        key = waiting.extra.get("id")
        if isinstance(key, int) and self._requests.pop(key, None) is not None:
            waiting.close()

    def rotate(self, waiting: WaitingRequest) -> None:
        """Move a request that just got a message to the back (fair among pullers)."""
        key = waiting.extra.get("id")
        if isinstance(key, int) and key in self._requests:
            self._requests.move_to_end(key)

    def clear(self) -> list[WaitingRequest]:
        requests = list(self._requests.values())
        for waiting in requests:
            waiting.close()
        self._requests.clear()
        return requests
