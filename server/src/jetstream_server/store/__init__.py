"""Stream storage: one `StreamStore` contract (base), memory and file backends."""

from jetstream_server.store.base import (
    RecoveryReport,
    StoredMessage,
    StoreError,
    StoreState,
    StreamStore,
    SubjectInfo,
    message_size,
)

__all__ = [
    "RecoveryReport",
    "StoreError",
    "StoreState",
    "StoredMessage",
    "StreamStore",
    "SubjectInfo",
    "message_size",
]
