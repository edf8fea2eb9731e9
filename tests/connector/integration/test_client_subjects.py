"""Where the lean client sends things: a JetStream domain routes every API call, every API
subject goes through `apiPrefix`, and `inboxPrefix` names every reply subject."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from api_proxy import ApiProxy
from lean_helpers import lean_options
from server_kinds import SERVER_KINDS
from sink_helpers import connect, create_stream, publish_acked

from jetstream_testing.process import ServerProcess, start_server
from spark_jetstream.client import (
    JetStreamUnavailableError,
    LeanConnection,
    NatsTimeoutError,
)
from spark_jetstream.read.fetch import FetchSpec, fetch_range


def _domain_server(kind: str, tmp_path: Path, domain: str) -> ServerProcess:
    store = tmp_path / "js"
    conf = tmp_path / "domain.conf"
    conf.write_text(f'jetstream {{ domain: {domain}, store_dir: "{store}" }}\n')
    return start_server(kind, None, args=["-c", str(conf)])


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_domain_routes_every_api_call(kind: str, tmp_path: Path) -> None:
    srv = _domain_server(kind, tmp_path, "hub")
    try:
        with LeanConnection.open(lean_options(srv.url, domain="hub", retryTimeout="1s")) as conn:
            assert conn.api_subject("STREAM.INFO.D") == "$JS.hub.API.STREAM.INFO.D"
            conn.js_api("STREAM.CREATE.D", {"name": "D", "subjects": ["d.>"], "storage": "memory"})
            for i in range(20):
                conn.request("d.x", str(i).encode(), timeout=5)
            chunks = list(fetch_range(conn, FetchSpec("D", 5, 15, chunk_rows=4)))
            assert [s for c in chunks for s in c.seqs] == list(range(6, 16))
            assert conn.js_api("STREAM.INFO.D")["state"]["last_seq"] == 20
        # another domain is not this server's: the requests go nowhere (and the error says so)
        with LeanConnection.open(lean_options(srv.url, domain="elsewhere", retryTimeout="500ms")) as conn:
            with pytest.raises(JetStreamUnavailableError, match=r"option domain='elsewhere'"):
                conn.js_api("STREAM.INFO.D")
    finally:
        srv.stop()


def test_every_api_subject_goes_through_the_api_prefix(server: ServerProcess) -> None:
    create_stream(server.url, "S", ["s.>"])
    publish_acked(server.url, [("s.a", b"1"), ("s.b", b"2")])
    with ApiProxy(server.url, "$PX.API") as proxy, LeanConnection.open(lean_options(server.url, apiPrefix="$PX.API")) as conn:
        assert [s for c in fetch_range(conn, FetchSpec("S", 0, 2)) for s in c.seqs] == [1, 2]
        conn.flush(5)
        time.sleep(0.2)  # the proxy has seen the last request (the consumer delete) by now
    kinds = [".".join(r.split(".")[2:5]) for r in proxy.requests]
    assert kinds[:2] == ["CONSUMER.CREATE.S", "CONSUMER.MSG.NEXT"] and kinds[-1] == "CONSUMER.DELETE.S", kinds


def test_inbox_prefix_names_every_reply_subject(server: ServerProcess) -> None:
    create_stream(server.url, "S", ["s.>"])
    publish_acked(server.url, [("s.a", b"1"), ("s.b", b"2")])
    with connect(server.url) as spy:
        sid = spy.subscribe("my.inbox.>")
        default_sid = spy.subscribe("_INBOX.>")
        spy.flush(5)
        with LeanConnection.open(lean_options(server.url, inboxPrefix="my.inbox")) as conn:
            conn.js_api("STREAM.INFO.S")
            assert [s for c in fetch_range(conn, FetchSpec("S", 0, 2)) for s in c.seqs] == [1, 2]
        # the spy sees what went to my.inbox.>: the API replies, and the pulled messages
        # (delivered to the pull request's inbox, under their own subjects)
        got = []
        while len(got) < 5:
            got.append(spy.wait_for_sid(sid, 5)[1].decode())
        assert sorted(g for g in got if not g.startswith("my.inbox.")) == ["s.a", "s.b"], got
        with pytest.raises(NatsTimeoutError):
            spy.wait_for_sid(default_sid, 0.3)
