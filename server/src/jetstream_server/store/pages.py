"""Pages of the message index: summaries always in memory, columns on demand.

`MessageIndex` keeps one *entry* per message (sequence, timestamp, subject id,
size, and a backend's own columns such as a block offset) in `Page`s of at
most `PAGE_ENTRIES` consecutive entries. What a page says about its entries
as a whole is always in memory (a few hundred bytes):

- `first`/`last`: its first and last entry sequence; `n` entries, `live` of
  them present, `bytes` their sizes' sum, `first_ts` the first's timestamp;
- `subjects`: subject id -> present count, or None once more than
  `SUBJECTS_CAP` distinct subjects are in the page (then a filter must look);
- `dead`: a bitmap of removed entries (None while none is), so a removal never
  touches the columns: they change only when the page is rebuilt.

The columns (`cols`, parallel arrays) are only needed to look at single
entries. A page whose columns are not needed can drop them: its *image* (the
columns' raw bytes) is kept in a `PageSwap`, a scratch file private to the
open store (the loaded snapshot, renamed, is its first content), and read back
on demand. The last page of an index (the one appended to) is never dropped.
How many columns stay loaded is bounded by `PageBudget`, one knob for the
process (`set_index_budget`, or the environment variable
`JETSTREAM_INDEX_BUDGET` read at start, e.g. "64MB"; default
`DEFAULT_INDEX_BUDGET`), shared evenly by the open indexes that page (file
stores; a memory store never pages).

Invariants: `live == n - popcount(dead)`; `bytes` and `subjects` count exactly
the present entries (`subjects` is None for the last page, which is appended
to); a page's image, when `dirty` is False, holds exactly its columns. The
swap is scratch this process wrote itself, or a snapshot whose whole-file
checksum was verified when it was opened: images are read back without a
checksum of their own (a page fault stays cheap).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from array import array
from pathlib import Path
from typing import Any, Final

log = logging.getLogger(__name__)

PAGE_ENTRIES = 4096  # not Final: tests set smaller pages, and a compiled build inlines Final values
SUBJECTS_CAP: Final = 32
DEFAULT_INDEX_BUDGET: Final = 32 * 1024 * 1024
MIN_PAGES_PER_INDEX: Final = 4
# the columns every index has: seqs, ts, sids, sizes
BASE_TYPECODES: Final = ("q", "q", "I", "I")

def popcount(bits: bytes | bytearray) -> int:
    """Set bits in a bitmap."""
    return int.from_bytes(bits, "little").bit_count() if bits else 0


class Page:
    """One page of entries: summary always, columns while loaded."""

    __slots__ = (
        "first", "last", "n", "live", "bytes", "subjects", "first_ts",
        "dead", "cols", "image", "dirty",
    )

    def __init__(self, cols: list[Any] | None) -> None:
        self.first = 0
        self.last = 0
        self.n = 0
        self.live = 0
        self.bytes = 0
        self.subjects: dict[int, int] | None = {}
        self.first_ts = 0
        self.dead: bytearray | None = None
        self.cols = cols
        self.image: tuple[int, int, int] | None = None  # (offset, length, crc) in the swap
        self.dirty = True

    # -- entries -----------------------------------------------------------
    @property
    def dense(self) -> bool:
        return self.last - self.first == self.n - 1

    def is_dead(self, i: int) -> bool:
        dead = self.dead
        return dead is not None and i >> 3 < len(dead) and bool(dead[i >> 3] & (1 << (i & 7)))

    def mark_dead(self, i: int) -> None:
        dead = self.dead
        if dead is None:
            dead = self.dead = bytearray((max(i + 1, self.n) + 7) >> 3)
        elif i >> 3 >= len(dead):
            dead.extend(bytes((i >> 3) + 1 - len(dead)))
        dead[i >> 3] |= 1 << (i & 7)

    def fit_dead(self) -> None:
        """The bitmap covers every entry (after entries were added)."""
        dead = self.dead
        if dead is not None and len(dead) < (self.n + 7) >> 3:
            dead.extend(bytes(((self.n + 7) >> 3) - len(dead)))

    def dead_in(self, lo: int, hi: int) -> int:
        """Removed entries among positions [lo, hi)."""
        dead = self.dead
        if dead is None or lo >= hi:
            return 0
        if lo == 0 and hi >= self.n:
            return self.n - self.live
        total = 0
        while lo < hi and lo & 7:
            total += (dead[lo >> 3] >> (lo & 7)) & 1
            lo += 1
        while hi > lo and hi & 7:
            hi -= 1
            total += (dead[hi >> 3] >> (hi & 7)) & 1
        if hi > lo:
            total += popcount(dead[lo >> 3 : hi >> 3])
        return total

    def next_live(self, i: int) -> int:
        """First present position >= i, or `n`."""
        dead, n = self.dead, self.n
        if dead is None:
            return i if i < n else n
        while i < n and i & 7:
            if not (dead[i >> 3] >> (i & 7)) & 1:
                return i
            i += 1
        if i >= n:
            return n
        byte = i >> 3
        rest = bytes(dead[byte : (n + 7) >> 3])
        skip = len(rest) - len(rest.lstrip(b"\xff"))
        i = (byte + skip) << 3
        while i < n:
            if not (dead[i >> 3] >> (i & 7)) & 1:
                return i
            i += 1
        return n

    def prev_live(self, i: int) -> int:
        """Last present position <= i, or -1."""
        dead = self.dead
        if i >= self.n:
            i = self.n - 1
        if dead is None:
            return i
        while i >= 0 and (i + 1) & 7:
            if not (dead[i >> 3] >> (i & 7)) & 1:
                return i
            i -= 1
        if i < 0:
            return -1
        end = (i + 1) >> 3
        rest = bytes(dead[:end])
        skip = len(rest) - len(rest.rstrip(b"\xff"))
        i = ((end - skip) << 3) - 1
        while i >= 0:
            if not (dead[i >> 3] >> (i & 7)) & 1:
                return i
            i -= 1
        return -1

    def live_mask(self, lo: int, hi: int) -> list[bool]:
        """Present flags of positions [lo, hi) (for `itertools.compress`)."""
        dead = self.dead
        if dead is None:
            return [True] * (hi - lo)
        return [not (dead[i >> 3] >> (i & 7)) & 1 for i in range(lo, hi)]

    def resident_bytes(self) -> int:
        cols = self.cols
        if cols is None:
            return 0
        return sum(c.itemsize * len(c) if isinstance(c, array) else 8 * len(c) for c in cols)


class PageSwap:
    """A scratch file of page images, private to one open store.

    Images are appended (never rewritten in place); `adopt` keeps the file's
    present content (a loaded snapshot renamed to this path, whose images the
    pages point at). The file means nothing after the store is closed or the
    process dies: the store removes it on close, and on open before anything."""

    def __init__(self, path: Path, *, adopt: bool = False) -> None:
        flags = os.O_RDWR | os.O_CREAT | (0 if adopt else os.O_TRUNC)
        self.path = path
        self.fd = os.open(path, flags, 0o600)
        self.size = os.fstat(self.fd).st_size
        self.written = 0  # bytes appended since open (garbage accounting)

    def write(self, cols: list[array[int]]) -> tuple[int, int, int]:
        """Append a page image; its (offset, length, crc), crc 0: not kept."""
        raw = b"".join(col.tobytes() for col in cols)
        offset = self.size
        view = memoryview(raw)
        pos = 0
        while pos < len(raw):
            pos += os.pwrite(self.fd, view[pos:], offset + pos)
        self.size += len(raw)
        self.written += len(raw)
        return offset, len(raw), 0

    def read_raw(self, image: tuple[int, int, int]) -> bytes:
        offset, length, _crc = image
        raw = os.pread(self.fd, length, offset)
        while len(raw) < length:
            more = os.pread(self.fd, length - len(raw), offset + len(raw))
            if not more:
                break
            raw += more
        if len(raw) != length:
            raise OSError(f"index page image at {offset} in {self.path.name} is cut short")
        return raw

    def read(self, image: tuple[int, int, int], typecodes: tuple[str, ...], n: int) -> list[array[int]]:
        raw = memoryview(self.read_raw(image))
        cols: list[array[int]] = []
        pos = 0
        for code in typecodes:
            col = array(code)
            end = pos + col.itemsize * n
            col.frombytes(raw[pos:end])
            cols.append(col)
            pos = end
        return cols

    def close(self, unlink: bool = True) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if unlink:
            self.path.unlink(missing_ok=True)


class PageBudget:
    """How many bytes of page columns the paging indexes of this process keep
    loaded: each gets an even share (at least `MIN_PAGES_PER_INDEX` pages).
    Thread-safe: indexes on different threads only register and read."""

    def __init__(self, total_bytes: int = DEFAULT_INDEX_BUDGET) -> None:
        self._lock = threading.Lock()
        self._total = total_bytes
        self._members = 0

    @property
    def total(self) -> int:
        return self._total

    def set_total(self, total_bytes: int) -> None:
        if total_bytes < 0:
            raise ValueError("the index budget must not be negative")
        with self._lock:
            self._total = total_bytes

    def join(self) -> None:
        with self._lock:
            self._members += 1

    def leave(self) -> None:
        with self._lock:
            self._members = max(0, self._members - 1)

    def share(self) -> int:
        """The bytes one member may keep loaded now."""
        return self._total // max(1, self._members)


BUDGET_ENV: Final = "JETSTREAM_INDEX_BUDGET"
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS: Final = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_budget(text: str) -> int:
    """Bytes from "67108864", "64MB", "64M", "1g" (binary units); ValueError
    naming the problem otherwise."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a size (bytes, or a number with K, M, G or T)")
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


def _budget_from_env() -> int:
    text = os.environ.get(BUDGET_ENV)
    if not text:
        return DEFAULT_INDEX_BUDGET
    try:
        return parse_budget(text)
    except ValueError as err:
        log.warning("%s: %s; using %d bytes", BUDGET_ENV, err, DEFAULT_INDEX_BUDGET)
        return DEFAULT_INDEX_BUDGET


SHARED_BUDGET: Final = PageBudget(_budget_from_env())


def set_index_budget(total_bytes: int) -> None:
    """Set the process-wide budget for loaded index pages (bytes)."""
    SHARED_BUDGET.set_total(total_bytes)


def index_budget() -> int:
    return SHARED_BUDGET.total
