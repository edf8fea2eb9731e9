"""The dashboard on the bundled server's monitoring port, over HTTP (the browser tests
render it: tests/browser).

The page's files and their headers, `/`'s index for browsers (programs keep the JSON),
data.json's paging (streams, one stream's consumers, a subject filter), the connector's
durables first, bad parameters, and authentication: credentials asked for, checked by
the server's authenticator, and only what the signed-in user may see (its account, its
permitted streams, its account's share of the server figures unless it is a
system-account user). Bundled server only: the dashboard is its own page (the CLI serves
the same page for nats-server: tests/cli/test_cli_dashboard.py).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from dashboard_helpers import data, get

from jetstream_testing.process import ServerProcess, start_server, write_config


def _basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


async def _setup(url: str, streams: dict[str, list[str]], consumers: dict[str, list[dict]],
                 **connect: str) -> None:
    nc = await nats.connect(url, **connect)  # type: ignore[arg-type]
    try:
        js = nc.jetstream()
        for name, subjects in streams.items():
            await js.add_stream(name=name, subjects=subjects)
        for stream, configs in consumers.items():
            for config in configs:
                await js.add_consumer(stream, ack_policy="explicit", **config)
    finally:
        await nc.close()


@pytest.fixture(scope="module")
def monitored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = start_server("bundled", tmp_path_factory.mktemp("store"), http_port=-1)
    streams = {f"S{i:02d}": [f"s{i}.>"] for i in range(30)}
    consumers = {"S00": [{"durable_name": f"c{i:02d}"} for i in range(15)]
                 + [{"durable_name": "zz-spark", "metadata": {"spark_jetstream.owner": "q1",
                                                               "spark_jetstream.start": "0"}}]}
    asyncio.run(_setup(proc.url, streams, consumers))
    try:
        yield proc
    finally:
        proc.stop()


def _page(proc: ServerProcess) -> str:
    return f"http://127.0.0.1:{proc.monitor_port}/dashboard/"


def test_page_files_come_with_their_types_and_a_strict_policy(monitored: ServerProcess) -> None:
    base = f"http://127.0.0.1:{monitored.monitor_port}"
    status, headers, _ = get(base + "/dashboard")
    assert status == 200  # urllib followed the redirect to /dashboard/
    for path, kind in (("/dashboard/", "text/html"), ("/dashboard/dashboard.js", "text/javascript"),
                       ("/dashboard/dashboard.css", "text/css")):
        status, headers, body = get(base + path)
        assert status == 200 and headers["Content-Type"].startswith(kind), (path, headers)
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert body
        again, _, empty = get(base + path, {"If-None-Match": headers["ETag"]})
        assert (again, empty) == (304, b"")
    page = get(base + "/dashboard/")[2].decode()
    assert "http" not in page.replace("http-equiv", "")  # nothing from the network
    status, _, body = get(base + "/dashboard/nothing.js")
    assert status == 404 and b"not found" in body


def test_root_lists_the_dashboard_for_people_and_json_for_programs(monitored: ServerProcess) -> None:
    base = f"http://127.0.0.1:{monitored.monitor_port}/"
    status, headers, body = get(base, {"Accept": "text/html,application/xhtml+xml"})
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b'href="./dashboard/"' in body and b'href="./varz"' in body
    status, headers, body = get(base)
    assert headers["Content-Type"].startswith("application/json")
    assert "/dashboard" in json.loads(body)["endpoints"]


def test_data_pages_through_streams_and_a_streams_consumers(monitored: ServerProcess) -> None:
    first = data(_page(monitored))
    assert first["source"] == "jetstream-server" and first["identity"] is None
    assert first["server"]["scope"] == "server" and "event_loop" in first["server"]
    assert first["account"]["streams"] == 30
    streams = first["streams"]
    assert (streams["total"], streams["hidden"], len(streams["items"])) == (30, 0, 20)
    assert [s["config"]["name"] for s in streams["items"]] == [f"S{i:02d}" for i in range(20)]
    s00 = streams["items"][0]["consumers"]
    # the overview: at most 10 consumers a stream, the connector's durable first
    assert s00["total"] == 16 and len(s00["items"]) == 10
    assert s00["items"][0]["name"] == "zz-spark"
    second = data(_page(monitored), "offset=20")["streams"]
    assert [s["config"]["name"] for s in second["items"]] == [f"S{i:02d}" for i in range(20, 30)]
    filtered = data(_page(monitored), "subject=s7.x")["streams"]
    assert [s["config"]["name"] for s in filtered["items"]] == ["S07"]
    one = data(_page(monitored), "stream=S00&offset=10&limit=10")
    assert one["detail"] == "S00"
    consumers = one["streams"]["items"][0]["consumers"]
    # a stream's own view pages its consumers in name order, as CONSUMER.LIST does
    assert [c["name"] for c in consumers["items"]] == ["c10", "c11", "c12", "c13", "c14", "zz-spark"]
    missing = data(_page(monitored), "stream=NOPE")
    assert missing["streams"]["items"] == [] and "stream NOPE not found" in missing["errors"]


@pytest.mark.parametrize(("query", "problem"), [
    ("limit=0", "limit: 0 is not between 1 and 100"),
    ("limit=1000", "limit: 1000 is not between 1 and 100"),
    ("offset=-1", "offset: -1 is not between"),
    ("offset=x", "offset: not a number: 'x'"),
    ("subject=a..b", "subject: not a valid subject filter"),
    ("stream=" + "S" * 300, "stream: longer than 255 characters"),
])
def test_bad_parameters_are_named(monitored: ServerProcess, query: str, problem: str) -> None:
    status, _, body = get(_page(monitored) + "data.json?" + query)
    assert status == 400
    assert problem in json.loads(body)["error"]


AUTH_CONFIG = """
accounts: {
  APP: {
    jetstream: enabled
    users: [
      {user: admin, password: secret}
      {user: reader, password: secret, permissions: {
        publish: {allow: ["$JS.API.INFO", "$JS.API.STREAM.INFO.VISIBLE", "$JS.API.CONSUMER.LIST.>"]}
        subscribe: {allow: ["_INBOX.>"]}
      }}
    ]
  }
  OTHER: {jetstream: enabled, users: [{user: other, password: secret}]}
  SYS: {users: [{user: sys, password: secret}]}
}
system_account: SYS
"""


@pytest.fixture(scope="module")
def with_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("auth")
    config = write_config(Path(root) / "server.conf", AUTH_CONFIG)
    proc = start_server("bundled", root / "store", config=config, http_port=-1)
    asyncio.run(_setup(proc.url, {"VISIBLE": ["v.>"], "SECRET": ["x.>"]},
                       {"VISIBLE": [{"durable_name": "d1"}]}, user="admin", password="secret"))
    asyncio.run(_setup(proc.url, {"THEIRS": ["t.>"]}, {}, user="other", password="secret"))
    try:
        yield proc
    finally:
        proc.stop()


def test_credentials_are_asked_for_and_checked(with_auth: ServerProcess) -> None:
    url = _page(with_auth) + "data.json"
    status, headers, body = get(url)
    assert status == 401 and "requires credentials" in json.loads(body)["error"]
    assert not headers["WWW-Authenticate"].startswith("Basic")  # the page asks, not a pop-up
    status, _, body = get(url, _basic("admin", "wrong"))
    assert status == 401 and "refused" in json.loads(body)["error"]
    status, _, body = get(url, {"Authorization": "Digest abc"})
    assert status == 401 and "Unsupported" in json.loads(body)["error"]
    # the nats-server endpoints of the port stay as nats-server has them
    assert get(f"http://127.0.0.1:{with_auth.monitor_port}/varz")[0] == 200


def test_a_user_sees_its_account_and_what_it_may_read(with_auth: ServerProcess) -> None:
    admin = data(_page(with_auth), headers=_basic("admin", "secret"))
    assert admin["identity"] == {"user": "admin", "account": "APP"}
    assert [s["config"]["name"] for s in admin["streams"]["items"]] == ["SECRET", "VISIBLE"]
    assert admin["server"]["scope"] == "account" and admin["server"]["account"] == "APP"

    reader = data(_page(with_auth), headers=_basic("reader", "secret"))
    assert [s["config"]["name"] for s in reader["streams"]["items"]] == ["VISIBLE"]
    assert (reader["streams"]["total"], reader["streams"]["hidden"]) == (1, 1)
    assert [c["name"] for c in reader["streams"]["items"][0]["consumers"]["items"]] == ["d1"]
    assert data(_page(with_auth), "stream=SECRET", _basic("reader", "secret"))["streams"]["hidden"] == 1

    other = data(_page(with_auth), headers=_basic("other", "secret"))
    assert [s["config"]["name"] for s in other["streams"]["items"]] == ["THEIRS"]

    system = data(_page(with_auth), headers=_basic("sys", "secret"))
    assert system["server"]["scope"] == "server"
    assert system["account"] is None and system["streams"]["items"] == []
    assert any("JetStream is not enabled for account SYS" in n for n in system["notes"])


def test_a_token_signs_in_as_bearer(tmp_path: Path) -> None:
    config = write_config(tmp_path / "server.conf", 'jetstream: enabled\nauthorization { token: "t0ken" }\n')
    proc = start_server("bundled", tmp_path / "store", config=config, http_port=-1)
    try:
        assert get(_page(proc) + "data.json")[0] == 401
        answer = data(_page(proc), headers={"Authorization": "Bearer t0ken"})
        # a token's user is in the global account, not the system account (as on nats-server)
        assert (answer["server"]["scope"], answer["server"]["account"]) == ("account", "$G")
        assert get(_page(proc) + "data.json", {"Authorization": "Bearer nope"})[0] == 401
    finally:
        proc.stop()
