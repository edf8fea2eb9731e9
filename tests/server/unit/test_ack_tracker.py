"""The ack tracker (consumer/ack_tracker.py): pending, ack floor, redeliveries,
ack policies, backoff, max_deliver, nak/progress/term; a real Stream and Cursor,
a FakeClock, the callbacks recorded."""

from __future__ import annotations

from typing import Any

from jetstream_server.core.clock import FakeClock
from jetstream_server.jetstream.consumer.ack_tracker import AckTracker
from jetstream_server.jetstream.consumer.config import ConsumerConfig
from jetstream_server.jetstream.consumer.cursor import Cursor
from jetstream_server.jetstream.stream import Stream
from jetstream_server.jetstream.stream_config import StreamConfig
from jetstream_server.store.memory import MemoryStore

NS = 1_000_000_000


class World:
    """A stream with `n` messages, a cursor over it and a tracker, callbacks counted."""

    def __init__(self, n: int = 5, retention: str = "limits", **raw: Any) -> None:
        self.clock = FakeClock()
        cfg = StreamConfig.from_json(
            {"name": "S", "subjects": ["s.>"], "storage": "memory", "retention": retention}
        )
        self.stream = Stream(cfg, MemoryStore(), self.clock)
        for _ in range(n):
            self.stream.accept("s.a", None, b"x")
        config = ConsumerConfig.from_json(
            {"durable_name": "C", "ack_policy": "explicit", **raw}
        ).with_defaults()
        self.cursor = Cursor(self.stream, config.filters)
        self.cursor.start(config)
        self.changes = 0
        self.dues = 0
        self.acks = AckTracker(
            self.clock, self.stream, self.cursor, config,
            on_change=self._changed, on_due=self._due,
        )
        self.acks.start(self.cursor.sseq - 1)

    def _changed(self) -> None:
        self.changes += 1

    def _due(self) -> None:
        self.dues += 1

    def deliver(self, count: int) -> list[int]:
        """First deliveries of the next `count` messages (as the consumer commits them)."""
        out = []
        for _ in range(count):
            msg = self.cursor.next_new()
            assert msg is not None
            dseq = self.cursor.commit(msg.seq, 1)
            self.acks.track(msg.seq, dseq, 1, self.clock.now_ns())
            out.append(msg.seq)
        return out

    def redeliver(self) -> tuple[int, int] | None:
        found = self.acks.next_redelivery()
        if found is None:
            return None
        msg, dc = found
        dseq = self.cursor.commit(msg.seq, dc)
        self.acks.track(msg.seq, dseq, dc, self.clock.now_ns())
        return msg.seq, dc

    @property
    def floor(self) -> tuple[int, int]:
        return self.acks.adflr, self.acks.asflr


def test_floor_moves_only_over_contiguous_acks() -> None:
    w = World()
    w.deliver(4)
    assert w.acks.ack(2) and w.floor == (0, 0)
    assert w.acks.ack(1) and w.floor == (2, 2)
    assert not w.acks.ack(1)  # not pending any more
    assert w.acks.term(4) and w.floor == (2, 2)
    assert w.acks.ack(3) and w.floor == (4, 4) and not w.acks.pending
    assert w.changes == 4 and w.acks.last_ack_ns == w.clock.now_ns()


def test_nothing_pending_means_the_floor_is_what_was_delivered() -> None:
    w = World(n=3, filter_subject="s.a")
    w.deliver(1)
    w.cursor.sseq = 3  # the cursor moved past messages this consumer skipped
    w.acks.ack(1)
    assert w.floor == (1, 2)


def test_ack_all_acknowledges_everything_below() -> None:
    w = World(ack_policy="all")
    w.deliver(4)
    assert w.acks.ack(3) and sorted(w.acks.pending) == [4] and w.floor == (3, 3)
    assert not w.acks.ack(2)  # already below the floor
    assert w.acks.term(4) and w.floor == (4, 4)


def test_ack_none_moves_the_floor_with_every_delivery() -> None:
    w = World(ack_policy="none")
    w.deliver(2)
    assert w.acks.pending == {} and w.floor == (2, 2)
    assert not w.acks.ack(1) and not w.acks.nak(1) and not w.acks.term(1)
    assert w.acks.max_ack_pending == 0


def test_ack_wait_expiry_queues_a_redelivery() -> None:
    w = World(ack_wait=10 * NS)
    w.deliver(2)
    w.clock.advance(9.9)
    assert w.dues == 0 and not w.acks.rdq
    w.clock.advance(0.2)
    assert w.dues == 1 and list(w.acks.rdq) == [1, 2]
    assert w.redeliver() == (1, 2)
    assert w.acks.rdc == {1: 2} and w.acks.pending[1].consumer_seq == 1  # first delivery's dseq


