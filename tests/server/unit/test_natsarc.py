"""nats-server's backup archive (store/natsarc.py): entries round-trip, whole and one byte
at a time; malformed or oversized input raises ArchiveError before anything is buffered."""

from __future__ import annotations

import pytest

from jetstream_server.store.natsarc import (
    MAGIC,
    ArchiveError,
    ArchiveReader,
    encode_entry,
    end_entry,
)

ENTRIES = [
    ("state.json", 1_700_000_000_000_000_001, 0, b"", b'{"messages":1}'),
    ("orders.new", -5, 7, b"NATS/1.0\r\nA: b\r\n\r\n", b"data"),
    ("ü.subject", 0, 1 << 63, b"", b""),
]
DATA = MAGIC + b"".join(encode_entry(*e) for e in ENTRIES) + end_entry()


def _flat(entries: list) -> list[tuple[str, int, int, bytes, bytes]]:
    return [(e.name, e.timestamp, e.sequence, e.payload[:e.header_size],
             e.payload[e.header_size:]) for e in entries]


def test_round_trip_whole_and_byte_by_byte() -> None:
    reader = ArchiveReader(1 << 20)
    got = reader.feed(DATA)
    assert _flat(got[:-1]) == ENTRIES and got[-1].end and reader.finished
    reader = ArchiveReader(1 << 20)
    got = [e for i in range(len(DATA)) for e in reader.feed(DATA[i:i + 1])]
    assert _flat(got[:-1]) == ENTRIES and reader.finished and reader.pending == 0


def test_entry_over_the_limit_is_refused_from_its_header() -> None:
    head = MAGIC + encode_entry("s", 1, 1, b"", b"x" * 100)[:6]
    with pytest.raises(ArchiveError, match="entry of 100 bytes exceeds the limit of 99 bytes"):
        ArchiveReader(99).feed(head)


@pytest.mark.parametrize(("data", "message"), [
    (b"NATSARC2" + end_entry(), "does not start with NATSARC1"),
    (DATA + b"x", "data after the end of backup"),
    (MAGIC + b"\xff" * 11, "varint overflows"),
    (MAGIC + b"\x80\x80\x80\x01\x00\x00\x00\x00", "entry name of"),  # a 2 MiB name
    (MAGIC + b"\x02\x02\x02\x00\x00\xff\xfe", "not UTF-8"),
])
def test_malformed(data: bytes, message: str) -> None:
    with pytest.raises(ArchiveError, match=message):
        ArchiveReader(1 << 20).feed(data)
