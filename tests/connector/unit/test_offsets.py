"""Offsets (read/offsets.py): the offset value and the read-limit arithmetic (no server)."""

from __future__ import annotations

import pytest

from spark_jetstream.read.offsets import Offset, OffsetError, cap_end


def off(seq: int) -> dict:
    return {"stream": "S", "seq": seq}


def test_offset_round_trip_and_errors() -> None:
    assert Offset.from_dict('{"stream": "S", "seq": 7}').to_dict() == off(7)
    assert Offset.from_dict(off(3), "S") == Offset("S", 3)
    with pytest.raises(OffsetError, match="checkpoint holds an offset of stream 'S' but option stream is 'T'"):
        Offset.from_dict(off(3), "T")
    with pytest.raises(OffsetError, match="not a jetstream offset"):
        Offset.from_dict({"partition": 1})
    with pytest.raises(OffsetError, match=">= 0"):
        Offset.from_dict(off(-1))


def test_cap_end() -> None:
    assert cap_end(10, 100, max_messages=None, max_bytes=None, avg_msg_bytes=50) == 100
    assert cap_end(10, 100, max_messages=5, max_bytes=None, avg_msg_bytes=50) == 15
    assert cap_end(10, 100, max_messages=None, max_bytes=500, avg_msg_bytes=50) == 20
    assert cap_end(10, 100, max_messages=5, max_bytes=100, avg_msg_bytes=50) == 12
    assert cap_end(10, 100, max_messages=None, max_bytes=1, avg_msg_bytes=50) == 11  # always progress
    assert cap_end(10, 5, max_messages=3, max_bytes=None, avg_msg_bytes=50) == 10  # never backwards
