"""Delivered JetStream messages kept as raw frames: the receive buffers' runs of data frames.

A range read receives almost only data frames: ``MSG``/``HMSG`` to the read's
subscription with a ``$JS.ACK.`` reply subject. `RunScanner.scan(buf, pos)`
finds every complete data frame from `pos` on (client/frame_scan.py: numpy
passes over the whole buffer, no Python work per frame) and stops at the
first frame that is anything else (a status, a PING, an error, a message of
another subscription, an irregular line) or that is incomplete; the caller
handles that frame (`add_frame` takes a data frame the scan left). The
scanner keeps each receive buffer whole with the run's `FrameIndex`
(positions of each frame's parts, stream sequence and timestamp) and copies
the frames once, when `take` joins them into a chunk.

`RawChunk` is that chunk: `buf` holds whole frames back to back (and may go
on past the last one: a chunk cut from a longer run shares its buffer) and `index`
where each frame's subject, header block and payload are in `buf`, and its
stream sequence and timestamp. Readers build Arrow columns from them without
parsing again (read/arrow_rows.py). `to_chunk()` is the per-message parse of
the same bytes into a `Chunk` (column lists), from where each frame starts
only: the reference the bulk path must equal (the tests compare them).

All frames of one scanner come from one consumer on one connection, so their
stream sequences ascend (`up_to` cuts by binary search).

Pure: no sockets, no pyarrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from spark_jetstream.client import frame_scan
from spark_jetstream.client.frame_scan import FrameIndex
from spark_jetstream.client.frames import ACK_PREFIX

__all__ = ["Chunk", "RawChunk", "RunScanner", "ack_fields"]

CRLF: Final = b"\r\n"


@dataclass(slots=True)
class Chunk:
    """Column lists for up to `chunk_rows` messages (sequence order)."""

    subjects: list[bytes]
    data: list[bytes]
    headers: list[bytes] | None  # raw header blocks ('' when none); None when not wanted
    seqs: list[int]
    ts_ns: list[int]

    def __len__(self) -> int:
        return len(self.seqs)

    @property
    def last_seq(self) -> int:
        return self.seqs[-1]


def ack_fields(reply: bytes) -> tuple[int, int, int]:
    """(stream_seq, timestamp_ns, num_pending) from a `$JS.ACK.` reply subject.

    Layouts (ADR-15): 9 tokens (`$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.
    <cseq>.<ts>.<pending>`), 11 (with domain and account hash) and 12 (plus a
    random token at the end).
    """
    tok = reply.rsplit(b".", 5 if reply.count(b".") == 11 else 4)
    return int(tok[1]), int(tok[3]), int(tok[4])


def _line_reply(line: bytes) -> bytes:
    return line.split(b" ", 4)[3]


@dataclass(frozen=True, slots=True)
class RawChunk:
    """Whole data frames back to back, and where their parts are (`FrameIndex`, positions in `buf`;
    `buf` may go on past the last frame)."""

    buf: bytes
    index: FrameIndex
    with_headers: bool = True

    def __len__(self) -> int:
        return len(self.index)

    @property
    def starts(self) -> list[int]:
        """Where each frame starts in `buf`."""
        return self.index.field("start").tolist()  # type: ignore[no-any-return]

    @property
    def last_seq(self) -> int:
        return int(self.index.nums[0, -1])

    def head(self, rows: int) -> RawChunk:
        """The first `rows` frames."""
        if rows >= len(self):
            return self
        return RawChunk(self.buf, self.index[:rows], self.with_headers)

    def up_to(self, end: int) -> RawChunk:
        """The frames with stream_seq <= end (sequences ascend: cut at the first beyond)."""
        if not len(self) or self.last_seq <= end:
            return self
        return self.head(int(np.searchsorted(self.index.nums[0], end, side="right")))

    def to_chunk(self) -> Chunk:
        """The per-message parse of every frame (the reference of the bulk parse), from the
        frames' bytes alone (not from `index`, but where each frame starts)."""
        data = self.buf
        subjects: list[bytes] = []
        payloads: list[bytes] = []
        hdrs: list[bytes] = []
        seqs: list[int] = []
        tss: list[int] = []
        for start in self.starts:
            nl = data.find(CRLF, start)
            parts = data[start:nl].split()
            body = nl + 2
            hsize = int(parts[-2]) if parts[0] == b"HMSG" else 0
            subjects.append(parts[1])
            payloads.append(data[body + hsize : body + int(parts[-1])])
            hdrs.append(data[body : body + hsize])
            seq, ts, _ = ack_fields(parts[3])
            seqs.append(seq)
            tss.append(ts)
        return Chunk(subjects, payloads, hdrs if self.with_headers else None, seqs, tss)

    # the column lists of `to_chunk`, for callers that want a few rows as Python values
    @property
    def seqs(self) -> list[int]:
        return self.to_chunk().seqs

    @property
    def ts_ns(self) -> list[int]:
        return self.to_chunk().ts_ns

    @property
    def subjects(self) -> list[bytes]:
        return self.to_chunk().subjects

    @property
    def data(self) -> list[bytes]:
        return self.to_chunk().data

    @property
    def headers(self) -> list[bytes] | None:
        return self.to_chunk().headers


