"""The consumer cursor (consumer/cursor.py): start policies, filters, delivered
sequences and num_pending, on a real Stream over a MemoryStore."""

from __future__ import annotations

from typing import Any

import pytest

from jetstream_server.core.clock import FakeClock
from jetstream_server.jetstream.consumer.config import ConsumerConfig
from jetstream_server.jetstream.consumer.cursor import Cursor, make_matcher
from jetstream_server.jetstream.stream import Stream
from jetstream_server.jetstream.stream_config import StreamConfig
from jetstream_server.store.memory import MemoryStore

NS = 1_000_000_000


def make_stream(subjects: tuple[str, ...] = ("s.>",)) -> tuple[Stream, FakeClock]:
    clock = FakeClock()
    config = StreamConfig.from_json({"name": "S", "subjects": list(subjects), "storage": "memory"})
    return Stream(config, MemoryStore(), clock), clock


def publish(stream: Stream, *subjects: str) -> list[int]:
    seqs = []
    for subject in subjects:
        ack = stream.accept(subject, None, b"x")
        assert ack.msg is not None
        seqs.append(ack.seq)
    return seqs


def started(stream: Stream, **raw: Any) -> Cursor:
    config = ConsumerConfig.from_json({"durable_name": "C", **raw}).with_defaults()
    cursor = Cursor(stream, config.filters)
    cursor.start(config)
    return cursor


def drain(cursor: Cursor) -> list[int]:
    """Deliver everything for the first time: the stream sequences, in order."""
    out = []
    while (msg := cursor.next_new()) is not None:
        cursor.commit(msg.seq, 1)
        out.append(msg.seq)
    return out


@pytest.mark.parametrize(
    ("raw", "sseq", "npc"),
    [
        ({"deliver_policy": "all"}, 1, 6),
        ({"deliver_policy": "new"}, 7, 0),
        ({"deliver_policy": "last"}, 6, 1),
        ({"deliver_policy": "last", "filter_subjects": ["s.a", "s.b"]}, 5, 1),
        ({"deliver_policy": "by_start_sequence", "opt_start_seq": 4}, 4, 3),
        ({"deliver_policy": "last_per_subject", "filter_subject": "s.*"}, 3, 3),
    ],
)
def test_start_policies(raw: dict[str, Any], sseq: int, npc: int) -> None:
    stream, _ = make_stream()
    publish(stream, "s.a", "s.b", "s.a", "s.c", "s.b", "s.x.y")
    cursor = started(stream, **raw)
    assert (cursor.sseq, cursor.npc, cursor.dseq, cursor.last_sseq) == (sseq, npc, 0, sseq - 1)


def test_by_start_time_and_start_below_first() -> None:
    stream, clock = make_stream()
    publish(stream, "s.a", "s.a")
    clock.advance(10)
    publish(stream, "s.a", "s.a")
    start = clock.now_ns() - 5 * NS
    cursor = started(stream, deliver_policy="by_start_time", opt_start_time="1970-01-01T00:00:00Z")
    assert cursor.sseq == 1
    config = ConsumerConfig(deliver_policy="by_start_time", opt_start_time_ns=start)
    cursor.start(config)
    assert cursor.sseq == 3 and cursor.npc == 2
    stream.purge(None, 3, None)  # first is now 3
    cursor = started(stream, deliver_policy="by_start_sequence", opt_start_seq=1)
    assert cursor.sseq == 3
    assert cursor.start_seq_for_policy(ConsumerConfig(deliver_policy="all")) == 1


def test_last_per_subject_delivers_each_subject_once_then_new() -> None:
    stream, _ = make_stream()
    publish(stream, "s.a", "s.b", "s.a", "s.c", "s.b")
    cursor = started(stream, deliver_policy="last_per_subject", filter_subject="s.>")
    assert list(cursor.lps) == [3, 4, 5] and cursor.npc == 3
    assert drain(cursor) == [3, 4, 5]
    assert not cursor.lps and cursor.npc == 0 and cursor.sseq == 6
    publish(stream, "s.d")
    cursor.npc += 1  # what the consumer does for a stored match
    assert drain(cursor) == [6]


def test_filters_and_the_store_shortcut() -> None:
    stream, _ = make_stream(("s.>",))
    publish(stream, "s.a", "s.b", "s.a")
    everything = started(stream, filter_subject="s.>")
    assert everything.store_filters is None and everything.match is None
    only_a = started(stream, filter_subject="s.a")
    assert only_a.store_filters == ("s.a",) and only_a.npc == 2
    assert drain(only_a) == [1, 3]
    # nothing more matches: the cursor moves past the stream's end
    assert only_a.sseq == 4 and only_a.npc == 0
    only_a.set_filters(("s.b",))
    assert only_a.npc == 0 and only_a.match is not None and only_a.match("s.b")


def test_refresh_filters_follows_the_stream_subjects() -> None:
    stream, _ = make_stream(("s.a",))
    cursor = started(stream, filter_subject="s.a")
    assert cursor.store_filters is None  # covers the whole stream
    stream.update_config(StreamConfig.from_json(
        {"name": "S", "subjects": ["s.a", "s.b"], "storage": "memory"}))
    assert cursor.stream_config is not stream.config
    cursor.refresh_filters()
    assert cursor.store_filters == ("s.a",) and cursor.stream_config is stream.config


def test_make_matcher() -> None:
    assert make_matcher(()) is None and make_matcher(("a", ">")) is None
    literal = make_matcher(("a.b",))
    assert literal is not None and literal("a.b") and not literal("a.c")
    mixed = make_matcher(("a.*.c", "x.>", "lit"))
    assert mixed is not None
    assert [mixed(s) for s in ("a.b.c", "a.b", "x.y.z", "x", "lit", "a.b.c.d")] == [
        True, False, True, False, True, False,
    ]


def test_hint_saves_the_store_read_only_when_it_is_next() -> None:
    stream, _ = make_stream()
    publish(stream, "s.a")
    cursor = started(stream)
    [msg] = [stream.store.load(1)]
    assert msg is not None
    assert cursor.next_new(msg) is msg
    cursor.commit(1, 1)
    assert cursor.next_new(msg) is None  # not the next one any more: the store decides


def test_commit_counts_consumer_sequences_for_redeliveries_too() -> None:
    stream, _ = make_stream()
    publish(stream, "s.a", "s.a")
    cursor = started(stream)
    assert cursor.commit(1, 1) == 1
    assert cursor.commit(1, 2) == 2  # a redelivery: no cursor move
    assert (cursor.sseq, cursor.last_sseq, cursor.npc) == (2, 1, 1)


def test_purge_reset_restore() -> None:
    stream, _ = make_stream()
    publish(stream, *["s.a"] * 6)
    cursor = started(stream)
    drain(cursor)
    cursor.reset(3)
    assert (cursor.dseq, cursor.sseq, cursor.last_sseq, cursor.npc) == (0, 3, 2, 4)
    stream.store.purge(up_to_seq=5)
    cursor.on_purged(5)
    assert (cursor.sseq, cursor.last_sseq, cursor.npc) == (5, 4, 2)
    cursor.restore(delivered_consumer_seq=9, delivered_stream_seq=1)
    assert (cursor.dseq, cursor.sseq, cursor.last_sseq, cursor.npc) == (9, 5, 1, 2)


def test_recount_after_silent_removals() -> None:
    stream, _ = make_stream()
    publish(stream, *["s.a"] * 4)
    cursor = started(stream)
    stream.delete_message(2, erase=False)
    assert cursor.npc == 4
    cursor.recount()
    assert cursor.npc == 3
