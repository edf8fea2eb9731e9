"""Block compaction's disk work, as jobs for the server's disk thread.

The file store's compactor (`compactor.BlockCompactor`) compacts a block in
four steps, one block at a time per store, so the event loop never waits for
block I/O; this module holds the disk work and the state of one compaction:

1. `read_records` (disk thread): read the block through a duplicated
   descriptor and list its records `(kind, seq, ts, pos, rec_len)`;
2. on the loop, in turns of a bounded number of records: the store takes a
   new operation stamp, then keeps the records that still matter (present
   messages, tombstones that may hide records in earlier blocks, FLOOR
   records; the index says which);
3. `write_block` (disk thread): temp file, fsync, rename over the block,
   fsync the directory; or `unlink_block` for a block with nothing left
   (after the fsync of the current block, which got the kept tombstones);
4. on the loop: the store swaps the new offsets in (`Compaction` carries
   what happened meanwhile: erases to redo on the new file).

Until step 4 every read of the block goes through the descriptor opened
before step 1 (the old file, also after the rename). The jobs touch no store
state; they only get bytes, paths and descriptors. Nothing here imports asyncio.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jetstream_server.core.clock import Offload as Offload  # the clock's, for file.py, factory.py
from jetstream_server.core.clock import run_inline as run_inline
from jetstream_server.store import codec
from jetstream_server.store.blocks import Block
from jetstream_server.store.durable_io import fsync_dir, replace_file

# (kind, seq, ts or tombstone stamp, offset in the block, record length)
Record = tuple[int, int, int, int, int]


@dataclass(slots=True)
class Compaction:
    """One block compaction in flight (see module docstring)."""

    blk: Block
    raw: bytes = b""
    records: list[Record] = field(default_factory=list)  # step 1's list, until chosen
    planned: int = 0  # records chosen so far (step 2 goes in bounded turns)
    spans: list[tuple[int, int]] = field(default_factory=list)  # (pos, length) kept
    retire: bool = False
    stamp: int = 0
    size: int = 0  # bytes of the new block file
    moves: list[tuple[int, int]] = field(default_factory=list)  # (seq, new offset)
    erased: list[tuple[int, bytes]] = field(default_factory=list)  # (seq, subject) to redo
    writing: bool = False  # step 3 was handed to the disk thread
    cancelled: bool = False  # the store closed: later steps do nothing
    result: Any = None  # step 3's outcome, kept for a close that cannot wait for the loop
    finished: threading.Event = field(default_factory=threading.Event)

    def track(self, job: Callable[..., Any], *args: Any) -> Any:
        """Run step 3's `job` (disk thread) and keep its outcome in `result`
        (an exception too), then set `finished`; returns or raises as the job."""
        try:
            self.result = job(*args)
        except BaseException as exc:
            self.result = exc
            raise
        finally:
            self.finished.set()
        return self.result


@dataclass(slots=True)
class Written:
    """What `write_block` / `unlink_block` did: the rename (or unlink)
    happened, so the new file is in place (or the block gone) whatever else
    failed; and the directory fsync's error if any."""

    renamed: bool
    dir_error: OSError | None = None


def read_records(fd: int, size: int) -> tuple[bytes, list[Record] | str]:
    """Read `size` bytes of a block (closes `fd`) and list its records; a
    string (what is wrong, and where) when a record does not scan."""
    try:
        chunks = []
        pos = 0
        while pos < size:
            chunk = os.pread(fd, size - pos, pos)
            if not chunk:
                break
            chunks.append(chunk)
            pos += len(chunk)
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    records: list[Record] = []
    pos, end = codec.BLOCK_HEADER_SIZE, len(raw)
    while pos < end:
        scan = codec.scan_record(raw, pos, end)
        if isinstance(scan, str):
            return raw, f"{scan} at {pos}"
        records.append((scan[0], scan[1], scan[2], pos, scan[6]))
        pos += scan[6]
    return raw, records


def write_block(
    path: Path, header: bytes, raw: bytes, spans: list[tuple[int, int]]
) -> Written:
    """Write `header` and the `(pos, length)` spans of `raw` as the new `path`:
    temp file, fsync, rename, fsync the directory (the tombstones the rewrite
    makes obsolete may go in later rewrites: the rename must be durable first).
    An interrupted write leaves no temp file and the old block intact."""
    view = memoryview(raw)
    replace_file(path, [b"".join([header, *(view[pos : pos + length] for pos, length in spans)])])
    try:
        fsync_dir(path.parent)
    except OSError as exc:
        return Written(True, exc)
    return Written(True)


def unlink_block(sync: Callable[[], None] | None, path: Path, sync_dir: bool) -> Written:
    """Retire a block: `sync` first (the current block holds the tombstones
    kept from it), then the unlink, then (with `sync_dir`) the directory.
    Raises if the block is still there; `renamed` means it is gone."""
    if sync is not None:
        sync()
    path.unlink(missing_ok=True)
    if sync_dir:
        try:
            fsync_dir(path.parent)
        except OSError as exc:
            return Written(True, exc)
    return Written(True)


def unlink_blocks(paths: list[Path], sync_dir: bool) -> None:
    """Remove dead front blocks (everything in them is below a FLOOR record
    already written); with `sync_dir` the directory is fsynced after."""
    for path in paths:
        path.unlink(missing_ok=True)
    if sync_dir and paths:
        fsync_dir(paths[0].parent)
