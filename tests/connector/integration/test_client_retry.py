"""The lean client's retries and failover (client/retry.py, client/pool.py) against real
servers killed and restarted: API calls ride out restarts, connects retry until the server
is back, no-responders / 503 / timeouts are retried within the request timeout, final
errors are not, and servers are tried in random order."""

from __future__ import annotations

import random
import re
import threading
import time
from pathlib import Path

import pytest
from api_proxy import ApiProxy
from lean_helpers import InOrder, lean_options
from sink_helpers import create_stream

from jetstream_testing.process import ServerProcess, start_server
from spark_jetstream.client import (
    ConnectionLostError,
    JetStreamApiError,
    JetStreamUnavailableError,
    LeanConnection,
)


def test_api_calls_ride_out_a_server_killed_and_restarted_on_the_same_port(server: ServerProcess) -> None:
    create_stream(server.url, "S", ["s.>"])
    opts = lean_options(server.url, retryTimeout="30s", retryBackoff="50ms", retryBackoffMax="500ms")
    outage = threading.Thread(target=lambda: (server.kill(), time.sleep(1.0), server.restart()))
    with LeanConnection.open(opts) as conn:
        assert conn.js_api("STREAM.INFO.S")["config"]["name"] == "S"
        started = time.monotonic()
        outage.start()
        names = []
        while outage.is_alive() or len(names) < 3:
            names.append(conn.js_api("STREAM.INFO.S")["config"]["name"])  # never fails: retried
            time.sleep(0.01)
        outage.join()
        elapsed = time.monotonic() - started
    assert set(names) == {"S"}
    assert conn.connects == 2  # the same object reconnected once, in place
    assert elapsed < 25, elapsed


def test_connect_retries_until_the_server_is_back(server: ServerProcess) -> None:
    url = server.url
    server.kill()
    timer = threading.Timer(1.0, server.restart)
    started = time.monotonic()
    timer.start()
    try:
        with LeanConnection.open(lean_options(url, retryTimeout="30s", retryBackoffMax="200ms")) as conn:
            conn.flush(5)
    finally:
        timer.join()
    assert 0.9 < time.monotonic() - started < 25


def test_connect_gives_up_after_the_retry_timeout_naming_the_servers() -> None:
    started = time.monotonic()
    with pytest.raises(ConnectionLostError, match=r"could not connect to any server: nats://127.0.0.1:1: .*gave up after \d+ attempts in \d"):
        LeanConnection.open(lean_options("nats://127.0.0.1:1", connectTimeout="1", retryTimeout="1s", retryBackoff="100ms"))
    assert time.monotonic() - started < 5


def test_no_responders_on_the_api_are_retried_until_jetstream_answers(server: ServerProcess, caplog: pytest.LogCaptureFixture) -> None:
    create_stream(server.url, "S", ["s.>"])
    proxy = ApiProxy(server.url, "$PX.API")
    started = time.monotonic()
    timer = proxy.start_later(1.0)  # until then the server answers "no responders" (503)
    try:
        with caplog.at_level("INFO", logger="spark_jetstream.client.retry"), LeanConnection.open(
            lean_options(server.url, apiPrefix="$PX.API", retryTimeout="20s", retryBackoffMax="200ms")
        ) as conn:
            assert conn.js_api("STREAM.INFO.S")["config"]["name"] == "S"
    finally:
        timer.join()
        proxy.stop()
    assert proxy.error is None, proxy.error
    assert 0.9 < time.monotonic() - started < 20
    assert "no responders for $PX.API.STREAM.INFO.S" in caplog.text and "retry 1 in" in caplog.text


def test_the_api_s_own_503_is_retried(server: ServerProcess) -> None:
    create_stream(server.url, "S", ["s.>"])
    with ApiProxy(server.url, "$PX.API", unavailable=3) as proxy, LeanConnection.open(
        lean_options(server.url, apiPrefix="$PX.API", retryTimeout="20s", retryBackoff="50ms")
    ) as conn:
        assert conn.js_api("STREAM.INFO.S")["config"]["name"] == "S"
    assert proxy.error is None and proxy.requests == ["$PX.API.STREAM.INFO.S"] * 4


