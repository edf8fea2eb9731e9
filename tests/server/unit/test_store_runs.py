"""`StreamStore.read_run`: runs of messages read in one pass, on every backend.

A run must hold exactly what reading message by message (`load_next`) gives:
present messages only, in order, matching the filter, within the end
sequence and the count and byte limits, and say where the next read starts.
The file store's own cases: a damaged record in the middle of a run, runs
across blocks and across index pages that are paged out.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jetstream_server.store import StoreError, StreamStore
from jetstream_server.store import index as index_module
from jetstream_server.store import pages as pages_module
from jetstream_server.store.base import MAX_SEQ
from jetstream_server.store.file import FileStore
from jetstream_server.store.runs import COPY_BODY, MessageRun

T0 = 1_700_000_000_000_000_000
HDR = b"NATS/1.0\r\nK: v\r\n\r\n"


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Index pages of 8 entries, paged out as soon as more than a few are loaded."""
    monkeypatch.setattr(index_module, "PAGE_ENTRIES", 8)
    monkeypatch.setattr(pages_module.SHARED_BUDGET, "_total", 0)


def fill(store: StreamStore, n: int, subjects: tuple[str, ...] = ("a.1", "a.2", "b")) -> None:
    for i in range(n):
        store.store(subjects[i % len(subjects)], HDR if i % 4 == 0 else None, b"d%05d" % i, T0 + i)


def check_run(
    store: StreamStore,
    start: int,
    max_msgs: int,
    *,
    max_bytes: int = 0,
    end: int = MAX_SEQ,
    filters: list[str] | None = None,
) -> MessageRun:
    run = store.read_run(start, max_msgs, max_bytes=max_bytes, end_seq=end, filters=filters)
    # the contract's default: message by message with `load_next`
    ref = StreamStore.read_run(store, start, max_msgs, max_bytes=max_bytes, end_seq=end, filters=filters)
    msgs, next_seq, blocked = list(ref), ref.next_seq, ref.blocked_size
    assert list(run) == msgs
    assert list(run.seqs) == [m.seq for m in msgs]
    assert (run.next_seq, run.blocked_size) == (next_seq, blocked)
    assert list(run.sizes) == [store.msg_size(m.subject, m.headers, m.data) for m in msgs]
    assert run.nbytes == sum(run.sizes)
    for i, msg in enumerate(msgs):
        subject, seq, ts, headers, data = run.parts(i)
        assert (subject, seq, ts) == (msg.subject, msg.seq, msg.timestamp_ns)
        assert (None if headers is None else bytes(headers)) == msg.headers
        assert bytes(data) == msg.data
    # the column form a delivery frames from says the same
    subjects, seqs, stamps, hlens, bodies = run.columns()
    assert list(subjects) == [m.subject for m in msgs] and list(seqs) == [m.seq for m in msgs]
    assert list(stamps) == [m.timestamp_ns for m in msgs]
    assert list(hlens) == [len(m.headers or b"") for m in msgs]
    assert [bytes(b) for b in bodies] == [(m.headers or b"") + m.data for m in msgs]
    return run


def test_run_of_consecutive_messages(make_store: Callable[..., StreamStore]) -> None:
    store = make_store()
    fill(store, 20)
    run = check_run(store, 1, 5)
    assert list(run.seqs) == [1, 2, 3, 4, 5] and run.next_seq == 6
    assert run[0].headers == HDR and run[1].headers is None
    part = run[1:3]
    assert list(part.seqs) == [2, 3] and part.next_seq == 4 and list(part) == list(run)[1:3]
    assert list(run[3:].seqs) == [4, 5] and run[3:].next_seq == 6
    assert run[-1].seq == 5
    check_run(store, 18, 10)  # the end of the stream
    check_run(store, 21, 10)  # past it: empty, next_seq stays
    assert len(store.read_run(1, 0)) == 0 and store.read_run(3, 0).next_seq == 3


