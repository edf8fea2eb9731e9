"""The in-memory message index shared by both store backends.

One `MessageIndex` per stream holds everything about a message except its
payload, in compact parallel arrays addressed by position
`seq - base` (no Python object per message):

- `ts`    array('q')  timestamp in ns
- `sids`  array('I')  subject id, or `DELETED` for an absent sequence
- `sizes` array('I')  `message_size()` (0 once deleted)
- any backend `columns` (memory: payload list; file: record offsets), kept
  aligned by `append`/`trim`; a gap (a sequence with no message at all) gets
  the column's `pad` value.

Per subject id: name, message count, first and last sequence (arrays too).
Subject ids are recycled when a subject's count drops to 0.

Invariants (checked by tests/test_store.py through both backends):
- `len(arrays) == last_seq - base + 1` and `base <= first_seq`.
- `first_seq` is the lowest present sequence, or `last_seq + 1` when empty.
- `msgs`/`bytes` equal the number/sum of sizes of present positions.
- For a live subject, `s_first`/`s_last` are its lowest/highest present sequence.
- Subject ids stay below 2**24, so a valid id never encodes as four 0xFF bytes
  (the byte-level scans for runs of `DELETED` rely on that).

Scans run in C where possible (`array.index`, `array.count`, bytes
`lstrip`/`count`) in chunks that grow, because the answer is usually near.
"""

from __future__ import annotations

import bisect
from array import array
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from server.store.base import StoreError, StoreState, SubjectInfo
from server.store.filters import is_literal, normalize, subject_matches

DELETED = 0xFFFFFFFF
MAX_SUBJECT_IDS = (1 << 24) - 1
_FF4 = b"\xff\xff\xff\xff"
_TRIM_MIN = 4096
_FIRST_CHUNK = 64
_MAX_CHUNK = 1 << 16
_FILTER_CACHE_MAX = 64
_FEW_SUBJECTS = 16


