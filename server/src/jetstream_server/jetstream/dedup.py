"""The dedup table of a stream: `Nats-Msg-Id` -> sequence within `duplicate_window`.

One entry per id stored in the window, kept compact because a sink publishes
every message with an id (a 1M-message fill holds 1M entries for two minutes):

- `_seq_of`: dict id -> sequence (the only per-entry Python objects are the id
  string, which the publish parsed anyway, and the sequence int);
- `_ids`, `_seqs`, `_ts`: the entries in insertion order, a list of the same
  id strings and two `array('q')` columns, read from `_head` on; expired
  entries are skipped by moving `_head` and cut off in bulk once they are half
  the arrays (amortized O(1) per entry, no per-entry node, tuple or deque cell).

Expiry follows insertion order, as nats-server's `ddarr`: entries are recorded
with the publish time, which only grows on one stream, so the oldest entry is
always at `_head`. `prune(now)` is one comparison while nothing is due
(`_due_ns`: when the oldest entry leaves the window); the stream also prunes
on a timer at `due_ns`, as nats-server does, so a table stops holding memory
once publishing stops.

An id recorded again (a rebuild that meets it twice) answers the newest
sequence; its older entry leaves the arrays without touching the dict.

Snapshot form (`to_json` / `from_json`, written on a clean shutdown): the ids
as one JSON list of strings, sequences and timestamps as base64 of
little-endian int64 arrays; the older form, a list of `[id, seq, ts]`
triples, is still read.
"""

from __future__ import annotations

import base64
import bisect
import sys
from array import array
from typing import Any, Final

_CUT_MIN: Final = 1024  # expired entries cut off at once, at least
_NEVER: Final = 1 << 62


class DedupTable:
    """Message ids of one stream within its duplicate window (see module docstring)."""

    __slots__ = ("window_ns", "_seq_of", "_ids", "_seqs", "_ts", "_head", "_due_ns")

    def __init__(self, window_ns: int) -> None:
        self.window_ns = window_ns
        self._seq_of: dict[str, int] = {}
        self._ids: list[str] = []
        self._seqs = array("q")
        self._ts = array("q")
        self._head = 0
        self._due_ns = _NEVER

    def __len__(self) -> int:
        return len(self._seq_of)

    @property
    def due_ns(self) -> int | None:
        """When the oldest entry leaves the window (None: the table is empty)."""
        return self._due_ns if self._due_ns != _NEVER else None

    def lookup(self, msg_id: str, now: int) -> int | None:
        """The sequence stored with `msg_id` within the window, or None."""
        if now >= self._due_ns:
            self.prune(now)
        return self._seq_of.get(msg_id)

    def record(self, msg_id: str, seq: int, ts: int) -> None:
        if not self._seq_of:
            self._due_ns = ts + self.window_ns
        self._seq_of[msg_id] = seq
        self._ids.append(msg_id)
        self._seqs.append(seq)
        self._ts.append(ts)

    def prune(self, now: int) -> None:
        """Forget the ids recorded at or before `now - window`."""
        horizon = now - self.window_ns
        ts, ids, seqs, seq_of = self._ts, self._ids, self._seqs, self._seq_of
        head, end = self._head, len(ts)
        while head < end and ts[head] <= horizon:
            msg_id = ids[head]
            if seq_of.get(msg_id) == seqs[head]:
                del seq_of[msg_id]
            head += 1
        self._due_ns = ts[head] + self.window_ns if head < end else _NEVER
        if head == end:
            ids.clear()
            del seqs[:], ts[:]
            head = 0
        elif head >= _CUT_MIN and head * 2 >= end:
            del ids[:head], seqs[:head], ts[:head]
            head = 0
        self._head = head

    def set_window(self, window_ns: int) -> None:
        """A config update changed `duplicate_window` (applies from the next prune)."""
        self.window_ns = window_ns
        head = self._head
        self._due_ns = self._ts[head] + window_ns if head < len(self._ts) else _NEVER

    def clear(self) -> None:
        self._seq_of.clear()
        self._ids.clear()
        del self._seqs[:], self._ts[:]
        self._head = 0
        self._due_ns = _NEVER

    # -- snapshot ------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        head = self._head
        seqs, ts = self._seqs[head:], self._ts[head:]
        if sys.byteorder != "little":
            seqs.byteswap()
            ts.byteswap()
        return {
            "ids": self._ids[head:],
            "seqs": base64.b64encode(seqs.tobytes()).decode(),
            "ts": base64.b64encode(ts.tobytes()).decode(),
        }

    def load_json(self, body: dict[str, Any], now: int) -> None:
        """Add the entries of `to_json` output still in the window at `now`.
        Raises ValueError (TypeError, KeyError) on a body of the wrong shape."""
        ids = body["ids"]
        if not isinstance(ids, list):
            raise ValueError("dedup ids must be a list")
        if "seqs" not in body:  # the older form: [id, seq, ts] triples
            for msg_id, seq, ts in ids:
                self._add(str(msg_id), int(seq), int(ts), now)
            return
        seqs, tss = array("q"), array("q")
        seqs.frombytes(base64.b64decode(body["seqs"], validate=True))
        tss.frombytes(base64.b64decode(body["ts"], validate=True))
        if sys.byteorder != "little":
            seqs.byteswap()
            tss.byteswap()
        if not len(ids) == len(seqs) == len(tss):
            raise ValueError("dedup snapshot columns disagree in length")
        if not all(type(msg_id) is str for msg_id in ids):
            raise ValueError("dedup ids must be strings")
        if self._seq_of or any(tss[i] > tss[i + 1] for i in range(len(tss) - 1)):
            for msg_id, seq, ts in zip(ids, seqs, tss, strict=True):
                self._add(msg_id, seq, ts, now)
            return
        # the common case, a saved table into an empty one: whole columns at once
        keep = bisect.bisect_right(tss, now - self.window_ns)
        self._ids = ids[keep:] if keep else ids
        self._seqs, self._ts = seqs[keep:], tss[keep:]
        self._seq_of = dict(zip(self._ids, self._seqs, strict=True))
        self._head = 0
        self._due_ns = self._ts[0] + self.window_ns if self._ts else _NEVER

    def _add(self, msg_id: str, seq: int, ts: int, now: int) -> None:
        if ts > now - self.window_ns:
            self.record(msg_id, seq, ts)
