"""Exactly-once through a crash when reading through an operator's consumer (option consumer).

The crash pipeline (tests/support/crash_pipeline.py, `consumer=FEED`: content ids, so a message
read into two micro-batches would show twice in the output) runs in a child process, SIGKILLed
with its JVM and Python workers while a micro-batch is being written: after the driver pulled
the batch's messages, before its commit acknowledged them. At the kill point the child is
frozen (SIGSTOP) and the consumer asked: killed there when it holds messages pending, else (a
poll that came late, between a commit's acks and the next pull) let go on to the next batch.
The restarted query replays the logged batch: the server redelivers the pending messages once
their ack wait is over, the batch is rebuilt from exactly those of its range, and the output
holds each input exactly once; the consumer ends acknowledged up to the last message. The seed of the kill point is printed; CRASH_SEED replays one.
"""

from __future__ import annotations

import random
import signal
import sys
import time
from pathlib import Path

import pytest
from child_process import kill_group, run_to_success, signal_group, start_spark_child
from crash_helpers import prepare_streams, seed
from sink_helpers import connect, read_all, stream_info

from jetstream_testing.process import ServerProcess

pytestmark = [pytest.mark.spark, pytest.mark.crash]

N = 600
PIPELINE = Path(__file__).resolve().parents[2] / "support" / "crash_pipeline.py"
ARGV = [sys.executable, str(PIPELINE), "narrow"]


def consumer_info(url: str) -> dict:  # type: ignore[type-arg]
    with connect(url) as conn:
        return conn.js_api("CONSUMER.INFO.IN.FEED")


@pytest.mark.timeout(600)  # two Spark start-ups on a loaded 2-core machine
def test_sigkill_between_pull_and_commit_then_restart_gives_each_input_once(
    server: ServerProcess, tmp_path: Path
) -> None:
    rng = random.Random(seed())
    prepare_streams(server.url, N)
    with connect(server.url) as conn:  # the operator's consumer: a short ack wait keeps the restart quick
        config = {"durable_name": "FEED", "ack_policy": "explicit", "ack_wait": 2 * 10**9}
        conn.js_api("CONSUMER.CREATE.IN.FEED", {"stream_name": "IN", "config": config})
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "child.log"
    argv = [*ARGV, server.url, str(checkpoint), "IN", "out.copy", "consumer=FEED", "max=50"]

    threshold = rng.randrange(60, N - 100)
    child = start_spark_child(argv, log)
    deadline = time.monotonic() + 240
    try:
        while True:
            while (stored := int(stream_info(server.url, "OUT")["state"]["messages"])) < threshold:
                assert child.poll() is None, f"the query ended before {threshold}:\n{log.read_text()[-3000:]}"
                assert time.monotonic() < deadline, f"no progress to {threshold}:\n{log.read_text()[-3000:]}"
                time.sleep(0.02)  # bounded poll of an external process's progress
            # frozen where it is; killed there if a batch is between its pull and its commit, else
            # (between a commit's acks and the next pull: a poll that came late) on in the next batch
            signal_group(child, signal.SIGSTOP)
            held = consumer_info(server.url)
            if held["num_ack_pending"] > 0:
                break
            print(f"stopped at {stored} messages between two batches: the next one")
            signal_group(child, signal.SIGCONT)
            threshold = stored + 1
    finally:
        kill_group(child)
    print(f"killed at {threshold}+ messages; the consumer holds {held['num_ack_pending']} pending")
    assert held["num_ack_pending"] > 0, "the kill did not land between a pull and its commit"

    child = start_spark_child(argv, log)
    run_to_success(child, log, 300)

    msgs = read_all(server.url, "OUT")
    assert sorted(m.data for m in msgs) == sorted(f"done:MSG-{i}".encode() for i in range(N))
    done = consumer_info(server.url)
    assert (done["ack_floor"]["stream_seq"], done["num_ack_pending"], done["num_pending"]) == (N, 0, 0)
