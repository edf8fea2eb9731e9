"""The lean client's frame parser and header codec (client/frames.py) and the read path's
subject match (read/fetch.py): pure functions, no server."""

from __future__ import annotations

import pytest

from spark_jetstream.client import (
    NatsError,
)
from spark_jetstream.client.frames import encode_headers, parse_frames, parse_headers
from spark_jetstream.read.fetch import subject_matches

WIRE = (
    b"INFO {\"server_id\":\"x\",\"headers\":true}\r\n"
    b"PING\r\n"
    b"MSG a.b 1 5\r\nhello\r\n"
    b"MSG a.c 2 _INBOX.r 0\r\n\r\n"
    b"HMSG a.d 3 $JS.ACK.S.c.1.7.7.1700000000000000000.0 24 27\r\nNATS/1.0\r\nK: v\r\nK: w\r\n\r\nabc\r\n"
    b"+OK\r\n"
    b"PONG\r\n"
    b"-ERR 'Unknown Protocol Operation'\r\n"
)
EXPECTED = [
    (b"INFO", b"", b"", b"", b"", b"{\"server_id\":\"x\",\"headers\":true}"),
    (b"PING", b"", b"", b"", b"", b""),
    (b"MSG", b"a.b", b"1", b"", b"", b"hello"),
    (b"MSG", b"a.c", b"2", b"_INBOX.r", b"", b""),
    (b"MSG", b"a.d", b"3", b"$JS.ACK.S.c.1.7.7.1700000000000000000.0", b"NATS/1.0\r\nK: v\r\nK: w\r\n\r\n", b"abc"),
    (b"+OK", b"", b"", b"", b"", b""),
    (b"PONG", b"", b"", b"", b"", b""),
    (b"-ERR", b"", b"", b"", b"", b"'Unknown Protocol Operation'"),
]


def test_parse_frames_whole() -> None:
    frames, pos = parse_frames(WIRE)
    assert frames == EXPECTED
    assert pos == len(WIRE)


def test_parse_frames_one_byte_at_a_time() -> None:
    buf, pos, frames = b"", 0, []
    for i in range(len(WIRE)):
        buf = buf[pos:] + WIRE[i : i + 1]
        got, pos = parse_frames(buf)
        frames += got
    assert frames == EXPECTED


def test_parse_frames_rejects_garbage() -> None:
    with pytest.raises(NatsError, match="unexpected protocol line"):
        parse_frames(b"HELLO there\r\n")


def test_headers() -> None:
    assert parse_headers(b"NATS/1.0 404 No Messages\r\n\r\n") == (404, "No Messages", [])
    assert parse_headers(b"NATS/1.0 100 FlowControl Request\r\n\r\n")[:2] == (100, "FlowControl Request")
    block = encode_headers([("A", "1"), ("A", "2"), ("B", "x: y")])
    assert parse_headers(block) == (None, "", [("A", "1"), ("A", "2"), ("B", "x: y")])
    with pytest.raises(NatsError, match="bad header block"):
        parse_headers(b"HTTP/1.1 200\r\n\r\n")


def test_subject_matches() -> None:
    assert subject_matches("a.*", "a.b") and not subject_matches("a.*", "a.b.c")
    assert subject_matches("a.>", "a.b.c") and not subject_matches("a.>", "a")
    assert subject_matches("a.b", "a.b") and not subject_matches("a.b", "a.c")
