"""A deterministic sample of order events, as a shop would publish them.

Every order is `created`; most are then `paid`, most paid orders `shipped`.
Events are yielded in publish order: by event time, each carrying a small
random lateness (`MAX_LATENESS_MS`, well under the pipeline's watermark delay,
so no valid event is ever dropped as late). Subjects are `orders.created`,
`orders.paid`, `orders.shipped`; every message has a `Nats-Msg-Id`
(`<order_id>.<event>`), a `Content-Type` and an `Order-Id` header.

A share `bad_share` of the events is deliberately broken in one of the ways
of `BAD_KINDS` (not JSON, a missing field, a negative amount, an unknown
region, a bad timestamp, an event that does not match its subject). Each
`OrderEvent` states whether it is valid and, if not, the reason the
validation must give — so tests and the job can check the pipeline against
the generator itself.

Invariants: the same `(orders, seed, start_ms)` gives byte-identical events
(in the same order, with the same message ids); order ids are numbered from
`first_order` so a continuing publisher never reuses one.
"""

from __future__ import annotations

import heapq
import json
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Final

EVENTS: Final = ("created", "paid", "shipped")
SUBJECT_PREFIX: Final = "orders"
# region -> payment currency
REGIONS: Final[dict[str, str]] = {
    "eu-west": "EUR",
    "us-east": "USD",
    "us-west": "USD",
    "ap-south": "INR",
}
# Prices are list prices in EUR; an order is charged in its region's currency.
FX_FROM_EUR: Final[dict[str, float]] = {"EUR": 1.0, "USD": 1.08, "INR": 90.0}
CATALOG: Final[tuple[tuple[str, float], ...]] = tuple(
    (f"SKU-{n:04d}", price)
    for n, price in enumerate((4.99, 9.5, 12.0, 19.99, 24.5, 39.0, 49.95, 89.0, 129.0, 249.0), 1)
)
START_MS: Final = int(datetime(2026, 1, 5, 8, 0, tzinfo=timezone.utc).timestamp() * 1000)
MEAN_GAP_MS: Final = 500  # one new order every half second on average
MAX_LATENESS_MS: Final = 20_000
PAID_SHARE: Final = 0.85
SHIPPED_SHARE: Final = 0.9
BAD_KINDS: Final = (
    "not_json",
    "missing_field",
    "negative_amount",
    "unknown_region",
    "bad_timestamp",
    "subject_mismatch",
)
# The reason validation must give for each kind (transforms.REASONS uses the same texts).
BAD_REASONS: Final[dict[str, str]] = {
    "not_json": "payload is not a JSON object",
    "missing_field": "missing field customer_id",
    "negative_amount": "amount must be positive",
    "unknown_region": "unknown region",
    "bad_timestamp": "event_time is not an ISO-8601 time",
    "subject_mismatch": "event does not match the subject",
}


@dataclass(frozen=True, slots=True)
class OrderEvent:
    """One message to publish, and what the pipeline must make of it."""

    subject: str
    data: bytes
    headers: dict[str, str]
    msg_id: str
    order_id: str
    event: str
    region: str
    event_time_ms: int
    amount_cents: int  # in the charged currency, as published
    currency: str
    reason: str | None = None  # None: valid; else the validation error expected

    @property
    def valid(self) -> bool:
        return self.reason is None


def iso_ms(ms: int) -> str:
    """`2026-01-05T08:00:00.000Z` for milliseconds since the epoch."""
    t = time.gmtime(ms // 1000)
    return (
        f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T"
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}.{ms % 1000:03d}Z"
    )


def order_id(n: int) -> str:
    return f"ord-{n:08d}"


