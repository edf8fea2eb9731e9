"""Pipeline transforms on batch DataFrames built from generator events (same code as streaming)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from decimal import Decimal

import pytest

from jobs.orders import transforms as T
from jobs.orders.expected import expected_from
from jobs.orders.generator import BAD_REASONS, generate

pytestmark = pytest.mark.spark

WINDOW_MS = 5 * 60 * 1000


@pytest.fixture(scope="module")
def events():  # type: ignore[no-untyped-def]
    return list(generate(1500, seed=11, bad_share=0.08))


@pytest.fixture(scope="module")
def validated(spark, events):  # type: ignore[no-untyped-def]
    return T.validate(T.parse_orders(T.source_frame(spark, events))).cache()


def test_validation_gives_every_bad_record_its_reason_and_passes_the_rest(validated, events) -> None:  # type: ignore[no-untyped-def]
    got = dict(validated.select("source_seq", "error").collect())
    assert got == {seq: e.reason for seq, e in enumerate(events, 1)}
    assert {e.reason for e in events if e.reason} == set(BAD_REASONS.values())


def test_routed_output_cleans_valid_rows_and_dead_letters_the_rest(validated, events) -> None:  # type: ignore[no-untyped-def]
    rows = T.routed_output(validated).collect()
    assert len(rows) == len(events)
    by_id = {r.msg_id: r for r in rows}
    assert len(by_id) == len(rows)  # message ids are unique
    for seq, e in enumerate(events, 1):
        if e.valid:
            r = by_id[f"clean.{e.order_id}.{e.event}"]
            assert r.subject == f"clean.orders.{e.event}"
            body = json.loads(r.data)
            assert body["order_id"] == e.order_id and body["source_seq"] == seq
            assert Decimal(str(body["amount"])) == Decimal(e.amount_cents) / 100
            assert r.headers == {"Order-Id": e.order_id, "Source-Seq": str(seq)}
        else:
            r = by_id[f"dlq.ORDERS.{seq}"]
            assert r.subject == f"dlq.{e.subject}"
            assert bytes(r.data) == e.data  # the original payload, untouched
            assert r.headers["Dlq-Reason"] == e.reason
            assert r.headers["Source-Seq"] == str(seq)


def test_message_ids_do_not_depend_on_the_run(spark, events) -> None:  # type: ignore[no-untyped-def]
    def ids() -> list[str]:
        df = T.routed_output(T.validate(T.parse_orders(T.source_frame(spark, events[:200]))))
        return sorted(r.msg_id for r in df.collect())

    assert ids() == ids()


def test_enrich_converts_to_eur_and_counts_items(validated, events) -> None:  # type: ignore[no-untyped-def]
    rows = T.enrich(validated).select("source_seq", "amount_eur", "region_name", "items_count").collect()
    assert len(rows) == sum(e.valid for e in events)
    from jobs.orders.expected import amount_eur

    for r in rows:
        e = events[r.source_seq - 1]
        assert r.amount_eur == amount_eur(e.amount_cents, e.currency)
        assert r.region_name == T.REGION_NAMES[e.region]
        assert (r.items_count > 0) == (e.event == "created")


def test_windowed_revenue_matches_the_generator(validated, events) -> None:  # type: ignore[no-untyped-def]
    windows = T.windowed_revenue(T.enrich(validated), window="5 minutes").collect()
    expected = expected_from(events, WINDOW_MS).windows
    got = {
        (int(r.window_start.timestamp() * 1000), r.region): (r.created, r.paid, r.shipped, r.revenue_eur)
        for r in windows
    }
    assert got == {k: (v.created, v.paid, v.shipped, v.revenue_eur) for k, v in expected.items()}


def test_revenue_output_rows_are_json_with_stable_ids(validated) -> None:  # type: ignore[no-untyped-def]
    out = T.revenue_output(T.windowed_revenue(T.enrich(validated))).collect()
    assert out and len({r.msg_id for r in out}) == len(out)
    regions = Counter()
    for r in out:
        body = json.loads(r.data)
        assert r.subject == f"revenue.orders.{body['region']}"
        assert r.msg_id == f"revenue.{body['region']}.{body['window_start']}"
        assert body["created"] >= 0 and Decimal(str(body["revenue_eur"])) >= 0
        regions[body["region"]] += 1
    assert set(regions) == set(T.REGION_NAMES)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b'{"order_id":"ord-1","event":"paid"', BAD_REASONS["not_json"]),  # truncated
        # cut inside the items: the fields before the cut are parsed, the record is still corrupt
        (b'{"order_id":"ord-1","event":"created","customer_id":"cus-1","region":"eu-west","currency":"EUR",'
         b'"amount":1.5,"event_time":"2026-01-05T08:00:00.000Z","items":[{"sku"', BAD_REASONS["not_json"]),
        (b'{"order_id":"ord-1","event":"created","customer_id":"cus-1","region":"eu-west","currency":"EUR",'
         b'"amount":"a lot","event_time":"2026-01-05T08:00:00.000Z"}', BAD_REASONS["not_json"]),  # mistyped
        (b"[1,2]", BAD_REASONS["not_json"]),
        (b'"a string"', BAD_REASONS["not_json"]),
        (b"42", BAD_REASONS["not_json"]),
        (b"", BAD_REASONS["not_json"]),
        (b"{}", "missing field order_id"),
    ],
)
def test_a_payload_that_is_no_json_object_is_dead_lettered_as_such(spark, events, payload, reason) -> None:  # type: ignore[no-untyped-def]
    event = replace(next(e for e in events if e.valid), data=payload)
    rows = T.validate(T.parse_orders(T.source_frame(spark, [event]))).select("error").collect()
    assert [r.error for r in rows] == [reason]
