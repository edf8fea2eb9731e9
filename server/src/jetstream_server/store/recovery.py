"""Rebuilding a file store's index by replaying its block files (no snapshot).

`scan_blocks` reads every block in order and replays its records into a
`MessageIndex` (the record offsets are its extra column; each block starts a
new page, and pages past the index budget go to its swap as the scan goes). It never raises on bad data and
keeps every record whose checksum holds:
- a block with a damaged header is removed (a crash while it was created);
- a bad record in the middle of a block (checksum mismatch, bad framing, a
  torn in-place erase) is skipped: replay resumes at the next record, found
  by the damaged record's own length when its framing holds, else by
  searching forward for the next record whose checksum holds. The block is
  then rewritten without the damaged bytes (temp file, fsync, rename), so the
  loss is reported once;
- bad bytes with no valid record after them (a torn append) are truncated.
Each loss is logged as a WARNING and added to the `RecoveryReport`: its
bytes, the records it held, and the sequences of the messages lost (from the
damaged records' headers when they frame, else the gap between the good
records around it); a message whose tombstone is found later was deleted
anyway and is not counted as lost. Later blocks are still read.

Replay rules: MSG adds a message; DELETE removes one (and raises the
operation stamp); ERASED only moves `last_seq`; FLOOR removes everything below
it. Runs of consecutive messages go to the index in one `extend_run`, the hot
path of a reopen.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from jetstream_server.store import codec
from jetstream_server.store.base import RecoveryReport
from jetstream_server.store.blocks import Block
from jetstream_server.store.durable_io import replace_file
from jetstream_server.store.index import MessageIndex

log = logging.getLogger(__name__)

_CRC = struct.Struct("<I")
MAX_GAP = 1 << 16  # most sequences one unreadable hole is reported to have held


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
    report: RecoveryReport,
) -> ScanResult:
    """Replay `files` (oldest first) into `index`/`offsets`; fix damaged files."""
    result = ScanResult()
    names: dict[bytes, str] = {}
    suspects: dict[int, int] = {}  # seq of a damaged message record -> its record bytes
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
        index.seal()  # a block's entries are whole pages
        mv = memoryview(raw)
        try:
            replay = _replay(raw, mv, names, index, suspects)
            pos, reason, tail, stamp_seen = replay.end, replay.reason, replay.tail, replay.stamp
            for hole in replay.holes:
                _lost(label, report, path, hole.start, hole.stop - hole.start, hole.records,
                      hole.after, hole.why)
            if reason:
                lost_records = codec.count_framed(mv, pos, len(raw))
                _lost(
                    label, report, path, pos, len(raw) - pos, lost_records, index.last_seq, reason
                )
                for seq in _framed_msg_seqs(mv, pos, len(raw), index.last_seq, cut=True):
                    suspects[seq] = 0
        finally:
            mv.release()
        if replay.holes:
            pos, tail = _cut_holes(path, raw, pos, replay.holes, index, first_seq, tail)
            result.changed = True
        elif reason:
            os.truncate(path, pos)
            result.changed = True
        result.blocks.append(Block(number, path, first_seq, stamp, pos))
        result.next_stamp = max(result.next_stamp, stamp + 1, stamp_seen + 1)
        result.tail = tail
    lost = sorted(seq for seq in suspects if not index.present(seq))
    report.lost_seqs.extend(lost)
    if lost:
        log.warning("store %s: recovery lost message sequences %s", label, _ranges(lost))
    return result


@dataclass(slots=True)
class _Hole:
    """Damaged bytes in the middle of a block, skipped by the replay."""

    start: int
    stop: int
    records: int
    after: int  # the last good sequence before it
    why: str


@dataclass(slots=True)
class _Replay:
    end: int  # where the valid records end
    reason: str  # why they end there ("" at the end of the block)
    tail: tuple[int, int] | None  # the last valid record
    stamp: int  # the highest tombstone stamp seen
    holes: list[_Hole] = field(default_factory=list)


def _framed_msg_seqs(
    buf: bytes | memoryview, pos: int, end: int, above: int, *, cut: bool = False
) -> list[int]:
    """Sequences of the message records framed (by length) in buf[pos:end] whose
    header is plausible (above `above`): what a damaged region probably held.
    With `cut`, a last record cut short still counts when its header is whole."""
    out: list[int] = []
    while end - pos >= codec.RECORD_HEAD_SIZE:
        rec_len, kind, seq, _ts, slen, hlen, dlen = codec.RECORD_HEAD.unpack_from(buf, pos)
        if rec_len != codec.RECORD_FIXED + slen + hlen + dlen:
            break
        whole = pos + rec_len <= end
        if (whole or cut) and kind in (codec.KIND_MSG, codec.KIND_ERASED) and seq > above:
            out.append(seq)
        if not whole:
            break
        pos += rec_len
    return out


def _resync(raw: bytes, pos: int, end: int) -> int:
    """The offset of the next record at or after `pos` whose checksum holds, or -1."""
    scan = codec.scan_record
    fixed, kinds = codec.RECORD_FIXED, codec.RECORD_KINDS
    unpack = codec.RECORD_HEAD.unpack_from
    while end - pos >= fixed:
        rec_len, kind, _seq, _ts, slen, hlen, dlen = unpack(raw, pos)
        if (
            kind in kinds
            and rec_len == fixed + slen + hlen + dlen
            and pos + rec_len <= end
            and not isinstance(scan(raw, pos, end), str)
        ):
            return pos
        pos += 1
    return -1


def _cut_holes(
    path: Path,
    raw: bytes,
    end: int,
    holes: list[_Hole],
    index: MessageIndex,
    first_seq: int,
    tail: tuple[int, int] | None,
) -> tuple[int, tuple[int, int] | None]:
    """Rewrite `path` with only the valid records (up to `end`), atomically, and
    move this block's offsets (its entries from `first_seq` on) to match;
    returns the new size and tail."""
    parts: list[bytes] = []
    starts: list[int] = []  # hole starts
    shift: list[int] = []  # bytes removed before each hole's end
    prev, removed = 0, 0
    for hole in holes:
        parts.append(raw[prev : hole.start])
        removed += hole.stop - hole.start
        starts.append(hole.stop)
        shift.append(removed)
        prev = hole.stop
    parts.append(raw[prev:end])

    def moved(offset: int) -> int:
        k = bisect.bisect_right(starts, offset)
        return offset - shift[k - 1] if k else offset

    index.map_extra(first_seq, 0, moved)
    if tail is not None:
        k = bisect.bisect_right(starts, tail[0])
        if k:
            tail = (tail[0] - shift[k - 1], tail[1])
    replace_file(path, parts)
    return end - removed, tail


def _ranges(seqs: list[int]) -> str:
    """[1, 2, 3, 7] -> "1-3, 7" (sorted input)."""
    out: list[str] = []
    start = prev = seqs[0]
    for seq in seqs[1:]:
        if seq != prev + 1:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = seq
        prev = seq
    out.append(str(start) if start == prev else f"{start}-{prev}")
    return ", ".join(out)


def _replay(
    raw: bytes,
    mv: memoryview,
    names: dict[bytes, str],
    index: MessageIndex,
    suspects: dict[int, int],
) -> _Replay:
    """Replay one block's records, skipping damaged ones (`_Replay.holes`);
    `suspects` collects the sequences of damaged message records (a later
    tombstone or floor clears them: that message was gone anyway)."""
    unpack, crc32, crc_at = codec.RECORD_HEAD.unpack_from, codec.crc32_in_use(), _CRC.unpack_from
    kind_msg, fixed, head = codec.KIND_MSG, codec.RECORD_FIXED, codec.RECORD_HEAD_SIZE
    adj_plain, adj_hdr = codec.RECLEN_PLAIN, codec.RECLEN_HDR
    sid_of, intern = index.sid_of, index.intern
    run_sids, run_ts, run_sizes, run_offs = array("I"), array("q"), array("I"), array("I")
    run_first = 0
    next_seq = index.last_seq + 1
    pos, end = codec.BLOCK_HEADER_SIZE, len(raw)
    reason = ""
    tail: tuple[int, int] | None = None
    stamp_seen = 0
    holes: list[_Hole] = []
    gap_after = -1  # a hole with no readable header: the gap up to the next message is lost

    def flush() -> None:
        if run_sids:
            index.extend_run(run_first, run_sids, run_ts, run_sizes, (run_offs,))
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
            why = scan if isinstance(scan, str) else "record framing"
            nxt = _next_good(raw, pos, end)
            if nxt < 0:
                reason = why  # nothing valid after it: a torn append, truncated
                break
            flush()
            after = index.last_seq
            lost = _framed_msg_seqs(mv, pos, nxt, after)
            for lost_seq in lost:
                suspects[lost_seq] = 0
            if not lost:
                gap_after = after
            records = max(codec.count_framed(mv[:nxt], pos, nxt), len(lost), 1)
            holes.append(_Hole(pos, nxt, records, after, why))
            pos = nxt
            continue
        if kind == kind_msg:
            sb = raw[pos + head : pos + head + slen]
            subject = names.get(sb)
            if subject is None:
                try:
                    subject = names[sb] = sb.decode()
                except UnicodeDecodeError:
                    reason = "subject is not UTF-8"
                    break
            if gap_after >= 0:
                for lost_seq in range(gap_after + 1, min(seq, gap_after + 1 + MAX_GAP)):
                    suspects[lost_seq] = 0
                gap_after = -1
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
            run_sizes.append(rec_len - (adj_hdr if hlen else adj_plain))
            run_offs.append(pos)
            next_seq += 1
        else:
            flush()
            if kind == codec.KIND_DELETE:
                index.remove(seq)
                stamp_seen = max(stamp_seen, ts)
                if suspects:
                    suspects.pop(seq, None)
            elif kind == codec.KIND_ERASED:
                index.advance_last(seq)
            elif kind == codec.KIND_FLOOR:
                index.floor(seq)
                index.last_ts = max(index.last_ts, ts)
                for gone in [s for s in suspects if s < seq]:
                    del suspects[gone]
            else:
                reason = f"unknown record kind {kind}"
                break
            next_seq = index.last_seq + 1
        tail = (pos, rec_len)
        pos += rec_len
    flush()
    return _Replay(pos, reason, tail, stamp_seen, holes)


def _next_good(raw: bytes, pos: int, end: int) -> int:
    """Where replay resumes after the damaged record at `pos`: right after it when
    its length frames a valid next record (a flipped bit, a torn erase), else the
    next record found whose checksum holds; -1 when nothing valid follows."""
    if end - pos >= codec.RECORD_FIXED:
        rec_len, _kind, _seq, _ts, slen, hlen, dlen = codec.RECORD_HEAD.unpack_from(raw, pos)
        nxt = pos + rec_len
        if rec_len == codec.RECORD_FIXED + slen + hlen + dlen and nxt < end:
            if not isinstance(codec.scan_record(raw, nxt, end), str):
                return int(nxt)
    return _resync(raw, pos + 1, end)


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
