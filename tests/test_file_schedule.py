"""The order `make test` hands test files to its workers (tests/support/file_schedule.py): the
slowest files first, each file's tests together and in their order, the same order on every
worker; the pytest config keeps pytest-xdist from reordering it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from file_schedule import RECORDED_SECONDS, order_by_cost, seconds_by_file

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class FakeItem:
    nodeid: str
    markers: list[str] = field(default_factory=list)

    def iter_markers(self) -> list[pytest.Mark]:
        return [getattr(pytest.mark, name).mark for name in self.markers]


def ids(items: list[FakeItem]) -> list[str]:
    return [item.nodeid for item in items]


def test_files_go_slowest_first_with_their_tests_together_and_in_order() -> None:
    recorded = max(RECORDED_SECONDS, key=RECORDED_SECONDS.__getitem__)
    items = [
        FakeItem("tests/a/test_many.py::t1"),
        FakeItem("tests/a/test_crash.py::t1", ["crash"]),
        FakeItem("tests/a/test_many.py::t2"),
        FakeItem(f"{recorded}::t1"),
        FakeItem("tests/a/test_crash.py::t2", ["crash", "spark"]),
        FakeItem("tests/a/test_many.py::t3"),
        FakeItem("tests/a/test_spark.py::t1", ["spark"]),
    ]
    assert ids(order_by_cost(items)) == [  # type: ignore[arg-type]
        f"{recorded}::t1",  # its record: more than two crash tests
        "tests/a/test_crash.py::t1", "tests/a/test_crash.py::t2",  # 2 x 10 s (the largest marker)
        "tests/a/test_spark.py::t1",  # 2 s
        "tests/a/test_many.py::t1", "tests/a/test_many.py::t2", "tests/a/test_many.py::t3",  # 3 x 0.2 s
    ]


def test_equal_costs_keep_the_collection_order() -> None:
    items = [FakeItem(f"tests/b/test_{name}.py::t") for name in "zyx"]
    assert ids(order_by_cost(items)) == ids(items)  # type: ignore[arg-type]


def test_the_record_is_refreshed_from_a_durations_report() -> None:
    report = """
============================= slowest durations ==============================
70.06s call     tests/server/integration/test_faults.py::test_kill_9_under_load[bundled]
9.99s setup    tests/browser/test_dashboard_browser.py::test_bundled_servers_page
8.70s call     tests/server/integration/test_faults.py::test_kill_9_under_load[nats-server]
0.01s teardown tests/browser/test_dashboard_browser.py::test_bundled_servers_page
2456 passed, 2 skipped in 436.59s (0:07:16)
"""
    assert seconds_by_file(report.splitlines()) == pytest.approx({
        "tests/server/integration/test_faults.py": 78.76,
        "tests/browser/test_dashboard_browser.py": 10.0,
    })


def test_the_recorded_files_exist_and_xdist_keeps_the_order(pytestconfig: pytest.Config) -> None:
    assert [f for f in RECORDED_SECONDS if not (ROOT / f).is_file()] == []
    assert pytestconfig.getoption("loadscopereorder") is False  # addopts in pyproject.toml
