"""The main job end to end: `main([...])` with a small sample on the bundled server, on local Spark."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

import nats
import pytest

from jetstream_testing.process import start_server
from jobs.orders_pipeline import main

pytestmark = pytest.mark.spark


def figure(text: str, name: str) -> str:
    for line in text.splitlines():
        if line.startswith(name):
            return line[len(name):].strip()
    raise AssertionError(f"no summary line {name!r} in:\n{text}")


async def publish_stray(url: str) -> None:
    nc = await nats.connect(url)
    try:
        await nc.jetstream().publish("clean.orders.created", b"{}", headers={"Nats-Msg-Id": "stray"})
    finally:
        await nc.close()


def test_pipeline_runs_checks_itself_and_a_second_run_adds_nothing(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    srv = start_server("bundled", tmp_path / "store")
    try:
        argv = ["--servers", srv.url, "--orders", "300", "--batch-size", "500", "--data-dir", str(tmp_path)]
        assert main(argv) == 0
        first = capsys.readouterr().out
        assert "all checks passed" in first
        read = int(figure(first, "input read by the pipeline").replace(",", ""))
        valid = int(figure(first, "valid (clean copy)").replace(",", ""))
        dead = int(figure(first, "dead-letter").replace(",", ""))
        assert read > 600 and valid + dead == read and dead > 0
        assert int(figure(first, "windows written").replace(",", "")) > 0
        assert "[routed] batch 1:" in first  # progress lines, more than one micro-batch
        # batch 0 records where the query starts; batch 1 reads 500 and shows the rest as lag
        assert re.search(r"\[routed\] batch 1: 500 msgs .*lag ORDERS [1-9][0-9,]*", first), first
        assert figure(first, "duplicates rejected by the server") == "0"
        # the profile: phases, each query's events/s per micro-batch and trigger time, CPU by role
        assert re.search(r"^routed: events/s per micro-batch +median [0-9,]+, best [0-9,]+ \(2 batches\)$", first, re.M)
        assert re.search(r"^revenue: trigger time \(s\) +[0-9.]+ = offsets [0-9.]+, planning", first, re.M)
        assert re.search(r"^time: both queries \(Trigger.AvailableNow\) +[0-9.]+s \([0-9.]+-[0-9.]+\)$", first, re.M)
        assert re.search(r"^CPU s: both queries +[0-9.]+ = Spark JVM [0-9.]+.*us/event$", first, re.M)

        # Same sample again: every input message is a duplicate, the checkpoint has nothing new.
        assert main(argv) == 0
        second = capsys.readouterr().out
        assert figure(second, "input published (stored)") == "0"
        assert figure(second, "input read by the pipeline") == "0"
        assert figure(second, "duplicates rejected by the server") == f"{read:,}"
        assert figure(second, "stream ORDERS_CLEAN messages") == f"{valid:,}"

        # A message that the pipeline did not write makes the counts disagree: exit 1.
        asyncio.run(publish_stray(srv.url))
        assert main(argv) == 1
        third = capsys.readouterr().out
        assert "[FAILED] every input message routed exactly once" in third
        assert "SOME CHECKS FAILED" in third
    finally:
        srv.stop()


def test_continuous_on_the_default_embedded_server_stops_cleanly_and_adds_up(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["--orders", "100", "--data-dir", str(tmp_path), "--continuous", "--duration", "4", "--rate", "50",
            "--trigger", "1 second"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "bundled JetStream server at nats://127.0.0.1:" in out
    assert re.search(r"dashboard: http://127\.0\.0\.1:\d+/dashboard/", out), out
    assert "running continuously" in out
    sent = int(figure(out, "live publisher sent").split()[0].replace(",", ""))
    assert sent > 0  # the live publisher added orders beyond the sample
    stored = int(figure(out, "stream ORDERS messages").replace(",", ""))
    assert stored > 260  # sample (~260 events) + live events
    assert "[ok] windows match the generator" in out  # live events included in the expectation
    assert "all checks passed" in out
    assert any((tmp_path / "server").iterdir())
    assert (tmp_path / "checkpoints" / "embedded" / "routed" / "commits").is_dir()


def test_bad_arguments_exit_with_usage(capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exc:
        main(["--orders", "-5"])
    assert exc.value.code == 2
    assert "--orders must be >= 0" in capsys.readouterr().err


class FakeQuery:
    """A stand-in for a StreamingQuery whose run ends with `error` (None: ends well)."""

    def __init__(self, name: str, error: Exception | None = None) -> None:
        self.name, self.error = name, error

    def awaitTermination(self) -> None:  # noqa: N802 (Spark's name)
        if self.error is not None:
            raise self.error


def test_a_query_stopped_by_a_slow_python_worker_resumes_from_its_checkpoint() -> None:
    from jobs.orders_pipeline import WORKER_TIMEOUT, await_restarting

    restarts: list[str] = []

    def restart(spark, cfg):  # type: ignore[no-untyped-def]
        restarts.append("revenue")
        return FakeQuery("revenue")

    running = {"routed": FakeQuery("routed"), "revenue": FakeQuery("revenue", RuntimeError(f"x: {WORKER_TIMEOUT}."))}
    out = io.StringIO()
    ran = await_restarting(running, {"revenue": restart}, None, None, out)  # type: ignore[arg-type]
    assert [q.name for q in ran] == ["routed", "revenue", "revenue"] and restarts == ["revenue"]
    assert "[revenue] stopped: Python worker failed to connect back" in out.getvalue()


def test_other_failures_and_repeated_timeouts_are_not_hidden() -> None:
    from jobs.orders_pipeline import RESTARTS, WORKER_TIMEOUT, await_restarting

    with pytest.raises(RuntimeError, match="disk full"):
        await_restarting({"routed": FakeQuery("routed", RuntimeError("disk full"))}, {}, None, None, io.StringIO())  # type: ignore[arg-type]
    timeout = RuntimeError(WORKER_TIMEOUT)
    starts: list[int] = []

    def again(spark, cfg):  # type: ignore[no-untyped-def]
        starts.append(1)
        return FakeQuery("routed", timeout)

    with pytest.raises(RuntimeError, match=WORKER_TIMEOUT):
        await_restarting({"routed": FakeQuery("routed", timeout)}, {"routed": again}, None, None, io.StringIO())  # type: ignore[arg-type]
    assert len(starts) == RESTARTS
