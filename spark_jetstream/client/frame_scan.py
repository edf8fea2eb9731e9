"""Finding a read's data frames in a receive buffer: positions and reply numbers as arrays.

A range read receives almost only data frames of its own subscription:
``MSG <subject> <sid> <reply> <size>`` or ``HMSG <subject> <sid> <reply>
<hdr size> <size>``, a CRLF, the header block and payload, a CRLF; the reply
a `$JS.ACK.` subject (ADR-15: 9, 11 or 12 tokens) carrying the stream
sequence, the timestamp and the number pending. `scan(buf, pos, sid)` finds
the run of such frames that starts at `pos` and returns a `FrameIndex` (per
frame: where it starts, where its subject starts and ends, where its body,
payload and payload end are; its stream sequence and timestamp) and the position of the first byte it did not take: a frame that is
anything else (a status, a PING, an error, another subscription's message,
an irregular line) or that is not complete yet. The caller handles that
frame and scans on.

Two scanners with one contract, chosen per call by the size of the first
frame (`LARGE_FRAME`), which `scan` reads on its own first (no frame to
take, as at a status or a frame cut by the read, costs no pass over the
buffer): `scan_simple` walks frame by frame with `bytes`
methods (cheap for a few large frames), `scan_fast` does no Python work per
frame: numpy passes over the whole buffer find every CRLF, line start,
space and dot, check every candidate line at once (op, sid, `$JS.ACK.`
prefix, token count, digits) and parse the numbers from fixed-width digit
windows. Payloads may contain anything, lines that look like frames too:
the run is the chain of frames from `pos` where each starts exactly where
the previous one ends (its line's size says where), so a look-alike inside
a payload is never taken for a frame (those rare buffers follow the chain
one frame at a time in Python). Both accept exactly the same frames and
compute the same values (tests/connector/unit/test_frame_scan.py checks it
on random deliveries cut at every byte); what neither accepts is parsed one
frame at a time by the caller.

A frame is taken only when it is regular: single spaces between non-empty
tokens, the subscription's sid, a reply of at least four dots after
`$JS.ACK.` (read from its end as `msg_runs.ack_fields` reads it), stream
sequence, timestamp, header size and size of 1-19 ASCII digits below
9 * 10**18 (int64 without overflow), header size at most the size, and the
whole frame in the buffer. (The pending count is read for the last frame
only, by the caller.)

Pure: bytes in, arrays out; no sockets, no pyarrow.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from spark_jetstream.client.frames import ACK_PREFIX

__all__ = ["LARGE_FRAME", "BytePositions", "FrameIndex", "scan", "scan_fast", "scan_simple"]

Ints = npt.NDArray[np.int64]

# From this size of the first frame on a call walks frame by frame: a few large frames
# cost less one at a time than the buffer-wide passes (which read every payload byte).
LARGE_FRAME: Final = 4096
# Below this many bytes in the buffer the buffer-wide passes cost more than the walk.
SMALL_BUFFER: Final = 2048

MAX_DIGITS: Final = 19
# ADR-15's layouts have 9, 11 or 12 tokens; like `msg_runs.ack_fields`, any reply with at least
# four dots is read from its end (with 11 dots, the 12-token layout: a random token last)
_MIN_DOTS: Final = 4
_POS_FIELDS: Final = ("start", "subject", "subject_end", "body", "payload", "end")
_NUM_FIELDS: Final = ("seq", "ts_ns")


@dataclass(frozen=True, slots=True)
class FrameIndex:
    """Where each data frame's parts are in one buffer, and its reply's numbers.

    `pos` rows (int64, positions in the buffer): the frame's first byte, its
    subject's first byte, the space after the subject, the body (header block,
    or payload without headers), the payload, the payload's end (the frame's
    trailing CRLF; the next frame starts 2 bytes later). `nums` rows: stream
    sequence, timestamp (ns).
    """

    pos: Ints  # shape (6, n)
    nums: Ints  # shape (2, n)

    def __len__(self) -> int:
        return int(self.pos.shape[1])

    @classmethod
    def empty(cls) -> FrameIndex:
        return cls(np.empty((6, 0), np.int64), np.empty((2, 0), np.int64))

    @classmethod
    def of(cls, rows: list[tuple[int, int, int, int, int, int, int, int]]) -> FrameIndex:
        """From per-frame tuples (start, subject, subject_end, body, payload, end, seq, ts_ns)."""
        if not rows:
            return cls.empty()
        table = np.array(rows, dtype=np.int64).T
        return cls(np.ascontiguousarray(table[:6]), np.ascontiguousarray(table[6:]))

    @classmethod
    def concat(cls, parts: list[FrameIndex], shifts: list[int]) -> FrameIndex:
        """The frames of `parts` in order, positions moved by `shifts` (one per part)."""
        if len(parts) == 1:
            return parts[0].shifted(shifts[0])
        if not parts:
            return cls.empty()
        return cls(
            np.concatenate([p.pos + s for p, s in zip(parts, shifts, strict=True)], axis=1),
            np.concatenate([p.nums for p in parts], axis=1),
        )

    def shifted(self, by: int) -> FrameIndex:
        return self if by == 0 else FrameIndex(self.pos + by, self.nums)

    def __getitem__(self, rows: slice) -> FrameIndex:
        return FrameIndex(self.pos[:, rows], self.nums[:, rows])

    def field(self, name: str) -> Ints:
        """One row by name (`start` ... `end`, `seq`, `ts_ns`), contiguous."""
        if name in _NUM_FIELDS:
            return np.ascontiguousarray(self.nums[_NUM_FIELDS.index(name)])
        return np.ascontiguousarray(self.pos[_POS_FIELDS.index(name)])

    def rows(self) -> list[tuple[int, ...]]:
        """Per-frame tuples, as `of` takes them (for tests and small reads)."""
        return [tuple(r) for r in np.concatenate([self.pos, self.nums]).T.tolist()]


def scan(buf: bytes, pos: int, sid: bytes) -> tuple[FrameIndex, int]:
    """The regular data frames of subscription `sid` from `buf[pos:]` on, and where they stop."""
    first = _regular_frame(buf, pos, sid)
    if first is None:  # nothing to take: no pass over the buffer for a status or a cut frame
        return FrameIndex.empty(), pos
    if len(buf) - pos < SMALL_BUFFER or first[5] + 2 - pos >= LARGE_FRAME:
        return scan_simple(buf, pos, sid)
    return scan_fast(buf, pos, sid)


# -- one frame at a time ------------------------------------------------------------------------


def _number(token: bytes) -> int | None:
    if not 0 < len(token) <= MAX_DIGITS or not token.isdigit() or not token.isascii():
        return None
    if len(token) == MAX_DIGITS and token[0] > 0x38:  # above 8999...: could overflow int64
        return None
    return int(token)


def _regular_frame(buf: bytes, pos: int, sid: bytes) -> tuple[int, ...] | None:
    """The fields of the regular data frame at `pos` (complete), or None."""
    nl = buf.find(b"\r\n", pos)
    if nl < 0:
        return None
    h = 1 if buf.startswith(b"HMSG ", pos) else 0
    if not h and not buf.startswith(b"MSG ", pos):
        return None
    subject = pos + 4 + h
    tokens = buf[subject:nl].split(b" ")
    if len(tokens) != 4 + h or not all(tokens) or tokens[1] != sid:
        return None
    reply = tokens[2]
    dots = reply.count(b".")
    if not reply.startswith(ACK_PREFIX) or dots < _MIN_DOTS:
        return None
    parts = reply.rsplit(b".", 5)
    o = 1 if dots == 11 else 0
    seq, ts = _number(parts[-4 - o]), _number(parts[-2 - o])
    size = _number(tokens[-1])
    hsize = _number(tokens[3]) if h else 0
    if seq is None or ts is None or size is None or hsize is None or hsize > size:
        return None
    body = nl + 2
    if body + size + 2 > len(buf):
        return None
    return (pos, subject, subject + len(tokens[0]), body, body + hsize, body + size, seq, ts)


def scan_simple(buf: bytes, pos: int, sid: bytes) -> tuple[FrameIndex, int]:
    """`scan` frame by frame (the reference `scan_fast` must equal)."""
    rows = []
    while (frame := _regular_frame(buf, pos, sid)) is not None:
        rows.append(frame)
        pos = frame[5] + 2
    return FrameIndex.of(rows), pos  # type: ignore[arg-type]


# -- the whole buffer at once -------------------------------------------------------------------

_U64 = np.uint64
_ZEROS: Final = _U64(0x3030303030303030)
# _KEEP[k]: the mask of a word's last k bytes (its most significant ones)
_KEEP: Final = np.array(
    [((1 << 64) - 1) ^ ((1 << (8 * (8 - k))) - 1) if k else 0 for k in range(9)], np.uint64
)


def _words(a: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """`w[i]` = the 8 bytes `a[i : i + 8]` as a little-endian integer (an overlapping view, no copy)."""
    size = max(0, len(a) - 7)
    words: npt.NDArray[np.uint64] = np.ndarray((size,), dtype="<u8", buffer=a, offset=0, strides=(1,))
    return words


def _load(w: npt.NDArray[np.uint64], at: Ints) -> npt.NDArray[np.uint64]:
    """`w[at]`, positions clipped into `w`: a frame whose checked parts (op, sid, `$JS.ACK.`)
    are where they belong has every word it reads inside the buffer, so a clipped word only
    ever reaches a frame that is refused anyway."""
    if not len(w):
        return np.zeros(len(at), np.uint64)
    # not `w.take(at, mode="clip")`: take copies a strided array whole first
    return w[np.minimum(np.maximum(at, 0), len(w) - 1)]


def _text_word(text: bytes) -> tuple[np.uint64, np.uint64]:
    """`text` (at most 8 bytes) as a little-endian word and the mask of its bytes."""
    return _U64(int.from_bytes(text, "little")), _U64((1 << (8 * len(text))) - 1)


def _matches(w: npt.NDArray[np.uint64], at: Ints, text: bytes) -> npt.NDArray[np.bool_]:
    """Whether `text` is written at each of `at`."""
    ok = np.ones(len(at), np.bool_)
    for k in range(0, len(text), 8):
        word, mask = _text_word(text[k : k + 8])
        ok &= (_load(w, at + k) & mask) == word
    return ok


# the constants of `_eight_digits`, made once (a numpy scalar costs as much to make as to use)
_HIGH_NIBBLES: Final = _U64(0xF0F0F0F0F0F0F0F0)
_PLUS_SIX: Final = _U64(0x0606060606060606)
_ALL_DIGITS: Final = _U64(0x3333333333333333)
_FOUR: Final = _U64(4)
# (mask, multiplier, shift): pairs of digits, then of pairs, then of fours, combined
_COMBINE: Final = tuple(
    (_U64(mask), _U64(times), _U64(shift))
    for mask, times, shift in (
        (0x0F0F0F0F0F0F0F0F, 2561, 8),
        (0x00FF00FF00FF00FF, 6553601, 16),
        (0x0000FFFF0000FFFF, 42949672960001, 32),
    )
)


def _eight_digits(x: npt.NDArray[np.uint64]) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """Eight ASCII digits per word (most significant first in memory) -> their value, and
    whether all eight are digits (the SWAR check and parse of simdjson)."""
    ok = ((x & _HIGH_NIBBLES) | (((x + _PLUS_SIX) & _HIGH_NIBBLES) >> _FOUR)) == _ALL_DIGITS
    for mask, times, shift in _COMBINE:
        x = ((x & mask) * times) >> shift
    return x, ok


# a number's words, last first: how many digits before them (as a power of ten)
_WORD_SCALES: Final = np.array([10 ** (8 * k) for k in range(3)], np.uint64)[:, None]


def _digits(w: npt.NDArray[np.uint64], lo: Ints, hi: Ints) -> tuple[Ints, npt.NDArray[np.bool_]]:
    """The numbers written in `a[lo:hi]` and whether each is 1-19 digits below 9 * 10**18.

    Read right to left in words of 8 bytes, every number's k-th word in one array operation
    (a call costs its operations, whatever their length: one call for several fields);
    the bytes of a word before `lo` count as '0'.
    (A regular frame's numbers start well past the line's first 8 bytes, after `$JS.ACK.`.)"""
    width = hi - lo
    ok = (width >= 1) & (width <= MAX_DIGITS)
    words = min(3, (int(width.max()) + 7) // 8) if len(lo) else 0
    if words <= 0:
        return np.zeros(len(lo), np.int64), ok
    k = np.arange(words)[:, None]
    keep = _KEEP.take(width - 8 * k, mode="clip")  # word k's digits: its last bytes
    part, digits = _eight_digits((_load(w, hi - 8 * (k + 1)) & keep) | (_ZEROS & ~keep))
    ok &= digits.all(axis=0)
    if words == 3:
        ok &= part[2] <= 899  # 19 digits: below 9 * 10**18
    value = (part * _WORD_SCALES[:words]).sum(axis=0, dtype=np.uint64)
    return value.astype(np.int64), ok


def _clip_take(values: Ints, idx: Ints) -> Ints:
    if not len(values):
        return np.zeros(len(idx), np.int64)
    return values.take(idx, mode="clip")


class BytePositions:
    """Where a byte value occurs in `a`, through one mask per thread, reused (a fresh 4 MB
    mask per pass costs its page faults every time)."""

    _local = threading.local()

    def __init__(self, a: npt.NDArray[np.uint8]) -> None:
        self.a = a
        mask = getattr(self._local, "mask", None)
        if mask is None or len(mask) < len(a):
            mask = self._local.mask = np.empty(max(len(a), 1 << 20), np.bool_)
        self.mask: npt.NDArray[np.bool_] = mask

    def of(self, byte: int, skip: int = 0) -> Ints:
        """Positions (from `skip` on, minus `skip`) where `a` holds `byte`."""
        mask = self.mask[: max(0, len(self.a) - skip)]
        np.equal(self.a[skip:], byte, out=mask)
        return np.flatnonzero(mask)


def scan_fast(buf: bytes, pos: int, sid: bytes) -> tuple[FrameIndex, int]:
    """`scan` with numpy passes over the buffer and no Python work per frame (see the docstring)."""
    a = np.frombuffer(buf, np.uint8)[pos:]
    n = len(a)
    w = _words(a)
    found = BytePositions(a)
    lf = found.of(10, 1) + 1
    crlf = lf[a[lf - 1] == 13] - 1  # where each CRLF starts
    if not len(crlf):
        return FrameIndex.empty(), pos
    line_start = np.empty(len(crlf), np.int64)
    line_start[0] = 0
    line_start[1:] = crlf[:-1] + 2
    first = a[line_start]
    cand = np.flatnonzero((first == 77) | (first == 72))  # M, H
    s, e = line_start[cand], crlf[cand]
    h = (first[cand] == 72).astype(np.int64)
    ok = _matches(w, s + h, b"MSG ") & ((h == 0) | (first[cand] == 72))
    keep = np.flatnonzero(ok)
    if not len(keep) or s[keep[0]] != 0:
        return FrameIndex.empty(), pos
    s, e, h = s[keep], e[keep], h[keep]
    subject = s + 4 + h

    spaces = found.of(32)
    at = np.searchsorted(spaces, subject)
    ok = np.searchsorted(spaces, e) - at == 3 + h
    sp1, sp2, sp3, sp4 = (_clip_take(spaces, at + k) for k in range(4))
    ok &= (sp1 > subject) & (sp2 - sp1 - 1 == len(sid)) & _matches(w, sp1, b" " + sid + b" " + ACK_PREFIX)
    ok &= sp3 - sp2 - 1 >= len(ACK_PREFIX)

    dots = found.of(46)
    after = np.searchsorted(dots, sp3)  # the reply's dots: indices below `after`
    ndots = after - np.searchsorted(dots, sp2 + 1)
    ok &= ndots >= _MIN_DOTS
    o = (ndots == 11).astype(np.int64)  # the 12-token layout: a random token after pending

    def dot(k: Ints) -> Ints:  # the k-th dot from the reply's end (1: the last)
        return _clip_take(dots, after - k)

    ts, ok_t = _digits(w, dot(2 + o) + 1, dot(1 + o))  # 19 digits (three words) until 2286
    # the shorter numbers in one call: sequence, size, and header size when there are headers
    m = len(h)
    with_headers = bool(h.any())
    lo = [dot(4 + o) + 1, np.where(h == 1, sp4, sp3) + 1] + ([sp3 + 1] if with_headers else [])
    hi = [dot(3 + o), e] + ([sp4] if with_headers else [])
    numbers, ok_n = _digits(w, np.concatenate(lo), np.concatenate(hi))
    seq, size = numbers[:m], numbers[m : 2 * m]
    ok &= ok_t & ok_n[:m] & ok_n[m : 2 * m]
    if with_headers:
        hsize = np.where(h == 1, numbers[2 * m :], 0)
        ok &= (ok_n[2 * m :] | (h == 0)) & (hsize <= size)
    else:
        hsize = np.zeros(m, np.int64)
    body = e + 2
    end = body + size
    ok &= end + 2 <= n

    keep = np.flatnonzero(ok)
    if not len(keep) or s[keep[0]] != 0:
        return FrameIndex.empty(), pos
    starts, nexts = s[keep], end[keep] + 2
    # The run: frame 0, then the frame starting where it ends, and so on. Almost always each
    # regular candidate follows the previous one; a look-alike inside a payload breaks that.
    broken = np.flatnonzero(nexts[:-1] != starts[1:])
    if len(broken):
        keep = keep[_follow(starts.tolist(), nexts.tolist(), int(broken[0]))]
    rows = [s, subject, sp1, body, body + hsize, end, seq, ts]
    if len(keep) < len(s):  # usually every candidate is a frame of the run
        rows = [row[keep] for row in rows]
    index = FrameIndex(np.stack(rows[:6]) + pos, np.stack(rows[6:]))
    return index, int(index.pos[5, -1]) + 2


def _follow(starts: list[int], nexts: list[int], at: int) -> list[int]:
    """Candidates 0..at, then onwards the one starting where the last ends (while there is one)."""
    chain = list(range(at + 1))
    where = {start: k for k, start in enumerate(starts)}
    k = at
    while (k := where.get(nexts[k], -1)) >= 0:
        chain.append(k)
    return chain
