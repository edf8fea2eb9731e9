"""Defect 9: no password or token appears in any error text, log line or repr.

Secrets reach the connector three ways: the `password` and `token` options,
and inside `servers` URLs (`nats://user:pass@host`, `nats://token@host`). Each
test provokes the errors a user meets (refused connection, wrong password or
token, a bad URL, the sink's checks, a missing stream, an API that does not
answer) and looks for the secrets in the error texts, the log records and the
reprs; the last one does it through Spark (the error a query shows, `explain`).
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_kinds import SERVER_KINDS

from jetstream_testing.process import ServerProcess, start_server
from spark_jetstream.client import LeanConnection, NatsError, connect
from spark_jetstream.options import ConnectionOptions, OptionError, ReadOptions, WriteOptions
from spark_jetstream.write.dedup_check import TargetError, check_windows
from spark_jetstream.write.publisher import Publisher, PublishError

URL_PW, OPT_PW, URL_TOKEN, OPT_TOKEN = "pw-url-7f3a", "pw-opt-91bc", "tok-url-5e2d", "tok-opt-c40f"
SECRETS = (URL_PW, OPT_PW, URL_TOKEN, OPT_TOKEN)


def clean(text: str) -> str:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} leaked: {text}"
    return text


@pytest.fixture(params=SERVER_KINDS)
def auth_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServerProcess]:
    srv = start_server(str(request.param), tmp_path, args=["--user", "alice", "--pass", "right-pw"])
    try:
        yield srv
    finally:
        srv.stop()


def with_user(url: str, userinfo: str) -> str:
    return url.replace("nats://", f"nats://{userinfo}@")


def errors_of(*calls: Any) -> list[str]:
    texts = []
    for call in calls:
        with pytest.raises((NatsError, OptionError, PublishError, TargetError, OSError)) as err:
            call()
        texts.append(str(err.value))
        cause = err.value.__cause__
        while cause is not None:
            texts.append(str(cause))
            cause = cause.__cause__
    return texts


def test_reprs_show_no_secret(tmp_path: Path) -> None:
    options = {"servers": f"nats://alice:{URL_PW}@h:1,nats://{URL_TOKEN}@h:2", "user": "bob", "password": OPT_PW,
               "token": OPT_TOKEN}
    read = ReadOptions.from_options({**options, "stream": "S"}, streaming=True)
    write = WriteOptions.from_options(options)
    for obj in (read, write, read.connection, write.connection):
        clean(repr(obj))
        clean(str(obj))
    assert "password='***'" in repr(read) and "nats://alice:***@h:1" in repr(write)


def test_connection_errors_show_no_secret(auth_server: ServerProcess, caplog: pytest.LogCaptureFixture) -> None:
    srv = auth_server
    fast = {"connectTimeout": "1", "retryTimeout": "300ms", "retryBackoff": "100ms"}
    dead_with_pw = ConnectionOptions.from_options({"servers": f"nats://alice:{URL_PW}@127.0.0.1:1", **fast})
    dead_with_token = ConnectionOptions.from_options({"servers": f"nats://{URL_TOKEN}@127.0.0.1:1", **fast})
    wrong_in_url = ConnectionOptions.from_options({"servers": with_user(srv.url, f"alice:{URL_PW}"), **fast})
    wrong_option = ConnectionOptions.from_options({"servers": srv.url, "user": "alice", "password": OPT_PW, **fast})
    wrong_token = ConnectionOptions.from_options({"servers": with_user(srv.url, URL_TOKEN), "token": OPT_TOKEN, **fast})
    with caplog.at_level(logging.DEBUG, logger="spark_jetstream"):
        texts = errors_of(
            lambda: LeanConnection.connect(dead_with_pw),
            lambda: LeanConnection.open(dead_with_pw),
            lambda: connect(dead_with_token),
            lambda: LeanConnection.open(wrong_in_url),
            lambda: LeanConnection.open(wrong_option),
            lambda: LeanConnection.open(wrong_token),
            lambda: Publisher(dead_with_pw, ack_timeout_s=0.3),
            lambda: Publisher(wrong_in_url, ack_timeout_s=0.3),
            lambda: ConnectionOptions.from_options({"servers": f"alice:{URL_PW}@host:4222"}),  # not a URL
        )
        # the commit's dedup-window check only logs an outage (checked below with the records)
        check_windows(WriteOptions.from_options({"servers": f"nats://alice:{URL_PW}@127.0.0.1:1", **fast}), ["S"])
    for text in texts:
        clean(text)
    assert "nats://alice:***@127.0.0.1:1" in texts[0] and "nats://***@127.0.0.1:1" in " ".join(texts)
    assert any("Authorization Violation" in t for t in texts)
    assert caplog.records, "the retries were logged"
    for record in caplog.records:
        clean(record.getMessage())


def test_errors_of_a_working_connection_show_no_secret(auth_server: ServerProcess, caplog: pytest.LogCaptureFixture) -> None:
    srv = auth_server
    url = with_user(srv.url, f"alice:right-{URL_PW}")  # a secret-looking password that works
    srv.extra_args = ["--user", "alice", "--pass", f"right-{URL_PW}"]
    srv.restart()  # same port, the new password
    opts = ConnectionOptions.from_options({"servers": url, "retryTimeout": "300ms", "apiPrefix": "$NONE.API"})
    with caplog.at_level(logging.DEBUG, logger="spark_jetstream"), LeanConnection.open(opts) as conn:
        texts = errors_of(lambda: conn.js_api("STREAM.INFO.MISSING"))
        assert "no responders" in texts[0] and "nats://alice:***@" in texts[0]
    for text in texts:
        clean(text)
    for record in caplog.records:
        clean(record.getMessage())


@pytest.mark.timeout(300)
def test_spark_shows_no_secret(spark: Any, auth_server: ServerProcess) -> None:
    srv = auth_server
    df = (
        spark.read.format("jetstream").option("servers", with_user(srv.url, f"alice:{URL_PW}"))
        .option("stream", "S").option("retryTimeout", "500ms").load()
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain(True)
    clean(out.getvalue())
    with pytest.raises(Exception) as err:  # noqa: B017 - Spark wraps the source's error in its own
        df.count()
    assert "Authorization Violation" in clean(str(err.value))
    with pytest.raises(Exception) as err:  # noqa: B017
        (
            spark.createDataFrame([("a", "x")], "subject string, data string")
            .write.format("jetstream").option("servers", srv.url).option("user", "alice")
            .option("password", OPT_PW).option("retryTimeout", "500ms").mode("append").save()
        )
    assert "Authorization Violation" in clean(str(err.value))
