"""What a correct pipeline must produce from a known set of generator events.

Used by the job's self-check and by tests: the clean / dead-letter split
(with each reason), and the windowed aggregate per (window start, region)
computed in plain Python with the same arithmetic as `transforms` (amount in
EUR = amount / FX rate as a double, rounded half-up to cents; revenue = sum of
paid amounts in EUR).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

from jobs.orders.generator import FX_FROM_EUR, OrderEvent

CENT = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class WindowFigures:
    created: int = 0
    paid: int = 0
    shipped: int = 0
    revenue_eur: Decimal = Decimal("0.00")

    def __add__(self, other: WindowFigures) -> WindowFigures:
        return WindowFigures(
            self.created + other.created,
            self.paid + other.paid,
            self.shipped + other.shipped,
            self.revenue_eur + other.revenue_eur,
        )

    def add(self, event: str, amount_eur: Decimal) -> WindowFigures:
        return WindowFigures(
            created=self.created + (event == "created"),
            paid=self.paid + (event == "paid"),
            shipped=self.shipped + (event == "shipped"),
            revenue_eur=self.revenue_eur + (amount_eur if event == "paid" else Decimal("0.00")),
        )


@dataclass(slots=True)
class Expected:
    window_ms: int
    total: int = 0
    valid: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    windows: dict[tuple[int, str], WindowFigures] = field(default_factory=dict)
    max_event_time_ms: int = 0

    @property
    def dead_letters(self) -> int:
        return sum(self.reasons.values())

    def add(self, e: OrderEvent) -> None:
        self.total += 1
        if not e.valid:
            self.reasons[e.reason or ""] += 1
            return
        self.valid += 1
        self.max_event_time_ms = max(self.max_event_time_ms, e.event_time_ms)
        key = (e.event_time_ms - e.event_time_ms % self.window_ms, e.region)
        self.windows[key] = self.windows.get(key, WindowFigures()).add(
            e.event, amount_eur(e.amount_cents, e.currency)
        )

    def merge(self, other: Expected) -> None:
        """Add what `other` expects (events of another publisher, same window size)."""
        assert other.window_ms == self.window_ms, "windows of different sizes do not add up"
        self.total += other.total
        self.valid += other.valid
        self.reasons.update(other.reasons)
        for key, figures in other.windows.items():
            self.windows[key] = self.windows.get(key, WindowFigures()) + figures
        self.max_event_time_ms = max(self.max_event_time_ms, other.max_event_time_ms)

    def closed_windows(self, watermark_ms: int) -> dict[tuple[int, str], WindowFigures]:
        """The windows an append-mode aggregate has emitted once the watermark is `watermark_ms`."""
        return {k: v for k, v in self.windows.items() if k[0] + self.window_ms <= watermark_ms}


def amount_eur(amount_cents: int, currency: str) -> Decimal:
    value = (amount_cents / 100) / FX_FROM_EUR[currency]
    return Decimal(repr(value)).quantize(CENT, rounding=ROUND_HALF_UP)


def expected_from(events: Iterable[OrderEvent], window_ms: int) -> Expected:
    out = Expected(window_ms=window_ms)
    for e in events:
        out.add(e)
    return out


def counted(events: Iterable[OrderEvent], expected: Expected) -> Iterator[OrderEvent]:
    """`events`, each added to `expected` as it is handed out."""
    for e in events:
        expected.add(e)
        yield e
