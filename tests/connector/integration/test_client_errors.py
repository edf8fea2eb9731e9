"""The server codes the connector names (client/errors.py) are the ones both servers send.

Each `ErrorCode` member is provoked the way the connector meets it (a missing
stream, a missing durable, a message get past the end, the connector's own
read consumer on a work-queue stream); each `Status` the client acts on comes
from a real request. The real nats-server is the oracle.
"""

from __future__ import annotations

import json
import secrets

import pytest
from sink_helpers import connect, create_stream

from jetstream_testing.process import ServerProcess
from spark_jetstream.client import ErrorCode, JetStreamApiError, NoRespondersError, Status
from spark_jetstream.client.errors import WORKQUEUE_CONSUMER_ERRORS
from spark_jetstream.client.frames import parse_headers
from spark_jetstream.read.fetch import FetchSpec, consumer_config


def api_error(server: ServerProcess, api: str, body: dict | None = None) -> JetStreamApiError:  # type: ignore[type-arg]
    with connect(server.url) as conn, pytest.raises(JetStreamApiError) as err:
        conn.js_api(api, body)
    return err.value


def test_not_found_codes(server: ServerProcess) -> None:
    assert api_error(server, "STREAM.INFO.MISSING").err_code == ErrorCode.STREAM_NOT_FOUND
    create_stream(server.url, "S", ["s.>"])
    assert api_error(server, "CONSUMER.INFO.S.missing").err_code == ErrorCode.CONSUMER_NOT_FOUND
    got = api_error(server, "STREAM.MSG.GET.S", {"seq": 1, "next_by_subj": "s.>"})
    assert got.err_code == ErrorCode.MESSAGE_NOT_FOUND


def test_the_read_consumer_on_a_work_queue_stream_is_refused_with_a_named_code(server: ServerProcess) -> None:
    create_stream(server.url, "WQ", ["wq.>"], retention="workqueue")
    name = "sjr_" + secrets.token_hex(4)
    config = consumer_config(FetchSpec("WQ", 0, 10), name)
    got = api_error(server, f"CONSUMER.CREATE.WQ.{name}", {"stream_name": "WQ", "config": config, "action": "create"})
    assert got.err_code in WORKQUEUE_CONSUMER_ERRORS, got


def test_statuses(server: ServerProcess) -> None:
    create_stream(server.url, "S", ["s.>"])
    with connect(server.url) as conn:
        with pytest.raises(NoRespondersError, match="no responders for nobody.home"):
            conn.request("nobody.home", b"", timeout=5)
        conn.js_api("CONSUMER.CREATE.S.c", {"stream_name": "S", "config": {"name": "c", "ack_policy": "none"}})
        inbox = "_INBOX." + secrets.token_hex(6)
        sid = conn.subscribe(inbox)
        conn.publish("$JS.API.CONSUMER.MSG.NEXT.S.c", json.dumps({"batch": 1, "no_wait": True}).encode(), reply=inbox)
        frame = conn.wait_for_sid(sid)
        status, _, _ = parse_headers(frame[4])
        assert status == Status.NO_MESSAGES
