"""A large API answer encoded over loop turns (jetstream/api/spliced.py), and the
stream info that uses it: a page of subjects is encoded `ENTRIES_PER_TURN` a turn,
the clock runs the next turn, and the bytes published are those of the answer
encoded at once (issue 24: STREAM.INFO listing 50,000 subjects held the loop)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from router_double import RouterDouble

from jetstream_server.core.clock import FakeClock
from jetstream_server.jetstream import advisories
from jetstream_server.jetstream.api import spliced, streams
from jetstream_server.jetstream.api.dispatch import dispatch
from jetstream_server.jetstream.api.spliced import SplicedAnswer, encode
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.settings import EngineSettings

PER_TURN = 100


@pytest.fixture
def small_turns() -> Iterator[None]:
    with mock.patch.object(spliced, "ENTRIES_PER_TURN", PER_TURN), \
            mock.patch.object(streams, "ENTRIES_PER_TURN", PER_TURN):
        yield


class Host:
    """What a spliced answer asks of the API host: the clock and the router."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.router = RouterDouble()


def test_an_answer_is_encoded_a_bounded_number_of_entries_per_turn(small_turns: None) -> None:
    host = Host()
    box = host.router.inbox("reply")
    counts = {f"s.{i:04}": i for i in range(1, 1051)}
    answer = SplicedAnswer(sorted(counts), counts.__getitem__)
    answer.body = {"type": "t", "state": {"messages": 5, "subjects": answer.placeholder, "n": 1}, "ts": "z"}
    sent: list[str] = []
    answer.start(host, "reply", sent.append)  # type: ignore[arg-type]
    assert not box.messages and not sent  # nothing encoded in the request's own turn
    host.clock.advance(0)  # every later turn (each schedules the next)
    assert answer.turn_sizes == [PER_TURN] * 10 + [50]
    expected = encode({"type": "t", "state": {"messages": 5, "subjects": counts, "n": 1}, "ts": "z"})
    assert [m.payload for m in box.messages] == [expected.encode()] and sent == [expected]


def filled_engine(subjects: int) -> tuple[JetStream, RouterDouble]:
    router = RouterDouble()
    engine = JetStream(EngineSettings(), FakeClock())
    engine.start(router)
    config = {"name": "I", "subjects": ["i.>"], "storage": "memory"}
    dispatch(engine, "$JS.API.STREAM.CREATE.I", None, None, json.dumps(config).encode())
    for i in range(subjects):
        router.publish(f"i.{i}", None, None, b"x")
    router.publish("i.7", None, None, b"x")
    return engine, router


def stream_info(engine: JetStream, router: RouterDouble, body: dict[str, Any]) -> bytes:
    box = router.inbox("info")
    dispatch(engine, "$JS.API.STREAM.INFO.I", "info", None, json.dumps(body).encode())
    assert isinstance(engine.clock, FakeClock)
    engine.clock.advance(0)
    (msg,) = box.take()
    return msg.payload


def test_stream_info_subjects_over_turns_answer_as_in_one(small_turns: None) -> None:
    engine, router = filled_engine(1000)
    spliced_answer = json.loads(stream_info(engine, router, {"subjects_filter": ">"}))
    with mock.patch.object(streams, "ENTRIES_PER_TURN", 10_000):
        whole = json.loads(stream_info(engine, router, {"subjects_filter": ">"}))
    spliced_answer.pop("ts"), whole.pop("ts")
    assert spliced_answer == whole
    assert list(spliced_answer["state"]) == list(whole["state"])  # subjects in its place
    subjects = whole["state"]["subjects"]
    assert list(subjects) == sorted(subjects) and len(subjects) == 1000 and subjects["i.7"] == 2


def test_stream_info_pages_subjects_as_nats_server(small_turns: None) -> None:
    engine, router = filled_engine(1000)
    with mock.patch.object(streams, "SUBJECTS_INFO_LIMIT", 300):
        first = json.loads(stream_info(engine, router, {"subjects_filter": "i.*"}))
        last = json.loads(stream_info(engine, router, {"subjects_filter": "i.*", "offset": 900}))
        past = json.loads(stream_info(engine, router, {"subjects_filter": "i.*", "offset": 5000}))
    names = sorted(f"i.{i}" for i in range(1000))
    assert (first["total"], first["offset"], first["limit"]) == (1000, 0, 300)
    assert list(first["state"]["subjects"]) == names[:300]
    assert (last["total"], last["offset"]) == (1000, 900)
    assert list(last["state"]["subjects"]) == names[900:]
    assert (past["total"], past["offset"], past["limit"]) == (1000, 5000, 300)
    assert "subjects" not in past["state"]


def test_the_audit_of_a_spliced_answer_carries_its_text(small_turns: None) -> None:
    engine, router = filled_engine(500)
    audits = router.inbox(advisories.API_AUDIT)
    answer = stream_info(engine, router, {"subjects_filter": ">"})
    (audit,) = [m for m in audits.take() if m.json()["subject"] == "$JS.API.STREAM.INFO.I"]
    assert audit.json()["response"].encode() == answer
