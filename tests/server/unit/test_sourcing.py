"""Mirrors and sources inside the engine (jetstream/sourcing/): turns, progress, headers.

The in-memory router double and a FakeClock: copying happens only when the
clock fires the coordinator's turn, so these tests see each step.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from router_double import RouterDouble

from jetstream_server.core.clock import FakeClock
from jetstream_server.core.headers import encode_headers, parse_headers
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.settings import EngineSettings
from jetstream_server.jetstream.sourcing import coordinator
from jetstream_server.jetstream.sourcing.headers import (
    parse_source_header,
    source_header,
    sourced_headers,
    stream_identity,
)

API = "$JS.API."


class Env:
    def __init__(self, store_dir: Path | None = None, clock: FakeClock | None = None) -> None:
        self.clock = clock or FakeClock()
        self.router = RouterDouble()
        settings = EngineSettings(store_dir=None if store_dir is None else str(store_dir))
        self.engine = JetStream(settings, self.clock)
        self.engine.start(self.router)

    def create(self, **config: object) -> dict:
        resp = self.router.request_json(f"{API}STREAM.CREATE.{config['name']}", config)
        assert "error" not in resp, resp
        return resp

    def pub(self, subject: str, data: bytes = b"x") -> dict:
        return self.router.request_json(subject, data)

    def info(self, name: str) -> dict:
        return self.router.request_json(f"{API}STREAM.INFO.{name}", b"")

    def messages(self, name: str) -> int:
        return int(self.info(name)["state"]["messages"])


def test_copying_waits_for_the_loop_and_goes_in_bounded_turns() -> None:
    env = Env()
    env.create(name="O", subjects=["o.>"], storage="memory")
    total = coordinator.TURN_BUDGET * 2 + 100
    for i in range(total):
        env.pub(f"o.{i % 3}")
    env.create(name="M", mirror={"name": "O"}, storage="memory")
    assert env.messages("M") == 0  # nothing copied inside the create request
    env.engine.sourcing._turn()
    assert env.messages("M") == coordinator.TURN_BUDGET
    assert env.info("M")["mirror"]["lag"] == total - coordinator.TURN_BUDGET
    env.clock.advance(0)  # the remaining turns
    assert env.messages("M") == total
    assert env.info("M")["mirror"]["lag"] == 0
    env.pub("o.1")
    assert env.messages("M") == total  # the publish does not wait for its mirror
    env.clock.advance(0)
    assert env.messages("M") == total + 1


def test_a_refused_copy_is_retried_not_skipped() -> None:
    env = Env()
    env.create(name="O", subjects=["o.>"], storage="memory")
    env.create(name="S", sources=[{"name": "O"}], storage="memory", max_msgs=2, discard="new")
    for _ in range(3):
        env.pub("o.a")
    env.clock.advance(0)
    info = env.info("S")
    assert info["state"]["messages"] == 2
    assert info["sources"][0]["error"]["description"] == "maximum messages exceeded"
    assert info["sources"][0]["lag"] == 1
    assert env.router.request_json(f"{API}STREAM.PURGE.S", b"")["purged"] == 2
    env.clock.advance(coordinator.RETRY_INTERVAL_S)  # retried without any new origin message
    info = env.info("S")
    assert info["state"]["messages"] == 1 and "error" not in info["sources"][0]
    assert info["sources"][0]["seq"] == 3
    env.pub("o.b")
    env.clock.advance(0)
    assert env.info("S")["sources"][0]["seq"] == 4


def test_progress_after_reopen(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.create(name="O", subjects=["o.>"])
    env.create(name="S", sources=[{"name": "O", "filter_subject": "o.a"}])
    env.create(name="M", mirror={"name": "O"})
    for i in range(6):
        env.pub(f"o.{'ab'[i % 2]}")
    env.clock.advance(0)
    env.engine.close()
    again = Env(tmp_path, env.clock)
    again.clock.advance(0)
    assert again.messages("S") == 3 and again.messages("M") == 6
    again.pub("o.a")
    again.clock.advance(0)
    assert again.messages("S") == 4 and again.info("M")["state"]["last_seq"] == 7
    assert again.info("S")["sources"][0]["seq"] == 7
    again.engine.close()


def test_source_header_round_trip_and_identity() -> None:
    value = source_header("ORDERS o.* x.$1", 42, "o.1", stream_identity(1_700_000_000_123_000_000))
    name, seq = parse_source_header(value) or ("", 0)
    assert (name, seq) == ("ORDERS o.* x.$1", 42)
    assert value.startswith("ORDERS 42 o.* x.$1 o.1 ") and len(value.rsplit(" ", 1)[1]) == 8
    assert stream_identity(1) != stream_identity(2)
    assert parse_source_header("not a header") is None


def test_sourced_headers_drop_expectations_and_older_source() -> None:
    original = encode_headers([
        ("Nats-Msg-Id", "k1"), ("Nats-Expected-Last-Sequence", "3"), ("Nats-Stream-Source", "A 1 > > a"),
        ("Nats-Batch-Id", "b"), ("X-Keep", "yes"),
    ])
    headers = parse_headers(sourced_headers(original, "B 9 > > b"))
    assert headers.items == [("Nats-Msg-Id", "k1"), ("X-Keep", "yes"), ("Nats-Stream-Source", "B 9 > > b")]
    assert parse_headers(sourced_headers(None, "B 1 > > b")).items == [("Nats-Stream-Source", "B 1 > > b")]


@pytest.mark.parametrize("retention", ["workqueue", "interest"])
def test_origin_retention_releases_after_copy(retention: str) -> None:
    env = Env()
    env.create(name="O", subjects=["o.>"], storage="memory", retention=retention)
    env.create(name="S", sources=[{"name": "O"}], storage="memory")
    env.pub("o.a")
    assert env.messages("O") == 1  # held for the source
    env.clock.advance(0)
    assert env.messages("S") == 1 and env.messages("O") == 0


def test_a_long_gap_in_a_filtered_mirror_is_one_skip() -> None:
    env = Env()
    env.create(name="O", subjects=["o.>"], storage="memory")
    env.pub("o.keep")
    env.create(name="M", mirror={"name": "O", "filter_subject": "o.keep"}, storage="memory")
    env.clock.advance(0)
    gap = coordinator.TURN_BUDGET * 2 + 10
    for _ in range(gap):
        env.pub("o.other")
    env.pub("o.keep")
    env.engine.sourcing._turn()  # one turn: the gap is one store operation (skip_msgs)
    state = env.info("M")["state"]
    assert (state["messages"], state["last_seq"], state["num_deleted"]) == (2, gap + 2, gap)
    assert state["num_subjects"] == 1  # no placeholder subject
