"""Exactly-once through crashes after a shuffle: the `shuffle` variant of the crash
pipeline (tests/support/crash_pipeline.py) drops the source coordinates, hash-repartitions
and emits rows in a random order, so only content ids can repeat on a replay; it is
SIGKILLed while a task is publishing (the output count grew during the last poll), never
between partitions, and restarted on the same checkpoint; the output stream ends with
each input exactly once. Its own file so that the test runner can run it beside the
narrow variant's (test_exactly_once_crash.py). The seed of the kill points is printed;
set CRASH_SEED to replay one."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest
from child_process import kill_group
from crash_helpers import out_count, seed, start_child
from sink_helpers import connect, create_stream, publish_acked, read_all

from jetstream_testing.process import ServerProcess

pytestmark = [pytest.mark.spark, pytest.mark.crash]


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
