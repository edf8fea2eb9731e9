"""The broker's routing (core/routing.py), sans-IO: clients are `Subscriber` doubles.

Covers the invariants of the module docstring: fan-out and one member per
queue group, clients before internal handlers, auto-unsubscribe, echo
suppression, the no-responders status, and routing by one subject while
presenting another (`publish_as`), runs (`publish_run`): whole to a single
client subscription, message by message to anything else.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest
from run_frames import decoded

from jetstream_server.core.router import OutboundRun
from jetstream_server.core.routing import NO_RESPONDERS_HEADERS, Broker, MessageList, Subscription

Delivery = tuple[str, bytes, bytes | None, bytes | None, bytes]


@dataclass(eq=False)
class Client:
    """A `Subscriber` double: records what the broker hands it."""

    cid: int
    echo: bool = True
    headers: bool = True
    no_responders: bool = False
    got: list[Delivery] = field(default_factory=list)
    subs: dict[str, Subscription] = field(default_factory=dict)
    runs: list[int] = field(default_factory=list)  # the length of each run taken whole

    def deliver(
        self,
        sub: Subscription,
        subject: bytes,
        reply: bytes | None,
        headers: bytes | None,
        payload: bytes,
    ) -> None:
        self.got.append((sub.sid, subject, reply, headers, payload))

    def deliver_run(self, sub: Subscription, run: OutboundRun) -> None:
        self.runs.append(len(run))
        for subject, reply, headers, payload in decoded(run, headers=self.headers):
            self.got.append((
                sub.sid,
                subject.encode(),
                reply.encode() if reply else None,
                headers,
                payload,
            ))

    def forget_sub(self, sub: Subscription) -> None:
        if self.subs.get(sub.sid) is sub:
            del self.subs[sub.sid]

    def sub(self, broker: Broker, subject: str, sid: str, queue: str | None = None) -> Subscription:
        self.subs[sid] = broker.add_client_sub(self, subject, queue, sid)
        return self.subs[sid]


def test_broker_without_sockets() -> None:
    broker = Broker()
    got: list[tuple[str, bytes]] = []
    sid = broker.subscribe("a.>", lambda s, r, h, p: got.append((s, p)))
    broker.publish("a.b", None, None, b"1")
    broker.publish("b.c", None, None, b"2")
    assert got == [("a.b", b"1")]
    assert broker.has_interest("a.x.y") and not broker.has_interest("a")
    broker.unsubscribe(sid)
    broker.publish("a.b", None, None, b"3")
    assert got == [("a.b", b"1")]
    assert broker.num_subscriptions == 0


def test_faulty_handler_does_not_break_others(caplog: pytest.LogCaptureFixture) -> None:
    broker = Broker()
    got: list[bytes] = []

    def bad(s: str, r: str | None, h: bytes | None, p: bytes) -> None:
        raise RuntimeError("boom")

    broker.subscribe("x", bad)
    broker.subscribe("x", lambda s, r, h, p: got.append(p))
    broker.publish("x", None, None, b"ok")
    assert got == [b"ok"]
    assert "boom" in caplog.text


def test_fan_out_to_clients_with_reply_and_headers() -> None:
    broker = Broker()
    a, b = Client(1), Client(2)
    a.sub(broker, "orders.*", "1")
    a.sub(broker, "orders.>", "2")
    b.sub(broker, "orders.new", "9")
    assert broker.route("orders.new", "r.1", b"NATS/1.0\r\n\r\n", b"x", None) == 3
    assert sorted(a.got) == [
        ("1", b"orders.new", b"r.1", b"NATS/1.0\r\n\r\n", b"x"),
        ("2", b"orders.new", b"r.1", b"NATS/1.0\r\n\r\n", b"x"),
    ]
    assert b.got == [("9", b"orders.new", b"r.1", b"NATS/1.0\r\n\r\n", b"x")]
    assert broker.route("other", None, None, b"y", None) == 0


def test_one_member_per_queue_group() -> None:
    broker = Broker()
    workers = [Client(i) for i in range(3)]
    for w in workers:
        w.sub(broker, "jobs", "1", queue="w")
    internal: list[bytes] = []
    broker.subscribe("jobs", lambda s, r, h, p: internal.append(p), queue="w")
    audit = Client(9)
    audit.sub(broker, "jobs", "1", queue="audit")
    plain = Client(10)
    plain.sub(broker, "jobs", "1")
    for i in range(400):
        assert broker.route("jobs", None, None, str(i).encode(), None) == 3
    counts = Counter({w.cid: len(w.got) for w in workers})
    assert sum(counts.values()) + len(internal) == 400
    assert all(n > 0 for n in counts.values()) and internal  # random pick reaches everyone
    assert len(audit.got) == 400 and len(plain.got) == 400


def test_clients_before_internal_handlers() -> None:
    broker = Broker()
    client = Client(1)
    client.sub(broker, ">", "1")

    def republish(s: str, r: str | None, h: bytes | None, p: bytes) -> None:
        broker.publish("echo." + s, None, None, p)

    broker.subscribe("in", republish)
    broker.publish("in", None, None, b"m")
    assert [d[1] for d in client.got] == [b"in", b"echo.in"]


def test_auto_unsubscribe_after_max() -> None:
    broker = Broker()
    client = Client(1)
    sub = client.sub(broker, "a", "1")
    sub.max_msgs = 2
    for _ in range(3):
        broker.route("a", None, None, b"x", None)
    assert len(client.got) == 2
    assert sub.closed and client.subs == {}
    assert broker.num_subscriptions == 0


def test_queue_member_that_is_done_is_not_picked_again() -> None:
    broker = Broker()
    once, always = Client(1), Client(2)
    once.sub(broker, "q", "1", queue="g").max_msgs = 1
    always.sub(broker, "q", "1", queue="g")
    for _ in range(50):
        assert broker.route("q", None, None, b"x", None) == 1
    assert len(once.got) == 1 and len(always.got) == 49


def test_echo_suppression() -> None:
    broker = Broker()
    quiet, loud = Client(1, echo=False), Client(2)
    quiet.sub(broker, "e", "1")
    loud.sub(broker, "e", "1")
    quiet.sub(broker, "solo", "2")
    broker.route("e", None, None, b"from quiet", quiet)
    broker.route("solo", None, None, b"from quiet", quiet)
    broker.route("e", None, None, b"from loud", loud)
    assert [d[4] for d in quiet.got] == [b"from loud"]
    assert [d[4] for d in loud.got] == [b"from quiet", b"from loud"]
    # queue groups honour it too
    broker2 = Broker()
    only = Client(3, echo=False)
    only.sub(broker2, "w", "1", queue="g")
    assert broker2.route("w", None, None, b"x", only) == 0


@pytest.mark.parametrize(
    ("no_responders", "headers", "reply", "answered"),
    [
        (True, True, "_INBOX.1", True),
        (True, False, "_INBOX.1", False),
        (False, True, "_INBOX.1", False),
        (True, True, None, False),
    ],
)
def test_no_responders(no_responders: bool, headers: bool, reply: str | None, answered: bool) -> None:
    broker = Broker()
    client = Client(1, headers=headers, no_responders=no_responders)
    client.sub(broker, "_INBOX.*", "5")
    assert broker.route("nobody", reply, None, b"req", client) == 0
    expected = [("5", b"_INBOX.1", None, NO_RESPONDERS_HEADERS, b"")] if answered else []
    assert client.got == expected


def test_internal_interest_is_interest() -> None:
    broker = Broker()
    client = Client(1, no_responders=True)
    client.sub(broker, "_INBOX.*", "5")
    served: list[bytes] = []
    broker.subscribe("svc", lambda s, r, h, p: served.append(p))
    assert broker.route("svc", "_INBOX.1", None, b"req", client) == 1
    assert served == [b"req"] and client.got == []


def test_publish_as_routes_by_target_and_shows_subject() -> None:
    broker = Broker()
    client = Client(1)
    client.sub(broker, "deliver.here", "3")
    broker.publish_as("deliver.here", "orders.new", "$JS.ACK.x", b"NATS/1.0\r\n\r\n", b"m")
    assert client.got == [("3", b"orders.new", b"$JS.ACK.x", b"NATS/1.0\r\n\r\n", b"m")]


def test_removed_subscription_gets_nothing() -> None:
    broker = Broker()
    client = Client(1)
    sub = client.sub(broker, "a", "1")
    broker.remove(sub)
    broker.remove(sub)  # twice is harmless
    assert broker.route("a", None, None, b"x", None) == 0
    assert client.got == [] and client.subs == {}


def _three() -> MessageList:
    run = MessageList()
    run.add("orders.a", "$JS.ACK.1", None, b"one")
    run.add("orders.b", None, b"NATS/1.0\r\nK: v\r\n\r\n", memoryview(b"xtwox")[1:4])
    run.add("orders.a", "$JS.ACK.3", None, b"")
    return run


EXPECTED = [
    ("3", b"orders.a", b"$JS.ACK.1", None, b"one"),
    ("3", b"orders.b", None, b"NATS/1.0\r\nK: v\r\n\r\n", b"two"),
    ("3", b"orders.a", b"$JS.ACK.3", None, b""),
]


def test_publish_run_goes_whole_to_a_single_client() -> None:
    broker = Broker()
    client = Client(1)
    client.sub(broker, "deliver.*", "3")
    broker.publish_run("deliver.x", _three())
    assert client.runs == [3] and client.got == EXPECTED
    no_headers = Client(2, headers=False)
    no_headers.sub(broker, "plain", "3")
    broker.publish_run("plain", _three())
    assert no_headers.got[1] == ("3", b"orders.b", None, None, b"two")


def test_publish_run_one_by_one_to_anything_else() -> None:
    broker = Broker()
    a = Client(1)
    a.sub(broker, "d", "3")
    internal: list[tuple[str, str | None, bytes]] = []
    broker.subscribe("d", lambda s, r, h, p: internal.append((s, r, p)))
    broker.publish_run("d", _three())
    # a client and an internal handler: each message is routed on its own
    assert a.runs == [] and a.got == EXPECTED
    assert internal == [("orders.a", "$JS.ACK.1", b"one"), ("orders.b", None, b"two"),
                        ("orders.a", "$JS.ACK.3", b"")]
    assert all(type(p) is bytes for _, _, p in internal)  # handlers never see a view
    group = Broker()
    members = [Client(i) for i in range(3)]
    for member in members:
        member.sub(group, "q", "3", queue="g")
    group.publish_run("q", _three())
    assert sorted(d for m in members for d in m.got) == sorted(EXPECTED)
    assert not any(m.runs for m in members)


def test_publish_run_counts_towards_auto_unsubscribe() -> None:
    broker = Broker()
    client = Client(1)
    sub = client.sub(broker, "d", "3")
    sub.max_msgs = 2
    broker.publish_run("d", _three())
    assert client.got == EXPECTED[:2] and sub.closed and broker.num_subscriptions == 0
    broker.publish_run("nobody", _three())  # no interest: nothing, no error
