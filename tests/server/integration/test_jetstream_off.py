"""JetStream only when asked for, and pull requests told of a shutdown, on both servers.

A server started without ``-js`` and without a ``jetstream`` config entry has
no JetStream: INFO does not announce it, `$JS.API` requests get no responders
(nats-py: `NoRespondersError`, `ServiceUnavailableError` from the manager,
`NoStreamResponseError` from a publish), `/varz` shows an empty ``jetstream``
and `/jsz` says ``disabled``. A pull request waiting when the server stops
gets ``409 Server Shutdown`` with what it still expected.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.errors import NoRespondersError
from nats.js.api import AckPolicy, ConsumerConfig
from nats.js.errors import NoStreamResponseError, ServiceUnavailableError

from jetstream_testing.process import (
    ServerProcess,
    bundled_server_command,
    nats_server_binary,
    write_config,
)


class _WithoutFlag(ServerProcess):
    """The harness passes ``-js`` to every server; this one does not."""

    def argv(self) -> list[str]:
        return [arg for arg in super().argv() if arg != "-js"]


def _start_without_flag(kind: str, tmp_path: Path, config: str | None = None) -> ServerProcess:
    command = bundled_server_command() if kind == "bundled" else [nats_server_binary()]
    args = []
    if config is not None:
        args = ["-c", str(write_config(tmp_path / "server.conf", config))]
    return _WithoutFlag(command, args, http_port=-1).start()


def _get(proc: ServerProcess, path: str) -> Any:
    assert proc.monitor_port
    with urllib.request.urlopen(f"http://127.0.0.1:{proc.monitor_port}{path}", timeout=5) as r:
        return json.loads(r.read())


async def test_no_jetstream_without_the_flag(server_kind: str, tmp_path: Path) -> None:
    proc = _start_without_flag(server_kind, tmp_path)
    try:
        nc = await nats.connect(proc.url, max_reconnect_attempts=0)
        try:
            assert "jetstream" not in nc._server_info
            with pytest.raises(NoRespondersError):
                await nc.request("$JS.API.INFO", b"", timeout=2)
            js = nc.jetstream(timeout=2)
            with pytest.raises(ServiceUnavailableError):
                await js.account_info()
            with pytest.raises(ServiceUnavailableError):
                await js.add_stream(name="S", subjects=["s.>"])
            with pytest.raises(NoStreamResponseError):
                await js.publish("s.1", b"x")
        finally:
            await nc.close()
        assert _get(proc, "/varz")["jetstream"] == {}
        jsz = _get(proc, "/jsz")
        assert jsz["disabled"] is True
        assert (jsz["streams"], jsz["api"]["level"], jsz["config"]) == (
            0, 0, {"max_memory": 0, "max_storage": 0})
    finally:
        proc.stop()


@pytest.mark.parametrize(
    ("config", "enabled"),
    [
        ("jetstream: enabled", True),
        ("jetstream: true", True),
        ("jetstream {\n  max_memory_store: 1GB\n}", True),
        ("jetstream: disabled", False),
        ("jetstream {\n  enabled: false\n}", False),
        ("port: -1", False),
    ],
)
async def test_config_entry_turns_jetstream_on(
    server_kind: str, tmp_path: Path, config: str, enabled: bool
) -> None:
    store = tmp_path / "store"
    text = config if "{" not in config else config.replace("{", "{\n  store_dir: " + json.dumps(str(store)))
    proc = _start_without_flag(server_kind, tmp_path, text)
    try:
        nc = await nats.connect(proc.url, max_reconnect_attempts=0)
        try:
            assert nc._server_info.get("jetstream", False) is enabled
            if enabled:
                info = await nc.jetstream(timeout=2).account_info()
                assert info.streams == 0
            else:
                with pytest.raises(NoRespondersError):
                    await nc.request("$JS.API.INFO", b"", timeout=2)
        finally:
            await nc.close()
    finally:
        proc.stop()


async def test_waiting_pull_requests_get_server_shutdown(server: ServerProcess) -> None:
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    statuses: dict[str, list[dict[str, str]]] = {"a": [], "b": []}
    messages: list[str] = []
    done = asyncio.Event()

    async def collect(msg: Any) -> None:
        if msg.headers and msg.headers.get("Status"):
            statuses[msg.subject.rsplit(".", 1)[1]].append(dict(msg.headers))
        else:
            messages.append(msg.subject)
        if all(statuses.values()):
            done.set()

    try:
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        await js.add_consumer("S", ConsumerConfig(durable_name="C", ack_policy=AckPolicy.EXPLICIT))
        await js.publish("s.1", b"one")
        inbox = nc.new_inbox()
        await nc.subscribe(inbox + ".*", cb=collect)
        next_subject = "$JS.API.CONSUMER.MSG.NEXT.S.C"
        await nc.publish(next_subject, json.dumps({"batch": 5, "expires": 60 * 10**9}).encode(),
                         reply=inbox + ".a")
        await nc.flush()
        await nc.publish(next_subject, json.dumps(
            {"batch": 3, "max_bytes": 1000, "expires": 60 * 10**9}).encode(), reply=inbox + ".b")
        await nc.flush()
        # nats-server queues pull requests on its own goroutine: wait (bounded) for both
        for _ in range(200):
            info = await js.consumer_info("S", "C")
            if (info.num_waiting, info.num_ack_pending) == (2, 1):
                break
        assert (info.num_waiting, info.num_ack_pending) == (2, 1)
        await asyncio.to_thread(server.stop)
        await asyncio.wait_for(done.wait(), 10)
    finally:
        await nc.close()
    assert messages == ["s.1"]
    wanted = {"a": ("4", "0"), "b": ("3", "1000")}
    for name, (msgs, size) in wanted.items():
        (status,) = statuses[name]
        assert (status["Status"], status["Description"]) == ("409", "Server Shutdown")
        assert (status["Nats-Pending-Messages"], status["Nats-Pending-Bytes"]) == (msgs, size)
