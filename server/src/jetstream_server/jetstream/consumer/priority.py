"""Priority groups of pull consumers (ADR-42): overflow, pinned client, prioritized.

A pull request to a consumer with a `priority_policy` names its `group` (one
of the consumer's `priority_groups`) and, depending on the policy:

- ``overflow``: `min_pending` / `min_ack_pending` — the request is served only
  while the consumer has at least that many messages pending (or awaiting
  ack); requests without them are always served;
- ``pinned_client``: `id` — the first request without an id gets a new pin id
  and from then on only requests carrying that id (the ``Nats-Pin-Id`` header
  of the messages they got) are served; others wait, and a request with a
  different id is ended with ``423 Nats-Wrong-Pin-Id``. The pin lapses after
  `priority_timeout` (`pinned_ttl_ns`) without a request from its holder, or
  by `$JS.API.CONSUMER.UNPIN`;
- ``prioritized``: `priority` 0-9 — lower numbers are served first (the queue
  is kept sorted; equal priorities in arrival order).

`check_request` raises the `400` / `423` status nats-server answers for a
request that does not fit the consumer (server/consumer.go
processNextMsgRequest); `Selector.choose` picks the waiting request that gets
the next message (nextWaiting). `PinState` holds the pin with its timer on the
injected clock.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, Protocol

from jetstream_server.core.clock import Clock, TimerHandle
from jetstream_server.core.gotime import rfc3339_ns
from jetstream_server.core.headers import status_headers
from jetstream_server.jetstream.consumer.config import ConsumerConfig

NS: Final = 1_000_000_000
PIN_HEADER: Final = "Nats-Pin-Id"
ZERO_TIME: Final = "0001-01-01T00:00:00Z"
_PIN_ALPHABET: Final = string.digits + string.ascii_letters
NO_PRIORITY: Final = 2**31 - 1  # a request without one sorts last


class PriorityError(ValueError):
    """A pull request refused for its priority fields; `status` is the frame."""

    def __init__(self, status: int, description: str) -> None:
        super().__init__(description)
        self.status = status_headers(status, description)


@dataclass(frozen=True, slots=True)
class PriorityRequest:
    """The priority-group fields of a JSON pull request."""

    group: str = ""
    min_pending: int = 0
    min_ack_pending: int = 0
    id: str = ""
    priority: int = 0


def new_pin_id() -> str:
    """A 22-character id like nats-server's NUIDs."""
    return "".join(secrets.choice(_PIN_ALPHABET) for _ in range(22))


def add_pin_header(headers: bytes | None, pin_id: str) -> bytes:
    """`headers` with ``Nats-Pin-Id: <pin_id>`` appended (a new block if none)."""
    line = f"{PIN_HEADER}: {pin_id}\r\n\r\n".encode()
    if not headers:
        return b"NATS/1.0\r\n" + line
    return headers[:-2] + line if headers.endswith(b"\r\n\r\n") else headers + line


