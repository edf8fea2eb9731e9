"""Exactly-once through crashes: a jetstream -> transform -> jetstream query, run in a
child process that is SIGKILLed (with its JVM and Python workers) at random points and
restarted on the same checkpoint; the output stream ends with each input exactly once.

Two variants (tests/support/crash_pipeline.py): `narrow` keeps the source coordinates
(source ids); `shuffle` drops them, hash-repartitions and emits rows in a random order,
so only content ids can repeat on a replay, and is killed while a task is publishing
(the output count grew during the last poll), never between partitions. The seed of
the kill points is printed; set CRASH_SEED to replay one."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from child_process import kill_group
from child_process import start_child as start_child_process
from sink_helpers import connect, create_stream, publish_acked, read_all, read_stream, stream_info

from jetstream_testing.process import ServerProcess

pytestmark = [pytest.mark.spark, pytest.mark.crash]

N = 2000
KILLS = 2
PIPELINE = Path(__file__).resolve().parents[2] / "support" / "crash_pipeline.py"


def out_count(url: str) -> int:
    return int(stream_info(url, "OUT")["state"]["messages"])


def seed() -> int:
    value = int(os.environ.get("CRASH_SEED", "0")) or random.randrange(1, 2**31)
    print(f"CRASH_SEED={value}")
    return value


def prepare_streams(url: str, n: int) -> None:
    """Stream IN with `n` messages `msg-<i>` on subjects `in.<i % 7>`; stream OUT (a 10-minute
    duplicate window) for the pipeline's output on `out.>`."""
    create_stream(url, "IN", ["in.>"])
    create_stream(url, "OUT", ["out.>"], duplicate_window=600 * 10**9)
    publish_acked(url, [(f"in.{i % 7}", f"msg-{i}".encode()) for i in range(n)])
    assert int(stream_info(url, "IN")["state"]["messages"]) == n


def start_child(
    url: str, checkpoint: Path, log: Path, variant: str = "narrow", *settings: str
) -> subprocess.Popen[bytes]:
    argv = [sys.executable, str(PIPELINE), variant, url, str(checkpoint), "IN", "out.copy"]
    return start_child_process([*argv, *settings], log)



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


# the defect's reproduction used 200k messages in 100k batches; the kill lands inside a
# partition's publishing at any size, so the suite runs a fifth of it
SHUFFLE_N = int(os.environ.get("CRASH_SHUFFLE_N", "40000"))
PER_BATCH = SHUFFLE_N // 2


def kill_points(rng: random.Random) -> list[int]:
    """One output count per micro-batch, inside the publishing of the first two or of the last
    two of its four partitions (two tasks run at once on two cores), away from their ends."""
    points = []
    for batch in range(SHUFFLE_N // PER_BATCH):
        half = rng.choice((0, 1))
        lo = batch * PER_BATCH + half * PER_BATCH // 2
        points.append(rng.randrange(lo + PER_BATCH // 20, lo + PER_BATCH // 2 - PER_BATCH // 20))
    return points


@pytest.mark.timeout(1200)  # three Spark start-ups and 200k messages on a loaded 2-core machine
def test_sigkill_while_publishing_after_a_shuffle_gives_each_input_once(
    server: ServerProcess, tmp_path: Path
) -> None:
    rng = random.Random(seed())
    create_stream(server.url, "IN", ["in.>"])
    create_stream(server.url, "OUT", ["out.>"], duplicate_window=600 * 10**9)
    inputs = [f"msg-{i}-{rng.randrange(10**6)}" for i in range(SHUFFLE_N)]
    inputs[1::1000] = inputs[0::1000][: len(inputs[1::1000])]  # some identical rows: all kept
    publish_acked(server.url, [(f"in.{i % 7}", v.encode()) for i, v in enumerate(inputs)])
    checkpoint = tmp_path / "checkpoint"
    log = tmp_path / "child.log"

    for threshold in kill_points(rng):
        child = start_child(server.url, checkpoint, log, "shuffle", f"max={PER_BATCH}")
        deadline = time.monotonic() + 480
        try:
            with connect(server.url) as conn:  # one connection: a poll costs one round trip

                def stored() -> int:
                    return int(conn.js_api("STREAM.INFO.OUT")["state"]["messages"])

                before = now = stored()
                while now < threshold:
                    assert child.poll() is None, f"the query ended before {threshold}:\n{log.read_text()[-3000:]}"
                    assert time.monotonic() < deadline, f"no progress to {threshold}:\n{log.read_text()[-3000:]}"
                    time.sleep(0.02)  # bounded poll of an external process's progress
                    before, now = now, stored()
        finally:
            kill_group(child)
        after = out_count(server.url)
        print(f"killed at {now} messages (threshold {threshold}), {after} stored after the kill")
        assert now > before, "the kill did not land while a task was publishing"

    child = start_child(server.url, checkpoint, log, "shuffle", f"max={PER_BATCH}")
    try:
        assert child.wait(600) == 0, log.read_text()[-3000:]
    finally:
        if child.poll() is None:
            kill_group(child)

    msgs = read_all(server.url, "OUT")
    ids = [m.msg_id for m in msgs]
    assert len(ids) == len(set(ids)), "duplicate message ids in the output"
    got = sorted(m.data for m in msgs)
    want = sorted(f"done:{v.upper()}".encode() for v in inputs)
    assert got == want, f"{len(got)} messages for {len(want)} inputs"
