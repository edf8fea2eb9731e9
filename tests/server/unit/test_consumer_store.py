"""Durable consumer state on disk (consumer/store.py) through the real engine.

The engine runs on a FakeClock with the in-memory router double and a real
store directory: consumers write real files; a "restart" closes the engine
(or abandons it, as a kill would) and opens a new one on the same directory.
Disk faults are injected at the OS call (`os.write`, `os.fsync`) the store
makes; the real full-disk runs are in integration/test_faults.py.
"""

from __future__ import annotations

import asyncio
import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from router_double import Inbox, RouterDouble
from waits import until

from jetstream_server.app.loop_clock import LoopClock
from jetstream_server.core.clock import FakeClock
from jetstream_server.jetstream.consumer import store as consumer_store
from jetstream_server.jetstream.consumer.store import LOG_FILE, STATE_FILE, decode_line
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.settings import EngineSettings

API = "$JS.API."


class Env:
    def __init__(self, store_dir: Path, *, sync_always: bool = False) -> None:
        self.store_dir = store_dir
        self.clock = FakeClock()
        self.router = RouterDouble()
        settings = EngineSettings(store_dir=str(store_dir), sync_always=sync_always)
        self.engine = JetStream(settings, self.clock)
        self.engine.start(self.router)
        self.boxes = 0

    def api(self, suffix: str, body: object = b"") -> Any:
        return self.router.request_json(API + suffix, body)

    def turn(self) -> None:
        self.clock.advance(0)

    def publish(self, n: int, subject: str = "s.1") -> None:
        for i in range(n):
            self.router.publish(subject, None, None, b"m%d" % i)
        self.turn()

    def fetch(self, consumer: str, batch: int) -> list[str]:
        """Pull `batch` messages; their ack reply subjects."""
        self.boxes += 1
        box: Inbox = self.router.inbox(f"_PULL.{self.boxes}")
        self.router.publish(
            f"{API}CONSUMER.MSG.NEXT.S.{consumer}", box.subject, None, b'{"batch":%d}' % batch
        )
        while len(box.messages) < batch:
            before = len(box.messages)
            self.turn()
            if len(box.messages) == before:
                break
        return [m.reply for m in box.messages if m.reply]

    def ack_sync(self, reply: str) -> bool:
        """An ack sent as a request: True when the server confirmed it (with
        sync_always after the fsync at the end of the loop turn)."""
        answers = self.router.request(reply, b"+ACK")
        self.turn()
        return bool(answers)

    def consumer_info(self, name: str = "C") -> Any:
        return self.api(f"CONSUMER.INFO.S.{name}")

    def obs(self, name: str = "C") -> Path:
        return self.store_dir / "jetstream" / "$G" / "streams" / "S" / "obs" / name

    def crash(self) -> None:
        """Stop the way a killed process does: no flush, no sync, no snapshot;
        only the descriptors go (a killed process loses its locks)."""
        for stream in self.engine.streams.values():
            store: Any = stream.store
            store._closed = True
            store._release_fds()
            for consumer in stream.consumers.values():
                consumer.store.close()  # type: ignore[attr-defined]


