"""The message index shared by both store backends, in pages.

One `MessageIndex` per stream holds everything about a message except its
payload: one *entry* per message that exists or whose record a backend still
holds, with four columns (sequence, timestamp, subject id, the store's
`msg_size()`) plus a backend's own (memory: the payload; file: the record's
offset in its block). Entries live in `pages.Page`s of at most
`PAGE_ENTRIES`, in sequence order; pages never overlap.

What stays in memory whatever the stream's size:
- per page, its summary (first/last sequence, entries, present count and
  bytes, present count per subject while the page has few, the removed
  bitmap): a few hundred bytes per `PAGE_ENTRIES` messages;
- per subject, the `SubjectTable` (count, first and last sequence);
- the stream's counters.
A page's columns are loaded when a single entry is looked at, and with a
`PageSwap` (the file store) dropped again least-recently-used first when the
loaded pages pass the process's `PageBudget`; without one (memory store) they
stay. Removing a message sets a bit in its page's bitmap; the columns change
only when a page is rebuilt (`rebuild_range`, or a memory store's page with
many removed entries).

Sequences with no entry (never stored, lost in recovery, dropped by a block
rewrite) cost nothing. Whole pages below a floor are dropped at once;
`known_from` says below which sequence entries may have been dropped without
knowing whether a backend still holds their records (the file store is
conservative there).

Invariants (checked by tests/server/unit/test_store.py through both backends
and tests/server/unit/test_index_pages.py):
- `first_seq` is the lowest present sequence, or `last_seq + 1` when empty.
- `msgs`/`bytes` equal the number/sum of sizes of present entries, and each
  equals the sum of its pages' `live`/`bytes`.
- For a live subject, `s_first`/`s_last` are its lowest/highest present sequence.
- Every page holds at least one entry; `firsts[k] == pages[k].first`.
"""

from __future__ import annotations

import bisect
from array import array
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from itertools import compress
from typing import Any

from jetstream_server.store.base import StoreError, StoreState, SubjectInfo
from jetstream_server.store.pages import (
    BASE_TYPECODES,
    MIN_PAGES_PER_INDEX,
    PAGE_ENTRIES,
    SHARED_BUDGET,
    SUBJECTS_CAP,
    Page,
    PageBudget,
    PageSwap,
)
from jetstream_server.store.subject_table import FEW_SUBJECTS, SubjectTable

SEQS, TS, SIDS, SIZES, EXTRA = 0, 1, 2, 3, 4
COMPACT_MIN = 64  # removed entries a memory store's page sheds at the least

Loc = tuple[Page, int]


def _rindex(col: array[int], value: int, lo: int, hi: int) -> int:
    """Highest position in [lo, hi) holding `value`, or -1."""
    part = col[lo:hi]
    part.reverse()
    try:
        return hi - 1 - part.index(value)
    except ValueError:
        return -1


