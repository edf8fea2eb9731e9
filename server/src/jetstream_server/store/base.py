"""The `StreamStore` contract: what the stream and consumer code may ask of storage.

One contract, two backends (`memory.MemoryStore`, `file.FileStore`). Stream and
consumer code never knows which backend it has. Every backend passes the same
contract test suite (tests/server/unit/test_store.py, parametrized over both).

Semantics (modelled on nats-server's `StreamStore`):
- Sequences start at 1 and only grow. `store()` assigns `last_seq + 1`.
  Removing messages never reuses a sequence. After a full purge the stream is
  empty with `first_seq == last_seq + 1`.
- `first_seq` is the lowest sequence still present (or `last_seq + 1` when
  empty); interior deletes count in `num_deleted`.
- Subject filters may use NATS wildcards (`*`, `>`); `None` or `">"` match all.
- Timestamps are wall-clock nanoseconds supplied by the caller (the stream
  takes them from its injected clock), never read by the store.
- `headers` is the raw NATS header block (`NATS/1.0\\r\\n...`) or None.
- A message's stored size, for `max_bytes`, `bytes` in state and account
  usage, is nats-server's for the storage type (`StreamStore.msg_size`):
  memory `S + H + D + 16` (memStoreMsgSize: seq and timestamp), file
  `S + D + 30` without headers and `S + H + D + 34` with them
  (fileStoreMsgSize: its record framing and hash), where S is the subject's
  length in UTF-8 bytes, H the header block's and D the payload's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from jetstream_server.store.message import (
    StoredMessage as StoredMessage,  # re-exported: the contract's record
)

if TYPE_CHECKING:
    from jetstream_server.store.runs import MessageRun

# nats-server's per-message overheads (memstore.go memStoreMsgSizeRaw,
# filestore.go fileStoreMsgSizeRaw): a message without headers, one with
MEMORY_OVERHEAD: tuple[int, int] = (16, 16)
FILE_OVERHEAD: tuple[int, int] = (30, 34)
# The largest sequence a store holds: the index keeps sequences in signed
# 64-bit arrays. nats-server's are unsigned, but no stream gets near either end
# by publishing; only a request can ask for more, and it is refused.
MAX_SEQ: int = (1 << 63) - 1


def subject_len(subject: str) -> int:
    """The subject's length in UTF-8 bytes (what nats-server counts)."""
    return len(subject) if subject.isascii() else len(subject.encode())


def message_size(
    subject: str, headers: bytes | None, data: bytes, overhead: tuple[int, int] = MEMORY_OVERHEAD
) -> int:
    """Bytes a message counts for in `bytes` and against `max_bytes`, with the
    overheads of one storage type (memory by default)."""
    hlen = len(headers) if headers else 0
    return subject_len(subject) + hlen + len(data) + overhead[1 if hlen else 0]


@dataclass(slots=True)
class StoreState:
    msgs: int = 0
    bytes: int = 0
    first_seq: int = 1
    first_ts_ns: int = 0
    last_seq: int = 0
    last_ts_ns: int = 0
    num_deleted: int = 0
    num_subjects: int = 0


@dataclass(frozen=True, slots=True)
class SubjectInfo:
    """Per-subject index entry: how many messages, first and last sequence."""

    msgs: int
    first_seq: int
    last_seq: int


@dataclass(slots=True)
class RecoveryReport:
    """What a backend found when it opened existing data (file store only)."""

    recovered_msgs: int = 0
    lost_msgs: int = 0
    lost_bytes: int = 0
    used_snapshot: bool = False
    notes: list[str] = field(default_factory=list)
    # sequences of message records found damaged and dropped (stream info `lost`)
    lost_seqs: list[int] = field(default_factory=list)


class Purged(NamedTuple):
    """What a purge removed: how many messages, and which sequences when the
    store knows them cheaply (a subject purge lists them; a purge of everything
    below a floor lists none, `first_seq` says it all). `seqs` is None when the
    backend cannot tell (then a caller must check what it holds)."""

    msgs: int
    seqs: Sequence[int] | None = ()


class StoreError(Exception):
    """Storage failed (I/O error, closed store)."""


