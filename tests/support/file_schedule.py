"""The order in which `make test` hands test files to its two pytest-xdist workers: slowest first.

With `--dist loadfile` each file goes whole to one worker, in the order of the collection
(pytest-xdist's own reordering, most tests first, is switched off in the pytest config with
`--no-loadscope-reorder`: it put the files of two or three slow tests, the crash and cluster
tests, at the very end, where one of them alone kept a worker busy for minutes while the other
had nothing left). Longest first: the last files handed out are short ones, so both workers end
at about the same time.

`order_by_cost(items)` sorts the collected items by the expected seconds of their file, most
first; the items of a file keep their order, and equal costs keep the collection's order (every
worker computes the same order: xdist requires identical collections). The seconds come from
`RECORDED_SECONDS` (setup, call and teardown of every test of the file, from a whole-suite run's
`--durations=0`), else from the file's markers (`estimate`). Refresh the record after a run of
`make test PYTEST_WORKERS="-n 2 --dist loadfile --durations=0"` with
`python tests/support/file_schedule.py < its-output`, which prints the new table; only files of
`RECORD_FROM` seconds or more are worth a line.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Protocol

RECORD_FROM = 15.0

# Seconds per file (all phases), slowest first; only their order matters. From one `make test` with
# --durations=0 on the shared 2-core development machine, 2026-11-28 10:15 (pytest 15 min 34 s;
# the crash tests' quicker Spark start-ups, docs/test-suite-time.md).
RECORDED_SECONDS: dict[str, float] = {
    "tests/connector/integration/test_exactly_once_shuffle_crash.py": 118.9,
    "tests/jobs/test_benchmark_clusters.py": 118.7,
    "tests/connector/integration/test_nats_cluster_failover.py": 117.5,
    "tests/connector/integration/test_exactly_once_crash.py": 104.2,
    "tests/connector/integration/test_spark_standalone.py": 101.8,
    "tests/connector/integration/test_consumer_crash.py": 84.9,
    "tests/cli/test_cli_stream.py": 81.8,
    "tests/cli/test_cli_consumer.py": 58.3,
    "tests/connector/integration/test_consumer_read.py": 51.0,
    "tests/connector/integration/test_stream_read.py": 48.7,
    "tests/packaging/test_install.py": 48.1,
    "tests/connector/integration/test_batch_write.py": 46.3,
    "tests/cli/test_cli_messaging.py": 37.3,
    "tests/connector/integration/test_latest_crash.py": 36.2,
    "tests/server/integration/test_faults.py": 35.5,
    "tests/connector/integration/test_stream_write.py": 27.1,
    "tests/jobs/test_orders_pipeline.py": 25.0,
    "tests/cli/test_cli_progress_commands.py": 24.5,
    "tests/connector/integration/test_spark_connect.py": 24.3,
    "tests/connector/integration/test_spark_versions.py": 23.9,
    "tests/server/integration/test_acks.py": 20.5,
    "tests/cli/test_cli_kv.py": 20.3,
    "tests/server/integration/test_mirrors_sources.py": 20.1,
    "tests/connector/integration/test_outage_query.py": 19.0,
    "tests/jobs/test_benchmark_quick.py": 18.1,
    "tests/connector/integration/test_batch_read.py": 17.7,
    "tests/browser/test_dashboard_browser.py": 15.1,
}

# the estimate of a test in a file without a record (a new file; the others took less than
# RECORD_FROM): seconds by marker, the largest that applies (a server's crash test takes seconds, a
# Spark crash test a minute: record it)
BASE_SECONDS = 0.2  # the mean of the unrecorded files
MARKER_SECONDS = {"crash": 10.0, "cluster": 30.0, "packaging": 30.0, "spark": 2.0, "browser": 5.0}


class Item(Protocol):
    """What the schedule needs of a pytest item."""

    nodeid: str

    def iter_markers(self) -> Iterable[object]: ...


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def estimate(items: Sequence[Item]) -> float:
    """Expected seconds of a file's items from their markers (`MARKER_SECONDS`)."""
    total = 0.0
    for item in items:
        names = {getattr(mark, "name", "") for mark in item.iter_markers()}
        total += max([BASE_SECONDS, *(MARKER_SECONDS[n] for n in names if n in MARKER_SECONDS)])
    return total


def order_by_cost(items: list[Item]) -> list[Item]:
    """`items` grouped by file, the files by expected seconds, most first (stable)."""
    by_file: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        by_file[file_of(item.nodeid)].append(item)
    cost = {f: RECORDED_SECONDS.get(f) or estimate(group) for f, group in by_file.items()}
    files = sorted(by_file, key=lambda f: -cost[f])  # sorted() is stable: ties keep their order
    return [item for f in files for item in by_file[f]]


DURATION_LINE = re.compile(r"^\s*([0-9.]+)s\s+(?:setup|call|teardown)\s+(\S+?)::")


def seconds_by_file(lines: Iterable[str]) -> dict[str, float]:
    """Seconds per file from the lines of pytest's `--durations` report."""
    totals: dict[str, float] = defaultdict(float)
    for line in lines:
        match = DURATION_LINE.match(line)
        if match:
            totals[match.group(2)] += float(match.group(1))
    return dict(totals)


def main() -> int:
    totals = seconds_by_file(sys.stdin)
    for name, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
        if seconds >= RECORD_FROM:
            sys.stdout.write(f'    "{name}": {seconds:.1f},\n')
    return 0


if __name__ == "__main__":
    sys.exit(main())
