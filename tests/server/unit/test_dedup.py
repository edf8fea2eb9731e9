"""The dedup table (jetstream/dedup.py) and the stream's `Nats-Msg-Id`-only header path.

The table on its own (expiry in insertion order, an id recorded twice, the bulk
cut of expired entries, the snapshot form) and through a real `Stream` over a
`MemoryStore`: the memory an entry costs, measured with tracemalloc, and the
`Nats-Msg-Id`-only shortcut giving the answers of the full header parse.
"""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetstream_server.core.clock import FakeClock
from jetstream_server.core.headers import encode_headers
from jetstream_server.jetstream.dedup import DedupTable
from jetstream_server.jetstream.stream import PubAck, Stream, _HeaderPlan
from jetstream_server.jetstream.stream_config import StreamConfig
from jetstream_server.store.memory import MemoryStore

NS = 1_000_000_000


def test_ids_expire_in_insertion_order_and_an_id_recorded_again_answers_the_newest() -> None:
    table = DedupTable(10 * NS)
    table.record("a", 1, 1 * NS)
    table.record("b", 2, 2 * NS)
    table.record("a", 3, 5 * NS)  # a rebuild meeting "a" again
    assert table.lookup("a", 5 * NS) == 3 and table.lookup("b", 5 * NS) == 2
    assert table.lookup("b", 12 * NS) is None  # at now - window exactly: gone
    assert table.lookup("a", 12 * NS) == 3  # its older entry left, not the id
    assert table.lookup("a", 15 * NS) is None and len(table) == 0