def make(store_dir: Path, *, sync_always: bool = False, **consumer: Any) -> Env:
    env = Env(store_dir, sync_always=sync_always)
    resp = env.api("STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
    assert "error" not in resp, resp
    config = {"durable_name": "C", "ack_policy": "explicit", "max_ack_pending": -1, **consumer}
    resp = env.api("CONSUMER.CREATE.S.C", {"stream_name": "S", "config": config})
    assert "error" not in resp, resp
    return env


def test_ack_costs_what_changed_not_the_whole_pending_set(tmp_path: Path) -> None:
    """50k pending acks: an ack as a request writes one short log line (it
    rewrote a 50k-entry file per ack, ~50 ms each), and a restart still
    restores exactly what was acknowledged."""
    env = make(tmp_path)
    env.publish(50_000)
    replies = env.fetch("C", 50_000)
    assert len(replies) == 50_000
    env.turn()  # the write after the deliveries
    state_size = (env.obs() / STATE_FILE).stat().st_size
    acked = replies[100:400]
    start = time.perf_counter()
    for reply in acked:
        assert env.ack_sync(reply)
    per_ack_ms = (time.perf_counter() - start) * 1000 / len(acked)
    print(f"ack as request with 50k pending: {per_ack_ms:.3f} ms")
    assert per_ack_ms < 5.0, per_ack_ms
    log_size = (env.obs() / LOG_FILE).stat().st_size
    assert log_size < state_size, (log_size, state_size)  # lines of changes, not copies
    # a kill: no clean shutdown, the next engine reads o.dat + o.log
    env.crash()
    again = Env(tmp_path)
    info = again.consumer_info()
    assert info["num_ack_pending"] == 50_000 - len(acked)
    assert info["ack_floor"]["stream_seq"] == 0  # 1..100 are still pending
    assert info["delivered"]["stream_seq"] == 50_000


def test_log_compacts_and_a_torn_last_line_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consumer_store, "LOG_MIN", 0)  # compact at twice the state size
    env = make(tmp_path)
    env.publish(300)
    replies = env.fetch("C", 300)
    env.turn()
    gens = set()
    for reply in replies[:250]:
        assert env.ack_sync(reply)
        raw = (env.obs() / STATE_FILE).read_text()
        gens.add(raw)
    # the log outgrew twice the state at least once: a whole state was written again
    assert len(gens) > 1
    log = env.obs() / LOG_FILE
    lines = log.read_bytes().splitlines(keepends=True)
    assert all(decode_line(line) is not None for line in lines)
    # a torn append (crash mid-write) at the end: everything before it counts
    with open(log, "ab") as fh:
        fh.write(b"0badc0de {\"g\":")
    env.crash()
    again = Env(tmp_path)
    info = again.consumer_info()
    assert info["num_ack_pending"] == 50
    assert info["ack_floor"]["stream_seq"] == 250


def test_sync_always_fsyncs_consumer_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = make(tmp_path, sync_always=True)
    env.publish(3)
    replies = env.fetch("C", 3)
    env.turn()
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    assert env.ack_sync(replies[0])
    state_files = {p.stat().st_ino for p in env.obs().iterdir()}
    assert state_files & set(synced), "the ack was confirmed before its state was fsynced"


def failing(call: Callable[..., Any], err: int = errno.ENOSPC) -> Callable[..., Any]:
    def fail(*args: Any) -> Any:
        raise OSError(err, os.strerror(err))

    return fail


def test_ack_request_unconfirmed_when_state_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = make(tmp_path)
    env.publish(4)
    replies = env.fetch("C", 4)
    env.turn()
    assert env.ack_sync(replies[0])
    monkeypatch.setattr(os, "write", failing(os.write))
    monkeypatch.setattr(os, "replace", failing(os.replace))
    assert not env.ack_sync(replies[1]), "confirmed an ack that is not stored"
    monkeypatch.undo()
    # space is back: the next write is a whole state, holding the earlier ack too
    assert env.ack_sync(replies[2])
    env.crash()
    again = Env(tmp_path)
    info = again.consumer_info()
    assert info["num_ack_pending"] == 1
    assert info["ack_floor"]["stream_seq"] == 3


