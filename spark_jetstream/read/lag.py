"""How far a streaming query is behind its streams, from Spark's progress reports.

Spark's Python data source API has no custom source metrics; what it does
report is each source's `endOffset` (where the batch ended) and, through
`reportLatestOffset`, its `latestOffset` (each stream's last sequence when the
batch was planned). Their difference per stream is the lag in stream
sequences (with a subject filter it also counts messages the filter skips):
`progress_lag(query.lastProgress)` -> `{"ORDERS": 1200}`.

Works on `StreamingQueryProgress` objects and on their JSON/dict form, and on
both offset formats (`{"streams": {...}}` and the older `{"stream", "seq"}`).
Sources that are not `jetstream` sources are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from spark_jetstream.read.offsets import Offset, OffsetError


def offset_seqs(value: Any) -> dict[str, int]:
    """A jetstream offset (JSON text or dict, either format) as stream -> sequence; {} for anything else."""
    if not value:
        return {}
    try:
        data = json.loads(value) if isinstance(value, str) else value
        if not isinstance(data, Mapping):
            return {}
        return Offset.from_dict(data).as_map()
    except (OffsetError, ValueError, TypeError):
        return {}


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def source_lag(source: Any) -> dict[str, int]:
    """Per stream: latestOffset - endOffset of one source's progress (never negative)."""
    end = offset_seqs(_field(source, "endOffset"))
    latest = offset_seqs(_field(source, "latestOffset"))
    return {s: max(0, latest[s] - end.get(s, 0)) for s in latest if s in end}


def progress_lag(progress: Any) -> dict[str, int]:
    """Per stream, summed over the query's jetstream sources; {} before the first batch."""
    if progress is None:
        return {}
    if isinstance(progress, str):
        progress = json.loads(progress)
    lag: dict[str, int] = {}
    for source in _field(progress, "sources") or ():
        for stream, behind in source_lag(source).items():
            lag[stream] = lag.get(stream, 0) + behind
    return lag
