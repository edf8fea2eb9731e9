"""`MemoryStore`: a stream held in process memory (storage "memory").

Payloads live in one Python list aligned with the `MessageIndex` positions
(a `StoredMessage` per present sequence, None once removed); everything else
(purge, filters, pending counts) is `IndexedStore`, shared with the file
store. Nothing survives a restart; `sync()` has nothing to do.
"""

from __future__ import annotations

from collections.abc import Sequence

from jetstream_server.store.base import StoredMessage, StoreError
from jetstream_server.store.index import MessageIndex
from jetstream_server.store.indexed import IndexedStore


class MemoryStore(IndexedStore):
    """Messages in memory; identical semantics to `FileStore`."""

    def __init__(self) -> None:
        self._msgs: list[StoredMessage | None] = []
        super().__init__(MessageIndex(columns=[self._msgs]))

    def _put(
        self, seq: int, subject: str, headers: bytes | None, data: bytes, timestamp_ns: int
    ) -> None:
        self._msgs.append(
            StoredMessage(
                subject, seq, timestamp_ns, bytes(headers) if headers else None, bytes(data)
            )
        )

    def _get(self, seq: int, pos: int) -> StoredMessage:
        msg = self._msgs[pos]
        if msg is None:
            raise StoreError(f"index and payloads disagree at sequence {seq}")
        return msg

    def _drop(self, seqs: Sequence[int], erase: bool) -> None:
        pos_of = self._index.pos_of
        for seq in seqs:
            self._msgs[pos_of(seq)] = None

    def sync(self) -> None:
        self._check_open()

    def close(self) -> None:
        self._closed = True

    def destroy(self) -> None:
        self._msgs.clear()
        self._closed = True
