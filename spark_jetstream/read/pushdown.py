"""Filter pushdown for batch reads (Spark 4.1+, on when `spark.sql.python.filterPushdown.enabled`).

Spark hands the batch reader the filters of the query (`DataSourceReader.
pushFilters`); the ones this module can turn into what the server reads
narrow the read, so that a selective query reads only what it asks for:
- `seq` compared with a number (`=`, `<`, `<=`, `>`, `>=`, `IN`): the range of
  sequences read (`IN` reads from its smallest to its largest value, and stays
  with Spark);
- `timestamp` compared with a time (`<`, `<=`, `>`, `>=`, `=`): the range, by
  the first sequence stored at or after the time (resolved on the driver,
  offsets.py); the filter stays with Spark as well (a stored time has
  nanoseconds, the resolution milliseconds), so the range only has to hold
  every matching row, which it does with a millisecond's margin;
- `subject` equal to, `IN` or `LIKE 'prefix.%'` (a prefix ending in a dot): the
  subject filter of the read (only when option `subjects` is not set: the two
  would have to be intersected).
Every other filter, and every filter on another column, is not pushed (Spark
applies it, as always). A pushed `seq` comparison or `subject` filter is
applied exactly by the read (Spark does not apply it again); `timestamp`
filters and `seq IN` narrow the read and are returned to Spark.

`Pushdown` is the result: pure data, applied to each stream's planned range
by the batch reader. Imports nothing of pyspark: filters are recognised by
their class name and fields (`attribute`, `value`), so this module loads on
Spark 4.0, where nothing calls it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from spark_jetstream.options.grammar import OptionError, check_filter_subject

__all__ = ["Pushdown", "push_filters"]

_MS = 1  # the margin, in ms, around a pushed time bound


@dataclass
class Pushdown:
    """What the pushed filters ask for (None: no bound)."""

    after_seq: int | None = None  # read only seq > after_seq
    until_seq: int | None = None  # read only seq <= until_seq
    from_ms: int | None = None  # stored at or after (ms since the epoch)
    before_ms: int | None = None  # stored before
    subjects: tuple[str, ...] | None = None  # the subject filter (None: as the options say)
    empty: bool = False  # a filter no message can pass (e.g. seq IN ())
    pushed: list[str] = field(default_factory=list)  # for the log

    def narrow(self, after: int, until: int) -> None:
        self.after_seq = after if self.after_seq is None else max(self.after_seq, after)
        self.until_seq = until if self.until_seq is None else min(self.until_seq, until)


def _ms(value: Any) -> int | None:
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:  # PySpark's naive datetimes are in the process's local time
        value = value.astimezone(timezone.utc)
    return int(value.timestamp() * 1000)


def _seq_filter(pd: Pushdown, kind: str, value: Any) -> bool:
    if kind == "In":  # narrows to its smallest..largest value; Spark still applies it
        values = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
        if len(values) != len(value):
            return False
        if not values:
            pd.empty = True
        else:
            pd.narrow(min(values) - 1, max(values))
        return False
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    bounds = {
        "EqualTo": (value - 1, value),
        "GreaterThan": (value, None),
        "GreaterThanOrEqual": (value - 1, None),
        "LessThan": (None, value - 1),
        "LessThanOrEqual": (None, value),
    }.get(kind)
    if bounds is None:
        return False
    after, until = bounds
    if after is not None:
        pd.after_seq = after if pd.after_seq is None else max(pd.after_seq, after)
    if until is not None:
        pd.until_seq = until if pd.until_seq is None else min(pd.until_seq, until)
    return True


def _time_filter(pd: Pushdown, kind: str, value: Any) -> None:
    ms = _ms(value)
    if ms is None:
        return
    lo = {"EqualTo": ms, "GreaterThan": ms, "GreaterThanOrEqual": ms}.get(kind)
    hi = {"EqualTo": ms + 1, "LessThan": ms + 1, "LessThanOrEqual": ms + 1}.get(kind)
    if lo is not None:
        lo -= _MS
        pd.from_ms = lo if pd.from_ms is None else max(pd.from_ms, lo)
    if hi is not None:
        hi += _MS
        pd.before_ms = hi if pd.before_ms is None else min(pd.before_ms, hi)


def _subject_filter(pd: Pushdown, kind: str, value: Any) -> bool:
    if kind == "EqualTo" and isinstance(value, str):
        wanted: tuple[str, ...] = (value,)
    elif kind == "In" and all(isinstance(v, str) for v in value):
        wanted = tuple(dict.fromkeys(value))
    elif kind == "StringStartsWith" and isinstance(value, str) and value.endswith(".") and len(value) > 1:
        wanted = (value + ">",)
    else:
        return False
    literal = [s[:-1] if kind == "StringStartsWith" else s for s in wanted]
    if any("*" in s or ">" in s for s in literal) or any(not _is_subject(s) for s in wanted):
        return False  # a stored subject has no wildcards: the comparison is literal
    if pd.subjects is not None:  # two subject filters: intersect exact subjects only
        if any("*" in s or ">" in s for s in (*wanted, *pd.subjects)):
            return False
        wanted = tuple(s for s in wanted if s in pd.subjects)
    pd.subjects = wanted
    if not wanted:
        pd.empty = True
    return True


def _is_subject(subject: str) -> bool:
    try:
        check_filter_subject("subject", subject)
    except OptionError:
        return False
    return True


def push_filters(filters: Iterable[Any], *, subjects_option: bool) -> tuple[Pushdown, list[Any]]:
    """(what the filters push, the filters Spark must still apply)."""
    pd = Pushdown()
    kept: list[Any] = []
    for f in filters:
        kind = type(f).__name__
        column = getattr(f, "attribute", ())
        value = getattr(f, "value", None)
        pushed = False
        if column == ("seq",):
            pushed = _seq_filter(pd, kind, value)
        elif column == ("timestamp",):
            _time_filter(pd, kind, value)  # narrows the range; Spark applies it exactly
        elif column == ("subject",) and not subjects_option:
            pushed = _subject_filter(pd, kind, value)
        if pushed:
            pd.pushed.append(f"{kind}{column}")
        else:
            kept.append(f)
    return pd, kept
