"""On-disk encoding of the file store: block header and records (pure, no I/O).

Block file (`msgs/<index:010d>.blk`) = header + records, appended only
(except erasure, which rewrites one record in place with the same length).

Block header, 32 bytes:

    offset size field
    0      8    magic      b"NJSBLK\\x00\\x01" (format version 1)
    8      8    first_seq  u64 LE: the next sequence when the block was opened;
                           every message in this block has seq >= first_seq and
                           every message in earlier blocks has seq < first_seq
    16     8    stamp      u64 LE: the store's operation stamp when this file was
                           last (re)written; every tombstone with a lower stamp
                           hides a record this file no longer holds
    24     4    crc        u32 LE: zlib.crc32 of bytes [0, 24)
    28     4    reserved   zero

Record, little-endian, `35 + S + H + D` bytes:

    offset   size field
    0        4    rec_len   u32  whole record length, this field and the crc included
    4        1    kind      u8   1 MSG, 2 DELETE (tombstone), 3 FLOOR, 4 ERASED
    5        8    seq       u64  MSG/ERASED: the message sequence;
                                 DELETE: the removed sequence;
                                 FLOOR: every sequence below it is gone and the
                                 next stored sequence is at least it
    13       8    ts        i64  MSG/ERASED: timestamp ns; FLOOR: last_ts then;
                                 DELETE: the store's operation stamp (see header)
    21       2    S         u16  subject length
    23       4    H         u32  header block length (0 = no headers)
    27       4    D         u32  data length
    31       S    subject   UTF-8
    31+S     H    headers   raw NATS header block
    31+S+H   D    data
    L-4      4    crc       u32  zlib.crc32 of bytes [0, L-4)

An ERASED record is a MSG record rewritten in place: same length, kind 4,
headers and data zeroed, checksum recomputed; a DELETE record for the same
sequence is always appended before the rewrite. A message's accounted size
(nats-server's fileStoreMsgSize, `base.FILE_OVERHEAD`) follows from the record
without reading its payload: `rec_len - 5` without headers (H = 0) and
`rec_len - 1` with them (`record_msg_size`); conversely a message of accounted
size N has a record of `N + 5` or `N + 1` bytes.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Final

from jetstream_server.core.compact_json import SPEEDUPS_ENV
from jetstream_server.store.base import FILE_OVERHEAD

BLOCK_MAGIC: Final = b"NJSBLK\x00\x01"
BLOCK_HEADER: Final = struct.Struct("<8sQQI4x")
BLOCK_HEADER_SIZE: Final = BLOCK_HEADER.size  # 32

KIND_MSG: Final = 1
KIND_DELETE: Final = 2
KIND_FLOOR: Final = 3
KIND_ERASED: Final = 4
RECORD_KINDS: Final = frozenset((KIND_MSG, KIND_DELETE, KIND_FLOOR, KIND_ERASED))
_KINDS: Final = RECORD_KINDS

RECORD_HEAD: Final = struct.Struct("<IBQqHII")
RECORD_HEAD_SIZE: Final = RECORD_HEAD.size  # 31
CRC_SIZE: Final = 4
RECORD_FIXED: Final = RECORD_HEAD_SIZE + CRC_SIZE  # 35
# rec_len - accounted size, for a message without headers and one with
RECLEN_PLAIN: Final = RECORD_FIXED - FILE_OVERHEAD[0]  # 5
RECLEN_HDR: Final = RECORD_FIXED - FILE_OVERHEAD[1]  # 1
MAX_RECORD: Final = 0xFFFFFFFF
MAX_SUBJECT_BYTES: Final = 0xFFFF

_CRC: Final = struct.Struct("<I")
# zlib.crc32 of any record whole (its checksum included) when the checksum is right: a
# property of CRC-32, so a reader checks a record with one crc32 call and no unpack
CRC_RESIDUE: Final = 0x2144DF1C
_pack_head = RECORD_HEAD.pack
_unpack_head = RECORD_HEAD.unpack_from
Crc32 = Callable[..., int]  # crc32(data, value=0): zlib's signature and results


def _load_isal_crc32() -> Crc32 | None:
    """ISA-L's CRC-32 (python-isal, the `speedups` extra): zlib's polynomial and results,
    about three times faster on a record (SIMD, less work a call); None when not installed."""
    try:
        module = import_module("isal.isal_zlib")
    except ImportError:
        return None
    crc: Crc32 = module.crc32
    return crc


_isal_crc32 = _load_isal_crc32()
_crc32: Crc32 = zlib.crc32


def use_isal(enabled: bool) -> bool:
    """Checksum with ISA-L's CRC-32 (when it imports) or zlib's, the same numbers either way;
    True when ISA-L's is in use. One switch per process, as `core.compact_json.use_orjson`."""
    global _crc32
    _crc32 = _isal_crc32 if enabled and _isal_crc32 is not None else zlib.crc32
    return _crc32 is not zlib.crc32


def crc32_in_use() -> Crc32:
    """The CRC-32 function the codec uses now (for a caller's own loop over records)."""
    return _crc32


def isal_available() -> bool:
    return _isal_crc32 is not None


use_isal(os.environ.get(SPEEDUPS_ENV, "").strip().lower() != "off")


class CorruptRecord(Exception):
    """A record failed its checksum or framing."""


def record_msg_size(rec_len: int, hlen: int) -> int:
    """The accounted size of the message a MSG record of `rec_len` bytes holds,
    `hlen` its header block length (nats-server's fileStoreMsgSize)."""
    return rec_len - (RECLEN_HDR if hlen else RECLEN_PLAIN)


