"""Atomic batches (jetstream/atomic_batch.py) on a fake clock: an idle batch is
dropped after nats-server's 10 s, and the per-stream limit of open batches."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from jetstream_server.core.clock import FakeClock
from jetstream_server.core.headers import encode_headers
from jetstream_server.jetstream.atomic_batch import (
    BATCH_TIMEOUT_S,
    MAX_INFLIGHT_PER_STREAM,
    AtomicBatches,
    Commit,
)
from jetstream_server.jetstream.errors import ApiError
from jetstream_server.jetstream.publish import PublishPipeline
from jetstream_server.jetstream.settings import EngineSettings
from jetstream_server.jetstream.stream_config import StreamConfig


def _stream() -> Any:
    config = StreamConfig.from_json({"name": "A", "subjects": ["a.>"], "allow_atomic": True})
    return SimpleNamespace(name="A", config=config)


def _headers(batch: str, seq: int, commit: str | None = None) -> bytes:
    items = {"Nats-Batch-Id": batch, "Nats-Batch-Sequence": str(seq)}
    if commit is not None:
        items["Nats-Batch-Commit"] = commit
    return encode_headers(items)


def test_idle_batch_is_dropped_after_the_timeout() -> None:
    clock = FakeClock()
    batches = AtomicBatches(clock, PublishPipeline(EngineSettings(), clock, {}))
    stream = _stream()
    assert batches.stage(stream, "a.1", _headers("b", 1), b"1") is None
    clock.advance(BATCH_TIMEOUT_S - 1)
    assert batches.stage(stream, "a.2", _headers("b", 2), b"2") is None  # the timer restarts
    clock.advance(BATCH_TIMEOUT_S - 1)
    commit = batches.stage(stream, "a.3", _headers("b", 3, "1"), b"3")
    assert isinstance(commit, Commit) and [m[0] for m in commit.messages] == ["a.1", "a.2", "a.3"]
    assert batches.stage(stream, "a.1", _headers("c", 1), b"1") is None
    clock.advance(BATCH_TIMEOUT_S)
    assert batches.open_count() == 0 and clock.pending_timers == 0
    with pytest.raises(ApiError) as refused:
        batches.stage(stream, "a.2", _headers("c", 2, "1"), b"2")
    assert refused.value.to_json()["err_code"] == 10176


def test_open_batches_per_stream_are_limited() -> None:
    clock = FakeClock()
    batches = AtomicBatches(clock, PublishPipeline(EngineSettings(), clock, {}))
    stream = _stream()
    for n in range(MAX_INFLIGHT_PER_STREAM):
        batches.stage(stream, "a.1", _headers(f"b{n}", 1), b"")
    with pytest.raises(ApiError) as refused:
        batches.stage(stream, "a.1", _headers("one-more", 1), b"")
    assert refused.value.to_json() == {
        "code": 429, "err_code": 10210, "description": "atomic publish too many inflight"}
    batches.drop_stream("A")
    assert batches.open_count() == 0
