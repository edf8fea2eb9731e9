"""The bundled server on uvloop (the `speedups` extra, `jetstream_server.app.speedups`).

The rest of the suite runs the server on asyncio's own loop (tests/conftest.py sets
`JETSTREAM_SPEEDUPS=off` unless the environment says otherwise); this module starts it with
``--speedups on`` (and `EmbeddedServer(speedups="on")`) and runs the paths uvloop touches
against it: the raw protocol byte for byte, core NATS through nats-py, JetStream publish with
dedup, pull fetch + ack, an ordered consumer, KV, a clean stop by SIGTERM and a restart that
keeps everything acknowledged, a kill in the middle of acknowledged publishes, the group commit
of `sync_interval: always` (answers handed back from the disk thread with
`call_soon_threadsafe`), and the embedded server's thread (its stop comes the same way). `make install`
installs the extra, so CI runs both loops; where uvloop is absent the module is skipped.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from js_helpers import api, create, pub
from nats.js.api import ConsumerConfig, DeliverPolicy, StorageType
from raw_client import RawClient

from jetstream_server import EmbeddedServer
from jetstream_testing.process import ServerProcess, bundled_server_command

pytest.importorskip("uvloop", reason="the speedups extra (uvloop) is not installed")
pytest.importorskip("orjson", reason="the speedups extra (orjson) is not installed")

SPEEDUPS_LINE = r"\[INF\] Speedups: event loop uvloop \d\S*, JSON orjson \d\S*, CRC-32 isal \d"


def _start(store_dir: Path, *args: str) -> ServerProcess:
    proc = ServerProcess(bundled_server_command(), ["--speedups", "on", *args], store_dir=store_dir)
    return proc.start()


@pytest.fixture
def fast_server(store_dir: Path) -> Iterator[ServerProcess]:
    proc = _start(store_dir)
    try:
        yield proc
    finally:
        proc.stop()


def test_the_log_says_which_loop_runs_the_server(fast_server: ServerProcess) -> None:
    assert fast_server.wait_for_log(SPEEDUPS_LINE)


def test_raw_protocol_byte_for_byte(fast_server: ServerProcess) -> None:
    client = RawClient(fast_server.port)
    assert client.info["headers"] is True
    client.send(b'CONNECT {"verbose":false,"headers":true}\r\nSUB a.* 1\r\nSUB a.b q 2\r\n')
    client.send(b"PUB a.b r 5\r\nhello\r\nHPUB a.c 12 14\r\nNATS/1.0\r\n\r\nhi\r\n")
    assert client.until_pong() == [b"MSG a.b 1 r 5", b"hello", b"MSG a.b 2 r 5", b"hello",
                                   b"HMSG a.c 1 12 14", b"NATS/1.0", b"", b"hi"]
    # a large payload arrives in pieces and leaves in one frame
    big = bytes(range(256)) * 4096
    client.send(b"PUB a.big %d\r\n" % len(big) + big + b"\r\n")
    assert client.readline() == b"MSG a.big 1 %d" % len(big)
    assert client.read_exact(len(big) + 2) == big + b"\r\n"
    # a protocol error closes with nats-server's words
    client.send(b"BOGUS\r\n")
    assert client.readline() == b"-ERR 'Unknown Protocol Operation'"


async def test_core_nats_request_reply_and_a_burst(fast_server: ServerProcess) -> None:
    nc = await nats.connect(fast_server.url, max_reconnect_attempts=0)
    try:
        async def echo(msg) -> None:  # type: ignore[no-untyped-def]
            await msg.respond(msg.data.upper())

        await nc.subscribe("svc", cb=echo)
        assert (await nc.request("svc", b"ping", timeout=2)).data == b"PING"
        sub = await nc.subscribe("burst")
        for i in range(2000):
            await nc.publish("burst", b"%d" % i)
        got = [int((await sub.next_msg(5)).data) for _ in range(2000)]
        assert got == list(range(2000))
    finally:
        await nc.close()


async def test_jetstream_publish_dedup_pull_ack_and_ordered(fast_server: ServerProcess) -> None:
    nc = await nats.connect(fast_server.url, max_reconnect_attempts=0)
    try:
        js = nc.jetstream()
        await js.add_stream(name="FAST", subjects=["fast.>"], storage=StorageType.FILE)
        acks = [await js.publish(f"fast.{i % 3}", b"m%d" % i, headers={"Nats-Msg-Id": f"id{i}"})
                for i in range(300)]
        assert [a.seq for a in acks] == list(range(1, 301))
        again = await js.publish("fast.0", b"again", headers={"Nats-Msg-Id": "id7"})
        assert (again.seq, again.duplicate) == (8, True)
        for i in range(300, 1300):
            await js.publish_async(f"fast.{i % 3}", b"m%d" % i)
        await js.publish_async_completed()
        sub = await js.pull_subscribe("fast.>", durable="worker", stream="FAST")
        seen: list[bytes] = []
        while len(seen) < 1300:
            for msg in await sub.fetch(256, timeout=5):
                seen.append(msg.data)
                await msg.ack()
        assert seen == [b"m%d" % i for i in range(1300)]
        await nc.flush()
        info = await js.consumer_info("FAST", "worker")
        assert (info.num_pending, info.num_ack_pending, info.ack_floor.stream_seq) == (0, 0, 1300)
        ordered: list[int] = []
        done = asyncio.Event()

        async def on_msg(msg) -> None:  # type: ignore[no-untyped-def]
            ordered.append(msg.metadata.sequence.stream)
            if len(ordered) == 1300:
                done.set()

        osub = await js.subscribe("fast.>", cb=on_msg, ordered_consumer=True)
        await asyncio.wait_for(done.wait(), 20)
        await osub.unsubscribe()
        assert ordered == list(range(1, 1301))
    finally:
        await nc.close()


async def test_key_value(fast_server: ServerProcess) -> None:
    nc = await nats.connect(fast_server.url, max_reconnect_attempts=0)
    try:
        kv = await nc.jetstream().create_key_value(bucket="fastkv", history=3)
        first = await kv.put("k", b"1")
        second = await kv.update("k", b"2", last=first)
        assert (await kv.get("k")).value == b"2"
        with pytest.raises(nats.js.errors.KeyWrongLastSequenceError):
            await kv.update("k", b"3", last=first)
        await kv.delete("k")
        with pytest.raises(nats.js.errors.KeyNotFoundError):
            await kv.get("k")
        history = await kv.history("k")
        assert [e.revision for e in history] == [first, second, second + 1]
    finally:
        await nc.close()


async def test_stop_by_sigterm_and_restart_keep_what_was_acknowledged(store_dir: Path) -> None:
    proc = _start(store_dir)
    try:
        nc = await nats.connect(proc.url, max_reconnect_attempts=0)
        try:
            await create(nc, name="KEEP", subjects=["keep.>"])
            for i in range(50):
                assert (await pub(nc, "keep.x", b"%d" % i, {"Nats-Msg-Id": f"k{i}"}))["seq"] == i + 1
            cons = await api(nc, "CONSUMER.DURABLE.CREATE.KEEP.d",
                             {"stream_name": "KEEP", "config": {"durable_name": "d", "ack_policy": "explicit"}})
            assert "error" not in cons, cons
            js = nc.jetstream()
            sub = await js.pull_subscribe("keep.>", durable="d", stream="KEEP")
            for msg in await sub.fetch(20, timeout=5):
                await msg.ack_sync()
        finally:
            await nc.close()
        assert proc.proc is not None
        proc.proc.send_signal(signal.SIGTERM)
        assert proc.proc.wait(20) == 0  # uvloop's signal handlers stop the server cleanly
        proc.start()
        nc = await nats.connect(proc.url, max_reconnect_attempts=0)
        try:
            js = nc.jetstream()
            info = await js.consumer_info("KEEP", "d")
            assert (info.ack_floor.stream_seq, info.num_pending) == (20, 30)
            assert (await pub(nc, "keep.x", b"dup", {"Nats-Msg-Id": "k3"})) == \
                {"stream": "KEEP", "seq": 4, "duplicate": True}
            assert (await pub(nc, "keep.x", b"new"))["seq"] == 51
        finally:
            await nc.close()
    finally:
        proc.stop()


async def test_group_commit_answers_from_the_disk_thread(store_dir: Path, tmp_path: Path) -> None:
    """With `sync_interval: always` every pub ack and every ack sent as a request waits for an
    fsync on the disk thread, which hands the answers back to uvloop's loop with
    `call_soon_threadsafe`: bursts of both, all answered in order."""
    conf = tmp_path / "always.conf"
    conf.write_text("jetstream {\n  sync_interval: always\n}\n")
    proc = _start(store_dir, "-c", str(conf))
    try:
        nc = await nats.connect(proc.url, max_reconnect_attempts=0)
        try:
            js = nc.jetstream()
            await js.add_stream(name="SYNC", subjects=["sync"], storage=StorageType.FILE)
            for burst in range(5):
                futures = [await js.publish_async("sync", b"%d" % (burst * 50 + i)) for i in range(50)]
                acks = [await asyncio.wait_for(f, 10) for f in futures]
                assert [a.seq for a in acks] == list(range(burst * 50 + 1, burst * 50 + 51))
            sub = await js.pull_subscribe("sync", durable="s", stream="SYNC")
            msgs = await sub.fetch(100, timeout=5)
            await asyncio.gather(*(m.ack_sync(timeout=10) for m in msgs))
            info = await js.consumer_info("SYNC", "s")
            assert (info.ack_floor.stream_seq, info.num_ack_pending, info.num_pending) == (100, 0, 150)
        finally:
            await nc.close()
    finally:
        proc.stop()


async def test_kill_loses_nothing_acknowledged(store_dir: Path) -> None:
    proc = _start(store_dir)
    try:
        nc = await nats.connect(proc.url, max_reconnect_attempts=0)
        js = nc.jetstream()
        await js.add_stream(name="KILL", subjects=["kill"], storage=StorageType.FILE)
        acked = 0
        for burst in range(8):  # bursts in flight when the kill comes
            futures = [await js.publish_async("kill", b"%d" % (burst * 100 + i)) for i in range(100)]
            if burst == 7:
                proc.kill()
            for future in futures:
                try:
                    await asyncio.wait_for(future, 5)
                except (asyncio.TimeoutError, nats.errors.Error):
                    break  # unanswered: the server is gone
                acked += 1
        await nc.close()
        proc.start()
        nc = await nats.connect(proc.url, max_reconnect_attempts=0)
        try:
            state = (await nc.jetstream().stream_info("KILL")).state
            assert state.messages >= acked >= 700
        finally:
            await nc.close()
    finally:
        proc.stop()


async def test_embedded_server_on_uvloop(tmp_path: Path) -> None:
    with EmbeddedServer(store_dir=str(tmp_path), speedups="on") as srv:
        loop = srv._loop
        assert loop is not None and type(loop).__module__.startswith("uvloop")
        nc = await nats.connect(srv.url, max_reconnect_attempts=0)
        try:
            js = nc.jetstream()
            await js.add_stream(name="EMB", subjects=["emb"])
            for i in range(100):
                await js.publish_async("emb", b"%d" % i)
            await js.publish_async_completed()
            msgs = await js.pull_subscribe("emb", durable="e", config=ConsumerConfig(
                deliver_policy=DeliverPolicy.ALL))
            got = await msgs.fetch(100, timeout=5)
            assert [m.data for m in got] == [b"%d" % i for i in range(100)]
        finally:
            await nc.close()
    assert srv._thread is None  # stopped from this thread through call_soon_threadsafe


def test_speedups_on_without_uvloop_is_refused(store_dir: Path) -> None:
    """``--speedups on`` where uvloop cannot import: exit 1 naming the package to install."""
    hide = (
        "import sys; sys.modules['uvloop'] = None\n"
        "from jetstream_server.__main__ import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    proc = ServerProcess([sys.executable, "-c", hide], ["--speedups", "on"], store_dir=store_dir)
    with pytest.raises(RuntimeError, match="did not start"):
        proc.start()
    assert any("pip install 'jetstream-server[speedups]'" in line for line in proc.log), proc.log


def test_speedups_off_runs_asyncio_and_answers_alike(fast_server: ServerProcess, store_dir: Path) -> None:
    """`JETSTREAM_SPEEDUPS=off` with uvloop installed: asyncio's loop, said in the log, and the
    same account info fields as the server on uvloop."""

    async def account(url: str) -> dict[str, object]:
        nc = await nats.connect(url, max_reconnect_attempts=0)
        try:
            return json.loads((await nc.request("$JS.API.INFO", b"", timeout=5)).data)
        finally:
            await nc.close()

    plain = ServerProcess(bundled_server_command(), [], store_dir=store_dir / "plain",
                          env={**os.environ, "JETSTREAM_SPEEDUPS": "off"})
    with plain:
        assert plain.wait_for_log(r"Speedups: none, event loop asyncio, JSON json, CRC-32 zlib \(turned off\)")
        assert asyncio.run(account(plain.url)).keys() == asyncio.run(account(fast_server.url)).keys()