class MessageIndex:
    """Entries, per-page summaries and the per-subject table of one stream."""

    def __init__(
        self,
        extra: Sequence[str | None] = (),  # at most one
        swap: PageSwap | None = None,
        budget: PageBudget | None = None,
        *,
        drop_removed: bool = True,
    ) -> None:
        """`extra`: the backend's columns, an array typecode each (None: a
        list, which cannot be paged out). `swap`: where pages go when their
        columns are dropped (None: they never are). `drop_removed`: removed
        entries may be forgotten (False for the file store: their records
        stay on disk until a block rewrite, `rebuild_range`)."""
        self._drop_removed = drop_removed
        if len(extra) > 1:
            raise ValueError("an index has at most one backend column")
        self._extra = tuple(extra)
        self._typecodes = BASE_TYPECODES + tuple(c or "" for c in self._extra)
        self._row_bytes = sum(array(c).itemsize for c in BASE_TYPECODES) + sum(
            array(c).itemsize if c else 8 for c in self._extra
        )
        self._lists = tuple(EXTRA + k for k, c in enumerate(self._extra) if not c)
        self._swap = swap
        self._budget = budget or SHARED_BUDGET
        self._lru: OrderedDict[int, Page] = OrderedDict()
        self._loaded = 0  # bytes of loaded columns of pages in `_lru`
        if swap is not None:
            self._budget.join()
        self.pages: list[Page] = []
        self.firsts: list[int] = []
        # the page of the last look-up and the most recently used loaded page:
        # reads in order stay in one page for thousands of look-ups
        self._hot: Page | None = None
        self._hot_k = 0  # the number of `_hot` in `pages`
        self.mru: Page | None = None
        self._seal = False
        # the page `append` may go on filling without a look (loaded, last, not
        # sealed); None sends it the slow way (`_tail_for`)
        self._tail: Page | None = None
        self.known_from = 1
        self.first_seq = 1
        self.last_seq = 0
        self.last_ts = 0
        self.msgs = 0
        self.bytes = 0
        self.removals = 0  # grows with every removal (readers holding entries check it)
        self._first_ts: tuple[int, int] = (0, 0)  # (seq, ts) of the last first_ts look-up
        self.subj = subj = SubjectTable()
        # the table's containers, for the stores (never replaced, see SubjectTable)
        self.sid_of = subj.sid_of
        self.names = subj.names
        self.resolve = subj.resolve  # once per filtered read: no extra frame
        self._s_msgs, self._s_first, self._s_last = subj.s_msgs, subj.s_first, subj.s_last

    def intern(self, subject: str) -> int:
        """The subject's id, creating it (with no messages yet) if needed."""
        return self.subj.intern(subject)

    def release_if_unused(self, sid: int) -> None:
        """Forget a subject interned for a message that was never stored."""
        subj = self.subj
        if subj.s_msgs[sid] == 0 and subj.names[sid]:
            subj.release(sid)

    def subject_info(self, subject: str) -> SubjectInfo | None:
        return self.subj.info(subject)

    def subjects(self, subject_filter: str | None) -> dict[str, SubjectInfo]:
        return self.subj.infos(subject_filter)

    def subject_counts(self, subject_filter: str | None) -> dict[str, int]:
        return self.subj.counts(subject_filter)

    def count_subjects(self, subject_filter: str | None) -> int:
        return self.subj.count(subject_filter)

    def total_msgs(self, sids: Iterable[int]) -> int:
        s_msgs = self.subj.s_msgs
        return sum(s_msgs[sid] for sid in sids)

    def first_seq_for(self, sids: Iterable[int]) -> int:
        s_first = self.subj.s_first
        return min((s_first[sid] for sid in sids), default=0)

    # -- pages and their columns ------------------------------------------------
    def _new_cols(self) -> list[Any]:
        return [array(c) for c in BASE_TYPECODES] + [array(c) if c else [] for c in self._extra]

    def cols(self, page: Page) -> list[Any]:
        """The page's columns, loaded if they were dropped (counts as a use)."""
        cols = page.cols
        if cols is None:
            cols = self._load(page)
        elif page is not self.mru and self._swap is not None:
            key = id(page)
            if key in self._lru:
                self._lru.move_to_end(key)
        self.mru = page
        return cols

    def _load(self, page: Page) -> list[Any]:
        assert self._swap is not None and page.image is not None
        try:
            cols: list[Any] = self._swap.read(page.image, self._typecodes, page.n)
        except OSError as err:
            raise StoreError(f"index page of sequences {page.first}-{page.last}: {err}") from err
        page.cols = cols
        page.dirty = False
        self._track(page)
        return cols

    def _track(self, page: Page) -> None:
        """A loaded page other than the last: counted against the budget."""
        if self._swap is None or page.cols is None:
            return
        key = id(page)
        if key in self._lru:
            self._lru.move_to_end(key)
            return
        self._lru[key] = page
        self._loaded += page.n * self._row_bytes
        self._enforce()

    def _untrack(self, page: Page) -> None:
        if self._lru.pop(id(page), None) is not None:
            self._loaded -= page.n * self._row_bytes

    def _enforce(self) -> None:
        share = self._budget.share()
        lru = self._lru
        while self._loaded > share and len(lru) > MIN_PAGES_PER_INDEX:
            _key, page = lru.popitem(last=False)
            self._loaded -= page.n * self._row_bytes
            self._page_out(page)

    def _page_out(self, page: Page) -> None:
        """Drop a page's columns (its image is written first when it changed)."""
        swap = self._swap
        if swap is None or page.cols is None:
            return
        if page.dirty or page.image is None:
            try:
                page.image = swap.write(page.cols)
            except OSError as err:
                raise StoreError(f"writing an index page to {swap.path.name} failed: {err}") from err
            page.dirty = False
        page.cols = None

    def page_out_all(self) -> None:
        """Drop every page's columns but the last's (tests; memory pressure)."""
        for page in list(self._lru.values()):
            self._untrack(page)
            self._page_out(page)

    @property
    def entries(self) -> int:
        """Entries in all pages (present and removed ones still kept)."""
        return sum(page.n for page in self.pages)

    @property
    def loaded_bytes(self) -> int:
        """Bytes of loaded columns counted against the budget."""
        return self._loaded

    def attach_swap(self, swap: PageSwap) -> None:
        """Page out to `swap` from now on (pages restored from a snapshot
        have their images in it)."""
        if self._swap is None:
            self._budget.join()
        self._swap = swap

    def close(self) -> None:
        """Leave the budget; the swap is the backend's to close."""
        if self._swap is not None:
            self._budget.leave()
            self._swap = None
            self._lru.clear()
            self._loaded = 0

    def seal(self) -> None:
        """The next entry starts a new page (the file store seals at each
        block, so that a block's entries are whole pages)."""
        self._seal = True
        self._tail = None

    def _new_page(self, seq: int) -> Page:
        pages = self.pages
        if pages:
            last = pages[-1]
            last.dirty = True  # appended to since it was loaded or made
            if last.subjects is None and last.cols is not None:
                self._count_subjects(last)
            self._track(last)  # no longer the last: it may be paged out now
        page = Page(self._new_cols())
        page.subjects = None
        page.first = seq
        pages.append(page)
        self.firsts.append(seq)
        self._seal = False
        self._tail = page
        return page

    def _count_subjects(self, page: Page) -> None:
        """The page's present count per subject, if it has few subjects."""
        sids = page.cols[SIDS] if page.cols is not None else self.cols(page)[SIDS]
        if page.dead is not None:
            sids = array("I", compress(sids, page.live_mask(0, page.n)))
        counts = Counter(sids)
        page.subjects = dict(counts) if len(counts) <= SUBJECTS_CAP else None

    def _tail_for(self, seq: int) -> Page:
        """The page the entry `seq` goes to: the last one, loaded and counting
        no subjects while it is the last, or a new one."""
        pages = self.pages
        if not pages or self._seal or pages[-1].n >= PAGE_ENTRIES:
            return self._new_page(seq)
        page = pages[-1]
        if page.cols is None:  # a last page loaded from a snapshot
            self._untrack(page)
            self._load(page)
        self._untrack(page)  # the last page is never paged out
        page.subjects = None
        self._tail = page
        return page

    def _drop_pages(self, lo: int, hi: int) -> None:
        self._hot = self.mru = self._tail = None
        for page in self.pages[lo:hi]:
            self._untrack(page)
        del self.pages[lo:hi]
        del self.firsts[lo:hi]

    # -- positions -----------------------------------------------------------------
    def _page_no(self, seq: int) -> int:
        """Index of the last page whose first sequence is <= seq (-1 if none)."""
        hot = self._hot
        if hot is not None and hot.first <= seq <= hot.last:
            return self._hot_k
        firsts = self.firsts
        if firsts and seq >= firsts[-1]:
            return len(firsts) - 1
        k = bisect.bisect_right(firsts, seq) - 1
        if k >= 0:
            self._hot, self._hot_k = self.pages[k], k
        return k

    def _pos(self, page: Page, seq: int) -> int:
        """Position in `page` of the first entry with sequence >= seq."""
        if seq <= page.first:
            return 0
        if seq > page.last:
            return page.n
        if page.last - page.first == page.n - 1:
            return seq - page.first
        return bisect.bisect_left(self.cols(page)[SEQS], seq)

    def _lower(self, seq: int) -> tuple[int, int]:
        """(page number, position) of the first entry with sequence >= seq;
        the page number is `len(pages)` when there is none."""
        k = self._page_no(seq)
        if k < 0:
            return 0, 0
        page = self.pages[k]
        if seq > page.last:
            return k + 1, 0
        return k, self._pos(page, seq)

    def seq_at(self, page: Page, i: int) -> int:
        if page.last - page.first == page.n - 1:
            return page.first + i
        return int(self.cols(page)[SEQS][i])

    def locate(self, seq: int) -> Loc | None:
        """The entry for `seq` (present or removed), or None."""
        page = self._hot
        if page is None or seq < page.first or seq > page.last:
            k = self._page_no(seq)
            if k < 0:
                return None
            page = self.pages[k]
            if seq > page.last:
                return None
            self._hot, self._hot_k = page, k
        if page.last - page.first == page.n - 1:
            return page, seq - page.first
        seqs = self.cols(page)[SEQS]
        i = bisect.bisect_left(seqs, seq)
        return (page, i) if i < page.n and seqs[i] == seq else None

    def has_entry(self, seq: int) -> bool:
        return self.locate(seq) is not None

    def present_loc(self, seq: int) -> Loc | None:
        """The entry for `seq` when it is present, else None."""
        if seq < self.first_seq or seq > self.last_seq:
            return None
        page = self._hot
        if (
            page is not None
            and page.first <= seq <= page.last
            and page.last - page.first == page.n - 1
        ):  # the hot path: a dense page read in order
            i = seq - page.first
            dead = page.dead
            if dead is None or not (dead[i >> 3] >> (i & 7)) & 1:
                return page, i
            return None
        loc = self.locate(seq)
        if loc is None or loc[0].is_dead(loc[1]):
            return None
        return loc

    def present(self, seq: int) -> bool:
        return self.present_loc(seq) is not None

    def subject_at(self, seq: int) -> str:
        loc = self.locate(seq)
        if loc is None:
            raise KeyError(seq)
        return str(self.subj.names[self.cols(loc[0])[SIDS][loc[1]]])

    def size_of(self, seq: int) -> int:
        loc = self.locate(seq)
        return 0 if loc is None else int(self.cols(loc[0])[SIZES][loc[1]])

    def extra_of(self, seq: int, col: int = 0) -> Any:
        loc = self.locate(seq)
        if loc is None:
            raise KeyError(seq)
        return self.cols(loc[0])[EXTRA + col][loc[1]]

    def set_extra(self, loc: Loc, col: int, value: Any) -> None:
        page, i = loc
        self.cols(page)[EXTRA + col][i] = value
        page.dirty = True

    # -- writing ---------------------------------------------------------------
    def append(
        self,
        subject: str,
        timestamp_ns: int,
        size: int,
        seq: int | None = None,
        sid: int | None = None,
        value: Any = None,
    ) -> int:
        """Add a present message at `seq` (default `last_seq + 1`); return its
        sequence. `sid` is the subject's id when the caller interned it
        already; `value` the backend column's. (Once per publish: kept lean;
        the last page's `dirty` is set when it stops being the last.)"""
        if seq is None:
            seq = self.last_seq + 1
        elif seq <= self.last_seq:
            raise StoreError(f"sequence {seq} is not above last sequence {self.last_seq}")
        if sid is None:
            sid = self.subj.intern(subject)
        page = self._tail
        if page is None or page.n >= PAGE_ENTRIES:
            page = self._tail_for(seq)
        cols = page.cols
        assert cols is not None
        if not page.n:
            page.first_ts = timestamp_ns
        cols[0].append(seq)
        cols[1].append(timestamp_ns)
        cols[2].append(sid)
        cols[3].append(size)
        if self._extra:
            cols[4].append(value)
        page.n += 1
        if page.dead is not None:
            page.fit_dead()
        page.last = seq
        page.live += 1
        page.bytes += size
        # the last page's `subjects` stays None (unknown) until it is the last no
        # more (`_new_page` counts them): no dict update per publish
        s_msgs = self._s_msgs
        if not s_msgs[sid]:
            self._s_first[sid] = seq
        s_msgs[sid] += 1
        self._s_last[sid] = seq
        if not self.msgs:
            self.first_seq = seq
        self.msgs += 1
        self.bytes += size
        self.last_seq = seq
        self.last_ts = timestamp_ns
        return seq

    def extend_run(
        self, first_seq: int, sids: array[int], ts: array[int], sizes: array[int], extra: Sequence[array[int]] = ()
    ) -> None:
        """Append messages `first_seq, first_seq + 1, ...` at once (recovery scan).
        Same result as calling `append` for each."""
        n = len(sids)
        if not n:
            return
        if first_seq <= self.last_seq:
            raise StoreError(f"sequence {first_seq} is not above last sequence {self.last_seq}")
        done = 0
        while done < n:
            seq = first_seq + done
            page = self._tail_for(seq)
            cols = page.cols
            assert cols is not None
            take = min(PAGE_ENTRIES - page.n, n - done)
            end = done + take
            if page.n == 0:
                page.first_ts = ts[done]
            cols[SEQS].extend(range(seq, seq + take))
            cols[TS].extend(ts[done:end])
            part = sids[done:end]
            cols[SIDS].extend(part)
            part_sizes = sizes[done:end]
            cols[SIZES].extend(part_sizes)
            for k, col in enumerate(extra, EXTRA):
                cols[k].extend(col[done:end])
            page.n += take
            page.fit_dead()
            page.last = seq + take - 1
            page.live += take
            page.bytes += sum(part_sizes)
            page.dirty = True
            done = end
        subj = self.subj
        counts = Counter(sids)
        last_at = {sid: i for i, sid in enumerate(sids)}
        fresh = [sid for sid in counts if subj.s_msgs[sid] == 0]
        if len(fresh) > FEW_SUBJECTS:
            first_at = {sid: i for i, sid in reversed(list(enumerate(sids)))}
        else:
            first_at = {sid: sids.index(sid) for sid in fresh}
        s_msgs, s_first, s_last = subj.s_msgs, subj.s_first, subj.s_last
        for sid, count in counts.items():
            if s_msgs[sid] == 0:
                s_first[sid] = first_seq + first_at[sid]
            s_msgs[sid] += count
            s_last[sid] = first_seq + last_at[sid]
        if self.msgs == 0:
            self.first_seq = first_seq
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

    def _kill(self, page: Page, i: int, sid: int, size: int) -> None:
        """Mark one present entry removed in its page's summary (a payload
        column lets go of the payload now)."""
        if self._lists:
            cols = page.cols
            assert cols is not None
            for k in self._lists:
                cols[k][i] = None
        page.mark_dead(i)
        page.live -= 1
        page.bytes -= size
        counts = page.subjects
        if counts is not None:
            left = counts[sid] - 1
            if left:
                counts[sid] = left
            else:
                del counts[sid]

    def remove(self, seq: int) -> int:
        """Mark `seq` removed; return its size, or -1 when it was not present."""
        loc = self.present_loc(seq)
        if loc is None:
            return -1
        page, i = loc
        cols = self.cols(page)
        sid = cols[SIDS][i]
        size: int = cols[SIZES][i]
        self.removals += 1
        self._kill(page, i, sid, size)
        self.msgs -= 1
        self.bytes -= size
        subj = self.subj
        count = subj.s_msgs[sid] - 1
        subj.s_msgs[sid] = count
        if count == 0:
            subj.release(sid)
        elif seq == subj.s_first[sid]:
            subj.s_first[sid] = (
                subj.s_last[sid] if count == 1 else self._find(sid, seq + 1, subj.s_last[sid])
            )
        elif seq == subj.s_last[sid]:
            subj.s_last[sid] = (
                subj.s_first[sid] if count == 1 else self._rfind(sid, subj.s_first[sid], seq - 1)
            )
        if seq == self.first_seq:
            self.first_seq = self._next_present(seq + 1)
        self._maybe_compact(page)
        return size

    def floor(self, seq: int) -> int:
        """Remove every sequence below `seq` (nats-server `Compact`); return how many.

        A `seq` beyond `last_seq` empties the index and makes `seq` the next
        sequence to be stored. Whole pages below `seq` are dropped."""
        if seq > self.last_seq:
            self.removals += 1
            removed = self.msgs
            self.msgs = 0
            self.bytes = 0
            self.last_seq = max(self.last_seq, seq - 1)
            self._drop_pages(0, len(self.pages))
            self.first_seq = seq
            self.known_from = max(self.known_from, seq)
            self.subj.clear()
            return removed
        if seq <= self.first_seq:
            return 0
        self.removals += 1
        k, i = self._lower(seq)
        counts: Counter[int] = Counter()
        removed = 0
        nbytes = 0
        for page in self.pages[:k]:
            if not page.live:
                continue
            removed += page.live
            nbytes += page.bytes
            if page.subjects is not None:
                counts.update(page.subjects)
            else:
                cols = self.cols(page)
                counts.update(compress(cols[SIDS], page.live_mask(0, page.n)))
        self._drop_pages(0, k)
        self.known_from = max(self.known_from, self.firsts[0] if self.firsts else seq)
        if i and self.pages:
            page = self.pages[0]
            cols = self.cols(page)
            sids, sizes = cols[SIDS], cols[SIZES]
            j = page.next_live(0)
            while j < i:
                sid, size = sids[j], sizes[j]
                self._kill(page, j, sid, size)
                counts[sid] += 1
                removed += 1
                nbytes += size
                j = page.next_live(j + 1)
            self._maybe_compact(page)
        self.msgs -= removed
        self.bytes -= nbytes
        subj = self.subj
        for sid, n in counts.items():
            left = subj.s_msgs[sid] - n
            subj.s_msgs[sid] = left
            if left == 0:
                subj.release(sid)
            elif subj.s_first[sid] < seq:
                subj.s_first[sid] = self._find(sid, seq, subj.s_last[sid])
        self.first_seq = self._next_present(seq)
        return removed

    # -- rebuilding pages ------------------------------------------------------
    def _maybe_compact(self, page: Page) -> None:
        """A memory store's page sheds its removed entries once they are half
        of it (amortized O(1) per removal); a file store keeps them until its
        block is rewritten (`rebuild_range`): their records are still on disk."""
        if not self._drop_removed:
            return
        dead = page.n - page.live
        if page.live == 0 or (dead >= COMPACT_MIN and dead * 2 >= page.n):
            k = self._page_no(page.first)
            self._rebuild(k, page.live_mask(0, page.n))

    def _rebuild(self, k: int, keep: list[bool]) -> None:
        """Keep only the entries of page `k` flagged in `keep`: removed ones
        (a present entry is always kept). An emptied page goes."""
        page = self.pages[k]
        cols = self.cols(page)
        if all(keep):
            return
        self._hot = self.mru = self._tail = None
        new = [
            array(c.typecode, compress(c, keep)) if isinstance(c, array) else list(compress(c, keep))
            for c in cols
        ]
        n = len(new[SEQS])
        if n == 0:
            self._drop_pages(k, k + 1)
            return
        dead_bits = [page.is_dead(i) for i, kept in enumerate(keep) if kept]
        tracked = id(page) in self._lru
        self._untrack(page)
        page.cols = new
        page.n = n
        page.first = new[SEQS][0]
        page.last = new[SEQS][-1]
        page.first_ts = new[TS][0]
        page.dead = None
        for i, is_dead in enumerate(dead_bits):
            if is_dead:
                page.mark_dead(i)
        page.live = n - sum(dead_bits)
        page.fit_dead()
        page.dirty = True
        self.firsts[k] = page.first
        if tracked:
            self._track(page)

    def rebuild_range(self, lo_seq: int, hi_seq: int, moves: dict[int, int], col: int = 0) -> None:
        """A file store's block holding [lo_seq, hi_seq) was rewritten or retired:
        entries moved to a new place get `moves[seq]` in their `col` extra
        column, removed entries not in `moves` are dropped (their records are
        gone from disk), present entries stay."""
        k = max(0, self._page_no(lo_seq))
        while k < len(self.pages):
            page = self.pages[k]
            if page.first >= hi_seq:
                return
            cols = self.cols(page)
            seqs, target = cols[SEQS], cols[EXTRA + col]
            keep: list[bool] = []
            for i in range(page.n):
                seq = seqs[i]
                if seq < lo_seq or seq >= hi_seq:
                    keep.append(True)
                    continue
                offset = moves.get(seq)
                if offset is not None:
                    target[i] = offset
                    page.dirty = True
                    keep.append(True)
                else:
                    keep.append(not page.is_dead(i))
            count = len(self.pages)
            self._rebuild(k, keep)
            if len(self.pages) == count:
                k += 1

    def map_extra(self, lo_seq: int, col: int, fn: Callable[[int], int]) -> None:
        """Apply `fn` to the `col` extra column of every entry from `lo_seq` on
        (recovery moves a block's offsets after cutting damaged bytes out)."""
        k, i = self._lower(lo_seq)
        while k < len(self.pages):
            page = self.pages[k]
            target = self.cols(page)[EXTRA + col]
            for j in range(i, page.n):
                target[j] = fn(target[j])
            page.dirty = True
            k, i = k + 1, 0

    # -- scans -----------------------------------------------------------------
    def _end(self, page: Page, hi_seq: int) -> int:
        """Positions of `page` with sequence <= hi_seq: [0, result)."""
        if hi_seq >= page.last:
            return page.n
        if hi_seq < page.first:
            return 0
        if page.last - page.first == page.n - 1:
            return hi_seq - page.first + 1
        return bisect.bisect_right(self.cols(page)[SEQS], hi_seq)

    def _find(self, sid: int, lo_seq: int, hi_seq: int) -> int:
        """Lowest present sequence in [lo_seq, hi_seq] with subject id `sid`, or 0.
        (A filtered read's step: the page's own checks are inlined.)"""
        if lo_seq < self.first_seq:
            lo_seq = self.first_seq
        if lo_seq > hi_seq:
            return 0
        k, i = self._lower(lo_seq)
        pages = self.pages
        count = len(pages)
        while k < count:
            page = pages[k]
            first = page.first
            if first > hi_seq:
                return 0
            counts = page.subjects
            if page.live and (counts is None or sid in counts):
                cols = page.cols
                if cols is None or page is not self.mru:
                    cols = self.cols(page)
                last, n = page.last, page.n
                dense = last - first == n - 1
                if hi_seq >= last:
                    end = n
                elif dense:
                    end = hi_seq - first + 1
                else:
                    end = bisect.bisect_right(cols[SEQS], hi_seq)
                sids, dead = cols[SIDS], page.dead
                while i < end:
                    try:
                        i = sids.index(sid, i, end)
                    except ValueError:
                        break
                    if dead is None or not (dead[i >> 3] >> (i & 7)) & 1:
                        return first + i if dense else int(cols[SEQS][i])
                    i += 1
            k, i = k + 1, 0
        return 0

    def _rfind(self, sid: int, lo_seq: int, hi_seq: int) -> int:
        """Highest present sequence in [lo_seq, hi_seq] with subject id `sid`, or 0."""
        lo_seq = max(lo_seq, self.first_seq)
        if lo_seq > hi_seq:
            return 0
        k = self._page_no(hi_seq)
        pages = self.pages
        while k >= 0:
            page = pages[k]
            if page.last < lo_seq:
                return 0
            if page.live and (page.subjects is None or sid in page.subjects):
                cols = self.cols(page)
                lo, hi = self._pos(page, lo_seq), self._end(page, hi_seq)
                while hi > lo:
                    j = _rindex(cols[SIDS], sid, lo, hi)
                    if j < 0:
                        break
                    if not page.is_dead(j):
                        return self.seq_at(page, j)
                    hi = j
            k -= 1
        return 0

    def _next_present(self, seq: int) -> int:
        """Lowest present sequence >= seq, or `last_seq + 1`."""
        k, i = self._lower(seq)
        pages = self.pages
        while k < len(pages):
            page = pages[k]
            if page.live:
                j = page.next_live(i)
                if j < page.n:
                    return self.seq_at(page, j)
            k, i = k + 1, 0
        return self.last_seq + 1

    def _prev_present(self, seq: int) -> int:
        """Highest present sequence <= seq (and >= first_seq), or 0."""
        k = self._page_no(seq)
        pages = self.pages
        while k >= 0:
            page = pages[k]
            if page.live:
                j = page.prev_live(self._end(page, seq) - 1)
                if j >= 0:
                    found = self.seq_at(page, j)
                    return found if found >= self.first_seq else 0
            k -= 1
        return 0

    def _candidates(
        self, start_seq: int, end_seq: int, sids: Collection[int] | None
    ) -> Iterator[tuple[Page, list[Any], int, int, Collection[int] | None]]:
        """(page, its columns, first position, end position, wanted subject ids
        or None) of each page that may hold present entries with
        start_seq <= seq <= end_seq and a subject in `sids` (None: any), in
        order. Pages whose summary rules them out are not loaded."""
        start_seq = max(start_seq, self.first_seq)
        end_seq = min(end_seq, self.last_seq)
        if start_seq > end_seq:
            return
        wanted = None if sids is None else (sids if isinstance(sids, (set, frozenset)) else set(sids))
        k, i = self._lower(start_seq)
        pages = self.pages
        while k < len(pages):
            page = pages[k]
            if page.first > end_seq:
                return
            if page.live and (
                wanted is None
                or page.subjects is None
                or any(sid in wanted for sid in page.subjects)
            ):
                yield page, self.cols(page), i, self._end(page, end_seq), wanted
            k, i = k + 1, 0

    @staticmethod
    def _taken(page: Page, cols: list[Any], i: int, end: int, wanted: Collection[int] | None) -> Sequence[int]:
        """Positions in [i, end) of `page` holding present entries with a subject in `wanted`."""
        if wanted is None:
            if page.dead is None:
                return range(i, end)
            return list(compress(range(i, end), page.live_mask(i, end)))
        sids = cols[SIDS]
        return [j for j in range(i, end) if sids[j] in wanted and not page.is_dead(j)]

    def walk(
        self, start_seq: int, end_seq: int, sids: Collection[int] | None
    ) -> Iterator[tuple[Page, list[Any], int]]:
        """(page, its columns, position) of each present entry with
        start_seq <= seq <= end_seq and a subject in `sids` (None: any), in order."""
        for page, cols, i, end, wanted in self._candidates(start_seq, end_seq, sids):
            for j in self._taken(page, cols, i, end, wanted):
                yield page, cols, j

    def run_slices(
        self,
        start_seq: int,
        end_seq: int,
        sids: Collection[int] | None,
        max_msgs: int,
        max_bytes: int,
    ) -> tuple[list[tuple[Page, list[Any], Sequence[int]]], int, int]:
        """The entries of a run (`StreamStore.read_run`): per page, its columns
        and the positions taken, then the run's `next_seq` and `blocked_size`."""
        out: list[tuple[Page, list[Any], Sequence[int]]] = []
        if max_msgs <= 0:
            return out, start_seq, 0
        left = max_msgs
        total = 0
        for page, cols, i, end, wanted in self._candidates(start_seq, end_seq, sids):
            if wanted is None and page.dead is None:
                end = min(end, i + left)  # no more than needed
            # `Any`: compiled, an int position would be boxed again to index `sizes`
            taken: Sequence[Any] = self._taken(page, cols, i, end, wanted)[:left]
            if max_bytes and taken:
                sizes = cols[SIZES]
                # consecutive entries: their sizes at once, one by one only if they do not all fit
                whole = sum(sizes[taken.start : taken.stop]) if isinstance(taken, range) else -1
                if 0 <= whole <= max_bytes - total:
                    total += whole
                else:
                    for n, j in enumerate(taken):
                        size = sizes[j]
                        if total + size > max_bytes:
                            if n:
                                out.append((page, cols, taken[:n]))
                            return out, self.seq_at(page, j), size
                        total += size
            if taken:
                out.append((page, cols, taken))
                left -= len(taken)
                if not left:
                    return out, self.seq_at(page, taken[-1]) + 1, 0
        return out, max(start_seq, min(end_seq, self.last_seq) + 1), 0

    def next_seq(self, start_seq: int, sids: Collection[int] | None) -> int:
        """First present sequence >= start_seq with a subject in `sids` (None = any), or 0."""
        start = max(start_seq, self.first_seq)
        if start > self.last_seq or self.msgs == 0:
            return 0
        if sids is None:
            found = self._next_present(start)
            return found if found <= self.last_seq else 0
        if len(sids) > FEW_SUBJECTS:
            for page, _cols, j in self.walk(start, self.last_seq, sids):
                return self.seq_at(page, j)
            return 0
        best = 0
        s_first, s_last = self.subj.s_first, self.subj.s_last
        for sid in sids:
            if s_last[sid] < start:
                continue
            hi = s_last[sid] if not best else min(best - 1, s_last[sid])
            found = self._find(sid, max(start, s_first[sid]), hi)
            if found:
                best = found
        return best

    def _scan_backward(self, start: int, wanted: Collection[int]) -> int:
        k = self._page_no(start)
        pages = self.pages
        while k >= 0:
            page = pages[k]
            if page.last < self.first_seq:
                return 0
            if page.live and (
                page.subjects is None or any(sid in wanted for sid in page.subjects)
            ):
                sids = self.cols(page)[SIDS]
                for j in range(self._end(page, start) - 1, -1, -1):
                    if sids[j] in wanted and not page.is_dead(j):
                        found = self.seq_at(page, j)
                        return found if found >= self.first_seq else 0
            k -= 1
        return 0

    def prev_seq(self, start_seq: int, sids: Collection[int] | None) -> int:
        """Last present sequence <= start_seq with a subject in `sids` (None = any), or 0."""
        start = min(start_seq, self.last_seq)
        if start < self.first_seq or self.msgs == 0:
            return 0
        if sids is None:
            return self._prev_present(start)
        if len(sids) > FEW_SUBJECTS:
            return self._scan_backward(start, sids if isinstance(sids, set) else set(sids))
        best = 0
        s_first, s_last = self.subj.s_first, self.subj.s_last
        for sid in sids:
            if s_first[sid] > start:
                continue
            lo = s_first[sid] if not best else max(best + 1, s_first[sid])
            found = self._rfind(sid, lo, min(start, s_last[sid]))
            if found:
                best = found
        return best

    def last_seq_for(self, sids: Collection[int] | None) -> int:
        if sids is None:
            return self._prev_present(self.last_seq) if self.msgs else 0
        if len(sids) > FEW_SUBJECTS:
            return self.prev_seq(self.last_seq, sids)
        s_last = self.subj.s_last
        return max((s_last[sid] for sid in sids), default=0)

    def _count_in_page(self, page: Page, lo: int, wanted: Collection[int]) -> int:
        """Present entries at positions >= lo of `page` with a subject in `wanted`."""
        if lo == 0 and page.subjects is not None:
            counts = page.subjects
            return sum(counts.get(sid, 0) for sid in wanted)
        sids = self.cols(page)[SIDS]
        part = sids[lo : page.n]
        if page.dead is not None and page.live < page.n:
            part = array("I", compress(part, page.live_mask(lo, page.n)))
        if len(wanted) == 1:
            return int(part.count(next(iter(wanted))))
        counts = Counter(part)
        return sum(counts.get(sid, 0) for sid in wanted)

    def count_from(self, start_seq: int, sids: Collection[int] | None) -> int:
        """Present messages with seq >= start_seq and a subject in `sids`."""
        start = max(start_seq, self.first_seq)
        if start > self.last_seq or self.msgs == 0:
            return 0
        k, i = self._lower(start)
        pages = self.pages
        if sids is None:
            if start == self.first_seq:
                return self.msgs
            total = sum(page.live for page in pages[k + 1 :])
            if k < len(pages):
                page = pages[k]
                total += page.n - i - page.dead_in(i, page.n)
            return total
        subj = self.subj
        total = 0
        straddle: list[int] = []
        for sid in sids:
            if subj.s_first[sid] >= start:
                total += subj.s_msgs[sid]
            elif subj.s_last[sid] >= start:
                straddle.append(sid)
        if not straddle:
            return total
        end = max(subj.s_last[sid] for sid in straddle)
        wanted = set(straddle) if len(straddle) > 1 else straddle
        while k < len(pages):
            page = pages[k]
            if page.first > end:
                break
            if page.live:
                total += self._count_in_page(page, i, wanted)
            k, i = k + 1, 0
        return total

    def live_bytes(self, lo_seq: int, hi_seq: int) -> int:
        """Sum of the sizes of present entries with lo_seq <= seq < hi_seq."""
        if hi_seq <= lo_seq:
            return 0
        k, i = self._lower(lo_seq)
        total = 0
        pages = self.pages
        while k < len(pages):
            page = pages[k]
            if page.first >= hi_seq:
                break
            end = self._end(page, hi_seq - 1)
            if i == 0 and end == page.n:
                total += page.bytes
            elif end > i:
                sizes = self.cols(page)[SIZES]
                if page.dead is None:
                    total += sum(sizes[i:end])
                else:
                    total += sum(compress(sizes[i:end], page.live_mask(i, end)))
            k, i = k + 1, 0
        return total

    def seq_keeping_newest(self, keep: int) -> int:
        """The sequence of the `keep`-th newest present message (1 <= keep <= msgs)."""
        acc = 0
        for page in reversed(self.pages):
            if acc + page.live >= keep:
                j = page.n
                for _ in range(keep - acc):
                    j = page.prev_live(j - 1)
                return self.seq_at(page, j)
            acc += page.live
        return self.first_seq

    def seqs_matching(
        self, sids: Collection[int] | None, lo_seq: int, hi_seq: int, limit: int
    ) -> list[int]:
        """Up to `limit` present sequences in [lo_seq, hi_seq] matching `sids`, ascending."""
        out: list[int] = []
        if limit <= 0:
            return out
        for page, _cols, j in self.walk(lo_seq, hi_seq, sids):
            out.append(self.seq_at(page, j))
            if len(out) >= limit:
                break
        return out

    def seq_for_time(self, timestamp_ns: int) -> int:
        if self.msgs == 0:
            return self.last_seq + 1
        pages = self.pages
        k0, i0 = self._lower(self.first_seq)
        k = bisect.bisect_left([p.first_ts for p in pages], timestamp_ns) - 1
        if k < k0:
            k, lo = k0, i0
        else:
            lo = i0 if k == k0 else 0
        while k < len(pages):
            page = pages[k]
            pos = bisect.bisect_left(self.cols(page)[TS], timestamp_ns, lo, page.n)
            if pos < page.n:
                return self._next_present(self.seq_at(page, pos))
            k, lo = k + 1, 0
        return self.last_seq + 1

    def deleted(self) -> list[int]:
        """Every absent sequence between first_seq and last_seq."""
        out: list[int] = []
        if self.msgs == 0:
            return out
        expect = self.first_seq
        for page, _cols, j in self.walk(self.first_seq, self.last_seq, None):
            seq = self.seq_at(page, j)
            if seq > expect:
                out.extend(range(expect, seq))
            expect = seq + 1
        out.extend(range(expect, self.last_seq + 1))
        return out

    def first_ts(self) -> int:
        """Timestamp of the first present message (0 when empty)."""
        if not self.msgs:
            return 0
        seq = self.first_seq
        if self._first_ts[0] != seq:
            loc = self.locate(seq)
            ts = int(self.cols(loc[0])[TS][loc[1]]) if loc is not None else 0
            self._first_ts = (seq, ts)
        return self._first_ts[1]

    def state(self) -> StoreState:
        return StoreState(
            msgs=self.msgs,
            bytes=self.bytes,
            first_seq=self.first_seq,
            first_ts_ns=self.first_ts(),
            last_seq=self.last_seq,
            last_ts_ns=self.last_ts,
            num_deleted=max(0, self.last_seq - self.first_seq + 1 - self.msgs),
            num_subjects=len(self.subj),
        )

    # -- snapshot --------------------------------------------------------------
    def export_meta(self) -> tuple[dict[str, Any], dict[str, array[int]]]:
        """The index's counters and subject table (the pages go separately,
        `page_image`), to rebuild it without a scan (file store snapshot)."""
        names, arrays = self.subj.export()
        meta = {
            "known_from": self.known_from,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "last_ts": self.last_ts,
            "msgs": self.msgs,
            "bytes": self.bytes,
            "names": names,
        }
        return meta, arrays

    def page_image(self, page: Page) -> bytes:
        """The raw bytes of a page's columns (loaded or from the swap)."""
        if page.cols is not None:
            return b"".join(col.tobytes() for col in page.cols)
        assert self._swap is not None and page.image is not None
        return self._swap.read_raw(page.image)

    def restore(self, meta: dict[str, Any], arrays: dict[str, array[int]], pages: list[Page]) -> None:
        """Load what a snapshot holds: counters, subject table, and pages whose
        columns are images in this index's swap. Raises ValueError when it is
        inconsistent."""
        self.subj.restore(list(meta["names"]), arrays)
        self.known_from = int(meta["known_from"])
        self.first_seq = int(meta["first_seq"])
        self.last_seq = int(meta["last_seq"])
        self.last_ts = int(meta["last_ts"])
        self.msgs = int(meta["msgs"])
        self.bytes = int(meta["bytes"])
        row = self._row_bytes
        prev = 0
        for page in pages:
            if page.n <= 0 or page.first <= prev or page.last < page.first:
                raise ValueError("snapshot pages are out of order")
            if page.image is None or page.image[1] != page.n * row:
                raise ValueError("snapshot page image has the wrong size")
            prev = page.last
        self.pages = pages
        self.firsts = [page.first for page in pages]
        self._hot = self.mru = self._tail = None
        if sum(p.live for p in pages) != self.msgs or sum(p.bytes for p in pages) != self.bytes:
            raise ValueError("snapshot pages disagree with the message count")
        if sum(self.subj.s_msgs) != self.msgs:
            raise ValueError("snapshot subject counts disagree with the message count")
        if pages and (pages[-1].last > self.last_seq or pages[0].first < 1):
            raise ValueError("snapshot sequences fall outside the stream's range")
