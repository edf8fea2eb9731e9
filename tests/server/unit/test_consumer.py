"""Unit tests of the consumer state machine: a real Stream on a MemoryStore, a FakeClock,
and a host double that records what the consumer sends. No sockets, no sleeping."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from run_frames import decoded

from jetstream_server.core.clock import FakeClock
from jetstream_server.core.headers import parse_headers
from jetstream_server.core.router import MessageHandler, OutboundRun
from jetstream_server.jetstream.consumer.acks import parse_ack_subject
from jetstream_server.jetstream.consumer.config import ConsumerConfig
from jetstream_server.jetstream.consumer.consumer import RUN_BUDGET, Consumer
from jetstream_server.jetstream.consumer.push import (
    FC_CHUNK_MSGS,
    FC_MAX_PENDING_BYTES,
    PushDelivery,
)
from jetstream_server.jetstream.errors import ApiError
from jetstream_server.jetstream.stream import Stream
from jetstream_server.jetstream.stream_config import StreamConfig
from jetstream_server.store import StreamStore
from jetstream_server.store.memory import MemoryStore

NS = 1_000_000_000


@dataclass
class Sent:
    target: str
    subject: str
    reply: str | None
    headers: bytes | None
    payload: bytes

    @property
    def status(self) -> int | None:
        return parse_headers(self.headers).status if self.headers else None

    @property
    def stream_seq(self) -> int:
        ack = parse_ack_subject(self.reply or "")
        assert ack is not None
        return ack.stream_seq

    @property
    def ack(self) -> Any:
        return parse_ack_subject(self.reply or "")


@dataclass
class Host:
    clock: FakeClock
    account: str = "$G"
    domain: str = ""
    sent: list[Sent] = field(default_factory=list)
    deaf: set[str] = field(default_factory=set)
    subs: dict[int, tuple[str, MessageHandler]] = field(default_factory=dict)
    runs: list[int] = field(default_factory=list)  # the length of each run delivered

    def publish(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        self.sent.append(Sent(subject, subject, reply, headers, payload))

    def deliver(self, target: str, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        self.sent.append(Sent(target, subject, reply, headers, payload))

    def deliver_run(self, target: str, run: OutboundRun) -> None:
        self.runs.append(len(run))
        for subject, reply, headers, payload in decoded(run):
            self.sent.append(Sent(target, subject, reply, headers, payload))

    def has_interest(self, subject: str) -> bool:
        # nobody listens to advisories here (tests/server/integration/test_advisories.py)
        return subject not in self.deaf and not subject.startswith("$JS.EVENT.")

    def subscribe(self, subject: str, handler: MessageHandler) -> int:
        sid = len(self.subs) + 1
        self.subs[sid] = (subject, handler)
        return sid

    def unsubscribe(self, sid: int) -> None:
        self.subs.pop(sid, None)

    def take(self) -> list[Sent]:
        out, self.sent = self.sent, []
        return out


class World:
    def __init__(self, retention: str = "limits", store: StreamStore | None = None) -> None:
        self.clock = FakeClock()
        self.host = Host(self.clock)
        cfg = StreamConfig.from_json({"name": "S", "subjects": ["s.>"], "retention": retention, "storage": "memory"})
        self.stream = Stream(cfg, store if store is not None else MemoryStore(), self.clock)

    def publish(self, subject: str, data: bytes = b"x", headers: bytes | None = None) -> int:
        ack = self.stream.accept(subject, headers, data)
        assert ack.msg is not None, ack
        self.stream.deliver(ack.msg)
        return ack.seq

    def consumer(self, name: str = "C", **cfg: Any) -> Consumer:
        raw = {"durable_name": name, "ack_policy": "explicit", **cfg}
        config = ConsumerConfig.from_json(raw).with_defaults()
        config.validate(self.stream.config.retention)
        consumer = Consumer(self.host, self.stream, config, name=name)
        self.stream.add_consumer(name, consumer)
        return consumer

    def pull(self, consumer: Consumer, body: bytes, reply: str = "inbox") -> list[Sent]:
        consumer.process_pull(reply, body)
        return self.host.take()


def seqs(sent: list[Sent]) -> list[int]:
    return [s.stream_seq for s in sent if s.status is None]


def statuses(sent: list[Sent]) -> list[int | None]:
    return [s.status for s in sent]


# -- delivery and num_pending ----------------------------------------------------------
def test_num_pending_is_exact_and_incremental() -> None:
    w = World()
    for i in range(6):
        w.publish(f"s.{i % 2}")
    c = w.consumer(filter_subject="s.1")
    assert c.cursor.npc == 3
    out = w.pull(c, b'{"batch": 2}')
    assert [s.ack.num_pending for s in out] == [2, 1]
    assert [s.subject for s in out] == ["s.1", "s.1"] and {s.target for s in out} == {"inbox"}
    w.publish("s.1")
    w.publish("s.0")
    assert c.cursor.npc == 2
    out = w.pull(c, b'{"batch": 5, "no_wait": true}')
    assert seqs(out) == [6, 7] and statuses(out)[-1] == 404
    assert c.cursor.npc == 0 and c.info()["num_pending"] == 0


def test_no_wait_with_expires_ends_after_first_messages() -> None:
    w = World()
    c = w.consumer()
    assert w.pull(c, b'{"batch": 10, "no_wait": true, "expires": 5000000000}') == []
    w.publish("s.a")
    out = w.host.take()
    assert seqs(out) == [1] and statuses(out)[-1] == 404
    assert c.delivery.num_waiting == 0


def test_expiry_and_heartbeats_with_fake_clock() -> None:
    w = World()
    c = w.consumer()
    assert w.pull(c, b'{"batch": 3, "expires": 1000000000, "idle_heartbeat": 300000000}') == []
    w.clock.advance(0.35)
    hb = w.host.take()
    assert statuses(hb) == [100]
    assert parse_headers(hb[0].headers or b"").get("Nats-Last-Consumer") == "0"
    w.clock.advance(0.7)
    out = w.host.take()
    assert statuses(out) == [100, 100, 408]
    last = parse_headers(out[-1].headers or b"")
    assert last.get("Nats-Pending-Messages") == "3"
    assert w.clock.pending_timers <= 2  # nothing left for the expired request


def test_max_waiting_and_interest_loss() -> None:
    w = World()
    c = w.consumer(max_waiting=1)
    w.pull(c, b'{"batch": 1, "expires": 5000000000}', reply="gone")
    out = w.pull(c, b'{"batch": 1, "expires": 5000000000}', reply="second")
    assert statuses(out) == [409]
    w.host.deaf.add("gone")
    w.publish("s.a")
    assert w.host.take() == [] and c.delivery.num_waiting == 0
    out = w.pull(c, b"1", reply="live")
    assert seqs(out) == [1]


def test_max_bytes_gives_message_back() -> None:
    w = World()
    w.publish("s.a", b"y" * 200)
    c = w.consumer()
    out = w.pull(c, b'{"batch": 2, "max_bytes": 100}')
    assert statuses(out) == [409]
    assert c.cursor.sseq == 1 and c.cursor.npc == 1
    assert seqs(w.pull(c, b'{"batch": 1, "max_bytes": 1000}')) == [1]


def _wire(sent: Sent) -> int:
    """What a delivery counts against a pull's max_bytes (nats-server's count)."""
    return len(sent.subject.encode()) + len(sent.reply or "") + len(sent.headers or b"") + len(sent.payload)


def test_pulls_go_out_as_runs(make_store: Callable[..., StreamStore]) -> None:
    w = World(store=make_store())
    stamps = []
    for i in range(12):
        w.publish("s.b" if i % 3 else "s.a", b"m%d" % i, headers=b"NATS/1.0\r\nI: %d\r\n\r\n" % i if i % 4 == 0 else None)
        stamps.append(w.stream.store.load(i + 1).timestamp_ns)  # type: ignore[union-attr]
        w.clock.advance(0.001)
    c = w.consumer(filter_subject="s.b")
    out = w.pull(c, b'{"batch": 5}')
    assert w.host.runs == [5]
    assert seqs(out) == [2, 3, 5, 6, 8]
    assert [(s.ack.consumer_seq, s.ack.num_pending, s.ack.delivery_count) for s in out] == [
        (1, 7, 1), (2, 6, 1), (3, 5, 1), (4, 4, 1), (5, 3, 1)
    ]
    assert [s.ack.timestamp_ns for s in out] == [stamps[q - 1] for q in seqs(out)]
    assert out[2].headers == b"NATS/1.0\r\nI: 4\r\n\r\n" and out[2].payload == b"m4"
    assert out[3].headers is None and out[3].payload == b"m5"
    out = w.pull(c, b'{"batch": 10, "no_wait": true}')
    assert seqs(out) == [9, 11, 12] and statuses(out)[-1] == 404
    assert (c.cursor.sseq, c.cursor.npc, c.cursor.dseq, c.cursor.last_sseq) == (13, 0, 8, 12)
    assert sorted(c.acks.pending) == [2, 3, 5, 6, 8, 9, 11, 12]


def test_runs_within_max_ack_pending_after_redeliveries() -> None:
    w = World()
    for _ in range(10):
        w.publish("s.a")
    c = w.consumer(max_ack_pending=4)
    assert seqs(w.pull(c, b'{"batch": 10, "expires": 60000000000}')) == [1, 2, 3, 4]
    assert w.host.runs == [4]
    c.nak(2)
    c.ack(1)
    c.ack(3)
    # the redelivery went first (alone), then what each ack left room for
    out = w.host.take()
    assert [(s.stream_seq, s.ack.delivery_count) for s in out] == [(2, 2), (5, 1), (6, 1)]
    assert w.host.runs == [4, 1, 1]
    assert [s.ack.consumer_seq for s in out] == [5, 6, 7]
    c.ack(2)
    c.ack(4)
    c.ack(5)
    c.ack(6)
    out = w.host.take()  # the request's batch of 10 ends with the 10th delivery
    assert seqs(out) == [7, 8, 9] and w.host.runs[-3:] == [1, 1, 1]
    assert seqs(w.pull(c, b'{"batch": 10, "no_wait": true}')) == [10]


def test_max_bytes_run_ends_at_the_exact_byte(make_store: Callable[..., StreamStore]) -> None:
    w = World(store=make_store())
    for i in range(14):  # sequences and consumer sequences cross 9 -> 10
        w.publish("s.a", b"x" * (i + 1), headers=b"NATS/1.0\r\nK: v\r\n\r\n" if i % 2 else None)
    c = w.consumer()
    w.pull(c, b"1")

    def wire(seq: int, dseq: int) -> int:  # the delivery of `seq` as consumer sequence `dseq`
        msg = w.stream.store.load(seq)
        assert msg is not None
        reply = f"$JS.ACK.S.C.1.{seq}.{dseq}.{msg.timestamp_ns}.{14 - seq}"
        return len(msg.subject) + len(reply) + len(msg.headers or b"") + len(msg.data)

    sizes = [wire(seq, seq) for seq in range(2, 15)]
    for limit, expect in ((sum(sizes[:8]) + sizes[8] - 1, 8), (sum(sizes[8:11]), 3)):
        out = w.pull(c, b'{"batch": 20, "max_bytes": %d}' % limit)
        got = [s for s in out if s.status is None]
        assert len(got) == expect and statuses(out)[-1] == 409
        assert [_wire(s) for s in got] == sizes[:expect]
        hdr = parse_headers(out[-1].headers or b"")
        assert hdr.get("Nats-Pending-Bytes") == str(limit - sum(sizes[:expect]))
        assert hdr.get("Nats-Pending-Messages") == str(20 - expect)
        sizes = sizes[expect:]
    assert c.cursor.sseq == 13
    assert seqs(w.pull(c, b'{"batch": 20, "max_bytes": %d, "no_wait": true}' % sum(sizes))) == [13, 14]


# -- acks, floors, redelivery ----------------------------------------------------------
def test_ack_floor_moves_over_contiguous_acks() -> None:
    w = World()
    for _ in range(4):
        w.publish("s.a")
    c = w.consumer()
    w.pull(c, b"4")
    assert c.ack(2) and (c.acks.adflr, c.acks.asflr) == (0, 0)
    assert c.ack(1) and (c.acks.adflr, c.acks.asflr) == (2, 2)
    assert not c.ack(1)  # double ack
    c.term(4)
    assert (c.acks.adflr, c.acks.asflr) == (2, 2)
    c.ack(3)
    assert (c.acks.adflr, c.acks.asflr) == (4, 4) and not c.acks.pending


def test_redelivery_backoff_and_max_deliver() -> None:
    w = World()
    w.publish("s.a")
    c = w.consumer(backoff=[1 * NS, 3 * NS], max_deliver=3)
    w.pull(c, b"1")
    w.pull(c, b'{"batch": 5, "expires": 60000000000}')
    w.clock.advance(0.9)
    assert w.host.take() == []
    w.clock.advance(0.2)
    out = w.host.take()
    assert [(s.stream_seq, s.ack.delivery_count) for s in out] == [(1, 2)]
    w.clock.advance(2.8)
    assert w.host.take() == []
    w.clock.advance(0.3)
    assert [s.ack.delivery_count for s in w.host.take()] == [3]
    w.clock.advance(10)
    assert seqs(w.host.take()) == []
    assert c.acks.pending == {} and c.acks.dropped == {1} and c.acks.asflr == 0
    assert c.info()["num_redelivered"] == 1


def test_nak_delay_and_progress() -> None:
    w = World()
    w.publish("s.a")
    w.publish("s.b")
    c = w.consumer(ack_wait=10 * NS)
    w.pull(c, b"2")
    w.pull(c, b'{"batch": 5, "expires": 60000000000}')
    c.nak(1, 2 * NS)
    c.nak(2)
    assert seqs(w.host.take()) == [2]
    w.clock.advance(1.9)
    assert w.host.take() == []
    w.clock.advance(0.2)
    assert seqs(w.host.take()) == [1]
    w.clock.advance(9)
    c.progress(1)
    w.clock.advance(2)
    out = w.host.take()
    assert seqs(out) == [2]  # 2 (redelivered at 0 s) is due again; 1 got more time


def test_max_ack_pending_blocks_until_ack() -> None:
    w = World()
    for _ in range(4):
        w.publish("s.a")
    c = w.consumer(max_ack_pending=2)
    out = w.pull(c, b'{"batch": 4, "expires": 60000000000}')
    assert seqs(out) == [1, 2]
    c.ack(1)
    assert seqs(w.host.take()) == [3]


def test_ack_all_and_ack_none() -> None:
    w = World()
    for _ in range(3):
        w.publish("s.a")
    c = w.consumer(ack_policy="all")
    w.pull(c, b"3")
    c.ack(2)
    assert sorted(c.acks.pending) == [3] and c.acks.asflr == 2
    n = w.consumer("N", ack_policy="none")
    w.pull(n, b"2")
    assert n.acks.pending == {} and (n.acks.adflr, n.acks.asflr) == (2, 2)


def test_workqueue_and_interest_retention() -> None:
    w = World("workqueue")
    w.publish("s.a")
    w.publish("s.b")
    c = w.consumer()
    w.pull(c, b"2")
    c.ack(1)
    assert w.stream.store.state().msgs == 1
    i = World("interest")
    i.publish("s.a")  # nobody interested: dropped
    a = i.consumer("A")
    b = i.consumer("B", filter_subject="s.b")
    i.publish("s.a")
    i.publish("s.b")
    assert i.stream.store.state().msgs == 2
    i.pull(a, b"2")
    a.ack(2)
    a.ack(3)
    assert i.stream.store.state().msgs == 1
    assert b.wants(3, "s.b") and not a.wants(3, "s.b")
    i.pull(b, b"1")
    b.ack(3)
    assert i.stream.store.state().msgs == 0


# -- reset, purge, pause, inactivity --------------------------------------------------
def test_reset_semantics() -> None:
    w = World()
    for _ in range(10):
        w.publish("s.a")
    c = w.consumer()
    w.pull(c, b"4")
    c.ack(1)
    assert c.reset(0) == 2
    assert (c.cursor.dseq, c.cursor.sseq, c.acks.asflr, c.cursor.npc, c.acks.pending) == (0, 2, 1, 9, {})
    assert c.reset(7) == 7 and c.acks.asflr == 6 and c.cursor.npc == 4
    out = w.pull(c, b"1")
    assert [(s.stream_seq, s.ack.consumer_seq) for s in out] == [(7, 1)]
    last = w.consumer("L", deliver_policy="last")
    with pytest.raises(ApiError) as exc:
        last.reset(3)
    assert exc.value.err_code == 10204


def test_purge_moves_cursor_and_floor() -> None:
    w = World()
    for _ in range(5):
        w.publish("s.a")
    c = w.consumer()
    w.pull(c, b"2")
    w.stream.purge(None, 4, None)
    assert c.cursor.sseq == 4 and c.acks.asflr == 3 and c.acks.pending == {} and c.cursor.npc == 2


def test_pause_until_then_deliver() -> None:
    w = World()
    w.publish("s.a")
    c = w.consumer()
    c.pause(w.clock.now_ns() + 2 * NS)
    assert w.pull(c, b'{"batch": 1, "expires": 10000000000}') == []
    assert c.info()["paused"] is True
    w.clock.advance(2.1)
    assert seqs(w.host.take()) == [1]


def test_inactive_threshold_deletes_ephemeral() -> None:
    w = World()
    config = ConsumerConfig.from_json({"name": "E"}).with_defaults()
    c = Consumer(w.host, w.stream, config, name="E")
    w.stream.add_consumer("E", c)
    assert config.inactive_threshold_ns == 5 * NS
    w.clock.advance(3)
    c.process_pull("inbox", b'{"batch": 1, "expires": 1000000000}')
    w.clock.advance(4)  # active at 3 s, request expired at 4 s
    assert "E" in w.stream.consumers
    w.clock.advance(5)
    assert "E" not in w.stream.consumers and c.closed


def test_last_per_subject_and_replay_original() -> None:
    w = World()
    for subj in ("s.a", "s.b", "s.a", "s.c", "s.b"):
        w.publish(subj)
        w.clock.advance(1)
    c = w.consumer("LPS", deliver_policy="last_per_subject", filter_subject="s.>")
    out = w.pull(c, b'{"batch": 5, "no_wait": true}')
    assert seqs(out) == [3, 4, 5] and [s.ack.num_pending for s in out[:3]] == [2, 1, 0]
    r = w.consumer("R", replay_policy="original")
    w.pull(r, b'{"batch": 5, "expires": 60000000000}')
    assert seqs(w.host.take()) == []  # the first went out with the pull
    w.clock.advance(1.01)
    assert seqs(w.host.take()) == [2]


# -- push ----------------------------------------------------------------------------
def test_push_flow_control_stalls_and_resumes() -> None:
    w = World()
    payload = b"p" * 65536
    n = (FC_MAX_PENDING_BYTES // len(payload)) + 10
    for _ in range(n):
        w.publish("s.a", payload)
    c = w.consumer("P", deliver_subject="d", flow_control=True, idle_heartbeat=NS, ack_policy="none")
    c.kick()
    out = w.host.take()
    delivered = [s for s in out if s.status is None]
    fcs = [s for s in out if s.status == 100]
    assert 0 < len(delivered) < n and fcs and all(f.reply for f in fcs)
    assert isinstance(c.delivery, PushDelivery) and c.delivery.stalled
    w.clock.advance(1.1)
    hb = [s for s in w.host.take() if s.status == 100]
    assert parse_headers(hb[-1].headers or b"").get("Nats-Consumer-Stalled") == fcs[-1].reply
    (_, handler), = w.host.subs.values()
    handler(fcs[-1].reply or "", None, None, b"")
    rest = [s for s in w.host.take() if s.status is None]
    assert len(delivered) + len(rest) == n
    assert [s.ack.consumer_seq for s in delivered + rest] == list(range(1, n + 1))


def test_push_runs_end_at_flow_control_chunks() -> None:
    w = World()
    total = RUN_BUDGET + 500
    for _ in range(total):
        w.publish("s.a", b"p" * 100)
    c = w.consumer("P", deliver_subject="d", flow_control=True, idle_heartbeat=NS, ack_policy="none")
    c.kick()
    w.clock.advance(0)  # the rest of the backlog on the next turn
    out = w.host.take()
    assert [s.ack.consumer_seq for s in out if s.status is None] == list(range(1, total + 1))
    since_fc = 0
    for sent in out:
        if sent.status == 100:
            assert sent.reply and since_fc  # a flow control request after deliveries
            since_fc = 0
        else:
            since_fc += 1
            assert since_fc <= FC_CHUNK_MSGS
    assert max(w.host.runs) <= FC_CHUNK_MSGS and sum(w.host.runs) == total


def test_push_waits_for_interest() -> None:
    w = World()
    w.host.deaf.add("later")
    w.publish("s.a")
    c = w.consumer("Q", deliver_subject="later", ack_policy="none")
    c.kick()
    assert w.host.take() == []
    w.host.deaf.clear()
    w.clock.advance(0.1)
    out = w.host.take()
    assert seqs(out) == [1] and out[0].target == "later" and out[0].subject == "s.a"
    assert c.info()["push_bound"] is True


def test_headers_only_frame() -> None:
    w = World()
    w.publish("s.a", b"12345", headers=b"NATS/1.0\r\nX: y\r\n\r\n")
    c = w.consumer(headers_only=True)
    (msg,) = w.pull(c, b"1")
    h = parse_headers(msg.headers or b"")
    assert msg.payload == b"" and h.get("X") == "y" and h.get("Nats-Msg-Size") == "5"


def test_large_pull_is_spread_over_loop_turns() -> None:
    w = World()
    total = RUN_BUDGET * 2 + 5
    for _ in range(total):
        w.publish("s.a")
    c = w.consumer(ack_policy="none")
    out = w.pull(c, b'{"batch": 100000, "no_wait": true}')
    assert len(out) == RUN_BUDGET and statuses(out)[-1] is None  # no 404 yet
    w.clock.advance(0)
    out += w.host.take()
    w.clock.advance(0)
    out += w.host.take()
    assert seqs(out) == list(range(1, total + 1))
    assert statuses(out)[-1] == 404


def test_push_rate_limit_paces_delivery() -> None:
    w = World()
    for _ in range(5):
        w.publish("s.a", b"r" * 1000)
    c = w.consumer("RL", deliver_subject="d", ack_policy="none", rate_limit_bps=8 * 2000)
    c.kick()
    assert len(w.host.take()) == 2  # a one-second burst of 2000 bytes
    w.clock.advance(0.4)
    assert w.host.take() == []
    w.clock.advance(0.15)
    assert len(w.host.take()) == 1
    w.clock.advance(1.0)
    assert len(w.host.take()) == 2


def test_num_pending_recounted_after_silent_removals() -> None:
    w = World()
    for _ in range(5):
        w.publish("s.a")
    c = w.consumer()
    w.stream.delete_message(4, erase=False)  # the stream does not tell consumers
    assert c.info()["num_pending"] == 4
    out = w.pull(c, b'{"batch": 10, "no_wait": true}')
    assert [s.ack.num_pending for s in out if s.status is None] == [3, 2, 1, 0]


# -- pull request bounds (issue 12: the event loop's budget) -------------------------------
@pytest.mark.parametrize(
    ("body", "description"),
    [
        (b'{"batch": 1, "idle_heartbeat": 1000000}', "heartbeat value too large"),
        (b'{"batch": 1, "idle_heartbeat": 600, "expires": 1000}', "heartbeat value too large"),
        (
            b'{"expires": 1000000000000000000000000000000}',
            "json: cannot unmarshal number 1000000000000000000000000000000 into Go struct field "
            ".expires of type time.Duration",
        ),
        (b'{"expires": 1e400}', "json: cannot unmarshal number 1e400 into Go struct field .expires of type time.Duration"),
        (b'{"batch": 2.5}', "json: cannot unmarshal number 2.5 into Go struct field .batch of type int"),
        (b'{"batch": "3"}', "json: cannot unmarshal string into Go struct field .batch of type int"),
        (b'{"no_wait": 1}', "json: cannot unmarshal number into Go struct field .no_wait of type bool"),
    ],
)
def test_bad_pull_requests_get_400_and_leave_no_timer(body: bytes, description: str) -> None:
    w = World()
    c = w.consumer()
    timers = w.clock.pending_timers
    out = w.pull(c, body)
    assert statuses(out) == [400]
    assert parse_headers(out[0].headers or b"").description == f"Bad Request - {description}"
    assert c.delivery.num_waiting == 0 and w.clock.pending_timers == timers


def test_heartbeat_stops_when_the_client_leaves() -> None:
    w = World()
    c = w.consumer()
    timers = w.clock.pending_timers
    w.pull(c, b'{"batch": 1, "expires": 3600000000000, "idle_heartbeat": 1000000}', reply="gone")
    w.clock.advance(0.0015)
    assert statuses(w.host.take()) == [100]
    w.host.deaf.add("gone")
    w.clock.advance(0.0015)
    assert w.host.take() == [] and c.delivery.num_waiting == 0
    assert w.clock.pending_timers == timers  # neither the heartbeat nor the expiry is left


def test_non_numeric_pull_body_is_a_batch_of_one() -> None:
    w = World()
    w.publish("s.a")
    w.publish("s.b")
    c = w.consumer()
    assert seqs(w.pull(c, b"many")) == [1]
    assert seqs(w.pull(c, b"99999999999999999999999")) == [2]


def test_full_queue_drops_requests_whose_client_left() -> None:
    w = World()
    c = w.consumer(max_waiting=2)
    w.pull(c, b'{"batch": 1, "expires": 60000000000}', reply="gone1")
    w.pull(c, b'{"batch": 1, "expires": 60000000000}', reply="gone2")
    w.host.deaf.update({"gone1", "gone2"})
    assert w.pull(c, b'{"batch": 1, "expires": 60000000000}', reply="live") == []
    assert c.delivery.num_waiting == 1  # the two without interest made room
    w.publish("s.a")
    assert [s.target for s in w.host.take()] == ["live"]