def generate(
    orders: int,
    *,
    seed: int = 7,
    start_ms: int = START_MS,
    first_order: int = 1,
    bad_share: float = 0.01,
) -> Iterator[OrderEvent]:
    """The events of `orders` orders, in publish order (see the module docstring)."""
    if orders < 0:
        raise ValueError(f"orders must be >= 0, got {orders}")
    if not 0.0 <= bad_share < 1.0:
        raise ValueError(f"bad_share must be in [0, 1), got {bad_share}")
    rng = random.Random(f"{seed}:{first_order}")
    regions = list(REGIONS)
    # (publish_time_ms, tiebreak, event) waiting to be published
    pending: list[tuple[int, int, OrderEvent]] = []
    tiebreak = 0
    clock = start_ms

    def push(publish_ms: int, ev: OrderEvent) -> None:
        nonlocal tiebreak
        tiebreak += 1
        heapq.heappush(pending, (publish_ms, tiebreak, ev))

    for n in range(first_order, first_order + orders):
        clock += 1 + int(rng.expovariate(1.0 / MEAN_GAP_MS))
        while pending and pending[0][0] <= clock:
            yield heapq.heappop(pending)[2]
        oid = order_id(n)
        region = regions[rng.randrange(len(regions))]
        currency = REGIONS[region]
        customer = f"cus-{rng.randrange(1, 20_000):05d}"
        items: list[dict[str, object]] = []
        amount_cents = 0
        for _ in range(1 + min(4, int(rng.expovariate(1.0)))):
            sku, price = CATALOG[rng.randrange(len(CATALOG))]
            qty = 1 + int(rng.expovariate(1.5))
            local_price = round(price * FX_FROM_EUR[currency], 2)
            items.append({"sku": sku, "qty": qty, "unit_price": local_price})
            amount_cents += round(local_price * 100) * qty
        times = {"created": clock}
        if rng.random() < PAID_SHARE:
            times["paid"] = clock + rng.randrange(30_000, 600_000)
            if rng.random() < SHIPPED_SHARE:
                times["shipped"] = times["paid"] + rng.randrange(60_000, 3_600_000)
        for event, event_ms in times.items():
            body: dict[str, object] = {
                "order_id": oid,
                "event": event,
                "customer_id": customer,
                "region": region,
                "currency": currency,
                "amount": amount_cents / 100,
                "event_time": iso_ms(event_ms),
            }
            if event == "created":
                body["items"] = items
            if bad_share and rng.random() < bad_share:
                kind = BAD_KINDS[rng.randrange(len(BAD_KINDS))]
                data, reason, subject = _spoil(event, body, kind)
            else:
                data, reason, subject = _dumps(body), None, f"{SUBJECT_PREFIX}.{event}"
            msg_id = f"{oid}.{event}"
            ev = OrderEvent(
                subject=subject,
                data=data,
                headers={"Nats-Msg-Id": msg_id, "Content-Type": "application/json", "Order-Id": oid},
                msg_id=msg_id,
                order_id=oid,
                event=event,
                region=region,
                event_time_ms=event_ms,
                amount_cents=amount_cents,
                currency=currency,
                reason=reason,
            )
            # Published a little after it happened (never more than MAX_LATENESS_MS).
            push(event_ms + rng.randrange(0, MAX_LATENESS_MS), ev)
    while pending:
        yield heapq.heappop(pending)[2]


def _dumps(body: dict[str, object]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _spoil(event: str, body: dict[str, object], kind: str) -> tuple[bytes, str, str]:
    """(payload, reason, subject) of an event spoiled in the way `kind` names."""
    reason = BAD_REASONS[kind]
    subject = f"{SUBJECT_PREFIX}.{event}"
    if kind == "not_json":
        full = _dumps(body)
        return full[: len(full) // 2], reason, subject
    body = dict(body)
    if kind == "missing_field":
        del body["customer_id"]
    elif kind == "negative_amount":
        body["amount"] = -abs(float(body["amount"]))  # type: ignore[arg-type]
    elif kind == "unknown_region":
        body["region"] = "mars-north"
    elif kind == "bad_timestamp":
        body["event_time"] = "yesterday at noon"
    elif kind == "subject_mismatch":
        subject = f"{SUBJECT_PREFIX}.{EVENTS[(EVENTS.index(event) + 1) % len(EVENTS)]}"
    return _dumps(body), reason, subject
