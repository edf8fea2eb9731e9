"""Fixtures of the CLI tests: a reference nats-server beside the parametrized `server`,
so a test can run the same commands on both and compare their `--json` outputs, and
`bundled_differs`, which marks the bundled-server run of such a test as a known
difference (strict xfail) without touching the nats-server run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jetstream_testing.process import ServerProcess, start_server


@pytest.fixture
def reference(tmp_path: Path) -> Iterator[ServerProcess]:
    """A real nats-server (the oracle) to compare the `server` under test with."""
    store = tmp_path / "reference"
    store.mkdir()
    proc = start_server("nats-server", store)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def bundled_differs(request: pytest.FixtureRequest, server_kind: str) -> Callable[[str], None]:
    def mark(reason: str) -> None:
        if server_kind == "bundled":
            request.applymarker(pytest.mark.xfail(strict=True, reason=reason))

    return mark