def encode_block_header(first_seq: int, stamp: int) -> bytes:
    head = struct.pack("<8sQQ", BLOCK_MAGIC, first_seq, stamp)
    return BLOCK_HEADER.pack(BLOCK_MAGIC, first_seq, stamp, _crc32(head))


def decode_block_header(buf: bytes | memoryview) -> tuple[int, int]:
    """The block's (first_seq, stamp); raises CorruptRecord on a short, foreign
    or damaged header."""
    if len(buf) < BLOCK_HEADER_SIZE:
        raise CorruptRecord(f"block header is {len(buf)} bytes, expected {BLOCK_HEADER_SIZE}")
    magic, first_seq, stamp, crc = BLOCK_HEADER.unpack_from(buf, 0)
    if magic != BLOCK_MAGIC:
        raise CorruptRecord(f"bad block magic {bytes(magic)!r}")
    if crc != _crc32(bytes(buf[:24])):
        raise CorruptRecord("block header checksum mismatch")
    return int(first_seq), int(stamp)


def encode_record(
    kind: int, seq: int, ts: int, subject: bytes, headers: bytes, data: bytes
) -> bytes:
    """One complete record (checksum included)."""
    if len(subject) > MAX_SUBJECT_BYTES:
        raise ValueError(f"subject of {len(subject)} bytes exceeds {MAX_SUBJECT_BYTES} bytes")
    rec_len = RECORD_FIXED + len(subject) + len(headers) + len(data)
    if rec_len > MAX_RECORD:
        raise ValueError(f"record of {rec_len} bytes exceeds the {MAX_RECORD} byte limit")
    body = (
        _pack_head(rec_len, kind, seq, ts, len(subject), len(headers), len(data))
        + subject
        + headers
        + data
    )
    return body + _CRC.pack(_crc32(body))


def encode_msg(seq: int, ts: int, subject: bytes, headers: bytes | None, data: bytes) -> bytes:
    return encode_record(KIND_MSG, seq, ts, subject, headers or b"", data)


def encode_delete(seq: int, stamp: int) -> bytes:
    return encode_record(KIND_DELETE, seq, stamp, b"", b"", b"")


def encode_floor(seq: int, last_ts: int) -> bytes:
    return encode_record(KIND_FLOOR, seq, last_ts, b"", b"", b"")


def encode_erased(seq: int, ts: int, subject: bytes, hdr_len: int, data_len: int) -> bytes:
    """The in-place replacement of a MSG record: same length, payload zeroed."""
    return encode_record(KIND_ERASED, seq, ts, subject, bytes(hdr_len), bytes(data_len))


@dataclass(frozen=True, slots=True)
class Record:
    kind: int
    seq: int
    ts: int
    subject: bytes
    headers: bytes
    data: bytes
    rec_len: int


def decode_record(buf: bytes | memoryview, pos: int = 0) -> Record:
    """Decode and verify the record at `pos`; raises CorruptRecord."""
    scan = scan_record(buf, pos, len(buf))
    if isinstance(scan, str):
        raise CorruptRecord(scan)
    kind, seq, ts, slen, hlen, dlen, rec_len = scan
    start = pos + RECORD_HEAD_SIZE
    mv = memoryview(buf)
    subject = bytes(mv[start : start + slen])
    headers = bytes(mv[start + slen : start + slen + hlen])
    data = bytes(mv[start + slen + hlen : start + slen + hlen + dlen])
    return Record(kind, seq, ts, subject, headers, data, rec_len)


def scan_record(
    buf: bytes | memoryview, pos: int, end: int
) -> tuple[int, int, int, int, int, int, int] | str:
    """Frame and verify the record at `pos` (within `buf[:end]`).

    Returns (kind, seq, ts, S, H, D, rec_len), or a string saying why the
    bytes at `pos` are not a valid record."""
    if end - pos < RECORD_FIXED:
        return f"short record header ({end - pos} bytes left)"
    rec_len, kind, seq, ts, slen, hlen, dlen = _unpack_head(buf, pos)
    if rec_len != RECORD_FIXED + slen + hlen + dlen:
        return f"record length {rec_len} disagrees with its field lengths"
    if kind not in _KINDS:
        return f"unknown record kind {kind}"
    if pos + rec_len > end:
        return f"record of {rec_len} bytes cut short at {end - pos} bytes"
    if not checksum_holds(buf[pos : pos + rec_len]):
        return "checksum mismatch"
    return kind, seq, ts, slen, hlen, dlen, rec_len


def checksum_holds(record: bytes | memoryview) -> bool:
    """True when `record`, one whole record with its checksum last, is intact (one crc32 over
    it against `CRC_RESIDUE`). Callers slice the record themselves: a compiled caller passes
    its positions along as objects."""
    return _crc32(record) == CRC_RESIDUE


def count_framed(buf: bytes | memoryview, pos: int, end: int) -> int:
    """Best-effort count of records framed (by length only) from `pos`: how many
    records a truncation at `pos` probably dropped (at least 1 if any bytes)."""
    count = 0
    while end - pos >= RECORD_FIXED:
        rec_len, kind, _seq, _ts, slen, hlen, dlen = _unpack_head(buf, pos)
        if rec_len != RECORD_FIXED + slen + hlen + dlen or kind not in _KINDS:
            break
        count += 1
        pos += rec_len
    if pos < end:
        count += 1
    return count
