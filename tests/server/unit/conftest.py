"""Fixtures shared by the server's unit tests: stores of every backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jetstream_server.store import StoreError, StreamStore
from jetstream_server.store.factory import open_store

BACKENDS = ["memory", "file"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(backend: str, tmp_path: Path) -> Iterator[Callable[..., StreamStore]]:
    opened: list[StreamStore] = []
    counter = iter(range(1_000_000))

    def make(**kwargs: object) -> StreamStore:
        directory = str(tmp_path / f"s{next(counter)}") if backend == "file" else None
        store = open_store(backend, directory, sync_always=False, **kwargs)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield make
    for store in opened:
        try:
            store.destroy()
        except StoreError:
            pass
