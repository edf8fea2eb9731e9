"""The event loop's budget and bad input (issue 12), on the bundled server and the real
nats-server: requests that would hold the loop or a timer forever are refused with
nats-server's error, requests whose client left are dropped, and malformed input gets
an error reply while the server keeps serving.

One server of each kind serves the whole module (each test uses its own stream or
consumer names); every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS
from raw_client import RawClient
from server_kinds import SERVER_KINDS

from jetstream_testing.process import ServerProcess, start_server

pytestmark = pytest.mark.asyncio


@pytest.fixture(scope="module", params=SERVER_KINDS)
def server_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def server(server_kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    store: Path = tmp_path_factory.mktemp(f"loop-{server_kind}")
    proc = start_server(server_kind, store)
    try:
        yield proc
    finally:
        proc.stop()


async def connect(server: ServerProcess) -> NATS:
    return await nats.connect(server.url, connect_timeout=5, max_reconnect_attempts=0)


async def api(nc: NATS, subject: str, body: Any, timeout: float = 5.0) -> dict[str, Any]:
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    msg = await nc.request(subject, payload, timeout=timeout)
    return json.loads(msg.data)  # type: ignore[no-any-return]


async def stream_and_consumer(nc: NATS, stream: str, consumer: str = "C") -> None:
    created = await api(nc, f"$JS.API.STREAM.CREATE.{stream}", {"name": stream, "subjects": [f"{stream}.>"]})
    assert "error" not in created, created
    body = {"stream_name": stream, "config": {"durable_name": consumer, "ack_policy": "explicit"}}
    created = await api(nc, f"$JS.API.CONSUMER.CREATE.{stream}.{consumer}", body)
    assert "error" not in created, created


async def pull_status(nc: NATS, stream: str, body: bytes) -> tuple[str | None, str | None]:
    msg = await nc.request(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.C", body, timeout=3)
    headers = msg.headers or {}
    return headers.get("Status"), headers.get("Description")


@pytest.mark.parametrize(
    ("body", "description"),
    [
        (b'{"batch":1,"idle_heartbeat":1000000}', "heartbeat value too large"),
        (b'{"batch":1,"idle_heartbeat":1000000,"expires":1500000}', "heartbeat value too large"),
        (
            b'{"batch":1,"expires":1000000000000000000000000000000}',
            "json: cannot unmarshal number 1000000000000000000000000000000 into Go struct field "
            ".expires of type time.Duration",
        ),
        (
            b'{"batch":1,"expires":9223372036854775808}',
            "json: cannot unmarshal number 9223372036854775808 into Go struct field .expires of type "
            "time.Duration",
        ),
        (
            b'{"batch":1,"expires":1e+30}',
            "json: cannot unmarshal number 1e+30 into Go struct field .expires of type time.Duration",
        ),
        (
            b'{"batch":18446744073709551616}',
            "json: cannot unmarshal number 18446744073709551616 into Go struct field .batch of type int",
        ),
        (b'{"batch":"2"}', "json: cannot unmarshal string into Go struct field .batch of type int"),
    ],
)
async def test_pull_requests_a_timer_could_not_end_are_refused(
    server: ServerProcess, body: bytes, description: str
) -> None:
    nc = await connect(server)
    try:
        await stream_and_consumer(nc, "PR")
        assert await pull_status(nc, "PR", body) == ("400", f"Bad Request - {description}")
        info = await api(nc, "$JS.API.CONSUMER.INFO.PR.C", b"")
        assert info["num_waiting"] == 0
    finally:
        await nc.request("$JS.API.STREAM.DELETE.PR", b"", timeout=5)
        await nc.close()


async def test_pull_request_of_a_client_that_left_is_dropped(server: ServerProcess) -> None:
    """A heartbeating pull request whose client went away ends at its next heartbeat
    (before: the request stayed and its heartbeat timer ran until restart)."""
    owner = await connect(server)
    watcher = await connect(server)
    try:
        await stream_and_consumer(watcher, "GONE")
        inbox = owner.new_inbox()
        sub = await owner.subscribe(inbox)
        body = b'{"batch":1,"expires":3600000000000,"idle_heartbeat":50000000}'
        await owner.publish("$JS.API.CONSUMER.MSG.NEXT.GONE.C", body, reply=inbox)
        heartbeat = await sub.next_msg(timeout=3)
        assert (heartbeat.headers or {}).get("Status") == "100"
        info = await api(watcher, "$JS.API.CONSUMER.INFO.GONE.C", b"")
        assert info["num_waiting"] == 1
        await owner.close()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            info = await api(watcher, "$JS.API.CONSUMER.INFO.GONE.C", b"")
            if info["num_waiting"] == 0:
                break
            await asyncio.sleep(0.05)
        assert info["num_waiting"] == 0
    finally:
        await watcher.request("$JS.API.STREAM.DELETE.GONE", b"", timeout=5)
        await watcher.close()
        if not owner.is_closed:
            await owner.close()


async def test_three_thousand_stream_subjects_are_checked_quickly(server: ServerProcess) -> None:
    """Overlap checks over 3000 subjects (before: 2-3 s of loop time, quadratic)."""
    nc = await connect(server)
    try:
        subjects = [f"many.{i}.*" for i in range(3000)]
        created = await api(nc, "$JS.API.STREAM.CREATE.MANY", {"name": "MANY", "subjects": subjects})
        assert "error" not in created, created
        clash = await api(
            nc, "$JS.API.STREAM.CREATE.CLASH", {"name": "CLASH", "subjects": ["other", "many.2999.x"]}
        )
        assert clash["error"]["err_code"] == 10065  # subjects overlap with an existing stream
        own = await api(
            nc,
            "$JS.API.STREAM.CREATE.OWN",
            {"name": "OWN", "subjects": [*(f"own.{i}" for i in range(3000)), "own.*"]},
        )
        assert own["error"]["description"] == 'subject "own.0" overlaps with "own.*"'
    finally:
        await nc.request("$JS.API.STREAM.DELETE.MANY", b"", timeout=5)
        await nc.close()


async def test_consumer_filters_only_refused_when_one_holds_another(server: ServerProcess) -> None:
    nc = await connect(server)
    try:
        created = await api(nc, "$JS.API.STREAM.CREATE.FLT", {"name": "FLT", "subjects": ["flt.>"]})
        assert "error" not in created, created

        async def create(name: str, filters: list[str]) -> dict[str, Any]:
            body = {"stream_name": "FLT", "config": {"durable_name": name, "filter_subjects": filters}}
            return await api(nc, f"$JS.API.CONSUMER.CREATE.FLT.{name}", body)

        # they collide (flt.b.c) but neither is a subset of the other: nats-server accepts
        assert "error" not in await create("A", ["flt.*.c", "flt.b.*"])
        many = [f"flt.{i}.x" for i in range(3000)]
        assert "error" not in await create("B", many)
        nested = await create("C", [*many, "flt.7.*"])
        assert nested["error"]["err_code"] == 10138
    finally:
        await nc.request("$JS.API.STREAM.DELETE.FLT", b"", timeout=5)
        await nc.close()


DEEP = b"[" * 20000 + b"]" * 20000


async def test_bad_input_gets_nats_server_errors(server: ServerProcess) -> None:
    nc = await connect(server)
    try:
        deep = await api(nc, "$JS.API.STREAM.INFO.NOPE", DEEP)
        assert deep["error"]["err_code"] == 10025
        assert deep["error"]["description"].startswith("invalid JSON: exceeded max depth")

        created = await api(
            nc, "$JS.API.STREAM.CREATE.BAD", {"name": "BAD", "subjects": ["bad.>"], "allow_direct": True}
        )
        assert "error" not in created, created
        msg = await nc.request("$JS.API.DIRECT.GET.BAD", DEEP, timeout=3)
        assert (msg.headers or {}).get("Status") == "408"
        assert (msg.headers or {}).get("Description") == "Malformed Request"

        body = {"stream_name": "BAD", "config": {"durable_name": "C\x00D"}}
        nul = await api(nc, "$JS.API.CONSUMER.CREATE.BAD.C\x00D", body)
        assert nul["error"] == {"code": 500, "err_code": 10012, "description": "error creating store for consumer"}
        nul = await api(nc, "$JS.API.STREAM.CREATE.N\x00L", {"name": "N\x00L", "subjects": ["nul"]})
        assert nul["error"] == {"code": 500, "err_code": 10049, "description": "error creating store for stream"}

        info = await api(nc, "$JS.API.STREAM.INFO.BAD", b"")
        assert info["state"]["messages"] == 0  # still serving, nothing stored
    finally:
        await nc.request("$JS.API.STREAM.DELETE.BAD", b"", timeout=5)
        await nc.close()


async def test_bytes_that_are_not_utf8_in_sids_and_subjects(server: ServerProcess) -> None:
    """A sid is echoed byte for byte (before: the connection died with an asyncio
    "Fatal error"); a publish to a stream subject that is not UTF-8 leaves the server
    serving (the bundled server refuses it with an error: its stores keep UTF-8 subjects)."""
    nc = await connect(server)
    raw = RawClient(server.port)
    try:
        created = await api(nc, "$JS.API.STREAM.CREATE.RAW", {"name": "RAW", "subjects": ["raw.>"]})
        assert "error" not in created, created
        raw.send(b"CONNECT {\"verbose\":false}\r\nSUB x \xff\xfe\r\nPUB x 2\r\nhi\r\n")
        assert raw.until_pong() == [b"MSG x \xff\xfe 2", b"hi"]
        raw.send(b"SUB r 1\r\nPUB raw.\xff r 2\r\nhi\r\n")
        raw.until_pong()  # (nats-server stores it; the bundled server refuses it with an error)
        ack = await nc.request("raw.ok", b"hi", timeout=3)
        assert json.loads(ack.data)["seq"] >= 1  # the server and the raw connection keep going
        assert raw.until_pong() is not None
    finally:
        raw.close()
        await nc.request("$JS.API.STREAM.DELETE.RAW", b"", timeout=5)
        await nc.close()


async def direct_batch(nc: NATS, subject: str, body: dict[str, Any]) -> list[Any]:
    """Every answer to a direct get, up to and including its status message."""
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish(subject, json.dumps(body).encode(), reply=inbox)
    out = []
    try:
        while True:
            msg = await sub.next_msg(timeout=5)
            out.append(msg)
            if (msg.headers or {}).get("Status"):
                return out
    finally:
        await sub.unsubscribe()


async def test_direct_get_multi_last_over_1024_subjects_is_413(server: ServerProcess) -> None:
    nc = await connect(server)
    try:
        created = await api(nc, "$JS.API.STREAM.CREATE.ML", {"name": "ML", "subjects": ["ml.>"], "allow_direct": True})
        assert "error" not in created, created
        for i in range(1100):
            await nc.publish(f"ml.{i}", b"v")
        await api(nc, "$JS.API.STREAM.INFO.ML", b"")  # after the publishes above
        js = nc.jetstream()
        await js.publish("ml.last", b"v")  # acknowledged: everything before is stored too
        for body in ({"multi_last": ["ml.*"]}, {"multi_last": ["ml.*"], "batch": 1}):
            out = await direct_batch(nc, "$JS.API.DIRECT.GET.ML", body)
            assert len(out) == 1 and out[0].headers["Status"] == "413", out
            assert out[0].headers["Description"] == "Too Many Results"
        few = await direct_batch(nc, "$JS.API.DIRECT.GET.ML", {"multi_last": ["ml.1", "ml.2"]})
        assert [m.headers["Nats-Subject"] for m in few[:-1]] == ["ml.1", "ml.2"]
    finally:
        await nc.request("$JS.API.STREAM.DELETE.ML", b"", timeout=5)
        await nc.close()


async def test_workqueue_filters_checked_without_comparing_every_pair(
    server: ServerProcess, server_kind: str
) -> None:
    """Work-queue consumers of 3000 filters each (before: 9 million pair checks). The
    timing holds for the bundled server; nats-server compares pairs too (about 9 s on
    this machine), so it gets 300 filters and checks the answers only."""
    n = 3000 if server_kind == "bundled" else 300
    nc = await connect(server)
    try:
        body = {"name": "WQ", "subjects": ["wq.>"], "retention": "workqueue"}
        assert "error" not in await api(nc, "$JS.API.STREAM.CREATE.WQ", body)

        async def create(name: str, filters: list[str]) -> dict[str, Any]:
            config = {"durable_name": name, "ack_policy": "explicit", "filter_subjects": filters}
            return await api(nc, f"$JS.API.CONSUMER.CREATE.WQ.{name}", {"stream_name": "WQ", "config": config})

        assert "error" not in await create("A", [f"wq.a.{i}" for i in range(n)])
        assert "error" not in await create("B", [f"wq.b.{i}" for i in range(n)])
        clash = await create("X", [*(f"wq.c.{i}" for i in range(n)), "wq.b.*"])
        assert clash["error"]["err_code"] == 10100  # filtered consumer not unique on workqueue stream
    finally:
        await nc.request("$JS.API.STREAM.DELETE.WQ", b"", timeout=5)
        await nc.close()


@pytest.mark.parametrize(
    ("field", "value", "go_type"),
    [("ack_wait", 10**30, "time.Duration"), ("max_deliver", 2**63, "int"), ("inactive_threshold", 2**63, "time.Duration")],
)
async def test_consumer_durations_beyond_int64_are_refused(
    server: ServerProcess, field: str, value: int, go_type: str
) -> None:
    """Before: accepted, and a timer computed from them overflowed a float later."""
    nc = await connect(server)
    try:
        assert "error" not in await api(nc, "$JS.API.STREAM.CREATE.BIGD", {"name": "BIGD", "subjects": ["bigd"]})
        body = {"stream_name": "BIGD", "config": {"durable_name": "D", field: value}}
        answer = await api(nc, "$JS.API.CONSUMER.CREATE.BIGD.D", body)
        assert answer["error"] == {
            "code": 400,
            "err_code": 10025,
            "description": f"invalid JSON: json: cannot unmarshal number {value} into Go struct field "
            f"CreateConsumerRequest.config.{field} of type {go_type}",
        }
    finally:
        await nc.request("$JS.API.STREAM.DELETE.BIGD", b"", timeout=5)
        await nc.close()


async def test_lone_surrogates_read_as_replacement_characters(server: ServerProcess) -> None:
    """`"\\ud800"` is valid JSON that no UTF-8 can carry; Go reads it as U+FFFD (found by
    the long fuzz run: an internal error wherever the string was encoded)."""
    nc = await connect(server)
    try:
        body = b'{"name": "SUR", "subjects": ["sur"], "description": "a\\ud800b", "metadata": {"k\\udfff": "v"}}'
        created = await api(nc, "$JS.API.STREAM.CREATE.SUR", body)
        assert created["config"]["description"] == "a\ufffdb", created
        assert created["config"]["metadata"].get("k\ufffd") == "v"
        consumer = b'{"stream_name": "SUR", "config": {"durable_name": "D", "description": "\\udc00"}}'
        created = await api(nc, "$JS.API.CONSUMER.CREATE.SUR.D", consumer)
        assert created["config"]["description"] == "\ufffd", created
    finally:
        await nc.request("$JS.API.STREAM.DELETE.SUR", b"", timeout=5)
        await nc.close()


@pytest.mark.parametrize("body", [b'{"batch":2,"expires":-5}', b'{"batch":2,"expires":-5,"no_wait":true}'])
async def test_pull_request_expired_on_arrival_times_out(server: ServerProcess, body: bytes) -> None:
    """A negative `expires` is a deadline in the past: 408 at once (before: the request
    waited forever in the queue, as if it had no expiry)."""
    nc = await connect(server)
    try:
        await stream_and_consumer(nc, "NEG")
        msg = await nc.request("$JS.API.CONSUMER.MSG.NEXT.NEG.C", body, timeout=3)
        assert (msg.headers or {}).get("Status") == "408"
        assert (msg.headers or {}).get("Nats-Pending-Messages") == "2"
        info = await api(nc, "$JS.API.CONSUMER.INFO.NEG.C", b"")
        assert info["num_waiting"] == 0
    finally:
        await nc.request("$JS.API.STREAM.DELETE.NEG", b"", timeout=5)
        await nc.close()
