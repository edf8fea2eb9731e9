"""The sans-IO parser and encoders (jetstream_server/core/protocol.py): no sockets, no loop.

Every frame is fed whole and one byte at a time; hypothesis states the
invariants: any bytes parse or raise `ProtocolError` (nothing else), and
encode-then-parse round-trips.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetstream_server.core import protocol as P
from jetstream_server.core.protocol import (
    Connect,
    Parser,
    Ping,
    Pong,
    ProtocolError,
    Pub,
    Sub,
    Unsub,
)

FRAMES: list[tuple[bytes, list[P.Op]]] = [
    (b'CONNECT {"verbose":false,"headers":true}\r\n', [Connect({"verbose": False, "headers": True})]),
    (b"PING\r\n", [Ping()]),
    (b"PONG\r\n", [Pong()]),
    (b"ping\n", [Ping()]),
    (b"SUB foo 1\r\n", [Sub("foo", None, "1")]),
    (b"SUB foo.* workers 22\r\n", [Sub("foo.*", "workers", "22")]),
    (b"SUB\tfoo\t1\r\n", [Sub("foo", None, "1")]),
    (b"UNSUB 1\r\n", [Unsub("1", None)]),
    (b"UNSUB 1 5\r\n", [Unsub("1", 5)]),
    (b"UNSUB 1 x\r\n", [Unsub("1", 0)]),
    (b"PUB foo 5\r\nhello\r\n", [Pub("foo", None, None, b"hello")]),
    (b"PUB foo reply 0\r\n\r\n", [Pub("foo", "reply", None, b"")]),
    (b"PUB foo 4\r\na\r\nb\r\n", [Pub("foo", None, None, b"a\r\nb")]),
    (
        b"HPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n",
        [Pub("foo", None, b"NATS/1.0\r\n\r\n", b"hi")],
    ),
    (
        b"HPUB foo rep 18 18\r\nNATS/1.0\r\nA: b\r\n\r\n\r\n",
        [Pub("foo", "rep", b"NATS/1.0\r\nA: b\r\n\r\n", b"")],
    ),
    # off the PUB/HPUB fast path: lower case, tabs, a header block of 0 bytes
    (b"hpub foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", [Pub("foo", None, b"NATS/1.0\r\n\r\n", b"hi")]),
    (b"HPUB\tfoo\tr\t0\t2\r\nhi\r\n", [Pub("foo", "r", b"", b"hi")]),
    (b"pub foo 2\r\nhi\r\n", [Pub("foo", None, None, b"hi")]),
    (b"INFO {}\r\n+OK\r\n-ERR 'x'\r\nPING\r\n", [Ping()]),
    (
        b"SUB a 1\r\nPUB a 1\r\nx\r\nPING\r\nPONG\r\n",
        [Sub("a", None, "1"), Pub("a", None, None, b"x"), Ping(), Pong()],
    ),
]


@pytest.mark.parametrize(("frame", "ops"), FRAMES)
def test_frame_whole(frame: bytes, ops: list[P.Op]) -> None:
    assert Parser().feed(frame) == ops


@pytest.mark.parametrize(("frame", "ops"), FRAMES)
def test_frame_one_byte_at_a_time(frame: bytes, ops: list[P.Op]) -> None:
    parser = Parser()
    got: list[P.Op] = []
    for i in range(len(frame)):
        got.extend(parser.feed(frame[i : i + 1]))
    assert got == ops
    assert parser.buffered == 0


def test_all_frames_in_one_feed() -> None:
    data = b"".join(f for f, _ in FRAMES)
    assert Parser().feed(data) == [op for _, ops in FRAMES for op in ops]


def test_many_ops_per_feed_is_linear() -> None:
    frame = b"PUB bench.subject 16\r\n0123456789abcdef\r\n"
    ops = Parser().feed(frame * 20000)
    assert len(ops) == 20000
    assert ops[-1] == Pub("bench.subject", None, None, b"0123456789abcdef")


@pytest.mark.parametrize(
    ("data", "reason", "silent"),
    [
        (b"FOO\r\n", P.ERR_UNKNOWN_OP, False),
        (b"\r\n", P.ERR_UNKNOWN_OP, False),
        (b"UNSUB\r\n", P.ERR_UNKNOWN_OP, False),
        (b"PUB foo 3\r\nabcd\r\n", P.ERR_UNKNOWN_OP, False),
        (b"PUB foo 1\r\nx\n", P.ERR_UNKNOWN_OP, False),
        (b"PUB foo 2000000\r\n", P.ERR_MAX_PAYLOAD, False),
        (b"HPUB foo 1 2000000\r\n", P.ERR_MAX_PAYLOAD, False),
        (b"SUB " + b"a" * 5000 + b" 1\r\n", P.ERR_MAX_CONTROL_LINE, False),
        (b"SUB " + b"a" * 5000, P.ERR_MAX_CONTROL_LINE, False),
        (b"PUB foo\r\n", P.ERR_UNKNOWN_OP, True),
        (b"PUB foo -1\r\n", P.ERR_UNKNOWN_OP, True),
        (b"PUB foo 1x\r\n", P.ERR_UNKNOWN_OP, True),
        (b"PUB a b c d\r\n", P.ERR_UNKNOWN_OP, True),
        (b"HPUB foo 5 3\r\n", P.ERR_UNKNOWN_OP, True),
        (b"HPUB foo 5\r\n", P.ERR_UNKNOWN_OP, True),
        # the whole frame at hand (the fast path's checks): the same errors
        (b"HPUB foo 14 12\r\nNATS/1.0\r\n\r\nhi\r\n", P.ERR_UNKNOWN_OP, True),
        (b"HPUB foo 12 13\r\nNATS/1.0\r\n\r\nhi\r\n", P.ERR_UNKNOWN_OP, False),
        (b"HPUB foo x 12\r\nNATS/1.0\r\n\r\n\r\n", P.ERR_UNKNOWN_OP, True),
        (b"HPUB foo 1 2000000\r\n" + b"x" * 2_000_002, P.ERR_MAX_PAYLOAD, False),
        (b"PUB foo 2000000\r\n" + b"x" * 2_000_002, P.ERR_MAX_PAYLOAD, False),
        (b"SUB foo\r\n", P.ERR_UNKNOWN_OP, True),
        (b"SUB a b c d\r\n", P.ERR_UNKNOWN_OP, True),
        (b"CONNECT {nope\r\n", P.ERR_UNKNOWN_OP, True),
        (b"CONNECT [1]\r\n", P.ERR_UNKNOWN_OP, True),
        (b"CONNECT " + b"[" * 3000 + b"\r\n", P.ERR_UNKNOWN_OP, True),
        (b"CONNECT {\"a\":\"\xff\"}\r\n", P.ERR_UNKNOWN_OP, True),
        # an op nats-server's parser cannot start refuses at its first byte, not
        # once the line outgrows max_control_line
        (b"\x00", P.ERR_UNKNOWN_OP, False),
        (b"\xff" * 100_000, P.ERR_UNKNOWN_OP, False),
        (b"Z", P.ERR_UNKNOWN_OP, False),
    ],
)
def test_errors(data: bytes, reason: str, silent: bool) -> None:
    parser = Parser()
    with pytest.raises(ProtocolError) as info:
        parser.feed(data)
    assert info.value.reason == reason
    assert info.value.silent is silent
    with pytest.raises(ProtocolError):
        parser.feed(b"PING\r\n")  # unusable after an error


def test_limits_are_configurable() -> None:
    parser = Parser(max_control_line=16, max_payload=4)
    assert parser.feed(b"PUB a 4\r\nabcd\r\n") == [Pub("a", None, None, b"abcd")]
    with pytest.raises(ProtocolError, match="Maximum Payload"):
        parser.feed(b"PUB a 5\r\n")
    with pytest.raises(ProtocolError, match="control line"):
        Parser(max_control_line=16).feed(b"SUB abcdefghijklmnop 1\r\n")


def test_ops_before_an_error_are_not_lost() -> None:
    parser = Parser()
    assert parser.feed(b"PING\r\n") == [Ping()]
    with pytest.raises(ProtocolError) as info:
        parser.feed(b"SUB a 1\r\nPUB a 2\r\nhi\r\nBOGUS\r\n")
    assert info.value.ops == [Sub("a", None, "1"), Pub("a", None, None, b"hi")]


def test_encoders() -> None:
    assert P.encode_msg(b"foo", b"1", None, b"hi") == b"MSG foo 1 2\r\nhi\r\n"
    assert P.encode_msg(b"foo", b"1", b"r", b"") == b"MSG foo 1 r 0\r\n\r\n"
    assert (
        P.encode_hmsg(b"foo", b"9", b"r", b"NATS/1.0 503\r\n\r\n", b"")
        == b"HMSG foo 9 r 16 16\r\nNATS/1.0 503\r\n\r\n\r\n"
    )
    assert P.encode_err("Authorization Violation") == b"-ERR 'Authorization Violation'\r\n"
    assert P.encode_info({"a": 1}) == b'INFO {"a":1}\r\n'
    assert (P.PING, P.PONG, P.OK) == (b"PING\r\n", b"PONG\r\n", b"+OK\r\n")


def test_run_formats_take_any_sid_and_views() -> None:
    # a sid is whatever the client sent: a "%" in it stays literal
    msg, hmsg = P.msg_formats(b"5%d", P.format_literal(b"$JS.ACK.100%.") + b"%d.%d")
    body = memoryview(b"..payload..")[2:9]
    assert msg % (b"s", 1, 2, 7, body) == P.encode_msg(b"s", b"5%d", b"$JS.ACK.100%.1.2", b"payload")
    assert hmsg % (b"s", 1, 2, 4, 7, memoryview(b"HHHHpay")) == P.encode_hmsg(
        b"s", b"5%d", b"$JS.ACK.100%.1.2", b"HHHH", b"pay"
    )
    plain, _ = P.msg_formats(b"1")
    assert plain % (b"s", 2, b"hi") == b"MSG s 1 2\r\nhi\r\n"


# -- properties ------------------------------------------------------------------

tokens = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-$", min_size=1, max_size=8)
subjects = st.lists(tokens, min_size=1, max_size=5).map(".".join)
payloads = st.binary(max_size=300)
header_blocks = st.lists(st.tuples(tokens, tokens), max_size=3).map(
    lambda items: b"NATS/1.0\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in items) + b"\r\n"
)

ops_strategy = st.one_of(
    st.builds(lambda s, r, p: Pub(s, r, None, p), subjects, st.none() | subjects, payloads),
    st.builds(lambda s, r, h, p: Pub(s, r, h, p), subjects, st.none() | subjects, header_blocks, payloads),
    st.builds(Sub, subjects, st.none() | tokens, st.integers(1, 10**6).map(str)),
    st.builds(Unsub, st.integers(1, 10**6).map(str), st.none() | st.integers(0, 10**6)),
    st.just(Ping()),
    st.just(Pong()),
    st.builds(Connect, st.dictionaries(tokens, st.booleans() | tokens, max_size=4)),
)


def encode_client_op(op: P.Op) -> bytes:
    if isinstance(op, Pub):
        if op.headers is not None:
            return P.encode_hpub(op.subject, op.reply, op.headers, op.payload)
        return P.encode_pub(op.subject, op.reply, op.payload)
    if isinstance(op, Sub):
        return P.encode_sub(op.subject, op.queue, op.sid)
    if isinstance(op, Unsub):
        return P.encode_unsub(op.sid, op.max_msgs)
    if isinstance(op, Connect):
        return P.encode_connect(op.options)
    return P.PING if isinstance(op, Ping) else P.PONG


@settings(max_examples=200, deadline=None)
@given(st.lists(ops_strategy, max_size=12), st.lists(st.integers(1, 64), max_size=30))
def test_encode_then_parse_round_trips(ops: list[P.Op], cuts: list[int]) -> None:
    data = b"".join(encode_client_op(op) for op in ops)
    parser = Parser()
    got: list[P.Op] = []
    pos = 0
    for cut in cuts:
        got.extend(parser.feed(data[pos : pos + cut]))
        pos += cut
    got.extend(parser.feed(data[pos:]))
    assert got == ops


@settings(max_examples=400, deadline=None)
@given(st.lists(st.binary(max_size=80) | st.sampled_from(
    [b"PUB a 3\r\n", b"HPUB a 2 4\r\n", b"SUB a 1\r\n", b"\r\n", b"PING\r\n", b"CONNECT {}\r\n"]
), max_size=10))
def test_any_bytes_parse_or_raise_protocol_error(chunks: list[bytes]) -> None:
    parser = Parser(max_control_line=256, max_payload=64)
    try:
        for chunk in chunks:
            for op in parser.feed(chunk):
                assert isinstance(op, Connect | Pub | Sub | Unsub | Ping | Pong)
    except ProtocolError as exc:
        assert exc.reason in (P.ERR_UNKNOWN_OP, P.ERR_MAX_CONTROL_LINE, P.ERR_MAX_PAYLOAD)
