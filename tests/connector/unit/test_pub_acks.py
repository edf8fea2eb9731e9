"""The bulk pub ack scan: what it takes agrees with the full frame parse, cut at every byte;
anything but a run of plain positive acks is left to the full parse."""

from __future__ import annotations

import json
import random

import pytest

from spark_jetstream.client.frames import parse_frames
from spark_jetstream.write.pub_acks import AckRun, scan_acks

PREFIX = b"_INBOX.4f1e0c9a8b7d6e5f4a3b."
SID = b"7"


def ack(token: int, payload: bytes, *, sid: bytes = SID, prefix: bytes = PREFIX) -> bytes:
    return b"MSG %b%d %b %d\r\n%b\r\n" % (prefix, token, sid, len(payload), payload)


def stored(stream: str, seq: int) -> bytes:
    return b'{"stream":"%b","seq":%d}' % (stream.encode(), seq)


def reference(buf: bytes) -> AckRun | None:
    """The same answer from the full parse: every complete frame a positive ack, or None."""
    frames, end = parse_frames(buf, 0)
    if not frames:
        return None
    tokens, duplicates, streams = [], [], set()
    for op, subject, sid, reply, hdr, payload in frames:
        if op != b"MSG" or sid != SID or hdr or reply or not subject.startswith(PREFIX):
            return None
        body = json.loads(payload)
        if "error" in body or next(iter(body), None) != "stream" or b"\\" in payload:
            return None
        token = int(subject[len(PREFIX) :])
        tokens.append(token)
        streams.add(body["stream"].encode())
        if body.get("duplicate"):
            duplicates.append(token)
    return AckRun(tokens, duplicates, streams, end)


def acks_buffer(rng: random.Random, n: int) -> bytes:
    frames = []
    for token in range(1, n + 1):
        stream = "S" if rng.random() < 0.8 else rng.choice(["ORDERS", "S-2", "ü"])
        payload = stored(stream, token + 100)
        roll = rng.random()
        if roll < 0.1:
            payload = payload[:-1] + b',"duplicate":true}'
        elif roll < 0.2:
            payload = payload[:-1] + b',"duplicate": true}'  # nats-server's spelling
        elif roll < 0.25:
            payload = payload[:-1] + b',"domain":"hub"}'
        frames.append(ack(token, payload))
    return b"".join(frames)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_agrees_with_the_full_parse_at_every_cut(seed: int) -> None:
    print(f"seed={seed}")
    rng = random.Random(seed)
    buf = acks_buffer(rng, 12)
    for cut in range(len(buf) + 1):
        assert scan_acks(buf[:cut], 0, PREFIX, SID) == reference(buf[:cut]), cut


def test_one_stream_without_duplicates_and_from_an_offset() -> None:
    buf = b"junk" + b"".join(ack(t, stored("S", t)) for t in range(5, 2005)) + b"MSG " + PREFIX
    run = scan_acks(buf, 4, PREFIX, SID)
    assert run is not None
    assert run.tokens == list(range(5, 2005))
    assert (run.duplicates, run.streams) == ([], {b"S"})
    assert buf[run.end :] == b"MSG " + PREFIX


@pytest.mark.parametrize(
    "odd",
    [
        b"HMSG " + PREFIX + b"9 7 16 16\r\nNATS/1.0 503\r\n\r\n\r\n",  # no responders
        ack(9, b'{"error":{"code":400,"err_code":10077,"description":"too big"},"stream":"S","seq":0}'),
        b"PING\r\n",
        b"+OK\r\n",
        ack(9, stored("S", 9), sid=b"8"),  # another subscription
        ack(9, stored("S", 9), prefix=b"_INBOX.other."),
        ack(9, stored("S", 9)).replace(b" 7 ", b"  7 "),  # irregular spacing
        b"MSG " + PREFIX + b"9 7 99\r\n" + stored("S", 9) + b"\r\n",  # size disagrees
        b"MSG " + PREFIX + b"x9 7 22\r\n" + stored("S", 9) + b"\r\n",  # not a token
        b"MSG " + PREFIX + b"9 7 rep 22\r\n" + stored("S", 9) + b"\r\n",  # a reply subject
        ack(9, b'{"stream":"S\\"x","seq":9}'),  # an escape in the name
        ack(9, b'{"seq":9}'),
        ack(9, b'{"stream":"S","seq":9'),
    ],
)
def test_anything_else_in_the_buffer_leaves_it_to_the_full_parse(odd: bytes) -> None:
    before = b"".join(ack(t, stored("S", t)) for t in range(1, 4))
    for buf in (odd + before, before + odd + before):
        assert scan_acks(buf, 0, PREFIX, SID) is None, buf
    # last in the buffer, a one-line frame looks like a frame still in flight: the acks
    # before it are taken, and it is left to the full parse
    run = scan_acks(before + odd, 0, PREFIX, SID)
    assert run is None or run == reference(before), odd


def test_other_fields_of_a_positive_ack_are_taken_as_stored() -> None:
    buf = ack(1, b'{"stream":"S","seq":9,"val":"3"}') + ack(2, b'{"stream":"T","seq":1,"duplicate":true}')
    assert scan_acks(buf, 0, PREFIX, SID) == AckRun([1, 2], [2], {b"S", b"T"}, len(buf))


def test_nothing_complete_takes_nothing() -> None:
    assert scan_acks(b"", 0, PREFIX, SID) is None
    frame = ack(1, stored("S", 1))
    assert scan_acks(frame[:-1], 0, PREFIX, SID) is None
    assert scan_acks(frame[:10], 0, PREFIX, SID) is None
