"""Exactly-once through crashes: a jetstream -> transform -> jetstream query, run in a
child process that is SIGKILLed (with its JVM and Python workers) at random points and
restarted on the same checkpoint; the output stream ends with each input exactly once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sink_helpers import create_stream, publish_acked, read_stream, stream_info

from jetstream_testing.process import ServerProcess

pytestmark = pytest.mark.spark

N = 2000
KILLS = 3
PIPELINE = Path(__file__).resolve().parents[2] / "support" / "crash_pipeline.py"


def out_count(url: str) -> int:
    return int(stream_info(url, "OUT")["state"]["messages"])


def start_child(url: str, checkpoint: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as sink:
        return subprocess.Popen(
            [sys.executable, str(PIPELINE), url, str(checkpoint), "IN", "out.copy"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the JVM and workers die with it
        )


def kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait(30)


@pytest.mark.timeout(900)  # four Spark JVM start-ups: slow on a loaded 2-core machine
def test_sigkill_at_random_points_then_restart_gives_each_input_once(
    server: ServerProcess, tmp_path: Path
) -> None:
    rng = random.Random(int(os.environ.get("CRASH_SEED", "0")) or None)
    create_stream(server.url, "IN", ["in.>"])
    create_stream(server.url, "OUT", ["out.>"], duplicate_window=600 * 10**9)
    publish_acked(server.url, [(f"in.{i % 7}", f"msg-{i}".encode()) for i in range(N)])
    assert int(stream_info(server.url, "IN")["state"]["messages"]) == N
    checkpoint = tmp_path / "checkpoint"
    log = tmp_path / "child.log"

    # kill points: output counts spread over the run, increasing
    thresholds = sorted(rng.sample(range(50, N - 200), KILLS))
    kills = 0
    for threshold in thresholds:
        child = start_child(server.url, checkpoint, log)
        deadline = time.monotonic() + 240
        try:
            while out_count(server.url) < threshold and child.poll() is None:
                assert time.monotonic() < deadline, f"no progress to {threshold}:\n{log.read_text()[-3000:]}"
                time.sleep(0.05)  # bounded poll of an external process's progress
            time.sleep(rng.uniform(0, 0.3))  # land anywhere in the batch that follows
        finally:
            if child.poll() is None:
                kill_group(child)
                kills += 1
    assert kills >= 1, "the query finished before any kill point"

    child = start_child(server.url, checkpoint, log)
    try:
        assert child.wait(300) == 0, log.read_text()[-3000:]
    finally:
        if child.poll() is None:
            kill_group(child)

    msgs = read_stream(server.url, "OUT")
    ids = [m.msg_id for m in msgs]
    assert len(ids) == len(set(ids)), "duplicate message ids in the output"
    assert sorted(ids) == sorted(f"IN:{seq}:0" for seq in range(1, N + 1))
    assert sorted(m.data for m in msgs) == sorted(f"done:MSG-{i}".encode() for i in range(N))
    assert len(msgs) == N