class RunScanner:
    """Collects the data frames of subscription `sid` from successive receive buffers."""

    def __init__(self, sid: bytes, with_headers: bool = True) -> None:
        self.sid = sid
        self.with_headers = with_headers
        # runs of frames: (the receive buffer, where the run starts and ends in it, its index
        # with positions from the run's start); a buffer is kept whole (no copy) until `take`
        self._runs: list[tuple[bytes, int, int, FrameIndex]] = []
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def scan(self, buf: bytes, pos: int) -> int:
        """Consume the complete data frames at `buf[pos:]`; return where the first
        frame that is not one (or is incomplete) starts."""
        index, stop = frame_scan.scan(buf, pos, self.sid)
        if len(index):
            self._runs.append((buf, pos, stop, index.shifted(-pos)))
            self._count += len(index)
        return stop

    def add_frame(self, frame: bytes) -> None:
        """One whole data frame that reached the caller some other way (one the scan does not
        take: an irregular line), parsed as `RawChunk.to_chunk` parses it."""
        nl = frame.find(CRLF)
        parts = frame[:nl].split()
        if nl < 0 or parts[0] not in (b"MSG", b"HMSG") or len(parts) < 5 or parts[2] != self.sid:
            raise ValueError(f"not a data frame of this subscription: {frame[:200]!r}")
        if not parts[3].startswith(ACK_PREFIX):
            raise ValueError(f"not a data frame of this subscription: {frame[:200]!r}")
        seq, ts, _ = ack_fields(parts[3])
        subject = frame.find(parts[1], len(parts[0]))
        body = nl + 2
        hsize = int(parts[-2]) if parts[0] == b"HMSG" else 0
        row = (0, subject, subject + len(parts[1]), body, body + hsize, len(frame) - 2, seq, ts)
        self._runs.append((frame, 0, len(frame), FrameIndex.of([row])))
        self._count += 1

    def last_fields(self) -> tuple[int, int, int]:
        """(stream_seq, timestamp_ns, num_pending) of the last frame collected."""
        buf, pos, _, index = self._runs[-1]
        start, body = int(index.pos[0, -1]) + pos, int(index.pos[3, -1]) + pos
        return ack_fields(_line_reply(buf[start : body - 2]))

    def take(self, rows: int) -> RawChunk:
        """The first `rows` frames collected (all when fewer), removed from the scanner."""
        runs = self._runs
        if len(runs) == 1 and runs[0][1] == 0 and runs[0][2] == len(runs[0][0]):
            data = runs[0][0]
        else:
            data = b"".join([memoryview(buf)[pos:stop] for buf, pos, stop, _ in runs])
        shifts = [0]
        for _, pos, stop, _ in runs[:-1]:
            shifts.append(shifts[-1] + stop - pos)
        index = FrameIndex.concat([r[3] for r in runs], shifts)
        if rows >= len(index):
            self._runs, self._count = [], 0
            return RawChunk(data, index, self.with_headers)
        cut = int(index.pos[0, rows])
        rest = index[rows:]
        self._runs, self._count = [(data, cut, len(data), rest.shifted(-cut))], len(rest)
        return RawChunk(data, index[:rows], self.with_headers)  # `data` past the cut: not copied
