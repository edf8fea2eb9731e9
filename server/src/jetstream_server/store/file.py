"""`FileStore`: a stream kept in append-only block files (storage "file").

Directory layout (the store owns everything in it):

    LOCK                 flock'ed while open: one store per directory
    msgs/<n:010d>.blk    block files, record format in `codec`
    index.snap           index snapshot, present only after a clean close
    index.swap           while open: the index's page swap (the loaded
                         snapshot, renamed, and pages written since); removed
                         on close and, left by a crash, on open

Writes: every `store()` encodes one record and hands it to the OS with one
`os.write` on an O_APPEND descriptor before returning, so a killed process
loses nothing that was acknowledged. `sync()` fsyncs the current block (and the
directory after block files came or went); `begin_sync()` hands the same work
to another thread as a `SyncJob` (the engine's group commit runs it on the
server's disk thread, so the event loop never waits for an fsync), and an
erase's fsync rides along with the next sync. With `sync_always=True` the caller
(the stream) calls `sync()` itself, once per batch of stores (group commit).
Otherwise the store fsyncs on its own at least every `sync_interval_s`: checked
on each store (`maybe_sync`), plus a timer when a `clock` is given, so an idle
stream is synced too. A finished block keeps its descriptor until the next
sync() fsyncs it (at most `MAX_UNSYNCED_BLOCKS` wait).

Deletes append a DELETE record; `erase=True` also rewrites the message record
in place (payload zeroed, kind ERASED). `compact`/full purge append a FLOOR
record (a full purge first rolls to a new block). Front blocks are removed
once every sequence in them is gone. A block other than the current one whose
live messages are all gone is retired: the records in it that still matter
are appended to the current block first. A block other than the current one whose live
messages fill less than half of it is rewritten (temp file, fsync, rename)
with only its present messages, the tombstones that may still hide records in
earlier blocks, and FLOOR records: disk use stays proportional to live data
even when old messages pin `first_seq` (KV buckets). A tombstone is obsolete
once the block that held its message was rewritten after it (every tombstone
carries an operation stamp, every block header the stamp of its last write)
or retired (the index drops the removed entries of such a block: an entry
exists exactly while its record may be on disk).

Compaction (rewrite or retire) is `compactor.BlockCompactor`'s, which asks the
store through a narrow `CompactionHost` seam. It does its block I/O through
`offload` (the server's disk thread; inline without one), one block at a time,
in the steps of `compaction`: read and scan off the loop, choose the records on the loop,
write + fsync + rename (or fsync + unlink) off the loop, swap the offsets in
on the loop. Meanwhile reads of the block use the reader opened before it
started (the old file, even after the rename); a delete lands as usual (its
tombstone, stamped after the rewrite's, keeps hiding the copied record); an
erase waits and is done on whichever file holds the record afterwards; the
block is neither dropped nor compacted again until the swap. `close` waits
for a write in flight and swaps it in. A kill at any step leaves the old
block or the new one, each consistent with the tombstones (a `.tmp` is
removed on open).

Reads: the `MessageIndex` answers every query. Its page summaries and the
per-subject table are always in memory; a page's columns (sequence,
timestamp, subject id, size, block offset: 28 bytes a message) are loaded on
demand and paged out to `index.swap` under the process's index budget
(`pages`). Each block starts a new page. Payloads are read on demand
through a process-wide bounded LRU of 64 KiB block chunks (`cache`), a run
of them (`read_run`) with one `pread` per stretch of a block. Not
thread-safe: one owner (the server's loop thread) per store.

Recovery: a valid snapshot whose block list (names, sizes, mtimes) matches the
directory is loaded without reading the blocks, after verifying the last
record of the last block: its checksum is checked, then only the summaries
are read and the file becomes the page swap. Otherwise every block is scanned record by record
(`recovery`): a damaged record is skipped and every later record whose
checksum holds is kept, a torn tail is truncated, a block with a bad header is
dropped, each with a WARNING and the details (lost sequences included) in
`recovery` (RecoveryReport). The snapshot is deleted once loaded, so it can
never describe a later state.

Failures (disk full, I/O errors) never leave the index and the files out of
step: a failed append is cut off the block again (`ftruncate`), and if even
that fails the block is marked torn and every later append first retries the
cut, refusing to write until it succeeds; block and live-byte accounting
change only after a write succeeded; an interrupted rewrite leaves no `.tmp`
file. New directories and renames are fsynced into their parent directory.
"""

from __future__ import annotations

import bisect
import errno
import fcntl
import functools
import logging
import os
import shutil
import time
from array import array
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jetstream_server.core.clock import Clock, TimerHandle
from jetstream_server.store import codec
from jetstream_server.store.base import (
    FILE_OVERHEAD,
    MAX_SEQ,
    RecoveryReport,
    StoredMessage,
    StoreError,
)
from jetstream_server.store.blocks import Block, block_files, block_path
from jetstream_server.store.cache import CHUNK_SIZE, SHARED
from jetstream_server.store.compaction import Offload, run_inline, unlink_blocks
from jetstream_server.store.compactor import BlockCompactor
from jetstream_server.store.durable_io import fsync_dir
from jetstream_server.store.index import EXTRA, SEQS, SIDS, SIZES, Loc, MessageIndex
from jetstream_server.store.indexed import IndexedStore
from jetstream_server.store.pages import Page, PageSwap
from jetstream_server.store.recovery import scan_blocks
from jetstream_server.store.runs import BufferRun, MessageRun
from jetstream_server.store.snapshot import SnapshotError, read_snapshot, write_snapshot

