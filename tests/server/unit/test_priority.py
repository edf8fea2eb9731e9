"""Priority-group decisions (consumer/priority.py) on a fake clock: the pin's TTL,
which waiting request gets the next message, the Nats-Pin-Id header."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from jetstream_server.core.clock import FakeClock
from jetstream_server.jetstream.consumer.priority import (
    PinState,
    PriorityRequest,
    add_pin_header,
    choose,
)


@dataclass(eq=False)
class _Waiting:
    reply: str
    request: PriorityRequest | None
    remaining: int = 1
    pin_id: str = ""

    def __post_init__(self) -> None:  # as pull.WaitingRequest: the id it carries
        self.pin_id = self.request.id if self.request is not None else ""

    @property
    def prio(self) -> PriorityRequest | None:
        return self.request

    def pending_bytes(self) -> int:
        return 0


def test_pin_lapses_after_its_ttl_unless_touched() -> None:
    clock = FakeClock()
    lapsed: list[int] = []
    pin = PinState(clock, 2_000_000_000, lambda: lapsed.append(clock.now_ns()))
    first = pin.assign()
    clock.advance(1.5)
    pin.touch()  # the holder asked again: 2 s from now
    clock.advance(1.5)
    assert (pin.pin_id, lapsed) == (first, [])
    clock.advance(0.5)
    assert (pin.pin_id, len(lapsed)) == ("", 1)
    assert pin.assign() != first
    pin.unpin()
    clock.advance(5)
    assert len(lapsed) == 1  # an unpinned state has no timer


def test_pinned_choice() -> None:
    pin = PinState(FakeClock(), 10**9, lambda: None)
    dropped: list[str] = []
    stale = _Waiting("stale", PriorityRequest(group="A", id="old"))
    bare = _Waiting("bare", None)
    newcomer = _Waiting("new", PriorityRequest(group="A"))
    chosen = choose("pinned_client", [stale, bare, newcomer], pin, 3, 0,
                    lambda w, status: dropped.append(w.reply))
    # no pin yet: an old pin id is refused; a request without a group is served
    # without taking the pin (as nats-server)
    assert chosen is bare and dropped == ["stale"] and pin.pin_id == ""
    chosen = choose("pinned_client", [newcomer], pin, 3, 0, lambda w, s: None)
    assert chosen is newcomer and newcomer.pin_id == pin.pin_id != ""
    later = _Waiting("later", PriorityRequest(group="A"))
    assert choose("pinned_client", [later], pin, 3, 0, lambda w, s: None) is None


@pytest.mark.parametrize(
    ("min_pending", "min_ack_pending", "num_pending", "num_ack_pending", "served"),
    [(0, 0, 1, 0, True), (5, 0, 4, 0, False), (5, 0, 5, 0, True), (0, 2, 9, 1, False),
     (0, 2, 0, 2, True), (5, 2, 4, 2, True)],
)
def test_overflow_choice(min_pending: int, min_ack_pending: int, num_pending: int,
                         num_ack_pending: int, served: bool) -> None:
    waiting = _Waiting("r", PriorityRequest(group="A", min_pending=min_pending,
                                            min_ack_pending=min_ack_pending))
    chosen = choose("overflow", [waiting], None, num_pending, num_ack_pending, lambda w, s: None)
    assert (chosen is waiting) is served


def test_pin_header() -> None:
    assert add_pin_header(None, "X") == b"NATS/1.0\r\nNats-Pin-Id: X\r\n\r\n"
    assert add_pin_header(b"NATS/1.0\r\nA: 1\r\n\r\n", "X") == (
        b"NATS/1.0\r\nA: 1\r\nNats-Pin-Id: X\r\n\r\n")