class StreamStore(ABC):
    """Message storage for one stream."""

    # -- writing -------------------------------------------------------------
    overhead: tuple[int, int] = MEMORY_OVERHEAD
    """Per-message overhead (without headers, with headers) of this backend."""

    on_change: Callable[[int, int], None] | None = None
    """Told `(messages, bytes)` by which `state()`'s counts changed after each
    write and removal (None: nobody listens). The engine keeps its account's
    usage from it, as nats-server's stores report theirs (storeUpdates)."""

    def msg_size(self, subject: str, headers: bytes | None, data: bytes) -> int:
        """Bytes this message would count for in this store (`state().bytes`)."""
        return message_size(subject, headers, data, self.overhead)

    @abstractmethod
    def store(self, subject: str, headers: bytes | None, data: bytes, timestamp_ns: int) -> int:
        """Append a message; return its sequence (`last_seq + 1`).

        On return the bytes have been handed to the OS (file store), so a killed
        process does not lose them; `sync()` makes them durable."""

    @abstractmethod
    def skip_to(self, seq: int) -> None:
        """Move `last_seq` forward so the next stored sequence is `seq`
        (used when a stream is created with `first_seq`). Only valid when empty."""

    def skip_msgs(self, seq: int, count: int) -> None:
        """nats-server's SkipMsgs: sequences `seq` .. `seq + count - 1` (`seq` must be
        `last_seq + 1`) become deleted ones in one operation, whatever `count` is
        (a mirror skipping what its origin no longer has)."""
        raise NotImplementedError

    @abstractmethod
    def remove(self, seq: int, erase: bool = False) -> bool:
        """Delete one message; False if it was not there. `erase` overwrites the
        bytes on disk as well (STREAM.MSG.DELETE without `no_erase`)."""

    @abstractmethod
    def purge(
        self, subject: str | None = None, up_to_seq: int | None = None, keep: int | None = None
    ) -> int:
        """Remove messages and return how many. With no arguments: everything
        (then `first_seq = last_seq + 1`). `subject` restricts to a filter.
        `up_to_seq` removes sequences strictly below it. `keep` keeps the newest
        `keep` messages (per the filter when `subject` is given). `up_to_seq`
        and `keep` are exclusive (ValueError).

        As in nats-server 2.15: without a subject (or with ">"), `up_to_seq`
        is `compact(up_to_seq)`, so a value beyond `last_seq + 1` moves
        `last_seq` to `up_to_seq - 1`; with a subject, `last_seq` never moves."""

    def purge_seqs(
        self, subject: str | None = None, up_to_seq: int | None = None, keep: int | None = None
    ) -> Purged:
        """`purge()`, telling which sequences went (`Purged`), so that consumers
        forget their pending entries at the cost of what was removed, not of
        everything they hold. This default cannot tell (`seqs` None)."""
        return Purged(self.purge(subject, up_to_seq, keep), None)

    @abstractmethod
    def compact(self, seq: int) -> int:
        """Remove every message with a sequence below `seq`; return how many.

        `first_seq` becomes the first present sequence >= `seq`. A `seq` beyond
        `last_seq` empties the store and makes `seq` the next sequence stored
        (`first_seq = seq`, `last_seq = seq - 1`); `seq <= 0` purges all."""

    # -- reading -------------------------------------------------------------
    @abstractmethod
    def load(self, seq: int) -> StoredMessage | None:
        """The message at `seq`, or None if absent (deleted, purged, never stored)."""

    @abstractmethod
    def load_next(
        self, start_seq: int, filters: Sequence[str] | None = None
    ) -> StoredMessage | None:
        """The first message with `seq >= start_seq` whose subject matches any
        of `filters` (None or empty = all)."""

    @abstractmethod
    def load_last(self, subject_filter: str | None = None) -> StoredMessage | None:
        """The newest message matching `subject_filter` (wildcards allowed)."""

    @abstractmethod
    def load_prev(
        self, start_seq: int, filters: Sequence[str] | None = None
    ) -> StoredMessage | None:
        """The last message with `seq <= start_seq` matching `filters`."""

    def iter_range(
        self, start_seq: int, end_seq: int, filters: Sequence[str] | None = None
    ) -> Iterator[StoredMessage]:
        """Messages with `start_seq <= seq <= end_seq` matching `filters`, in order.
        Backends may override with something faster."""
        seq = start_seq
        while seq <= end_seq:
            msg = self.load_next(seq, filters)
            if msg is None or msg.seq > end_seq:
                return
            yield msg
            seq = msg.seq + 1

    def read_run(
        self,
        start_seq: int,
        max_msgs: int,
        *,
        max_bytes: int = 0,
        end_seq: int = MAX_SEQ,
        filters: Sequence[str] | None = None,
    ) -> MessageRun:
        """Up to `max_msgs` present messages with `start_seq <= seq <= end_seq`
        matching `filters`, in order, read and verified in one pass (see
        `runs.MessageRun`: `next_seq` says where to go on). `max_bytes` (0: no
        limit) caps the sum of their stored sizes (`msg_size`): the message that
        would pass it is left out and its size is the run's `blocked_size`.

        A damaged record raises `StoreError` when it is the first message of the
        run (as `load` would) and ends the run before it otherwise, so the next
        read raises. This default reads message by message; backends override it."""
        from jetstream_server.store.runs import ListRun

        msgs: list[StoredMessage] = []
        sizes: list[int] = []
        total = 0
        seq = start_seq
        while len(msgs) < max_msgs:
            msg = self.load_next(seq, filters)
            if msg is None or msg.seq > end_seq:
                seq = max(seq, min(end_seq, self.state().last_seq) + 1)
                break
            size = self.msg_size(msg.subject, msg.headers, msg.data)
            if max_bytes and total + size > max_bytes:
                return ListRun(msgs, sizes, msg.seq, size)
            msgs.append(msg)
            sizes.append(size)
            total += size
            seq = msg.seq + 1
        return ListRun(msgs, sizes, seq)

    def read_seqs(self, seqs: Sequence[int]) -> MessageRun:
        """The present messages among `seqs`, in ascending order (absent ones
        left out), read and verified in one pass: a batched direct get's
        `multi_last`. `next_seq` is the highest sequence asked + 1. A damaged
        record raises `StoreError` when it is the first message found and ends
        the run before it otherwise (`next_seq` is then its sequence). This
        default loads one by one; backends override it."""
        from jetstream_server.store.runs import ListRun

        msgs: list[StoredMessage] = []
        sizes: list[int] = []
        wanted = sorted(set(seqs))
        for seq in wanted:
            try:
                msg = self.load(seq)
            except StoreError:
                if not msgs:
                    raise
                return ListRun(msgs, sizes, seq)
            if msg is not None:
                msgs.append(msg)
                sizes.append(self.msg_size(msg.subject, msg.headers, msg.data))
        return ListRun(msgs, sizes, wanted[-1] + 1 if wanted else 0)

    @abstractmethod
    def seq_for_time(self, timestamp_ns: int) -> int:
        """The first sequence whose timestamp is >= `timestamp_ns`
        (`last_seq + 1` when none is)."""

    # -- per-subject index ---------------------------------------------------
    @abstractmethod
    def subject_info(self, subject: str) -> SubjectInfo | None:
        """Index entry for one literal subject, or None when it has no messages."""

    @abstractmethod
    def subjects(self, subject_filter: str | None = None) -> dict[str, SubjectInfo]:
        """Index entries for every subject matching the filter."""

    def subject_counts(self, subject_filter: str | None = None) -> dict[str, int]:
        """Messages per subject matching the filter, in no order (a stream info's
        `subjects`: cheaper than `subjects` where a backend can do it)."""
        return {name: info.msgs for name, info in self.subjects(subject_filter).items()}

    def count_subjects(self, subject_filter: str | None = None) -> int:
        """How many subjects match the filter."""
        return len(self.subject_counts(subject_filter))

    @abstractmethod
    def num_pending(self, start_seq: int, filters: Sequence[str] | None = None) -> int:
        """How many present messages have `seq >= start_seq` and match `filters`."""

    # -- state and lifecycle ------------------------------------------------
    @abstractmethod
    def state(self) -> StoreState:
        """Counts and bounds; cheap (no scan)."""

    def stored_bytes(self) -> int:
        """`state().bytes` without building the whole state (the store-limit
        check asks it of every stream on each publish)."""
        return self.state().bytes

    @abstractmethod
    def deleted(self) -> list[int]:
        """Sequences between first_seq and last_seq that are absent (interior deletes)."""

    @abstractmethod
    def sync(self) -> None:
        """Make everything stored so far durable (fsync for the file store)."""

    def begin_sync(self) -> Callable[[], None] | None:
        """`sync()` split in two: the store counts as synced now and returns the
        slow part as a job that touches no store state, for another thread (None:
        nothing to do). This default does it all inline."""
        self.sync()
        return None

    def sync_failed(self) -> None:
        """A `begin_sync()` job raised: the next sync must cover everything again."""
        return None  # nothing is deferred by the inline default

    @abstractmethod
    def close(self) -> None:
        """Flush and release resources; a file store writes its index snapshot."""

    @abstractmethod
    def destroy(self) -> None:
        """Close and delete all data (stream deleted)."""

    @property
    def recovery(self) -> RecoveryReport:
        """What was found on open (empty report for memory)."""
        return RecoveryReport()
