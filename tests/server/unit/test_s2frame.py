"""The S2/Snappy frame codec (store/s2frame.py): nats-server's snapshot compression.

Hand-made S2 blocks (with S2's repeat copy, which plain Snappy lacks) decode to what the
format says, whole and fed one byte at a time, with and without cramjam's fast path;
the encoder's output decodes back; every malformed input raises S2Error naming it.
"""

from __future__ import annotations

import random
import struct

import pytest

from jetstream_server.store import s2frame
from jetstream_server.store.s2frame import (
    S2_MAGIC,
    FrameDecoder,
    FrameEncoder,
    S2Error,
    crc32c,
    decode_block,
    masked_crc,
)

# literal "abcd", copy(offset 4, len 8), literal "XYZ", repeat(last offset 4, len 8)
REPEAT_BLOCK = bytes([23, 0x0C]) + b"abcd" + bytes([0x11, 0x04, 0x08]) + b"XYZ" + bytes([0x11, 0])
REPEAT_TEXT = b"abcdabcdabcdXYZdXYZdXYZ"


@pytest.fixture(params=["fast", "pure"])
def paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "pure":
        monkeypatch.setattr(s2frame, "_cramjam", None)
        monkeypatch.setattr(s2frame, "_crc32c_fast", None)
    return str(request.param)


def _chunk(ctype: int, body: bytes) -> bytes:
    return bytes([ctype]) + len(body).to_bytes(3, "little") + body


def _s2_stream(*blocks: tuple[bytes, bytes]) -> bytes:
    out = S2_MAGIC
    for compressed, plain in blocks:
        out += _chunk(0x00, struct.pack("<I", masked_crc(plain)) + compressed)
    return out


def test_crc32c_known_vector(paths: str) -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


def test_repeat_copy(paths: str) -> None:
    assert decode_block(REPEAT_BLOCK) == REPEAT_TEXT


def test_stream_whole_and_byte_by_byte(paths: str) -> None:
    data = _s2_stream((REPEAT_BLOCK, REPEAT_TEXT), (REPEAT_BLOCK, REPEAT_TEXT))
    assert b"".join(FrameDecoder().feed(data)) == REPEAT_TEXT * 2
    dec = FrameDecoder()
    out = b"".join(b"".join(dec.feed(data[i:i + 1])) for i in range(len(data)))
    assert out == REPEAT_TEXT * 2 and dec.pending == 0


def test_encoder_round_trip(paths: str) -> None:
    rng = random.Random(7)
    print("seed 7")
    plain = b"".join(rng.choice([b"subject.a ", b"payload ", rng.randbytes(5)])
                     for _ in range(40_000))
    enc = FrameEncoder()
    data = enc.encode(plain[:100_000]) + enc.encode(plain[100_000:])
    assert data.startswith(b"\xff\x06\x00\x00sNaPpY")
    assert b"".join(FrameDecoder().feed(data)) == plain


BAD = {
    "no identifier": (_chunk(0x01, b"\0\0\0\0x"), "does not start with the stream identifier"),
    "unknown identifier": (_chunk(0xFF, b"NoPe!!"), "unknown stream identifier"),
    "checksum": (S2_MAGIC + _chunk(0x01, b"\0\0\0\0data"), "checksum mismatch"),
    "reserved chunk": (S2_MAGIC + _chunk(0x05, b""), "unsupported chunk type 0x05"),
    "short chunk": (S2_MAGIC + _chunk(0x00, b"\0\0"), "shorter than its checksum"),
    "repeat first": (_s2_stream((bytes([8, 0x11, 0]), b"")), "copy out of range"),
    "copy too far": (_s2_stream((bytes([8, 0x00, 0x61, 0x11, 0x09]), b"")), "copy out of range"),
    "too long": (_s2_stream((b"\xff\xff\xff\x7f", b"")), "exceed the"),
    "literal past end": (_s2_stream((bytes([9, 0x20]) + b"ab", b"")), "literal runs past"),
    "bad varint": (_s2_stream((b"\xff" * 11, b"")), "bad length varint"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_malformed(paths: str, case: str) -> None:
    data, message = BAD[case]
    with pytest.raises(S2Error, match=message):
        FrameDecoder().feed(data)


def test_padding_and_skippable_chunks_are_ignored() -> None:
    data = S2_MAGIC + _chunk(0xFE, b"\0" * 9) + _chunk(0x80, b"skip") + \
        _chunk(0x01, struct.pack("<I", masked_crc(b"raw")) + b"raw")
    assert FrameDecoder().feed(data) == [b"raw"]
