"""Offsets (read/offsets.py): the offset value and the read-limit arithmetic (no server)."""

from __future__ import annotations

import pytest

from spark_jetstream.read.offsets import Offset, OffsetError, cap_end, split_budget


def test_offset_round_trip_and_errors() -> None:
    two = Offset.of({"B": 4, "A": 7}, owner="q1")
    assert two.to_dict() == {"streams": {"A": 7, "B": 4}, "owner": "q1"}
    assert Offset.from_dict(two.json()) == two
    assert Offset.from_dict({"streams": {"S": 3}}, ["S"]) == Offset.of({"S": 3})
    assert Offset().to_dict() == {"streams": {}}  # the initial offset: no start resolved yet
    with pytest.raises(OffsetError, match="checkpoint holds an offset of stream 'S' but option stream is 'T'"):
        Offset.from_dict({"streams": {"S": 3}}, ["T"])
    with pytest.raises(OffsetError, match="not a jetstream offset"):
        Offset.from_dict({"partition": 1})
    with pytest.raises(OffsetError, match="not a jetstream offset"):
        Offset.from_dict({"streams": [1, 2]})
    with pytest.raises(OffsetError, match=">= 0"):
        Offset.from_dict({"streams": {"S": -1}})


def test_single_stream_offsets_of_old_checkpoints_are_read() -> None:
    """Checkpoints written before several streams were supported hold {"stream", "seq"}."""
    old = '{"stream": "S", "seq": 7}'
    assert Offset.from_dict(old, ["S"]) == Offset.of({"S": 7})
    assert Offset.from_dict(old, ["S", "T"]).get("T") is None  # T joins later: its start is resolved
    with pytest.raises(OffsetError, match="stream 'S' but option stream is 'T'"):
        Offset.from_dict(old, ["T"])
    with pytest.raises(OffsetError, match=">= 0"):
        Offset.from_dict({"stream": "S", "seq": -1})


def test_cap_end() -> None:
    assert cap_end(10, 100, max_messages=None, max_bytes=None, avg_msg_bytes=50) == 100
    assert cap_end(10, 100, max_messages=5, max_bytes=None, avg_msg_bytes=50) == 15
    assert cap_end(10, 100, max_messages=None, max_bytes=500, avg_msg_bytes=50) == 20
    assert cap_end(10, 100, max_messages=5, max_bytes=100, avg_msg_bytes=50) == 12
    assert cap_end(10, 100, max_messages=None, max_bytes=1, avg_msg_bytes=50) == 11  # always progress
    assert cap_end(10, 5, max_messages=3, max_bytes=None, avg_msg_bytes=50) == 10  # never backwards


def test_split_budget() -> None:
    assert split_budget(10, {"A": 3, "B": 4}) == {"A": 3, "B": 4}  # fits: everything
    assert split_budget(10, {"A": 30, "B": 10}) == {"A": 8, "B": 2}  # proportional
    assert split_budget(1, {"A": 5, "B": 50}) == {"A": 0, "B": 1}  # progress on the largest
    shares = split_budget(7, {"A": 3, "B": 3, "C": 3})
    assert sum(shares.values()) == 7 and max(shares.values()) - min(shares.values()) <= 1
    assert split_budget(5, {"A": 0, "B": 9}) == {"A": 0, "B": 5}


def test_offsets_of_a_consumer_read_keep_the_batch_count_and_the_filter() -> None:
    """Option consumer: `counts` and `filter` (`[]`: no filter) round-trip; absent otherwise."""
    off = Offset.of({"S": 40}, counts={"S": 12}, filters=["b.>", "a.1"])
    assert off.to_dict() == {"streams": {"S": 40}, "counts": {"S": 12}, "filter": ["a.1", "b.>"]}
    assert Offset.from_dict(off.json(), ["S"]) == off
    assert off.count_of("S") == 12 and off.count_of("T") is None
    unfiltered = Offset.of({"S": 1}, filters=())
    assert unfiltered.to_dict()["filter"] == [] and Offset.from_dict(unfiltered.json()).filters == ()
    assert Offset.from_dict({"streams": {"S": 1}}).filters is None  # not a consumer read
    with pytest.raises(OffsetError, match="not a jetstream offset"):
        Offset.from_dict({"streams": {"S": 1}, "filter": "a.>"})
    with pytest.raises(OffsetError, match=">= 0"):
        Offset.from_dict({"streams": {"S": 1}, "counts": {"S": -2}})
