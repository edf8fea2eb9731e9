"""msg_runs + arrow_rows: the bulk read path equals the per-message path.

Random deliveries (data frames with and without headers, empty payloads,
payloads that look like frames, statuses, PINGs, other subscriptions' messages,
each of the three reply layouts) are cut at every byte boundary (and at random
ones), fed through `RunScanner` the way the range read does, and the Arrow
batches built in bulk from the raw chunks must equal those built from the
per-message parse of the same bytes (`parse_frames` + `ack_fields`, one frame at
a time, as the read path did before).
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_jetstream.client import frame_scan
from spark_jetstream.client.frames import parse_frames
from spark_jetstream.client.msg_runs import Chunk, RawChunk, RunScanner, ack_fields
from spark_jetstream.read.arrow_rows import arrow_schema, chunk_to_batch

SID = b"7"


@pytest.fixture(autouse=True, params=["buffer-wide", "frame by frame"])
def scanner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test with each scanner of frame_scan.py (left to itself, the scan walks these
    small buffers frame by frame)."""
    if request.param == "buffer-wide":
        monkeypatch.setattr(frame_scan, "SMALL_BUFFER", 0)
        monkeypatch.setattr(frame_scan, "LARGE_FRAME", 1 << 62)
    else:
        monkeypatch.setattr(frame_scan, "SMALL_BUFFER", 1 << 62)
    return str(request.param)


LAYOUTS = ("9", "11", "12")


def reply_subject(layout: str, seq: int, ts: int, pending: int) -> str:
    if layout == "9":
        return f"$JS.ACK.S.sjr_c.1.{seq}.{seq}.{ts}.{pending}"
    if layout == "11":
        return f"$JS.ACK.dom.ACCHASH.S.sjr_c.1.{seq}.{seq}.{ts}.{pending}"
    return f"$JS.ACK.dom.ACCHASH.S.sjr_c.1.{seq}.{seq}.{ts}.{pending}.rnd{seq % 7}"


def data_frame(subject: str, reply: str, headers: bytes, payload: bytes, sid: bytes = SID) -> bytes:
    if headers:
        line = f"HMSG {subject} {sid.decode()} {reply} {len(headers)} {len(headers) + len(payload)}\r\n"
    else:
        line = f"MSG {subject} {sid.decode()} {reply} {len(payload)}\r\n"
    return line.encode() + headers + payload + b"\r\n"


OTHER_FRAMES = [
    b"PING\r\n",
    b"+OK\r\n",
    b"HMSG _INBOX.x 7 16 16\r\nNATS/1.0 100\r\n\r\n\r\n",  # a status to the read's sid (no reply)
    b"MSG _INBOX.r.1 1 5\r\nhello\r\n",  # another subscription
    b"HMSG s.other 9 $JS.ACK.S.c.1.1.1.1.0 12 12\r\nNATS/1.0\r\n\r\n\r\n",  # another sid
]

TRICKY_PAYLOADS = [
    b"",
    b"\r\n",
    b"MSG a 7 $JS.ACK.S.c.1.2.2.3.0 5\r\n",
    b" 7 $JS.ACK.",
    b"HMSG ",
    "é".encode(),
]


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[list[bytes], bool]:
    layout = draw(st.sampled_from(LAYOUTS))
    count = draw(st.integers(0, 8))
    frames: list[bytes] = []
    seq = draw(st.integers(1, 10**6))
    for _ in range(count):
        if draw(st.integers(0, 4)) == 0:
            frames.append(draw(st.sampled_from(OTHER_FRAMES)))
        seq += draw(st.integers(1, 3))
        subject = draw(st.sampled_from(["a", "s.b.c", "ünï.cödé", "x" * 40]))
        headers = draw(
            st.sampled_from(
                [b"", b"", b"NATS/1.0\r\nNats-Msg-Id: m-1\r\n\r\n", b"NATS/1.0\r\nA: 1\r\nA: 2\r\nB: x:y\r\n\r\n"]
            )
        )
        payload = draw(st.one_of(st.sampled_from(TRICKY_PAYLOADS), st.binary(max_size=24)))
        ts = 1_700_000_000_000_000_000 + draw(st.integers(0, 10**12))
        frames.append(data_frame(subject, reply_subject(layout, seq, ts, 5), headers, payload))
    return frames, draw(st.booleans())


def per_message(stream: bytes, with_headers: bool) -> Chunk:
    """The reference: every frame parsed on its own (the read path before the bulk parse)."""
    frames, _ = parse_frames(stream)
    chunk = Chunk([], [], [] if with_headers else None, [], [])
    for op, subject, sid, reply, hdr, payload in frames:
        if op == b"MSG" and sid == SID and reply.startswith(b"$JS.ACK."):
            seq, ts, _ = ack_fields(reply)
            chunk.subjects.append(subject)
            chunk.data.append(payload)
            if chunk.headers is not None:
                chunk.headers.append(hdr)
            chunk.seqs.append(seq)
            chunk.ts_ns.append(ts)
    return chunk