log = logging.getLogger(__name__)

DEFAULT_BLOCK_SIZE = 32 * 1024 * 1024
MIN_BLOCK_SIZE = 4096
MAX_BLOCK_SIZE = 1 << 31
MSGS_DIR = "msgs"
SNAPSHOT_FILE = "index.snap"
SWAP_FILE = "index.swap"
LOCK_FILE = "LOCK"
SNAPSHOT_VERSION = 3  # 3: paged index, page images stay in the file
MAX_READ_FDS = 64
MAX_UNSYNCED_BLOCKS = 8
RUN_SPAN = 1 << 20  # most bytes one read of a run covers
RUN_GAP = 16 * 1024  # records further apart than this are read separately
_HEAD = codec.RECORD_HEAD_SIZE


class FileStore(IndexedStore):
    """Messages in block files under `directory`; identical semantics to `MemoryStore`."""

    overhead = FILE_OVERHEAD

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        block_size: int = DEFAULT_BLOCK_SIZE,
        sync_always: bool = False,
        sync_interval_s: float = 120.0,
        clock: Clock | None = None,
        offload: Offload | None = None,
    ) -> None:
        if not MIN_BLOCK_SIZE <= block_size <= MAX_BLOCK_SIZE:
            raise ValueError(f"block_size must be in [{MIN_BLOCK_SIZE}, {MAX_BLOCK_SIZE}]")
        if sync_interval_s <= 0:
            raise ValueError("sync_interval_s must be positive")
        self._dir = Path(directory)
        self._msgs_dir = self._dir / MSGS_DIR
        self._swap: PageSwap | None = None
        super().__init__(MessageIndex(extra=("I",), drop_removed=False))
        self._block_size = block_size
        self._sync_always = sync_always
        self._sync_interval_ns = int(sync_interval_s * 1e9)
        self._clock = clock
        self._blocks: list[Block] = []
        self._firsts: list[int] = []
        # (block, first_seq, next block's first_seq) of the last look-up of a
        # block before the current one; cleared whenever blocks go
        self._hot_block: tuple[Block, int, int] | None = None
        self._wfd = -1
        self._tail: tuple[int, int] | None = None  # (offset, rec_len) of the last record
        self._stamp = 1  # operation stamp: the next tombstone or block (re)write gets it
        self._unsynced = False
        self._dir_dirty = False
        self._cache = SHARED
        self._token = SHARED.new_token()
        # (block number, chunk, bytes) of the last chunk read: consecutive reads
        # skip the shared cache; dropped wherever this store's chunks are dropped
        self._last_chunk: tuple[int, int, bytes] | None = None
        self._open_fds = 0
        self._unsynced_fds: list[int] = []  # finished blocks awaiting their fsync
        self._erase_fds: dict[int, int] = {}  # block number -> descriptor, erased in place
        self._recovery = RecoveryReport()
        self._timer: TimerHandle | None = None
        self._torn: int | None = None  # offset of a failed append still in the current block
        # block compaction: its disk work goes to `offload` (the server's disk
        # thread), one block at a time (see `compactor`)
        self._offload: Offload = run_inline  # `offload` once open
        self.compactor = BlockCompactor(self, block_size)
        _make_dirs(self._msgs_dir)
        self._lock_fd = self._lock()
        try:
            self._open()
        except BaseException:
            self._release_fds()
            raise
        self._offload = offload or run_inline
        self._last_sync_ns = self._now_ns()
        if clock is not None and not sync_always:
            self._arm_timer()

    # -- opening -------------------------------------------------------------
    def _lock(self) -> int:
        fd = os.open(self._dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise StoreError(f"store directory {self._dir} is in use by another store") from err
            raise
        return fd

    def _open(self) -> None:
        for leftover in self._msgs_dir.glob("*.tmp"):
            leftover.unlink()  # an interrupted block rewrite; the original is intact
        swap_path = self._dir / SWAP_FILE
        swap_path.unlink(missing_ok=True)  # a crashed run's scratch: means nothing now
        files = block_files(self._msgs_dir)
        snap = self._dir / SNAPSHOT_FILE
        used = False
        if snap.exists():
            try:
                used = self._load_snapshot(snap, files)
            except (SnapshotError, ValueError, KeyError, TypeError, IndexError, OSError) as err:
                log.warning(
                    "store %s: ignoring index snapshot (%s); scanning blocks", self._dir, err
                )
                self._recovery.notes.append(f"snapshot ignored: {err}")
            if used:
                # the snapshot's page images are the swap's first content; under
                # its new name it can never be taken for a snapshot again
                os.replace(snap, swap_path)
                self._swap = PageSwap(swap_path, adopt=True)
                self._adopt_swap()
            else:
                snap.unlink()
            self._dir_dirty = True
        if not used:
            self._reset_index()
            self._scan(files)
        if not self._blocks:
            self._create_block(1, self._index.last_seq + 1)
        else:
            last = self._blocks[-1]
            self._wfd = os.open(last.path, os.O_WRONLY | os.O_APPEND)
        self._recovery.recovered_msgs = self._index.msgs
        self._drop_dead_blocks()
        if not used:
            for blk in self._blocks:
                self._recount_live(blk)

    def _reset_index(self) -> None:
        """An empty index with a new, empty page swap."""
        self._index.close()
        if self._swap is not None:
            self._swap.close()
        self._swap = PageSwap(self._dir / SWAP_FILE)
        self._index = MessageIndex(extra=("I",), swap=self._swap, drop_removed=False)
        self._blocks.clear()
        self._hot_block = None
        self._firsts.clear()
        self._tail = None

    def _load_snapshot(self, snap: Path, files: list[tuple[int, Path]]) -> bool:
        meta, arrays = read_snapshot(snap)
        if meta.get("version") != SNAPSHOT_VERSION:
            raise SnapshotError(f"snapshot version {meta.get('version')}")
        described = meta["blocks"]
        if [b[0] for b in described] != [number for number, _ in files]:
            raise SnapshotError("block files differ from the snapshot")
        for (number, size, mtime_ns, _first, _stamp, _live), (_n, path) in zip(
            described, files, strict=True
        ):
            st = path.stat()
            if st.st_size != size or st.st_mtime_ns != mtime_ns:
                raise SnapshotError(f"block {number} changed since the snapshot")
        dead = arrays.pop("dead")
        pages: list[Page] = []
        for summary, image in zip(meta["pages"], meta["images"], strict=True):
            first, last, n, live, nbytes, first_ts, subjects, dead_at, dead_len = summary
            page = Page(None)
            page.first, page.last, page.n, page.live = first, last, n, live
            page.bytes, page.first_ts = nbytes, first_ts
            page.subjects = None if subjects is None else {int(k): int(v) for k, v in subjects}
            if dead_at >= 0:
                page.dead = bytearray(dead[dead_at : dead_at + dead_len])
                if len(page.dead) != dead_len or dead_len < (n + 7) >> 3:
                    raise SnapshotError("snapshot removal bitmaps are cut short")
            page.image = (int(image[0]), int(image[1]), int(image[2]))
            page.dirty = False
            pages.append(page)
        index = MessageIndex(extra=("I",), drop_removed=False)
        index.restore(meta["index"], arrays, pages)
        for number, _size, _mtime, first, stamp, live in described:
            blk = Block(number, block_path(self._msgs_dir, number), first, stamp, _size)
            blk.live_bytes = live
            self._add_block(blk)
        self._stamp = int(meta["stamp"])
        tail = meta.get("tail")
        self._tail = (int(tail[0]), int(tail[1])) if tail else None
        self._verify_tail()
        self._index = index
        self._recovery.used_snapshot = True
        return True

    def _adopt_swap(self) -> None:
        """The loaded snapshot's index pages out to (and reads from) the swap."""
        assert self._swap is not None
        self._index.attach_swap(self._swap)

    def _verify_tail(self) -> None:
        """The last record of the last block must be intact (snapshot path)."""
        if not self._blocks:
            return
        blk = self._blocks[-1]
        with open(blk.path, "rb") as fh:
            codec.decode_block_header(fh.read(codec.BLOCK_HEADER_SIZE))
            if self._tail is None:
                if blk.size != codec.BLOCK_HEADER_SIZE:
                    raise SnapshotError("last block has records the snapshot does not know")
                return
            offset, rec_len = self._tail
            if offset + rec_len != blk.size:
                raise SnapshotError("snapshot tail is not at the end of the last block")
            fh.seek(offset)
            raw = fh.read(rec_len)
        scan = codec.scan_record(raw, 0, len(raw))
        if isinstance(scan, str):
            raise SnapshotError(f"last record is damaged: {scan}")

    def _scan(self, files: list[tuple[int, Path]]) -> None:
        result = scan_blocks(str(self._dir), files, self._index, self._recovery)
        for blk in result.blocks:
            self._add_block(blk)
        self._tail = result.tail
        self._stamp = max(self._stamp, result.next_stamp)
        if result.changed:
            self._dir_dirty = True

    def _add_block(self, blk: Block) -> None:
        self._blocks.append(blk)
        self._firsts.append(blk.first_seq)

    def _create_block(self, number: int, first_seq: int) -> Block:
        path = block_path(self._msgs_dir, number)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        try:
            stamp = self.next_stamp()
            self._write_all(fd, codec.encode_block_header(first_seq, stamp))
        except BaseException:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        if self._wfd >= 0:
            if self._unsynced:
                # the next sync() fsyncs the finished block too
                self._unsynced_fds.append(self._wfd)
            else:
                os.close(self._wfd)
        self._wfd = fd
        blk = Block(number, path, first_seq, stamp, codec.BLOCK_HEADER_SIZE)
        self._add_block(blk)
        self._index.seal()  # a block's entries are whole pages
        self._tail = None
        self._dir_dirty = True
        self._unsynced = True
        return blk

    # -- writing -------------------------------------------------------------
    @staticmethod
    def _write_all(fd: int, data: bytes) -> None:
        written = os.write(fd, data)
        if written == len(data):
            return
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view) :]

    def _cut_torn(self) -> None:
        """Remove the bytes of a failed append whose first cut failed (see `_append`)."""
        assert self._torn is not None
        blk = self._blocks[-1]
        try:
            os.ftruncate(self._wfd, self._torn)
        except OSError as err:
            raise StoreError(
                f"block {blk.path.name} still holds a failed write that cannot be cut off: "
                f"{err.strerror or err}"
            ) from err
        log.info("store %s: cut the failed write off %s", self._dir, blk.path.name)
        self._torn = None

    def _roll(self, first_seq: int) -> Block:
        try:
            blk = self._create_block(self._blocks[-1].number + 1, first_seq)
            if len(self._unsynced_fds) > MAX_UNSYNCED_BLOCKS:
                fd = self._unsynced_fds[0]
                os.fsync(fd)  # on failure it stays queued for the next sync()
                self._unsynced_fds.pop(0)
                os.close(fd)
        except OSError as err:
            raise StoreError(f"starting a new block in {self._msgs_dir} failed: {err}") from err
        return blk

    def _append(self, data: bytes, last_len: int) -> tuple[Block, int]:
        """Append `data` (whole records, the last of `last_len` bytes) to the current block."""
        if self._torn is not None:
            self._cut_torn()
        blk = self._blocks[-1]
        if blk.size > codec.BLOCK_HEADER_SIZE and blk.size + len(data) > self._block_size:
            blk = self._roll(self._index.last_seq + 1)
        pages = self._index.pages
        if pages and pages[-1].first < blk.first_seq:
            # the last page holds entries of an earlier block (a block rewritten, then a
            # restart): these records start a page of their own, as a block's entries are
            # whole pages (reads find a page's records in the block of its first entry)
            self._index.seal()
        offset = blk.size
        try:
            self._write_all(self._wfd, data)
        except OSError as err:
            try:
                os.ftruncate(self._wfd, offset)
            except OSError as cut_err:
                # the next append must not land after these bytes: it retries the cut first
                self._torn = offset
                log.error(
                    "store %s: cannot cut a failed write off %s (%s); writes wait until it can",
                    self._dir, blk.path.name, cut_err,
                )
            raise StoreError(f"writing to block {blk.path.name} failed: {err.strerror or err}") from err
        blk.size += len(data)
        self._tail = (blk.size - last_len, last_len)
        self._unsynced = True
        return blk, offset

    def _put(
        self, seq: int, subject: str, headers: bytes | None, data: bytes, timestamp_ns: int
    ) -> int:
        rec = codec.encode_record(
            codec.KIND_MSG, seq, timestamp_ns, subject.encode(), headers or b"", data
        )
        blk, offset = self._append(rec, len(rec))
        blk.live_bytes += len(rec) - (codec.RECLEN_HDR if headers else codec.RECLEN_PLAIN)
        if not self._sync_always:
            # maybe_sync() inlined (once per message); the write above left us unsynced
            clock = self._clock
            now = clock.now_ns() if clock is not None else time.monotonic_ns()
            if now - self._last_sync_ns >= self._sync_interval_ns:
                self.sync()
        return offset

    def _drop(self, seqs: Sequence[int], erase: bool) -> None:
        index = self._index
        stamp = self.next_stamp()
        if len(seqs) == 1:
            recs = codec.encode_delete(seqs[0], stamp)
        else:
            recs = b"".join([codec.encode_delete(seq, stamp) for seq in seqs])
        self._append(recs, codec.RECORD_FIXED)  # first: a failure changes nothing
        for seq in seqs:
            blk = self._block_for(seq)
            blk.live_bytes -= index.size_of(seq)
            self.compactor.touch(blk)
        if erase:
            for seq in seqs:
                try:
                    self._erase(seq)
                except OSError:
                    # the tombstone is written: the message is gone either way
                    log.exception("store %s: could not overwrite message %d", self._dir, seq)

    def _erase(self, seq: int) -> None:
        index = self._index
        blk = self._block_for(seq)
        subject = index.subject_at(seq).encode()
        if self.compactor.defer_erase(blk, seq, subject):
            return  # done on whichever file holds the record once the compaction ends
        self._erase_at(blk, index.extra_of(seq), seq, subject)

    def _erase_at(self, blk: Block, offset: int, seq: int, subject: bytes) -> None:
        head = self._read(blk, offset, _HEAD)
        _rec_len, _kind, _seq, ts, slen, hlen, dlen = codec.RECORD_HEAD.unpack_from(head, 0)
        rec = codec.encode_erased(seq, ts, subject, hlen, dlen)
        fd = os.open(blk.path, os.O_WRONLY)
        try:
            os.pwrite(fd, rec, offset)
        except BaseException:
            os.close(fd)
            raise
        # fsynced (and closed) with the next sync, off the loop thread with begin_sync();
        # one descriptor per block is enough (fsync covers the file)
        if blk is self._blocks[-1] or blk.number in self._erase_fds:
            os.close(fd)
        else:
            self._erase_fds[blk.number] = fd
        self._unsynced = True
        for chunk in range(offset // CHUNK_SIZE, (offset + len(rec) - 1) // CHUNK_SIZE + 1):
            self._cache.discard((self._token, blk.number, chunk))
        self._last_chunk = None

    def _floor(self, seq: int) -> int:
        index = self._index
        if seq > index.last_seq:
            self._roll(seq)
        self._append(codec.encode_floor(seq, index.last_ts), codec.RECORD_FIXED)
        if seq <= index.last_seq:
            self._discount_below(seq)
        removed = index.floor(seq)
        self._drop_dead_blocks()
        return removed

    def _skip(self, last_seq: int) -> None:
        # an ERASED record of no message: recovery replays it as "last_seq moves here"
        rec = codec.encode_record(codec.KIND_ERASED, last_seq, self._index.last_ts, b"", b"", b"")
        self._append(rec, len(rec))

    def _discount_below(self, seq: int) -> None:
        """Take the messages below `seq` off their blocks' live bytes (whole
        pages from their summaries)."""
        index = self._index
        i = bisect.bisect_right(self._firsts, index.first_seq) - 1
        while i < len(self._blocks) and self._firsts[i] < seq:
            blk = self._blocks[i]
            nxt = self._firsts[i + 1] if i + 1 < len(self._blocks) else index.last_seq + 1
            blk.live_bytes -= index.live_bytes(max(blk.first_seq, index.first_seq), min(nxt, seq))
            i += 1

    def _removed(self) -> None:
        self.release_dead_blocks()
        self.compactor.start_next()

    def release_dead_blocks(self) -> None:
        """Unlink the front blocks whose every sequence is below first_seq."""
        if len(self._blocks) > 1 and self._firsts[1] <= self._index.first_seq:
            self._drop_dead_blocks()

    def next_stamp(self) -> int:
        stamp = self._stamp
        self._stamp += 1
        return stamp

    def _needed_delete(self, seq: int, stamp: int, blk: Block) -> bool:
        """Must a tombstone for `seq` (stamped `stamp`), found in `blk`, be kept?
        Only while the record it hides may still be on disk in an earlier block:
        a block (re)written after the tombstone no longer holds that record."""
        if seq < self._firsts[0] or seq >= blk.first_seq:
            return False
        index = self._index
        if seq >= index.known_from and not index.has_entry(seq):
            # the index has an entry for every sequence whose record may be on
            # disk: never stored, or its block was rewritten or retired since
            return False
        return stamp >= self._block_for(seq).stamp

    # -- what the compactor asks (see `compactor.CompactionHost`) -----------------
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def sync_always(self) -> bool:
        return self._sync_always

    def offload(self, job: Callable[[], Any], done: Callable[[Any], None]) -> None:
        self._offload(job, done)

    def current_block(self) -> Block:
        return self._blocks[-1]

    def holds_block(self, blk: Block) -> bool:
        return blk in self._blocks

    def dup_reader(self, blk: Block) -> int:
        """A duplicate of `blk`'s reader: opened now if needed and kept
        (`_open_reader` never closes a block being compacted) until the swap,
        so reads go on seeing the old file even after the rename."""
        if blk.rfd < 0:
            self._open_reader(blk)
        return os.dup(blk.rfd)

    def keeps_record(self, kind: int, seq: int, ts: int, blk: Block) -> bool:
        if kind == codec.KIND_MSG:
            return self._index.present(seq)
        if kind == codec.KIND_DELETE:
            return self._needed_delete(seq, ts, blk)
        return kind == codec.KIND_FLOOR and seq > self._firsts[0]

    def append_records(self, data: bytes, last_len: int) -> SyncJob:
        self._append(data, last_len)
        # its own fsync of the current block (a duplicate descriptor): the
        # store's unsynced state stays as it is
        return SyncJob([os.dup(self._wfd)], None)

    def directory_changed(self) -> None:
        self._dir_dirty = True

    def swap_retired(self, blk: Block) -> None:
        lo, hi = self._block_range(blk)
        self._index.rebuild_range(lo, hi, {})  # its removed records are gone from disk
        i = self._blocks.index(blk)
        del self._blocks[i]
        self._hot_block = None
        del self._firsts[i]
        self._close_block(blk)

    def swap_rewritten(
        self,
        blk: Block,
        stamp: int,
        size: int,
        moves: Sequence[tuple[int, int]],
        erased: Sequence[tuple[int, bytes]],
    ) -> None:
        self._close_block(blk)  # its reader still saw the replaced file
        blk.stamp = stamp
        lo, hi = self._block_range(blk)
        # new offsets also for messages deleted meanwhile: their records are in
        # the new file; the other removed entries' records are gone
        self._index.rebuild_range(lo, hi, dict(moves))
        blk.size = size
        self.redo_erases(blk, erased)

    def redo_erases(self, blk: Block, erased: Sequence[tuple[int, bytes]]) -> None:
        for seq, subject in erased:
            if self._index.has_entry(seq):
                try:
                    self._erase_at(blk, self._index.extra_of(seq), seq, subject)
                except OSError:  # the tombstone is written: the message is gone either way
                    log.exception("store %s: could not overwrite message %d", self._dir, seq)

    def _block_range(self, blk: Block) -> tuple[int, int]:
        """The sequences this block may hold: [lo, hi)."""
        i = self._blocks.index(blk)
        nxt = self._firsts[i + 1] if i + 1 < len(self._blocks) else MAX_SEQ
        return blk.first_seq, nxt

    def _recount_live(self, blk: Block) -> None:
        lo, hi = self._block_range(blk)
        blk.live_bytes = self._index.live_bytes(lo, hi)

    def _close_block(self, blk: Block) -> None:
        if blk.rfd >= 0:
            os.close(blk.rfd)
            blk.rfd = -1
            self._open_fds -= 1
        self._cache.forget(self._token, blk.number)
        self._last_chunk = None

    def _drop_dead_blocks(self) -> None:
        """Unlink front blocks whose every sequence is below first_seq (never the
        current one, nor one being compacted: that waits until it is done)."""
        first = self._index.first_seq
        paths: list[Path] = []
        while len(self._blocks) > 1 and self._firsts[1] <= first:
            if self.compactor.compacting(self._blocks[0]):
                break
            blk = self._blocks.pop(0)
            self._hot_block = None
            self._firsts.pop(0)
            self._close_block(blk)
            paths.append(blk.path)
        if paths:
            # the FLOOR record that makes them dead is written: the files may
            # go any time (a kill first leaves them, and recovery drops them)
            self._dir_dirty = True
            self._offload(
                functools.partial(unlink_blocks, paths, self._sync_always),
                functools.partial(self._unlinked, paths),
            )

    def _unlinked(self, paths: list[Path], result: object) -> None:
        if isinstance(result, BaseException):
            log.error("store %s: removing %s failed: %s", self._dir, paths[0].name, result)

    # -- reading -------------------------------------------------------------
    def _block_for(self, seq: int) -> Block:
        hot = self._hot_block
        if hot is not None and hot[1] <= seq < hot[2]:
            return hot[0]
        i = bisect.bisect_right(self._firsts, seq) - 1
        blk = self._blocks[i]
        if i + 1 < len(self._blocks):
            self._hot_block = (blk, blk.first_seq, self._firsts[i + 1])
        return blk

    def _read(self, blk: Block, offset: int, length: int) -> bytes:
        buf, rel = self._read_in(blk, offset, length)
        return buf[rel : rel + length]

    def _read_in(self, blk: Block, offset: int, length: int) -> tuple[bytes, int]:
        """A buffer holding the `length` bytes at `offset` (unless the file is
        shorter), and where they start in it: a cached chunk, no copy."""
        chunk = offset // CHUNK_SIZE
        start = chunk * CHUNK_SIZE
        end = offset + length
        if blk.rfd < 0:
            self._open_reader(blk)
        if end > start + CHUNK_SIZE:
            return os.pread(blk.rfd, length, offset), 0
        last = self._last_chunk
        if (
            last is not None
            and last[0] == blk.number
            and last[1] == chunk
            and len(last[2]) >= end - start
        ):
            return last[2], offset - start  # the chunk the previous read used
        key = (self._token, blk.number, chunk)
        cached = self._cache.get(key)
        if cached is None or len(cached) < end - start:
            cached = os.pread(blk.rfd, CHUNK_SIZE, start)
            self._cache.put(key, cached)
        self._last_chunk = (blk.number, chunk, cached)
        return cached, offset - start

    def _open_reader(self, blk: Block) -> None:
        if self._open_fds >= MAX_READ_FDS:
            for other in self._blocks:  # close the oldest open reader
                if other.rfd >= 0 and not self.compactor.compacting(other):
                    os.close(other.rfd)
                    other.rfd = -1
                    self._open_fds -= 1
                    break
        blk.rfd = os.open(blk.path, os.O_RDONLY)
        self._open_fds += 1

    def _get(self, seq: int, loc: Loc) -> StoredMessage:
        index = self._index
        page, i = loc
        cols = page.cols
        if cols is None or page is not index.mru:
            cols = index.cols(page)
        offset = cols[EXTRA][i]
        size = cols[SIZES][i]
        # the record is size + 1 bytes (with headers) or size + 5 (without):
        # read the shorter, and the longer only if the buffer did not hold it
        longest = size + codec.RECLEN_PLAIN
        blk = self._blocks[-1] if seq >= self._firsts[-1] else self._block_for(seq)
        raw, rel = self._read_in(blk, offset, size + codec.RECLEN_HDR)
        scan = codec.scan_record(raw, rel, min(len(raw), rel + longest))
        if isinstance(scan, str) and len(raw) - rel < longest:
            raw, rel = self._read_in(blk, offset, longest)
            scan = codec.scan_record(raw, rel, min(len(raw), rel + longest))
        if (
            isinstance(scan, str)
            or scan[0] != codec.KIND_MSG
            or scan[1] != seq
            or scan[6] != (size + codec.RECLEN_HDR if scan[4] else longest)
        ):
            why = scan if isinstance(scan, str) else f"found kind {scan[0]} seq {scan[1]}"
            raise StoreError(
                f"record for sequence {seq} in {blk.path.name} at offset {offset} is damaged: {why}"
            )
        _kind, _seq, ts, slen, hlen, dlen, _ = scan
        start = rel + _HEAD + slen
        headers = raw[start : start + hlen] if hlen else None
        data = raw[start + hlen : start + hlen + dlen]
        return StoredMessage(index.names[cols[SIDS][i]], seq, ts, headers, data)

    def _read_run(
        self, slices: list[tuple[Page, list[Any], Sequence[Any]]], next_seq: int
    ) -> MessageRun:
        """One `pread` per stretch of a block holding the run's records (at most
        `RUN_SPAN` bytes, records at most `RUN_GAP` apart), every record's
        checksum checked as it is decoded. A page's entries are in one block.

        The positions and the columns' values are `Any` on purpose: compiled, an
        `int` local is unboxed, and boxed again (a new object above 256) each time
        it indexes a column or joins a list; as `Any` the same object passes
        through, as it does interpreted."""
        names = self._index.names
        unpack = codec.RECORD_HEAD.unpack_from
        kind_msg, plain, hdr = codec.KIND_MSG, codec.RECLEN_PLAIN, codec.RECLEN_HDR
        bufs: list[bytes] = []
        r_seqs: list[Any] = []
        r_ts: list[Any] = []
        r_subjects: list[str] = []
        r_sizes: list[Any] = []
        r_buf: list[Any] = []
        r_at: list[Any] = []
        r_hlen: list[Any] = []
        r_dlen: list[Any] = []
        damaged: str | None = None
        for page, cols, positions in slices:
            seqs, sids, sizes, offs = cols[SEQS], cols[SIDS], cols[SIZES], cols[EXTRA]
            blk = self._block_for(page.first)
            count = len(positions)
            g = 0
            while g < count and damaged is None:
                # one stretch: records close together, at most RUN_SPAN bytes
                first = positions[g]
                start = offs[first]
                stop = start + sizes[first] + plain
                h = g + 1
                if not g and isinstance(positions, range) and count > 1:
                    # consecutive entries (the usual run): one stretch for all when they are
                    # within RUN_SPAN and their gaps together within RUN_GAP
                    last = positions[-1]
                    end = offs[last] + sizes[last] + plain
                    held = sum(sizes[positions.start : positions.stop]) + count * plain
                    if end - start <= RUN_SPAN and end - start - held <= RUN_GAP:
                        stop, h = end, count
                while h < count:
                    p = positions[h]
                    offset = offs[p]
                    end = offset + sizes[p] + plain
                    if offset - stop > RUN_GAP or end - start > RUN_SPAN:
                        break
                    if end > stop:
                        stop = end
                    h += 1
                if blk.rfd < 0:
                    self._open_reader(blk)
                buf = os.pread(blk.rfd, stop - start, start)
                view = memoryview(buf)
                have = len(buf)
                bufs.append(buf)
                b = len(bufs) - 1
                for p in positions[g:h]:
                    rel = offs[p] - start
                    size = sizes[p]
                    seq = seqs[p]
                    if rel + codec.RECORD_FIXED > have:
                        damaged = f"record for sequence {seq} is cut short"
                    else:
                        rec_len, kind, rseq, ts, slen, hlen, dlen = unpack(buf, rel)
                        stop_at = rel + rec_len
                        if (
                            kind != kind_msg
                            or rseq != seq
                            or rec_len != size + (hdr if hlen else plain)
                            or stop_at > have
                            or not codec.checksum_holds(view[rel:stop_at])
                        ):
                            scan = codec.scan_record(buf, rel, have)
                            why = scan if isinstance(scan, str) else f"found kind {kind} seq {rseq}"
                            damaged = (
                                f"record for sequence {seq} in {blk.path.name} at offset "
                                f"{offs[p]} is damaged: {why}"
                            )
                    if damaged is not None:
                        if not r_seqs:
                            raise StoreError(damaged)
                        next_seq = seq  # the next read starts at the damaged record
                        break
                    r_seqs.append(seq)
                    r_ts.append(ts)
                    r_subjects.append(names[sids[p]])
                    r_sizes.append(size)
                    r_buf.append(b)
                    r_at.append(rel + _HEAD + slen)
                    r_hlen.append(hlen)
                    r_dlen.append(dlen)
                g = h
            if damaged is not None:
                break
        return BufferRun.build(
            next_seq, bufs, r_seqs, r_ts, r_subjects, r_sizes, r_buf, r_at, r_hlen, r_dlen
        )

    # -- durability and lifecycle -----------------------------------------------
    def _now_ns(self) -> int:
        return self._clock.now_ns() if self._clock is not None else time.monotonic_ns()

    def maybe_sync(self, now_ns: int | None = None) -> bool:
        """fsync if the last sync is `sync_interval_s` old; True when it synced."""
        now = self._now_ns() if now_ns is None else now_ns
        if self._unsynced and now - self._last_sync_ns >= self._sync_interval_ns:
            self.sync()
            return True
        return False

    def _arm_timer(self) -> None:
        assert self._clock is not None
        self._timer = self._clock.call_later(self._sync_interval_ns / 1e9, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._closed:
            return
        try:
            self.maybe_sync()
        except OSError:
            log.exception("store %s: periodic fsync failed", self._dir)
        self._arm_timer()

    def _fsync_data(self) -> None:
        while self._erase_fds:
            number, fd = next(iter(self._erase_fds.items()))
            os.fsync(fd)
            os.close(fd)
            del self._erase_fds[number]
        while self._unsynced_fds:
            fd = self._unsynced_fds[0]
            os.fsync(fd)
            os.close(fd)
            self._unsynced_fds.pop(0)
        if self._unsynced:
            os.fsync(self._wfd)
            self._unsynced = False

    def begin_sync(self) -> SyncJob | None:
        """Take what `sync()` would fsync as a job that may run on another thread
        (the server's disk thread) while this store goes on: the descriptors are
        duplicated, so closing or rolling blocks meanwhile is harmless; the store
        counts as synced from here. On the job's failure call `sync_failed()`
        (on the owner's thread): the next sync covers everything again. None
        when nothing waits for an fsync."""
        self._check_open()
        fds: list[int] = []
        try:
            if self._unsynced:
                fds.append(os.dup(self._wfd))
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        fds.extend(self._unsynced_fds)  # handed over: the job closes them
        fds.extend(self._erase_fds.values())
        self._unsynced_fds = []
        self._erase_fds = {}
        directory = self._msgs_dir if self._dir_dirty else None
        if not fds and directory is None:
            return None
        self._unsynced = False
        self._dir_dirty = False
        self._last_sync_ns = self._now_ns()
        return SyncJob(fds, directory)

    def sync_failed(self) -> None:
        """A `begin_sync()` job failed: count everything as unsynced again."""
        self._unsynced = True
        self._dir_dirty = True

    def sync(self) -> None:
        self._check_open()
        self._fsync_data()
        if self._dir_dirty:
            dfd = os.open(self._msgs_dir, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
            self._dir_dirty = False
        self._last_sync_ns = self._now_ns()

    @property
    def pending_sync(self) -> bool:
        """True while some stored bytes have not been fsynced yet."""
        return self._unsynced or self._dir_dirty

    @property
    def recovery(self) -> RecoveryReport:
        return self._recovery

    @property
    def directory(self) -> Path:
        return self._dir

    def _snapshot(self) -> None:
        index = self._index
        meta, arrays = index.export_meta()
        dead = array("B")
        pages = []
        for page in index.pages:
            dead_at, dead_len = -1, 0
            if page.dead is not None:
                dead_at, dead_len = len(dead), len(page.dead)
                dead.frombytes(page.dead)
            subjects = None if page.subjects is None else sorted(page.subjects.items())
            pages.append(
                [page.first, page.last, page.n, page.live, page.bytes, page.first_ts,
                 subjects, dead_at, dead_len]
            )
        arrays = dict(arrays, dead=dead)
        blocks = []
        for blk in self._blocks:
            st = blk.path.stat()
            blocks.append(
                [blk.number, st.st_size, st.st_mtime_ns, blk.first_seq, blk.stamp, blk.live_bytes]
            )
        write_snapshot(
            self._dir / SNAPSHOT_FILE,
            {
                "version": SNAPSHOT_VERSION,
                "blocks": blocks,
                "tail": self._tail,
                "stamp": self._stamp,
                "index": meta,
                "pages": pages,
            },
            arrays,
            (index.page_image(page) for page in index.pages),
        )
        dfd = os.open(self._dir, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    def _release_fds(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for blk in self._blocks:
            if blk.rfd >= 0:
                os.close(blk.rfd)
                blk.rfd = -1
        self._open_fds = 0
        for fd in [*self._unsynced_fds, *self._erase_fds.values()]:
            os.close(fd)
        self._unsynced_fds.clear()
        self._erase_fds.clear()
        if self._wfd >= 0:
            os.close(self._wfd)
            self._wfd = -1
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
        self._cache.forget(self._token)
        self._last_chunk = None
        self._index.close()
        if self._swap is not None:
            # left on disk: a crash leaves it too; the next open removes it
            self._swap.close(unlink=False)
            self._swap = None

    def close(self) -> None:
        if self._closed:
            return
        try:
            self.compactor.settle()
            self.sync()
            self._snapshot()
        finally:
            self._closed = True
            self._release_fds()
            (self._dir / SWAP_FILE).unlink(missing_ok=True)

    def destroy(self) -> None:
        self.compactor.settle()
        self._closed = True
        self._release_fds()
        shutil.rmtree(self._dir, ignore_errors=True)


class SyncJob:
    """fsync these descriptors (then close them) and a directory; touches no
    store state, so it may run on any thread (see `FileStore.begin_sync`)."""

    __slots__ = ("fds", "directory")

    def __init__(self, fds: list[int], directory: Path | None) -> None:
        self.fds = fds
        self.directory = directory

    def __call__(self) -> None:
        error: OSError | None = None
        for fd in self.fds:
            try:
                os.fsync(fd)
            except OSError as exc:
                error = error or exc
            finally:
                os.close(fd)
        self.fds = []
        if self.directory is not None:
            fsync_dir(self.directory)
        if error is not None:
            raise error


def _make_dirs(path: Path) -> None:
    """`mkdir -p` that fsyncs each directory it creates into its parent."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    path.mkdir(parents=True, exist_ok=True)
    for created in reversed(missing):
        fsync_dir(created.parent)
