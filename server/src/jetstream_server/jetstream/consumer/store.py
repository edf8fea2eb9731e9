"""Durable consumer state on disk: `<stream dir>/obs/<consumer>/`.

Two files, each replaced atomically (temp file, fsync, rename, fsync dir):
- `meta.json`: `{"config": <consumer config JSON>, "created": <ns>}`, written at
  create and on update;
- `o.dat`: the delivery state as JSON: `delivered` (consumer_seq, stream_seq),
  `ack_floor` (consumer_seq, stream_seq), `pending` ([stream_seq,
  consumer_seq, timestamp_ns] ...), `redelivered` ([stream_seq, count] ...),
  `dropped` (stream sequences that hit max_deliver).

Invariants: after a crash each file is the old or the new version, never a
torn one (rename is atomic); a consumer directory without a readable
`meta.json` is reported and skipped, never deleted. State writes happen on
the loop thread, coalesced by the consumer to at most one per loop turn, so
a process kill loses at most the changes of the last turn (nats-server writes
its consumer state behind the acks too); an ack sent as a request is written
before it is answered.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jetstream_server.jetstream.persistence import write_json_atomic

logger = logging.getLogger(__name__)

OBS_DIR = "obs"
META_FILE = "meta.json"
STATE_FILE = "o.dat"


@dataclass(slots=True)
class ConsumerState:
    delivered_consumer_seq: int = 0
    delivered_stream_seq: int = 0
    ack_floor_consumer_seq: int = 0
    ack_floor_stream_seq: int = 0
    pending: list[tuple[int, int, int]] = field(default_factory=list)
    redelivered: list[tuple[int, int]] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "delivered": [self.delivered_consumer_seq, self.delivered_stream_seq],
            "ack_floor": [self.ack_floor_consumer_seq, self.ack_floor_stream_seq],
            "pending": [list(p) for p in self.pending],
            "redelivered": [list(r) for r in self.redelivered],
            "dropped": list(self.dropped),
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ConsumerState:
        delivered = raw.get("delivered") or [0, 0]
        floor = raw.get("ack_floor") or [0, 0]
        return cls(
            delivered_consumer_seq=int(delivered[0]),
            delivered_stream_seq=int(delivered[1]),
            ack_floor_consumer_seq=int(floor[0]),
            ack_floor_stream_seq=int(floor[1]),
            pending=sorted((int(a), int(b), int(c)) for a, b, c in raw.get("pending") or []),
            redelivered=[(int(a), int(b)) for a, b in raw.get("redelivered") or []],
            dropped=sorted(int(s) for s in raw.get("dropped") or []),
        )


class ConsumerStore:
    """The files of one durable consumer."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @classmethod
    def for_stream(cls, stream_dir: Path, name: str) -> ConsumerStore:
        return cls(stream_dir / OBS_DIR / name)

    def write_meta(self, config: dict[str, Any], created_ns: int) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            self.directory / META_FILE, {"config": config, "created": created_ns}, sync=True
        )

    def write_state(self, state: ConsumerState) -> None:
        # Handed to the OS on every write (survives a process kill); fsync is
        # left to the OS as nats-server does between its sync intervals.
        if not self.directory.exists():
            return
        write_json_atomic(self.directory / STATE_FILE, state.to_json(), sync=False)

    def read_meta(self) -> tuple[dict[str, Any], int]:
        raw = json.loads((self.directory / META_FILE).read_text())
        return raw["config"], int(raw.get("created", 0))

    def read_state(self) -> ConsumerState:
        path = self.directory / STATE_FILE
        if not path.exists():
            return ConsumerState()
        try:
            return ConsumerState.from_json(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError) as exc:
            logger.warning("consumer state %s unreadable (%s): starting from the config", path, exc)
            return ConsumerState()

    def destroy(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def list_consumer_stores(stream_dir: Path | None) -> list[ConsumerStore]:
    """Every consumer directory under a stream that has a readable meta.json."""
    if stream_dir is None:
        return []
    root = stream_dir / OBS_DIR
    if not root.is_dir():
        return []
    out = []
    for entry in sorted(root.iterdir()):
        if not entry.is_dir():
            continue
        if not (entry / META_FILE).is_file():
            logger.warning("consumer directory %s has no %s: skipped", entry, META_FILE)
            continue
        out.append(ConsumerStore(entry))
    return out
