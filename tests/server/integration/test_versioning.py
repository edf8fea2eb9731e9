"""The advertised version and JetStream API level (ADR-44), on both servers.

INFO's `version`, `/varz`, `/jsz` and `$JS.API.INFO` agree; stream and
consumer answers carry ``_nats.ver`` / ``_nats.level`` (create, update, info,
not the lists) and the stored ``_nats.req.level`` of the features used; a
request asking for a higher level (``Nats-Required-Api-Level``) is refused
with 412 / 10185.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from jetstream_testing.process import ServerProcess, start_server


@pytest.fixture
def monitored(server_kind: str, store_dir: Path) -> Iterator[ServerProcess]:
    proc = start_server(server_kind, store_dir, http_port=-1)
    try:
        yield proc
    finally:
        proc.stop()


def _get(proc: ServerProcess, path: str) -> Any:
    assert proc.monitor_port
    with urllib.request.urlopen(f"http://127.0.0.1:{proc.monitor_port}{path}", timeout=5) as r:
        return json.loads(r.read())


async def _request(nc: nats.NATS, subject: str, body: Any = None,
                   headers: dict[str, str] | None = None) -> dict[str, Any]:
    payload = b"" if body is None else json.dumps(body).encode()
    msg = await nc.request(subject, payload, timeout=5, headers=headers)
    return dict(json.loads(msg.data))


async def test_version_and_level_agree_everywhere(monitored: ServerProcess, server_kind: str) -> None:
    nc = await nats.connect(monitored.url, max_reconnect_attempts=0)
    try:
        version = nc._server_info["version"]
        level = (await _request(nc, "$JS.API.INFO"))["api"]["level"]
        stream = await _request(nc, "$JS.API.STREAM.CREATE.S", {
            "name": "S", "subjects": ["s.>"],
            "metadata": {"owner": "me", "_nats.ver": "0.0.1", "_nats.level": "99"}})
        consumer = await _request(nc, "$JS.API.CONSUMER.CREATE.S.C", {
            "stream_name": "S", "config": {"durable_name": "C", "ack_policy": "explicit"}})
        answers = {
            "stream create": stream["config"]["metadata"],
            "stream info": (await _request(nc, "$JS.API.STREAM.INFO.S"))["config"]["metadata"],
            "stream update": (await _request(nc, "$JS.API.STREAM.UPDATE.S", {
                "name": "S", "subjects": ["s.>"], "max_msgs": 5,
                "metadata": {"owner": "me", "_nats.ver": "0.0.1"}}))["config"]["metadata"],
            "consumer create": consumer["config"]["metadata"],
            "consumer info": (await _request(
                nc, "$JS.API.CONSUMER.INFO.S.C"))["config"]["metadata"],
        }
        streams = (await _request(nc, "$JS.API.STREAM.LIST"))["streams"]
        consumers = (await _request(nc, "$JS.API.CONSUMER.LIST.S"))["consumers"]
    finally:
        await nc.close()
    if server_kind == "bundled":  # the 2.14 feature set (consumer reset)
        assert (version, level) == ("2.14.0", 4)
    varz = _get(monitored, "/varz")
    assert varz["version"] == version
    assert varz["jetstream"]["stats"]["api"]["level"] == level
    assert _get(monitored, "/jsz")["api"]["level"] == level
    for where, metadata in answers.items():
        assert metadata["_nats.ver"] == version, where
        assert metadata["_nats.level"] == str(level), where
        assert metadata["_nats.req.level"] == "0", where
    assert answers["stream info"]["owner"] == "me"
    # the lists show what is stored: no answer-only keys, an echo of them dropped
    assert streams[0]["config"]["metadata"] == {"owner": "me", "_nats.req.level": "0"}
    assert consumers[0]["config"]["metadata"] == {"_nats.req.level": "0"}


@pytest.mark.parametrize(
    ("config", "required"),
    [
        ({"ack_policy": "explicit"}, "0"),
        ({"ack_policy": "explicit", "priority_groups": ["A"], "priority_policy": "overflow"}, "1"),
        ({"ack_policy": "explicit", "priority_groups": ["A"], "priority_policy": "pinned_client"},
         "1"),
        ({"ack_policy": "explicit", "pause_until": "2100-01-01T00:00:00Z"}, "1"),
    ],
)
async def test_consumer_required_level(server: ServerProcess, config: dict[str, Any],
                                       required: str) -> None:
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        await _request(nc, "$JS.API.STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
        created = await _request(nc, "$JS.API.CONSUMER.CREATE.S.C", {
            "stream_name": "S", "config": {"durable_name": "C", **config}})
        listed = (await _request(nc, "$JS.API.CONSUMER.LIST.S"))["consumers"][0]
    finally:
        await nc.close()
    assert created["config"]["metadata"]["_nats.req.level"] == required
    assert listed["config"]["metadata"] == {"_nats.req.level": required}


async def test_required_api_level_header(server: ServerProcess) -> None:
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        level = (await _request(nc, "$JS.API.INFO"))["api"]["level"]
        same = await _request(nc, "$JS.API.INFO", headers={"Nats-Required-Api-Level": str(level)})
        answers = [
            await _request(nc, "$JS.API.INFO", headers={"Nats-Required-Api-Level": value})
            for value in (str(level + 1), "x")
        ]
        create = await _request(nc, "$JS.API.STREAM.CREATE.S", {"name": "S"},
                                headers={"Nats-Required-Api-Level": str(level + 1)})
        names = await _request(nc, "$JS.API.STREAM.NAMES")
    finally:
        await nc.close()
    assert same["api"]["level"] == level
    refused = {"code": 412, "err_code": 10185, "description": "JetStream minimum api level required"}
    for answer in answers:
        assert answer == {"type": "io.nats.jetstream.api.v1.account_info_response", "error": refused}
    assert create["error"] == refused
    assert names["streams"] is None  # nothing was created
