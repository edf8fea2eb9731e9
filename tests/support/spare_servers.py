"""Warm spares for the `server` fixture: the next bundled server starts while a test runs.

A bundled server takes most of a second to start (a Python interpreter importing
asyncio and the server), hundreds of times per suite; nats-server starts in tens of
milliseconds and gets no spare. `SparePool.take(kind, store_dir)` hands out a server
that was started, in a background thread, on a fresh empty store directory of its
own, exactly as the test would have started it: same command, same flags, same
environment and working directory. A spare whose environment or working directory
no longer match the caller's (a test changed them) is stopped and a server is
started afresh, so a test never gets a server it could not have started itself.

The test's `store_dir` (empty, made by its fixture) becomes a symbolic link to the
spare's store directory, so `store_dir` still names the server's store.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import count
from pathlib import Path

from jetstream_testing.process import ServerProcess, start_server

SPARE_KINDS = frozenset({"bundled"})


# set by pytest to the running test's id and phase: it changes with every test
PER_TEST_VARIABLES = frozenset({"PYTEST_CURRENT_TEST"})


@dataclass(frozen=True)
class _Context:
    """What a child process inherits from the test process (less pytest's per-test variable)."""

    env: tuple[tuple[str, str], ...]
    cwd: str

    @classmethod
    def now(cls) -> _Context:
        env = (item for item in os.environ.items() if item[0] not in PER_TEST_VARIABLES)
        return cls(tuple(sorted(env)), os.getcwd())


@dataclass
class _Spare:
    context: _Context
    store_dir: Path
    started: Future[ServerProcess]


class SparePool:
    """At most one spare per kind in `SPARE_KINDS`, each on its own directory under `root`."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._numbers = count()
        self._spares: dict[str, _Spare] = {}
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spare-server")

    def take(self, kind: str, store_dir: Path) -> ServerProcess:
        """A running server of `kind` on `store_dir` (an empty directory; with a spare, it
        becomes a link to the spare's own). Starts the next spare before returning."""
        proc = self._take_spare(kind)
        if proc is None:
            proc = start_server(kind, store_dir)
        else:
            store_dir.rmdir()  # refuses a non-empty directory: nothing of the test's is lost
            store_dir.symlink_to(str(proc.store_dir), target_is_directory=True)
        if kind in SPARE_KINDS:
            self._start_spare(kind)
        return proc

    def close(self) -> None:
        for spare in self._spares.values():
            _stop(spare)
        self._spares.clear()
        self._executor.shutdown(wait=True)

    def _take_spare(self, kind: str) -> ServerProcess | None:
        spare = self._spares.pop(kind, None)
        if spare is None:
            return None
        if spare.context != _Context.now():
            _stop(spare)
            return None
        try:
            return spare.started.result()
        except RuntimeError:  # it did not start: a fresh start reports why
            return None

    def _start_spare(self, kind: str) -> None:
        context = _Context.now()
        store_dir = self._root / f"spare-{next(self._numbers)}"
        store_dir.mkdir(parents=True)
        env = dict(os.environ)  # this thread's view now, not the worker's later
        started = self._executor.submit(start_server, kind, store_dir, env=env)
        self._spares[kind] = _Spare(context, store_dir, started)


def _stop(spare: _Spare) -> None:
    try:
        spare.started.result().stop()
    except RuntimeError:
        pass
