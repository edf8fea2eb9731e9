"""Benchmark figures and the table that shows them.

A `Figure` is one measured value of one workload on one server (or one
side of a comparison); a `Comparison` pairs two figures of the same run and
holds the target ratio the issue asks for (a floor, or a ceiling when lower is
better, as for CPU per message). The table is plain text, stable
in layout so that docs/performance.md can keep a copy of a full run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Comparison:
    """`subject` measured beside `baseline`; `ratio = subject / baseline`."""

    group: str
    workload: str
    unit: str
    subject_label: str
    subject: float
    baseline_label: str
    baseline: float
    target: float | None = None  # acceptable ratio, when the issue sets one
    lower_is_better: bool = False  # then `target` is the highest acceptable ratio

    @property
    def ratio(self) -> float:
        return self.subject / self.baseline if self.baseline > 0 else float("inf")

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        return self.ratio <= self.target if self.lower_is_better else self.ratio >= self.target

    @property
    def bound(self) -> str:
        """The target as text: `>= 0.8` or `<= 1`."""
        return f"{'<=' if self.lower_is_better else '>='} {self.target:g}" if self.target is not None else ""


@dataclass(frozen=True, slots=True)
class Measure:
    """A single figure with no counterpart (restart time, memory)."""

    group: str
    workload: str
    unit: str
    label: str
    value: float


def _fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:,.1f}"
    return f"{value:,.2f}"


def render_comparisons(rows: Sequence[Comparison]) -> str:
    header = ("group", "workload", "unit", "subject", "value", "baseline", "value", "ratio", "target")
    table = [header]
    for r in rows:
        verdict = ""
        if r.target is not None:
            verdict = f"{r.bound} {'ok' if r.met else 'MISSED'}"
        table.append(
            (
                r.group,
                r.workload,
                r.unit,
                r.subject_label,
                _fmt(r.subject),
                r.baseline_label,
                _fmt(r.baseline),
                f"{r.ratio:.2f}x",
                verdict,
            )
        )
    return _grid(table)


def render_measures(rows: Sequence[Measure]) -> str:
    table = [("group", "workload", "server", "value", "unit")]
    for m in rows:
        table.append((m.group, m.workload, m.label, _fmt(m.value), m.unit))
    return _grid(table)


def _grid(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    numeric = {i for i in range(len(widths)) if all(_looks_numeric(row[i]) for row in rows[1:])}
    lines = []
    for n, row in enumerate(rows):
        cells = [
            cell.rjust(widths[i]) if i in numeric and n > 0 else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        lines.append("| " + " | ".join(cells) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _looks_numeric(cell: str) -> bool:
    text = cell.replace(",", "").rstrip("x")
    try:
        float(text)
    except ValueError:
        return False
    return True