def test_backoff_steps_and_max_deliver_drops() -> None:
    w = World(backoff=[1 * NS, 3 * NS], max_deliver=2)
    w.deliver(1)
    assert w.acks.pending[1].due_ns == w.clock.now_ns() + 1 * NS
    w.clock.advance(1)
    assert w.redeliver() == (1, 2)
    assert w.acks.pending[1].due_ns == w.clock.now_ns() + 3 * NS
    w.clock.advance(3)
    changes = w.changes
    assert w.redeliver() is None  # a third delivery passes max_deliver
    assert w.acks.pending == {} and w.acks.dropped == {1} and w.changes == changes + 1
    assert w.acks.rdc == {1: 2} and w.floor == (0, 0)  # a dropped message holds the floor


def test_nak_progress_and_unget() -> None:
    w = World(ack_wait=10 * NS)
    w.deliver(2)
    assert w.acks.nak(1)  # right away
    assert not w.acks.nak(2, 2 * NS)  # later
    assert list(w.acks.rdq) == [1]
    assert w.redeliver() == (1, 2)
    w.acks.unget(1, 2)
    assert list(w.acks.rdq) == [1]
    w.acks.unget(2, 1)  # a first delivery is not a redelivery: nothing queued
    assert list(w.acks.rdq) == [1]
    w.clock.advance(1)
    w.acks.progress(2)
    assert w.acks.pending[2].due_ns == w.clock.now_ns() + 10 * NS
    assert w.acks.last_active_ns == w.clock.now_ns()


def test_nak_without_delay_uses_the_backoff_step() -> None:
    w = World(backoff=[2 * NS, 5 * NS])
    w.deliver(1)
    assert not w.acks.nak(1)
    assert w.acks.pending[1].due_ns == w.clock.now_ns() + 2 * NS


def test_a_message_gone_from_the_stream_is_forgotten() -> None:
    w = World(ack_wait=NS)
    w.deliver(2)
    w.acks.ack(2)
    w.stream.delete_message(1, erase=False)
    w.clock.advance(1.1)
    assert w.redeliver() is None
    assert w.acks.pending == {} and w.floor == (2, 2)


def test_retention_hears_of_acknowledgements() -> None:
    w = World(n=2, retention="workqueue")
    w.deliver(2)
    w.acks.ack(1)
    assert w.stream.store.state().msgs == 1
    w.acks.term(2)
    assert w.stream.store.state().msgs == 0


def test_purge_drops_pending_below_and_raises_the_floor() -> None:
    w = World(n=6)
    w.deliver(3)
    w.stream.store.purge(up_to_seq=3)
    w.cursor.on_purged(3)
    w.acks.on_purged(3)
    assert sorted(w.acks.pending) == [3] and w.floor == (0, 2)


def test_reset_restore_and_close() -> None:
    w = World(ack_wait=5 * NS)
    w.deliver(3)
    w.acks.nak(1)
    w.acks.reset(1)
    assert w.acks.pending == {} and not w.acks.rdq and w.floor == (0, 1)
    w.acks.restore(2, 2, [(4, 3, w.clock.now_ns() - 4 * NS), (3, 2, 0)], [(3, 2)], [5])
    assert list(w.acks.pending) == [3, 4] and w.floor == (2, 2) and w.acks.dropped == {5}
    assert w.acks.pending[3].due_ns == w.clock.now_ns()  # long overdue: due now
    assert w.acks.pending[4].due_ns == w.clock.now_ns() + 1 * NS
    w.clock.advance(0)
    assert w.dues == 1 and list(w.acks.rdq) == [3]
    w.acks.close()
    w.clock.advance(2)
    assert w.dues == 1  # no timer after close


def test_redelivery_timer_looks_only_at_what_fell_due() -> None:
    """50k pending messages, 300 ticks with one message due each: the timer must not
    walk every pending entry per tick (before: 300 x 50k entries, seconds of loop time)."""
    import time

    w = World(n=50_000)
    w.deliver(50_000)
    start = time.perf_counter()
    for i in range(300):
        seq = 1 + (i * 7919) % 50_000
        w.acks.nak(seq, 1_000_000)  # due again in 1 ms
        w.clock.advance(0.001)
        assert list(w.acks.rdq) == [seq]
        assert w.redeliver() == (seq, 2)
    elapsed = time.perf_counter() - start
    assert w.dues == 300
    # before: 15 million entry visits (tens of seconds); wide for a loaded machine
    assert elapsed < 5.0, f"{elapsed:.2f} s for 300 ticks"
    w.clock.advance(31)  # every ack wait ran out: all due, each tick's in stream order
    rdq = list(w.acks.rdq)
    assert sorted(rdq) == list(range(1, 50_001))
    assert rdq[:3] == [2, 3, 4]  # seq 1 was redelivered at 1 ms: due 1 ms after the rest
