"""Filter pushdown of batch reads (read/pushdown.py; Spark 4.1+, opt-in by Spark's conf).

With option `filterPushdown=true` and Spark's conf
`spark.sql.python.filterPushdown.enabled`, a filter on `seq`, `timestamp` or
`subject` narrows what the server sends: counted on the server (its
monitoring `/varz` `out_msgs`, the messages it sent to clients), a read of 1 %
of a stream by `seq` or by `timestamp` gets about 1 % of it, where the same
read without pushdown gets all of it. The rows are the same either way (Spark
still applies what is not pushed exactly). Both servers.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from read_helpers import fill_fast
from sink_helpers import connect

from jetstream_testing.process import ServerProcess, start_server
from spark_jetstream.read.fetch import rfc3339_ns
from spark_jetstream.spark_features import detect

pytestmark = [
    pytest.mark.spark,
    pytest.mark.spark_matrix,
    pytest.mark.skipif(not detect().filter_pushdown, reason="filter pushdown needs Spark 4.1"),
]

N = 20_000
CONF = "spark.sql.python.filterPushdown.enabled"


@pytest.fixture
def monitored(server_kind: str, tmp_path: Path) -> Iterator[ServerProcess]:
    proc = start_server(server_kind, tmp_path / "store", http_port=-1)
    try:
        fill_fast(proc.url, "P", "p.a", N // 2, payload=b"a" * 64, stream_subjects=("p.>",))
        fill_fast(proc.url, "P", "p.b", N // 2, payload=b"b" * 64, create=False)  # the second half
        with connect(proc.url) as conn:
            assert int(conn.js_api("STREAM.INFO.P")["state"]["messages"]) == N
        yield proc
    finally:
        proc.stop()


def sent(proc: ServerProcess) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{proc.monitor_port}/varz", timeout=10) as reply:
        return int(json.load(reply)["out_msgs"])


def read(spark: Any, proc: ServerProcess, where: str, *, pushdown: bool) -> tuple[list[tuple[int, str]], int]:
    """(sorted (seq, subject) rows, messages the server sent meanwhile)."""
    spark.conf.set(CONF, "true" if pushdown else "false")
    try:
        before = sent(proc)
        df = (spark.read.format("jetstream").option("servers", proc.url).option("stream", "P")
              .option("filterPushdown", str(pushdown).lower()).load().where(where))
        got = sorted((r.seq, r.subject) for r in df.select("seq", "subject").collect())
        return got, sent(proc) - before
    finally:
        spark.conf.unset(CONF)


def stored_ms(proc: ServerProcess, seq: int) -> int:
    with connect(proc.url) as conn:
        return rfc3339_ns(conn.js_api("STREAM.MSG.GET.P", {"seq": seq})["message"]["time"]) // 1_000_000


@pytest.mark.parametrize(
    "where",
    ["seq > 10000 AND seq <= 10200", "seq BETWEEN 5001 AND 5200", "seq IN (7001, 7100, 7200)"],
)
def test_a_selective_seq_filter_reads_only_its_range(spark: Any, monitored: ServerProcess, where: str) -> None:
    full, full_sent = read(spark, monitored, where, pushdown=False)
    narrow, narrow_sent = read(spark, monitored, where, pushdown=True)
    assert narrow == full and 3 <= len(narrow) <= 200
    print(f"{where}: {narrow_sent} messages sent with pushdown, {full_sent} without")
    assert full_sent >= N
    assert narrow_sent < 300 + 50  # the range (1 %) and a few API replies


def test_a_time_range_reads_about_its_part(spark: Any, monitored: ServerProcess) -> None:
    lo, hi = stored_ms(monitored, 12_001), stored_ms(monitored, 12_200) + 1  # stored times have ns
    since = datetime.fromtimestamp(lo / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
    until = datetime.fromtimestamp(hi / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
    where = f"timestamp >= timestamp'{since}' AND timestamp <= timestamp'{until}'"
    full, full_sent = read(spark, monitored, where, pushdown=False)
    narrow, narrow_sent = read(spark, monitored, where, pushdown=True)
    assert narrow == full
    assert {s for s, _ in narrow} >= set(range(12_001, 12_201))
    # the read is the time range with a millisecond's margin each side: fill_fast publishes
    # hundreds of messages a millisecond, so count what the server stored in that window
    window = (spark.read.format("jetstream").option("servers", monitored.url).option("stream", "P").load()
              .where(f"timestamp >= timestamp'{since}' - INTERVAL 2 MILLISECONDS AND "
                     f"timestamp <= timestamp'{until}' + INTERVAL 2 MILLISECONDS").count())
    print(f"{where}: {narrow_sent} sent with pushdown ({len(narrow)} rows, {window} in the window), {full_sent} without")
    assert narrow_sent <= window + 50 and full_sent >= N


def test_subject_filters_become_the_read_filter(spark: Any, monitored: ServerProcess) -> None:
    for where in ("subject = 'p.b' AND seq <= 10100", "subject IN ('p.b') AND seq > 19900",
                  "subject LIKE 'p.%' AND seq > 19950"):
        full, full_sent = read(spark, monitored, where, pushdown=False)
        narrow, narrow_sent = read(spark, monitored, where, pushdown=True)
        assert narrow == full and narrow, where
        assert narrow_sent < 200 < full_sent, (where, narrow_sent)
    # a filter that cannot be pushed is simply not pushed: Spark applies it
    got, _ = read(spark, monitored, "subject LIKE '%b' AND seq > 19990", pushdown=True)
    assert got == [(s, "p.b") for s in range(19_991, N + 1)]


def test_the_option_without_spark_conf_is_spark_error_naming_the_conf(spark: Any, monitored: ServerProcess) -> None:
    df = (spark.read.format("jetstream").option("servers", monitored.url).option("stream", "P")
          .option("filterPushdown", "true").load())
    with pytest.raises(Exception, match=r"spark\.sql\.python\.filterPushdown\.enabled"):
        df.where("seq < 3").collect()
