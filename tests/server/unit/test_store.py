"""The `StreamStore` contract suite, run against every backend.

Each test gets a fresh store from `make_store` (memory, and file in a fresh
directory). The model-based test at the end drives a store and a tiny
reference model (a dict, nats-server semantics) with the same random
operations and compares every query.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jetstream_server.store import StoreError, StreamStore, SubjectInfo
from jetstream_server.store import index as index_module
from jetstream_server.store import pages as pages_module
from jetstream_server.store.file import FileStore
from jetstream_server.store.filters import filter_selects

T0 = 1_700_000_000_000_000_000


@pytest.fixture
def store(make_store: Callable[..., StreamStore]) -> StreamStore:
    return make_store()


@pytest.fixture
def eager_compaction(monkeypatch: pytest.MonkeyPatch) -> None:
    """Index pages of a few entries, paged out as soon as more than a few are
    loaded, and removed entries dropped after a handful: small tests exercise
    the page walks, the page swap and page rebuilds."""
    monkeypatch.setattr(index_module, "COMPACT_MIN", 3)
    monkeypatch.setattr(index_module, "PAGE_ENTRIES", 8)
    monkeypatch.setattr(pages_module.SHARED_BUDGET, "_total", 0)


def nats_size(store: StreamStore, subject: str, hdr: bytes | None, data: bytes) -> int:
    """nats-server's accounted size: filestore.go fileStoreMsgSizeRaw for the
    file store (record framing and hash), memstore.go memStoreMsgSizeRaw for memory."""
    slen, hlen = len(subject.encode()), len(hdr or b"")
    if isinstance(store, FileStore):
        return 22 + slen + len(data) + 8 if hlen == 0 else 22 + slen + 4 + hlen + len(data) + 8
    return slen + hlen + len(data) + 16


def fill(store: StreamStore, subjects: list[str], data: bytes = b"x") -> list[int]:
    return [store.store(s, None, data, T0 + i) for i, s in enumerate(subjects)]


# -- basics -------------------------------------------------------------------
def test_store_assigns_sequences_and_loads(store: StreamStore) -> None:
    hdr = b"NATS/1.0\r\nA: b\r\n\r\n"
    assert store.store("a.b", hdr, b"hello", T0) == 1
    assert store.store("a.c", None, b"", T0 + 5) == 2
    msg = store.load(1)
    assert msg is not None
    assert (msg.subject, msg.seq, msg.timestamp_ns, msg.headers, msg.data) == (
        "a.b",
        1,
        T0,
        hdr,
        b"hello",
    )
    empty = store.load(2)
    assert empty is not None and empty.data == b"" and empty.headers is None
    assert store.load(3) is None and store.load(0) is None
    st_ = store.state()
    assert (st_.msgs, st_.first_seq, st_.last_seq, st_.num_subjects) == (2, 1, 2, 2)
    assert (st_.first_ts_ns, st_.last_ts_ns) == (T0, T0 + 5)
    assert st_.bytes == nats_size(store, "a.b", hdr, b"hello") + nats_size(store, "a.c", None, b"")


def test_empty_store_state(store: StreamStore) -> None:
    st_ = store.state()
    assert (st_.msgs, st_.bytes, st_.first_seq, st_.last_seq, st_.num_deleted) == (0, 0, 1, 0, 0)
    assert store.load_next(1) is None and store.load_last() is None and store.load_prev(5) is None
    assert store.num_pending(1) == 0 and store.deleted() == [] and store.subjects() == {}
    assert store.seq_for_time(T0) == 1


def test_store_rejects_bad_input_and_keeps_serving(store: StreamStore) -> None:
    with pytest.raises(ValueError, match="subject"):
        store.store("", None, b"x", T0)
    with pytest.raises(TypeError, match="bytes"):
        store.store("a", None, "text", T0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bytes"):
        store.store("a", "NATS/1.0", b"x", T0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bytes"):  # mutable: it could change once stored
        store.store("a", None, bytearray(b"ok"), T0)  # type: ignore[arg-type]
    assert store.state().msgs == 0 and store.state().num_subjects == 0
    assert store.store("a", None, b"ok", T0) == 1
    msg = store.load(1)
    assert msg is not None and msg.data == b"ok"


def test_remove_interior_first_last(store: StreamStore) -> None:
    fill(store, ["a", "b", "a", "b", "a"])
    assert store.remove(3) is True
    assert store.remove(3) is False
    assert store.remove(99) is False
    assert store.load(3) is None
    st_ = store.state()
    assert (st_.msgs, st_.first_seq, st_.last_seq, st_.num_deleted) == (4, 1, 5, 1)
    assert store.deleted() == [3]
    assert store.remove(1) is True
    assert store.state().first_seq == 2 and store.deleted() == [3]
    assert store.remove(5) is True
    st_ = store.state()
    assert (st_.msgs, st_.first_seq, st_.last_seq, st_.num_deleted) == (2, 2, 5, 2)
    assert store.deleted() == [3, 5]
    assert store.subject_info("a") is None
    assert store.subject_info("b") == SubjectInfo(2, 2, 4)
    assert store.state().bytes == 2 * nats_size(store, "b", None, b"x")
    # the next sequence is never reused
    assert store.store("c", None, b"x", T0 + 10) == 6


def test_erase_removes_message(store: StreamStore) -> None:
    fill(store, ["a", "b", "c"], data=b"secret-payload")
    assert store.remove(2, erase=True) is True
    assert store.load(2) is None
    assert store.remove(2, erase=True) is False
    assert [m.seq for m in store.iter_range(1, 10)] == [1, 3]


def test_remove_everything_one_by_one(store: StreamStore) -> None:
    fill(store, ["a", "b", "c"])
    for seq in (2, 1, 3):
        assert store.remove(seq)
    st_ = store.state()
    assert (st_.msgs, st_.first_seq, st_.last_seq, st_.num_deleted, st_.bytes) == (0, 4, 3, 0, 0)
    assert store.store("d", None, b"x", T0) == 4
    assert store.state().first_seq == 4


# -- purge and compact ----------------------------------------------------------
def test_full_purge(store: StreamStore) -> None:
    fill(store, ["a", "b", "c", "d"])
    store.remove(2)
    assert store.purge() == 3
    st_ = store.state()
    assert (st_.msgs, st_.bytes, st_.first_seq, st_.last_seq, st_.num_deleted) == (0, 0, 5, 4, 0)
    assert st_.num_subjects == 0 and store.subjects() == {}
    assert store.load_last() is None and store.deleted() == []
    assert store.store("a", None, b"x", T0) == 5
    assert store.state().first_seq == 5


def test_purge_subject(store: StreamStore) -> None:
    fill(store, ["a.1", "b.1", "a.2", "b.2", "a.1"])
    assert store.purge("a.1") == 2
    assert [m.seq for m in store.iter_range(1, 10)] == [2, 3, 4]
    assert store.state().first_seq == 2
    assert store.purge("nomatch") == 0
    assert store.purge("b.*") == 2
    assert [m.seq for m in store.iter_range(1, 10)] == [3]
    assert store.state().first_seq == 3 and store.state().last_seq == 5


def test_filtered_purge_matching_every_subject_keeps_filtered_semantics(
    store: StreamStore,
) -> None:
    fill(store, ["c.1", "c.2", "c.1", "c.2"])
    assert store.purge("c.*", up_to_seq=10) == 4  # filtered: last_seq does not move
    st_ = store.state()
    assert (st_.msgs, st_.first_seq, st_.last_seq) == (0, 5, 4)
    fill(store, ["c.1", "c.2", "c.1"])
    assert store.purge("c.>", keep=1) == 2
    assert [m.seq for m in store.iter_range(1, 10)] == [7]


def test_purge_subject_keep(store: StreamStore) -> None:
    fill(store, ["a", "b", "a", "a", "b", "a"])
    assert store.purge("a", keep=2) == 2
    assert [m.seq for m in store.iter_range(1, 10, ["a"])] == [4, 6]
    assert store.purge("a", keep=5) == 0
    assert store.subject_info("a") == SubjectInfo(2, 4, 6)
    assert store.subject_info("b") == SubjectInfo(2, 2, 5)


def test_purge_subject_up_to_seq(store: StreamStore) -> None:
    fill(store, ["a", "b", "a", "a", "b", "a"])
    assert store.purge("a", up_to_seq=4) == 2  # removes 1 and 3, not 4
    assert [m.seq for m in store.iter_range(1, 10)] == [2, 4, 5, 6]
    assert store.purge(">", up_to_seq=5) == 2  # no subject: compact below 5
    assert [m.seq for m in store.iter_range(1, 10)] == [5, 6]
    assert store.state().first_seq == 5


def test_purge_up_to_seq_matches_nats_server(store: StreamStore) -> None:
    # figures from nats-server 2.15 (memory and file storage agree)
    fill(store, ["a", "a", "a"])
    assert store.purge(up_to_seq=1) == 0
    assert store.purge("a", up_to_seq=1) == 0
    assert store.purge("a", up_to_seq=50) == 3  # filtered: last_seq stays
    st_ = store.state()
    assert (st_.msgs, st_.first_seq, st_.last_seq) == (0, 4, 3)
    fill(store, ["a", "a"])
    assert store.purge(">", up_to_seq=100) == 2  # unfiltered: compact past the end
    st_ = store.state()
    assert (st_.first_seq, st_.last_seq) == (100, 99)


def test_purge_keep_counts_present_messages_like_nats_server(store: StreamStore) -> None:
    # nats-server 2.15: 100..105 with 103 deleted, keep=3 purges 2 and keeps 102, 104, 105
    store.skip_to(100)
    fill(store, ["a", "b", "b", "b", "a", "a"])
    store.remove(103)
    assert store.purge(keep=3) == 2
    st_ = store.state()
    assert (st_.msgs, st_.first_seq, st_.last_seq, st_.num_deleted) == (3, 102, 105, 1)
    assert store.deleted() == [103]


def test_purge_keep_without_subject(store: StreamStore) -> None:
    fill(store, ["a", "b", "c", "d", "e"])
    assert store.purge(keep=2) == 3
    assert [m.seq for m in store.iter_range(1, 10)] == [4, 5]
    assert store.purge(keep=2) == 0
    assert store.purge(keep=10) == 0


def test_purge_wildcard_keep_and_exclusive_args(store: StreamStore) -> None:
    fill(store, ["x.a", "x.b", "y", "x.c", "x.a"])
    assert store.purge("x.*", keep=1) == 3
    assert [m.seq for m in store.iter_range(1, 10)] == [3, 5]
    with pytest.raises(ValueError, match="exclusive"):
        store.purge("x.*", up_to_seq=3, keep=1)
    with pytest.raises(ValueError, match="negative"):
        store.purge(keep=-1)
    assert store.state().msgs == 2


def test_compact(store: StreamStore) -> None:
    fill(store, ["a", "b", "c", "d", "e"])
    assert store.compact(1) == 0
    assert store.compact(3) == 2
    assert store.state().first_seq == 3
    store.remove(4)
    assert store.compact(4) == 1
    assert store.state().first_seq == 5 and store.deleted() == []
    assert store.subject_info("c") is None and store.subject_info("e") == SubjectInfo(1, 5, 5)


def test_compact_to_deleted_seq_moves_first_to_next_present(store: StreamStore) -> None:
    fill(store, ["a", "b", "c", "d", "e"])
    store.remove(3)
    store.remove(4)
    assert store.compact(3) == 2
    st_ = store.state()
    assert (st_.first_seq, st_.msgs, st_.num_deleted) == (5, 1, 0)


def test_compact_past_end(store: StreamStore) -> None:
    fill(store, ["a", "b", "c"])
    assert store.compact(100) == 3
    st_ = store.state()
    assert (st_.msgs, st_.first_seq, st_.last_seq) == (0, 100, 99)
    assert store.store("a", None, b"x", T0) == 100
    assert store.state().first_seq == 100


def test_purge_then_compact_and_remove_interplay(store: StreamStore) -> None:
    fill(store, ["a"] * 10)
    store.remove(5)
    store.purge("a", up_to_seq=4)
    assert store.state().first_seq == 4
    assert store.deleted() == [5]
    assert store.num_pending(1) == 6
    assert store.purge() == 6
    assert store.state().first_seq == 11


def test_skip_to(store: StreamStore) -> None:
    store.skip_to(50)
    st_ = store.state()
    assert (st_.first_seq, st_.last_seq, st_.msgs) == (50, 49, 0)
    assert store.store("a", None, b"x", T0) == 50
    with pytest.raises(StoreError, match="empty"):
        store.skip_to(80)
    store.purge()
    with pytest.raises(ValueError):
        store.skip_to(10)
    store.skip_to(51)  # already the next sequence: no-op
    assert store.store("a", None, b"x", T0) == 51


# -- reading with filters -------------------------------------------------------
SUBJECTS = ["orders.eu.1", "orders.us.1", "billing.eu", "orders.eu.2", "billing.us", "x"]


def test_load_next_filters(store: StreamStore) -> None:
    fill(store, SUBJECTS)

    def nxt(start: int, filters: list[str] | None) -> int | None:
        msg = store.load_next(start, filters)
        return msg.seq if msg else None

    assert nxt(1, None) == 1 and nxt(1, []) == 1 and nxt(1, [">"]) == 1
    assert nxt(2, ["orders.eu.1"]) is None
    assert nxt(1, ["orders.eu.2"]) == 4
    assert nxt(2, ["orders.eu.*"]) == 4
    assert nxt(1, ["*.us.*"]) == 2
    assert nxt(3, ["orders.>"]) == 4
    assert nxt(1, ["billing.*", "x"]) == 3
    assert nxt(4, ["billing.*", "x"]) == 5
    assert nxt(6, ["billing.*", "x"]) == 6
    assert nxt(1, ["nope", "orders"]) is None
    assert nxt(7, None) is None
    assert nxt(0, ["x"]) == 6
    store.remove(4)
    assert nxt(2, ["orders.eu.*"]) is None
    assert nxt(4, None) == 5


def test_many_subject_filters(store: StreamStore) -> None:
    subjects = [f"kv.b.{i}" for i in range(300)] + [f"kv.a.{i}" for i in range(30)]
    fill(store, subjects)
    store.remove(301)
    literal = [f"kv.a.{i}" for i in range(0, 30, 2)] + [f"kv.b.{i}" for i in range(290, 300)]
    assert store.num_pending(1, literal) == 24
    msg = store.load_next(1, literal)
    assert msg is not None and msg.seq == 291
    msg = store.load_next(301, literal)
    assert msg is not None and msg.seq == 303
    msg = store.load_prev(302, literal)
    assert msg is not None and msg.seq == 300
    last = store.load_last("kv.b.*")
    assert last is not None and last.seq == 300
    assert store.num_pending(295, ["kv.b.*"]) == 6
    assert store.num_pending(1, ["kv.>"]) == 329
    msg = store.load_prev(330, ["kv.b.*"])
    assert msg is not None and msg.seq == 300
    store.store("kv.b.new", None, b"x", T0)  # the cached wildcard set follows new subjects
    assert store.num_pending(295, ["kv.b.*"]) == 7
    last = store.load_last("kv.b.*")
    assert last is not None and last.subject == "kv.b.new"


def test_load_next_many_subjects(store: StreamStore) -> None:
    subjects = [f"k.{i % 40}" for i in range(200)] + ["other"] * 5 + ["k.7"]
    fill(store, subjects)
    msg = store.load_next(1, ["k.*"])
    assert msg is not None and msg.seq == 1
    msg = store.load_next(200, ["k.*"])
    assert msg is not None and msg.seq == 200
    msg = store.load_next(201, ["k.*"])
    assert msg is not None and msg.seq == 206 and msg.subject == "k.7"
    assert store.num_pending(150, ["k.*"]) == 52
    assert store.num_pending(150, ["k.*", "other"]) == 57
    assert len(store.subjects("k.*")) == 40


def test_load_last_and_prev(store: StreamStore) -> None:
    fill(store, SUBJECTS)
    last = store.load_last()
    assert last is not None and last.seq == 6
    last = store.load_last("orders.*.1")
    assert last is not None and last.seq == 2
    last = store.load_last("billing.eu")
    assert last is not None and last.seq == 3
    assert store.load_last("none.such") is None
    store.remove(6)
    last = store.load_last(">")
    assert last is not None and last.seq == 5
    store.remove(2)
    last = store.load_last("orders.*.1")
    assert last is not None and last.seq == 1

    def prev(start: int, filters: list[str] | None = None) -> int | None:
        msg = store.load_prev(start, filters)
        return msg.seq if msg else None

    assert prev(100) == 5
    assert prev(2) == 1
    assert prev(5, ["orders.>"]) == 4
    assert prev(3, ["orders.>"]) == 1
    assert prev(0) is None
    assert prev(6, ["billing.*", "orders.eu.2"]) == 5
    assert prev(4, ["billing.*"]) == 3


def test_iter_range(store: StreamStore) -> None:
    fill(store, SUBJECTS)
    assert [m.seq for m in store.iter_range(2, 5)] == [2, 3, 4, 5]
    assert [m.seq for m in store.iter_range(1, 6, ["orders.>"])] == [1, 2, 4]
    assert list(store.iter_range(7, 10)) == []


def test_seq_for_time(store: StreamStore) -> None:
    for i in range(10):
        store.store("a", None, b"x", T0 + i * 100)
    assert store.seq_for_time(0) == 1
    assert store.seq_for_time(T0) == 1
    assert store.seq_for_time(T0 + 1) == 2
    assert store.seq_for_time(T0 + 500) == 6
    assert store.seq_for_time(T0 + 901) == 11
    store.remove(6)
    store.remove(7)
    assert store.seq_for_time(T0 + 500) == 8
    store.compact(4)
    assert store.seq_for_time(0) == 4


def test_subjects_and_num_pending_after_deletes(store: StreamStore) -> None:
    fill(store, ["a.1", "a.2", "b", "a.1", "a.2", "b", "a.1"])
    assert store.subjects() == {
        "a.1": SubjectInfo(3, 1, 7),
        "a.2": SubjectInfo(2, 2, 5),
        "b": SubjectInfo(2, 3, 6),
    }
    assert set(store.subjects("a.*")) == {"a.1", "a.2"}
    assert store.subjects("b") == {"b": SubjectInfo(2, 3, 6)}
    assert store.subjects("zzz") == {}
    assert store.num_pending(1) == 7
    assert store.num_pending(4) == 4
    assert store.num_pending(4, ["a.*"]) == 3
    assert store.num_pending(2, ["a.1"]) == 2
    store.remove(4)
    store.remove(1)
    store.remove(7)
    assert store.subject_info("a.1") is None
    assert store.subjects("a.>") == {"a.2": SubjectInfo(2, 2, 5)}
    assert store.num_pending(1) == 4
    assert store.num_pending(3) == 3
    assert store.num_pending(4) == 2
    assert store.num_pending(3, ["a.*", "b"]) == 3
    assert store.num_pending(8) == 0
    assert store.state().num_subjects == 2
    store.remove(5)
    assert store.subject_info("a.2") == SubjectInfo(1, 2, 2)
    store.store("a.1", None, b"x", T0)
    assert store.subject_info("a.1") == SubjectInfo(1, 8, 8)


def test_front_trimming_keeps_queries_right(store: StreamStore) -> None:
    n = 10_000
    for i in range(n):
        store.store("even" if i % 2 == 0 else "odd", None, b"p", T0 + i)
    for seq in range(1, 9_001):
        assert store.remove(seq)
    st_ = store.state()
    assert (st_.msgs, st_.first_seq, st_.last_seq) == (1000, 9001, 10_000)
    assert store.subject_info("odd") == SubjectInfo(500, 9002, 10_000)
    msg = store.load_next(1, ["even"])
    assert msg is not None and msg.seq == 9001
    assert store.num_pending(9500, ["odd"]) == 251
    assert store.seq_for_time(T0) == 9001
    assert store.load(9000) is None and store.load(10_000) is not None


def test_closed_store_refuses_work(store: StreamStore) -> None:
    store.store("a", None, b"x", T0)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.store("a", None, b"x", T0)
    with pytest.raises(StoreError, match="closed"):
        store.load(1)


# -- model-based ----------------------------------------------------------------
class Model:
    """The reference semantics: a dict of present messages and two bounds."""

    def __init__(self) -> None:
        self.msgs: dict[int, tuple[str, int, bytes]] = {}
        self.last = 0
        self.first_floor = 1

    def first(self) -> int:
        return min(self.msgs) if self.msgs else self.last + 1

    def store(self, subject: str, ts: int, data: bytes) -> int:
        self.last += 1
        self.msgs[self.last] = (subject, ts, data)
        return self.last

    def compact(self, seq: int) -> int:
        if seq <= 0:
            seq = self.last + 1
        gone = [s for s in self.msgs if s < seq]
        for s in gone:
            del self.msgs[s]
        self.last = max(self.last, seq - 1)
        return len(gone)

    def purge(self, subject: str | None, up_to: int | None, keep: int | None) -> int:
        if subject in (None, ">"):
            if up_to:
                return self.compact(up_to)
            if keep:
                return 0 if keep >= len(self.msgs) else self.compact(sorted(self.msgs)[-keep])
            return self.compact(self.last + 1)
        assert subject is not None
        match = sorted(s for s, m in self.msgs.items() if filter_selects(subject, m[0]))
        if keep:
            match = match[: max(0, len(match) - keep)]
        if up_to:
            match = [s for s in match if s < up_to]
        for s in match:
            del self.msgs[s]
        return len(match)

    def matching(self, filters: list[str] | None) -> list[int]:
        return sorted(
            s
            for s, m in self.msgs.items()
            if not filters or any(filter_selects(f, m[0]) for f in filters)
        )


SUBJ = st.sampled_from(["a", "b", "c.1", "c.2", "d.x.y"])
FILTERS = st.one_of(
    st.none(),
    st.lists(st.sampled_from(["a", "b", "c.*", "c.>", "*.x.*", ">", "zz", "c.1"]), max_size=3),
)
OP = st.one_of(
    st.tuples(st.just("store"), SUBJ, st.binary(max_size=8)),
    st.tuples(st.just("store"), SUBJ, st.binary(max_size=8)),
    st.tuples(st.just("remove"), st.integers(0, 40), st.booleans()),
    st.tuples(
        st.just("purge"),
        st.one_of(st.none(), SUBJ, st.sampled_from(["c.*", ">"])),
        st.one_of(st.none(), st.integers(0, 40)),
        st.one_of(st.none(), st.integers(0, 5)),
    ),
    st.tuples(st.just("compact"), st.integers(0, 45)),
)


PROBES = st.lists(st.tuples(st.integers(0, 45), FILTERS), max_size=6)


def apply_op(store: StreamStore, model: Model, op: tuple, clock: int) -> None:
    """Apply one generated operation to both and compare the answers."""
    if op[0] == "store":
        assert store.store(op[1], None, op[2], clock) == model.store(op[1], clock, op[2])
    elif op[0] == "remove":
        present = op[1] in model.msgs
        model.msgs.pop(op[1], None)
        assert store.remove(op[1], erase=op[2]) is present
    elif op[0] == "purge":
        _, subject, up_to, keep = op
        if up_to and keep:
            with pytest.raises(ValueError):
                store.purge(subject, up_to, keep)
        else:
            assert store.purge(subject, up_to, keep) == model.purge(subject, up_to, keep)
    else:
        assert store.compact(op[1]) == model.compact(op[1])


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(OP, max_size=40), probes=PROBES)
def test_matches_reference_model(
    make_store: Callable[..., StreamStore],
    eager_compaction: None,
    ops: list[tuple],
    probes: list[tuple],
) -> None:
    run_against_model(make_store, ops, probes)


def run_against_model(
    make_store: Callable[..., StreamStore], ops: list[tuple], probes: list[tuple]
) -> None:
    """Apply `ops` to a fresh store and the reference model, then compare them."""
    store = make_store()
    model = Model()
    clock = T0
    for op in ops:
        clock += 10
        apply_op(store, model, op, clock)
    check_against_model(store, model, probes)


def check_against_model(store: StreamStore, model: Model, probes: list[tuple]) -> None:
    st_ = store.state()
    first = model.first()
    assert (st_.msgs, st_.first_seq, st_.last_seq) == (len(model.msgs), first, model.last)
    assert st_.num_deleted == (model.last - first + 1 - len(model.msgs) if model.msgs else 0)
    assert st_.bytes == sum(nats_size(store, m[0], None, m[2]) for m in model.msgs.values())
    assert store.deleted() == [s for s in range(first, model.last + 1) if s not in model.msgs]
    for seq in range(0, model.last + 2):
        msg = store.load(seq)
        if seq in model.msgs:
            assert msg is not None and (msg.subject, msg.timestamp_ns, msg.data) == model.msgs[seq]
        else:
            assert msg is None
    subjects: dict[str, list[int]] = {}
    for s, m in sorted(model.msgs.items()):
        subjects.setdefault(m[0], []).append(s)
    assert store.subjects() == {k: SubjectInfo(len(v), v[0], v[-1]) for k, v in subjects.items()}
    for start, filters in probes:
        match = model.matching(filters)
        after = [s for s in match if s >= start]
        before = [s for s in match if s <= start]
        nxt = store.load_next(start, filters)
        assert (nxt.seq if nxt else None) == (after[0] if after else None)
        prv = store.load_prev(start, filters)
        assert (prv.seq if prv else None) == (before[-1] if before else None)
        assert store.num_pending(start, filters) == len(after)
        assert [m.seq for m in store.iter_range(start, start + 10, filters)] == [
            s for s in after if s <= start + 10
        ]
        last_filter = filters[0] if filters else None
        lmatch = model.matching([last_filter] if last_filter else None)
        last = store.load_last(last_filter)
        assert (last.seq if last else None) == (lmatch[-1] if lmatch else None)


WIDE_SUBJ = st.sampled_from([f"w.{i}" for i in range(40)] + ["x.1", "x.2"])
WIDE_OP = st.one_of(
    st.tuples(st.just("store"), WIDE_SUBJ, st.binary(max_size=4)),
    st.tuples(st.just("store"), WIDE_SUBJ, st.binary(max_size=4)),
    st.tuples(st.just("store"), WIDE_SUBJ, st.binary(max_size=4)),
    st.tuples(st.just("remove"), st.integers(0, 80), st.booleans()),
    st.tuples(st.just("purge"), st.sampled_from(["w.*", "w.3", ">"]), st.none(), st.integers(0, 3)),
)
WIDE_PROBES = st.lists(
    st.tuples(
        st.integers(0, 90),
        st.one_of(
            st.lists(WIDE_SUBJ, min_size=17, max_size=30),
            st.lists(st.sampled_from(["w.*", "x.*", "*.1", ">"]), min_size=1, max_size=2),
        ),
    ),
    max_size=5,
)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(WIDE_OP, max_size=80), probes=WIDE_PROBES)
def test_many_subjects_match_reference_model(
    make_store: Callable[..., StreamStore],
    eager_compaction: None,
    ops: list[tuple],
    probes: list[tuple],
) -> None:
    run_against_model(make_store, ops, probes)


def test_index_follows_messages_not_the_sequence_span(
    make_store: Callable[..., StreamStore],
) -> None:
    # one key written once pins first_seq while another is updated 20k times
    store = make_store(block_size=16384)
    store.store("kv.pinned", None, b"p", T0)
    for i in range(20_000):
        store.store("kv.hot", None, b"v%d" % i, T0 + i)
        store.purge("kv.hot", keep=1)
    st_ = store.state()
    assert (st_.msgs, st_.first_seq, st_.last_seq, st_.num_deleted) == (2, 1, 20_001, 19_999)
    entries = store._index.entries  # type: ignore[attr-defined]
    assert entries < 6000, entries
    assert store.deleted()[:3] == [2, 3, 4] and len(store.deleted()) == 19_999
    assert store.num_pending(2) == 1 and store.num_pending(1) == 2
    msg = store.load_next(2)
    assert msg is not None and msg.seq == 20_001 and msg.data == b"v19999"
    msg = store.load_prev(20_000)
    assert msg is not None and msg.seq == 1
    assert store.seq_for_time(T0 + 1) == 20_001
    assert store.subject_info("kv.hot") == SubjectInfo(1, 20_001, 20_001)
