"""Output in natscli's two layouts: titled tables and `label: value` columns.

`Table` draws natscli's rounded tables (a title row inside the box, headers, rows) with
prettytable; cells are printed as given, except that columns holding only raw integers are
right-aligned, as go-pretty does for numbers. `Columns` reproduces natscli's `columns`
writer: a heading, sections with titles, and rows whose labels are right-aligned to the
longest label so the colons line up. `cell()` formats a value the way natscli's `f()` does.

Everything here returns strings; the commands decide where they go (stdout).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from prettytable import PrettyTable

from .units import GoTime, comma, human_duration


@dataclass(frozen=True, slots=True)
class Nanos:
    """A duration in nanoseconds, formatted as natscli formats `time.Duration` values."""

    value: int


def cell(value: Any) -> str:
    """natscli's `f()`: booleans `true`/`false`, integers with separators, durations and
    times humanized, lists joined by `, `."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return comma(value)
    if isinstance(value, Nanos):
        return human_duration(value.value)
    if isinstance(value, GoTime):
        return value.local()
    if isinstance(value, (list, tuple)):
        return ", ".join(cell(v) for v in value)
    if value is None:
        return ""
    return str(value)


class Table:
    """A titled table in natscli's rounded style."""

    def __init__(self, title: str, headers: Sequence[str]) -> None:
        self.title = title
        self.headers = list(headers)
        self.rows: list[list[Any]] = []

    def add_row(self, *values: Any) -> None:
        self.rows.append(list(values))

    def render(self) -> str:
        table = PrettyTable()
        table.title = self.title
        table.field_names = self.headers
        rows = [[v if isinstance(v, str) else cell(v) for v in row] for row in self.rows]
        for index, header in enumerate(self.headers):
            # go-pretty right-aligns numbers but keeps the header on the left.
            if self.rows and all(isinstance(r[index], int) and not isinstance(r[index], bool)
                                 for r in self.rows):
                width = max([len(header)] + [len(r[index]) for r in rows])
                for r in rows:
                    r[index] = r[index].rjust(width)
        for row in rows:
            table.add_row(row)
        table.align = "l"
        table.horizontal_char = "─"
        table.vertical_char = "│"
        table.junction_char = "┼"
        table.top_junction_char = "┬"
        table.bottom_junction_char = "┴"
        table.left_junction_char = "├"
        table.right_junction_char = "┤"
        table.top_left_junction_char = "╭"
        table.top_right_junction_char = "╮"
        table.bottom_left_junction_char = "╰"
        table.bottom_right_junction_char = "╯"
        return table.get_string()


_ROW, _TITLE, _LINE, _INDENT = range(4)


class Columns:
    """natscli's `columns.Writer`: heading, section titles and aligned `label: value` rows."""

    def __init__(self, heading: str = "") -> None:
        self.heading = heading
        self._rows: list[tuple[int, tuple[Any, ...]]] = []

    def row(self, label: str, value: Any) -> None:
        self._rows.append((_ROW, (label, cell(value))))

    def row_if(self, label: str, value: Any, condition: bool) -> None:
        if condition:
            self.row(label, value)

    def row_if_not_empty(self, label: str, value: str | None) -> None:
        if value:
            self.row(label, value)

    def title(self, text: str) -> None:
        self._rows.append((_TITLE, (text,)))

    def line(self, *text: str) -> None:
        self._rows.append((_LINE, text))

    def indent(self, width: int) -> None:
        self._rows.append((_INDENT, (" " * width,)))

    def strings(self, label: str, values: Sequence[str]) -> None:
        for i, value in enumerate(sorted(values)):
            self.row(label if i == 0 else "", value)

    def map_strings(self, data: dict[str, str]) -> None:
        for key in sorted(data):
            self.row(key, data[key])

    def render(self) -> str:
        out: list[str] = []
        longest = max((len(v[0]) for k, v in self._rows if k == _ROW), default=0)
        if self.heading:
            out += [self.heading, ""]
        prev, prev_empty, indent = -1, False, ""
        for i, (kind, values) in enumerate(self._rows):
            if kind == _INDENT:
                indent = values[0]
            elif kind == _TITLE:
                if (i != 0 and prev not in (_TITLE, _LINE)) or (prev == _LINE and not prev_empty):
                    out.append("")
                title = values[0] if values[0].endswith(":") else values[0] + ":"
                out += [indent + title, ""]
                prev, prev_empty = kind, False
            elif kind == _ROW:
                label, value = values
                padding = max(longest - len(label) + 2, 0)
                if label == "":
                    out.append(f"{indent}{' ' * (padding + 1)} {value}")
                else:
                    out.append(f"{indent}{' ' * padding}{label}: {value}")
                prev, prev_empty = kind, False
            else:
                if prev == _TITLE and not values:
                    continue
                out.append(" ".join((indent, *values)) if values else indent)
                prev, prev_empty = kind, not values
        return "\n".join(out) + "\n"


def to_json(value: Any) -> str:
    """natscli's `PrintJSON`: two-space indented JSON."""
    return json.dumps(value, indent=2, ensure_ascii=False)
