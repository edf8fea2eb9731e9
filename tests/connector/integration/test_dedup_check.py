"""The sink's driver-side target checks (write/dedup_check.py) against both servers."""

from __future__ import annotations

import pytest
from sink_helpers import create_stream

from jetstream_testing.process import ServerProcess
from spark_jetstream.options import WriteOptions
from spark_jetstream.write.dedup_check import TargetError, check_target


def test_target_check_warns_on_a_short_dedup_window(server: ServerProcess, caplog: pytest.LogCaptureFixture) -> None:
    create_stream(server.url, "WIN", ["win.>"], duplicate_window=30 * 10**9)
    with caplog.at_level("WARNING", logger="spark_jetstream.write.dedup_check"):
        info = check_target(WriteOptions.from_options({"servers": server.url, "subject": "win.a", "dedupWindowCheck": "1m"}))
    assert info.stream == "WIN" and info.duplicate_window_ns == 30 * 10**9
    assert info.warning is not None and "duplicate_window 30s, shorter than dedupWindowCheck=1m" in info.warning
    assert "shorter than dedupWindowCheck=1m" in caplog.text
    ok = check_target(WriteOptions.from_options({"servers": server.url, "stream": "WIN", "dedupWindowCheck": "30s"}))
    assert ok.stream == "WIN" and ok.warning is None
    unchecked = check_target(WriteOptions.from_options({"servers": server.url}))
    assert unchecked.stream is None  # subjects come from the column: nothing to check up front


def test_unreachable_server_fails_naming_the_servers() -> None:
    with pytest.raises(TargetError, match="cannot connect to nats://127.0.0.1:1"):
        check_target(WriteOptions.from_options(
            {"servers": "nats://127.0.0.1:1", "subject": "a", "connectTimeout": "1", "retryTimeout": "1s"}
        ))
