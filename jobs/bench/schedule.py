"""Which benchmark family is running and how long is left, for a person at a terminal.

The job runs its families in a fixed order, in steps (`STEPS`: families that share one run,
`natspy` and `cpu`, `size` and `partitions`, are one step). `Schedule(families, quick)` knows
the steps this run takes and what each is expected to take (`EXPECTED_FULL_S`: the full run
of docs/performance.md; `EXPECTED_QUICK_S`: a quick run on the same 2-CPU machine; a step
takes as long as its longest family). `start(step)` returns the status line: the step, its
place among the steps, and the time left, which is what the steps not finished are expected
to take scaled by the pace so far (the time the finished steps took over what they were
expected to take), so a slower machine sees a longer estimate from the second step on.

`StatusLine` writes those lines on stderr only when stderr is a terminal: a log file, a pipe
or a test's capture gets nothing, and stdout (the figures and the report) is untouched.
Time is injected.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Collection
from typing import Final, TextIO

from jetstream_cli.progress import is_terminal, seconds_text

STEPS: Final = (
    ("natspy", "cpu"), ("connector",), ("filestore",), ("size", "partitions"), ("clusters",),
    ("dashboard",),
)
# Seconds; the full run of 2026-11-28 (473 s in all; the dashboard family's a guess). The natspy
# and cpu step took 60 s in one round; 140 s with three rounds (jobs.benchmark's natspy_rounds).
EXPECTED_FULL_S: Final = {
    "natspy": 70.0, "cpu": 70.0, "connector": 71.0, "filestore": 50.0, "size": 241.0,
    "partitions": 60.0, "clusters": 79.0, "dashboard": 90.0,
}
EXPECTED_QUICK_S: Final = {  # 2026-11-28: 95 s, most of the connector's in Spark's start
    "natspy": 3.0, "cpu": 3.0, "connector": 70.0, "filestore": 6.0, "size": 14.0,
    "partitions": 10.0, "clusters": 60.0, "dashboard": 30.0,
}


def step_name(families: Collection[str], group: tuple[str, ...]) -> str:
    """The step's name as the job prints its time: the group's families that run, joined."""
    return " and ".join(f for f in group if f in families)


class Schedule:
    """The steps of one run, what each is expected to take, and the time left."""

    def __init__(self, families: Collection[str], quick: bool,
                 clock: Callable[[], float] = time.monotonic) -> None:
        table = EXPECTED_QUICK_S if quick else EXPECTED_FULL_S
        self.expected_s = {
            step_name(families, group): max(table[f] for f in group if f in families)
            for group in STEPS if set(group) & set(families)
        }
        self.steps = list(self.expected_s)
        self.took_s: dict[str, float] = {}
        self._clock = clock
        self._started: tuple[str, float] | None = None

    def pace(self) -> float:
        """Time taken over time expected, for the steps finished (1.0 before the first)."""
        expected = sum(self.expected_s[s] for s in self.took_s)
        return sum(self.took_s.values()) / expected if expected > 0 else 1.0

    def left_s(self) -> float:
        """What the steps not finished are expected to take at the pace so far, less the
        time the running step has already had (never below nothing)."""
        pending = sum(e for s, e in self.expected_s.items() if s not in self.took_s)
        running = self._clock() - self._started[1] if self._started else 0.0
        return max(0.0, pending * self.pace() - running)

    def start(self, step: str) -> str:
        self._started = (step, self._clock())
        place = self.steps.index(step) + 1
        return (f"benchmark: {step} ({place} of {len(self.steps)}), "
                f"about {seconds_text(self.left_s())} left")

    def finish(self, step: str) -> None:
        if self._started and self._started[0] == step:
            self.took_s[step] = self._clock() - self._started[1]
            self._started = None


class StatusLine:
    """Whole status lines on `stream` (stderr unless given), only when it is a terminal."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self.active = is_terminal(self._stream)

    def show(self, text: str) -> None:
        if self.active:
            self._stream.write(text + "\n")
            self._stream.flush()
