"""An account's JetStream limits: nats-server's ``JetStreamAccountLimits``.

`AccountLimits` is the ``jetstream { max_mem, max_file, max_streams,
max_consumers, ... }`` block of one account (or the limits of an account
JWT); -1 (any negative value) means no limit. Plain data with the two sums
the limits need; the checks that answer API errors live in
`jetstream_server.jetstream.account_limits`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class AccountLimits:
    max_memory: int = -1
    max_storage: int = -1
    max_streams: int = -1
    max_consumers: int = -1
    max_ack_pending: int = -1
    memory_max_stream_bytes: int = -1
    storage_max_stream_bytes: int = -1
    max_bytes_required: bool = False

    def to_json(self) -> dict[str, Any]:
        """The ``limits`` object of ``$JS.API.INFO``."""
        return {
            "max_memory": self.max_memory,
            "max_storage": self.max_storage,
            "max_streams": self.max_streams,
            "max_consumers": self.max_consumers,
            "max_ack_pending": self.max_ack_pending,
            "memory_max_stream_bytes": self.memory_max_stream_bytes,
            "storage_max_stream_bytes": self.storage_max_stream_bytes,
            "max_bytes_required": self.max_bytes_required,
        }

    def consumer_cap(self, stream_max_consumers: int) -> int:
        """How many consumers one stream may have (0: no cap)."""
        cap = stream_max_consumers
        if cap <= 0 or (0 < self.max_consumers < cap):
            cap = self.max_consumers
        return max(cap, 0)

    def exceeded_by(self, storage: str, used: int, size: int) -> bool:
        """Would storing `size` more bytes pass the account's limit for `storage`?"""
        limit = self.max_memory if storage == "memory" else self.max_storage
        return limit >= 0 and used + size > limit


