"""A process-wide LRU of block chunks read by file stores.

One bounded cache for every open `FileStore`, so memory for cached payload
bytes stays `CACHE_CHUNKS * CHUNK_SIZE` however many streams are open. Keys
are `(store_token, block_number, chunk_index)`; a store drops its keys when a
block is rewritten, removed or the store closes. A lock makes it safe for
stores living on different event-loop threads (several embedded servers in one
process); entries are immutable `bytes`.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from typing import Final

CHUNK_SIZE: Final = 64 * 1024
CACHE_CHUNKS: Final = 64

Key = tuple[int, int, int]


class ChunkCache:
    """Bounded LRU of `bytes` chunks."""

    def __init__(self, max_chunks: int = CACHE_CHUNKS) -> None:
        self._max = max_chunks
        self._chunks: OrderedDict[Key, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self._tokens = itertools.count(1)

    def new_token(self) -> int:
        """A key prefix unique to one store."""
        return next(self._tokens)

    def get(self, key: Key) -> bytes | None:
        with self._lock:
            chunk = self._chunks.get(key)
            if chunk is not None:
                self._chunks.move_to_end(key)
            return chunk

    def put(self, key: Key, chunk: bytes) -> None:
        with self._lock:
            self._chunks[key] = chunk
            self._chunks.move_to_end(key)
            while len(self._chunks) > self._max:
                self._chunks.popitem(last=False)

    def discard(self, key: Key) -> None:
        with self._lock:
            self._chunks.pop(key, None)

    def forget(self, token: int, block: int | None = None) -> None:
        """Drop one store's chunks (of one block, or all of them)."""
        with self._lock:
            doomed = [k for k in self._chunks if k[0] == token and (block is None or k[1] == block)]
            for key in doomed:
                del self._chunks[key]

    def __len__(self) -> int:
        return len(self._chunks)


SHARED: Final = ChunkCache()
