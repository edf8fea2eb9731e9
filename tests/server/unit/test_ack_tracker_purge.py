"""A purge reaching a consumer with many pending messages costs what it removed
(consumer/ack_tracker.py `on_purged`): no store read per pending message, and
the state written after it is a delta, not the whole pending set.

The real engine on a FakeClock with the in-memory router double and a real
store directory (file streams, durable consumer state on disk); a "kill"
abandons the engine and a new one reads what was written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from router_double import Inbox, RouterDouble

from jetstream_server.core.clock import FakeClock
from jetstream_server.jetstream.consumer.store import STATE_FILE
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.settings import EngineSettings

API = "$JS.API."
PENDING = 20_000


class Env:
    def __init__(self, store_dir: Path) -> None:
        self.store_dir = store_dir
        self.clock = FakeClock()
        self.router = RouterDouble()
        self.engine = JetStream(EngineSettings(store_dir=str(store_dir)), self.clock)
        self.engine.start(self.router)

    def api(self, suffix: str, body: object = b"") -> Any:
        return self.router.request_json(API + suffix, body)

    def turn(self) -> None:
        self.clock.advance(0)

    def fetch(self, batch: int) -> int:
        box: Inbox = self.router.inbox("_PULL")
        self.router.publish(f"{API}CONSUMER.MSG.NEXT.S.C", box.subject, None, b'{"batch":%d}' % batch)
        while len(box.messages) < batch:
            before = len(box.messages)
            self.turn()
            if len(box.messages) == before:
                break
        return len(box.messages)

    def count_reads(self) -> list[int]:
        """Count the stream store's message reads from now on."""
        store: Any = self.engine.streams["S"].store
        real_get = store._get
        reads = [0]

        def counting_get(seq: int, pos: int) -> Any:
            reads[0] += 1
            return real_get(seq, pos)

        store._get = counting_get
        return reads

    def obs(self) -> Path:
        return self.store_dir / "jetstream" / "$G" / "streams" / "S" / "obs" / "C"

    def kill(self) -> None:
        """Abandon the engine as a killed process would (no flush, no snapshot)."""
        for stream in self.engine.streams.values():
            store: Any = stream.store
            store._closed = True
            store._release_fds()
            for consumer in stream.consumers.values():
                consumer.store.close()  # type: ignore[attr-defined]


def make(store_dir: Path) -> Env:
    """PENDING messages on s.a with every tenth on s.b, all delivered, none acked."""
    env = Env(store_dir)
    assert "error" not in env.api("STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
    config = {"durable_name": "C", "ack_policy": "explicit", "max_ack_pending": -1}
    assert "error" not in env.api("CONSUMER.CREATE.S.C", {"stream_name": "S", "config": config})
    for i in range(PENDING):
        env.router.publish("s.b" if i % 10 == 9 else "s.a", None, None, b"m%d" % i)
    env.turn()
    assert env.fetch(PENDING) == PENDING
    env.turn()  # the state write after the deliveries
    return env


def test_subject_purge_reads_nothing_and_writes_a_delta(tmp_path: Path) -> None:
    """A purge of one subject keeping its newest 10 (1,990 messages) with 20k
    pending: it loaded each of the 20k pending messages from the store and
    rewrote the whole consumer state."""
    env = make(tmp_path)
    state_before = (env.obs() / STATE_FILE).read_bytes()
    reads = env.count_reads()
    resp = env.api("STREAM.PURGE.S", {"filter": "s.b", "keep": 10})
    assert resp["success"] is True and resp["purged"] == PENDING // 10 - 10, resp
    env.turn()
    assert reads[0] == 0, f"{reads[0]} messages read for a purge"
    assert (env.obs() / STATE_FILE).read_bytes() == state_before  # a log line, not a new o.dat
    info = env.api("CONSUMER.INFO.S.C")
    left = PENDING - (PENDING // 10 - 10)
    assert info["num_ack_pending"] == left
    assert info["ack_floor"]["stream_seq"] == 0
    env.kill()
    again = Env(tmp_path)
    info = again.api("CONSUMER.INFO.S.C")
    assert info["num_ack_pending"] == left
    # what is still pending is exactly what the stream still holds
    tracker = again.engine.streams["S"].consumers["C"].acks  # type: ignore[attr-defined]
    store = again.engine.streams["S"].store
    assert all(store.load(seq) is not None for seq in tracker.pending)


def test_purge_below_a_sequence_costs_what_it_removed(tmp_path: Path) -> None:
    """A purge up to sequence 101 with 20k pending forgets the 100 below it,
    reading no message (it loaded every pending one)."""
    env = make(tmp_path)
    reads = env.count_reads()
    resp = env.api("STREAM.PURGE.S", {"seq": 101})
    assert resp["success"] is True and resp["purged"] == 100, resp
    env.turn()
    assert reads[0] == 0, f"{reads[0]} messages read for a purge"
    info = env.api("CONSUMER.INFO.S.C")
    assert info["num_ack_pending"] == PENDING - 100
    assert info["ack_floor"]["stream_seq"] == 100
    env.kill()
    info = Env(tmp_path).api("CONSUMER.INFO.S.C")
    assert info["num_ack_pending"] == PENDING - 100
    assert info["ack_floor"]["stream_seq"] == 100
