"""Publishing generator events from a child process, so the publisher never competes for this process's GIL.

The job embeds the bundled server in a thread of its own process; a publisher
in that same process would share the GIL with it. `PublisherProcess` runs
`streams.publish` over `generator.generate(...)` in a spawned child instead
and reports progress and the final counts through a queue, with what the
pipeline must make of the events it sent (`Expected`, built in the child as it
sends, so the parent does not generate the sample a second time).

Invariants: `join()` returns only after the child ended and reported; a child
that fails raises `PublishFailed` with the child's error text in the parent.
"""

from __future__ import annotations

import multiprocessing
import queue
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from jobs.orders import streams
from jobs.orders.expected import Expected, counted
from jobs.orders.generator import START_MS, OrderEvent, generate


class PublishFailed(RuntimeError):
    """The publisher process failed; the message is its error."""


@dataclass(frozen=True, slots=True)
class SampleSpec:
    orders: int
    seed: int = 7
    first_order: int = 1
    start_ms: int = START_MS
    rate: float | None = None  # events/s; None: as fast as acks allow

    def events(self) -> Iterator[OrderEvent]:
        return generate(self.orders, seed=self.seed, first_order=self.first_order, start_ms=self.start_ms)


@dataclass(frozen=True, slots=True)
class Outcome:
    published: int  # events handed to the server, in generator order
    stored: int
    duplicates: int


def _child(url: str, spec: SampleSpec, window_ms: int, stop: Any, reports: Any) -> None:
    # Ctrl-C reaches the whole process group: the parent decides when the publisher stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    expected = Expected(window_ms=window_ms)

    def progress(stats: streams.PublishStats) -> None:
        reports.put(("progress", stats.stored, stats.duplicates))

    try:
        stats = streams.publish(
            url, counted(spec.events(), expected), stop=stop, rate=spec.rate, on_progress=progress, progress_every_s=5.0
        )
        reports.put(("done", expected.total, stats.stored, stats.duplicates, expected))
    except BaseException as exc:  # the parent re-raises it as PublishFailed
        reports.put(("error", f"{type(exc).__name__}: {exc}"))


class PublisherProcess:
    def __init__(self, url: str, spec: SampleSpec, window_ms: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.spec = spec
        self._stop = ctx.Event()
        self._reports: Any = ctx.Queue()
        self._proc = ctx.Process(target=_child, args=(url, spec, window_ms, self._stop, self._reports), daemon=True)
        self.outcome: Outcome | None = None
        self.expected = Expected(window_ms=window_ms)  # what the events sent must give (after join)

    def start(self) -> PublisherProcess:
        self._proc.start()
        return self

    def stop(self) -> None:
        """Ask the child to stop after the event it is sending (continuous mode)."""
        self._stop.set()

    def join(self, on_progress: Callable[[int, int], None] | None = None, timeout_s: float = 3600.0) -> Outcome:
        deadline = time.monotonic() + timeout_s
        while self.outcome is None:
            try:
                report = self._reports.get(timeout=1.0)
            except queue.Empty:
                if not self._proc.is_alive():
                    raise PublishFailed(f"publisher process exited with {self._proc.exitcode} without a report") from None
                if time.monotonic() > deadline:
                    self._proc.kill()
                    raise PublishFailed(f"publisher did not finish within {timeout_s:.0f}s") from None
                continue
            if report[0] == "progress" and on_progress is not None:
                on_progress(report[1], report[2])
            elif report[0] == "done":
                self.outcome = Outcome(published=report[1], stored=report[2], duplicates=report[3])
                self.expected = report[4]
            elif report[0] == "error":
                self._proc.join(10)
                raise PublishFailed(report[1])
        self._proc.join(30)
        return self.outcome
