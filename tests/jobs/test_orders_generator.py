"""The order generator: deterministic, realistic, with a small known share of bad records."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from jobs.orders.generator import (
    BAD_REASONS,
    MAX_LATENESS_MS,
    REGIONS,
    generate,
    iso_ms,
)


def test_same_arguments_give_identical_events() -> None:
    a = list(generate(300, seed=3))
    b = list(generate(300, seed=3))
    assert a == b
    assert a != list(generate(300, seed=4))


def test_message_ids_are_unique_and_name_order_and_event() -> None:
    events = list(generate(500))
    ids = [e.msg_id for e in events]
    assert len(ids) == len(set(ids))
    for e in events:
        assert e.msg_id == f"{e.order_id}.{e.event}"
        assert e.headers["Nats-Msg-Id"] == e.msg_id
        assert e.headers["Order-Id"] == e.order_id
        assert e.headers["Content-Type"] == "application/json"


def test_valid_events_are_complete_json_on_their_subject() -> None:
    events = [e for e in generate(400, bad_share=0.0)]
    assert {e.event for e in events} == {"created", "paid", "shipped"}
    per_order = Counter(e.order_id for e in events)
    assert len(per_order) == 400 and max(per_order.values()) <= 3
    for e in events:
        body = json.loads(e.data)
        assert e.subject == f"orders.{body['event']}"
        assert body["region"] in REGIONS and body["currency"] == REGIONS[body["region"]]
        assert body["amount"] > 0 and round(body["amount"] * 100) == e.amount_cents
        assert body["event_time"] == iso_ms(e.event_time_ms)
        if e.event == "created":
            cents = sum(round(it["unit_price"] * 100) * it["qty"] for it in body["items"])
            assert cents == e.amount_cents


def test_events_follow_each_other_per_order_and_are_never_later_than_the_bound() -> None:
    events = list(generate(2000, bad_share=0.0))
    times: dict[str, dict[str, int]] = {}
    for e in events:
        times.setdefault(e.order_id, {})[e.event] = e.event_time_ms
    for t in times.values():
        assert "created" in t
        if "paid" in t:
            assert t["paid"] > t["created"]
        if "shipped" in t:
            assert "paid" in t and t["shipped"] > t["paid"]
    # publish order is event-time order up to MAX_LATENESS_MS
    newest = 0
    for e in events:
        assert e.event_time_ms > newest - MAX_LATENESS_MS
        newest = max(newest, e.event_time_ms)


def test_bad_records_are_a_small_share_of_every_kind_with_their_reason() -> None:
    events = list(generate(5000, bad_share=0.02))
    bad = [e for e in events if not e.valid]
    assert 0.01 < len(bad) / len(events) < 0.03
    assert {e.reason for e in bad} == set(BAD_REASONS.values())
    for e in bad:
        if e.reason == BAD_REASONS["not_json"]:
            with pytest.raises(json.JSONDecodeError):
                json.loads(e.data)
        elif e.reason == BAD_REASONS["subject_mismatch"]:
            assert e.subject != f"orders.{json.loads(e.data)['event']}"
        elif e.reason == BAD_REASONS["missing_field"]:
            assert "customer_id" not in json.loads(e.data)


def test_continuing_orders_never_reuse_an_id() -> None:
    first = {e.order_id for e in generate(100)}
    more = {e.order_id for e in generate(100, first_order=101)}
    assert not first & more


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="orders"):
        list(generate(-1))
    with pytest.raises(ValueError, match="bad_share"):
        list(generate(1, bad_share=1.5))
