"""The file store's record codec: layout, round trips, and damage detection."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetstream_server.store import codec


def test_msg_record_layout_byte_by_byte() -> None:
    rec = codec.encode_msg(7, -5, b"a.b", b"NATS/1.0\r\n\r\n", b"xyz")
    assert len(rec) == 35 + 3 + 12 + 3
    assert struct.unpack_from("<I", rec, 0)[0] == len(rec)
    assert rec[4] == codec.KIND_MSG
    assert struct.unpack_from("<Q", rec, 5)[0] == 7
    assert struct.unpack_from("<q", rec, 13)[0] == -5
    assert struct.unpack_from("<HII", rec, 21) == (3, 12, 3)
    assert rec[31:34] == b"a.b"
    assert rec[34:46] == b"NATS/1.0\r\n\r\n"
    assert rec[46:49] == b"xyz"
    assert struct.unpack_from("<I", rec, 49)[0] == zlib.crc32(rec[:49])
    # the index derives the accounted size (nats-server's fileStoreMsgSize:
    # 22 + S + 4 + H + D + 8 with headers, 22 + S + D + 8 without) from the record
    assert codec.record_msg_size(len(rec), 12) == 22 + 3 + 4 + 12 + 3 + 8
    plain = codec.encode_msg(7, -5, b"a.b", None, b"xyz")
    assert codec.record_msg_size(len(plain), 0) == 22 + 3 + 3 + 8


def test_round_trips() -> None:
    rec = codec.decode_record(codec.encode_msg(1, 2, b"s", None, b"data"))
    assert (rec.kind, rec.seq, rec.ts, rec.subject, rec.headers, rec.data) == (
        codec.KIND_MSG,
        1,
        2,
        b"s",
        b"",
        b"data",
    )
    tomb = codec.decode_record(codec.encode_delete(9, 77))
    assert (tomb.kind, tomb.seq, tomb.ts) == (codec.KIND_DELETE, 9, 77)
    floor = codec.decode_record(codec.encode_floor(100, 55))
    assert (floor.kind, floor.seq, floor.ts) == (codec.KIND_FLOOR, 100, 55)


def test_erased_record_has_same_length_and_no_payload() -> None:
    original = codec.encode_msg(3, 4, b"subj", b"HDR", b"secret")
    erased = codec.encode_erased(3, 4, b"subj", 3, 6)
    assert len(erased) == len(original)
    assert b"secret" not in erased
    rec = codec.decode_record(erased)
    assert rec.kind == codec.KIND_ERASED and rec.data == bytes(6)


def test_block_header() -> None:
    raw = codec.encode_block_header(42, 7)
    assert len(raw) == codec.BLOCK_HEADER_SIZE == 32
    assert raw[:8] == codec.BLOCK_MAGIC
    assert struct.unpack_from("<QQI", raw, 8) == (42, 7, zlib.crc32(raw[:24]))
    assert raw[28:] == bytes(4)
    assert codec.decode_block_header(raw) == (42, 7)
    with pytest.raises(codec.CorruptRecord, match="magic"):
        codec.decode_block_header(b"X" * 32)
    with pytest.raises(codec.CorruptRecord, match="32"):
        codec.decode_block_header(raw[:10])
    for i in range(8, 28):  # a damaged first_seq/stamp never passes
        bad = bytearray(raw)
        bad[i] ^= 0x10
        with pytest.raises(codec.CorruptRecord, match="checksum"):
            codec.decode_block_header(bytes(bad))


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda r: r[:20], "short record header"),
        (lambda r: r[:-1], "cut short"),
        (lambda r: r[:40] + bytes([r[40] ^ 1]) + r[41:], "checksum"),
        (lambda r: r[:-1] + bytes([r[-1] ^ 0x80]), "checksum"),
        (lambda r: r[:4] + b"\x09" + r[5:], "unknown record kind"),
        (lambda r: struct.pack("<I", len(r) + 1) + r[4:], "disagrees"),
    ],
)
def test_damage_is_reported(mutate, reason: str) -> None:  # type: ignore[no-untyped-def]
    rec = codec.encode_msg(1, 2, b"subject", None, b"payload-bytes")
    bad = mutate(rec)
    result = codec.scan_record(bad, 0, len(bad))
    assert isinstance(result, str) and reason in result
    with pytest.raises(codec.CorruptRecord):
        codec.decode_record(bad)


def test_count_framed() -> None:
    recs = [codec.encode_msg(i, i, b"s", None, b"x" * i) for i in range(1, 6)]
    buf = b"".join(recs)
    assert codec.count_framed(buf, 0, len(buf)) == 5
    assert codec.count_framed(buf, len(recs[0]), len(buf)) == 4
    assert codec.count_framed(buf[:-3], 0, len(buf) - 3) == 5  # last one partial
    assert codec.count_framed(b"junk", 0, 4) == 1
    assert codec.count_framed(b"", 0, 0) == 0


@given(st.binary(max_size=200), st.integers(0, 10))
def test_scan_never_raises_on_garbage(buf: bytes, pos: int) -> None:
    result = codec.scan_record(buf, min(pos, len(buf)), len(buf))
    assert isinstance(result, (str, tuple))


@given(
    st.binary(min_size=1, max_size=30),
    st.binary(max_size=50),
    st.integers(min_value=0),
    st.integers(min_value=0, max_value=1000),
)
def test_any_single_byte_flip_is_detected(subject: bytes, data: bytes, flip: int, seq: int) -> None:
    rec = bytearray(codec.encode_msg(seq, 1, subject, None, data))
    i = flip % len(rec)
    rec[i] ^= 0xFF
    assert isinstance(codec.scan_record(bytes(rec), 0, len(rec)), str)


@given(
    st.binary(min_size=1, max_size=30),
    st.one_of(st.none(), st.binary(max_size=40)),
    st.binary(max_size=300),
    st.integers(min_value=0),
)
def test_a_whole_record_crcs_to_the_residue_and_a_flip_does_not(
    subject: bytes, headers: bytes | None, data: bytes, flip: int
) -> None:
    """The run read checks a record with one crc32 over it, checksum included."""
    rec = codec.encode_msg(7, 1, subject, headers, data)
    assert zlib.crc32(rec) == codec.CRC_RESIDUE
    damaged = bytearray(rec)
    damaged[flip % len(rec)] ^= 0xFF
    assert zlib.crc32(damaged) != codec.CRC_RESIDUE


def test_limits_are_precise_errors() -> None:
    with pytest.raises(ValueError, match="subject of 70000 bytes"):
        codec.encode_msg(1, 1, b"s" * 70_000, None, b"")
