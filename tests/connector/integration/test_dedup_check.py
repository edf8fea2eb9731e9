"""The driver's dedup-window check (write/dedup_check.py) against both servers: once per
stream (cached), warn or fail by mode, and a server outage never fails a commit."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sink_helpers import create_stream

from jetstream_testing.process import ServerProcess
from spark_jetstream.client import LeanConnection
from spark_jetstream.client import connect as connect_pooled
from spark_jetstream.options import ConnectionOptions, WriteOptions
from spark_jetstream.write.dedup_check import TargetError, check_windows, forget_windows

LOGGER = "spark_jetstream.write.dedup_check"


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    forget_windows()
    yield
    forget_windows()


class CountingConnect:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, options: ConnectionOptions) -> LeanConnection:
        self.calls += 1
        return connect_pooled(options)


def test_a_short_window_warns_once_and_the_window_is_asked_once(
    server: ServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    create_stream(server.url, "WIN", ["win.>"], duplicate_window=30 * 10**9)
    create_stream(server.url, "LONG", ["long.>"], duplicate_window=3600 * 10**9)
    opts = WriteOptions.from_options({"servers": server.url, "dedupWindowCheck": "1m"})
    connect = CountingConnect()
    with caplog.at_level("WARNING", logger=LOGGER):
        problems = check_windows(opts, ["WIN", "LONG"], connect)
        again = check_windows(opts, ["LONG", "WIN"], connect)
    assert problems == again
    assert len(problems) == 1 and "stream 'WIN' has duplicate_window 30s, shorter than dedupWindowCheck=1m" in problems[0]
    assert connect.calls == 1  # cached: the second commit asks nothing
    assert caplog.text.count("shorter than dedupWindowCheck") == 1  # one warning, not one per batch


def test_fail_mode_raises_naming_the_stream(server: ServerProcess) -> None:
    create_stream(server.url, "SHORT", ["short"], duplicate_window=5 * 10**9)
    opts = WriteOptions.from_options(
        {"servers": server.url, "dedupWindowCheck": "10m", "dedupWindowCheckMode": "fail"}
    )
    with pytest.raises(TargetError, match="stream 'SHORT' has duplicate_window 5s.*dedupWindowCheckMode=fail"):
        check_windows(opts, ["SHORT"])
    assert check_windows(WriteOptions.from_options({"servers": server.url, "dedupWindowCheck": "0"}), ["SHORT"]) == []


def test_the_default_threshold_flags_a_default_stream(server: ServerProcess) -> None:
    # nats-server's default duplicate_window is 2m; the old default check (2m) never fired
    create_stream(server.url, "DEF", ["def.>"])
    (problem,) = check_windows(WriteOptions.from_options({"servers": server.url}), ["DEF"])
    assert "duplicate_window 2m, shorter than dedupWindowCheck=10m" in problem


def test_an_unreachable_server_or_missing_stream_is_logged_and_asked_again(
    server: ServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    dead = WriteOptions.from_options(
        {"servers": "nats://127.0.0.1:1", "connectTimeout": "1", "retryTimeout": "0", "dedupWindowCheckMode": "fail"}
    )
    with caplog.at_level("WARNING", logger=LOGGER):
        assert check_windows(dead, ["ANY"]) == []  # an outage never fails a commit
        opts = WriteOptions.from_options({"servers": server.url, "dedupWindowCheck": "1m"})
        assert check_windows(opts, ["LATER"]) == []
    assert "cannot check the dedup window of ANY on nats://127.0.0.1:1" in caplog.text
    assert "cannot check the dedup window of stream 'LATER'" in caplog.text
    create_stream(server.url, "LATER", ["later"], duplicate_window=10 * 10**9)
    assert len(check_windows(opts, ["LATER"])) == 1  # not cached while unknown
