"""`IndexedStore`: the whole `StreamStore` contract on top of a `MessageIndex`.

Both backends derive from it, so purge/compact/filter/pending semantics are
written once and are identical by construction. A backend supplies payload
storage only, through these hooks:

- `_put(seq, subject, headers, data, timestamp_ns)`: keep the payload and
  return the value of its index column for the entry (called before the
  index append, so a failed write leaves the index untouched);
- `_get(seq, loc)`: the `StoredMessage` for a present sequence whose index
  entry is `loc` (page, position);
- `_read_run(locs, ...)`: the `MessageRun` of present entries found by the
  index (default: `_get` each);
- `_drop(seqs, erase)`: the sequences are about to be removed (tombstones,
  erasure); called before the index changes;
- `_floor(seq)`: remove everything below `seq` (nats-server `Compact`);
  the default only updates the index;
- `_removed()`: after removals reached the index (default: nothing);
- `_skip(last_seq)`: `skip_msgs` moves `last_seq` over absent sequences
  (default: nothing; file: one record that recovery replays).

Every write and removal through the contract tells `on_change` by how many
messages and bytes the state moved (the engine's running usage totals).

Purge semantics follow nats-server 2.15 (checked against the real server):
with no subject (or ">"), `up_to_seq` is `compact(up_to_seq)` (so beyond
`last_seq` it moves `last_seq` up) and `keep` compacts up to the `keep`-th
newest message (exactly `keep` messages stay); with a subject, the
matching messages below `up_to_seq` (if given) are removed, oldest first,
leaving the newest `keep` matching ones. `up_to_seq` 0/None means no bound. Not thread-safe: one owner (the
server's event loop thread) calls a store.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

from jetstream_server.store.base import (
    MAX_SEQ,
    Purged,
    StoredMessage,
    StoreError,
    StoreState,
    StreamStore,
    SubjectInfo,
)
from jetstream_server.store.filters import matches_all
from jetstream_server.store.index import SIZES, Loc, MessageIndex
from jetstream_server.store.pages import Page
from jetstream_server.store.runs import ListRun, MessageRun

MAX_MESSAGE_BYTES = 0xFFFFFFFF
ITER_BATCH = 256  # messages `iter_range` reads per run


class IndexedStore(StreamStore):
    """Contract logic shared by the memory and file backends."""

    def __init__(self, index: MessageIndex) -> None:
        self._index = index
        self._closed = False

    # -- backend hooks ---------------------------------------------------------
    @abstractmethod
    def _put(
        self, seq: int, subject: str, headers: bytes | None, data: bytes, timestamp_ns: int
    ) -> Any: ...

    @abstractmethod
    def _get(self, seq: int, loc: Loc) -> StoredMessage: ...

    def _load(self, seq: int) -> StoredMessage | None:
        if not seq:
            return None
        loc = self._index.locate(seq)
        return None if loc is None else self._get(seq, loc)

    def _read_run(
        self, slices: list[tuple[Page, list[Any], Sequence[int]]], next_seq: int
    ) -> MessageRun:
        """The run of these present entries (per page: its columns and the
        positions taken), verified; a damaged record after the first ends it
        (see `StreamStore.read_run`). This default `_get`s each."""
        msgs: list[StoredMessage] = []
        sizes: list[int] = []
        index = self._index
        for page, cols, positions in slices:
            for i in positions:
                seq = index.seq_at(page, i)
                try:
                    msgs.append(self._get(seq, (page, i)))
                except StoreError:
                    if not msgs:
                        raise
                    return ListRun(msgs, sizes, seq)
                sizes.append(cols[SIZES][i])
        return ListRun(msgs, sizes, next_seq)

    @abstractmethod
    def _drop(self, seqs: Sequence[int], erase: bool) -> None: ...

    def _floor(self, seq: int) -> int:
        return self._index.floor(seq)

    def _floor_reported(self, seq: int) -> int:
        """`_floor`, with the change it made told to `on_change`."""
        index = self._index
        msgs, size = index.msgs, index.bytes
        removed = self._floor(seq)
        if self.on_change is not None and (index.msgs != msgs or index.bytes != size):
            self.on_change(index.msgs - msgs, index.bytes - size)
        return removed

    def _removed(self) -> None:
        """Called after messages were removed from the index (file: drop dead blocks)."""

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("store is closed")

    # -- writing ---------------------------------------------------------------
    def store(self, subject: str, headers: bytes | None, data: bytes, timestamp_ns: int) -> int:
        if self._closed:
            raise StoreError("store is closed")
        if not subject:
            raise ValueError("subject must not be empty")
        if type(data) is not bytes or (headers is not None and type(headers) is not bytes):
            # bytes only, as annotated: a bytearray stored by reference could change after it
            # was stored (and compiled callers check the annotation themselves)
            raise TypeError("headers and data must be bytes")
        # msg_size(), inlined: once per published message
        slen = len(subject) if subject.isascii() else len(subject.encode())
        if headers:
            size = slen + len(headers) + len(data) + self.overhead[1]
        else:
            size = slen + len(data) + self.overhead[0]
        if size > MAX_MESSAGE_BYTES:
            raise ValueError(f"message of {size} bytes is too large to store")
        index = self._index
        seq = index.last_seq + 1
        if seq > MAX_SEQ:
            raise StoreError(f"sequence {seq} is above the largest storable sequence {MAX_SEQ}")
        sid = index.sid_of.get(subject)
        if sid is None:
            sid = index.intern(subject)  # may refuse (too many subjects) before anything is written
        try:
            value = self._put(seq, subject, headers, data, timestamp_ns)
        except BaseException:
            index.release_if_unused(sid)
            raise
        index.append(subject, timestamp_ns, size, sid=sid, value=value)
        if self.on_change is not None:
            self.on_change(1, size)
        return seq

    def skip_to(self, seq: int) -> None:
        self._check_open()
        _check_floor(seq)
        index = self._index
        if index.msgs:
            raise StoreError(f"skip_to({seq}) needs an empty store, it holds {index.msgs} messages")
        if seq < index.last_seq + 1:
            raise ValueError(f"skip_to({seq}) would move back below last sequence {index.last_seq}")
        if seq > index.last_seq + 1:
            self._floor_reported(seq)

    def skip_msgs(self, seq: int, count: int) -> None:
        self._check_open()
        index = self._index
        if seq != index.last_seq + 1:
            raise ValueError(f"skip_msgs({seq}) must start at the next sequence {index.last_seq + 1}")
        if count <= 0:
            return
        last = seq + count - 1
        _check_floor(last + 1)
        if index.msgs == 0:
            self._floor_reported(last + 1)  # nothing below: as a purge past the last sequence
            return
        self._skip(last)
        index.advance_last(last)

    def _skip(self, last_seq: int) -> None:
        """`last_seq` jumps forward over absent sequences (file: one marker record)."""

    def remove(self, seq: int, erase: bool = False) -> bool:
        self._check_open()
        if not self._index.present(seq):
            return False
        self._drop((seq,), erase)
        size = self._index.remove(seq)
        self._removed()
        if self.on_change is not None:
            self.on_change(-1, -size)
        return True

    def _remove_many(self, seqs: Sequence[int]) -> Purged:
        if not seqs:
            return Purged(0)
        self._drop(seqs, False)
        index = self._index
        before = index.bytes
        remove = index.remove
        for seq in seqs:
            remove(seq)
        self._removed()
        if self.on_change is not None:
            self.on_change(-len(seqs), index.bytes - before)
        return Purged(len(seqs), seqs)

    def purge(
        self, subject: str | None = None, up_to_seq: int | None = None, keep: int | None = None
    ) -> int:
        return self.purge_seqs(subject, up_to_seq, keep).msgs

    def purge_seqs(
        self, subject: str | None = None, up_to_seq: int | None = None, keep: int | None = None
    ) -> Purged:
        """`purge()`; a subject purge lists the sequences it removed, a purge
        without one removes everything below the new `first_seq` (no list)."""
        self._check_open()
        if up_to_seq and keep:
            raise ValueError("purge: up_to_seq and keep are mutually exclusive")
        if (up_to_seq is not None and up_to_seq < 0) or (keep is not None and keep < 0):
            raise ValueError("purge: up_to_seq and keep must not be negative")
        if up_to_seq:
            _check_floor(up_to_seq)
        index = self._index
        if matches_all(subject):
            if up_to_seq:
                return Purged(self.compact(up_to_seq))
            if keep:
                if keep >= index.msgs:
                    return Purged(0)
                return Purged(self.compact(index.seq_keeping_newest(keep)))
            return Purged(self._floor_reported(index.last_seq + 1))
        sids = index.resolve(subject)  # None: the filter happens to match every subject
        total = index.msgs if sids is None else index.total_msgs(sids)
        limit = total
        if keep:
            if keep >= total:
                return Purged(0)
            limit = total - keep
        if limit <= 0:
            return Purged(0)
        hi = up_to_seq - 1 if up_to_seq else index.last_seq
        lo = index.first_seq if sids is None else index.first_seq_for(sids)
        seqs = index.seqs_matching(sids, lo, hi, limit)
        return self._remove_many(seqs)

    def compact(self, seq: int) -> int:
        self._check_open()
        _check_floor(seq)
        if seq <= 0:
            return self._floor_reported(self._index.last_seq + 1)
        if seq <= self._index.first_seq:
            return 0
        return self._floor_reported(seq)

    # -- reading ---------------------------------------------------------------
    def load(self, seq: int) -> StoredMessage | None:
        self._check_open()
        loc = self._index.present_loc(seq)
        return None if loc is None else self._get(seq, loc)

    def load_next(
        self, start_seq: int, filters: Sequence[str] | None = None
    ) -> StoredMessage | None:
        self._check_open()
        index = self._index
        if filters is None:
            # every subject and the entry at the start is present (an in-order
            # consumer): no subject resolution, no scan
            seq = start_seq if start_seq > index.first_seq else index.first_seq
            loc = index.present_loc(seq)
            if loc is not None:
                return self._get(seq, loc)
        seq = index.next_seq(start_seq, index.resolve(filters))
        return self._load(seq)

    def load_last(self, subject_filter: str | None = None) -> StoredMessage | None:
        self._check_open()
        index = self._index
        seq = index.last_seq_for(index.resolve(subject_filter))
        return self._load(seq)

    def load_prev(
        self, start_seq: int, filters: Sequence[str] | None = None
    ) -> StoredMessage | None:
        self._check_open()
        index = self._index
        seq = index.prev_seq(start_seq, index.resolve(filters))
        return self._load(seq)

    def iter_range(
        self, start_seq: int, end_seq: int, filters: Sequence[str] | None = None
    ) -> Iterator[StoredMessage]:
        """Read in runs of `ITER_BATCH`; a message removed while the caller
        holds the iterator is not yielded (as with a read per message)."""
        self._check_open()
        index = self._index
        seq = start_seq
        while seq <= end_seq:
            run = self.read_run(seq, ITER_BATCH, end_seq=end_seq, filters=filters)
            mark = index.removals
            for msg in run:
                if index.removals == mark or index.present(msg.seq):
                    yield msg
            if not len(run) or self._closed:
                return
            seq = run.next_seq

    def read_run(
        self,
        start_seq: int,
        max_msgs: int,
        *,
        max_bytes: int = 0,
        end_seq: int = MAX_SEQ,
        filters: Sequence[str] | None = None,
    ) -> MessageRun:
        self._check_open()
        index = self._index
        slices, next_seq, blocked = index.run_slices(
            start_seq, end_seq, index.resolve(filters), max_msgs, max_bytes
        )
        run = self._read_run(slices, next_seq) if slices else ListRun([], [], next_seq)
        if blocked and run.next_seq == next_seq:
            run.blocked_size = blocked
        return run

    def read_seqs(self, seqs: Sequence[int]) -> MessageRun:
        self._check_open()
        index = self._index
        wanted = sorted(set(seqs))
        slices: list[tuple[Page, list[Any], Sequence[int]]] = []
        positions: list[int] = []
        for seq in wanted:
            loc = index.present_loc(seq)
            if loc is None:
                continue
            page, i = loc
            if not slices or slices[-1][0] is not page:
                positions = []
                slices.append((page, index.cols(page), positions))
            positions.append(i)
        next_seq = wanted[-1] + 1 if wanted else 0
        if not slices:
            return ListRun([], [], next_seq)
        return self._read_run(slices, next_seq)

    def seq_for_time(self, timestamp_ns: int) -> int:
        self._check_open()
        return self._index.seq_for_time(timestamp_ns)

    # -- per-subject index -----------------------------------------------------
    def subject_info(self, subject: str) -> SubjectInfo | None:
        self._check_open()
        return self._index.subject_info(subject)

    def subjects(self, subject_filter: str | None = None) -> dict[str, SubjectInfo]:
        self._check_open()
        return self._index.subjects(subject_filter)

    def subject_counts(self, subject_filter: str | None = None) -> dict[str, int]:
        self._check_open()
        return self._index.subject_counts(subject_filter)

    def count_subjects(self, subject_filter: str | None = None) -> int:
        self._check_open()
        return self._index.count_subjects(subject_filter)

    def num_pending(self, start_seq: int, filters: Sequence[str] | None = None) -> int:
        self._check_open()
        index = self._index
        return index.count_from(start_seq, index.resolve(filters))

    # -- state -----------------------------------------------------------------
    def state(self) -> StoreState:
        self._check_open()
        return self._index.state()

    def stored_bytes(self) -> int:
        self._check_open()
        return self._index.bytes

    def deleted(self) -> list[int]:
        self._check_open()
        return self._index.deleted()


def _check_floor(seq: int) -> None:
    """A floor (first sequence to keep) must leave the next sequence storable."""
    if seq > MAX_SEQ:
        raise ValueError(f"sequence {seq} is above the largest storable sequence {MAX_SEQ}")
