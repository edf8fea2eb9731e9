"""Subjects the server keeps for itself, refused to every client (both servers).

nats-server refuses a publish whose reply subject it reserves (service-import
replies `_R_.`, JetStream acks `$JS.ACK.`, gateway replies `_GR_.`) whatever the
client's permissions: otherwise a client could make another client answer or ack
in a place it chose (a responder acking a consumer's message for the requester).
Publishing to `_GR_.` and `$NRG.` (outside the system account) and joining the
queue group `_sys_` are refused too. The connection stays open each time.
"""

from __future__ import annotations

import asyncio

import nats
import pytest
from raw_client import RawClient

from jetstream_testing.process import ServerProcess


@pytest.fixture
def raw(server: ServerProcess):  # type: ignore[no-untyped-def]
    clients: list[RawClient] = []

    def make() -> RawClient:
        client = RawClient(server.port)
        client.send(b'CONNECT {"verbose":false,"pedantic":false}\r\n')
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.mark.parametrize(
    "reply",
    [
        "_R_.",
        "_R_.abc.1",
        "$JS.ACK.S.C.1.1.1.1700000000000000000.0",
        "$JS.ACK.x",
        "_GR_.cluster.server.inbox",
    ],
)
def test_reserved_reply_is_refused(raw, reply: str) -> None:  # type: ignore[no-untyped-def]
    listener, publisher = raw(), raw()
    listener.send(b"SUB req 1\r\n")
    assert listener.until_pong() == []
    publisher.send(f"PUB req {reply} 2\r\nhi\r\n".encode())
    assert publisher.until_pong() == [
        f"-ERR 'Permissions Violation for Publish with Reply of \"{reply}\"'".encode()
    ]
    publisher.send(b"PUB req ok.reply 2\r\nhi\r\n")  # still connected, and heard
    assert publisher.until_pong() == []
    assert listener.until_pong() == [b"MSG req 1 ok.reply 2", b"hi"]


@pytest.mark.parametrize("reply", ["$JS.ACK.", "_GR_.", "_R", "$JS.ACKS.x", "R_.x", "_INBOX.x"])
def test_replies_near_the_reserved_prefixes_pass(raw, reply: str) -> None:  # type: ignore[no-untyped-def]
    listener, publisher = raw(), raw()
    listener.send(b"SUB req 1\r\n")
    assert listener.until_pong() == []
    publisher.send(f"PUB req {reply} 2\r\nhi\r\n".encode())
    assert publisher.until_pong() == []
    assert listener.until_pong() == [f"MSG req 1 {reply} 2".encode(), b"hi"]


@pytest.mark.parametrize("subject", ["_GR_.x.y", "$NRG.AE.group"])
def test_reserved_subjects_are_refused(raw, subject: str) -> None:  # type: ignore[no-untyped-def]
    listener, publisher = raw(), raw()
    listener.send(f"SUB {subject} 1\r\n".encode())
    assert listener.until_pong() == []
    publisher.send(f"PUB {subject} 2\r\nhi\r\n".encode())
    assert publisher.until_pong() == [f"-ERR 'Permissions Violation for Publish to \"{subject}\"'".encode()]
    assert listener.until_pong() == []


def test_system_queue_group_is_refused(raw) -> None:  # type: ignore[no-untyped-def]
    client = raw()
    client.send(b"SUB foo _sys_ 1\r\nSUB foo sys 2\r\n")
    assert client.until_pong() == [
        b"-ERR 'Permissions Violation for Subscription to \"foo\" using queue \"_sys_\"'"
    ]


async def test_a_client_cannot_make_a_responder_ack_for_it(server: ServerProcess) -> None:
    """The attack of issue 24: a requester sets another consumer's ack subject as
    its reply; the responder's answer would ack that consumer's message."""
    nc = await nats.connect(server.url)
    try:
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s"])
        await js.publish("s", b"one")
        psub = await js.pull_subscribe("s", durable="C")
        [msg] = await psub.fetch(1, timeout=5)
        assert msg.reply.startswith("$JS.ACK.S.C.")

        answered = asyncio.Event()

        async def respond(req: nats.aio.msg.Msg) -> None:
            await nc.publish(req.reply, b"")
            answered.set()

        await nc.subscribe("req", cb=respond)
        await nc.flush()
        attacker = RawClient(server.port)
        try:
            attacker.send(b'CONNECT {"verbose":false}\r\n')
            attacker.send(f"PUB req {msg.reply} 0\r\n\r\n".encode())
            assert attacker.until_pong() == [
                f"-ERR 'Permissions Violation for Publish with Reply of \"{msg.reply}\"'".encode()
            ]
        finally:
            attacker.close()
        await nc.flush()
        assert not answered.is_set()
        info = await js.consumer_info("S", "C")
        assert info.num_ack_pending == 1
    finally:
        await nc.close()
