"""frame_scan: the buffer-wide scan (numpy) takes exactly the frames the frame-by-frame walk takes.

Random deliveries mix regular data frames (with and without headers, empty,
large and look-alike payloads, each reply layout) with what neither scanner
may take (statuses, PINGs, other subscriptions' messages, irregular lines:
double spaces, a non-digit or 20-digit number, a header size above the size);
`scan_fast` and `scan_simple` must agree on the index and the stop position
from every frame start and when the buffer is cut anywhere (a frame split
across reads). The walk itself is checked against the reference parse in
test_msg_runs.py.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_jetstream.client import frame_scan
from spark_jetstream.client.frame_scan import FrameIndex, scan, scan_fast, scan_simple

SID = b"7"
TS = 1_764_000_000_123_456_789


def reply(layout: str, seq: int, ts: int = TS, pending: int = 0) -> str:
    if layout == "9":
        return f"$JS.ACK.S.sjr_c.1.{seq}.{seq}.{ts}.{pending}"
    if layout == "11":
        return f"$JS.ACK.dom.ACCHASH.S.sjr_c.1.{seq}.{seq}.{ts}.{pending}"
    if layout == "10":  # no ADR-15 layout: read from the end as ack_fields reads it
        return f"$JS.ACK.x.S.sjr_c.1.{seq}.{seq}.{ts}.{pending}"
    return f"$JS.ACK.dom.ACCHASH.S.sjr_c.1.{seq}.{seq}.{ts}.{pending}.r{seq % 11}"


def frame(subject: str, reply_to: str, headers: bytes = b"", payload: bytes = b"", sid: str = "7") -> bytes:
    if headers:
        line = f"HMSG {subject} {sid} {reply_to} {len(headers)} {len(headers) + len(payload)}\r\n"
    else:
        line = f"MSG {subject} {sid} {reply_to} {len(payload)}\r\n"
    return line.encode() + headers + payload + b"\r\n"


def look_alike(seq: int) -> bytes:
    return frame("fake", reply("9", seq), payload=b"inside")


NOT_OURS = [
    b"PING\r\n",
    b"+OK\r\n",
    b"HMSG _INBOX.x 7 16 16\r\nNATS/1.0 100\r\n\r\n\r\n",  # a status (no reply)
    b"HMSG _INBOX.x 7 28 28\r\nNATS/1.0 404 No Messages\r\n\r\n\r\n",
    b"MSG _INBOX.r.1 1 5\r\nhello\r\n",  # another subscription
    frame("s", reply("9", 5), sid="9"),  # another sid
    b"MSG  s 7 $JS.ACK.S.c.1.5.5.5.0 1\r\nx\r\n",  # a double space
    b"MSG s 7 $JS.ACK.S.c.1.5x.5.5.0 1\r\nx\r\n",  # a sequence that is no number
    b"MSG s 7 $JS.ACK.S.c.1.5.5.99999999999999999999.0 1\r\nx\r\n",  # 20 digits
    b"MSG s 7 $JS.ACK.S.c.1.5.5.9300000000000000000.0 1\r\nx\r\n",  # above int64
    b"MSG s 7 $JS.ACK.5.0 1\r\nx\r\n",  # 3 dots: too few for a sequence, a timestamp and a count
    b"HMSG s 7 $JS.ACK.S.c.1.5.5.5.0 12 3\r\nNATS/1.0\r\n\r\n\r\n",  # header size above the size
    b"MSG s 7 _INBOX.not.an.ack.reply.a.b.c.d 1\r\nx\r\n",
]

HEADERS = [b"", b"", b"NATS/1.0\r\nNats-Msg-Id: m-1\r\n\r\n", b"NATS/1.0\r\nA: 1\r\nA: 2\r\n\r\n"]


@st.composite
def deliveries(draw: st.DrawFn) -> bytes:
    layout = draw(st.sampled_from(("9", "11", "12", "10")))
    seq = draw(st.integers(1, 10**12))
    parts = []
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            parts.append(draw(st.sampled_from(NOT_OURS)))
            continue
        seq += draw(st.integers(1, 3))
        payload = draw(
            st.one_of(
                st.binary(max_size=40),
                st.sampled_from([b"", b"\r\n", b" 7 $JS.ACK.", b"MSG ", b"a.b c.d", b"x" * 3000]),
                st.builds(look_alike, st.integers(1, 99)),
            )
        )
        subject = draw(st.sampled_from(["a", "s.b.c", "$KV.b.k", "ünï.cödé", "x" * 60]))
        ts = draw(st.sampled_from([TS, 1, 8_999_999_999_999_999_999, 10**17]))
        parts.append(frame(subject, reply(layout, seq, ts, seq % 5), draw(st.sampled_from(HEADERS)), payload))
    return b"".join(parts)


def same(buf: bytes, pos: int) -> None:
    fast, fast_stop = scan_fast(buf, pos, SID)
    simple, simple_stop = scan_simple(buf, pos, SID)
    assert (fast.rows(), fast_stop) == (simple.rows(), simple_stop)


@settings(max_examples=40, deadline=None)
@given(deliveries(), st.randoms(use_true_random=False))
def test_fast_equals_simple_from_every_frame_and_at_any_cut(buf: bytes, rnd: random.Random) -> None:
    starts = [0] + [i + 2 for i in range(len(buf)) if buf.startswith(b"\r\n", i)]
    for pos in starts[:40]:
        same(buf, min(pos, len(buf)))
    for cut in sorted(rnd.sample(range(len(buf) + 1), min(40, len(buf) + 1))):
        same(buf[:cut], 0)


def test_the_run_stops_at_a_status_and_goes_on_after_it() -> None:
    data = [frame("a", reply("9", s), payload=b"p%d" % s) for s in (1, 2)]
    status = b"HMSG _INBOX.x 7 28 28\r\nNATS/1.0 404 No Messages\r\n\r\n\r\n"
    buf = data[0] + status + data[1]
    index, stop = scan_fast(buf, 0, SID)
    assert [r[6] for r in index.rows()] == [1] and stop == len(data[0])
    index, stop = scan_fast(buf, stop + len(status), SID)
    assert [r[6] for r in index.rows()] == [2] and stop == len(buf)


def test_a_look_alike_inside_a_payload_is_no_frame() -> None:
    inner = frame("fake", reply("9", 99), payload=b"x")
    buf = b"".join(frame("a", reply("9", s), payload=inner if s % 2 else b"y") for s in range(1, 40))
    index, stop = scan_fast(buf, 0, SID)
    assert [r[6] for r in index.rows()] == list(range(1, 40)) and stop == len(buf)
    assert index.rows() == scan_simple(buf, 0, SID)[0].rows()


def test_a_frame_cut_by_the_read_waits_for_the_rest() -> None:
    frames = [frame("a", reply("12", s), HEADERS[s % 4], b"z" * 50) for s in range(1, 6)]
    buf = b"".join(frames)
    cut = len(frames[0]) + len(frames[1]) + 7
    index, stop = scan_fast(buf[:cut], 0, SID)
    assert len(index) == 2 and stop == cut - 7
    index, stop = scan_fast(buf, stop, SID)
    assert [r[6] for r in index.rows()] == [3, 4, 5] and stop == len(buf)


def test_fields_of_one_frame() -> None:
    headers = b"NATS/1.0\r\nA: 1\r\n\r\n"
    buf = frame("s.b", reply("11", 42, TS), headers, b"payload")
    index, _ = scan_fast(buf, 0, SID)
    start, subject, subject_end, body, payload, end, seq, ts = index.rows()[0]
    assert buf[subject:subject_end] == b"s.b" and buf[body:payload] == headers
    assert buf[payload:end] == b"payload" and buf[end:] == b"\r\n" and (start, seq, ts) == (0, 42, TS)


def test_large_frames_are_walked_and_small_buffers_too(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(frame_scan, "scan_fast", lambda *a: calls.append("fast") or scan_fast(*a))
    monkeypatch.setattr(frame_scan, "scan_simple", lambda *a: calls.append("simple") or scan_simple(*a))
    big = b"".join(frame("a", reply("9", s), payload=b"b" * 100_000) for s in range(1, 4))
    small = b"".join(frame("a", reply("9", s), payload=b"s") for s in range(1, 400))
    assert len(scan(big, 0, SID)[0]) == 3 and len(scan(small, 0, SID)[0]) == 399
    assert len(scan(small[:500], 0, SID)[0]) > 0
    assert calls == ["simple", "fast", "simple"]
    status = b"HMSG _INBOX.x 7 28 28\r\nNATS/1.0 404 No Messages\r\n\r\n\r\n"
    index, stop = scan(status + small, 0, SID)  # nothing to take: no scanner runs
    assert (len(index), stop, calls) == (0, 0, ["simple", "fast", "simple"])


def test_index_concat_and_cut() -> None:
    a = FrameIndex.of([(0, 4, 5, 8, 8, 9, 1, 10)])
    b = FrameIndex.of([(0, 4, 5, 8, 9, 12, 2, 20), (14, 18, 19, 22, 22, 23, 3, 30)])
    both = FrameIndex.concat([a, b], [0, 11])
    assert both.field("start").tolist() == [0, 11, 25] and both.field("seq").tolist() == [1, 2, 3]
    assert both[1:].shifted(-11).rows()[0] == (0, 4, 5, 8, 9, 12, 2, 20)
    assert len(FrameIndex.empty()) == 0 and FrameIndex.of([]).pos.shape == (6, 0)
    assert np.array_equal(FrameIndex.concat([], []).nums, np.empty((2, 0), np.int64))
