"""Direct get's caps (jetstream/api/direct.py) without a server: a batch without
`max_bytes` stops at the server's `max_pending` bytes, as nats-server's does, and
`multi_last` over 1024 subjects answers 413 before loading a message. A batch
goes out in loop turns of bounded size (the clock runs the next turn) and waits
while its reader holds over half of `max_pending` unsent (issue 24: a batch
over the client's max_pending closed it as a slow consumer)."""

from __future__ import annotations

import json

from router_double import RouterDouble

from jetstream_server.core.clock import FakeClock
from jetstream_server.jetstream.api.direct import BACKLOG_WAIT_S, TURN_BYTES
from jetstream_server.jetstream.api.dispatch import dispatch
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.settings import EngineSettings


class BackedUpRouter(RouterDouble):
    """A router whose clients are `behind` bytes behind (the broker's `backlog`)."""

    behind = 0

    def backlog(self, subject: str) -> int:
        return self.behind


def engine_with(
    subjects: list[str], size: int, router: RouterDouble | None = None,
    max_pending: int = 64 * 1024 * 1024,
) -> tuple[JetStream, RouterDouble]:
    router = router or RouterDouble()
    engine = JetStream(EngineSettings(max_pending=max_pending), FakeClock())
    engine.start(router)
    config = {"name": "D", "subjects": ["d.>"], "allow_direct": True, "storage": "memory"}
    dispatch(engine, "$JS.API.STREAM.CREATE.D", None, None, json.dumps(config).encode())
    for subject in subjects:
        router.publish(subject, None, None, b"x" * size)
    return engine, router


def direct_get(engine: JetStream, router: RouterDouble, body: dict[str, object]) -> list[tuple[str | None, int]]:
    box = router.inbox("reply")
    dispatch(engine, "$JS.API.DIRECT.GET.D", "reply", None, json.dumps(body).encode())
    assert isinstance(engine.clock, FakeClock)
    engine.clock.advance(0)  # the batch's further turns
    out = []
    for msg in box.take():
        hdr = msg.hdr
        out.append((str(hdr.status) if hdr and hdr.status else None, len(msg.payload)))
    return out


def test_batch_without_max_bytes_stops_at_max_pending() -> None:
    engine, router = engine_with(["d.a"] * 6, 900_000, max_pending=2 * 1024 * 1024)
    # the third message reaches 2 MB: then the end of the batch
    assert direct_get(engine, router, {"seq": 1, "batch": 6}) == [(None, 900_000)] * 3 + [("204", 0)]
    engine, router = engine_with(["d.a"] * 6, 900_000, max_pending=64 * 1024 * 1024)
    assert len(direct_get(engine, router, {"seq": 1, "batch": 6})) == 7


def test_multi_last_over_1024_subjects_is_413() -> None:
    engine, router = engine_with([f"d.{i}" for i in range(1025)], 1)
    assert direct_get(engine, router, {"multi_last": ["d.*"]}) == [("413", 0)]
    assert direct_get(engine, router, {"multi_last": ["d.*"], "batch": 1}) == [("413", 0)]
    out = direct_get(engine, router, {"multi_last": ["d.1", "d.2", "d.3"], "batch": 2})
    assert out == [(None, 1), (None, 1), ("204", 0)]


def headers_of(box_messages: list) -> list[str | None]:  # type: ignore[type-arg]
    return [str(m.hdr.status) if m.hdr and m.hdr.status else None for m in box_messages]


def test_a_batch_goes_out_in_turns_of_bounded_size() -> None:
    engine, router = engine_with(["d.a"] * 200, 4000)
    box = router.inbox("reply")
    dispatch(engine, "$JS.API.DIRECT.GET.D", "reply", None, b'{"seq":1,"batch":1000}')
    first = box.take()
    # the first turn stops once it sent TURN_BYTES (headers and payloads)
    sent = sum(len(m.headers or b"") + len(m.payload) for m in first)
    assert TURN_BYTES <= sent < TURN_BYTES + 4000 + 200
    assert len(first) < 200 and headers_of(first) == [None] * len(first)
    assert isinstance(engine.clock, FakeClock)
    engine.clock.advance(0)
    rest = box.take()
    assert len(first) + len(rest) == 201 and headers_of(rest)[-1] == "204"
    assert [int(m.hdr.get("Nats-Sequence") or 0) for m in first + rest[:-1]] == list(range(1, 201))


def test_a_batch_waits_for_a_reader_that_is_behind() -> None:
    router = BackedUpRouter()
    engine, _ = engine_with(["d.a"] * 200, 4000, router, max_pending=1 << 20)
    box = router.inbox("reply")
    dispatch(engine, "$JS.API.DIRECT.GET.D", "reply", None, b'{"seq":1,"batch":1000}')
    first = box.take()
    assert 0 < len(first) < 200
    router.behind = (1 << 19) + 1  # over half of max_pending: nothing more for now
    clock = engine.clock
    assert isinstance(clock, FakeClock)
    clock.advance(0)
    clock.advance(BACKLOG_WAIT_S * 10)
    assert box.take() == []
    router.behind = 1 << 19
    clock.advance(BACKLOG_WAIT_S)
    rest = box.take()
    assert len(first) + len(rest) == 201 and headers_of(rest)[-1] == "204"


def test_a_batch_stops_when_its_reader_leaves() -> None:
    engine, router = engine_with(["d.a"] * 200, 4000)
    box = router.inbox("reply")
    dispatch(engine, "$JS.API.DIRECT.GET.D", "reply", None, b'{"seq":1,"batch":1000}')
    assert box.take()
    for sid, (subject, _, _) in list(router._subs.items()):
        if subject == "reply":
            router.unsubscribe(sid)
    assert isinstance(engine.clock, FakeClock)
    engine.clock.advance(0)
    late = router.inbox("reply")
    engine.clock.advance(1)
    assert late.take() == []  # the rest was never sent

