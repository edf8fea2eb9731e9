"""The per-process connection pool (client/pool.py) against both servers, counted by the server.

The server's monitoring endpoints say how many connections a run opened
(`/varz` `total_connections`) and which are open (`/connz`, ours are named
`spark-jetstream`): the pool must open one per process and server list, not
one per partition and batch.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sink_helpers import create_stream, publish_acked, stream_info

from jetstream_testing.process import ServerProcess, start_server
from spark_jetstream.client import ConnectionLostError
from spark_jetstream.client.connection import CLIENT_NAME
from spark_jetstream.client.pool import POOL, ConnectionPool
from spark_jetstream.options import ConnectionOptions


@pytest.fixture
def server(server_kind: str, store_dir: Path) -> Iterator[ServerProcess]:
    """The `server` of tests/conftest.py, with its monitoring port open."""
    proc = start_server(server_kind, store_dir, http_port=-1)
    try:
        yield proc
    finally:
        proc.stop()


def monitor(server: ServerProcess, path: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.monitor_port}{path}", timeout=10) as resp:
        return json.load(resp)  # type: ignore[no-any-return]


def total_connections(server: ServerProcess) -> int:
    return int(monitor(server, "/varz")["total_connections"])


def ours(server: ServerProcess) -> list[dict[str, Any]]:
    return [c for c in monitor(server, "/connz")["connections"] if c.get("name") == CLIENT_NAME]


def settled_count(server: ServerProcess, expected: int, timeout_s: float = 10.0) -> int:
    """Our connections in /connz once it shows `expected` (or the timeout passed): a
    client's close reaches the server's connection list a moment later."""
    deadline = time.monotonic() + timeout_s
    while (count := len(ours(server))) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return count


def opts(server: ServerProcess, **more: str) -> ConnectionOptions:
    return ConnectionOptions.from_options({"servers": server.url, **more})


def test_one_connection_serves_lease_after_lease(server: ServerProcess) -> None:
    create_stream(server.url, "S", ["s.>"])
    pool = ConnectionPool()
    before = total_connections(server)
    first = pool.connect(opts(server))
    first.js_api("STREAM.INFO.S")
    first.close()
    for _ in range(10):
        with pool.connect(opts(server, retryTimeout="5s")) as conn:  # other timeouts: the same connection
            assert conn is first
            conn.js_api("STREAM.INFO.S")
    assert (pool.opened, pool.reused, pool.idle_count()) == (1, 10, 1)
    assert total_connections(server) - before == 1
    assert len(ours(server)) == 1
    pool.close_all()
    assert pool.idle_count() == 0 and first.sock is None


def test_a_connection_comes_back_without_the_last_user_s_subscriptions(server: ServerProcess) -> None:
    pool = ConnectionPool()
    with pool.connect(opts(server)) as conn:
        conn.subscribe("_INBOX.publisher.*")  # what the sink's publisher leaves behind
        conn.subscribe("other.>")
        conn.flush(5)
        assert ours(server)[0]["subscriptions"] == 3
    with pool.connect(opts(server)) as again:
        assert again is conn and list(again._subs.values()) == [again._inbox_prefix + ".*"]
        again.flush(5)
        assert ours(server)[0]["subscriptions"] == 1


def test_a_dead_idle_connection_is_replaced_after_a_restart(server: ServerProcess) -> None:
    pool = ConnectionPool()
    first = pool.connect(opts(server))
    first.close()
    server.restart()
    with pool.connect(opts(server, retryTimeout="20s")) as conn:
        assert conn is not first and first.sock is None  # failed the health check: closed
        conn.flush(5)
    assert pool.opened == 2


def test_a_broken_connection_is_never_pooled(server: ServerProcess) -> None:
    pool = ConnectionPool()
    conn = pool.connect(opts(server, retryTimeout="0"))
    server.kill()
    with pytest.raises(ConnectionLostError):
        conn.js_api("INFO")
    assert conn.broken
    conn.close()
    assert pool.idle_count() == 0


def test_one_idle_connection_per_key(server: ServerProcess) -> None:
    pool = ConnectionPool()
    a = pool.connect(opts(server))
    b = pool.connect(opts(server))  # a second thread of the same process, say
    other_key = pool.connect(opts(server, inboxPrefix="mine"))
    assert len({id(a), id(b), id(other_key)}) == 3
    a.close()
    b.close()
    other_key.close()
    assert pool.idle_count() == 2 and b.sock is None  # the extra one is closed
    assert settled_count(server, 2) == 2


def test_concurrent_leases_from_threads(server: ServerProcess) -> None:
    create_stream(server.url, "S", ["s.>"])
    pool = ConnectionPool()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                with pool.connect(opts(server)) as conn:
                    conn.js_api("STREAM.INFO.S")
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    # one idle connection is kept; the others were closed when returned (a later lease may
    # open a new one, so how many were opened depends on the interleaving): none leaks
    assert pool.idle_count() == 1
    assert settled_count(server, 1) == 1


def test_a_forked_child_never_uses_its_parent_s_sockets(server: ServerProcess) -> None:
    parent = POOL.connect(opts(server))
    parent.close()
    assert POOL.idle_count() >= 1
    pid = os.fork()
    if pid == 0:  # the child: an empty pool, its own connection
        code = 1
        try:
            child = POOL.connect(opts(server))
            code = 0 if child is not parent and POOL.opened == 1 else 2
            child.discard()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    with POOL.connect(opts(server)) as again:  # the parent's connection still works
        assert again is parent
        again.flush(5)


def test_failover_to_the_second_server_when_the_first_is_down(server: ServerProcess) -> None:
    pool = ConnectionPool()
    options = ConnectionOptions.from_options({"servers": f"nats://127.0.0.1:1,{server.url}", "connectTimeout": "1"})
    for _ in range(5):  # random order: some tries meet the dead one first and fail over
        conn = pool.connect(options)
        assert conn.server_url == server.url
        conn.discard()


@pytest.mark.timeout(600)
def test_many_partitions_and_batches_use_one_connection_per_process(
    spark: Any, server: ServerProcess, tmp_path: Path
) -> None:
    create_stream(server.url, "IN", ["in.>"])
    create_stream(server.url, "OUT", ["out.>"], duplicate_window=600 * 10**9)
    publish_acked(server.url, [(f"in.{i % 4}", f"m{i}".encode()) for i in range(2000)])
    servers = f"nats://127.0.0.1:1,{server.url}"  # a dead server first: every new connection fails over
    before = total_connections(server)
    df = (
        spark.read.format("jetstream").option("servers", servers).option("connectTimeout", "1")
        .option("stream", "IN").option("minPartitions", "12").load()
    )
    assert df.rdd.getNumPartitions() == 12
    (
        df.selectExpr("concat('out.', cast(seq % 4 AS string)) AS subject", "data", "stream", "seq")
        .repartition(12)
        .write.format("jetstream").option("servers", servers).option("connectTimeout", "1")
        .mode("append").save()
    )
    assert int(stream_info(server.url, "OUT")["state"]["messages"]) == 2000
    # a streaming read: 5 micro-batches of 4 partitions each
    query = (
        spark.readStream.format("jetstream").option("servers", servers).option("connectTimeout", "1")
        .option("stream", "IN").option("maxMessagesPerTrigger", "400").option("minPartitions", "4").load()
        .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True).start()
    )
    query.awaitTermination(300)
    assert query.exception() is None
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    assert sum(p["numInputRows"] for p in batches) == 2000 and len(batches) == 5
    opened = total_connections(server) - before
    # 12 + 12 + 20 partition tasks; one connection per Python process that ran some
    # (the executors' workers, the driver's planner and streaming source workers)
    print(f"connections opened for 44 partition tasks: {opened}; open now: {len(ours(server))}")
    assert opened <= 10, opened
