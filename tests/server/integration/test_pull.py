"""Pull consumers (`CONSUMER.MSG.NEXT`): batches, statuses, no_wait, expires, max_bytes,
idle heartbeats, max_waiting, deleted consumers — bundled server and real nats-server."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import nats.errors
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

pytestmark = pytest.mark.asyncio


async def seed(js: JetStreamContext, n: int = 5, **kw: Any) -> None:
    await js.add_stream(name="S", subjects=["s.>"], **kw)
    for i in range(n):
        await js.publish(f"s.{i % 3}", b"x" * (10 * (i + 1)))


async def create(nc: NATS, name: str, **cfg: Any) -> dict[str, Any]:
    body = {"stream_name": "S", "config": {"durable_name": name, "ack_policy": "explicit", **cfg}}
    msg = await nc.request(f"$JS.API.CONSUMER.CREATE.S.{name}", json.dumps(body).encode(), timeout=2)
    return json.loads(msg.data)  # type: ignore[no-any-return]


async def info(nc: NATS, name: str) -> dict[str, Any]:
    msg = await nc.request(f"$JS.API.CONSUMER.INFO.S.{name}", b"", timeout=2)
    return json.loads(msg.data)  # type: ignore[no-any-return]


class Puller:
    """Sends raw pull requests and collects what comes back on the inbox."""

    def __init__(self, nc: NATS) -> None:
        self.nc = nc

    async def pull(
        self, name: str, body: Any, *, until_status: bool = True, timeout: float = 2.0, count: int | None = None
    ) -> list[Msg]:
        inbox = self.nc.new_inbox()
        sub = await self.nc.subscribe(inbox)
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        await self.nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.S.{name}", payload, reply=inbox)
        out: list[Msg] = []
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                try:
                    msg = await sub.next_msg(timeout=deadline - time.monotonic())
                except Exception:
                    break
                out.append(msg)
                st = status(msg)
                if until_status and st is not None and st != "100":
                    break
                if count is not None and len(out) >= count:
                    break
        finally:
            await sub.unsubscribe()
        return out


async def waiting_requests(nc: NATS, name: str, want: int, within: float = 5.0) -> int:
    """`num_waiting` once it reaches `want`, or its last value after `within`
    seconds: nats-server queues a pull request asynchronously, after the flush."""
    deadline = time.monotonic() + within
    while True:
        got = int((await info(nc, name))["num_waiting"])
        if got >= want or time.monotonic() > deadline:
            return got
        await asyncio.sleep(0.02)


def status(msg: Msg) -> str | None:
    return (msg.headers or {}).get("Status")


def describe(msgs: list[Msg]) -> list[str]:
    return [f"{status(m)} {(m.headers or {}).get('Description')}" if status(m) else m.subject for m in msgs]


async def test_fetch_with_acks_keeps_subjects_and_pending(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 10)
    sub = await js.pull_subscribe("s.>", "C")
    msgs = await sub.fetch(4)
    assert [m.subject for m in msgs] == ["s.0", "s.1", "s.2", "s.0"]
    assert [m.metadata.num_pending for m in msgs] == [9, 8, 7, 6]
    assert [m.metadata.sequence.consumer for m in msgs] == [1, 2, 3, 4]
    for m in msgs:
        await m.ack_sync()
    r = await info(nc, "C")
    assert r["ack_floor"]["stream_seq"] == 4 and r["num_ack_pending"] == 0 and r["num_pending"] == 6
    rest = await sub.fetch(100, timeout=1)
    assert len(rest) == 6 and rest[-1].metadata.num_pending == 0


async def test_body_forms(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 5)
    await create(nc, "A")
    p = Puller(nc)
    got = await p.pull("A", b"", until_status=False, count=1)
    assert [m.subject for m in got] == ["s.0"]
    got = await p.pull("A", b"2", until_status=False, count=2)
    assert [m.subject for m in got] == ["s.1", "s.2"]
    got = await p.pull("A", {"batch": 5, "no_wait": True})
    assert describe(got) == ["s.0", "s.1", "404 No Messages"]
    got = await p.pull("A", {"batch": 5, "no_wait": True})
    assert describe(got) == ["404 No Messages"]


async def test_expires_request_timeout_with_pending_headers(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 0)
    await create(nc, "B")
    got = await Puller(nc).pull("B", {"batch": 10, "expires": 200_000_000, "max_bytes": 5000})
    assert describe(got) == ["408 Request Timeout"]
    assert got[0].headers is not None
    assert got[0].headers["Nats-Pending-Messages"] == "10"
    assert got[0].headers["Nats-Pending-Bytes"] == "5000"


async def test_no_wait_with_expires_returns_when_messages_arrive(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 0)
    await create(nc, "N")
    p = Puller(nc)
    task = asyncio.create_task(p.pull("N", {"batch": 10, "expires": 30_000_000_000, "no_wait": True}, timeout=25))
    assert await waiting_requests(nc, "N", 1) == 1  # the request waits in the server
    t0 = time.monotonic()
    await js.publish("s.1", b"late")
    got = await task
    assert describe(got) == ["s.1", "404 No Messages"]
    assert time.monotonic() - t0 < 15  # not at the expiry (30 s): wide enough for a loaded machine


async def test_max_bytes_exceeded(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 3)
    await create(nc, "M")
    got = await Puller(nc).pull("M", {"batch": 3, "max_bytes": 30})
    assert describe(got) == ["409 Message Size Exceeds MaxBytes"]
    assert got[0].headers is not None and got[0].headers["Nats-Pending-Messages"] == "3"
    # nothing was consumed by the refused request
    got = await Puller(nc).pull("M", {"batch": 1, "max_bytes": 10_000}, until_status=False, count=1)
    assert [m.metadata.sequence.stream for m in got] == [1]


async def test_idle_heartbeat_and_bad_heartbeat(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 1)
    await create(nc, "H")
    p = Puller(nc)
    await p.pull("H", b"1", until_status=False, count=1)
    got = await p.pull("H", {"batch": 2, "expires": 700_000_000, "idle_heartbeat": 200_000_000})
    kinds = describe(got)
    assert kinds[-1] == "408 Request Timeout"
    assert 2 <= kinds.count("100 Idle Heartbeat") <= 4
    hb = got[0].headers or {}
    assert hb["Nats-Last-Consumer"] == "1" and hb["Nats-Last-Stream"] == "1"
    got = await p.pull("H", {"batch": 2, "expires": 100_000_000, "idle_heartbeat": 200_000_000})
    assert status(got[0]) == "400"


async def test_max_waiting_and_consumer_deleted(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 0)
    await create(nc, "W", max_waiting=1)
    inbox = nc.new_inbox()
    first = await nc.subscribe(inbox)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.W", b'{"batch": 10, "expires": 5000000000}', reply=inbox)
    await nc.flush()
    assert await waiting_requests(nc, "W", 1) == 1
    got = await Puller(nc).pull("W", {"batch": 1, "expires": 1_000_000_000})
    assert describe(got) == ["409 Exceeded MaxWaiting"]
    await nc.request("$JS.API.CONSUMER.DELETE.S.W", b"", timeout=2)
    msg = await first.next_msg(timeout=2)
    assert status(msg) == "409" and (msg.headers or {}).get("Description") == "Consumer Deleted"


async def test_max_ack_pending_blocks_delivery(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 5)
    await create(nc, "P", max_ack_pending=2)
    got = await Puller(nc).pull("P", {"batch": 5, "expires": 300_000_000})
    assert describe(got) == ["s.0", "s.1", "408 Request Timeout"]
    r = await info(nc, "P")
    assert r["num_ack_pending"] == 2 and r["num_pending"] == 3
    await nc.request(got[0].reply, b"+ACK", timeout=2)
    got = await Puller(nc).pull("P", {"batch": 5, "expires": 300_000_000})
    assert describe(got) == ["s.2", "408 Request Timeout"]


async def test_pull_request_dropped_when_inbox_gone(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 0)
    await create(nc, "G")
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.G", b'{"batch": 1, "expires": 5000000000}', reply=inbox)
    await nc.flush()
    await sub.unsubscribe()
    await nc.flush()
    await js.publish("s.1", b"one")
    got = await Puller(nc).pull("G", {"batch": 1, "expires": 1_000_000_000}, count=1)
    # the message went to the live request, not the abandoned one
    assert describe(got) == ["s.1"]


async def test_filter_subjects_and_deliver_policies(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 9)
    p = Puller(nc)

    async def seqs(name: str, **cfg: Any) -> list[int]:
        r = await create(nc, name, **cfg)
        assert "error" not in r, r
        got = await p.pull(name, {"batch": 20, "no_wait": True})
        return [m.metadata.sequence.stream for m in got if status(m) is None]

    assert await seqs("F1", filter_subject="s.1") == [2, 5, 8]
    assert await seqs("F2", filter_subjects=["s.1", "s.2"]) == [2, 3, 5, 6, 8, 9]
    assert await seqs("L", deliver_policy="last") == [9]
    assert await seqs("LF", deliver_policy="last", filter_subject="s.0") == [7]
    assert await seqs("NEW", deliver_policy="new") == []
    assert await seqs("SEQ", deliver_policy="by_start_sequence", opt_start_seq=7) == [7, 8, 9]
    assert await seqs("LPS", deliver_policy="last_per_subject", filter_subject="s.>") == [7, 8, 9]
    r = await create(nc, "LPX", deliver_policy="last_per_subject")
    assert r["error"]["err_code"] == 10094
    first = await js.get_msg("S", 4)
    assert first.time is not None
    r = await create(nc, "T", deliver_policy="by_start_time", opt_start_time=json.loads(json.dumps(await _msg_time(nc, 4))))
    assert r["num_pending"] == 6


async def _msg_time(nc: NATS, seq: int) -> str:
    msg = await nc.request("$JS.API.STREAM.MSG.GET.S", json.dumps({"seq": seq}).encode(), timeout=2)
    return json.loads(msg.data)["message"]["time"]  # type: ignore[no-any-return]


async def test_headers_only(nc: NATS, js: JetStreamContext) -> None:
    await js.add_stream(name="S", subjects=["s.>"])
    await js.publish("s.h", b"payload!", headers={"X-Key": "v"})
    await js.publish("s.n", b"abc")
    await create(nc, "HO", headers_only=True)
    got = await Puller(nc).pull("HO", {"batch": 2, "no_wait": True}, count=2)
    assert [m.data for m in got[:2]] == [b"", b""]
    assert got[0].headers is not None and got[0].headers["X-Key"] == "v"
    assert got[0].headers["Nats-Msg-Size"] == "8"
    assert got[1].headers is not None and got[1].headers["Nats-Msg-Size"] == "3"


async def test_fetch_of_missing_consumer_is_no_responders(nc: NATS, js: JetStreamContext) -> None:
    import nats.errors

    await seed(js, 1)
    with pytest.raises(nats.errors.NoRespondersError):
        await nc.request("$JS.API.CONSUMER.MSG.NEXT.S.NOPE", b"", timeout=1)


async def test_request_limits_and_bad_requests(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 1)
    await create(nc, "L", max_batch=2, max_expires=1_000_000_000, max_bytes=100)
    r = await create(nc, "PUSH", deliver_subject="push.somewhere")
    assert "error" not in r
    p = Puller(nc)
    cases = [
        ("PUSH", b"1", "409 Consumer is push based"),
        ("L", b'{"batch": 5}', "409 Exceeded MaxRequestBatch of 2"),
        ("L", b'{"batch": 1, "expires": 2000000000}', "409 Exceeded MaxRequestExpires of 1s"),
        ("L", b'{"batch": 1, "max_bytes": 200}', "409 Exceeded MaxRequestMaxBytes of 100"),
    ]
    for name, body, want in cases:
        assert describe(await p.pull(name, body, timeout=1)) == [want]
    for body in (b'{"batch": "x"}', b"{bad"):
        got = await p.pull("L", body, timeout=1)
        assert status(got[0]) == "400"
        assert (got[0].headers or {}).get("Description", "").startswith("Bad Request - ")


async def test_no_wait_held_by_max_ack_pending_waits(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 5)
    await create(nc, "MAP", max_ack_pending=2)
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.MAP", b'{"batch": 5, "no_wait": true}', reply=inbox)
    got = [await sub.next_msg(timeout=2), await sub.next_msg(timeout=2)]
    assert [status(m) for m in got] == [None, None]
    with pytest.raises(nats.errors.TimeoutError):
        await sub.next_msg(timeout=0.3)  # messages remain: no 404, the request waits
    await nc.request(got[0].reply, b"+ACK", timeout=2)
    third = await sub.next_msg(timeout=2)
    assert third.metadata.sequence.stream == 3


async def test_no_wait_request_for_messages_already_asked_for(nc: NATS, js: JetStreamContext) -> None:
    """A no_wait request that finds fewer messages to deliver than the waiting requests still
    ask for is refused at once with "408 Requests Pending" (nats-server's rule); with as many
    or more it is queued behind them."""
    await seed(js, 10)

    async def held_request(name: str, batch: int) -> None:
        """A request of `batch` that gets 2 messages, then waits (max_ack_pending 2)."""
        await create(nc, name, max_ack_pending=2)
        sub = await nc.subscribe(nc.new_inbox())
        body = json.dumps({"batch": batch, "expires": 5_000_000_000}).encode()
        await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.S.{name}", body, reply=sub.subject)
        assert [status(await sub.next_msg(timeout=2)) for _ in range(2)] == [None, None]
        assert await waiting_requests(nc, name, 1) == 1

    await held_request("RP", 11)  # 8 to deliver, 9 asked for
    refused = await Puller(nc).pull("RP", {"batch": 1, "no_wait": True})
    assert describe(refused) == ["408 Requests Pending"]
    assert await waiting_requests(nc, "RP", 1) == 1
    await held_request("RQ", 5)  # 8 to deliver, 3 asked for
    queued = await nc.subscribe(nc.new_inbox())
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.RQ", b'{"batch": 1, "no_wait": true}', reply=queued.subject)
    assert await waiting_requests(nc, "RQ", 2) == 2
    with pytest.raises(nats.errors.TimeoutError):
        await queued.next_msg(timeout=0.3)  # behind the first, held by max_ack_pending


async def test_no_wait_held_by_max_ack_pending_ends_at_its_heartbeat(nc: NATS, js: JetStreamContext) -> None:
    """nats-server's timer pass (at the request's heartbeat) ends a one-shot request
    that got messages with 404 even while max_ack_pending holds it back: nats.py's
    fetch(heartbeat=...) relies on it (else the request lingers and takes messages
    that a later fetch then finds in its queue; issue 24, test_fetch_heartbeats)."""
    await seed(js, 5)
    await create(nc, "MAPHB", max_ack_pending=2)
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    body = {"batch": 5, "no_wait": True, "expires": 5_000_000_000, "idle_heartbeat": 100_000_000}
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.MAPHB", json.dumps(body).encode(), reply=inbox)
    got = [await sub.next_msg(timeout=5) for _ in range(3)]
    assert [status(m) for m in got] == [None, None, "404"]  # not a 408 at the expiry
    await nc.request(got[0].reply, b"+ACK", timeout=2)
    await nc.flush()
    with pytest.raises(nats.errors.TimeoutError):
        await sub.next_msg(timeout=0.3)  # the request is over: nothing more comes to it
