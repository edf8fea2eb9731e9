"""Fuzzing, as h11 states its invariant (issue 12): the protocol parser turns any bytes
into ops or a ProtocolError; a session fed any bytes never lets an exception out; every
`$JS.API` handler answers any request with an API error or a status, never the
catch-all "internal error", and the engine keeps serving. Hypothesis drives the
properties; `jetstream_testing.fuzz` adds seeded mutation runs (its long run,
`python -m jetstream_testing.fuzz --inputs 1000000`, is docs/reliability.md's figure)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jetstream_server.core import protocol as P
from jetstream_server.core.routing import Broker
from jetstream_server.core.session import Session, SessionSettings
from jetstream_testing import fuzz

# -- the protocol parser ---------------------------------------------------------------
FRAMES = [
    b"CONNECT {\"verbose\":false,\"headers\":true}\r\n", b"PING\r\n", b"PONG\r\n", b"SUB a.b 1\r\n",
    b"SUB a.* q 2\r\n", b"UNSUB 1\r\n", b"UNSUB 2 5\r\n", b"PUB a.b 5\r\nhello\r\n",
    b"PUB a.b r.1 0\r\n\r\n", b"HPUB a.b 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", b"SUB x \xff\xfe\r\n",
    b"PUB a\xffb 1\r\nx\r\n", b"+OK\r\n", b"-ERR 'x'\r\n", b"INFO {}\r\n",
]


@st.composite
def wire_bytes(draw: st.DrawFn) -> bytes:
    """Valid frames, then byte-level mutations (insert, delete, replace), or raw bytes."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=200))
    data = bytearray(b"".join(draw(st.lists(st.sampled_from(FRAMES), min_size=1, max_size=6))))
    for _ in range(draw(st.integers(0, 4))):
        pos = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["insert", "delete", "replace"]))
        byte = draw(st.sampled_from([0, 10, 13, 32, 42, 46, 62, 0xFF, 0x30, 0x39, 0x7B]))
        if kind == "insert":
            data.insert(pos, byte)
        elif pos < len(data):
            if kind == "delete":
                del data[pos]
            else:
                data[pos] = byte
    return bytes(data)


def parse(chunks: list[bytes]) -> tuple[list[Any], str | None]:
    parser = P.Parser(max_control_line=4096, max_payload=1024)
    ops: list[Any] = []
    for chunk in chunks:
        try:
            ops.extend(parser.feed(chunk))
        except P.ProtocolError as exc:
            return ops + list(exc.ops), exc.reason
    return ops, None


@settings(max_examples=400, deadline=None)
@given(wire_bytes(), st.data())
def test_parser_gives_ops_or_a_protocol_error(data: bytes, draw: st.DataObject) -> None:
    assert parse([data]) is not None  # anything else than ProtocolError fails the test here
    # Whole or split anywhere: the same ops, the same error. (The trailing PING
    # completes a frame left open: a whole buffer may refuse a payload's missing
    # CRLF a byte earlier than a parser waiting for that byte.)
    data += b"\r\nPING\r\n"
    whole = parse([data])
    cuts = sorted(draw.draw(st.lists(st.integers(0, len(data)), max_size=5)))
    pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    assert parse(pieces) == whole
    assert parse([data[i : i + 1] for i in range(len(data))]) == whole


def test_a_payload_followed_by_lf_alone_is_refused_at_the_lf_however_it_is_split() -> None:
    """The parser waiting for a payload's CRLF looks again at its first byte (found by the
    test above): fed a byte at a time, the LF is refused when it comes, not held."""
    data = b"PUB a 3\r\nxyz\n"  # nothing after the LF: no later byte triggers a parse
    expected = ([], "Unknown Protocol Operation")
    assert parse([data]) == expected
    assert parse([data[i : i + 1] for i in range(len(data))]) == expected
    assert parse([data[:10], data[10:12], data[12:]]) == expected


class Wire:
    def __init__(self) -> None:
        self.out = b""
        self.closed = False

    def output_ready(self) -> None:
        pass

    def buffered_bytes(self) -> int:
        return 0

    def session_closed(self, close: Any) -> None:
        self.closed = True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(wire_bytes(), min_size=1, max_size=4))
def test_sessions_survive_any_bytes(reads: list[bytes]) -> None:
    """Sessions on one broker: any bytes from one never raise out of `receive_data`,
    and a third client's message still reaches the listener, whose sid is not UTF-8
    (the crash of issue 12)."""
    broker = Broker()
    settings_ = SessionSettings(max_control_line=4096, max_payload=1024, max_pending=1 << 20)
    listener_wire, talker_wire = Wire(), Wire()
    listener = Session(1, broker, listener_wire, settings_)
    talker = Session(2, broker, talker_wire, settings_)
    listener.receive_data(b"CONNECT {\"headers\":true}\r\nSUB > \xff\r\n")
    talker.receive_data(b"CONNECT {\"headers\":true}\r\n")
    for data in reads:
        talker.receive_data(data)
        listener.data_to_send()
        talker.data_to_send()
    other = Session(3, broker, Wire(), settings_)  # another client is still served
    other.receive_data(b"CONNECT {}\r\nPUB z 1\r\nx\r\n")
    assert listener.data_to_send().endswith(b"MSG z \xff 1\r\nx\r\n")


# -- every $JS.API handler ------------------------------------------------------------
JSON = st.recursive(
    st.sampled_from(fuzz.VALUES[:40]) | st.integers() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, bytes]:
    pattern, template = draw(st.sampled_from(fuzz.ROUTES))
    stream = draw(st.sampled_from(["S", "T", *fuzz.NAMES]))
    consumer = draw(st.sampled_from(["C", *fuzz.NAMES]))
    subject = pattern.replace("{s}", stream).replace("{c}", consumer)
    kind = draw(st.sampled_from(["mutated", "mutated", "json", "raw"]))
    if kind == "raw":
        return subject, draw(st.binary(max_size=64))
    if kind == "json":
        return subject, json.dumps(draw(JSON)).encode("utf-8", "surrogatepass")
    body: dict[str, Any] = dict(template or {})
    if "name" in body:
        body["name"] = stream
    for key in draw(st.lists(st.sampled_from(sorted(body) or ["x"]), max_size=3)):
        body[key] = draw(JSON)
    if isinstance(body.get("config"), dict):
        config = dict(body["config"])
        for key in draw(st.lists(st.sampled_from(sorted(config) or ["x"]), max_size=3)):
            config[key] = draw(JSON)
        body["config"] = config
    return subject, json.dumps(body).encode("utf-8", "surrogatepass")


@pytest.fixture(scope="module")
def fuzzer() -> fuzz.Fuzzer:
    return fuzz.Fuzzer(seed=0, store_dir=None)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_every_api_handler_answers_with_an_error_not_a_crash(
    fuzzer: fuzz.Fuzzer, request: tuple[str, bytes]
) -> None:
    subject, body = request
    fuzzer.report.failures.clear()
    fuzzer._base()
    fuzzer._check(subject, body, fuzzer.request(subject, body))
    assert fuzzer.report.failures == []
    assert fuzzer.still_serving()
    fuzzer.cleanup()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_seeded_mutation_runs_keep_the_invariant(seed: int) -> None:
    report = fuzz.run(3000, seed)
    print(f"fuzz seed {seed}: {report.inputs} inputs, {report.errors} API errors, {report.seconds:.1f} s")
    assert report.failures == [], report.failures[:5]
    assert report.inputs == 3000 and report.errors > 0
