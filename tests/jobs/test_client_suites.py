"""`python -m jobs.client_suites` (nats.py's suites on both servers; a developer command
that needs a nats.py checkout, so not run whole here): its argument handling, the
shim it puts first on PATH, and how it reads and compares JUnit reports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from jetstream_testing.client_suites import Outcome, compare, make_shim, read_junit

REPORT = """<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="tests.test_js.KVTest" name="test_kv_direct"/>
<testcase classname="tests.test_js.PullSubscribeTest" name="test_fetch"><failure message="x"/></testcase>
<testcase classname="tests.test_js.ClusterInfoTest" name="test_cluster_info"/>
<testcase classname="tests.test_js.JSMTest" name="test_skip"><skipped/></testcase>
</testsuite></testsuites>"""


def test_reports_are_read_without_clustering_and_skips(tmp_path: Path) -> None:
    (tmp_path / "r.xml").write_text(REPORT)
    assert read_junit(tmp_path / "r.xml") == {
        "tests.test_js.KVTest::test_kv_direct": True,
        "tests.test_js.PullSubscribeTest::test_fetch": False,
    }
    real = Outcome("s", "nats-server", {"a": True, "b": True, "c": False})
    ours = Outcome("s", "bundled", {"a": True, "b": False, "c": True})
    assert compare(real, ours) == ["b"]


def test_the_bundled_shim_takes_nats_server_flags(tmp_path: Path) -> None:
    shim = make_shim(tmp_path / "shim", "bundled") / "nats-server"
    out = subprocess.run([str(shim), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "--store_dir" in out.stdout.replace("-sd STORE_DIR", "--store_dir")


def test_the_command_needs_a_checkout() -> None:
    out = subprocess.run([sys.executable, "-m", "jobs.client_suites", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "--natspy" in out.stdout