def scan_parts(parts: list[bytes], with_headers: bool, chunk_rows: int) -> list[RawChunk]:
    """Feed the parts the way `_pull_range` does: scan, then one other frame at a time."""
    runs = RunScanner(SID, with_headers)
    chunks: list[RawChunk] = []
    buf, pos = b"", 0
    for part in parts:
        buf, pos = buf[pos:] + part, 0
        while True:
            pos = runs.scan(buf, pos)
            frames, new_pos = parse_frames(buf, pos, max_frames=1)
            if not frames:
                break
            op, _, sid, reply, _, _ = frames[0]
            if op == b"MSG" and sid == SID and reply.startswith(b"$JS.ACK."):
                runs.add_frame(buf[pos:new_pos])
            pos = new_pos
        while len(runs) >= chunk_rows:
            chunks.append(runs.take(chunk_rows))
    if len(runs):
        chunks.append(runs.take(chunk_rows))
    assert buf[pos:] == b""
    return chunks


def batches_equal(raw_chunks: list[RawChunk], reference: Chunk, with_headers: bool) -> None:
    schema = arrow_schema(with_headers)
    bulk = pa.Table.from_batches([chunk_to_batch(c, "S", schema) for c in raw_chunks], schema=schema)
    ref = pa.Table.from_batches([chunk_to_batch(reference, "S", schema)], schema=schema)
    assert bulk.to_pylist() == ref.to_pylist()
    assert bulk.schema == schema
    listed = [c.to_chunk() for c in raw_chunks]
    assert [s for c in listed for s in c.seqs] == reference.seqs


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(deliveries(), st.integers(1, 5), st.integers(0, 2))
def test_bulk_equals_per_message_at_every_split(
    scanner: str, case: tuple[list[bytes], bool], chunk_rows: int, first: int
) -> None:
    frames, with_headers = case
    stream = b"".join(frames)
    reference = per_message(stream, with_headers)
    step = 3 if scanner == "buffer-wide" else 1  # every third byte (from a drawn one): the numpy passes cost
    for cut in [*range(first, len(stream), step), len(stream)]:
        chunks = scan_parts([stream[:cut], stream[cut:]], with_headers, chunk_rows)
        assert sum(len(c) for c in chunks) == len(reference)
        assert all(len(c) == chunk_rows for c in chunks[:-1])
        if cut % 23 == 0 or cut == len(stream):  # building Arrow for every cut is slow; the scan is what cuts change
            batches_equal(chunks, reference, with_headers)
        else:
            assert [s for c in chunks for s in c.seqs] == reference.seqs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bulk_equals_per_message_in_random_pieces(seed: int) -> None:
    print(f"seed {seed}")
    rng = random.Random(seed)
    layout = rng.choice(LAYOUTS)
    frames = []
    for seq in range(1, 3001):
        if rng.random() < 0.02:
            frames.append(rng.choice(OTHER_FRAMES))
        headers = b"NATS/1.0\r\nNats-Msg-Id: id-%d\r\n\r\n" % seq if rng.random() < 0.3 else b""
        payload = rng.randbytes(rng.choice([0, 1, 16, 300]))
        frames.append(data_frame(f"s.{seq % 5}", reply_subject(layout, seq, 10**18 + seq, 3000 - seq), headers, payload))
    stream = b"".join(frames)
    cuts = sorted(rng.sample(range(len(stream)), 200))
    parts = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    for with_headers in (True, False):
        chunks = scan_parts(parts, with_headers, 512)
        batches_equal(chunks, per_message(stream, with_headers), with_headers)


def test_up_to_cuts_at_the_first_sequence_past_the_end() -> None:
    stream = b"".join(data_frame("a", reply_subject("9", seq, seq, 0), b"", b"p") for seq in (3, 5, 8, 9))
    runs = RunScanner(SID)
    assert runs.scan(stream, 0) == len(stream)
    assert runs.last_fields() == (9, 9, 0)
    chunk = runs.take(10)
    assert [c.seqs for c in (chunk.up_to(2), chunk.up_to(5), chunk.up_to(7), chunk.up_to(9))] == [
        [],
        [3, 5],
        [3, 5],
        [3, 5, 8, 9],
    ]


def test_a_chunk_cut_keeps_the_rest_for_the_next() -> None:
    stream = b"".join(data_frame("a", reply_subject("11", seq, seq, 0), b"", b"%d" % seq) for seq in range(1, 8))
    runs = RunScanner(SID)
    runs.scan(stream[:40], 0)  # nothing complete yet
    assert len(runs) == 0
    pos = runs.scan(stream, 0)
    first, second = runs.take(3), runs.take(3)
    assert (first.seqs, second.seqs, first.data, pos) == ([1, 2, 3], [4, 5, 6], [b"1", b"2", b"3"], len(stream))
    assert second.starts[0] == 0 and second.buf.startswith(b"MSG a 7 ") and second.last_seq == 6
    assert runs.take(3).seqs == [7] and len(runs) == 0


def test_add_frame_refuses_what_is_not_a_data_frame() -> None:
    with pytest.raises(ValueError, match="not a data frame"):
        RunScanner(SID).add_frame(b"PING\r\n")
