"""Exactly-once on a real 3-node nats-server cluster through leader kills.

The checkpointed jetstream -> transform -> jetstream query of the crash test
(tests/support/crash_pipeline.py) reads an R3 stream and writes an R3 stream
while, at random points of its progress, the input stream's leader is
SIGKILLed and restarted (twice), the output stream's leader likewise (while
the sink writes), and the Spark driver (with its JVM and workers) once. The
query must ride out the leader kills on its own (retries in
spark_jetstream.client and the publisher); only the Spark kill is restarted
from outside, on the same checkpoint. At the end the output holds every input
exactly once and the durable's ack floor is the last input sequence.

Each seed is printed; `CLUSTER_SEEDS=1,2,3` replays given seeds.
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from child_process import kill_group, start_spark_child

from jetstream_testing.cluster import NatsCluster
from spark_jetstream.client import LeanConnection, NatsError
from spark_jetstream.options import ConnectionOptions

pytestmark = [pytest.mark.crash, pytest.mark.cluster]

# the faults land at output counts in [FAULTS_FROM, FAULTS_TO): 30 micro-batches (of
# MAX_PER_TRIGGER) to spread them over; each leader fault holds the test a few seconds while the
# query goes on. After the last one at least (N - FAULTS_TO) / MAX_PER_TRIGGER = 44 micro-batches
# remain: the query outlasts the faults on a fast, quiet machine too (a longer tail proves
# nothing more, it only takes longer)
N = 2000
MAX_PER_TRIGGER = 25
FAULTS_FROM, FAULTS_TO = 150, 900
PIPELINE = Path(__file__).resolve().parents[2] / "support" / "crash_pipeline.py"


def run_seed() -> int:
    """A new seed each run, the same in every pytest-xdist worker of one run: they must
    collect the same parametrized tests."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        return random.randrange(1, 10**6)
    return int(hashlib.sha256(run.encode()).hexdigest(), 16) % (10**6 - 1) + 1


SEEDS = [int(s) for s in os.environ.get("CLUSTER_SEEDS", "").split(",") if s.strip()] or [run_seed()]
RECOVERY_S = 180  # the query reaches the end on its own within this after the last fault


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsCluster]:
    with NatsCluster(tmp_path_factory.mktemp("nats-cluster")) as nodes:
        yield nodes


@pytest.fixture(autouse=True)
def every_node_running(cluster: NatsCluster) -> None:
    """A test that failed with a node killed must not fail the next one too: every node runs
    and the meta layer has a leader before each test."""
    for name in cluster.names:
        if name not in cluster.running():
            cluster.restart(name)
    cluster.wait_for_meta_leader()


