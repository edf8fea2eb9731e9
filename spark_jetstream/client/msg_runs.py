"""Delivered JetStream messages kept as raw frames: one bytes run per receive buffer.

A range read receives almost only data frames: ``MSG``/``HMSG`` to the read's
subscription with a ``$JS.ACK.`` reply subject. `RunScanner.scan(buf, pos)`
walks a receive buffer with `bytes.find`, consuming every complete data frame
from `pos` on; it stops at the first frame that is anything else (a status, a
PING, an error, a message of another subscription) or that is incomplete,
and the caller handles that frame. A scanned frame costs one integer in a
list: no bytes object, tuple or int per field. The frames themselves stay as
they arrived (one slice per run of consecutive data frames), joined once per
chunk.

`RawChunk` is that chunk: `buf` holds whole frames back to back and `marks`
three positions per frame, each `base` more than its index in `buf`: where
frame k starts (``marks[3k]``), where its sid token starts (the subject
ends, ``marks[3k+1]``) and where its line ends (``marks[3k+2]``); a frame
ends where the next one starts (the last at the end of `buf`). The offset
`base` spares re-numbering the frames left over when a chunk is cut. Readers
parse its columns in bulk (read/arrow_rows.py). `to_chunk()` is the
per-message parse of the same frames into a `Chunk` (column lists): the
reference the bulk parse must equal, and what the rare irregular chunk uses.

A data frame is recognised by its line alone: ``MSG``/``HMSG``, then the
subject, then ``<sid> $JS.ACK.`` (tokens hold no spaces, so that text can
only be the sid followed by the reply). Its last token is the size of the
rest of the frame (headers and payload), in both forms. All frames of one
scanner come from one consumer on one connection, so their reply subjects
have one layout.

Pure: no sockets, no pyarrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["Chunk", "RawChunk", "RunScanner", "ack_fields"]

CRLF: Final = b"\r\n"
ACK_PREFIX: Final = b"$JS.ACK."
_OPS: Final = (b"MSG ", b"HMSG ")


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
    """Whole data frames back to back, and where each starts."""

    buf: bytes
    marks: list[int]
    with_headers: bool = True
    base: int = 0

    def __len__(self) -> int:
        return len(self.marks) // 3

    @property
    def starts(self) -> list[int]:
        """Where each frame starts in `buf`."""
        return [m - self.base for m in self.marks[::3]]

    def fields_at(self, k: int) -> tuple[int, int, int]:
        """(stream_seq, timestamp_ns, num_pending) of frame `k`."""
        k %= len(self)
        base = self.base
        return ack_fields(_line_reply(self.buf[self.marks[3 * k] - base : self.marks[3 * k + 2] - base]))

    @property
    def last_seq(self) -> int:
        return self.fields_at(-1)[0]

    def head(self, rows: int) -> RawChunk:
        """The first `rows` frames."""
        if rows >= len(self):
            return self
        return RawChunk(self.buf[: self.marks[3 * rows] - self.base], self.marks[: 3 * rows], self.with_headers, self.base)

    def up_to(self, end: int) -> RawChunk:
        """The frames with stream_seq <= end (sequences ascend: cut at the first beyond)."""
        if not self.marks or self.last_seq <= end:
            return self
        lo, hi = 0, len(self)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.fields_at(mid)[0] > end:
                hi = mid
            else:
                lo = mid + 1
        return self.head(lo)

    def to_chunk(self) -> Chunk:
        """The per-message parse of every frame (the reference of the bulk parse)."""
        data, starts = self.buf, self.starts
        subjects: list[bytes] = []
        payloads: list[bytes] = []
        hdrs: list[bytes] = []
        seqs: list[int] = []
        tss: list[int] = []
        ends = [*starts[1:], len(data)] if starts else []
        for start, end in zip(starts, ends, strict=True):
            nl = data.find(CRLF, start)
            parts = data[start:nl].split()
            body = nl + 2
            hsize = int(parts[-2]) if parts[0] == b"HMSG" else 0
            subjects.append(parts[1])
            payloads.append(data[body + hsize : end - 2])
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
        self._marker = b" " + sid + b" " + ACK_PREFIX
        self.with_headers = with_headers
        self._segments: list[bytes] = []
        self._marks: list[int] = []
        self._base = 0  # the mark of the first byte of _segments
        self._size = 0  # the mark just past the last byte of _segments

    def __len__(self) -> int:
        return len(self._marks) // 3

    def scan(self, buf: bytes, pos: int) -> int:
        """Consume the complete data frames at `buf[pos:]`; return where the first
        frame that is not one (or is incomplete) starts."""
        first = pos
        shift = self._size - pos
        append = self._marks.append
        find = buf.find
        rfind = buf.rfind
        startswith = buf.startswith
        marker = self._marker
        n = len(buf)
        while True:
            nl = find(CRLF, pos)
            if nl < 0:
                break
            sid_at = find(marker, pos, nl)
            if sid_at < 0 or not startswith(_OPS, pos):
                break
            stop = nl + 4 + int(buf[rfind(b" ", pos, nl) + 1 : nl])
            if stop > n:
                break
            append(pos + shift)
            append(sid_at + shift)
            append(nl + shift)
            pos = stop
        if pos > first:
            self._segments.append(buf[first:pos])
            self._size += pos - first
        return pos

    def add_frame(self, frame: bytes) -> None:
        """One whole data frame that reached the caller some other way."""
        nl = frame.find(CRLF)
        sid_at = frame.find(self._marker, 0, nl)
        if sid_at < 0 or not frame.startswith(_OPS):
            raise ValueError(f"not a data frame of this subscription: {frame[:200]!r}")
        self._marks += [self._size, self._size + sid_at, self._size + nl]
        self._segments.append(frame)
        self._size += len(frame)

    def last_fields(self) -> tuple[int, int, int]:
        """(stream_seq, timestamp_ns, num_pending) of the last frame collected."""
        seg = self._segments[-1]
        base = self._size - len(seg)  # the mark of the first byte of seg
        return ack_fields(_line_reply(seg[self._marks[-3] - base : self._marks[-1] - base]))

    def take(self, rows: int) -> RawChunk:
        """The first `rows` frames collected (all when fewer), removed from the scanner."""
        data = self._segments[0] if len(self._segments) == 1 else b"".join(self._segments)
        marks, base = self._marks, self._base
        if rows >= len(self):
            self._segments, self._marks, self._base, self._size = [], [], 0, 0
            return RawChunk(data, marks, self.with_headers, base)
        cut = marks[3 * rows]
        self._segments = [data[cut - base :]]
        self._marks = marks[3 * rows :]
        self._base = cut
        return RawChunk(data[: cut - base], marks[: 3 * rows], self.with_headers, base)
