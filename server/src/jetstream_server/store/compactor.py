"""`BlockCompactor`: the file store's block compaction, one block at a time, off the loop.

A block other than the current one whose live messages are all gone is
retired; one whose live messages fill less than half of it (and that is not
tiny) is rewritten with only the records that still matter. The store
`touch`es a block when something in it was removed and calls `start_next`
after its removals; the compactor picks the oldest touched block that needs
it and runs the steps of `compaction` for it:

1. read the block's records on the disk thread (through a duplicate of the
   reader the store keeps open, so reads meanwhile see the old file);
2. on the loop, in turns of `PLAN_BATCH` records: take a new operation stamp
   first, then keep what the store says still matters (present messages,
   tombstones that may hide records in earlier blocks, FLOOR records) and
   note the new offset of each kept message;
3. on the disk thread: write, fsync and rename the new file (rewrite), or
   fsync the current block (which got the kept records) and unlink (retire);
4. on the loop: the store swaps the new offsets in (or drops the block) and
   redoes the erases that waited (`defer_erase`), then the next block starts.

Invariants: at most one compaction in flight; while it runs the store does
not drop the block (`compacting`), reads it through the old reader and
defers erases in it; a failed step abandons the compaction (the removals are
durable already, compaction only frees space) and redoes the deferred
erases on the old file; `settle` (closing) waits for a write on the disk
thread and swaps it in, and drops a compaction not that far. The store's
side is the narrow `CompactionHost`; nothing here imports asyncio.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, Protocol

from jetstream_server.store import codec
from jetstream_server.store.blocks import Block
from jetstream_server.store.compaction import (
    Compaction,
    Written,
    read_records,
    unlink_block,
    write_block,
)

log = logging.getLogger(__name__)

PLAN_BATCH: Final = 4096  # records a compaction looks at per loop turn
REWRITE_MIN_BYTES: Final = 64 * 1024  # a smaller block is not worth a rewrite


class CompactionHost(Protocol):
    """What a `BlockCompactor` asks of its store (`FileStore`)."""

    @property
    def closed(self) -> bool: ...

    @property
    def directory(self) -> Path: ...

    @property
    def sync_always(self) -> bool: ...

    def offload(self, job: Callable[[], Any], done: Callable[[Any], None]) -> None:
        """Run `job` on the disk thread (inline without one), then `done(result)`
        on the owner's thread (the result may be the job's exception)."""
        ...

    def next_stamp(self) -> int: ...

    def current_block(self) -> Block: ...

    def holds_block(self, blk: Block) -> bool: ...

    def dup_reader(self, blk: Block) -> int:
        """A duplicate of `blk`'s reader (opened now if needed, kept open until
        the swap); OSError when it cannot be had."""
        ...

    def keeps_record(self, kind: int, seq: int, ts: int, blk: Block) -> bool:
        """Does this record of `blk` still matter (a present message, a
        tombstone that may hide a record in an earlier block, a FLOOR record)?"""
        ...

    def append_records(self, data: bytes, last_len: int) -> Callable[[], None]:
        """Append whole records to the current block; the job that fsyncs them
        (on a duplicate descriptor, leaving the store's own sync state alone)."""
        ...

    def swap_retired(self, blk: Block) -> None: ...

    def swap_rewritten(
        self,
        blk: Block,
        stamp: int,
        size: int,
        moves: Sequence[tuple[int, int]],
        erased: Sequence[tuple[int, bytes]],
    ) -> None:
        """The new file is in place: its stamp and size, the messages' new
        offsets, then the `erased` (seq, subject) overwritten in it."""
        ...

    def redo_erases(self, blk: Block, erased: Sequence[tuple[int, bytes]]) -> None:
        """Overwrite these messages' records in `blk` if it still holds them."""
        ...

    def directory_changed(self) -> None:
        """A file came or went: the next sync fsyncs the directory."""
        ...

    def release_dead_blocks(self) -> None:
        """Unlink the front blocks nothing in which is kept any more."""
        ...


def _nothing() -> None:
    """A disk-thread job that only brings its callback back to the loop."""


class BlockCompactor:
    """Compacts one block at a time for `host`; see the module docstring."""

    def __init__(self, host: CompactionHost, block_size: int) -> None:
        self._host = host
        self._rewrite_min = min(REWRITE_MIN_BYTES, block_size // 4)
        self._touched: set[Block] = set()
        self._op: Compaction | None = None

    @property
    def in_flight(self) -> Compaction | None:
        """The compaction running now, if any."""
        return self._op

    @property
    def waiting(self) -> frozenset[Block]:
        """The blocks touched since they were last looked at."""
        return frozenset(self._touched)

    def touch(self, blk: Block) -> None:
        """Something in `blk` was removed: look at it with the next `start_next`."""
        self._touched.add(blk)

    def compacting(self, blk: Block) -> bool:
        op = self._op
        return op is not None and op.blk is blk

    def defer_erase(self, blk: Block, seq: int, subject: bytes) -> bool:
        """True when `blk` is being compacted: its file may be replaced any
        moment, so the erase is done on whichever file holds the record after."""
        op = self._op
        if op is None or op.blk is not blk:
            return False
        op.erased.append((seq, subject))
        return True

    def start_next(self) -> None:
        """Start compacting the oldest touched block that needs it; the others
        wait until that one is done (one compaction in flight per store)."""
        host = self._host
        if self._op is not None or host.closed:
            return
        touched = self._touched
        current = host.current_block()
        while touched:
            blk = min(touched, key=lambda b: b.number)
            touched.discard(blk)
            if blk is current or not host.holds_block(blk):
                continue
            if blk.live_bytes <= 0 or (
                blk.size >= self._rewrite_min and blk.live_bytes * 2 < blk.size
            ):
                self._start(blk)
                if self._op is not None:
                    return

    def settle(self) -> None:
        """Closing: a compaction whose write is on the disk thread is waited
        for and swapped in here; one not that far is dropped."""
        self._touched.clear()  # a closing store starts no compaction
        op = self._op
        if op is None:
            return
        op.erased = []  # a closing store writes no more
        if op.writing:
            op.finished.wait()
            self._written(op, op.result)
        op.cancelled = True
        self._op = None

    # -- the steps ---------------------------------------------------------------
    def _start(self, blk: Block) -> None:
        """Step 1: the block's records are read on the disk thread."""
        host = self._host
        try:
            fd = host.dup_reader(blk)
        except OSError:
            log.exception("store %s: compacting %s failed", host.directory, blk.path.name)
            return
        op = self._op = Compaction(blk)
        host.offload(
            functools.partial(read_records, fd, blk.size),
            functools.partial(self._read, op),
        )

    def _read(self, op: Compaction, result: object) -> None:
        """Step 2 (on the loop): choose what still matters, in bounded turns,
        then hand the write over."""
        host = self._host
        if op.cancelled or host.closed:
            return
        blk = op.blk
        try:
            if isinstance(result, BaseException):
                raise result
            assert isinstance(result, tuple)
            raw, records = result
            if isinstance(records, str):
                log.warning("store %s: leaving %s as is: %s", host.directory, blk.path.name, records)
                self._done(op)
                return
            op.raw = raw
            op.records = records
            op.size = codec.BLOCK_HEADER_SIZE
            # stamped before any choice: a delete from now on is stamped after the
            # new file, so its tombstone keeps hiding a record the file got a copy of
            op.stamp = host.next_stamp()
        except Exception:  # compaction is an optimization: the removals are durable
            log.exception("store %s: compacting %s failed", host.directory, blk.path.name)
            self._done(op)
            return
        self._plan_turn(op, None)

    def _plan_turn(self, op: Compaction, _result: object) -> None:
        """One turn of step 2: `PLAN_BATCH` records; the next turn comes back
        through the disk thread (so other work on the loop goes in between)."""
        host = self._host
        if op.cancelled or host.closed:
            return
        try:
            if not self._plan(op):
                host.offload(_nothing, functools.partial(self._plan_turn, op))
                return
            op.records = []
            if op.retire:
                self._retire(op)
            else:
                self._rewrite(op)
        except Exception:  # compaction is an optimization: the removals are durable
            log.exception("store %s: compacting %s failed", host.directory, op.blk.path.name)
            self._done(op)

    def _plan(self, op: Compaction) -> bool:
        """Choose among the next `PLAN_BATCH` records: which stay, the moved
        messages' new offsets. True once every record was looked at. A choice
        holds across turns: a message never comes back once gone, tombstones'
        fates change only with another compaction (not while this one runs),
        and the first block only moves up."""
        keeps, blk = self._host.keeps_record, op.blk
        spans, moves = op.spans, op.moves
        size = op.size
        start = op.planned
        end = min(start + PLAN_BATCH, len(op.records))
        for kind, seq, ts, pos, rec_len in op.records[start:end]:
            if not keeps(kind, seq, ts, blk):
                continue
            if kind == codec.KIND_MSG:
                moves.append((seq, size))
            spans.append((pos, rec_len))
            size += rec_len
        op.size = size
        op.planned = end
        if end < len(op.records):
            return False
        op.retire = not moves
        return True

    def _retire(self, op: Compaction) -> None:
        """Step 3 for a block with no present message: the records in it that
        still matter (tombstones hiding records in earlier blocks, FLOOR
        records) are appended to the current block, then fsynced, then the file
        goes (disk thread)."""
        host = self._host
        raw = op.raw
        parts = [raw[pos : pos + length] for pos, length in op.spans]
        op.raw = b""
        sync = None
        if parts:
            # its own fsync of the current block: a group commit waiting on the
            # store's unsynced state still makes its own (and acks after that one)
            sync = host.append_records(b"".join(parts), len(parts[-1]))
        op.writing = True
        host.offload(
            functools.partial(op.track, unlink_block, sync, op.blk.path, host.sync_always),
            functools.partial(self._written, op),
        )

    def _rewrite(self, op: Compaction) -> None:
        """Step 3 for a mostly-dead block: a new file with only what still
        matters (present messages, tombstones that may hide records in earlier
        blocks, FLOOR records), written and renamed in on the disk thread."""
        header = codec.encode_block_header(op.blk.first_seq, op.stamp)
        raw, op.raw = op.raw, b""
        op.writing = True
        self._host.offload(
            functools.partial(op.track, write_block, op.blk.path, header, raw, op.spans),
            functools.partial(self._written, op),
        )

    def _written(self, op: Compaction, result: object) -> None:
        """Step 4 (on the loop, or from `settle`): swap the new file in."""
        if op.cancelled:
            return
        op.cancelled = True  # done: a second call (close, then the loop) does nothing
        host, blk = self._host, op.blk
        try:
            if not isinstance(result, Written):
                log.error(
                    "store %s: compacting %s failed: %s", host.directory, blk.path.name, result
                )
                self._done(op)
                return
            if result.dir_error is not None:
                log.error(
                    "store %s: fsync of %s after compacting %s failed: %s",
                    host.directory, blk.path.parent, blk.path.name, result.dir_error,
                )
            if not host.sync_always or result.dir_error is not None:
                host.directory_changed()
            if op.retire:
                host.swap_retired(blk)
                log.debug("store %s: retired %s", host.directory, blk.path.name)
            else:
                log.debug(
                    "store %s: rewrote %s: %d -> %d bytes",
                    host.directory, blk.path.name, blk.size, op.size,
                )
                host.swap_rewritten(blk, op.stamp, op.size, op.moves, op.erased)
                op.erased = []
        except Exception:
            log.exception(
                "store %s: finishing the compaction of %s failed", host.directory, blk.path.name
            )
        self._done(op)

    def _done(self, op: Compaction) -> None:
        """The compaction ended (done or abandoned): erases that waited for it
        are done on the file that holds their records, the next one starts."""
        op.cancelled = True
        if self._op is op:
            self._op = None
        host = self._host
        if host.closed:
            return
        erased, op.erased = op.erased, []  # abandoned: the old file is in place
        host.redo_erases(op.blk, erased)
        host.release_dead_blocks()
        self.start_next()