class PinState:
    """The pinned client of one consumer: its id, since when, and the TTL timer."""

    def __init__(self, clock: Clock, ttl_ns: int, on_lapse: Callable[[], None]) -> None:
        self.clock = clock
        self.ttl_ns = ttl_ns
        self.on_lapse = on_lapse
        self.pin_id = ""
        self.pinned_ns = 0
        self.group = ""  # the group of the pull request that took the pin
        self._timer: TimerHandle | None = None
        # the advisories (pin_advisories.py): (group, pin id) and (group, reason)
        self.on_pinned: Callable[[str, str], None] | None = None
        self.on_unpinned: Callable[[str, str], None] | None = None

    def assign(self, group: str = "") -> str:
        self.pin_id = new_pin_id()
        self.pinned_ns = self.clock.now_ns()
        self.group = group
        self.touch()
        if self.on_pinned is not None:
            self.on_pinned(group, self.pin_id)
        return self.pin_id

    def touch(self) -> None:
        """The holder asked again: the TTL starts over."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.clock.call_later(self.ttl_ns / NS, self._lapse)

    def unpin(self) -> None:
        self.pin_id = ""
        self.pinned_ns = 0
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _lapse(self) -> None:
        self._timer = None
        if self.pin_id:
            self.unpin()
            if self.on_unpinned is not None:
                self.on_unpinned(self.group, "timeout")
            self.on_lapse()


def check_request(config: ConsumerConfig, prio: PriorityRequest | None, pin: PinState | None) -> None:
    """nats-server's checks of a pull request's priority fields, in its order;
    a request carrying the current pin id restarts the pin's TTL."""
    policy = config.priority_policy
    if prio is None:
        return
    if (prio.min_pending or prio.min_ack_pending) and policy != "overflow":
        raise PriorityError(400, "Bad Request - Not a Overflow Priority consumer")
    if prio.id and policy != "pinned_client":
        raise PriorityError(400, "Bad Request - Not a Pinned Client Priority consumer")
    if not 0 <= prio.priority <= 9:
        raise PriorityError(400, "Bad Request - Priority must be between 0 and 9")
    if policy == "none":
        return
    if not prio.group:
        raise PriorityError(400, "Bad Request - Priority Group missing")
    if prio.group not in config.priority_groups:
        raise PriorityError(400, "Bad Request - Invalid Priority Group")
    if pin is not None and pin.pin_id:
        if prio.id == pin.pin_id:
            pin.touch()
        elif prio.id:
            raise PriorityError(423, "Nats-Pin-Id mismatch")


class Waiting(Protocol):
    """What the selector needs of a waiting pull request."""

    reply: str
    remaining: int
    pin_id: str  # the pin id it carries (or was given when it took the pin)

    @property
    def prio(self) -> PriorityRequest | None: ...

    def pending_bytes(self) -> int: ...


def wrong_pin(waiting: Waiting) -> bytes:
    return status_headers(
        423,
        "Nats-Wrong-Pin-Id",
        Nats_Pending_Messages=str(waiting.remaining),
        Nats_Pending_Bytes=str(waiting.pending_bytes()),
    )


def overflow_ready(prio: PriorityRequest | None, num_pending: int, num_ack_pending: int) -> bool:
    """An overflow request is served once either of its thresholds is reached
    (`num_pending` counts the message about to go out)."""
    if prio is None or not (prio.min_pending or prio.min_ack_pending):
        return True
    return (0 < prio.min_pending <= num_pending) or (0 < prio.min_ack_pending <= num_ack_pending)


def choose(
    policy: str,
    queue: Iterable[Waiting],
    pin: PinState | None,
    num_pending: int,
    num_ack_pending: int,
    drop: Callable[[Waiting, bytes], None],
) -> Waiting | None:
    """The waiting request (in queue order) the next message goes to, None when
    none may have it now; requests holding a stale pin id are ended (`drop`)."""
    for waiting in queue:
        prio = waiting.prio
        if policy == "pinned_client" and pin is not None:
            if not pin.pin_id:
                if waiting.pin_id:  # an old pin
                    drop(waiting, wrong_pin(waiting))
                    continue
                if prio is not None and prio.group:
                    waiting.pin_id = pin.assign(prio.group)
            elif not waiting.pin_id:
                continue  # waits until the pin lapses
            elif waiting.pin_id != pin.pin_id:
                drop(waiting, wrong_pin(waiting))
                continue
        elif policy == "overflow" and not overflow_ready(prio, num_pending, num_ack_pending):
            continue
        return waiting
    return None


def group_states(config: ConsumerConfig, pin: PinState | None) -> list[dict[str, str]]:
    """Consumer info's `priority_groups` (nats-server reports the first group)."""
    if not config.priority_groups:
        return []
    state: dict[str, str] = {"group": config.priority_groups[0]}
    if pin is not None and pin.pin_id:
        state["pinned_client_id"] = pin.pin_id
        state["pinned_ts"] = rfc3339_ns(pin.pinned_ns)
    else:
        state["pinned_ts"] = ZERO_TIME
    return [state]


def sort_key(prio: PriorityRequest | None) -> int:
    return NO_PRIORITY if prio is None else prio.priority
