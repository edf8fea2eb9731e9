"""Exactly-once through crashes: a jetstream -> transform -> jetstream query, run in a
child process that is SIGKILLed (with its JVM and Python workers) at random points and
restarted on the same checkpoint; the output stream ends with each input exactly once.

This file runs the `narrow` variant (tests/support/crash_pipeline.py), which keeps the
source coordinates (source ids); the `shuffle` variant, content ids after a hash
repartition, is test_exactly_once_shuffle_crash.py. The seed of the kill points is
printed; set CRASH_SEED to replay one."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from child_process import kill_group
from crash_helpers import out_count, prepare_streams, seed, start_child
from sink_helpers import read_stream

from jetstream_testing.process import ServerProcess

pytestmark = [pytest.mark.spark, pytest.mark.crash]

N = 2000
KILLS = 2


@pytest.mark.spark_matrix
@pytest.mark.timeout(900)  # four Spark JVM start-ups: slow on a loaded 2-core machine
def test_sigkill_at_random_points_then_restart_gives_each_input_once(
    server: ServerProcess, tmp_path: Path
) -> None:
    rng = random.Random(seed())
    prepare_streams(server.url, N)
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
    assert sorted(ids) == sorted(f"crash:IN:{seq}:0" for seq in range(1, N + 1))
    assert sorted(m.data for m in msgs) == sorted(f"done:MSG-{i}".encode() for i in range(N))
    assert len(msgs) == N
