"""Partitions that carry their messages (read/carried.py): splitting and the rows (no server)."""

from __future__ import annotations

import pickle

from spark_jetstream.read.carried import PARTITION_BYTES, carry, read_carried
from spark_jetstream.read.consumer_pull import Delivered


def msgs(seqs: list[int], size: int = 10) -> list[Delivered]:
    return [Delivered(s, 1, b"a.b", b"NATS/1.0\r\nK: v\r\n\r\n" if s % 2 else b"", b"x" * size, s * 1000, b"r")
            for s in seqs]


def test_partitions_cover_the_range_and_split_by_count_and_bytes() -> None:
    got = msgs([3, 4, 7, 9, 12])
    one = carry("S", 2, 15, got, with_headers=True, min_partitions=None, max_per_partition=100)
    assert [(p.start, p.end, len(p.chunk)) for p in one] == [(2, 15, 5)]
    two = carry("S", 2, 15, got, with_headers=True, min_partitions=None, max_per_partition=3, first_index=4)
    assert [(p.index, p.start, p.end, p.chunk.seqs) for p in two] == [(4, 2, 7, [3, 4, 7]), (5, 7, 15, [9, 12])]
    assert carry("S", 2, 15, got, with_headers=True, min_partitions=None, max_per_partition=3) == carry(
        "S", 2, 15, got, with_headers=True, min_partitions=None, max_per_partition=3)  # a replay: the same split
    big = carry("S", 0, 8, msgs(list(range(1, 9)), PARTITION_BYTES // 3), with_headers=False,
                min_partitions=None, max_per_partition=100)
    assert len(big) == 3 and all(p.chunk.headers is None for p in big)
    assert carry("S", 0, 0, [], with_headers=True, min_partitions=4, max_per_partition=1) == []


def test_a_carried_partition_pickles_and_reads_as_rows() -> None:
    (part,) = carry("S", 0, 2, msgs([1, 2]), with_headers=True, min_partitions=None, max_per_partition=10)
    (batch,) = read_carried(pickle.loads(pickle.dumps(part)), include_headers=True)
    rows = batch.to_pylist()
    assert [(r["stream"], r["seq"], r["subject"], r["data"]) for r in rows] == [
        ("S", 1, "a.b", b"x" * 10), ("S", 2, "a.b", b"x" * 10)]
    assert rows[0]["headers"] and not rows[1]["headers"]