def api(cluster: NatsCluster, subject: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JetStream API call through any running node (retried through elections)."""
    urls = tuple(cluster.nodes[n].url for n in cluster.running())
    with LeanConnection.connect(ConnectionOptions(servers=urls), read_timeout_s=10) as conn:
        return conn.js_api(subject, body)


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            result = check()
            if result:
                return result
        except (NatsError, OSError) as exc:
            last = exc
        time.sleep(0.1)  # bounded poll of an external process
    raise AssertionError(f"{what}: not within {timeout:g}s (last error: {last})")


def leader(cluster: NatsCluster, stream: str) -> str:
    return str(wait_for(f"a leader of {stream}", lambda: api(cluster, f"STREAM.INFO.{stream}")["cluster"].get("leader")))


def messages(cluster: NatsCluster, stream: str) -> int:
    return int(api(cluster, f"STREAM.INFO.{stream}")["state"]["messages"])


def all_current(cluster: NatsCluster, stream: str) -> bool:
    info = api(cluster, f"STREAM.INFO.{stream}")["cluster"]
    replicas = info.get("replicas") or []
    return bool(info.get("leader")) and len(replicas) == 2 and all(r.get("current") for r in replicas)


def start_child(servers: str, checkpoint: Path, log: Path, in_stream: str, out_subject: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, str(PIPELINE), "narrow", servers, str(checkpoint), in_stream, out_subject]
    return start_spark_child([*argv, "durable=spark", f"max={MAX_PER_TRIGGER}"], log)



def read_all(cluster: NatsCluster, stream: str) -> list[tuple[str | None, bytes]]:
    """(Nats-Msg-Id, data) of every message, by direct sequence gets."""
    from sink_helpers import read_stream

    return [(m.msg_id, m.data) for m in read_stream(cluster.urls[0], stream)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_publisher_rides_out_leader_kills_of_its_stream(cluster: NatsCluster, seed: int) -> None:
    """Publishes in small bursts while the stream's leader is killed (twice): a 503 "no
    responders" during the election is retried, not reported as a missing stream."""
    print(f"\npublisher leader-kill seed {seed} (replay: CLUSTER_SEEDS={seed})")
    from spark_jetstream.write.publisher import Publisher

    rng = random.Random(seed)
    stream, subject = f"PUB{seed}", f"pub{seed}.x"
    api(cluster, f"STREAM.CREATE.{stream}", {"name": stream, "subjects": [subject], "num_replicas": 3})
    sent = 0

    def burst(pub: Publisher) -> None:
        nonlocal sent
        n = rng.randint(5, 40)
        ids = range(sent, sent + n)
        pub.publish_many([subject.encode()] * n, [b"NATS/1.0\r\nNats-Msg-Id: m%d\r\n\r\n" % i for i in ids], [b"x"] * n)
        pub.flush()
        sent += n

    for _kill in range(2):
        node = leader(cluster, stream)
        # connected to the followers: their connection stays up, a reconnect explains nothing
        followers = tuple(cluster.nodes[n].url for n in cluster.names if n != node)
        with Publisher(ConnectionOptions(servers=followers), max_in_flight=64) as pub:
            burst(pub)
            cluster.kill(node)
            until = time.monotonic() + rng.uniform(0.5, 2.0)
            while time.monotonic() < until:  # publishing right through the election
                burst(pub)
            assert pub.stats.reconnects == 0
        cluster.restart(node)
        wait_for(f"{stream} replicas current", lambda: all_current(cluster, stream))
    assert messages(cluster, stream) == sent
    ids = [msg_id for msg_id, _ in read_all(cluster, stream)]
    assert sorted(ids) == sorted(f"m{i}" for i in range(sent))  # type: ignore[type-var]


@pytest.mark.spark
@pytest.mark.timeout(900)
@pytest.mark.parametrize("seed", SEEDS)
def test_leader_kills_and_a_spark_kill_give_each_input_once(
    cluster: NatsCluster, tmp_path: Path, seed: int
) -> None:
    print(f"\ncluster failover seed {seed} (replay: CLUSTER_SEEDS={seed})")
    rng = random.Random(seed)
    tag = f"S{seed}"
    in_stream, out_stream = f"IN{tag}", f"OUT{tag}"
    api(cluster, f"STREAM.CREATE.{in_stream}", {"name": in_stream, "subjects": [f"in{tag}.>"], "num_replicas": 3})
    api(
        cluster,
        f"STREAM.CREATE.{out_stream}",
        {"name": out_stream, "subjects": [f"out{tag}.>"], "num_replicas": 3, "duplicate_window": 600 * 10**9},
    )
    from spark_jetstream.write.publisher import Publisher

    with Publisher(ConnectionOptions(servers=tuple(cluster.urls))) as pub:
        pub.publish_many(
            [f"in{tag}.{i % 7}".encode() for i in range(N)],
            [b"NATS/1.0\r\n\r\n"] * N,
            [f"msg-{i}".encode() for i in range(N)],
        )
        assert pub.flush().published == N
    assert messages(cluster, in_stream) == N

    checkpoint, log = tmp_path / "checkpoint", tmp_path / "child.log"
    # the faults, in order of output progress (Spark's restart takes longest: not last); all
    # early (FAULTS_TO), so that the query (small micro-batches) is still running for the last one
    faults = ["in", "spark", "out", "in"]
    thresholds = sorted(rng.sample(range(FAULTS_FROM, FAULTS_TO), len(faults)))
    done: list[str] = []
    child = start_child(cluster.servers, checkpoint, log, in_stream, f"out{tag}.copy")
    try:
        for fault, threshold in zip(faults, thresholds, strict=True):
            deadline = time.monotonic() + 240
            while messages(cluster, out_stream) < threshold and child.poll() is None:
                assert time.monotonic() < deadline, f"no progress to {threshold}:\n{log.read_text()[-4000:]}"
                time.sleep(0.05)  # bounded poll of the child's progress
            if child.poll() is not None:
                break
            time.sleep(rng.uniform(0, 0.3))  # land anywhere in the batch that follows
            if fault == "spark":
                kill_group(child)
                child = start_child(cluster.servers, checkpoint, log, in_stream, f"out{tag}.copy")
            else:
                stream = in_stream if fault == "in" else out_stream
                # every replica current again before the next kill: one node down at a time
                for s in (in_stream, out_stream):
                    wait_for(f"{s} replicas current", lambda s=s: all_current(cluster, s))
                node = leader(cluster, stream)
                cluster.kill(node)
                time.sleep(rng.uniform(0.5, 3.0))  # down long enough for the others to elect
                cluster.restart(node)
            done.append(f"{fault}@{threshold}")
        print(f"faults: {' '.join(done)}")
        if child.poll() is not None and len(done) < len(faults):
            assert child.returncode == 0, f"the query failed after {done}:\n{log.read_text()[-6000:]}"
        assert len(done) == len(faults), f"the query finished before the last fault: {done}"
        code = child.wait(RECOVERY_S)
        assert code == 0, log.read_text()[-6000:]
    finally:
        if child.poll() is None:
            kill_group(child)

    msgs = read_all(cluster, out_stream)
    ids = [msg_id for msg_id, _ in msgs]
    assert len(ids) == len(set(ids)), "duplicate message ids in the output"
    assert sorted(ids) == sorted(f"crash:{in_stream}:{seq}:0" for seq in range(1, N + 1))  # type: ignore[type-var]
    assert sorted(data for _, data in msgs) == sorted(f"done:MSG-{i}".encode() for i in range(N))
    durable = api(cluster, f"CONSUMER.INFO.{in_stream}.spark")
    assert durable["ack_floor"]["stream_seq"] == N
