"""The publish pipeline (jetstream/publish.py) on its own: held acks and their
`on_persisted` callback, a failed group commit, the order of answers, a deleted
stream's held acks, and atomic batch commits settled message by message.

Real streams over memory stores, the router double, a FakeClock (its
`run_off_loop` runs the fsync jobs inline, so a flush completes inside
`advance(0)`).
"""

from __future__ import annotations

from router_double import RouterDouble

from jetstream_server.core.clock import FakeClock
from jetstream_server.core.headers import encode_headers
from jetstream_server.jetstream.publish import PublishPipeline
from jetstream_server.jetstream.settings import EngineSettings
from jetstream_server.jetstream.stream import PubAck, Stream
from jetstream_server.jetstream.stream_config import StreamConfig
from jetstream_server.store.memory import MemoryStore


class World:
    def __init__(self, *, sync_always: bool = True) -> None:
        self.clock = FakeClock()
        self.router = RouterDouble()
        self.streams: dict[str, Stream] = {}
        self.pipeline = PublishPipeline(EngineSettings(sync_always=sync_always), self.clock, self.streams)
        self.pipeline.start(self.router)
        self.acks = self.router.inbox("acks")
        self.persisted: list[tuple[str, int, int | None]] = []  # (label, seq, err_code)

    def stream(self, name: str = "S", **config: object) -> Stream:
        cfg = StreamConfig.from_json({"name": name, "subjects": [name.lower() + ".>"], **config})
        stream = self.streams[name] = Stream(cfg, MemoryStore(), self.clock)
        return stream

    def recorder(self, label: str):  # type: ignore[no-untyped-def]
        def on_persisted(ack: PubAck) -> None:
            self.persisted.append((label, ack.seq, ack.error.err_code if ack.error else None))

        return on_persisted

    def answers(self) -> list[object]:
        return [m.json() for m in self.acks.take()]


def test_on_persisted_comes_after_the_group_commit_instead_of_a_pub_ack() -> None:
    world = World()
    stream = world.stream()
    ack = world.pipeline.ingest(stream, "s.1", None, None, b"x", on_persisted=world.recorder("a"))
    assert ack.seq == 1 and world.persisted == []  # held for the fsync
    world.pipeline.ingest(stream, "s.1", "acks", None, b"y")
    world.clock.advance(0)
    assert world.persisted == [("a", 1, None)]
    assert world.answers() == [{"stream": "S", "seq": 2}]  # the batch message got no pub ack


def test_a_refused_message_never_calls_on_persisted() -> None:
    world = World(sync_always=False)
    stream = world.stream()
    refused = world.pipeline.ingest(
        stream, "s.1", None, encode_headers({"Nats-Expected-Stream": "X"}), b"x",
        on_persisted=world.recorder("r"),
    )
    assert refused.error is not None and refused.error.err_code == 10060
    world.pipeline.ingest(stream, "s.1", None, None, b"y", on_persisted=world.recorder("ok"))
    assert world.persisted == [("ok", 1, None)]  # without sync_always: at once
    assert world.answers() == []


def test_a_failed_sync_answers_its_streams_held_acks_with_an_error_in_order() -> None:
    world = World()
    bad, good = world.stream("B"), world.stream("G")

    def broken_sync() -> None:
        raise OSError(5, "I/O error")

    bad.store.sync = broken_sync  # type: ignore[method-assign]
    world.pipeline.ingest(bad, "b.1", None, None, b"1", on_persisted=world.recorder("batch"))
    world.pipeline.ingest(good, "g.1", "acks", None, b"2")
    # refused while a group waits: held too, so it cannot overtake the acks before it
    world.pipeline.ingest(good, "g.1", "acks", encode_headers({"Nats-Expected-Stream": "X"}), b"")
    world.pipeline.ingest(bad, "b.1", "acks", None, b"3")
    assert world.answers() == []
    world.clock.advance(0)
    assert world.persisted == [("batch", 0, 10077)]
    answers = world.answers()
    assert answers[0] == {"stream": "G", "seq": 1}
    assert [a["error"]["err_code"] for a in answers[1:]] == [10060, 10077]  # type: ignore[index]


def test_a_deleted_streams_held_acks_are_dropped() -> None:
    world = World()
    gone, kept = world.stream("D"), world.stream("K")
    world.pipeline.ingest(gone, "d.1", "acks", None, b"1", on_persisted=world.recorder("d"))
    world.pipeline.ingest(kept, "k.1", "acks", None, b"2")
    world.pipeline.drop_stream(gone)
    world.clock.advance(0)
    assert world.answers() == [{"stream": "K", "seq": 1}] and world.persisted == []


def test_close_answers_what_is_held_without_waiting_for_a_timer() -> None:
    world = World()
    stream = world.stream()
    world.pipeline.ingest(stream, "s.1", "acks", None, b"1")
    world.pipeline.close()
    assert world.answers() == [{"stream": "S", "seq": 1}]
    assert world.clock.pending_timers == 0


def test_every_message_of_an_atomic_commit_is_republished_before_the_batch_ack() -> None:
    """Each stored message is settled in order: its republish, then (the last
    only) the batch's pub ack; with or without the group commit alike."""
    from jetstream_server.jetstream.atomic_batch import AtomicBatches

    for sync_always in (False, True):
        world = World(sync_always=sync_always)
        stream = world.stream("A", allow_atomic=True, republish={"src": ">", "dest": "rp.>"})
        batches = AtomicBatches(world.clock, world.pipeline)
        republished = world.router.inbox("rp.>")
        for seq, commit in ((1, None), (2, None), (3, "1")):
            headers = {"Nats-Batch-Id": "b", "Nats-Batch-Sequence": str(seq)}
            if commit:
                headers["Nats-Batch-Commit"] = commit
            batches.publish(stream, "a.x", "acks", encode_headers(headers), b"%d" % seq)
        world.clock.advance(0)
        assert [m.payload for m in republished.messages] == [b"1", b"2", b"3"], sync_always
        # the staged messages get an empty ack each, the commit the batch's pub ack
        assert [m.payload for m in world.acks.take()] == [
            b"", b"", b'{"stream":"A","seq":3,"batch":"b","count":3}']
