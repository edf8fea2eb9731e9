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
# --durations=0 on the shared 2-core development machine, 2026-11-28 (pytest 18 min 54 s).
RECORDED_SECONDS: dict[str, float] = {
    "tests/connector/integration/test_nats_cluster_failover.py": 164.1,
    "tests/connector/integration/test_exactly_once_shuffle_crash.py": 150.3,
    "tests/connector/integration/test_exactly_once_crash.py": 133.8,
    "tests/jobs/test_benchmark_clusters.py": 120.0,
    "tests/connector/integration/test_spark_standalone.py": 116.0,
    "tests/connector/integration/test_consumer_crash.py": 114.9,
    "tests/cli/test_cli_stream.py": 85.2,
    "tests/connector/integration/test_batch_write.py": 76.4,
    "tests/connector/integration/test_latest_crash.py": 68.2,
    "tests/connector/integration/test_consumer_read.py": 67.4,
    "tests/connector/integration/test_stream_read.py": 61.5,
    "tests/cli/test_cli_consumer.py": 59.5,
    "tests/connector/integration/test_batch_read.py": 58.2,
    "tests/connector/integration/test_spark_versions.py": 54.8,
    "tests/packaging/test_install.py": 50.4,
    "tests/connector/integration/test_spark_connect.py": 35.0,
    "tests/connector/integration/test_stream_write.py": 34.8,
    "tests/server/integration/test_faults.py": 34.6,
    "tests/jobs/test_orders_pipeline.py": 34.3,
    "tests/cli/test_cli_messaging.py": 31.3,
    "tests/jobs/test_benchmark_quick.py": 26.1,
    "tests/cli/test_cli_progress_commands.py": 26.0,
    "tests/cli/test_cli_kv.py": 23.3,
    "tests/server/integration/test_mirrors_sources.py": 21.3,
    "tests/connector/integration/test_latest_start.py": 21.2,
    "tests/connector/integration/test_outage_query.py": 20.6,
    "tests/server/integration/test_acks.py": 20.0,
    "tests/connector/integration/test_durable_mirror.py": 19.4,
    "tests/browser/test_dashboard_browser.py": 18.8,
    "tests/connector/integration/test_data_loss.py": 18.4,
    "tests/connector/integration/test_pushdown.py": 15.5,
    "tests/connector/integration/test_read_only.py": 15.5,
    "tests/cli/test_cli_connection.py": 15.4,
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
