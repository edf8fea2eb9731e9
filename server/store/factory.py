"""`open_store`: the one place that picks a `StreamStore` backend.

The stream code calls `open_store(config.storage, directory, ...)` and never
imports a backend itself. "memory" ignores the directory and sync options;
"file" owns everything inside `directory` (created if missing).
"""

from __future__ import annotations

from server.store.base import StreamStore
from server.store.memory import MemoryStore


def open_store(
    storage: str,
    directory: str | None,
    *,
    sync_always: bool = False,
    sync_interval_s: float = 120.0,
    block_size: int | None = None,
) -> StreamStore:
    """Open (or create) the store for one stream."""
    if storage == "memory":
        return MemoryStore()
    if storage == "file":
        if not directory:
            raise ValueError("file storage needs a directory")
        from server.store.file import FileStore

        kwargs = {} if block_size is None else {"block_size": block_size}
        return FileStore(
            directory, sync_always=sync_always, sync_interval_s=sync_interval_s, **kwargs
        )
    raise ValueError(f"unknown storage type {storage!r} (expected 'file' or 'memory')")
