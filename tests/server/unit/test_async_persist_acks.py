"""`persist_mode: async` in the engine: with `sync_always`, its pub acks are not
held for the group commit (nats-server flushes such a stream asynchronously);
the periodic sync covers it. Router double and FakeClock, a real file store.
"""

from __future__ import annotations

from pathlib import Path

from router_double import RouterDouble

from jetstream_server.core.clock import FakeClock
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.settings import EngineSettings

API = "$JS.API."


def _engine(tmp_path: Path) -> tuple[JetStream, RouterDouble, FakeClock]:
    clock = FakeClock()
    router = RouterDouble()
    engine = JetStream(
        EngineSettings(store_dir=str(tmp_path), sync_always=True, sync_interval_s=10), clock
    )
    engine.start(router)
    for name, mode in (("A", "async"), ("D", "default")):
        resp = router.request_json(API + f"STREAM.CREATE.{name}", {
            "name": name, "subjects": [name.lower()], "persist_mode": mode})
        assert "error" not in resp, resp
    return engine, router, clock


def test_async_acks_before_the_sync_default_after(tmp_path: Path) -> None:
    engine, router, clock = _engine(tmp_path)
    try:
        box = router.inbox("acks")
        router.publish("a", "acks", None, b"1")
        assert [m.json() for m in box.messages] == [{"stream": "A", "seq": 1}]
        router.publish("d", "acks", None, b"2")
        assert len(box.messages) == 1  # held for the group commit's fsync
        clock.advance(0)
        assert [m.json() for m in box.messages][1] == {"stream": "D", "seq": 1}
    finally:
        engine.close()


def test_the_periodic_sync_covers_async_streams(tmp_path: Path) -> None:
    engine, router, clock = _engine(tmp_path)
    try:
        synced: list[str] = []
        stream = engine.streams["A"]
        real = stream.store.begin_sync

        def counting():  # type: ignore[no-untyped-def]
            job = real()
            if job is not None:
                synced.append("A")
            return job

        stream.store.begin_sync = counting  # type: ignore[method-assign]
        router.publish("a", None, None, b"1")
        clock.advance(0)
        assert synced == []  # not by a group commit
        clock.advance(10)
        assert synced == ["A"]
    finally:
        engine.close()
