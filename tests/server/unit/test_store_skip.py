"""`skip_msgs` (nats-server's SkipMsgs) on both store backends: any number of
sequences become deleted ones in one operation, and a file store recovers the
skip with or without its index snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest

from jetstream_server.store import StreamStore
from jetstream_server.store.factory import open_store

T0 = 1_700_000_000_000_000_000
GAP = 10_000_000


def _open(backend: str, directory: Path) -> StreamStore:
    return open_store(backend, str(directory) if backend == "file" else None, sync_always=False)


@pytest.mark.parametrize("backend", ["memory", "file"])
def test_an_interior_skip_is_one_operation(backend: str, tmp_path: Path) -> None:
    store = _open(backend, tmp_path / "s")
    try:
        for i in range(3):
            store.store("a", None, b"%d" % i, T0 + i)
        store.skip_msgs(4, GAP)
        if backend == "file":  # one marker record, not one per sequence
            assert sum(p.stat().st_size for p in (tmp_path / "s").rglob("*") if p.is_file()) < 1 << 20
        state = store.state()
        assert (state.msgs, state.first_seq, state.last_seq, state.num_deleted) == (
            3, 1, 3 + GAP, GAP)
        assert store.store("a", None, b"next", T0 + 9) == GAP + 4
        assert store.load_next(4) is not None and store.load_next(4).seq == GAP + 4  # type: ignore[union-attr]
        assert store.load(5) is None
        with pytest.raises(ValueError):
            store.skip_msgs(2, 5)  # not at the end
        store.skip_msgs(GAP + 5, 2)  # a skip at the very end
        assert store.state().last_seq == GAP + 6
    finally:
        store.close()


@pytest.mark.parametrize("snapshot", [True, False])
def test_a_file_store_recovers_the_skips(tmp_path: Path, snapshot: bool) -> None:
    directory = tmp_path / "s"
    store = _open("file", directory)
    store.store("a", None, b"1", T0)
    store.skip_msgs(2, GAP)
    store.store("a", None, b"2", T0 + 1)
    store.skip_msgs(GAP + 3, 5)  # nothing stored after this one
    store.close()
    if not snapshot:
        (directory / "index.snap").unlink()  # recovery replays the blocks
    store = _open("file", directory)
    try:
        state = store.state()
        assert (state.msgs, state.first_seq, state.last_seq) == (2, 1, GAP + 7)
        assert store.store("a", None, b"3", T0 + 2) == GAP + 8
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["memory", "file"])
def test_a_skip_on_an_empty_store_moves_first_seq(backend: str, tmp_path: Path) -> None:
    store = _open(backend, tmp_path / "s")
    try:
        store.skip_msgs(1, 100)
        state = store.state()
        assert (state.msgs, state.first_seq, state.last_seq) == (0, 101, 100)
    finally:
        store.close()
