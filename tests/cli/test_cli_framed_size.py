"""`jetstream_cli.framed_size`: the uncompressed size of S2/Snappy framed data, read from
each chunk's head whatever the pieces it arrives in, against the server's own framing
encoder and decoder; malformed input never raises."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetstream_cli.framed_size import FramedSize
from jetstream_server.store.s2frame import FrameDecoder, FrameEncoder, available


def _framed(data: bytes) -> bytes:
    return FrameEncoder().encode(data)


def _count(framed: bytes, step: int) -> int:
    size = FramedSize()
    for i in range(0, len(framed), step):
        size.feed(framed[i:i + step])
    return size.uncompressed


@pytest.mark.parametrize("step", [1, 3, 4, 7, 13, 4096, 1 << 30])
def test_compressible_and_random_data_in_pieces_of_any_size(step: int) -> None:
    rng = random.Random(23)
    data = b"order 1234 " * 20_000 + rng.randbytes(100_000) + b"x" * 70_000
    framed = _framed(data)
    assert sum(len(b) for b in FrameDecoder().feed(framed)) == len(data)
    assert _count(framed, step) == len(data)


def test_compressed_blocks_are_counted_without_decompressing() -> None:
    if not available()["cramjam"]:
        pytest.skip("the server's snapshot extra (cramjam) writes compressed blocks")
    framed = _framed(b"a" * 200_000)
    assert len(framed) < 20_000  # compressed chunks (type 0x00), not raw ones
    assert _count(framed, 5) == 200_000


def test_chunks_without_data_count_nothing() -> None:
    raw = bytes((0x01, 9, 0, 0)) + b"CRC!" + b"hello"
    padding = bytes((0xFE, 3, 0, 0)) + b"\0\0\0"
    skippable = bytes((0x80, 2, 0, 0)) + b"zz"
    size = FramedSize()
    size.feed(b"\xff\x06\x00\x00S2sTwO" + padding + raw + skippable + raw)
    assert size.uncompressed == 10


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.integers(min_value=1, max_value=50))
def test_malformed_input_never_raises(data: bytes, step: int) -> None:
    size = FramedSize()
    for i in range(0, len(data), step):
        size.feed(data[i:i + step])
    assert size.uncompressed >= 0


def test_random_bytes_after_a_valid_stream_keep_the_valid_count() -> None:
    framed = _framed(b"abc" * 1000)
    size = FramedSize()
    size.feed(framed)
    assert size.uncompressed == 3000
    size.feed(os.urandom(64))  # counted as whatever it claims, never an error
    assert size.uncompressed >= 3000
