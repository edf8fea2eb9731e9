"""Deterministic Nats-Msg-Ids: same input, same ids; distinct rows, distinct ids."""

from __future__ import annotations

import pytest

from spark_jetstream.spark_internals import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY
from spark_jetstream.write.msg_ids import MsgIdError, MsgIdGenerator, streaming_scope


def test_positional_ids_continue_across_batches_and_repeat_on_retry() -> None:
    def run() -> list[str]:
        gen = MsgIdGenerator("", "q1:7", 3)
        return gen.positional(2) + gen.positional(3)

    ids = run()
    assert ids == ["q1:7:3:0", "q1:7:3:1", "q1:7:3:2", "q1:7:3:3", "q1:7:3:4"]
    assert run() == ids  # a retried task makes the same ids


def test_prefix_applies_to_derived_ids() -> None:
    gen = MsgIdGenerator("pipe-", "w", 0)
    assert gen.positional(1) == ["pipe-w:0:0"]
    assert gen.from_source(["S"], [5]) == ["pipe-S:5:0"]


def test_source_ids_count_occurrences_of_the_same_message() -> None:
    gen = MsgIdGenerator("", "q:0", 0)
    first = gen.from_source(["S", "S", "S", "T"], [1, 1, 2, 1])
    second = gen.from_source(["S", "S"], [2, 1])  # occurrences keep counting across batches
    assert first == ["S:1:0", "S:1:1", "S:2:0", "T:1:0"]
    assert second == ["S:2:1", "S:1:2"]
    assert len(set(first + second)) == 6


def test_rows_without_coordinates_fall_back_to_positions() -> None:
    gen = MsgIdGenerator("", "q:4", 2)
    assert gen.from_source(["S", None, "S"], [1, 9, None]) == ["S:1:0", "q:4:2:1", "q:4:2:2"]


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
    with pytest.raises(RuntimeError, match="outside a streaming query"):
        streaming_scope({}.get)
