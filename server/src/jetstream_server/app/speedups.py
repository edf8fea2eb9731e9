"""The optional speed-ups (`pip install 'jetstream-server[speedups]'`): which event loop runs the server.

The `speedups` extra installs uvloop, an asyncio event loop on libuv written in Cython: the
socket reads and writes, the transports and the loop's own turn cost a fraction of asyncio's
pure-Python ones (docs/server-speedups.md has the figures). Nothing else changes: the server
speaks the same protocol and keeps the same guarantees on either loop.

`choose(mode)` decides, `run(main, choice)` runs a coroutine on the chosen loop (the contract
of `asyncio.run`), `choice.describe()` is the log line that says which loop is in use. Modes:

- ``auto`` (the default): uvloop when it imports, asyncio's own loop otherwise;
- ``off``: asyncio's own loop, whatever is installed;
- ``on``: uvloop, or `SpeedupsUnavailable` naming the missing package.

The mode comes from the caller (the ``--speedups`` flag, `EmbeddedServer(speedups=...)`), else
from the `JETSTREAM_SPEEDUPS` environment variable, else ``auto``; a value that is none of the
three is an error naming them.

Invariant: without the extra installed (or with ``off``) the server runs on asyncio's own
loop, exactly as it did before this module existed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from importlib import import_module, metadata
from typing import Any, Final, TypeVar

SPEEDUPS_ENV: Final = "JETSTREAM_SPEEDUPS"
MODES: Final = ("auto", "on", "off")
UVLOOP: Final = "uvloop"

T = TypeVar("T")


class SpeedupsUnavailable(ValueError):
    """A mode that cannot be honoured: unknown, or ``on`` without the extra installed."""


@dataclass(frozen=True, slots=True)
class LoopChoice:
    """The event loop the server runs on: `runner` (`asyncio.run`'s contract) None is asyncio's own."""

    mode: str
    loop_name: str
    runner: Callable[[Coroutine[Any, Any, Any]], Any] | None

    @property
    def uses_uvloop(self) -> bool:
        return self.runner is not None

    def describe(self) -> str:
        if self.uses_uvloop:
            return f"Speedups: event loop {self.loop_name} (turn off with {SPEEDUPS_ENV}=off or --speedups off)"
        why = "turned off" if self.mode == "off" else "uvloop not installed: pip install 'jetstream-server[speedups]'"
        return f"Speedups: none, event loop {self.loop_name} ({why})"


def requested_mode(mode: str | None = None) -> str:
    """`mode` when given, else `JETSTREAM_SPEEDUPS`, else ``auto``; checked against `MODES`."""
    raw = mode if mode is not None else os.environ.get(SPEEDUPS_ENV, "")
    value = raw.strip().lower() or "auto"
    if value not in MODES:
        source = "speedups" if mode is not None else SPEEDUPS_ENV
        raise SpeedupsUnavailable(f"{source}: {raw!r} is not one of {', '.join(MODES)}")
    return value


def choose(mode: str | None = None) -> LoopChoice:
    """The loop for `mode` (see the module docstring); raises `SpeedupsUnavailable`."""
    value = requested_mode(mode)
    asyncio_loop = LoopChoice(value, "asyncio", None)
    if value == "off":
        return asyncio_loop
    try:
        uvloop = import_module(UVLOOP)
    except ImportError as exc:
        if value == "on":
            raise SpeedupsUnavailable(
                f"speedups on, but uvloop does not import ({exc}): pip install 'jetstream-server[speedups]'"
            ) from exc
        return asyncio_loop
    # uvloop.run: asyncio.run on a new uvloop loop (asyncio.Runner with its factory on 3.11+)
    return LoopChoice(value, f"uvloop {_version(UVLOOP)}", uvloop.run)


def run(main: Coroutine[Any, Any, T], choice: LoopChoice) -> T:
    """Run `main` to its end on a new loop of `choice` (as `asyncio.run` does, in any thread)."""
    runner = choice.runner
    if runner is None:
        return asyncio.run(main)
    result: T = runner(main)
    return result


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "(version unknown)"
