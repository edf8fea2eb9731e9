"""The in-memory message index shared by both store backends.

One `MessageIndex` per stream holds everything about a message except its
payload, in compact parallel arrays (no Python object per message), one
*entry* per message that exists or whose record a backend still holds:

- `seqs`  array('q')  sequence (strictly increasing along the entries)
- `ts`    array('q')  timestamp in ns
- `sids`  array('I')  subject id, or `DELETED` once removed
- `sizes` array('I')  the store's `msg_size()` (0 once deleted)
- any backend `columns` (memory: payload list; file: record offsets), kept
  aligned with the entries.

Sequences with no entry (never stored, lost in recovery, or dropped by
compaction) cost nothing: memory follows the number of entries, not the
sequence span, so one old message that pins `first_seq` while millions of
updates come and go (a KV bucket) does not grow the index. Removed entries are
dropped in bulk (`_compact`) once they are many: all of them for memory, and
for the file store those whose record is known gone (`gone` marker column).
While entries are gap-free (`seqs[i] == seqs[0] + i`, the common case) a
position is plain arithmetic; otherwise a bisect.

Per subject id: name, message count, first and last sequence (arrays too).
Subject ids are recycled when a subject's count drops to 0.

Invariants (checked by tests/server/unit/test_store.py through both backends):
- `first_seq` is the lowest present sequence, or `last_seq + 1` when empty.
- `msgs`/`bytes` equal the number/sum of sizes of present entries.
- For a live subject, `s_first`/`s_last` are its lowest/highest present sequence.
- `known_from`: below it, entries may have been trimmed without knowing
  whether a backend still holds their records (the file store is
  conservative there).
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
from itertools import compress
from typing import Any

from jetstream_server.store.base import StoreError, StoreState, SubjectInfo
from jetstream_server.store.filters import filter_selects, is_literal, normalize
from jetstream_server.store.subject_trie import SubjectTrie

DELETED = 0xFFFFFFFF
MAX_SUBJECT_IDS = (1 << 24) - 1
_FF4 = b"\xff\xff\xff\xff"
_COMPACT_MIN = 4096
_FIRST_CHUNK = 64
_MAX_CHUNK = 1 << 16
_FILTER_CACHE_MAX = 16  # every new subject is matched against each cached filter
_FEW_SUBJECTS = 16


class MessageIndex:
    """Sequences, timestamps, sizes and the per-subject index of one stream."""

    def __init__(self, columns: Sequence[Any] = (), gone: tuple[int, Any] | None = None) -> None:
        """`columns` are backend arrays/lists kept aligned with the entries;
        `gone = (column, value)` says a removed entry may only be dropped once
        that column holds `value` (None: removed entries may always go)."""
        self.seqs = array("q")
        self.ts = array("q")
        self.sids = array("I")
        self.sizes = array("I")
        self.columns: list[Any] = list(columns)
        self._gone = gone
        self._dense = True
        self.known_from = 1
        self.first_seq = 1
        self.last_seq = 0
        self.last_ts = 0
        self.msgs = 0
        self.bytes = 0
        self._compact_at = _COMPACT_MIN
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
        self._trie: SubjectTrie | None = None  # built by the first wildcard look-up

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
        if self._trie is not None:
            self._trie.add(subject, sid)
        for key, members in self._fcache.items():
            if any(filter_selects(f, subject) for f in key):
                members.add(sid)
        return sid

    def release_if_unused(self, sid: int) -> None:
        """Forget a subject interned for a message that was never stored."""
        if self.s_msgs[sid] == 0 and self.names[sid]:
            self._release(sid)

    def _release(self, sid: int) -> None:
        if self._trie is not None:
            self._trie.remove(self.names[sid])
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
            trie = self._trie
            if trie is None:
                trie = self._trie = SubjectTrie()
                for name, sid in self.sid_of.items():
                    trie.add(name, sid)
            # a walk of the branches the filters can match, not of every subject
            members = set().union(*(trie.match(f) for f in norm))
            self._fcache[norm] = members
        if len(members) == len(self.sid_of):
            return None  # the filter covers every subject there is (a KV watch)
        return members

    def subject_info(self, subject: str) -> SubjectInfo | None:
        sid = self.sid_of.get(subject)
        if sid is None:
            return None
        return SubjectInfo(self.s_msgs[sid], self.s_first[sid], self.s_last[sid])

    def subject_counts(self, subject_filter: str | None) -> dict[str, int]:
        """Messages per matching subject, unordered: no per-subject object, no sort."""
        sids = self.resolve(subject_filter)
        names, msgs = self.names, self.s_msgs
        return {names[sid]: msgs[sid] for sid in (self.sid_of.values() if sids is None else sids)}

    def count_subjects(self, subject_filter: str | None) -> int:
        sids = self.resolve(subject_filter)
        return len(self.sid_of) if sids is None else len(sids)

    def subjects(self, subject_filter: str | None) -> dict[str, SubjectInfo]:
        sids = self.resolve(subject_filter)
        if sids is None:
            sids = list(self.sid_of.values())
        out = {
            self.names[sid]: SubjectInfo(self.s_msgs[sid], self.s_first[sid], self.s_last[sid])
            for sid in sids
        }
        return dict(sorted(out.items(), key=lambda kv: kv[1].first_seq))

    # -- positions -------------------------------------------------------------
    def lower(self, seq: int) -> int:
        """Position of the first entry with sequence >= seq."""
        seqs = self.seqs
        if self._dense:
            if not seqs:
                return 0
            pos = seq - seqs[0]
            n = len(seqs)
            return 0 if pos < 0 else (n if pos > n else pos)
        return bisect.bisect_left(seqs, seq)

    def pos_of(self, seq: int) -> int:
        """Position of the entry for `seq`, or -1 when there is none."""
        pos = self.lower(seq)
        return pos if pos < len(self.seqs) and self.seqs[pos] == seq else -1

    def _recheck_dense(self) -> None:
        seqs = self.seqs
        self._dense = not seqs or seqs[-1] - seqs[0] == len(seqs) - 1

    # -- writing ---------------------------------------------------------------
    def append(
        self,
        subject: str,
        timestamp_ns: int,
        size: int,
        seq: int | None = None,
        sid: int | None = None,
    ) -> int:
        """Add a present message at `seq` (default `last_seq + 1`); return its sequence.
        `sid` is the subject's id when the caller interned it already. The
        backend appends to its columns itself."""
        if seq is None:
            seq = self.last_seq + 1
        elif seq <= self.last_seq:
            raise StoreError(f"sequence {seq} is not above last sequence {self.last_seq}")
        seqs = self.seqs
        if seqs and seqs[-1] != seq - 1:
            self._dense = False
        if sid is None:
            sid = self._intern(subject)
        seqs.append(seq)
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
        if self.seqs and self.seqs[-1] != first_seq - 1:
            self._dense = False
        if self.msgs == 0:
            self.first_seq = first_seq
        self.seqs.extend(range(first_seq, first_seq + n))
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
        self.last_seq = seq
        if self.msgs == 0:
            self.first_seq = seq + 1

    def present(self, seq: int) -> bool:
        return self.present_at(seq) >= 0

    def present_at(self, seq: int) -> int:
        """Position of `seq` when it is present, else -1."""
        if seq < self.first_seq or seq > self.last_seq:
            return -1
        pos = self.pos_of(seq)
        return pos if pos >= 0 and self.sids[pos] != DELETED else -1

    def subject_at(self, seq: int) -> str:
        return self.names[self.sids[self.pos_of(seq)]]

    def remove(self, seq: int) -> int:
        """Mark `seq` deleted; return its size, or -1 when it was not present."""
        if seq < self.first_seq or seq > self.last_seq:
            return -1
        pos = self.pos_of(seq)
        if pos < 0:
            return -1
        sid = self.sids[pos]
        if sid == DELETED:
            return -1
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
        self.maybe_compact()
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
            self._drop_front(len(self.seqs))
            self.first_seq = seq
            self.known_from = seq
            self._reset_subjects()
            return removed
        if seq <= self.first_seq:
            return 0
        lo, hi = self.lower(self.first_seq), self.lower(seq)
        counts = Counter(self.sids[lo:hi])
        counts.pop(DELETED, None)
        removed = sum(counts.values())
        self.msgs -= removed
        self.bytes -= sum(self.sizes[lo:hi])
        # mark instead of cutting: cutting the arrays on every compact would
        # memmove the whole index each time (a max_msgs stream compacts per publish)
        self.sids[lo:hi] = array("I", [DELETED]) * (hi - lo)
        self.sizes[lo:hi] = array("I", [0]) * (hi - lo)
        for col in self.columns:
            if not isinstance(col, array):
                col[lo:hi] = [None] * (hi - lo)  # release payloads now
        for sid, n in counts.items():
            left = self.s_msgs[sid] - n
            self.s_msgs[sid] = left
            if left == 0:
                self._release(sid)
            elif self.s_first[sid] < seq:
                self.s_first[sid] = self._find(sid, seq, self.s_last[sid])
        self.first_seq = self._next_present(seq)
        self.maybe_compact()
        return removed

    def _drop_front(self, n: int) -> None:
        """Drop the first `n` entries (all below `first_seq`) from every column."""
        if n <= 0:
            return
        if n < len(self.seqs):
            self.known_from = max(self.known_from, self.seqs[n])
        else:
            self.known_from = max(self.known_from, self.last_seq + 1)
        del self.seqs[:n]
        del self.ts[:n]
        del self.sids[:n]
        del self.sizes[:n]
        for col in self.columns:
            del col[:n]
        self._recheck_dense()

    def maybe_compact(self) -> None:
        """Drop removed entries once they are many (amortized O(1) per removal)."""
        dead = len(self.seqs) - self.msgs
        if dead >= self._compact_at and dead * 2 >= len(self.seqs):
            self._compact()

    def _compact(self) -> None:
        sids = self.sids
        if self._gone is None:
            keep = [sid != DELETED for sid in sids]
        else:
            col, value = self.columns[self._gone[0]], self._gone[1]
            keep = [sid != DELETED or v != value for sid, v in zip(sids, col, strict=True)]
        # the removed entries in front go as a block; `known_from` follows them
        front = 0
        for k in keep:
            if k:
                break
            front += 1
        self._drop_front(front)
        keep = keep[front:]
        if not all(keep):
            self.seqs = array("q", compress(self.seqs, keep))
            self.ts = array("q", compress(self.ts, keep))
            self.sids = array("I", compress(self.sids, keep))
            self.sizes = array("I", compress(self.sizes, keep))
            for col in self.columns:
                kept = compress(col, keep)
                if isinstance(col, array):
                    col[:] = array(col.typecode, kept)
                else:
                    col[:] = list(kept)
        self._recheck_dense()
        # removed entries a backend still needs stay; do not retry until they double
        self._compact_at = max(_COMPACT_MIN, 2 * (len(self.seqs) - self.msgs))

    # -- scans -----------------------------------------------------------------
    def _find(self, sid: int, lo_seq: int, hi_seq: int) -> int:
        """Lowest sequence in [lo_seq, hi_seq] with subject id `sid`, or 0."""
        lo, hi = self.lower(max(lo_seq, self.first_seq)), self.lower(hi_seq + 1)
        if lo >= hi:
            return 0
        try:
            return self.seqs[self.sids.index(sid, lo, hi)]
        except ValueError:
            return 0

    def _rfind(self, sid: int, lo_seq: int, hi_seq: int) -> int:
        """Highest sequence in [lo_seq, hi_seq] with subject id `sid`, or 0."""
        lo, hi = self.lower(max(lo_seq, self.first_seq)), self.lower(hi_seq + 1)
        chunk = _FIRST_CHUNK
        while hi > lo:
            start = max(lo, hi - chunk)
            part = self.sids[start:hi]
            part.reverse()
            try:
                return self.seqs[hi - 1 - part.index(sid)]
            except ValueError:
                hi = start
                chunk = min(chunk * 2, _MAX_CHUNK)
        return 0

    def _next_present(self, seq: int) -> int:
        """Lowest present sequence >= seq, or `last_seq + 1`."""
        pos = self.lower(seq)
        end = len(self.sids)
        if pos < end and self.sids[pos] != DELETED:
            return self.seqs[pos]  # the common case: `seq` itself (or the next entry) is there
        chunk = _FIRST_CHUNK
        while pos < end:
            raw = self.sids[pos : min(end, pos + chunk)].tobytes()
            skipped = (len(raw) - len(raw.lstrip(b"\xff"))) // 4
            if skipped * 4 < len(raw):
                return self.seqs[pos + skipped]
            pos += len(raw) // 4
            chunk = min(chunk * 2, _MAX_CHUNK)
        return self.last_seq + 1

    def _prev_present(self, seq: int) -> int:
        """Highest present sequence <= seq (and >= first_seq), or 0."""
        lo = self.lower(self.first_seq)
        hi = self.lower(seq + 1)
        chunk = _FIRST_CHUNK
        while hi > lo:
            start = max(lo, hi - chunk)
            raw = self.sids[start:hi].tobytes()
            skipped = (len(raw) - len(raw.rstrip(b"\xff"))) // 4
            if skipped * 4 < len(raw):
                return self.seqs[hi - 1 - skipped]
            hi = start
            chunk = min(chunk * 2, _MAX_CHUNK)
        return 0

    def _present_between(self, lo: int, hi: int) -> int:
        """Present entries among positions [lo, hi)."""
        if lo >= hi:
            return 0
        return hi - lo - self.sids[lo:hi].tobytes().count(_FF4)

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
        pos = self.lower(start)
        end = len(self.sids)
        chunk = _FIRST_CHUNK * 16
        while pos < end:
            part = self.sids[pos : min(end, pos + chunk)]
            for i, sid in enumerate(part):
                if sid in wanted:
                    return self.seqs[pos + i]
            pos += len(part)
            chunk = min(chunk * 2, _MAX_CHUNK)
        return 0

    def _scan_backward(self, start: int, wanted: Collection[int]) -> int:
        lo = self.lower(self.first_seq)
        hi = self.lower(start + 1)
        chunk = _FIRST_CHUNK * 16
        while hi > lo:
            begin = max(lo, hi - chunk)
            part = self.sids[begin:hi]
            part.reverse()
            for i, sid in enumerate(part):
                if sid in wanted:
                    return self.seqs[hi - 1 - i]
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
            return self._present_between(self.lower(start), len(self.sids))
        lo = self.lower(start)
        span = len(self.sids) - lo
        if len(sids) > _FEW_SUBJECTS and len(sids) * 8 > span:
            counts = Counter(self.sids[lo:])
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
            total += self.sids[lo : self.lower(self.s_last[sid] + 1)].count(sid)
        elif straddle:
            end = self.lower(max(self.s_last[sid] for sid in straddle) + 1)
            counts = Counter(self.sids[lo:end])
            total += sum(counts[sid] for sid in straddle)
        return total

    def seq_keeping_newest(self, keep: int) -> int:
        """The sequence of the `keep`-th newest present message (1 <= keep <= msgs)."""
        n = len(self.sids)
        lo, hi = self.lower(self.first_seq), n - 1  # present_between(lo, n) >= keep
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._present_between(mid, n) >= keep:
                lo = mid
            else:
                hi = mid - 1
        return self.seqs[lo]

    def seqs_matching(
        self, sids: Collection[int] | None, lo_seq: int, hi_seq: int, limit: int
    ) -> list[int]:
        """Up to `limit` present sequences in [lo_seq, hi_seq] matching `sids`, ascending."""
        out: list[int] = []
        lo = self.lower(max(lo_seq, self.first_seq))
        hi = self.lower(min(hi_seq, self.last_seq) + 1)
        if lo >= hi or limit <= 0:
            return out
        wanted = None if sids is None else set(sids)
        seqs = self.seqs
        for i, sid in enumerate(self.sids[lo:hi], lo):
            if sid != DELETED and (wanted is None or sid in wanted):
                out.append(seqs[i])
                if len(out) >= limit:
                    break
        return out

    def seq_for_time(self, timestamp_ns: int) -> int:
        if self.msgs == 0:
            return self.last_seq + 1
        pos = bisect.bisect_left(self.ts, timestamp_ns, self.lower(self.first_seq))
        if pos >= len(self.ts):
            return self.last_seq + 1
        return self._next_present(self.seqs[pos])

    def deleted(self) -> list[int]:
        """Every absent sequence between first_seq and last_seq."""
        out: list[int] = []
        if self.msgs == 0:
            return out
        expect = self.first_seq
        seqs = self.seqs
        for i, sid in enumerate(
            self.sids[self.lower(self.first_seq) :], self.lower(self.first_seq)
        ):
            if sid == DELETED:
                continue
            seq = seqs[i]
            if seq > expect:
                out.extend(range(expect, seq))
            expect = seq + 1
        out.extend(range(expect, self.last_seq + 1))
        return out

    def total_msgs(self, sids: Iterable[int]) -> int:
        return sum(self.s_msgs[sid] for sid in sids)

    def first_seq_for(self, sids: Iterable[int]) -> int:
        return min((self.s_first[sid] for sid in sids), default=0)

    # -- snapshot --------------------------------------------------------------
    def export(self) -> tuple[dict[str, Any], dict[str, array]]:
        """Everything needed to rebuild this index without a scan (file store snapshot)."""
        meta = {
            "known_from": self.known_from,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "last_ts": self.last_ts,
            "msgs": self.msgs,
            "bytes": self.bytes,
            "names": self.names,
        }
        arrays = {
            "seqs": self.seqs,
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
        length = len(arrays["seqs"])
        if not all(len(arrays[k]) == length for k in ("ts", "sids", "sizes")):
            raise ValueError("snapshot arrays disagree in length")
        if not all(len(arrays[k]) == len(names) for k in ("s_msgs", "s_first", "s_last")):
            raise ValueError("snapshot subject arrays disagree with the subject names")
        self._reset_subjects()
        self.known_from = int(meta["known_from"])
        self.first_seq = int(meta["first_seq"])
        self.last_seq = int(meta["last_seq"])
        self.last_ts = int(meta["last_ts"])
        self.msgs = int(meta["msgs"])
        self.bytes = int(meta["bytes"])
        self.seqs, self.ts = arrays["seqs"], arrays["ts"]
        self.sids, self.sizes = arrays["sids"], arrays["sizes"]
        self.s_msgs, self.s_first, self.s_last = (
            arrays["s_msgs"],
            arrays["s_first"],
            arrays["s_last"],
        )
        self.names = names
        self.sid_of = {name: sid for sid, name in enumerate(names) if name}
        self.free = [sid for sid, name in enumerate(names) if not name]
        self._recheck_dense()
        self._compact_at = max(_COMPACT_MIN, 2 * (length - self.msgs))
        if sum(self.s_msgs) != self.msgs or len(self.sid_of) + len(self.free) != len(names):
            raise ValueError("snapshot subject counts disagree with the message count")
        if length and (self.seqs[-1] > self.last_seq or self.seqs[0] < 1):
            raise ValueError("snapshot sequences fall outside the stream's range")

    def state(self) -> StoreState:
        return StoreState(
            msgs=self.msgs,
            bytes=self.bytes,
            first_seq=self.first_seq,
            first_ts_ns=self.ts[self.lower(self.first_seq)] if self.msgs else 0,
            last_seq=self.last_seq,
            last_ts_ns=self.last_ts,
            num_deleted=max(0, self.last_seq - self.first_seq + 1 - self.msgs),
            num_subjects=len(self.sid_of),
        )
