"""`MemoryStore`: a stream held in process memory (storage "memory").

Payloads live in one extra index column (a list per page, a `StoredMessage`
per entry; the index lets go of a payload when its message is removed);
everything else (purge, filters, pending counts, runs) is `IndexedStore`,
shared with the file store. The pages never page out (no swap). Nothing
survives a restart; `sync()` has nothing to do.
"""

from __future__ import annotations

from collections.abc import Sequence

from jetstream_server.store.base import StoredMessage, StoreError
from jetstream_server.store.index import EXTRA, Loc, MessageIndex
from jetstream_server.store.indexed import IndexedStore


class MemoryStore(IndexedStore):
    """Messages in memory; identical semantics to `FileStore`."""

    def __init__(self) -> None:
        super().__init__(MessageIndex(extra=(None,)))

    def _put(
        self, seq: int, subject: str, headers: bytes | None, data: bytes, timestamp_ns: int
    ) -> StoredMessage:
        return StoredMessage(
            subject, seq, timestamp_ns, bytes(headers) if headers else None, bytes(data)
        )

    def _get(self, seq: int, loc: Loc) -> StoredMessage:
        msg = self._index.cols(loc[0])[EXTRA][loc[1]]
        if msg is None:
            raise StoreError(f"index and payloads disagree at sequence {seq}")
        return msg  # type: ignore[no-any-return]

    def _drop(self, seqs: Sequence[int], erase: bool) -> None:
        """Nothing to do before the index removes them (it drops the payloads)."""

    def sync(self) -> None:
        self._check_open()

    def close(self) -> None:
        self._closed = True

    def destroy(self) -> None:
        self._index = MessageIndex(extra=(None,))
        self._closed = True
