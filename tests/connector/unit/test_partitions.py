"""Splitting (start, end] into sequence-range partitions (pure; no Spark session needed)."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_jetstream.read.partitions import (
    AUTO_MIN_MESSAGES,
    SeqRangePartition,
    partition_count,
    plan_partitions,
    split_range,
)


def test_examples() -> None:
    assert split_range(0, 0) == []
    assert split_range(5, 3) == []
    assert split_range(0, 10) == [(0, 10)]
    assert split_range(0, 10, min_partitions=3) == [(0, 4), (4, 7), (7, 10)]
    assert split_range(100, 110, max_per_partition=4) == [(100, 104), (104, 107), (107, 110)]
    assert split_range(0, 2, min_partitions=5) == [(0, 1), (1, 2)]  # never an empty partition


@settings(deadline=None, max_examples=200)
@given(
    start=st.integers(0, 10**12),
    size=st.integers(0, 5000),
    min_partitions=st.integers(1, 64),
    max_per=st.integers(1, 10**4),
)
def test_ranges_cover_exactly(start: int, size: int, min_partitions: int, max_per: int) -> None:
    ranges = split_range(start, start + size, min_partitions=min_partitions, max_per_partition=max_per)
    if size == 0:
        assert ranges == []
        return
    assert ranges[0][0] == start and ranges[-1][1] == start + size
    for (_, hi), (lo, _) in zip(ranges, ranges[1:], strict=False):
        assert hi == lo  # contiguous, no overlap, no gap
    lengths = [hi - lo for lo, hi in ranges]
    assert min(lengths) >= 1 and max(lengths) <= max_per
    assert max(lengths) - min(lengths) <= 1
    assert len(ranges) >= min(min_partitions, size)


def test_plan_partitions_are_picklable_data() -> None:
    parts = plan_partitions("S", 10, 20, subjects=("a.>",), min_partitions=2, avg_msg_bytes=99)
    assert parts == [
        SeqRangePartition(0, "S", 10, 15, ("a.>",), 99),
        SeqRangePartition(1, "S", 15, 20, ("a.>",), 99),
    ]
    assert pickle.loads(pickle.dumps(parts)) == parts
    with pytest.raises(ValueError, match="before its start"):
        SeqRangePartition(0, "S", 5, 4)


def test_without_min_partitions_a_range_splits_in_big_enough_parts() -> None:
    big = AUTO_MIN_MESSAGES
    assert split_range(0, big - 1, min_partitions=None) == [(0, big - 1)]  # a small batch: one task
    assert split_range(0, 2 * big, min_partitions=None) == [(0, big), (big, 2 * big)]
    assert split_range(0, 2 * big + 1, min_partitions=None) == [(0, big + 1), (big + 1, 2 * big + 1)]
    assert len(split_range(0, 10 * big, min_partitions=None, max_per_partition=10**9)) == 10
    # a given minPartitions is what it says
    assert split_range(0, 10, min_partitions=3) == [(0, 4), (4, 7), (7, 10)]
    # maxMessagesPerPartition still bounds every partition
    assert len(split_range(0, 3 * big, min_partitions=None, max_per_partition=big // 2)) == 6
    with pytest.raises(ValueError, match="min_partitions"):
        split_range(0, 10, min_partitions=0)


@settings(deadline=None, max_examples=200)
@given(
    start=st.integers(0, 10**12),
    size=st.integers(0, 10**7),
    min_partitions=st.one_of(st.none(), st.integers(1, 64)),
    max_per=st.integers(10**4, 10**7),
)
def test_the_plan_depends_only_on_the_range_and_the_settings(
    start: int, size: int, min_partitions: int | None, max_per: int
) -> None:
    """Replays: the same offsets and options always give the same partitions."""
    kwargs = {"min_partitions": min_partitions, "max_per_partition": max_per}
    plans = [plan_partitions("S", start, start + size, **kwargs) for _ in range(3)]  # type: ignore[arg-type]
    assert plans[0] == plans[1] == plans[2]
    count = partition_count(size, min_partitions=min_partitions, max_per_partition=max_per)
    assert len(plans[0]) == (count if size else 0)
    if size and min_partitions is None:
        sizes = [p.size for p in plans[0]]
        assert len(sizes) == 1 or min(sizes) >= min(AUTO_MIN_MESSAGES, max_per) or len(sizes) == -(-size // max_per)
