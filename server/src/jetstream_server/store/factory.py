"""`open_store`: the one place that picks a `StreamStore` backend.

The stream code calls `open_store(config.storage, directory, ...)` and never
imports a backend itself. "memory" ignores the directory and sync options;
"file" owns everything inside `directory` (created if missing). A `clock`
lets an idle file store fsync every `sync_interval_s` by itself (a timer);
without one it checks the interval on each store. `offload` (the server's
`run_off_loop`) takes a file store's block compactions off the loop.
"""

from __future__ import annotations

from jetstream_server.core.clock import Clock
from jetstream_server.store.base import StreamStore
from jetstream_server.store.compaction import Offload
from jetstream_server.store.file import DEFAULT_BLOCK_SIZE, FileStore
from jetstream_server.store.memory import MemoryStore


def open_store(
    storage: str,
    directory: str | None,
    *,
    sync_always: bool = False,
    sync_interval_s: float = 120.0,
    block_size: int | None = None,
    clock: Clock | None = None,
    offload: Offload | None = None,
) -> StreamStore:
    """Open (or create) the store for one stream."""
    if storage == "memory":
        return MemoryStore()
    if storage == "file":
        if not directory:
            raise ValueError("file storage needs a directory")
        return FileStore(
            directory,
            block_size=block_size or DEFAULT_BLOCK_SIZE,
            sync_always=sync_always,
            sync_interval_s=sync_interval_s,
            clock=clock,
            offload=offload,
        )
    raise ValueError(f"unknown storage type {storage!r} (expected 'file' or 'memory')")
