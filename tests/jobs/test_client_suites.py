"""`python -m jobs.client_suites` (nats.py's suites on both servers; a developer command
that needs a nats.py checkout, so not run whole here): its argument handling, the
shim it puts first on PATH, how it reads and compares JUnit reports, and a small
suite of its own shape (a test that starts `nats-server` from PATH, as nats.py's
harnesses do) run through `run_suite` on both servers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from jetstream_testing.client_suites import (
    KINDS,
    Outcome,
    Suite,
    compare,
    make_shim,
    read_junit,
    run_suite,
)

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


SUITE_OF_ITS_SHAPE = """
import subprocess


def test_starts_nats_server_from_path():
    proc = subprocess.Popen(["nats-server", "--port", "-1"], stderr=subprocess.PIPE, text=True)
    try:
        assert any("Server is ready" in line for line in proc.stderr)
    finally:
        proc.terminate()
        proc.wait(30)


def test_that_fails():
    assert False
"""


def test_a_suite_runs_on_both_servers_through_the_shim(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "pkg" / "tests").mkdir(parents=True)
    (checkout / "pkg" / "tests" / "test_shape.py").write_text(SUITE_OF_ITS_SHAPE)
    suite = Suite("pkg", "pkg", "tests", (), False)
    real, ours = (run_suite(Path(sys.executable), checkout, suite, kind, tmp_path / "work", timeout_s=300)
                  for kind in KINDS)
    for outcome in (real, ours):
        assert {test.rpartition("::")[2]: ok for test, ok in outcome.results.items()} == {
            "test_starts_nats_server_from_path": True, "test_that_fails": False}, outcome
    assert compare(real, ours) == []