def test_expired_entries_are_cut_in_bulk_and_the_rest_stays() -> None:
    table = DedupTable(NS)
    n = 5000
    for i in range(n):
        table.record(f"id-{i}", i + 1, i)
    table.prune(NS + n // 2)  # ts <= n // 2 expire
    assert len(table) == n - n // 2 - 1
    assert len(table._ids) == len(table) and table._head == 0  # cut, not only skipped
    assert table.lookup("id-2500", NS + n // 2) is None
    assert table.lookup("id-2501", NS + n // 2) == 2502
    assert table.lookup(f"id-{n - 1}", NS + n // 2) == n


def test_snapshot_round_trip_keeps_only_what_is_still_in_the_window() -> None:
    table = DedupTable(10 * NS)
    for i in range(100):
        table.record(f"m{i}", i + 1, i * NS)
    body = table.to_json()
    again = DedupTable(10 * NS)
    again.load_json(body, 100 * NS)
    assert len(again) == 9  # ts 91..99 s are younger than 100 s - 10 s
    assert again.lookup("m91", 100 * NS) == 92 and again.lookup("m90", 100 * NS) is None
    with pytest.raises(ValueError):
        DedupTable(NS).load_json({**body, "seqs": body["seqs"][:8]}, 0)
    # into a table that holds ids already, or times out of order: entry by entry
    mixed = DedupTable(10 * NS)
    mixed.record("m95", 500, 99 * NS)
    mixed.load_json(body, 100 * NS)
    assert len(mixed) == 9 and mixed.lookup("m95", 100 * NS) == 96  # the later record wins
    shuffled = DedupTable(10 * NS)
    shuffled.record("late", 1, 95 * NS)
    shuffled.record("early", 2, 80 * NS)
    again = DedupTable(10 * NS)
    again.load_json(shuffled.to_json(), 100 * NS)
    assert again.lookup("late", 100 * NS) == 1 and again.lookup("early", 100 * NS) is None


def _stream() -> tuple[Stream, FakeClock]:
    clock = FakeClock()
    config = StreamConfig.from_json({"name": "S", "subjects": ["s.>"], "storage": "memory"})
    return Stream(config, MemoryStore(), clock), clock


def _retained_bytes(header_name: str, n: int) -> int:
    """Memory a stream keeps after `n` publishes, each with one header of that name."""
    stream, clock = _stream()
    headers = [encode_headers({header_name: f"{i:016x}-0-{i}"}) for i in range(n)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for hdr in headers:
            clock.advance(0.000001)
            assert stream.accept("s.a", hdr, b"").error is None
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_a_dedup_entry_costs_little() -> None:
    """1M sink messages in two minutes hold 1M entries. Against the same publishes
    with a header the stream ignores (same length), what the table keeps per
    entry: the id string (about 70 bytes here), a dict and a list slot, two
    int64 cells and the sequence int; an ordered dict of (seq, ts) tuples kept
    about 100 bytes more."""
    n = 5_000
    per_entry = (_retained_bytes("Nats-Msg-Id", n) - _retained_bytes("X-Nats-Mxx", n)) / n
    assert per_entry < 150, per_entry


HEADER_BLOCKS = [
    b"NATS/1.0\r\nNats-Msg-Id: abc\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id:abc\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id:   spaced out  \r\n\r\n",
    b"NATS/1.0\r\nX-Other: 1\r\nNats-Msg-Id: caf\xc3\xa9\r\nY: 2\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id: \r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id: no-final-crlf",
    b"NATS/1.0\r\nNats-Msg-Id: bad\xff\r\n\r\n",
    # the shortcut declines these (another JetStream header, other spelling, a status)
    b"NATS/1.0\r\nnats-msg-id: lower\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id: a\r\nNats-Expected-Stream: OTHER\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id: a\r\nnats-expected-stream: OTHER\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id: nats-in-value\r\n\r\n",
    b"NATS/1.0 100\r\nNats-Msg-Id: status\r\n\r\n",
    b"NATS/1.0\r\n Nats-Msg-Id : padded-name\r\n\r\n",
    # the sink's shape (one line, nothing after it) in its corners
    b"NATS/1.0\r\nNats-Msg-Id:\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id: lone\rcr\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id: lone\nlf\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id: Nats-Expected-Stream: OTHER\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id: extra-crlf\r\n\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id: a\r\n\r\nNats-Expected-Stream: OTHER\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id: \t tabbed \t\r\n\r\n",
]


def _shortcut_agrees(block: bytes) -> tuple[Stream, _HeaderPlan | PubAck]:
    """A fresh stream and the full parse of `block`, once the shortcut (when it takes the
    block) is checked to answer the same."""
    stream, clock = _stream()
    now = clock.now_ns()
    full = stream._plan_headers(block, "s.a", now)
    quick = stream._msg_id_only(block, now)
    if quick is not None:
        assert isinstance(quick, str)  # a fresh stream has no duplicate to answer
        assert _HeaderPlan(quick, "", 0) == full
    return stream, full


@pytest.mark.parametrize("block", HEADER_BLOCKS)
def test_msg_id_only_shortcut_answers_as_the_full_parse(block: bytes) -> None:
    stream, full = _shortcut_agrees(block)
    # and end to end: the first publish stores, the second is (or is not) a duplicate
    first = stream.accept("s.a", block, b"x")
    second = stream.accept("s.a", block, b"x")
    # (the publish path looks at headers only when "Nats-" is spelled so, as
    # nats-server, which looks its headers up case-sensitively)
    msg_id = full.msg_id if isinstance(full, _HeaderPlan) and b"Nats-" in block else ""
    if isinstance(full, PubAck):  # refused (Nats-Expected-Stream of another stream)
        assert first.error is not None and second.error is not None
        return
    assert first.error is None
    assert second.duplicate == bool(msg_id)
    assert second.seq == (first.seq if msg_id else first.seq + 1)


@given(st.binary(max_size=40), st.sampled_from([b"", b"\r\n", b"X: 1\r\n", b"Nats-TTL: 5\r\n"]))
def test_msg_id_only_answers_as_the_full_parse_for_any_value(value: bytes, more: bytes) -> None:
    """The sink's one-line block takes the id without the general checks: any value,
    with or without lines after it, gets the full parse's answer."""
    _shortcut_agrees(b"NATS/1.0\r\nNats-Msg-Id:" + value + b"\r\n" + more + b"\r\n")


def test_an_idle_stream_forgets_its_ids_when_the_window_passes() -> None:
    """nats-server prunes on a timer too: a stream nobody publishes to any more
    does not hold a sink's million ids for good."""
    clock = FakeClock()
    config = StreamConfig.from_json(
        {"name": "S", "subjects": ["s.>"], "storage": "memory", "duplicate_window": 2 * NS}
    )
    stream = Stream(config, MemoryStore(), clock)
    for i in range(3):
        clock.advance(0.5)
        assert stream.accept("s.a", encode_headers({"Nats-Msg-Id": f"m{i}"}), b"x").error is None
    clock.advance(1.2)  # the first id (at 0.5 s) is past its window, the others are not
    assert len(stream._dedup) == 2
    clock.advance(1.0)
    assert len(stream._dedup) == 0
    assert stream.accept("s.a", encode_headers({"Nats-Msg-Id": "m0"}), b"x").seq == 4