def test_bodies_on_both_sides_of_the_copy_size(make_store: Callable[..., StreamStore]) -> None:
    """A delivery's bodies up to `COPY_BODY` bytes are copies, larger ones views of the read's
    buffer: the same bytes either way, in one run that mixes them."""
    store = make_store()
    around = (1, COPY_BODY - len(HDR), COPY_BODY - len(HDR) + 1, COPY_BODY, 3 * COPY_BODY, 5)
    for i, size in enumerate(around):
        store.store("big", HDR if i % 2 else None, bytes([i + 1]) * size, T0 + i)
    run = check_run(store, 1, 10)
    assert len(run) == len(around)
    bodies = run.columns()[4]
    if type(run).__name__ == "BufferRun":  # the file store's runs: both kinds taken
        assert {type(b) for b in bodies} == {bytes, memoryview}


def test_run_skips_deleted_messages(make_store: Callable[..., StreamStore]) -> None:
    store = make_store()
    fill(store, 30)
    for seq in (2, 3, 10, 11, 12, 30):
        store.remove(seq, erase=seq == 11)
    store.purge(up_to_seq=5)
    for start in (1, 4, 9, 13, 29):
        check_run(store, start, 6)
    run = check_run(store, 9, 100)
    assert 10 not in run.seqs and run.next_seq == 31  # last_seq + 1 (30 was removed, still last)


def test_run_with_filters_and_end(make_store: Callable[..., StreamStore]) -> None:
    store = make_store()
    fill(store, 40)
    check_run(store, 1, 5, filters=["b"])
    check_run(store, 1, 100, filters=["a.*"])
    check_run(store, 7, 4, filters=["a.1", "b"])
    run = check_run(store, 1, 100, filters=["nothing.here"])
    assert len(run) == 0 and run.next_seq == 41
    run = check_run(store, 5, 100, end=17, filters=["b"])
    assert run.next_seq == 18
    check_run(store, 5, 3, end=17)


def test_run_byte_limit(make_store: Callable[..., StreamStore]) -> None:
    store = make_store()
    fill(store, 20)
    one = store.read_run(2, 1).sizes[0]
    run = check_run(store, 2, 100, max_bytes=3 * one)  # messages 2..4 have no headers
    assert list(run.seqs) == [2, 3, 4] and run.next_seq == 5 and run.blocked_size > 0
    run = check_run(store, 2, 100, max_bytes=one - 1)  # not even the first fits
    assert len(run) == 0 and run.next_seq == 2 and run.blocked_size == one
    check_run(store, 1, 100, max_bytes=10_000)  # everything fits


def test_runs_across_blocks_and_paged_out_pages(
    make_store: Callable[..., StreamStore], small_pages: None
) -> None:
    store = make_store(block_size=4096)
    fill(store, 300)
    rnd = random.Random(7)
    for seq in rnd.sample(range(1, 301), 60):
        store.remove(seq)
    for _ in range(30):
        start = rnd.randint(1, 310)
        check_run(
            store,
            start,
            rnd.choice([1, 7, 64, 500]),
            max_bytes=rnd.choice([0, 0, 200, 2000]),
            end=rnd.choice([MAX_SEQ, start + rnd.randint(0, 50)]),
            filters=rnd.choice([None, ["a.*"], ["b"], ["a.2", "b"]]),
        )


def test_iter_range_never_yields_a_message_removed_meanwhile(
    make_store: Callable[..., StreamStore],
) -> None:
    store = make_store()
    fill(store, 50)
    seen = []
    for msg in store.iter_range(1, 50):
        seen.append(msg.seq)
        if msg.seq == 3:
            store.remove(4)
            store.remove(40)
    assert seen == [s for s in range(1, 51) if s not in (4, 40)]


