"""Rebuilding a file store's index by replaying its block files (no snapshot).

`scan_blocks` reads every block in order and replays its records into a
`MessageIndex` (and the offsets column). It never raises on bad data: a block
with a damaged header is removed; a block is truncated at its first bad
record (short, checksum mismatch, bad framing, a message sequence that does
not go up); each loss is logged as a WARNING and added to the
`RecoveryReport` with its size, an estimate of the records dropped, and the
last good sequence before it. Later blocks are still read.

Replay rules: MSG adds a message; DELETE removes one (and raises the
operation stamp); ERASED only moves `last_seq`; FLOOR removes everything below
it. Runs of consecutive messages go to the index in one `extend_run`, the hot
path of a reopen.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from jetstream_server.store import codec
from jetstream_server.store.base import RecoveryReport
from jetstream_server.store.blocks import Block
from jetstream_server.store.index import MessageIndex

log = logging.getLogger(__name__)

_CRC = struct.Struct("<I")


@dataclass(slots=True)
class ScanResult:
    blocks: list[Block] = field(default_factory=list)
    tail: tuple[int, int] | None = None  # (offset, rec_len) of the last record of the last block
    next_stamp: int = 1
    changed: bool = False  # files were truncated or removed


def scan_blocks(
    label: str,
    files: list[tuple[int, Path]],
    index: MessageIndex,
    offsets: array,
    report: RecoveryReport,
) -> ScanResult:
    """Replay `files` (oldest first) into `index`/`offsets`; fix damaged files."""
    result = ScanResult()
    names: dict[bytes, str] = {}
    for number, path in files:
        raw = path.read_bytes()
        try:
            first_seq, stamp = codec.decode_block_header(raw)
        except codec.CorruptRecord as err:
            # typically a crash while a new block was being created
            _lost(label, report, path, 0, len(raw), 1 if raw else 0, index.last_seq, str(err))
            path.unlink()
            result.changed = True
            continue
        if first_seq <= index.last_seq:
            # a block never starts at or below a sequence an earlier block holds
            framed = codec.count_framed(raw, codec.BLOCK_HEADER_SIZE, len(raw))
            why = f"block first sequence {first_seq} is out of order"
            _lost(label, report, path, 0, len(raw), framed, index.last_seq, why)
            path.unlink()
            result.changed = True
            continue
        index.advance_last(first_seq - 1)
        mv = memoryview(raw)
        try:
            pos, reason, tail, stamp_seen = _replay(raw, mv, names, index, offsets)
            if reason:
                lost_records = codec.count_framed(mv, pos, len(raw))
                _lost(
                    label, report, path, pos, len(raw) - pos, lost_records, index.last_seq, reason
                )
        finally:
            mv.release()
        if reason:
            os.truncate(path, pos)
            result.changed = True
        result.blocks.append(Block(number, path, first_seq, stamp, pos))
        result.next_stamp = max(result.next_stamp, stamp + 1, stamp_seen + 1)
        result.tail = tail
    return result


def _replay(
    raw: bytes, mv: memoryview, names: dict[bytes, str], index: MessageIndex, offsets: array
) -> tuple[int, str, tuple[int, int] | None, int]:
    """Replay one block's records; return where the valid records end, why they
    end there ("" at the end of the block), the last valid record, and the
    highest tombstone stamp seen."""
    unpack, crc32, crc_at = codec.RECORD_HEAD.unpack_from, zlib.crc32, _CRC.unpack_from
    kind_msg, fixed, head = codec.KIND_MSG, codec.RECORD_FIXED, codec.RECORD_HEAD_SIZE
    size_adj = codec.SIZE_TO_RECLEN
    sid_of, intern = index.sid_of, index.intern
    run_sids, run_ts, run_sizes, run_offs = array("I"), array("q"), array("I"), array("I")
    run_first = 0
    next_seq = index.last_seq + 1
    pos, end = codec.BLOCK_HEADER_SIZE, len(raw)
    reason = ""
    tail: tuple[int, int] | None = None
    stamp_seen = 0

    def flush() -> None:
        if run_sids:
            index.extend_run(run_first, run_sids, run_ts, run_sizes)
            offsets.extend(run_offs)
            for run in (run_sids, run_ts, run_sizes, run_offs):
                del run[:]

    while pos < end:
        if end - pos < fixed:
            short = codec.scan_record(raw, pos, end)
            reason = short if isinstance(short, str) else "record framing"
            break
        rec_len, kind, seq, ts, slen, hlen, dlen = unpack(raw, pos)
        stop = pos + rec_len - 4
        if (
            rec_len != fixed + slen + hlen + dlen
            or stop + 4 > end
            or crc32(mv[pos:stop]) != crc_at(raw, stop)[0]
        ):
            scan = codec.scan_record(raw, pos, end)
            reason = scan if isinstance(scan, str) else "record framing"
            break
        if kind == kind_msg:
            sb = raw[pos + head : pos + head + slen]
            subject = names.get(sb)
            if subject is None:
                try:
                    subject = names[sb] = sb.decode()
                except UnicodeDecodeError:
                    reason = "subject is not UTF-8"
                    break
            if seq != next_seq:
                flush()
                if seq <= index.last_seq:
                    reason = f"message sequence {seq} is not above {index.last_seq}"
                    break
                index.advance_last(seq - 1)
                next_seq = seq
            if not run_sids:
                run_first = seq
            sid = sid_of.get(subject)
            run_sids.append(intern(subject) if sid is None else sid)
            run_ts.append(ts)
            run_sizes.append(rec_len - size_adj)
            run_offs.append(pos)
            next_seq += 1
        else:
            flush()
            if kind == codec.KIND_DELETE:
                index.remove(seq)
                stamp_seen = max(stamp_seen, ts)
            elif kind == codec.KIND_ERASED:
                index.advance_last(seq)
            elif kind == codec.KIND_FLOOR:
                index.floor(seq)
                index.last_ts = max(index.last_ts, ts)
            else:
                reason = f"unknown record kind {kind}"
                break
            next_seq = index.last_seq + 1
        tail = (pos, rec_len)
        pos += rec_len
    flush()
    return pos, reason, tail, stamp_seen


def _lost(
    label: str,
    report: RecoveryReport,
    path: Path,
    offset: int,
    nbytes: int,
    records: int,
    after_seq: int,
    why: str,
) -> None:
    report.lost_bytes += nbytes
    report.lost_msgs += records
    note = (
        f"{path.name}: dropped {nbytes} bytes (about {records} records) at offset "
        f"{offset}, after sequence {after_seq}: {why}"
    )
    report.notes.append(note)
    log.warning("store %s: recovery %s", label, note)
