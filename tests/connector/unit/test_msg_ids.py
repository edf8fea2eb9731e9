"""Deterministic Nats-Msg-Ids: the same rows give the same set of ids in any order; distinct
rows, distinct ids; the scope names the sink, the query and the batch."""

from __future__ import annotations

import random

import pytest

from spark_jetstream.spark_internals import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY
from spark_jetstream.write.msg_ids import (
    BATCH_WRITE_SCOPE,
    MsgIdError,
    MsgIdGenerator,
    content_digest,
    id_scope,
    streaming_scope,
    values_digest,
)

ROWS = [(b"out.a", b"", f"v{i % 40}".encode()) for i in range(200)]  # 40 distinct rows, 5 copies each


def content_ids(rows: list[tuple[bytes, bytes, bytes]], batch_sizes: list[int]) -> list[str]:
    gen = MsgIdGenerator("", "q:3", 1)
    out: list[str] = []
    start = 0
    for size in batch_sizes:
        chunk = rows[start : start + size]
        out += gen.from_digests([content_digest(*r) for r in chunk])
        start += size
    assert start == len(rows)
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_content_ids_are_the_same_set_whatever_the_row_order(seed: int) -> None:
    # a retried task after a shuffle gets the same rows in another order, in other Arrow batches
    print(f"seed={seed}")
    rng = random.Random(seed)
    first = content_ids(ROWS, [200])
    shuffled = ROWS[:]
    rng.shuffle(shuffled)
    again = content_ids(shuffled, [37, 100, 63])
    assert len(set(first)) == 200  # identical rows are told apart by their occurrence count
    assert set(again) == set(first)
    # and each id still goes with its own content
    by_id = {i: r for i, r in zip(again, shuffled, strict=True)}
    assert all(by_id[i] == r for i, r in zip(first, ROWS, strict=True))


def test_content_ids_name_scope_partition_digest_and_count() -> None:
    gen = MsgIdGenerator("p-", "q:3", 5)
    d = content_digest(b"s", b"", b"x")
    assert gen.from_digests([d, d]) == [f"p-q:3:5:{d}:0", f"p-q:3:5:{d}:1"]
    assert len(d) == 16 and d.isascii()
    no_partition = MsgIdGenerator("", "w", 5, with_partition=False)
    assert no_partition.from_digests([d]) == [f"w:{d}:0"]


def test_the_digest_covers_subject_headers_and_data_unambiguously() -> None:
    base = content_digest(b"a.b", b"X: 1\r\n", b"data")
    assert content_digest(b"a.b", b"X: 1\r\n", b"data") == base
    others = [
        content_digest(b"a.c", b"X: 1\r\n", b"data"),
        content_digest(b"a.b", b"X: 2\r\n", b"data"),
        content_digest(b"a.b", b"", b"data"),
        content_digest(b"a.b", b"X: 1\r\n", b"datb"),
        content_digest(b"a.b", b"", b"X: 1\r\n\ndata"),  # headers moved into the payload
    ]
    assert len({base, *others}) == 6


def test_values_digest_frames_each_value() -> None:
    assert values_digest(["ab", "c"]) != values_digest(["a", "bc"])
    assert values_digest([None, "x"]) != values_digest(["", "x"])
    assert values_digest([1, b"x"]) != values_digest(["1", b"x"])
    assert values_digest([1.5, {"k": 1}]) == values_digest([1.5, {"k": 1}])


def test_source_ids_are_scoped_and_count_occurrences_of_the_same_message() -> None:
    gen = MsgIdGenerator("", "pipeA", 0)
    first = gen.from_source(["S", "S", "S", "T"], [1, 1, 2, 1], lambda i: "never")
    second = gen.from_source(["S", "S"], [2, 1], lambda i: "never")  # counts go on across batches
    assert first == ["pipeA:S:1:0", "pipeA:S:1:1", "pipeA:S:2:0", "pipeA:T:1:0"]
    assert second == ["pipeA:S:2:1", "pipeA:S:1:2"]
    other = MsgIdGenerator("", "pipeB", 0).from_source(["S"], [1], lambda i: "never")
    assert other == ["pipeB:S:1:0"]  # two pipelines from one source never share ids


def test_rows_without_coordinates_fall_back_to_content_ids() -> None:
    gen = MsgIdGenerator("", "pipe", 2)
    assert gen.from_source(["S", None, "S"], [1, 9, None], lambda i: f"d{i}") == [
        "pipe:S:1:0",
        "pipe:2:d1:0",
        "pipe:2:d2:0",
    ]


def test_msg_id_column_is_taken_as_given_and_checked() -> None:
    gen = MsgIdGenerator("ignored-", "q:0", 0)
    assert gen.from_column(["a", "b"], "msg_id") == ["a", "b"]
    with pytest.raises(MsgIdError, match="column 'msg_id' is null in row 2 of partition 0"):
        gen.from_column([None], "msg_id")
    with pytest.raises(MsgIdError, match="column 'msg_id' is empty in row 3"):
        gen.from_column([""], "msg_id")
    with pytest.raises(MsgIdError, match="line break in row 4"):
        gen.from_column(["a\r\nX: y"], "msg_id")


def test_streaming_scope_from_local_properties() -> None:
    props = {QUERY_ID_PROPERTY: "5f0c", BATCH_ID_PROPERTY: "12"}
    assert streaming_scope(props.get) == "5f0c:12"
    assert streaming_scope({}.get) is None


def test_id_scope_names_the_sink_then_query_and_batch() -> None:
    assert id_scope("content", None, "q:7") == "q:7"
    assert id_scope("content", "orders", "q:7") == "orders:q:7"
    assert id_scope("content", "orders-7", None) == "orders-7"
    assert id_scope("content", None, None) == BATCH_WRITE_SCOPE  # a plain df.write: stable, no random id
    assert id_scope("source", "pipeA", "q:7") == "pipeA"  # survives a fresh checkpoint
