"""Progress while the pipeline runs, and the summary table with its checks.

`ProgressListener` is a Spark `StreamingQueryListener`: for every micro-batch
of a named query it adds up the rows read and the observed metrics (valid /
dead-letter counts, see `jobs.orders.pipeline`), remembers the source's end
and latest offsets, and writes one progress line to `out` with the lag behind
each stream (`spark_jetstream.read.lag.progress_lag`: latest minus end
offset, in stream sequences). Everything it holds is guarded by a lock (Spark
calls it from its own thread).

`totals_from(query.recentProgress)` gives the same totals synchronously once
a query has ended (the listener may still be behind), for the summary.

`Check` is one self-check of the job; `render_summary` prints the figures and
the checks; the job exits non-zero when any check fails.

`Phases` times the job's phases (wall clock, from the job's start; the Spark
session starts while the sample is published, so those two overlap), and
`batch_rate_figures` sums up each query's micro-batches: events/s per
micro-batch (Spark's processedRowsPerSecond: input rows / trigger time) and
where the trigger time went (Spark's durationMs).
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

from pyspark.sql.streaming import StreamingQueryListener

from spark_jetstream.read.lag import offset_seqs, progress_lag


@dataclass(slots=True)
class QueryTotals:
    batches: int = 0
    input_rows: int = 0
    observed: dict[str, int] = field(default_factory=dict)
    end_seq: int | None = None
    latest_seq: int | None = None
    rate: float = 0.0
    lag: dict[str, int] = field(default_factory=dict)

    def add(self, p: Any) -> None:
        """Add one `StreamingQueryProgress`."""
        self.batches += 1
        self.input_rows += int(p.numInputRows or 0)
        for metrics in (p.observedMetrics or {}).values():
            for key, value in metrics.asDict().items():
                self.observed[key] = self.observed.get(key, 0) + int(value or 0)
        if p.sources:
            src = p.sources[0]
            self.end_seq = _seq(src.endOffset) or self.end_seq
            self.latest_seq = _seq(src.latestOffset) or self.latest_seq
            self.lag = progress_lag(p) or self.lag
        self.rate = float(p.processedRowsPerSecond or 0.0)

    def line(self, name: str, batch_id: int, rows: int) -> str:
        lag = ", ".join(f"{stream} {behind:,}" for stream, behind in sorted(self.lag.items())) or "0"
        observed = "  ".join(f"{k} {v:,}" for k, v in sorted(self.observed.items()))
        return (
            f"[{name}] batch {batch_id}: {rows:,} msgs at {self.rate:,.0f} msg/s, "
            f"stream seq {self.end_seq or 0:,}, lag {lag}"
            + (f" | total {observed}" if observed else "")
        )


def _seq(offset: Any) -> int | None:
    """The sequence of a one-stream jetstream offset (the sum for several streams)."""
    seqs = offset_seqs(offset)
    return sum(seqs.values()) if seqs else None


class ProgressListener(StreamingQueryListener):
    """Totals per query name, one progress line per micro-batch."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._lock = threading.Lock()
        self._totals: dict[str, QueryTotals] = {}

    def totals(self, name: str) -> QueryTotals:
        with self._lock:
            t = self._totals.get(name, QueryTotals())
            return QueryTotals(
                t.batches, t.input_rows, dict(t.observed), t.end_seq, t.latest_seq, t.rate, dict(t.lag)
            )

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        p = event.progress
        name = p.name or str(p.id)
        with self._lock:
            t = self._totals.setdefault(name, QueryTotals())
            t.add(p)
            line = t.line(name, p.batchId, int(p.numInputRows or 0))
        self.out.write(line + "\n")
        self.out.flush()


def totals_from(progresses: Iterable[Any]) -> QueryTotals:
    """Totals over the progress reports of one or more runs of a query (`query.recentProgress`)."""
    t = QueryTotals()
    for p in progresses:
        t.add(p)
    return t


SHORT_VALUE: Final = 16


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str


def render_summary(figures: Sequence[tuple[str, str]], checks: Sequence[Check]) -> str:
    width = max(len(k) for k, _ in figures)
    # counts line up on the right; a long text (a breakdown) just follows its name
    vwidth = max([len(v) for _, v in figures if len(v) <= SHORT_VALUE] or [0])
    lines = ["", "Summary", "-" * (width + vwidth + 3)]
    lines += [f"{k.ljust(width)}   {v.rjust(vwidth)}" for k, v in figures]
    lines.append("-" * (width + vwidth + 3))
    for c in checks:
        lines.append(f"[{'ok' if c.ok else 'FAILED'}] {c.name}: {c.detail}")
    return "\n".join(lines) + "\n"


@dataclass(slots=True)
class Phases:
    """Wall-clock spans of the job's phases, in seconds from `started`."""

    started: float = field(default_factory=time.monotonic)
    spans: list[tuple[str, float, float]] = field(default_factory=list)

    @contextlib.contextmanager
    def timed(self, name: str, since: float | None = None) -> Iterator[None]:
        """Time the block as phase `name` (begun at `since` when given: a phase started earlier)."""
        begin = time.monotonic() if since is None else since
        try:
            yield
        finally:
            self.spans.append((name, begin - self.started, time.monotonic() - self.started))

    def figures(self) -> list[tuple[str, str]]:
        rows = [(f"time: {name}", f"{end - begin:.1f}s ({begin:.1f}-{end:.1f})") for name, begin, end in self.spans]
        return rows + [("elapsed", f"{time.monotonic() - self.started:.1f}s")]


# Spark's durationMs parts of a micro-batch's trigger time, in the order they happen.
DURATION_PARTS = (
    ("latestOffset", "offsets"),
    ("queryPlanning", "planning"),
    ("walCommit", "offset log"),
    ("addBatch", "addBatch"),
    ("commitOffsets", "commit log"),
)


def batch_rate_figures(queries: Iterable[Any]) -> list[tuple[str, str]]:
    """Per query: events/s per micro-batch that read input, and the sum of its durationMs parts."""
    rows: list[tuple[str, str]] = []
    by_name: dict[str, list[Any]] = {}
    for q in queries:
        by_name.setdefault(q.name, []).extend(q.recentProgress)
    for name, progress in by_name.items():
        rates = [float(p.processedRowsPerSecond or 0.0) for p in progress if p.numInputRows]
        if rates:
            rows.append(
                (
                    f"{name}: events/s per micro-batch",
                    f"median {statistics.median(rates):,.0f}, best {max(rates):,.0f} ({len(rates)} batches)",
                )
            )
        total_ms = sum(int((p.durationMs or {}).get("triggerExecution", 0)) for p in progress)
        parts = ", ".join(
            f"{label} {sum(int((p.durationMs or {}).get(key, 0)) for p in progress) / 1000:.1f}"
            for key, label in DURATION_PARTS
        )
        rows.append((f"{name}: trigger time (s)", f"{total_ms / 1000:.1f} = {parts}"))
    return rows
