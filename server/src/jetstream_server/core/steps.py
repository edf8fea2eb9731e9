"""Work in bounded steps: a generator that yields between steps and returns its result.

A request whose work grows with its size (a stream create of 10,000 subjects:
their checks, their subscriptions) is written as such a generator, yielding
after each bounded share. The JetStream API runs one step per loop turn
(jetstream/api/dispatch.py), so other clients are served in between; anything
else runs it to its end at once with `drive`. Sans-IO: no asyncio here.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

R = TypeVar("R")

Steps = Generator[None, None, R]


def drive(steps: Steps[R]) -> R:
    """Run `steps` to the end at once; what it returns."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
