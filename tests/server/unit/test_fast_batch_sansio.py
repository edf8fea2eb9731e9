"""Fast batch publish, sans IO: the reply pattern as nats-server's getFastBatch
reads it (every vector, then random strings: parsed, INVALID or None, never an
exception), and the engine's batches with the router double and a FakeClock
(the idle timeout, a stream that stops allowing batches).
"""

from __future__ import annotations

import json
import random

import pytest
from router_double import RouterDouble

from jetstream_server.core.clock import FakeClock
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.fast_batch import INVALID, FastOp, parse_reply, without_header
from jetstream_server.jetstream.settings import EngineSettings

API = "$JS.API."


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("_INBOX.x.uuid.0.fail.1.0.$FI", FastOp("uuid", 1, 10, False, 0)),
        ("_INBOX.x.uuid.2.ok.7.1.$FI", FastOp("uuid", 7, 2, True, 1)),
        ("_INBOX.x.id.99999.ok.3.2.$FI", FastOp("id", 3, 0xFFFF, True, 2)),
        ("_INBOX.x.id.-5.fail.3.3.$FI", FastOp("id", 3, 10, False, 3)),  # flow not a number: 10
        ("a.b.5.fail.9.4.$FI", FastOp("b", 9, 5, False, 4)),
        (".id.1.fail.1.0.$FI", FastOp("id", 1, 1, False, 0)),  # an empty prefix
        ("_INBOX.x.id.0.fail.1.5.$FI", INVALID),  # unknown operation
        ("_INBOX.x.id.0.fail.1.-1.$FI", INVALID),
        ("_INBOX.x.id.0.fail.0.0.$FI", INVALID),  # sequence 0
        ("_INBOX.x.id.0.fail.18446744073709551615.1.$FI", INVALID),  # max uint64
        ("_INBOX.x.id.0.fail.18446744073709551616.1.$FI", INVALID),  # overflows
        ("_INBOX.x.id.0.fail.1.3.$FI", INVALID),  # end of batch at 1
        ("_INBOX.x.id.0.fail.2.0.$FI", INVALID),  # start not at 1
        ("_INBOX.x.id.0.fail.1.1.$FI", INVALID),  # append at 1
        ("_INBOX.x.id.0.maybe.1.0.$FI", INVALID),  # gap mode
        ("id.0.fail.1.0.$FI", INVALID),  # no batch id before the flow
        ("1.0.$FI", INVALID),
        ("0.$FI", INVALID),
        (".$FI", None),
        ("$FI", None),
        ("_INBOX.x.id.0.fail.1.0", None),
        ("_INBOX.x.id.0.fail.1.0.$fi", None),
        ("", None),
        (None, None),
        ("_INBOX.x.id.0.fail.１.0.$FI", INVALID),  # not ASCII digits
    ],
)
def test_reply_vectors(reply: str | None, expected: object) -> None:
    assert parse_reply(reply) == expected


def test_any_reply_parses_or_is_refused() -> None:
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    alphabet = ["0", "1", "2", "3", "4", "9", ".", "ok", "fail", "$FI", "-", "x", "", "é", "65536"]
    for _ in range(5000):
        reply = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        if rng.random() < 0.7:
            reply += ".$FI"
        got = parse_reply(reply)
        assert got is None or got is INVALID or isinstance(got, FastOp), reply
        if isinstance(got, FastOp):
            assert got.seq >= 1 and 1 <= got.flow <= 0xFFFF and 0 <= got.op <= 4


class Env:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.router = RouterDouble()
        self.engine = JetStream(EngineSettings(), self.clock)
        self.engine.start(self.router)
        self.config = {"name": "F", "subjects": ["f"], "allow_batched": True, "storage": "memory"}
        resp = self.router.request_json(API + "STREAM.CREATE.F", self.config)
        assert "error" not in resp, resp
        self.box = self.router.inbox("in.>")

    def send(self, seq: int, op: int, batch: str = "b") -> None:
        self.router.publish("f", f"in.{batch}.0.fail.{seq}.{op}.$FI", None, b"x")

    def answers(self) -> list[dict[str, object]]:
        out = [json.loads(m.payload) for m in self.box.messages]
        self.box.messages.clear()
        return out


def test_an_idle_batch_is_forgotten() -> None:
    env = Env()
    env.send(1, 0)
    assert env.answers() == [{"type": "ack", "seq": 0, "msgs": 10}]
    assert env.engine.fast_batches.open_count("F") == 1
    env.clock.advance(9.9)
    env.send(2, 1)  # activity restarts the 10 s
    env.clock.advance(9.9)
    assert env.engine.fast_batches.open_count("F") == 1
    env.clock.advance(0.2)
    assert env.engine.fast_batches.open_count() == 0
    env.send(3, 2)  # the batch is gone: unknown
    assert [a["error"]["err_code"] for a in env.answers()] == [10208]  # type: ignore[index]


def test_disallowing_batches_drops_the_open_ones() -> None:
    env = Env()
    env.send(1, 0)
    env.send(1, 0, batch="c")
    assert env.engine.fast_batches.open_count("F") == 2
    resp = env.router.request_json(API + "STREAM.UPDATE.F", {**env.config, "allow_batched": False})
    assert "error" not in resp, resp
    assert env.engine.fast_batches.open_count() == 0
    env.answers()
    env.send(2, 2)
    assert [a["error"]["err_code"] for a in env.answers()] == [10205]  # type: ignore[index]


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (b"NATS/1.0\r\nNats-Required-Api-Level: 1\r\nA: b\r\n\r\n", b"NATS/1.0\r\nA: b\r\n\r\n"),
        (b"NATS/1.0\r\nA: b\r\nNats-Required-Api-Level: 1\r\n\r\n", b"NATS/1.0\r\nA: b\r\n\r\n"),
        (b"NATS/1.0\r\nNats-Required-Api-Level: 1\r\n\r\n", None),
        (b"NATS/1.0\r\nnats-required-api-level: 1\r\n\r\n",
         b"NATS/1.0\r\nnats-required-api-level: 1\r\n\r\n"),
        (b"NATS/1.0\r\nNats-Required-Api-Levels: 1\r\n\r\n",
         b"NATS/1.0\r\nNats-Required-Api-Levels: 1\r\n\r\n"),
    ],
)
def test_the_required_level_header_is_removed(block: bytes, expected: bytes | None) -> None:
    assert without_header(block, "Nats-Required-Api-Level") == expected