def test_api_timeouts_are_retried_within_the_request_timeout(server: ServerProcess) -> None:
    create_stream(server.url, "S", ["s.>"])
    started = time.monotonic()
    with ApiProxy(server.url, "$PX.API", swallow=2) as proxy, LeanConnection.open(
        lean_options(server.url, apiPrefix="$PX.API", requestTimeout="300ms", retryTimeout="20s", retryBackoff="10ms")
    ) as conn:
        assert conn.js_api("STREAM.INFO.S")["config"]["name"] == "S"
        assert conn.connects == 1  # a slow reply is not a broken connection (checked with a PING)
        # the late replies of the swallowed requests never reach a later request
        assert conn.js_api("STREAM.INFO.S")["config"]["name"] == "S"
    assert proxy.error is None and len(proxy.requests) == 4
    assert 0.6 < time.monotonic() - started < 10


def test_jetstream_unavailable_past_the_timeout_is_reported_as_what_it_is(server: ServerProcess) -> None:
    started = time.monotonic()
    with LeanConnection.open(lean_options(server.url, apiPrefix="$PX.API", retryTimeout="1s", retryBackoff="100ms")) as conn:
        with pytest.raises(JetStreamUnavailableError) as err:
            conn.js_api("STREAM.INFO.S")
    text = str(err.value)
    assert "no responders for $PX.API.STREAM.INFO.S (status 503)" in text
    assert "electing a leader" in text and re.search(r"gave up after \d+ attempts in 0\.\d+s \(retryTimeout=1s\)", text), text
    assert "no stream" not in text and "not found" not in text
    assert time.monotonic() - started < 5
    with LeanConnection.open(lean_options(server.url, apiPrefix="$PX.API", retryTimeout="1s")) as conn, ApiProxy(
        server.url, "$PX.API", unavailable=1000
    ), pytest.raises(JetStreamApiError, match=r"JetStream system temporarily unavailable; gave up after") as api_err:
        conn.js_api("STREAM.INFO.S")
    assert api_err.value.err_code == 10008


def test_final_api_errors_are_not_retried(server: ServerProcess) -> None:
    started = time.monotonic()
    with LeanConnection.open(lean_options(server.url, retryTimeout="30s")) as conn, pytest.raises(
        JetStreamApiError, match="stream not found"
    ):
        conn.js_api("STREAM.INFO.MISSING")
    assert time.monotonic() - started < 2


def test_failover_when_the_first_server_is_down(server_kind: str, server: ServerProcess, tmp_path: Path) -> None:
    dead = "nats://127.0.0.1:1"
    with LeanConnection.connect(lean_options(dead, server.url, connectTimeout="1"), rng=InOrder()) as conn:
        assert conn.server_url == server.url
        conn.flush(5)
    # a connection whose server dies fails over to another server of the list
    other = start_server(server_kind, tmp_path / "other")
    try:
        opts = lean_options(server.url, other.url, retryTimeout="20s", retryBackoffMax="200ms")
        with LeanConnection.connect(opts, rng=InOrder()) as conn:
            assert conn.server_url == server.url
            server.kill()
            assert "api" in conn.js_api("INFO") or "limits" in conn.js_api("INFO")
            assert conn.server_url == other.url and conn.connects == 2
    finally:
        other.stop()


def test_servers_are_tried_in_random_order(server_kind: str, server: ServerProcess, tmp_path: Path) -> None:
    other = start_server(server_kind, tmp_path / "other")
    try:
        opts = lean_options(server.url, other.url)
        seen = set()
        for seed in range(12):
            with LeanConnection.connect(opts, rng=random.Random(seed)) as conn:
                seen.add(conn.server_url)
        assert seen == {server.url, other.url}
    finally:
        other.stop()
