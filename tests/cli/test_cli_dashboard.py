"""`jetstream dashboard` against both servers, over HTTP (the browser test renders it:
tests/browser).

The page and data.json in the shape the bundled server sends; paging through 300 streams
with a bounded number of API requests per refresh (the count is in data.json's `cost`);
`--once`; what a user without rights to some streams sees (nats-server tells the
permissions); a server that does not answer (at the start: the one-line error; later:
the page says so, and the next refresh reconnects); bad parameters; and the guard
against DNS rebinding (a Host that is not a loopback name).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nats
from cli_helpers import jetstream
from dashboard_helpers import check_shape, dashboard_command, data, get

from jetstream_testing.process import ServerProcess, start_server, write_config

STREAMS = 300


async def _many_streams(url: str, count: int) -> None:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream(timeout=30)
        slots = asyncio.Semaphore(16)

        async def one(i: int) -> None:
            async with slots:
                await js.add_stream(name=f"S{i:04d}", subjects=[f"s{i}.>"])

        await asyncio.gather(*(one(i) for i in range(count)))
        await js.add_consumer("S0281", durable_name="spark", ack_policy="explicit",
                              metadata={"spark_jetstream.owner": "q-1", "spark_jetstream.start": "0"})
        await js.publish("s281.x", b"one")
    finally:
        await nc.close()


def test_pages_through_many_streams_with_few_requests(shared_server: ServerProcess) -> None:
    asyncio.run(_many_streams(shared_server.url, STREAMS))
    with dashboard_command("--server", shared_server.url, "--port", "0") as page:
        status, headers, body = get(page)
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        assert "default-src 'none'" in headers["Content-Security-Policy"]
        first = data(page)
        assert first["source"] == "jetstream-cli" and first["server_url"] == shared_server.url
        assert first["streams"]["total"] == STREAMS
        assert [s["config"]["name"] for s in first["streams"]["items"]][:2] == ["S0000", "S0001"]
        assert first["account"]["streams"] == STREAMS
        # USER.INFO once, INFO, $SYS figures (at most two), STREAM.LIST: whatever the count
        assert first["cost"]["api_requests"] <= 5
        last = data(page, "offset=280")
        names = [s["config"]["name"] for s in last["streams"]["items"]]
        assert names == [f"S{i:04d}" for i in range(280, 300)]
        s281 = last["streams"]["items"][1]
        assert s281["state"]["messages"] == 1
        assert [c["name"] for c in s281["consumers"]["items"]] == ["spark"]
        assert s281["consumers"]["items"][0]["num_pending"] == 1
        # one CONSUMER.LIST for the one stream of the page with consumers
        assert last["cost"]["api_requests"] <= 5
        one = data(page, "stream=S0281")
        assert one["detail"] == "S0281" and one["streams"]["total"] == 1
        status, _, body = get(page + "data.json?limit=101")
        assert status == 400 and "limit: 101 is not between 1 and 100" in json.loads(body)["error"]


def test_once_prints_one_refresh(shared_server: ServerProcess) -> None:
    answer = json.loads(jetstream(shared_server, "dashboard", "--once").stdout)
    check_shape(answer)
    assert answer["errors"] == []
    assert answer["cost"]["api_requests"] >= 2


def test_refuses_a_foreign_host_name(shared_server: ServerProcess) -> None:
    with dashboard_command("--server", shared_server.url, "--port", "0") as page:
        port = page.split(":")[2].split("/")[0]
        status, _, body = get(page + "data.json", {"Host": f"attacker.example:{port}"})
        assert status == 403 and b"localhost" in body
        assert get(page + "data.json", {"Host": f"localhost:{port}"})[0] == 200


def test_a_server_that_does_not_answer(tmp_path: Path) -> None:
    result = jetstream("nats://127.0.0.1:1", "dashboard", "--once", "--timeout", "1s", check=False)
    assert result.returncode == 1
    assert result.stderr.startswith("jetstream: error: could not connect to nats://127.0.0.1:1")
    server = start_server("nats-server", tmp_path / "store")
    try:
        with dashboard_command("--server", server.url, "--port", "0", "--timeout", "1s") as page:
            assert data(page)["errors"] == []
            server.stop()
            gone = data(page, "offset=1")
            assert any("does not answer" in e or "connection" in e for e in gone["errors"]), gone
            server.restart()
            back = data(page, "offset=2")  # the next refresh connects again
            assert back["errors"] == [] and back["account"] is not None
    finally:
        server.stop()


NATS_PERMISSIONS = """
jetstream: {store_dir: %(store)s}
accounts: {
  APP: {
    jetstream: enabled
    users: [
      {user: admin, password: secret}
      {user: reader, password: secret, permissions: {
        publish: {allow: ["$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.VISIBLE",
                          "$SYS.REQ.USER.INFO"]}
        subscribe: {allow: ["_INBOX.>"]}
      }}
    ]
  }
}
"""


def test_a_user_without_rights_to_some_streams(tmp_path: Path) -> None:
    config = write_config(tmp_path / "server.conf",
                          NATS_PERMISSIONS % {"store": json.dumps(str(tmp_path / "js"))})
    server = start_server("nats-server", None, config=config)
    try:
        async def setup() -> None:
            nc = await nats.connect(server.url, user="admin", password="secret")
            js = nc.jetstream()
            for name in ("VISIBLE", "SECRET"):
                await js.add_stream(name=name, subjects=[f"{name.lower()}.>"])
            await js.add_consumer("VISIBLE", durable_name="d", ack_policy="explicit")
            await nc.close()

        asyncio.run(setup())
        answer = json.loads(jetstream(server, "dashboard", "--once", "--user", "reader",
                                      "--password", "secret").stdout)
        assert answer["identity"] == {"user": "reader", "account": "APP"}
        streams = answer["streams"]
        assert [s["config"]["name"] for s in streams["items"]] == ["VISIBLE"]
        assert (streams["total"], streams["hidden"]) == (1, 1)
        # neither the consumers nor $SYS figures were tried (no time-outs): the page says why
        assert streams["items"][0]["consumers"]["note"] == "this user may not list its consumers"
        assert answer["server"]["scope"] is None
        assert answer["errors"] == [] and answer["notes"]
        assert answer["cost"]["api_requests"] == 4  # USER.INFO, INFO, STREAM.NAMES, STREAM.INFO
    finally:
        server.stop()
