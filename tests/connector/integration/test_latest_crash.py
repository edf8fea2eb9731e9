"""`startingOffsets=latest` under a live publisher, the query SIGKILLed and restarted.

The SIGKILL variant of test_latest_start.py: the query runs in a child process
(tests/support/latest_pipeline.py) that is killed with its JVM and Python
workers while it reads, then restarted on its checkpoint with
Trigger.AvailableNow while the publisher (bursts of ten, about 1,000 messages a
second: the in-process test covers 10,000) goes on. The oracle is the last
sequence in the first `STREAM.INFO` reply the query got (relayed by an
`ApiProxy`): the messages read are exactly those after it, without a gap, up to
at least the stream's end at the kill (before Spark 4.2 after a second
AvailableNow run: the first one finishes the killed batch only). Both servers; the seed (kill timing,
publisher rhythm) is printed.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from api_proxy import ApiProxy
from child_process import kill_group, start_spark_child
from read_helpers import BurstPublisher

from jetstream_testing.process import ServerProcess
from spark_jetstream.client import LeanConnection
from spark_jetstream.options import ConnectionOptions
from spark_jetstream.spark_features import detect

pytestmark = [pytest.mark.spark, pytest.mark.crash, pytest.mark.spark_matrix]

PIPELINE = Path(__file__).resolve().parents[2] / "support" / "latest_pipeline.py"


def start_child(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    return start_spark_child([sys.executable, str(PIPELINE), *args], log)



def batches(out: Path) -> dict[int, list[int]]:
    return {int(p.stem.split("-")[1]): [int(x) for x in p.read_text().split()] for p in out.glob("batch-*.txt")}


def wait_for_rows(out: Path, more_than: int, child: subprocess.Popen[bytes], log: Path) -> None:
    """Bounded poll of an external process's progress."""
    deadline = time.monotonic() + 240
    while sum(len(s) for s in batches(out).values()) <= more_than:
        assert child.poll() is None, f"the query ended:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no progress:\n{log.read_text()[-3000:]}"
        time.sleep(0.1)


@pytest.mark.timeout(600)  # two Spark JVM start-ups on a loaded 2-core machine
def test_latest_with_a_sigkill_loses_and_repeats_nothing(server: ServerProcess, tmp_path: Path) -> None:
    seed = int(os.environ.get("CRASH_SEED", "0")) or random.randrange(1, 10**6)
    print(f"seed {seed}")
    rng = random.Random(seed)
    stream = "K" + uuid.uuid4().hex[:8]
    with LeanConnection.connect(ConnectionOptions(servers=(server.url,))) as conn:
        conn.js_api(f"STREAM.CREATE.{stream}", {"name": stream, "subjects": [f"{stream}.>"]})
    out, log = tmp_path / "out", tmp_path / "child.log"
    out.mkdir()
    prefix = "$PXK.API"
    args = [server.url, str(tmp_path / "checkpoint"), stream, prefix, str(out)]
    publisher = BurstPublisher(server.url, f"{stream}.x", seed, pause_s=0.01)
    with ApiProxy(server.url, prefix, relay=("STREAM.INFO",)) as proxy:
        publisher.start()
        try:
            child = start_child([*args, "processing"], log)
            try:
                wait_for_rows(out, 0, child, log)
                time.sleep(rng.uniform(0, 0.5))  # land anywhere in a batch
            finally:
                kill_group(child)
            with LeanConnection.connect(ConnectionOptions(servers=(server.url,))) as conn:
                at_kill = int(conn.js_api(f"STREAM.INFO.{stream}")["state"]["last_seq"])
            # Before Spark 4.2, Spark runs AvailableNow as a single micro-batch for a Python
            # source (Trigger.Once): a checkpoint with an unfinished batch gets that batch only,
            # and the next run reads the rest (docs/spark-versions.md)
            for _ in range(1 if detect().read_limits else 2):
                child = start_child([*args, "available-now"], log)  # the publisher goes on
                try:
                    assert child.wait(300) == 0, log.read_text()[-3000:]
                finally:
                    kill_group(child)
        finally:
            publisher.stop()
    assert proxy.error is None
    resolved = next(int(r["state"]["last_seq"]) for s, r in proxy.replies if f".STREAM.INFO.{stream}" in s)
    seqs = sorted(s for batch in batches(out).values() for s in batch)
    print(f"seed {seed}: first resolution {resolved}, killed at {at_kill}, read {len(seqs)} messages")
    assert len(seqs) == len(set(seqs)), "a message was read twice"
    assert seqs and seqs[-1] >= at_kill, f"the restarted query stopped at {seqs[-1] if seqs else None}"
    missing = sorted(set(range(resolved + 1, seqs[-1] + 1)) - set(seqs))
    assert not missing, f"{len(missing)} messages after the first resolution never read: {missing[:20]}"
    assert seqs == list(range(resolved + 1, seqs[-1] + 1))  # and nothing before it