def test_failed_durable_create_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = Env(tmp_path)
    assert "error" not in env.api("STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
    monkeypatch.setattr(os, "replace", failing(os.replace))
    resp = env.api(
        "CONSUMER.CREATE.S.D", {"stream_name": "S", "config": {"durable_name": "D"}}
    )
    monkeypatch.undo()
    assert resp["error"]["err_code"] == 10012, resp
    assert "consumer D not created" in resp["error"]["description"]
    assert str(tmp_path) not in resp["error"]["description"]
    assert env.api("CONSUMER.NAMES.S")["consumers"] in (None, [])
    assert not env.obs("D").exists()
    assert not list(tmp_path.rglob("*.tmp"))
    env.crash()
    again = Env(tmp_path)
    assert again.api("CONSUMER.NAMES.S")["consumers"] in (None, [])


def test_deleting_a_consumer_on_an_interest_stream_reads_only_what_it_held(
    tmp_path: Path,
) -> None:
    """The stream keeps 5k messages for a consumer that has not read them; a
    second, caught-up consumer is deleted: no message is read for it (it read
    all 5k of them, for the retention check)."""
    env = Env(tmp_path)
    resp = env.api(
        "STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"], "retention": "interest"}
    )
    assert "error" not in resp, resp
    for name in ("SLOW", "FAST"):
        config = {"durable_name": name, "ack_policy": "explicit", "max_ack_pending": -1}
        assert "error" not in env.api(f"CONSUMER.CREATE.S.{name}", {"stream_name": "S", "config": config})
    env.publish(5_000)
    for reply in env.fetch("FAST", 5_000):
        env.router.publish(reply, None, None, b"+ACK")
    env.turn()
    stream = env.engine.streams["S"]
    assert stream.store.state().msgs == 5_000  # SLOW still wants them all
    reads = 0
    store = stream.store
    real_get = store._get  # type: ignore[attr-defined]

    def counting_get(seq: int, pos: int) -> Any:
        nonlocal reads
        reads += 1
        return real_get(seq, pos)

    store._get = counting_get  # type: ignore[attr-defined]
    assert env.api("CONSUMER.DELETE.S.FAST")["success"] is True
    assert reads == 0, reads
    assert store.state().msgs == 5_000
    # deleting the one that held them all drops them all
    assert env.api("CONSUMER.DELETE.S.SLOW")["success"] is True
    assert store.state().msgs == 0


@pytest.mark.asyncio
async def test_sync_always_ack_waits_for_the_disk_thread_not_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With sync_always an ack sent as a request is answered after its state is
    fsynced, and that fsync runs on the disk thread: the loop keeps turning."""
    clock = LoopClock(asyncio.get_running_loop())
    router = RouterDouble()
    engine = JetStream(EngineSettings(store_dir=str(tmp_path), sync_always=True), clock)
    engine.start(router)

    try:
        made = router.request(API + "STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
        await until(lambda: bool(made))  # answered once its files are fsynced (sync_always)
        resp = made[0].json()
        assert "error" not in resp, resp
        config = {"durable_name": "C", "ack_policy": "explicit"}
        created = router.request(API + "CONSUMER.CREATE.S.C", {"stream_name": "S", "config": config})
        await until(lambda: bool(created))  # answered after its files' fsyncs (disk thread)
        assert "error" not in created[0].json(), created[0].json()
        acks = router.inbox("_PUBACK")
        for i in range(3):
            router.publish("s.1", "_PUBACK", None, b"m%d" % i)
        await until(lambda: len(acks.messages) == 3)
        box = router.inbox("_PULL")
        router.publish(API + "CONSUMER.MSG.NEXT.S.C", "_PULL", None, b'{"batch":3}')
        await until(lambda: len(box.messages) == 3)
        threads: list[str] = []
        real_fsync = os.fsync
        release = threading.Event()  # the disk thread's fsyncs wait for it (no clock)

        def slow_fsync(fd: int) -> None:
            threads.append(threading.current_thread().name)
            release.wait(30)
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", slow_fsync)
        answers = [router.request(m.reply or "", b"+ACK") for m in box.messages[:2]]
        await until(lambda: bool(threads))  # an fsync is blocked in the disk thread...
        await asyncio.sleep(0)  # ...and the loop still turns: it never waits for one
        assert answers == [[], []]  # not confirmed before the fsync
        release.set()
        await until(lambda: all(answers))
        assert threads and all(t.startswith("jetstream-disk") for t in threads), threads
        monkeypatch.undo()
        info = router.request_json(API + "CONSUMER.INFO.S.C")
        assert info["num_ack_pending"] == 1 and info["ack_floor"]["stream_seq"] == 2
    finally:
        engine.close()
        clock.shutdown()
