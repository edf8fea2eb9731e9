"""Direct get's caps (jetstream/api/direct.py) without a server: a batch without
`max_bytes` stops at the server's `max_pending` bytes, as nats-server's does, and
`multi_last` over 1024 subjects answers 413 before loading a message."""

from __future__ import annotations

import json

from router_double import RouterDouble

from jetstream_server.core.clock import FakeClock
from jetstream_server.jetstream.api.dispatch import dispatch
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.settings import EngineSettings


def engine_with(
    subjects: list[str], size: int, max_pending: int = 64 * 1024 * 1024
) -> tuple[JetStream, RouterDouble]:
    router = RouterDouble()
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
