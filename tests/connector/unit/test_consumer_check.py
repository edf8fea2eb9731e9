"""Which operator consumers option consumer reads through (read/consumer_check.py): pure, no server."""

from __future__ import annotations

from typing import Any

import pytest

from spark_jetstream.read.consumer_check import (
    ConsumerRefusedError,
    check_consumer,
    refuse_changed_filter,
)

NS = 1_000_000_000


def info(**config: Any) -> dict[str, Any]:
    return {"config": {"durable_name": "C", "ack_policy": "explicit", "max_deliver": -1, **config}}


def test_the_settings_the_driver_works_with() -> None:
    settings, warnings = check_consumer(
        info(ack_wait=5 * NS, backoff=[NS, 9 * NS], max_ack_pending=100, max_batch=50, max_bytes=1 << 20,
             max_expires=3 * NS, filter_subjects=["b.>", "a.1"]),
        "S", "C", (),
    )
    assert (settings.ack_all, settings.ack_wait_s, settings.redelivery_wait_s) == (False, 5.0, 9.0)
    assert (settings.max_ack_pending, settings.max_request_batch, settings.max_request_bytes) == (100, 50, 1 << 20)
    assert settings.max_request_expires_s == 3.0 and settings.filters == ("a.1", "b.>")
    assert warnings == []
    plain, _ = check_consumer(info(ack_policy="all", max_deliver=0), "S", "C", ("a.>",) and ())
    assert (plain.ack_all, plain.ack_wait_s, plain.max_ack_pending, plain.filters) == (True, 30.0, 0, ())


@pytest.mark.parametrize(
    ("config", "subjects", "setting"),
    [
        ({"deliver_subject": "push.x"}, (), r"has deliver_subject 'push.x' \(a push consumer\)"),
        ({"durable_name": None, "name": "C"}, (), r"has no durable_name \(an ephemeral consumer\)"),
        ({"ack_policy": "none"}, (), r"has ack_policy 'none': .* must be explicit or all"),
        ({"ack_policy": "flow_control"}, (), r"has ack_policy 'flow_control'"),
        ({"max_deliver": 3}, (), r"has max_deliver 3: .* must be -1 \(unlimited\)"),
        ({"headers_only": True}, (), r"has headers_only true"),
        ({"priority_policy": "pinned_client", "priority_groups": ["g"]}, (), r"has priority_policy 'pinned_client'"),
        ({"filter_subject": "a.1"}, ("a.2",), r"has filter \['a.1'\] .* option subjects asks for \['a.2'\]"),
        ({}, ("a.2",), r"has filter all subjects .* option subjects asks for \['a.2'\]"),
    ],
)
def test_a_consumer_that_breaks_exactly_once_is_refused_naming_the_setting(
    config: dict[str, Any], subjects: tuple[str, ...], setting: str
) -> None:
    with pytest.raises(ConsumerRefusedError, match=rf"consumer 'C' on stream 'S' \(option consumer\) {setting}"):
        check_consumer(info(**config), "S", "C", subjects)


def test_the_same_filter_in_option_subjects_is_accepted() -> None:
    settings, _ = check_consumer(info(filter_subjects=["a.2", "a.1"]), "S", "C", ("a.1", "a.2"))
    assert settings.filters == ("a.1", "a.2")
    assert check_consumer(info(filter_subject=">"), "S", "C", (">",))[0].filters == ()


def test_settings_that_slow_or_stop_the_query_are_warned_about() -> None:
    _, warnings = check_consumer({**info(replay_policy="original", inactive_threshold=60 * NS), "paused": True},
                                 "S", "C", ())
    assert [w.split(" has ")[-1].split(" is ")[-1][:20] for w in warnings] == [
        "replay_policy 'origi", "inactive_threshold 6", "paused (until None):",
    ]


def test_a_changed_filter_is_refused_naming_both() -> None:
    refuse_changed_filter("S", "C", None, ("a.>",), "then")  # nothing recorded
    refuse_changed_filter("S", "C", ("a.>",), ("a.>",), "then")
    with pytest.raises(ConsumerRefusedError, match=r"has filter \['b.>'\] .* but then it was \['a.>'\]"):
        refuse_changed_filter("S", "C", ("a.>",), ("b.>",), "then")
    with pytest.raises(ConsumerRefusedError, match=r"has filter all subjects .* it was \['a.>'\].*new checkpoint"):
        refuse_changed_filter("S", "C", ("a.>",), (), "then")
