"""Publishing the sample (`jobs.orders.streams.publish`) on both servers: acked, deduplicated, stoppable."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from jetstream_testing.process import start_server
from jobs.orders import streams
from jobs.orders.generator import OrderEvent, generate


@pytest.fixture(params=["bundled", "nats-server"])
def url(request, tmp_path: Path) -> Iterator[str]:  # type: ignore[no-untyped-def]
    srv = start_server(request.param, tmp_path / "store")
    try:
        streams.run(streams.ensure_streams(srv.url))
        yield srv.url
    finally:
        srv.stop()


def test_every_event_is_stored_once_and_a_second_pass_is_all_duplicates(url: str) -> None:
    events = list(generate(400, seed=5))
    progress: list[int] = []
    first = streams.publish(url, events, on_progress=lambda s: progress.append(s.stored), progress_every_s=0.0)
    assert (first.stored, first.duplicates) == (len(events), 0)
    assert progress and progress == sorted(progress)  # reported while publishing, never going back
    again = streams.publish(url, events)
    assert (again.stored, again.duplicates) == (0, len(events))
    assert streams.run(streams.stream_counts(url))[streams.INPUT].messages == len(events)


def test_a_stop_publishes_exactly_the_events_taken(url: str) -> None:
    stop = threading.Event()
    taken: list[OrderEvent] = []

    def events() -> Iterator[OrderEvent]:
        for ev in generate(10_000, seed=5):
            taken.append(ev)
            if len(taken) == 700:
                stop.set()
            yield ev

    stats = streams.publish(url, events(), stop=stop)
    assert 700 <= stats.stored == len(taken) < 10_000
    assert streams.run(streams.stream_counts(url))[streams.INPUT].messages == len(taken)


def test_header_block() -> None:
    assert streams.header_block({"Nats-Msg-Id": "a.b", "Order-Id": "a"}) == (
        b"NATS/1.0\r\nNats-Msg-Id: a.b\r\nOrder-Id: a\r\n\r\n"
    )