OP = st.one_of(
    st.tuples(st.just("store"), st.sampled_from(["a.1", "a.2", "b"]), st.booleans()),
    st.tuples(st.just("remove"), st.integers(1, 60)),
    st.tuples(st.just("purge"), st.integers(0, 60)),
)
READ = st.tuples(
    st.integers(0, 70),
    st.integers(0, 20),
    st.sampled_from([0, 0, 60, 300]),
    st.integers(0, 70),
    st.sampled_from([None, ["a.*"], ["b"], ["a.2", "b"], [">"]]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(OP, max_size=60), reads=st.lists(READ, min_size=1, max_size=8))
def test_runs_match_reads_one_by_one(
    make_store: Callable[..., StreamStore],
    small_pages: None,
    ops: list[tuple],
    reads: list[tuple],
) -> None:
    store = make_store(block_size=4096)
    for i, op in enumerate(ops):
        if op[0] == "store":
            store.store(op[1], HDR if op[2] else None, b"x" * (i % 40), T0 + i)
        elif op[0] == "remove":
            store.remove(op[1])
        else:
            store.purge(up_to_seq=op[1])
    for start, count, max_bytes, end, filters in reads:
        check_run(store, start, count, max_bytes=max_bytes, end=end, filters=filters)


# -- file store: damaged records ------------------------------------------------
def _corrupt(store: FileStore, seq: int) -> None:
    """Flip a payload byte of `seq`'s record on disk (bit rot after the open)."""
    blk = store._block_for(seq)
    offset = store._index.extra_of(seq)
    with open(blk.path, "r+b") as fh:
        fh.seek(offset + 40)
        byte = fh.read(1)
        fh.seek(offset + 40)
        fh.write(bytes([byte[0] ^ 0xFF]))
    store._cache.forget(store._token)
    store._last_chunk = None


def test_damaged_record_in_the_middle_ends_the_run_before_it(tmp_path: Path) -> None:
    """As reading one by one: every message before the damaged one is delivered,
    the read of the damaged one raises (nothing wrong is ever returned)."""
    store = FileStore(tmp_path)
    for i in range(20):
        store.store("s", None, b"payload-%04d-" % i + b"x" * 40, T0 + i)
    _corrupt(store, 8)
    run = store.read_run(1, 100)
    assert list(run.seqs) == list(range(1, 8)) and run.next_seq == 8
    with pytest.raises(StoreError, match="sequence 8"):
        store.read_run(8, 100)
    with pytest.raises(StoreError, match="sequence 8"):
        store.load(8)
    run = store.read_run(9, 100)
    assert list(run.seqs) == list(range(9, 21))
    store.close()


def test_record_cut_short_ends_the_run(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    for i in range(10):
        store.store("s", None, b"y" * 50, T0 + i)
    blk = store._blocks[-1]
    os_size = blk.path.stat().st_size
    with open(blk.path, "r+b") as fh:
        fh.truncate(os_size - 30)  # the last record loses its end
    store._cache.forget(store._token)
    store._last_chunk = None
    run = store.read_run(1, 100)
    assert list(run.seqs) == list(range(1, 10)) and run.next_seq == 10
    with pytest.raises(StoreError):
        store.read_run(10, 5)
    store._closed = True
    store._release_fds()


def test_read_seqs_reads_the_present_ones_in_order(
    make_store: Callable[..., StreamStore], small_pages: None
) -> None:
    store = make_store(block_size=4096)
    fill(store, 200)
    store.remove(50)
    asked = [150, 3, 50, 77, 3, 199, 500, 120]
    run = store.read_seqs(asked)
    expected = [store.load(s) for s in sorted(set(asked)) if store.load(s) is not None]
    assert list(run) == expected and [m.seq for m in run] == [3, 77, 120, 150, 199]
    assert run.next_seq == 501
    ref = StreamStore.read_seqs(store, asked)
    assert list(ref) == list(run) and list(ref.sizes) == list(run.sizes)
    assert len(store.read_seqs([])) == 0 and len(store.read_seqs([50, 9999])) == 0


def test_read_seqs_stops_before_a_damaged_record(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    for i in range(20):
        store.store("s", None, b"payload-%04d-" % i + b"x" * 40, T0 + i)
    _corrupt(store, 8)
    run = store.read_seqs([2, 5, 8, 12])
    assert [m.seq for m in run] == [2, 5] and run.next_seq == 8
    with pytest.raises(StoreError, match="sequence 8"):
        store.read_seqs([8, 12])
    store.close()