class MessageIndex:
    """Sequences, timestamps, sizes and the per-subject index of one stream."""

    def __init__(self, columns: Sequence[Any] = (), pads: Sequence[Any] | None = None) -> None:
        self.base = 1
        self.ts = array("q")
        self.sids = array("I")
        self.sizes = array("I")
        self.columns: list[Any] = list(columns)
        # what a column holds at a position that never had a message (gaps)
        self.pads: list[Any] = list(pads) if pads is not None else [None] * len(self.columns)
        self.first_seq = 1
        self.last_seq = 0
        self.last_ts = 0
        self.msgs = 0
        self.bytes = 0
        self._reset_subjects()

    def _reset_subjects(self) -> None:
        self.sid_of: dict[str, int] = {}
        self.names: list[str] = []
        self.s_msgs = array("q")
        self.s_first = array("q")
        self.s_last = array("q")
        self.free: list[int] = []
        # wildcard filter tuple -> live subject ids matching it, kept up to date
        self._fcache: dict[tuple[str, ...], set[int]] = {}

    # -- subjects --------------------------------------------------------------
    def _intern(self, subject: str) -> int:
        sid = self.sid_of.get(subject)
        if sid is not None:
            return sid
        if self.free:
            sid = self.free.pop()
            self.names[sid] = subject
        else:
            sid = len(self.names)
            if sid >= MAX_SUBJECT_IDS:
                raise StoreError(
                    f"too many distinct subjects in one stream (limit {MAX_SUBJECT_IDS})"
                )
            self.names.append(subject)
            self.s_msgs.append(0)
            self.s_first.append(0)
            self.s_last.append(0)
        self.sid_of[subject] = sid
        for key, members in self._fcache.items():
            if any(subject_matches(f, subject) for f in key):
                members.add(sid)
        return sid

    def _release(self, sid: int) -> None:
        del self.sid_of[self.names[sid]]
        self.names[sid] = ""
        self.free.append(sid)
        for members in self._fcache.values():
            members.discard(sid)

    def resolve(self, filters: Sequence[str] | str | None) -> Collection[int] | None:
        """Live subject ids matching any filter; None means "every subject".

        A wildcard result is a cached set kept current as subjects come and go
        (callers only read it); more than a few ids always come as a set."""
        norm = normalize(filters)
        if norm is None:
            return None
        if all(is_literal(f) for f in norm):
            sid_of = self.sid_of
            found = {sid_of[f] for f in norm if f in sid_of}
            return found if len(found) > _FEW_SUBJECTS else list(found)
        members = self._fcache.get(norm)
        if members is None:
            if len(self._fcache) >= _FILTER_CACHE_MAX:
                self._fcache.clear()
            members = {
                sid
                for sid, name in enumerate(self.names)
                if name and any(subject_matches(f, name) for f in norm)
            }
            self._fcache[norm] = members
        if len(members) == len(self.sid_of):
            return None  # the filter covers every subject there is (a KV watch)
        return members

    def subject_info(self, subject: str) -> SubjectInfo | None:
        sid = self.sid_of.get(subject)
        if sid is None:
            return None
        return SubjectInfo(self.s_msgs[sid], self.s_first[sid], self.s_last[sid])

    def subjects(self, subject_filter: str | None) -> dict[str, SubjectInfo]:
        sids = self.resolve(subject_filter)
        if sids is None:
            sids = list(self.sid_of.values())
        out = {
            self.names[sid]: SubjectInfo(self.s_msgs[sid], self.s_first[sid], self.s_last[sid])
            for sid in sids
        }
        return dict(sorted(out.items(), key=lambda kv: kv[1].first_seq))

    # -- writing ---------------------------------------------------------------
    def append(self, subject: str, timestamp_ns: int, size: int, seq: int | None = None) -> int:
        """Add a present message at `seq` (default `last_seq + 1`); return its sequence.

        A `seq` beyond `last_seq + 1` (recovery after lost records) leaves the
        gap as deleted positions."""
        if seq is None:
            seq = self.last_seq + 1
        elif seq <= self.last_seq:
            raise StoreError(f"sequence {seq} is not above last sequence {self.last_seq}")
        elif seq > self.last_seq + 1:
            if self.msgs == 0:
                self._clear_positions(seq)
            else:
                gap = seq - self.last_seq - 1
                self.ts.extend(array("q", [timestamp_ns]) * gap)
                self.sids.extend(array("I", [DELETED]) * gap)
                self.sizes.extend(array("I", [0]) * gap)
                self._pad_columns(gap)
        sid = self._intern(subject)
        self.ts.append(timestamp_ns)
        self.sids.append(sid)
        self.sizes.append(size)
        if self.s_msgs[sid] == 0:
            self.s_first[sid] = seq
        self.s_msgs[sid] += 1
        self.s_last[sid] = seq
        if self.msgs == 0:
            self.first_seq = seq
        self.msgs += 1
        self.bytes += size
        self.last_seq = seq
        self.last_ts = timestamp_ns
        return seq

    def intern(self, subject: str) -> int:
        """The subject's id, creating it (with no messages yet) if needed. Used
        with `extend_run`, which must follow before any removal."""
        return self._intern(subject)

    def extend_run(self, first_seq: int, sids: array, ts: array, sizes: array) -> None:
        """Append messages `first_seq, first_seq + 1, ...` at once (recovery scan).

        Same result as calling `append` for each; the caller fills the backend
        columns itself right after."""
        n = len(sids)
        if not n:
            return
        if first_seq <= self.last_seq:
            raise StoreError(f"sequence {first_seq} is not above last sequence {self.last_seq}")
        self.advance_last(first_seq - 1)
        if self.msgs == 0:
            self.first_seq = first_seq
        self.ts.extend(ts)
        self.sids.extend(sids)
        self.sizes.extend(sizes)
        counts = Counter(sids)
        last_at = {sid: i for i, sid in enumerate(sids)}
        fresh = [sid for sid in counts if self.s_msgs[sid] == 0]
        if len(fresh) > _FEW_SUBJECTS:
            first_at = {sid: i for i, sid in reversed(list(enumerate(sids)))}
        else:
            first_at = {sid: sids.index(sid) for sid in fresh}
        s_msgs, s_first, s_last = self.s_msgs, self.s_first, self.s_last
        for sid, count in counts.items():
            if s_msgs[sid] == 0:
                s_first[sid] = first_seq + first_at[sid]
            s_msgs[sid] += count
            s_last[sid] = first_seq + last_at[sid]
        self.msgs += n
        self.bytes += sum(sizes)
        self.last_seq = first_seq + n - 1
        self.last_ts = ts[-1]

    def advance_last(self, seq: int) -> None:
        """Make `last_seq` at least `seq`; the skipped sequences are absent."""
        if seq <= self.last_seq:
            return
        if self.msgs == 0:
            self.last_seq = seq
            self._clear_positions(seq + 1)
            return
        gap = seq - self.last_seq
        self.ts.extend(array("q", [self.last_ts]) * gap)
        self.sids.extend(array("I", [DELETED]) * gap)
        self.sizes.extend(array("I", [0]) * gap)
        self._pad_columns(gap)
        self.last_seq = seq

    def _pad_columns(self, gap: int) -> None:
        for col, pad in zip(self.columns, self.pads, strict=True):
            if isinstance(col, array):
                col.extend(array(col.typecode, [pad]) * gap)
            else:
                col.extend([pad] * gap)

    def present(self, seq: int) -> bool:
        return self.first_seq <= seq <= self.last_seq and self.sids[seq - self.base] != DELETED

    def subject_at(self, seq: int) -> str:
        return self.names[self.sids[seq - self.base]]

    def remove(self, seq: int) -> int:
        """Mark `seq` deleted; return its size, or -1 when it was not present."""
        if not self.present(seq):
            return -1
        pos = seq - self.base
        sid = self.sids[pos]
        size = self.sizes[pos]
        self.sids[pos] = DELETED
        self.sizes[pos] = 0
        self.msgs -= 1
        self.bytes -= size
        count = self.s_msgs[sid] - 1
        self.s_msgs[sid] = count
        if count == 0:
            self._release(sid)
        elif seq == self.s_first[sid]:
            self.s_first[sid] = self._find(sid, seq + 1, self.s_last[sid])
        elif seq == self.s_last[sid]:
            self.s_last[sid] = self._rfind(sid, self.s_first[sid], seq - 1)
        if seq == self.first_seq:
            self.first_seq = self._next_present(seq + 1)
            self._maybe_trim()
        return size

    def floor(self, seq: int) -> int:
        """Remove every sequence below `seq` (nats-server `Compact`); return how many.

        A `seq` beyond `last_seq` empties the index and makes `seq` the next
        sequence to be stored."""
        if seq > self.last_seq:
            removed = self.msgs
            self.msgs = 0
            self.bytes = 0
            self.last_seq = max(self.last_seq, seq - 1)
            self._clear_positions(seq)
            self._reset_subjects()
            return removed
        if seq <= self.first_seq:
            return 0
        lo, hi = self.first_seq - self.base, seq - self.base
        counts = Counter(self.sids[lo:hi])
        counts.pop(DELETED, None)
        removed = sum(counts.values())
        self.msgs -= removed
        self.bytes -= sum(self.sizes[lo:hi])
        # mark instead of cutting: trimming the arrays on every compact would
        # memmove the whole index each time (a max_msgs stream compacts per publish)
        self.sids[lo:hi] = array("I", [DELETED]) * (hi - lo)
        self.sizes[lo:hi] = array("I", [0]) * (hi - lo)
        for col, pad in zip(self.columns, self.pads, strict=True):
            if not isinstance(col, array):
                col[lo:hi] = [pad] * (hi - lo)  # release payloads now
        for sid, n in counts.items():
            left = self.s_msgs[sid] - n
            self.s_msgs[sid] = left
            if left == 0:
                self._release(sid)
            elif self.s_first[sid] < seq:
                self.s_first[sid] = self._find(sid, seq, self.s_last[sid])
        self.first_seq = self._next_present(seq)
        self._maybe_trim()
        return removed

    def _clear_positions(self, base: int) -> None:
        self.trim(len(self.sids))
        self.base = base
        self.first_seq = base

    def trim(self, n: int) -> None:
        """Drop the first `n` positions (all below `first_seq`) from every column."""
        if n <= 0:
            return
        del self.ts[:n]
        del self.sids[:n]
        del self.sizes[:n]
        for col in self.columns:
            del col[:n]
        self.base += n

    def _maybe_trim(self) -> None:
        dead = self.first_seq - self.base
        if dead >= _TRIM_MIN and dead * 2 >= len(self.sids):
            self.trim(dead)

    # -- scans -----------------------------------------------------------------
    def _find(self, sid: int, lo_seq: int, hi_seq: int) -> int:
        """Lowest sequence in [lo_seq, hi_seq] with subject id `sid`, or 0."""
        lo, hi = max(lo_seq, self.first_seq) - self.base, hi_seq - self.base + 1
        if lo >= hi:
            return 0
        try:
            return self.sids.index(sid, lo, hi) + self.base
        except ValueError:
            return 0

    def _rfind(self, sid: int, lo_seq: int, hi_seq: int) -> int:
        """Highest sequence in [lo_seq, hi_seq] with subject id `sid`, or 0."""
        lo, hi = max(lo_seq, self.first_seq) - self.base, hi_seq - self.base + 1
        chunk = _FIRST_CHUNK
        while hi > lo:
            start = max(lo, hi - chunk)
            part = self.sids[start:hi]
            part.reverse()
            try:
                return hi - 1 - part.index(sid) + self.base
            except ValueError:
                hi = start
                chunk = min(chunk * 2, _MAX_CHUNK)
        return 0

    def _next_present(self, seq: int) -> int:
        """Lowest present sequence >= seq, or `last_seq + 1`."""
        pos = max(seq, self.first_seq if self.msgs else seq) - self.base
        end = len(self.sids)
        chunk = _FIRST_CHUNK
        while pos < end:
            raw = self.sids[pos : min(end, pos + chunk)].tobytes()
            skipped = (len(raw) - len(raw.lstrip(b"\xff"))) // 4
            if skipped * 4 < len(raw):
                return self.base + pos + skipped
            pos += len(raw) // 4
            chunk = min(chunk * 2, _MAX_CHUNK)
        return self.last_seq + 1

    def _prev_present(self, seq: int) -> int:
        """Highest present sequence <= seq, or 0."""
        lo = self.first_seq - self.base
        hi = min(seq, self.last_seq) - self.base + 1
        chunk = _FIRST_CHUNK
        while hi > lo:
            start = max(lo, hi - chunk)
            raw = self.sids[start:hi].tobytes()
            skipped = (len(raw) - len(raw.rstrip(b"\xff"))) // 4
            if skipped * 4 < len(raw):
                return self.base + hi - 1 - skipped
            hi = start
            chunk = min(chunk * 2, _MAX_CHUNK)
        return 0

    def _deleted_between(self, lo_seq: int, hi_seq: int) -> int:
        if lo_seq > hi_seq:
            return 0
        raw = self.sids[lo_seq - self.base : hi_seq - self.base + 1].tobytes()
        return raw.count(_FF4)

    def next_seq(self, start_seq: int, sids: Collection[int] | None) -> int:
        """First present sequence >= start_seq with a subject in `sids` (None = any), or 0."""
        start = max(start_seq, self.first_seq)
        if start > self.last_seq or self.msgs == 0:
            return 0
        if sids is None:
            found = self._next_present(start)
            return found if found <= self.last_seq else 0
        if len(sids) > _FEW_SUBJECTS:
            return self._scan_forward(start, sids)
        best = 0
        s_first, s_last = self.s_first, self.s_last
        for sid in sids:
            if s_last[sid] < start:
                continue
            hi = s_last[sid] if not best else min(best - 1, s_last[sid])
            found = self._find(sid, max(start, s_first[sid]), hi)
            if found:
                best = found
        return best

    def _scan_forward(self, start: int, wanted: Collection[int]) -> int:
        pos = start - self.base
        end = len(self.sids)
        chunk = _FIRST_CHUNK * 16
        while pos < end:
            part = self.sids[pos : min(end, pos + chunk)]
            for i, sid in enumerate(part):
                if sid in wanted:
                    return self.base + pos + i
            pos += len(part)
            chunk = min(chunk * 2, _MAX_CHUNK)
        return 0

    def _scan_backward(self, start: int, wanted: Collection[int]) -> int:
        lo = self.first_seq - self.base
        hi = start - self.base + 1
        chunk = _FIRST_CHUNK * 16
        while hi > lo:
            begin = max(lo, hi - chunk)
            part = self.sids[begin:hi]
            part.reverse()
            for i, sid in enumerate(part):
                if sid in wanted:
                    return self.base + hi - 1 - i
            hi = begin
            chunk = min(chunk * 2, _MAX_CHUNK)
        return 0

    def prev_seq(self, start_seq: int, sids: Collection[int] | None) -> int:
        """Last present sequence <= start_seq with a subject in `sids` (None = any), or 0."""
        start = min(start_seq, self.last_seq)
        if start < self.first_seq or self.msgs == 0:
            return 0
        if sids is None:
            return self._prev_present(start)
        if len(sids) > _FEW_SUBJECTS:
            return self._scan_backward(start, sids)
        best = 0
        for sid in sids:
            if self.s_first[sid] > start:
                continue
            lo = self.s_first[sid] if not best else max(best + 1, self.s_first[sid])
            found = self._rfind(sid, lo, min(start, self.s_last[sid]))
            if found:
                best = found
        return best

    def last_seq_for(self, sids: Collection[int] | None) -> int:
        if sids is None:
            return self._prev_present(self.last_seq) if self.msgs else 0
        if len(sids) > _FEW_SUBJECTS:
            return self.prev_seq(self.last_seq, sids)
        return max((self.s_last[sid] for sid in sids), default=0)

    def count_from(self, start_seq: int, sids: Collection[int] | None) -> int:
        """Present messages with seq >= start_seq and a subject in `sids`."""
        start = max(start_seq, self.first_seq)
        if start > self.last_seq or self.msgs == 0:
            return 0
        if sids is None:
            if start == self.first_seq:
                return self.msgs
            return self.last_seq - start + 1 - self._deleted_between(start, self.last_seq)
        span = self.last_seq - start + 1
        if len(sids) > _FEW_SUBJECTS and len(sids) * 8 > span:
            counts = Counter(self.sids[start - self.base :])
            return sum(n for sid, n in counts.items() if sid in sids)
        total = 0
        straddle: list[int] = []
        for sid in sids:
            if self.s_first[sid] >= start:
                total += self.s_msgs[sid]
            elif self.s_last[sid] >= start:
                straddle.append(sid)
        if len(straddle) == 1:
            sid = straddle[0]
            total += self.sids[start - self.base : self.s_last[sid] - self.base + 1].count(sid)
        elif straddle:
            end = max(self.s_last[sid] for sid in straddle) - self.base + 1
            counts = Counter(self.sids[start - self.base : end])
            total += sum(counts[sid] for sid in straddle)
        return total

    def seq_keeping_newest(self, keep: int) -> int:
        """The sequence of the `keep`-th newest present message (1 <= keep <= msgs)."""
        if self.last_seq - self.first_seq + 1 == self.msgs:
            return self.last_seq - keep + 1
        lo, hi = self.first_seq, self.last_seq  # count_from(lo) >= keep
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.count_from(mid, None) >= keep:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def seqs_matching(
        self, sids: Collection[int] | None, lo_seq: int, hi_seq: int, limit: int
    ) -> list[int]:
        """Up to `limit` present sequences in [lo_seq, hi_seq] matching `sids`, ascending."""
        out: list[int] = []
        lo = max(lo_seq, self.first_seq)
        hi = min(hi_seq, self.last_seq)
        if lo > hi or limit <= 0:
            return out
        wanted = None if sids is None else set(sids)
        base = self.base
        for i, sid in enumerate(self.sids[lo - base : hi - base + 1]):
            if sid != DELETED and (wanted is None or sid in wanted):
                out.append(lo + i)
                if len(out) >= limit:
                    break
        return out

    def seq_for_time(self, timestamp_ns: int) -> int:
        if self.msgs == 0:
            return self.last_seq + 1
        lo = self.first_seq - self.base
        pos = bisect.bisect_left(self.ts, timestamp_ns, lo)
        if pos >= len(self.ts):
            return self.last_seq + 1
        return self._next_present(self.base + pos)

    def deleted(self) -> list[int]:
        out: list[int] = []
        if self.msgs == 0:
            return out
        pos = self.first_seq - self.base
        end = self.last_seq - self.base + 1
        while True:
            try:
                pos = self.sids.index(DELETED, pos, end)
            except ValueError:
                return out
            out.append(pos + self.base)
            pos += 1

    def total_msgs(self, sids: Iterable[int]) -> int:
        return sum(self.s_msgs[sid] for sid in sids)

    def first_seq_for(self, sids: Iterable[int]) -> int:
        return min((self.s_first[sid] for sid in sids), default=0)

    # -- snapshot --------------------------------------------------------------
    def export(self) -> tuple[dict[str, Any], dict[str, array]]:
        """Everything needed to rebuild this index without a scan (file store snapshot)."""
        meta = {
            "base": self.base,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "last_ts": self.last_ts,
            "msgs": self.msgs,
            "bytes": self.bytes,
            "names": self.names,
        }
        arrays = {
            "ts": self.ts,
            "sids": self.sids,
            "sizes": self.sizes,
            "s_msgs": self.s_msgs,
            "s_first": self.s_first,
            "s_last": self.s_last,
        }
        return meta, arrays

    def restore(self, meta: dict[str, Any], arrays: dict[str, array]) -> None:
        """Load what `export` produced; raises ValueError when it is inconsistent."""
        names = list(meta["names"])
        length = int(meta["last_seq"]) - int(meta["base"]) + 1
        if not all(len(arrays[k]) == length for k in ("ts", "sids", "sizes")):
            raise ValueError("snapshot arrays disagree with the sequence range")
        if not all(len(arrays[k]) == len(names) for k in ("s_msgs", "s_first", "s_last")):
            raise ValueError("snapshot subject arrays disagree with the subject names")
        self._reset_subjects()
        self.base = int(meta["base"])
        self.first_seq = int(meta["first_seq"])
        self.last_seq = int(meta["last_seq"])
        self.last_ts = int(meta["last_ts"])
        self.msgs = int(meta["msgs"])
        self.bytes = int(meta["bytes"])
        self.ts, self.sids, self.sizes = arrays["ts"], arrays["sids"], arrays["sizes"]
        self.s_msgs, self.s_first, self.s_last = (
            arrays["s_msgs"],
            arrays["s_first"],
            arrays["s_last"],
        )
        self.names = names
        self.sid_of = {name: sid for sid, name in enumerate(names) if name}
        self.free = [sid for sid, name in enumerate(names) if not name]
        if sum(self.s_msgs) != self.msgs or len(self.sid_of) + len(self.free) != len(names):
            raise ValueError("snapshot subject counts disagree with the message count")

    def state(self) -> StoreState:
        return StoreState(
            msgs=self.msgs,
            bytes=self.bytes,
            first_seq=self.first_seq,
            first_ts_ns=self.ts[self.first_seq - self.base] if self.msgs else 0,
            last_seq=self.last_seq,
            last_ts_ns=self.last_ts,
            num_deleted=max(0, self.last_seq - self.first_seq + 1 - self.msgs),
            num_subjects=len(self.sid_of),
        )
