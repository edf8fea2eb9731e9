"""The paged message index (store/pages.py, store/index.py) in the file store.

Page summaries stay in memory; page columns are loaded on demand and paged
out to `index.swap` under the process's budget. These tests run with tiny
pages and a tiny budget so that every query goes through paged-out pages,
and check against a memory store fed the same operations (whose pages never
page out).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from jetstream_server.store import StoreError, StreamStore
from jetstream_server.store import index as index_module
from jetstream_server.store import pages as pages_module
from jetstream_server.store.file import SNAPSHOT_FILE, SWAP_FILE, FileStore
from jetstream_server.store.memory import MemoryStore
from jetstream_server.store.pages import (
    MIN_PAGES_PER_INDEX,
    index_budget,
    parse_budget,
    set_index_budget,
)

T0 = 1_700_000_000_000_000_000
ROW = 28  # bytes of one file-store entry's columns


@pytest.fixture
def tiny_pages(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Pages of 64 entries and room for 6 of them in the budget."""
    monkeypatch.setattr(index_module, "PAGE_ENTRIES", 64)
    monkeypatch.setattr(pages_module.SHARED_BUDGET, "_total", 6 * 64 * ROW)
    yield


def crash(store: FileStore) -> None:
    """Stop a store the way a killed process does: no sync, no snapshot."""
    store._closed = True
    store._release_fds()


def observed(store: StreamStore) -> tuple:
    st = store.state()
    msgs = [(m.seq, m.subject, m.timestamp_ns, m.headers, m.data) for m in store.iter_range(1, st.last_seq)]
    probes = (
        [store.num_pending(s, f) for s in (1, st.last_seq // 3, st.last_seq // 2) for f in (None, ["k.*"], ["k.3"], ["z"])],
        [getattr(store.load_last(f), "seq", None) for f in ("k.1", "k.*", "z", None)],
        [getattr(store.load_next(s, ["k.2", "z"]), "seq", None) for s in (1, st.last_seq // 2)],
        [getattr(store.load_prev(st.last_seq // 2, f), "seq", None) for f in (None, ["k.5"])],
        store.seq_for_time(T0 + st.last_seq // 2),
    )
    # `bytes` differs by design (each backend's per-message overhead)
    return replace(st, bytes=0), store.deleted(), store.subjects(), store.subjects("k.*"), msgs, probes


def workload(stores: list[StreamStore], n: int, seed: int) -> None:
    """The same publishes, removals and purges on every store (KV-like keys)."""
    rnd = random.Random(seed)
    for i in range(n):
        subject = f"k.{rnd.randrange(12)}" if rnd.random() < 0.9 else "z"
        hdr = b"NATS/1.0\r\nX: %d\r\n\r\n" % i if i % 5 == 0 else None
        for store in stores:
            store.store(subject, hdr, b"v%d" % i, T0 + i)
        roll = rnd.random()
        last = stores[0].state().last_seq
        victim = rnd.randint(1, last)
        for store in stores:
            if roll < 0.15:
                store.remove(victim)
            elif roll < 0.16:
                store.purge(subject=f"k.{i % 12}", keep=3)
            elif roll < 0.165:
                store.compact(last // 3)


def test_pages_stay_within_the_budget_and_answer_as_memory(tiny_pages: None, tmp_path: Path) -> None:
    print("seed 11")
    store = FileStore(tmp_path / "f", block_size=8192)
    mem = MemoryStore()
    workload([store, mem], 3000, seed=11)
    index = store._index
    limit = max(index_budget(), MIN_PAGES_PER_INDEX * 64 * ROW)
    assert len(index.pages) > 20 and index.loaded_bytes <= limit
    assert (tmp_path / "f" / SWAP_FILE).stat().st_size > 0  # pages went out
    assert observed(store) == observed(mem)
    assert index.loaded_bytes <= limit  # reading everything kept the bound
    store.close()
    assert not (tmp_path / "f" / SWAP_FILE).exists()
    again = FileStore(tmp_path / "f", block_size=8192)
    assert again.recovery.used_snapshot and again._index.loaded_bytes == 0
    assert observed(again) == observed(mem)
    workload([again, mem], 500, seed=12)  # go on from the restored pages
    assert observed(again) == observed(mem)
    crash(again)
    assert (tmp_path / "f" / SWAP_FILE).exists()  # a crash leaves the scratch behind
    scanned = FileStore(tmp_path / "f", block_size=8192)
    assert not scanned.recovery.used_snapshot
    assert observed(scanned) == observed(mem)
    scanned.close()


def test_snapshot_becomes_the_swap_and_a_restart_loads_no_page(
    tiny_pages: None, tmp_path: Path
) -> None:
    store = FileStore(tmp_path)
    for i in range(2000):
        store.store(f"s.{i % 3}", None, b"x" * 20, T0 + i)
    store.close()
    assert (tmp_path / SNAPSHOT_FILE).exists()
    again = FileStore(tmp_path)
    index = again._index
    assert index.loaded_bytes == 0 and all(p.cols is None for p in index.pages[:-1])
    assert not (tmp_path / SNAPSHOT_FILE).exists() and (tmp_path / SWAP_FILE).exists()
    assert again.state().msgs == 2000 and again.subject_info("s.1") is not None
    assert again.num_pending(1000, ["s.2"]) == sum(1 for i in range(999, 2000) if i % 3 == 2)
    # counted from the summaries: only the page holding 1000 was looked at (and
    # the first, for the state's first timestamp)
    assert sum(p.cols is not None for p in index.pages[:-1]) <= 2 < len(index.pages)
    msg = again.load(777)
    assert msg is not None and msg.subject == "s.2"
    again.close()


def test_damaged_swap_is_a_store_error_not_a_crash(tiny_pages: None, tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    for i in range(2000):
        store.store("s", None, b"x", T0 + i)
    store._index.page_out_all()
    assert store._swap is not None
    with open(tmp_path / SWAP_FILE, "r+b") as fh:
        fh.truncate(100)
    with pytest.raises(StoreError, match="index page"):
        store.load(5)
    assert store.load(1999) is not None  # the last page never pages out
    crash(store)
    again = FileStore(tmp_path)  # the scratch means nothing after a crash
    assert again.state().msgs == 2000 and again.load(5) is not None
    again.close()


def test_the_budget_knob() -> None:
    assert parse_budget("64MB") == parse_budget("64 MiB") == parse_budget("64m") == 64 << 20
    assert parse_budget("1g") == 1 << 30 and parse_budget("4096") == 4096
    with pytest.raises(ValueError, match="not a size"):
        parse_budget("lots")
    saved = index_budget()
    try:
        set_index_budget(1 << 20)
        assert index_budget() == 1 << 20
        with pytest.raises(ValueError):
            set_index_budget(-1)
    finally:
        set_index_budget(saved)


def test_subject_counts_come_from_the_subject_table(tiny_pages: None, tmp_path: Path) -> None:
    """main's `subject_counts`/`count_subjects` (stream info's `subjects`) answer
    from the always-loaded subject table, on both backends alike."""
    store = FileStore(tmp_path)
    mem = MemoryStore()
    workload([store, mem], 600, seed=3)
    store._index.page_out_all()
    for f in (None, "k.*", "k.1", "z", "none"):
        expected = {name: info.msgs for name, info in mem.subjects(f).items()}
        assert store.subject_counts(f) == mem.subject_counts(f) == expected
        assert store.count_subjects(f) == mem.count_subjects(f) == len(expected)
    assert all(p.cols is None for p in store._index.pages[:-1])
    store.close()
